// The placement search's tree over device orders (see placement.h for the
// contract): relaxed clusters for prefixes, leaves searched by SearchFixed
// under a cutoff, heuristic orders, order polishing, and the run.
#include "search/placement.h"

#include <algorithm>
#include <tuple>

#include "search/driver.h"
#include "search/searcher.h"

namespace ppb::search_detail {

void PlacementSearcher::Report(bool force) {
  if (!opt_.progress || !ReportDue(force, opt_.progress_interval_s, limits_.last_report)) return;
  SearchProgress pr;
  pr.elapsed_s = Elapsed();
  pr.nodes = AllNodes();
  pr.evaluations = evaluations_;
  pr.incumbent = top_list_.top.empty() ? -1 : top_list_.top.front().makespan;
  pr.lower_bound = std::min(open_bound_, pr.incumbent < 0 ? kInf : pr.incumbent);
  if (pr.lower_bound >= kInf) pr.lower_bound = 0;
  pr.gap = pr.incumbent > 0 ? static_cast<double>(pr.incumbent - pr.lower_bound) /
                                  static_cast<double>(pr.incumbent)
                            : 1.0;
  opt_.progress(pr);
}

Cluster PlacementSearcher::Relaxed(const Placement& prefix) const {
  const int k = static_cast<int>(prefix.size());
  Placement full = prefix;
  std::vector<char> used(n_, 0);
  for (int d : prefix) used[d] = 1;
  Device super;
  super.speed = 0;
  for (int d = 0; d < n_; ++d) {
    if (used[d]) continue;
    full.push_back(d);
    const DeviceType& t = topo_.types[topo_.device_type[d]];
    super.speed = std::max(super.speed, t.speed);
    super.memory_capacity = std::max(super.memory_capacity, t.memory_capacity);
  }
  Cluster c = ClusterFor(topo_, full);
  for (int r = k; r < n_; ++r) c.devices[r] = super;
  for (int r = 0; r < n_; ++r) {
    if (r >= k || (r + 1) % n_ >= k) c.links[r] = best_link_;
  }
  return c;
}

SearchProblem PlacementSearcher::FixedProblem(Cluster cluster) const {
  SearchProblem q = pb_;
  q.search_placement = false;
  q.cluster = std::move(cluster);
  return q;
}

ChoiceContext PlacementSearcher::ContextOn(size_t choice, const Cluster& cluster) const {
  ChoiceContext c = ctxs_[choice];
  for (int d = 0; d < pb_.p; ++d) c.spec.device_capacity[d] = cluster.devices[d].memory_capacity;
  c.spec.link_matrix = RingLinkMatrix(pb_.p, cluster.links);
  return c;
}

Nanos PlacementSearcher::Bound(const Placement& prefix) {
  const SearchProblem q = FixedProblem(Relaxed(prefix));
  SearchOptions o = opt_;
  o.progress = nullptr;
  o.share = nullptr;
  Nanos best = kInf;
  for (size_t ci = 0; ci < ctxs_.size(); ++ci) {
    Searcher s(q, o, ContextOn(ci, q.cluster));
    best = std::min(best, s.RootOnly());
  }
  return std::max(best, work_bound_);
}

void PlacementSearcher::PolishOrder(std::int64_t budget) {
  for (int round = 0; round < 4 * n_ && !top_list_.top.empty(); ++round) {
    const Placement current = top_list_.top.front().placement;
    const Nanos before = top_list_.top.front().makespan;
    bool improved = false;
    for (int i = 0; i < n_ && !improved; ++i) {
      for (int j = i + 1; j < n_ && !improved; ++j) {
        const int a = current[i], b = current[j];
        if (topo_.device_type[a] == topo_.device_type[b] &&
            topo_.device_node[a] == topo_.device_node[b]) {
          continue;  // the same order
        }
        if (OutOfLimits()) return;
        Placement next = current;
        std::swap(next[i], next[j]);
        Leaf(next, 0, budget);  // a look: no pruning, so no bound needed
        improved = top_list_.top.front().makespan < before;
      }
    }
    if (!improved) return;
  }
}

void PlacementSearcher::Leaf(const Placement& order, Nanos bound, std::int64_t budget) {
  const std::vector<std::int32_t> key = PlacementKey(topo_, order, ring_);
  auto it = seen_.find(key);
  if (it != seen_.end() && (it->second || budget > 0)) return;
  if (bound > Threshold()) {
    seen_[key] = true;  // cannot enter the top list
    return;
  }
  const SearchProblem q = FixedProblem(ClusterFor(topo_, order));
  Sync();
  SearchOptions o = opt_;
  o.progress = nullptr;
  o.share = nullptr;  // the order's own search is this process's
  o.min_capacity = false;
  o.open_tree_bound = false;  // its bound only decides whether the order is open
  const Nanos cut = Threshold();
  o.cutoff = cut >= kInf ? -1 : cut;
  if (opt_.time_limit_s > 0) o.time_limit_s = std::max(1e-3, opt_.time_limit_s - Elapsed());
  std::int64_t nodes_left = 0;
  if (opt_.node_limit != 0) {
    nodes_left = std::max<std::int64_t>(0, opt_.node_limit) - AllNodes();
    if (nodes_left <= 0) nodes_left = -1;
  }
  o.node_limit = budget > 0 ? (nodes_left != 0 ? std::min(budget, nodes_left) : budget) : nodes_left;
  if (o.node_limit < 0) o.node_limit = -1;
  o.contexts = nullptr;  // the order's problem is not the one the cache serves
  Result<SearchResult> r = SearchFixed(q, o);
  if (budget <= 0) ++searched_;
  if (!r.ok()) {  // a schedule refused p/v/m: the same for every order
    seen_[key] = true;
    return;
  }
  nodes_ += r->nodes;
  evaluations_ += r->evaluations;
  for (Candidate c : r->top) {
    c.placement = order;
    Offer(std::move(c));
  }
  const bool closed = r->proved_optimal || r->proved_infeasible;
  if (budget > 0) {
    if (!closed) {
      seen_.emplace(key, false);
      return;
    }
  }
  seen_[key] = true;
  if (!closed) {
    if (r->stop_reason == "node limit" || r->stop_reason == "time limit" ||
        r->stop_reason == kNothingEvaluated) {
      limits_.hit = true;
      limits_.stop_reason = r->stop_reason;
      open_bound_ = std::min(open_bound_, r->found ? r->lower_bound : bound);
    } else {
      inexact_ = true;
      inexact_reason_ = r->stop_reason;
      open_bound_ = std::min(open_bound_, r->found ? r->lower_bound : bound);
    }
  }
  Report(false);
}

std::vector<int> PlacementSearcher::Kids(const Placement& prefix,
                                         const std::vector<char>& used) const {
  const int nodes = static_cast<int>(topo_.node_names.size());
  std::vector<char> touched(nodes, 0);
  for (int d : prefix) touched[topo_.device_node[d]] = 1;
  std::vector<int> kids;
  for (int d = 0; d < n_; ++d) {
    if (used[d]) continue;
    bool rep = true;
    for (int e = 0; e < d && rep; ++e) {
      if (used[e]) continue;
      const int nd = topo_.device_node[d], ne = topo_.device_node[e];
      if (topo_.device_type[e] != topo_.device_type[d]) continue;
      // Same node, or an untouched node of the same make-up: e stands for d.
      if (ne == nd) rep = false;
      if (!touched[nd] && !touched[ne] && node_class_[nd] == node_class_[ne] && ne < nd) rep = false;
    }
    if (rep) kids.push_back(d);
  }
  return kids;
}

void PlacementSearcher::Sync() {
  if (opt_.share == nullptr || !opt_.share->exchange) return;
  const Nanos own = TopThreshold(top_list_.top, top_list_.top_k, opt_.cutoff);
  const Nanos all = opt_.share->exchange(own >= kInf ? -1 : own);
  Nanos cut = opt_.cutoff < 0 ? kInf : opt_.cutoff;
  if (all >= 0) cut = std::min(cut, all);
  top_list_.cutoff = cut >= kInf ? -1 : cut;
}

std::vector<Placement> PlacementSearcher::Units() const {
  // The prefixes of the least depth that gives every process a few units
  // (or whole orders), in order of their devices: the same list in every
  // process, whatever its clock.
  const size_t want = 4 * static_cast<size_t>(std::max(1, opt_.share->processes));
  std::vector<Placement> level{Placement{}};
  for (int depth = 0; depth < n_ && level.size() < want; ++depth) {
    std::vector<Placement> next;
    for (const Placement& pre : level) {
      std::vector<char> used(n_, 0);
      for (int d : pre) used[d] = 1;
      for (int d : Kids(pre, used)) {
        next.push_back(pre);
        next.back().push_back(d);
      }
    }
    level = std::move(next);
  }
  return level;
}

void PlacementSearcher::SharedDfs() {
  const std::vector<Placement> units = Units();
  // Bounded first, then visited best bound first; unit u is searched here
  // only when granted (ids are positions in `units`, alike everywhere).
  std::vector<std::pair<Nanos, std::int64_t>> order;
  for (size_t u = 0; u < units.size(); ++u) {
    if (OutOfLimits()) {
      open_bound_ = std::min(open_bound_, Bound(Placement{}));
      return;
    }
    order.emplace_back(Bound(units[u]), static_cast<std::int64_t>(u));
  }
  std::sort(order.begin(), order.end());
  for (const auto& [b, u] : order) {
    if (OutOfLimits()) {
      open_bound_ = std::min(open_bound_, b);
      continue;
    }
    Sync();
    if (b > Threshold()) break;  // sorted: the rest cannot do better
    if (!opt_.share->claim(u)) continue;
    Placement prefix = units[static_cast<size_t>(u)];
    std::vector<char> used(n_, 0);
    for (int d : prefix) used[d] = 1;
    Dfs(prefix, used, b);
  }
}

void PlacementSearcher::Dfs(Placement& prefix, std::vector<char>& used, Nanos bound) {
  if (OutOfLimits()) {
    open_bound_ = std::min(open_bound_, bound);
    return;
  }
  if (static_cast<int>(prefix.size()) == n_) {
    Leaf(prefix, bound, 0);
    return;
  }
  ++placement_nodes_;
  std::vector<std::pair<Nanos, int>> kids;
  for (int d : Kids(prefix, used)) {
    prefix.push_back(d);
    kids.emplace_back(Bound(prefix), d);
    prefix.pop_back();
  }
  std::sort(kids.begin(), kids.end());
  for (size_t i = 0; i < kids.size(); ++i) {
    const auto [b, d] = kids[i];
    if (b > Threshold()) break;  // sorted: the rest cannot do better
    if (OutOfLimits()) {
      open_bound_ = std::min(open_bound_, b);
      continue;
    }
    prefix.push_back(d);
    used[d] = 1;
    Dfs(prefix, used, b);
    used[d] = 0;
    prefix.pop_back();
  }
}

// Orders worth a first look: nodes kept together, the largest-memory
// devices first (the first ranks hold the most micro-batches in flight
// under 1F1B); the same with the fastest first; the given order.
std::vector<Placement> PlacementSearcher::HeuristicOrders() const {
  std::vector<Placement> out;
  const int nodes = static_cast<int>(topo_.node_names.size());
  for (int rule = 0; rule < 2; ++rule) {
    auto key = [&](int d) {
      const DeviceType& t = topo_.types[topo_.device_type[d]];
      return rule == 0 ? std::make_tuple(-static_cast<double>(t.memory_capacity), -t.speed)
                       : std::make_tuple(-t.speed, -static_cast<double>(t.memory_capacity));
    };
    std::vector<std::vector<int>> by_node(nodes);
    for (int d = 0; d < n_; ++d) by_node[topo_.device_node[d]].push_back(d);
    for (auto& v : by_node) {
      std::stable_sort(v.begin(), v.end(), [&](int a, int b) { return key(a) < key(b); });
    }
    std::vector<int> order(nodes);
    for (int i = 0; i < nodes; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      if (by_node[a].empty() || by_node[b].empty()) return !by_node[a].empty();
      return key(by_node[a].front()) < key(by_node[b].front());
    });
    Placement pl;
    for (int nd : order) pl.insert(pl.end(), by_node[nd].begin(), by_node[nd].end());
    out.push_back(pl);
  }
  out.push_back(pb_.given_placement);
  return out;
}

SearchResult PlacementSearcher::Run() {
  // A short look at a few natural orders gives an incumbent for pruning.
  constexpr std::int64_t kLook = 64;
  for (const Placement& pl : HeuristicOrders()) {
    if (OutOfLimits()) break;
    Leaf(pl, 0, kLook);
  }
  // The bound over every order comes before the polish: it needs only an
  // incumbent, and the polish would take its time.
  if (opt_.share == nullptr || opt_.share->lead) BoundFastestPlacements();
  PolishOrder(kLook);
  if (opt_.share != nullptr) {
    SharedDfs();
  } else {
    Placement prefix;
    std::vector<char> used(n_, 0);
    // (Stopped before the tree search, the whole tree is open: its root
    // bound is what is known.)
    Dfs(prefix, used, Bound(prefix));
  }
  Report(true);

  SearchResult res;
  res.nodes = AllNodes();
  res.evaluations = evaluations_;
  res.placements_searched = searched_;
  res.placement_nodes = placement_nodes_;
  res.incumbents = top_list_.incumbents;
  res.top = top_list_.top;
  res.found = !top_list_.top.empty();
  // Past the deadline only the best is simulated again (the alternatives
  // are dropped); one that disagrees withdraws the proof.
  const std::string resimulated =
      ResimulateTop(res.top, opt_, [&](const Candidate& c) {
        return Evaluate(pb_, c.choice, c.strategy, c.placement);
      });
  res.found = !res.top.empty();
  if (res.found) res.best = res.top.front();
  const bool closed = !limits_.hit && !inexact_ && resimulated.empty();
  res.proved_optimal = res.found && closed;
  res.proved_infeasible = !res.found && closed;
  {
    const Nanos part = std::min(open_bound_, res.found ? res.best.makespan : kInf);
    res.part_bound = part >= kInf ? -1 : part;
  }
  res.lower_bound = res.found ? std::min(open_bound_, res.best.makespan) : 0;
  // The bound over every order from the fastest type's rank sets.
  if (res.found && fast_bound_ > 0) {
    res.lower_bound = std::max(res.lower_bound, std::min(fast_bound_, res.best.makespan));
  }
  res.fast_sets = fast_sets_total_;
  res.fast_sets_bounded = fast_sets_done_;
  res.fast_sets_bound = fast_bound_;
  if (res.found && res.best.makespan > 0) {
    res.gap = static_cast<double>(res.best.makespan - res.lower_bound) /
              static_cast<double>(res.best.makespan);
  }
  res.stop_reason = closed ? (res.found ? "proved optimal" : "proved infeasible")
                           : limits_.hit          ? limits_.stop_reason
                           : !resimulated.empty() ? resimulated
                                                  : inexact_reason_;
  return res;
}

Result<SearchResult> SearchPlacement(const SearchProblem& problem,
                                     const SearchOptions& options) {
  const auto t0 = Clock::now();
  const Topology& topo = problem.topology;
  if (topo.num_devices() != problem.p || !IsPlacement(topo, problem.given_placement)) {
    return Error{"cluster", "the placement search needs one device per rank (" +
                                std::to_string(problem.p) + ") and a given order"};
  }
  // Choices left out at the deadline: none prepared is nothing evaluated;
  // some, and the bounds over the orders miss the others (nothing proved,
  // bound 0).
  bool cut = false;
  Result<std::vector<ChoiceContext>> made = MakeContexts(problem, options, &cut);
  if (!made.ok()) return made.error();
  std::vector<ChoiceContext> ctxs = std::move(made).value();
  if (ctxs.empty()) {
    SearchResult res = NothingEvaluated(options);
    res.solve_time_s = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
  }
  PlacementSearcher ps(problem, options, std::move(ctxs));
  SearchResult res = ps.Run();
  // An order that evaluated nothing says so only when none did.
  if (res.found && res.stop_reason == kNothingEvaluated) res.stop_reason = "time limit";
  if (cut) {
    res.proved_optimal = res.proved_infeasible = false;
    res.lower_bound = 0;
    res.part_bound = 0;
    res.gap = res.found ? 1.0 : 0.0;
    if (res.stop_reason == "proved optimal" || res.stop_reason == "proved infeasible") {
      res.stop_reason = "time limit";
    }
  }
  res.solve_time_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace ppb::search_detail
