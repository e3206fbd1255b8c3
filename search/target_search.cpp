// The search restricted to what one framework can deploy (search.target;
// see deployable.h for the rules).
//
// Contract: SearchTarget searches the target's recompute settings
// (RecomputeSettings) one at a time, each with its stages' menus restricted
// to what the setting allows (BuildMenu) and only deployable strategies
// offered (Searcher::Offer), and merges the results: the best over the
// settings, their top lists merged, bounds the least over the settings.
// On the problem's own cluster each setting is first bounded (the least
// root bound over the schedule choices, RootBound seeing the setting's
// forced recompute), the settings are searched in order of that bound
// (ties: RecomputeSettings' order), and a setting whose bound exceeds the
// K-th best time found so far is not searched: nothing in it can enter the
// top list (pruned by bound); a setting searched is searched with that time
// as its cutoff. The result is proved only when every setting was closed or
// pruned. A node limit is shared out in that order: each setting searched
// takes half of what is left, the last one to search (no other setting's
// bound within that time) all of it, and what one leaves goes on; a time
// limit likewise (deterministic for a node limit). When nothing fits:
// the least uniform capacity at which a deployable strategy fits (the least
// over the settings of MinCapacity under each).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>

#include "search/bounds.h"
#include "search/driver.h"
#include "search/first_tries.h"
#include "search/searcher.h"

namespace ppb::search_detail {

namespace {

// The root bound of choice `c` under o.setting (RootBound and the path
// bound: `path0` and `pb_min` are the choice's PathWeights mixture), kInf
// where Searcher::Prepare closes the choice (no split, or nothing the
// framework can run under it); `rr` gets RootBound's relaxation.
Nanos SettingRoot(const SearchProblem& problem, const SearchOptions& o, const ChoiceContext& c,
                  Nanos path0, double pb_min, RootRelaxation& rr) {
  const int kmin = problem.allow_empty_chunks ? 0 : 1;
  if (c.L < c.S * kmin ||
      !ChoiceRefusal(o.target, problem.layers, c.v, c.spec.placement == StagePlacement::V, c.p,
                     c.m, EffectiveGroup(c.choice, c.p, c.m))
           .empty()) {
    return kInf;
  }
  const ChoiceProblem cp(problem, o, c);
  Nanos own = RootBound(cp, nullptr, nullptr, rr);
  if (path0 > 0 && own < kInf) {
    own = std::max(own, path0 + static_cast<Nanos>(std::floor(
                                    pb_min * static_cast<double>(rr.forced_recompute))));
  }
  return own;
}

// Each setting's bound: the least over the schedule choices of the
// searcher's root bound under it (RootBound and the path bound) (kInf: no choice holds a split it can
// run). 0 for every setting in a placement search (its root bound holds
// for one device order only) and for a target with one setting.
Result<std::vector<Nanos>> SettingBounds(const SearchProblem& problem, const SearchOptions& options,
                                         const std::vector<RecomputeSetting>& settings) {
  std::vector<Nanos> bound(settings.size(), 0);
  if (problem.search_placement || settings.size() < 2) return bound;
  // Choices left out at the deadline would leave the least too high: 0.
  bool cut = false;
  Result<std::vector<ChoiceContext>> ctxs = MakeContexts(problem, options, &cut);
  if (!ctxs.ok()) return ctxs.error();
  if (cut) return bound;
  // PathWeights' mixture does not depend on the setting, only its last
  // term (the least backward coefficient times the recompute memory
  // forces) does: one mixture per choice, and floor(x) + floor(y) <=
  // floor(x + y) keeps the sum a valid bound.
  std::vector<Nanos> path0(ctxs->size(), 0);
  std::vector<double> pb_min(ctxs->size(), 0.0);
  for (size_t i = 0; i < ctxs->size(); ++i) {
    const ChoiceProblem cp(problem, options, (*ctxs)[i]);
    PathMixture mix;
    path0[i] = PathWeights(cp, 0, mix);
    if (!mix.pb_min.empty()) pb_min[i] = mix.pb_min[0];
  }
  for (size_t k = 0; k < settings.size(); ++k) {
    SearchOptions o = options;
    o.setting = settings[k];
    Nanos b = kInf;
    for (size_t i = 0; i < ctxs->size(); ++i) {
      if (PastDeadline(options)) return std::vector<Nanos>(settings.size(), 0);
      RootRelaxation rr;
      b = std::min(b, SettingRoot(problem, o, (*ctxs)[i], path0[i], pb_min[i], rr));
    }
    bound[k] = b;
  }
  return bound;
}

// Adds `c` to `top` unless an entry of the same choice, device order and
// split is there (the better of the two is kept): one entry per split, as
// a top list holds them.
void OfferMerged(std::vector<Candidate>& top, Candidate c) {
  for (Candidate& t : top) {
    if (t.choice == c.choice && t.placement == c.placement &&
        t.strategy.layers_per_stage == c.strategy.layers_per_stage) {
      if (Better(c, t)) t = std::move(c);
      return;
    }
  }
  top.push_back(std::move(c));
}

}  // namespace

Result<SearchResult> SearchTarget(const SearchProblem& problem, const SearchOptions& options) {
  const auto t0 = Clock::now();
  const std::vector<RecomputeSetting> settings = RecomputeSettings(options.target, problem.layers);
  const int n = static_cast<int>(settings.size());
  // The framework's defaults first (below), each with when it was done.
  std::vector<TriedDefault> tried;
  double tried_s = 0;
  if (!problem.search_placement && options.share == nullptr) {
    tried = TryDefaults(problem, options.target, options.deadline);
    tried_s = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  Result<std::vector<Nanos>> bounds = SettingBounds(problem, options, settings);
  if (!bounds.ok()) return bounds.error();
  const std::vector<Nanos>& bound = *bounds;
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return bound[static_cast<size_t>(a)] < bound[static_cast<size_t>(b)]; });
  SearchResult res;
  bool all_closed = true, all_infeasible = true;
  Nanos lb = kInf;
  std::vector<std::pair<double, Nanos>> improvements;
  // The framework's defaults (the first tries it can deploy) before any
  // setting: incumbents for every setting's cutoff, and an answer that is
  // never slower than one of them that fits (issue 32). (The placement
  // search tries its own orders.)
  if (!tried.empty()) {
    for (TriedDefault& x : tried) {
      ++res.evaluations;
      res.first_tries.push_back(x.candidate);
      if (!x.candidate.feasible) continue;
      improvements.emplace_back(tried_s, x.candidate.makespan);
      OfferMerged(res.top, std::move(x.candidate));
    }
    std::sort(res.top.begin(), res.top.end(), Better);
    if (static_cast<int>(res.top.size()) > std::max(1, options.top_k)) {
      res.top.resize(static_cast<size_t>(std::max(1, options.top_k)));
    }
  }
  Nanos part = kInf;
  std::int64_t nodes_left = options.node_limit;
  const int top_k = std::max(1, options.top_k);
  int searched = 0;
  Nanos left_bound = kInf;  // the least bound of the settings left out
  for (int pos = 0; pos < n; ++pos) {
    const int k = order[static_cast<size_t>(pos)];
    // The time a strategy must not exceed to enter the top list.
    Nanos threshold = options.cutoff >= 0 ? options.cutoff : kInf;
    if (static_cast<int>(res.top.size()) >= top_k) {
      threshold = std::min(threshold, res.top[static_cast<size_t>(top_k - 1)].makespan);
    }
    // No choice holds a split it can run (kInf), or nothing in it can
    // enter the top list.
    if (bound[static_cast<size_t>(k)] >= kInf || bound[static_cast<size_t>(k)] > threshold) {
      continue;  // closed
    }
    // Past the deadline no more settings are searched (one always is: an
    // answer); those left out prove nothing and bound by their own bound.
    if (searched > 0 && PastDeadline(options)) {
      for (int q = pos; q < n; ++q) {
        left_bound = std::min(left_bound, bound[static_cast<size_t>(order[static_cast<size_t>(q)])]);
      }
      break;
    }
    ++searched;
    // The settings still to search (sorted by bound: from here on, up to
    // the first whose bound exceeds the threshold).
    int still = 0;
    for (int q = pos; q < n; ++q) {
      const Nanos b = bound[static_cast<size_t>(order[static_cast<size_t>(q)])];
      if (b > threshold || b >= kInf) break;
      ++still;
    }
    SearchOptions o = options;
    o.setting = settings[static_cast<size_t>(k)];
    o.cutoff = threshold >= kInf ? -1 : threshold;
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
    // The most promising setting takes half of what is left (all of it
    // when it is the last one to search); what it leaves goes on.
    const int shares = std::min(still, 2);
    if (options.node_limit > 0) {
      o.node_limit = std::max<std::int64_t>(0, nodes_left) / shares;
      if (o.node_limit == 0) o.node_limit = -1;
    }
    if (options.time_limit_s > 0) {
      const double left =
          options.time_limit_s - std::chrono::duration<double>(Clock::now() - t0).count();
      o.time_limit_s = std::max(1e-3, left / shares);
    }
    Result<SearchResult> r =
        problem.search_placement ? SearchPlacement(problem, o) : SearchFixed(problem, o);
    if (!r.ok()) return r.error();
    SearchResult& sub = *r;
    nodes_left -= sub.nodes;
    const double offset =
        std::chrono::duration<double>(Clock::now() - t0).count() - sub.solve_time_s;
    for (const auto& [t, mk] : sub.incumbents) improvements.emplace_back(offset + t, mk);
    res.nodes += sub.nodes;
    res.evaluations += sub.evaluations;
    res.dives += sub.dives;
    for (Candidate& c : sub.first_tries) res.first_tries.push_back(std::move(c));
    res.placements_searched += sub.placements_searched;
    res.placement_nodes += sub.placement_nodes;
    const bool closed = sub.proved_optimal || sub.proved_infeasible;
    all_closed = all_closed && closed;
    // Under a cutoff, "nothing found" proves nothing below it, not that
    // nothing fits.
    all_infeasible = all_infeasible && sub.proved_infeasible && o.cutoff < 0;
    if (!sub.proved_infeasible) lb = std::min(lb, sub.lower_bound);
    if (sub.part_bound >= 0) part = std::min(part, sub.part_bound);
    if (!closed && res.stop_reason.empty()) res.stop_reason = sub.stop_reason;
    for (Candidate& c : sub.top) OfferMerged(res.top, std::move(c));
    std::sort(res.top.begin(), res.top.end(), Better);
    if (static_cast<int>(res.top.size()) > options.top_k) res.top.resize(options.top_k);
  }
  if (left_bound < kInf) {
    all_closed = false;
    lb = std::min(lb, left_bound);
    part = std::min(part, left_bound);
    if (res.stop_reason.empty()) res.stop_reason = "time limit";
  }
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
  // A first setting that evaluated nothing speaks for all only when none did.
  if (res.stop_reason == kNothingEvaluated && (res.found || res.evaluations > 0)) {
    res.stop_reason = "time limit";
  }
  // Each time the best over the settings improved.
  std::sort(improvements.begin(), improvements.end());
  for (const auto& x : improvements) {
    if (res.incumbents.empty() || x.second < res.incumbents.back().second) {
      res.incumbents.push_back(x);
    }
  }
  // Nothing fits: the least capacity at which some setting's strategy does.
  if (!res.found && options.min_capacity && options.share == nullptr && !problem.search_placement) {
    bool cut = false;
    Result<std::vector<ChoiceContext>> ctxs = MakeContexts(problem, options, &cut);
    if (!ctxs.ok()) return ctxs.error();
    res.min_capacity_cut = cut;  // choices left out may fit with less
    Bytes least = kInf;
    for (const RecomputeSetting& s : settings) {
      SearchOptions o = options;
      o.setting = s;
      SearchResult one;
      MinCapacity(problem, o, *ctxs, one);
      res.min_capacity_cut = res.min_capacity_cut || one.min_capacity_cut;
      if (one.min_capacity_needed > 0 && one.min_capacity_needed < least) {
        least = one.min_capacity_needed;
        res.binding_device = one.binding_device;
      }
      if (one.min_capacity_cut || cut) break;
    }
    res.min_capacity_needed = least < kInf ? least : 0;
    if (res.min_capacity_cut) res.binding_device = -1;
    res.lower_bound = 0;
  }
  res.solve_time_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace ppb::search_detail

namespace ppb {

Nanos TailOptimizerFloor(const SearchProblem& problem) {
  if (!problem.tail.enabled) return 0;
  Nanos opt = 0;
  for (const Layer& l : problem.layers) opt += l.optimizer;
  return opt / std::max(1, problem.p);
}

Result<Nanos> LowerBound(const SearchProblem& problem, const SearchOptions& options,
                         Nanos below) {
  using namespace search_detail;
  SearchOptions o = options;
  if (o.contexts == nullptr) o.contexts = NewContextCache();
  const std::vector<RecomputeSetting> settings =
      options.setting ? std::vector<RecomputeSetting>{*options.setting}
                      : RecomputeSettings(options.target, problem.layers);
  if (settings.empty()) return kInf;
  if (problem.search_placement) return 0;
  bool cut = false;
  Result<std::vector<ChoiceContext>> ctxs = MakeContexts(problem, o, &cut);
  if (!ctxs.ok()) return ctxs.error();
  if (cut) return 0;
  const Nanos floor = TailOptimizerFloor(problem);
  Nanos b = kInf;
  for (const ChoiceContext& c : *ctxs) {
    // As SettingBounds: one path mixture per choice.
    Nanos path0 = 0;
    double pb_min = 0;
    {
      const ChoiceProblem cp(problem, o, c);
      PathMixture mix;
      path0 = PathWeights(cp, 0, mix);
      if (!mix.pb_min.empty()) pb_min = mix.pb_min[0];
    }
    for (const RecomputeSetting& setting : settings) {
      if (PastDeadline(o)) return 0;
      SearchOptions os = o;
      os.setting = setting;
      RootRelaxation rr;
      Nanos own = SettingRoot(problem, os, c, path0, pb_min, rr);
      if (own >= kInf) continue;  // closed, or nothing fits under this setting
      own = ScaleBound(own, c.bound_scale);
      const ChoiceProblem cp(problem, os, c);
      // What can beat `below` ends its pipeline by below - floor: the
      // open-tree bound over the root's decoder counts (valid for every
      // strategy that ends by then, and above it when none does).
      if (below > 0 && own + floor <= below) {
        Engine engine;
        const Nanos tp = TotalsPathBound(cp, rr.totals, nullptr, engine, Clock::now(),
                                         UnscaleBound(below - floor, c.bound_scale));
        own = std::max(own, ScaleBound(tp, c.bound_scale));
      }
      b = std::min(b, own);
    }
  }
  if (b >= kInf) return kInf;
  return b + floor;
}

}  // namespace ppb
