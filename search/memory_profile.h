// Internal to search/: each device's memory profile of a generated program.
//
// Contract: memory changes only at a device's own op boundaries, in program
// order, so a device's simulated peak is the max over its ops of a linear
// function of its stages' stash sizes plus a transient - no timing needed.
// BuildProfile keeps, per device, the distinct moments that can be that max
// (moments dominated by another of the same chunk and kind are dropped), so
// the max over the kept moments equals the engine's peak for every choice
// of stash sizes >= 0 (and of held-after-I sizes <= the stash sizes).
//
// Split backward (I and W ops): the engine frees a stage's
// input_grad_release at the end of I and the rest at the end of W
// (core/engine.h). With `release_at_i` a micro-batch counts in `counts`
// from its F to its I and in `held` from its I to its W, so that memory is
// exact for any release; without it (no layer frees anything at I) it
// counts in `counts` until its W and `held` stays 0, as before. Bounds that
// read only `counts` (times the full stash) stay valid either way: they
// leave out the held part, which is >= 0.
#pragma once

#include <tuple>
#include <vector>

#include "search/search.h"

namespace ppb::search_detail {

// ---------------------------------------------------------------------------
// Memory profile: for each device, the distinct "moments" of its program.
// A moment is (stash counts per chunk before the op, the op's chunk, whether
// it is an F). Memory at that moment, as the engine computes it:
//   static + sum_c (n_c * stash_c + h_c * held_c)
//          + (F ? stash_op + fwd_transient_op : bwd_transient_op),
// with held_c = stash_c - input_grad_release_c.
struct Moment {
  std::vector<int> counts;  // size v: F done, I (or B) not yet
  std::vector<int> held;    // size v: I done, W not yet (release_at_i only)
  int chunk = 0;
  bool forward = false;
  bool operator<(const Moment& o) const {
    return std::tie(chunk, forward, counts, held) <
           std::tie(o.chunk, o.forward, o.counts, o.held);
  }
};

struct MemoryProfile {
  int v = 1;
  bool release_at_i = false;
  std::vector<std::vector<Moment>> moments;  // [device]
};

MemoryProfile BuildProfile(const PipelineSpec& spec, const Program& program,
                           bool release_at_i = false);

}  // namespace ppb::search_detail
