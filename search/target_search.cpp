// The search restricted to what one framework can deploy (search.target;
// see deployable.h for the rules).
//
// Contract: SearchTarget runs the search once per recompute setting of the
// target (RecomputeSettings), each with its stages' menus restricted to
// what the setting allows (BuildMenu) and only deployable strategies
// offered (Searcher::Offer), and merges the results: the best over the
// settings, their top lists merged, bounds the least over the settings,
// proved only when every setting's search was. A node limit is shared out
// over the settings deterministically and a time limit in equal shares of
// what is left.
#include <algorithm>
#include <chrono>
#include <cstdint>

#include "search/driver.h"

namespace ppb::search_detail {

Result<SearchResult> SearchTarget(const SearchProblem& problem, const SearchOptions& options) {
  const auto t0 = Clock::now();
  const std::vector<RecomputeSetting> settings = RecomputeSettings(options.target, problem.layers);
  const int n = static_cast<int>(settings.size());
  SearchResult res;
  bool all_closed = true, all_infeasible = true;
  Nanos lb = kInf;
  std::vector<std::pair<double, Nanos>> improvements;
  Nanos part = kInf;
  bool settings_cut = false;
  for (int k = 0; k < n; ++k) {
    // Past the deadline no more settings are searched (the first always
    // is: an answer); those left out prove and bound nothing.
    if (k > 0 && PastDeadline(options)) {
      settings_cut = true;
      break;
    }
    SearchOptions o = options;
    o.setting = settings[static_cast<size_t>(k)];
    // Shared with other processes: each setting's units are its own.
    SearchShare mine;
    if (options.share != nullptr) {
      mine = *options.share;
      const SearchShare* outer = options.share;
      const std::int64_t base = static_cast<std::int64_t>(k) << 40;
      mine.claim = [outer, base](std::int64_t u) { return outer->claim(base + u); };
      o.share = &mine;
    }
    o.min_capacity = false;
    if (options.node_limit > 0) {
      o.node_limit = options.node_limit / n + (k < options.node_limit % n ? 1 : 0);
      if (o.node_limit == 0) o.node_limit = -1;
    }
    if (options.time_limit_s > 0) {
      const double left =
          options.time_limit_s - std::chrono::duration<double>(Clock::now() - t0).count();
      o.time_limit_s = std::max(1e-3, left / (n - k));
    }
    Result<SearchResult> r =
        problem.search_placement ? SearchPlacement(problem, o) : SearchFixed(problem, o);
    if (!r.ok()) return r.error();
    SearchResult& sub = *r;
    const double offset =
        std::chrono::duration<double>(Clock::now() - t0).count() - sub.solve_time_s;
    for (const auto& [t, mk] : sub.incumbents) improvements.emplace_back(offset + t, mk);
    res.nodes += sub.nodes;
    res.evaluations += sub.evaluations;
    res.placements_searched += sub.placements_searched;
    res.placement_nodes += sub.placement_nodes;
    const bool closed = sub.proved_optimal || sub.proved_infeasible;
    all_closed = all_closed && closed;
    all_infeasible = all_infeasible && sub.proved_infeasible;
    if (!sub.proved_infeasible) lb = std::min(lb, sub.lower_bound);
    if (sub.part_bound >= 0) part = std::min(part, sub.part_bound);
    if (!closed && res.stop_reason.empty()) res.stop_reason = sub.stop_reason;
    for (Candidate& c : sub.top) {
      bool dup = false;
      for (const Candidate& t : res.top) {
        dup = dup || (t.choice == c.choice && t.placement == c.placement &&
                      t.strategy.layers_per_stage == c.strategy.layers_per_stage &&
                      t.strategy.recompute == c.strategy.recompute);
      }
      if (!dup) res.top.push_back(std::move(c));
    }
  }
  if (settings_cut) {
    all_closed = false;
    lb = 0;
    part = 0;
    if (res.stop_reason.empty()) res.stop_reason = "time limit";
  }
  std::sort(res.top.begin(), res.top.end(), Better);
  if (static_cast<int>(res.top.size()) > options.top_k) res.top.resize(options.top_k);
  res.found = !res.top.empty() && res.top.front().feasible;
  if (res.found) res.best = res.top.front();
  res.proved_optimal = res.found && all_closed;
  res.proved_infeasible = !res.found && all_closed && all_infeasible;
  res.lower_bound = lb >= kInf ? 0 : std::min(lb, res.found ? res.best.makespan : lb);
  res.part_bound = part >= kInf ? -1 : part;
  if (res.found && res.best.makespan > 0) {
    res.gap = static_cast<double>(res.best.makespan - res.lower_bound) /
              static_cast<double>(res.best.makespan);
  }
  if (all_closed) res.stop_reason = res.found ? "proved optimal" : "proved infeasible";
  // Each time the best over the settings improved.
  std::sort(improvements.begin(), improvements.end());
  for (const auto& x : improvements) {
    if (res.incumbents.empty() || x.second < res.incumbents.back().second) {
      res.incumbents.push_back(x);
    }
  }
  res.solve_time_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace ppb::search_detail
