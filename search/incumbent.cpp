// The top list, thresholds and progress throttle (see incumbent.h), and
// Better(), the order on candidates (search.h).
#include "search/incumbent.h"

#include <algorithm>

namespace ppb {

bool Better(const Candidate& a, const Candidate& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (a.makespan != b.makespan) return a.makespan < b.makespan;
  if (a.max_peak != b.max_peak) return a.max_peak < b.max_peak;
  if (a.recomputed_layers != b.recomputed_layers) {
    return a.recomputed_layers < b.recomputed_layers;
  }
  if (a.choice != b.choice) return a.choice < b.choice;
  if (a.strategy.layers_per_stage != b.strategy.layers_per_stage) {
    return a.strategy.layers_per_stage < b.strategy.layers_per_stage;
  }
  if (a.strategy.recompute != b.strategy.recompute) {
    return a.strategy.recompute < b.strategy.recompute;
  }
  return a.placement < b.placement;
}

namespace search_detail {

bool OfferTop(std::vector<Candidate>& top, Candidate c, int top_k) {
  if (!c.feasible) return false;
  for (auto it = top.begin(); it != top.end(); ++it) {
    if (it->choice == c.choice && it->placement == c.placement &&
        it->strategy.layers_per_stage == c.strategy.layers_per_stage) {
      if (!Better(c, *it)) return false;
      top.erase(it);
      break;
    }
  }
  const int k = std::max(1, top_k);
  auto it = std::lower_bound(top.begin(), top.end(), c, Better);
  if (static_cast<int>(it - top.begin()) >= k) return false;
  const bool improves = it == top.begin();
  top.insert(it, std::move(c));
  if (static_cast<int>(top.size()) > k) top.pop_back();
  return improves;
}

bool ReportDue(bool force, double interval, Clock::time_point& last) {
  const auto now = Clock::now();
  if (!force && std::chrono::duration<double>(now - last).count() < interval) return false;
  last = now;
  return true;
}

Nanos TopThreshold(const std::vector<Candidate>& top, int top_k, Nanos cutoff) {
  const Nanos cut = cutoff >= 0 ? cutoff : kInf;
  if (static_cast<int>(top.size()) < std::max(1, top_k)) return cut;
  return std::min(cut, top.back().makespan);
}

void TopList::Offer(Candidate c, Clock::time_point start) {
  if (OfferTop(top, std::move(c), top_k)) {
    incumbents.emplace_back(std::chrono::duration<double>(Clock::now() - start).count(),
                            top.front().makespan);
  }
}

}  // namespace search_detail
}  // namespace ppb
