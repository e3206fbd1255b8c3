// Bounds of the placement search that hold for every device order.
//
// Contract: DecoderBound is a lower bound on the optimum over every order
// (and every split and recompute); BoundFastestPlacements sets fast_bound_
// only when every set of ranks for the fastest device type was bounded, and
// then it is a lower bound on the optimum over every order. Without a time
// limit the sets run in order on one thread (the bound does not depend on
// thread timing).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "search/placement.h"
#include "search/searcher.h"

namespace ppb::search_detail {

Nanos PlacementSearcher::DecoderBound() const {
  if (pb_.layers.empty()) return 0;
  // Plain variables, not a structured binding: the lambdas below capture
  // them (clang before 16, which builds tests/fuzz, cannot capture a
  // binding).
  const auto group = LargestIdenticalGroup(pb_.layers);
  const int rep = group.first;
  const int D = group.second;
  const Layer& dec = pb_.layers[rep];
  const Nanos w = dec.forward + dec.backward_input + dec.backward_weight;
  // Least recompute time of k decoders whose stash fits `room`.
  // Past the deadline (each front is O(k^2): 20,000 decoders take minutes)
  // the fronts left take recompute as free at the least stash, which errs
  // towards less recompute and keeps the bound valid.
  std::vector<std::vector<std::pair<Bytes, Nanos>>> fronts(D + 1);
  Bytes least = dec.activation;
  for (const auto& o : dec.recompute) least = std::min(least, o.retained_activation);
  bool cut = false;
  for (int k = 0; k <= D; ++k) {
    cut = cut || PastDeadline(opt_);
    fronts[k] = cut ? std::vector<std::pair<Bytes, Nanos>>{{static_cast<Bytes>(k) * least, 0}}
                    : StackRecomputeFront(dec, k);
  }
  auto least_rt = [&](int k, long double room) -> Nanos {
    Nanos best_t = kInf;
    for (const auto& [st, t] : fronts[k]) {
      if (static_cast<long double>(st) <= room) best_t = std::min(best_t, t);
    }
    return best_t;
  };
  Nanos overall = kInf;
  for (const ChoiceContext& c : ctxs_) {
    // The least weight of stash in flight at a rank's peak: max over its
    // moments of the fewest micro-batches any chunk holds (valid for any
    // spread of the stash over the chunks), least over the ranks.
    double weight = std::numeric_limits<double>::infinity();
    for (int d = 0; d < c.p; ++d) {
      double mx = 0;
      for (const Moment& mo : c.profile->moments[d]) {
        mx = std::max(mx, static_cast<double>(*std::min_element(mo.counts.begin(), mo.counts.end())));
      }
      weight = std::min(weight, mx);
    }
    if (!std::isfinite(weight)) weight = 0;
    // load[t][k] per device type.
    const int T = static_cast<int>(topo_.types.size());
    std::vector<std::vector<Nanos>> load(T, std::vector<Nanos>(D + 1, kInf));
    for (int t = 0; t < T; ++t) {
      const DeviceType& dt = topo_.types[t];
      for (int k = 0; k <= D; ++k) {
        const long double room =
            static_cast<long double>(dt.memory_capacity) - static_cast<long double>(k) * dec.static_memory;
        if (room < 0) break;
        const Nanos rt = weight > 0 ? least_rt(k, room / weight) : 0;
        if (rt >= kInf) break;  // more decoders fit no better
        load[t][k] = static_cast<Nanos>(
            std::floor(static_cast<long double>(pb_.m) * (k * w + rt) / dt.speed));
      }
    }
    auto absorbs = [&](Nanos lambda) {
      long long total = 0;
      for (int d = 0; d < n_; ++d) {
        const auto& ld = load[topo_.device_type[d]];
        int k = 0;
        while (k < D && ld[k + 1] <= lambda) ++k;
        total += k;
      }
      return total >= D;
    };
    Nanos lo = 0, hi = 1;
    bool ok = true;
    while (!absorbs(hi)) {
      if (hi > kInf / 4) {
        ok = false;
        break;
      }
      hi *= 2;
    }
    if (!ok) continue;  // nothing fits this choice: it bounds nothing here
    while (lo < hi) {
      const Nanos mid = lo + (hi - lo) / 2;
      if (absorbs(mid)) hi = mid;
      else lo = mid + 1;
    }
    overall = std::min(overall, lo >= kInf ? lo : ScaleBound(lo, c.bound_scale));
  }
  if (overall >= kInf) return 0;
  // Per-op rounding of scaled times can shave a little.
  int max_s = 0;
  for (const ChoiceContext& c : ctxs_) max_s = std::max(max_s, c.S);
  return std::max<Nanos>(0, overall - static_cast<Nanos>(pb_.m) * (max_s + 1) * 2);
}

// A bound for every order at once. Each order puts the fastest device type
// on some set of ranks; over all such sets (when there are few enough), a
// cluster with that type on the set, every other rank given the fastest
// speed and the largest memory of the other types, and every link the best
// class is a relaxation of each order with that set (the simulated time of
// a fixed program cannot rise when a device gets faster or a link better,
// and more memory only adds choices). Its root and open-tree bounds (the
// exact LP over decoder counts with the program's critical paths) bound
// those orders; the least over the sets bounds them all. Each set only has
// to reach the least found so far, and the sets share the paths their LPs
// used (same program, same links). Sets are spread over the threads; the
// bound counts only when every set was bounded within the time share.
void PlacementSearcher::BoundFastestPlacements() {
  if (top_list_.top.empty() || ctxs_.empty()) return;
  const int T = static_cast<int>(topo_.types.size());
  if (T < 2) return;
  int fast = 0;
  for (int t = 1; t < T; ++t) {
    if (topo_.types[t].speed > topo_.types[fast].speed) fast = t;
  }
  Device fastd, rest;
  fastd.speed = topo_.types[fast].speed;
  fastd.memory_capacity = topo_.types[fast].memory_capacity;
  rest.speed = 0;
  rest.memory_capacity = 0;
  int k = 0;
  for (int d = 0; d < n_; ++d) {
    const DeviceType& t = topo_.types[topo_.device_type[d]];
    if (topo_.device_type[d] == fast) {
      ++k;
      continue;
    }
    rest.speed = std::max(rest.speed, t.speed);
    rest.memory_capacity = std::max(rest.memory_capacity, t.memory_capacity);
  }
  if (k == 0 || k == n_) return;
  // All k-subsets of the n ranks, in lexicographic order (few enough).
  std::vector<std::vector<int>> sets;
  constexpr size_t kMaxSets = 5000;
  {
    std::vector<int> pick(k);
    for (int i = 0; i < k; ++i) pick[i] = i;
    while (sets.size() <= kMaxSets) {
      sets.push_back(pick);
      int i = k - 1;
      while (i >= 0 && pick[i] == n_ - k + i) --i;
      if (i < 0) break;
      ++pick[i];
      for (int j = i + 1; j < k; ++j) pick[j] = pick[j - 1] + 1;
    }
    if (sets.size() > kMaxSets) return;
  }
  fast_sets_total_ = static_cast<std::int64_t>(sets.size());
  // Each set counts as a placement node: a node limit that cannot cover
  // them all leaves the bound out (and its nodes to the tree search).
  if (opt_.node_limit != 0 &&
      AllNodes() + fast_sets_total_ > std::max<std::int64_t>(0, opt_.node_limit)) {
    return;
  }
  // Time share: up to 60% of the limit from the start of the search.
  const double share = opt_.time_limit_s > 0 ? 0.6 * opt_.time_limit_s : 0;
  if ((opt_.time_limit_s > 0 && Elapsed() >= share) || PastDeadline(opt_)) return;
  const Nanos best = top_list_.top.front().makespan;
  std::atomic<Nanos> least{best};
  std::atomic<std::int64_t> done{0};
  std::atomic<bool> stop{false};
  const Cluster base = ClusterFor(topo_, pb_.given_placement);
  auto work = [&](int thread, int threads) {
    std::vector<std::vector<Path>> pools(ctxs_.size());
    std::vector<std::vector<std::pair<Bytes, Nanos>>> fronts;
    std::vector<RecomputeRows> rows(ctxs_.size());
    for (size_t si = thread; si < sets.size() && !stop; si += threads) {
      if ((opt_.time_limit_s > 0 && Elapsed() >= share) || PastDeadline(opt_)) {
        stop = true;
        break;
      }
      Cluster relaxed = base;
      for (int r = 0; r < n_; ++r) relaxed.devices[r] = rest;
      for (int r : sets[si]) relaxed.devices[r] = fastd;
      for (Link& l : relaxed.links) l = best_link_;
      const SearchProblem q = FixedProblem(std::move(relaxed));
      SearchOptions o = opt_;
      o.progress = nullptr;
      if (opt_.time_limit_s > 0) o.time_limit_s = std::max(1e-3, share - Elapsed());
      Nanos b = kInf;
      for (size_t ci = 0; ci < ctxs_.size(); ++ci) {
        Searcher s(q, o, ContextOn(ci, q.cluster));
        s.SharePaths(&pools[ci]);
        s.ShareFronts(&fronts);
        s.ShareRecompute(&rows[ci]);
        b = std::min(b, s.RootAndTotals(least.load()));
      }
      Nanos cur = least.load();
      while (b < cur && !least.compare_exchange_weak(cur, b)) {
      }
      ++done;
      if (thread == 0) Report(false);  // progress (the other threads touch none of it)
    }
  };
  // Without a time limit the sets run in order on one thread, so that the
  // bound (each set's target is the least so far) does not depend on
  // thread timing; with one, the sets are spread over the threads.
  const int threads = opt_.time_limit_s > 0
                          ? std::max(1, std::min<int>(opt_.threads, static_cast<int>(sets.size())))
                          : 1;
  if (threads == 1) {
    work(0, 1);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t, threads);
    for (auto& th : pool) th.join();
  }
  fast_sets_done_ = done.load();
  placement_nodes_ += fast_sets_done_;
  if (fast_sets_done_ == fast_sets_total_) fast_bound_ = std::min(least.load(), best);
}

}  // namespace ppb::search_detail
