// Internal to search/: each device's memory profile of a generated program.
//
// Contract: memory changes only at a device's own op boundaries, in program
// order, so a device's simulated peak is the max over its ops of a linear
// function of its stages' stash sizes plus a transient - no timing needed.
// BuildProfile keeps, per device, the distinct moments that can be that max
// (moments dominated by another of the same chunk and kind are dropped), so
// the max over the kept moments equals the engine's peak for every choice
// of stash sizes >= 0.
#pragma once

#include <tuple>
#include <vector>

#include "search/search.h"

namespace ppb::search_detail {

// ---------------------------------------------------------------------------
// Memory profile: for each device, the distinct "moments" of its program.
// A moment is (stash counts per chunk before the op, the op's chunk, whether
// it is an F). Memory at that moment, as the engine computes it:
//   static + sum_c n_c * stash_c + (F ? stash_op + fwd_transient_op
//                                     : bwd_transient_op).
struct Moment {
  std::vector<int> counts;  // size v
  int chunk = 0;
  bool forward = false;
  bool operator<(const Moment& o) const {
    return std::tie(chunk, forward, counts) <
           std::tie(o.chunk, o.forward, o.counts);
  }
};

struct MemoryProfile {
  int v = 1;
  std::vector<std::vector<Moment>> moments;  // [device]
};

MemoryProfile BuildProfile(const PipelineSpec& spec, const Program& program);

}  // namespace ppb::search_detail
