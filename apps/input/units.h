// Unit strings of the config file, parsed once at the input boundary into the
// integer units of core/types.h: durations to nanoseconds, sizes to bytes,
// bandwidths to bytes per second.
//
// Syntax: a non-negative decimal number, optional spaces, then a unit:
//   "3.2ms", "850 us", "1.5GiB", "200GB/s", "25Gbit/s", "1e3us".
// The number is read as exact decimal digits (up to 19 significant digits;
// later digits are dropped) and scaled with integer arithmetic, so "1.5GiB"
// is exactly 1610612736. Results are rounded to the nearest integer (halves
// away from zero).
//
// Units (case-sensitive):
//   time:      ns, us (also µs, μs), ms, s
//   memory:    B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (1024)
//   bandwidth: B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s,
//              Kbit/s, Mbit/s, Gbit/s, Tbit/s (bits: 1 byte = 8 bits)
//
// Errors (Error::key empty) say what was expected and what was given, e.g.
//   must be a duration with a unit (ns, us, ms, s); got 3.2
// A number without a unit, an unknown unit, a negative number, a value that
// does not fit in 63 bits and anything that is not a number are errors.
#pragma once

#include <string_view>

#include "core/result.h"
#include "core/types.h"

namespace ppb {

Result<Nanos> ParseDuration(std::string_view text);
Result<Bytes> ParseBytes(std::string_view text);
Result<BytesPerSec> ParseBandwidth(std::string_view text);

}  // namespace ppb
