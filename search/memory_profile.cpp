// Memory profiles of a program (see memory_profile.h for the contract).
#include "search/memory_profile.h"

#include <algorithm>

namespace ppb::search_detail {

MemoryProfile BuildProfile(const PipelineSpec& spec, const Program& program) {
  MemoryProfile prof;
  prof.v = spec.v;
  prof.moments.resize(spec.p);
  for (int d = 0; d < spec.p; ++d) {
    std::vector<int> counts(spec.v, 0);
    std::vector<Moment> all;
    for (const Op& op : program.ops[d]) {
      const int c = op.stage.value / spec.p;
      all.push_back(Moment{counts, c, op.kind == OpKind::F});
      if (op.kind == OpKind::F) ++counts[c];
      if (op.kind == OpKind::B || op.kind == OpKind::W) --counts[c];
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end(),
                          [](const Moment& a, const Moment& b) {
                            return !(a < b) && !(b < a);
                          }),
              all.end());
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
