// Memory profiles of a program (see memory_profile.h for the contract).
#include "search/memory_profile.h"

#include <algorithm>
#include <set>

namespace ppb::search_detail {

MemoryProfile BuildProfile(const PipelineSpec& spec, const Program& program,
                           bool release_at_i) {
  MemoryProfile prof;
  prof.v = spec.v;
  prof.release_at_i = release_at_i;
  prof.moments.resize(spec.p);
  for (int d = 0; d < spec.p; ++d) {
    // The distinct moments, sorted: a device runs O(v m) ops but meets few
    // distinct moments (O(p v) in the usual schedules), so each op only
    // looks its moment up and a new one alone is copied.
    std::set<Moment> distinct;
    Moment now{std::vector<int>(spec.v, 0), std::vector<int>(spec.v, 0), 0, false};
    std::vector<int>& counts = now.counts;
    std::vector<int>& held = now.held;
    for (const Op& op : program.ops[d]) {
      const int c = op.stage.value / spec.p;
      now.chunk = c;
      now.forward = op.kind == OpKind::F;
      if (distinct.find(now) == distinct.end()) distinct.insert(now);
      switch (op.kind) {
        case OpKind::F: ++counts[c]; break;
        case OpKind::B: --counts[c]; break;
        case OpKind::I:
          if (release_at_i) {
            --counts[c];
            ++held[c];
          }
          break;
        case OpKind::W:
          if (release_at_i) --held[c];
          else --counts[c];
          break;
      }
    }
    const std::vector<Moment> all(distinct.begin(), distinct.end());
    // Drop moments dominated by another of the same chunk and kind.
    std::vector<Moment> keep;
    for (size_t i = 0; i < all.size(); ++i) {
      bool dominated = false;
      for (size_t j = 0; j < all.size() && !dominated; ++j) {
        if (i == j || all[j].chunk != all[i].chunk ||
            all[j].forward != all[i].forward) {
          continue;
        }
        bool ge = true, gt = false;
        for (int c = 0; c < spec.v; ++c) {
          if (all[j].counts[c] < all[i].counts[c]) ge = false;
          if (all[j].counts[c] > all[i].counts[c]) gt = true;
          // A micro-batch counted in `counts` holds at least what one in
          // `held` does, so j (counts and counts + held no smaller) then
          // needs at least i's memory.
          const int hi = all[i].counts[c] + all[i].held[c];
          const int hj = all[j].counts[c] + all[j].held[c];
          if (hj < hi) ge = false;
          if (hj > hi) gt = true;
        }
        dominated = ge && gt;
      }
      if (!dominated) keep.push_back(all[i]);
    }
    prof.moments[d] = std::move(keep);
  }
  return prof;
}

}  // namespace ppb::search_detail
