// The two conversions every module must do the same way, or the search's
// own evaluation would drift from Lower() and the engine.
#pragma once

#include <cmath>

#include "core/types.h"

namespace ppb {

// Time of work `t` (measured on a speed-1.0 device) on a device of relative
// speed `speed` (> 0), rounded to the nearest nanosecond.
inline Nanos ScaleTime(Nanos t, double speed) {
  if (speed == 1.0) return t;
  return static_cast<Nanos>(std::llround(static_cast<double>(t) / speed));
}

__extension__ using Int128 = __int128;  // GCC/Clang builtin: exact products

// Time a message of `bytes` occupies a link of `bandwidth` bytes/s, rounded
// up to whole nanoseconds; 0 for an infinite (0) bandwidth. Exact in 128
// bits, for sums that must not overflow (validate.cpp's totals).
inline Int128 LinkOccupancyExact(Bytes bytes, BytesPerSec bandwidth) {
  if (bandwidth <= 0 || bytes <= 0) return 0;
  const Int128 num = static_cast<Int128>(bytes) * 1'000'000'000;
  return (num + bandwidth - 1) / bandwidth;
}

// LinkOccupancy as int64 ns. REQUIRES: it fits (the loader's bounds).
inline Nanos LinkOccupancy(Bytes bytes, BytesPerSec bandwidth) {
  return static_cast<Nanos>(LinkOccupancyExact(bytes, bandwidth));
}

}  // namespace ppb
