// Internal to search/: the placement search (SearchProblem::search_placement).
//
// Placement search (SearchProblem::search_placement): which physical device
// runs each rank, jointly with the split and the recompute.
//
// Depth-first branch-and-bound over device orders, rank 0 first. A prefix
// (the devices of ranks 0..k-1) is bounded by the root bound of a relaxed
// cluster: every rank not yet placed gets the fastest speed and the largest
// memory among the devices left, and every boundary with an unplaced end the
// best link class. The relaxation is valid because the simulated iteration
// time of a fixed program is a max-plus expression of op durations and
// message delays (so it can only fall when a device gets faster or a link
// better), and more memory only adds feasible recompute choices: the relaxed
// cluster's optimum is at most that of any completion, and the root bound
// is at most the relaxed optimum. At a leaf the cluster is exact; its split
// and recompute are searched by the fixed-cluster search under a cutoff (the
// K-th best time so far), so a leaf that cannot enter the top list is closed
// as soon as its own tree falls above the cutoff.
//
// Symmetry: devices of one type on one node are interchangeable (only the
// lowest-numbered unplaced one is tried), so are whole nodes no device of
// which is placed yet when their type multisets are equal; orders that
// still coincide in what the engine can see (PlacementKey) are searched once.
//
// Under SearchOptions::share the prefixes of a fixed depth (enough for a few
// per process) are the units: every process lists them alike, bounds them,
// and searches those it is granted, pruning with the least threshold of all
// processes (the heuristic looks run everywhere; the placement-set bound on
// the lead process only).
//
// Contract: a prefix's bound is valid for every completion of it; an order
// is pruned only when its bound exceeds the K-th best time so far, so the
// top list is exact when the tree closes without limits; open_bound_ bounds
// what a limit left open. Every reported strategy carries its placement.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "search/context.h"
#include "search/incumbent.h"

namespace ppb::search_detail {

class PlacementSearcher {
 public:
  PlacementSearcher(const SearchProblem& pb, const SearchOptions& opt,
                    std::vector<ChoiceContext> ctxs)
      : pb_(pb), opt_(opt), topo_(pb.topology), ctxs_(std::move(ctxs)) {
    top_list_.top_k = opt_.top_k;
    top_list_.cutoff = opt_.cutoff;
    n_ = topo_.num_devices();
    ring_ = false;
    for (const ChoiceContext& c : ctxs_) ring_ |= c.v > 1;
    best_link_.latency = std::min(topo_.intra_node.latency, topo_.inter_node.latency);
    auto bw = [](BytesPerSec b) {
      return b <= 0 ? std::numeric_limits<BytesPerSec>::max() : b;
    };
    const BytesPerSec b = std::max(bw(topo_.intra_node.bandwidth), bw(topo_.inter_node.bandwidth));
    best_link_.bandwidth = b == std::numeric_limits<BytesPerSec>::max() ? 0 : b;
    // Nodes whose devices form the same multiset of types.
    const int nodes = static_cast<int>(topo_.node_names.size());
    std::vector<std::vector<int>> comp(nodes, std::vector<int>(topo_.types.size(), 0));
    for (int d = 0; d < n_; ++d) ++comp[topo_.device_node[d]][topo_.device_type[d]];
    node_class_.assign(nodes, 0);
    for (int a = 0; a < nodes; ++a) {
      node_class_[a] = a;
      for (int o = 0; o < a; ++o) {
        if (comp[a] == comp[o]) {
          node_class_[a] = node_class_[o];
          break;
        }
      }
    }
    // Whatever the order, the devices share all the work: T >= m * W / sum
    // of speeds (less the per-op rounding of scaled times).
    double speeds = 0;
    for (int d = 0; d < n_; ++d) speeds += topo_.types[topo_.device_type[d]].speed;
    long double work = 0;
    for (const Layer& l : pb_.layers) work += l.forward + l.backward_input + l.backward_weight;
    int max_s = 0;
    double scale = 1.0;  // the least ChoiceContext::bound_scale
    for (const ChoiceContext& c : ctxs_) {
      max_s = std::max(max_s, c.S);
      scale = std::min(scale, c.bound_scale);
    }
    work_bound_ = ScaleBound(
        std::max<Nanos>(0, static_cast<Nanos>(std::floor(work * pb_.m / speeds)) -
                               static_cast<Nanos>(pb_.m) * (max_s + 1) * 2),
        scale);
    work_bound_ = std::max(work_bound_, DecoderBound());
    limits_.start = Clock::now();
  }

  SearchResult Run();

 private:
  // Whatever the order: the largest group of identical layers (D
  // "decoders") is spread over the devices in whole numbers; a device of
  // type t holding k of them is busy at least m * (k * w + R_t(k)) / speed,
  // where R_t(k) is the least recompute with which their static memory and
  // stash fit its memory at the most favourable rank (the least weight of
  // micro-batches in flight any rank has). The least level every device
  // can stay under while together they hold all D bounds the optimum.
  Nanos DecoderBound() const;
  double Elapsed() const { return limits_.Elapsed(); }
  std::int64_t AllNodes() const { return nodes_ + placement_nodes_; }
  bool OutOfLimits() {
    if (limits_.hit) return true;
    if (opt_.node_limit != 0 && AllNodes() >= std::max<std::int64_t>(0, opt_.node_limit)) {
      limits_.hit = true;
      limits_.stop_reason = "node limit";
    } else if ((opt_.time_limit_s > 0 && Elapsed() >= opt_.time_limit_s) ||
               PastDeadline(opt_)) {
      limits_.hit = true;
      limits_.stop_reason = "time limit";
    }
    return limits_.hit;
  }
  Nanos Threshold() const { return top_list_.Threshold(); }
  void Offer(Candidate c) { top_list_.Offer(std::move(c), limits_.start); }
  void Report(bool force);
  Cluster Relaxed(const Placement& prefix) const;
  // The problem on one fixed cluster (no placement search), and a schedule
  // choice's context with that cluster's capacities and links.
  SearchProblem FixedProblem(Cluster cluster) const;
  ChoiceContext ContextOn(size_t choice, const Cluster& cluster) const;
  Nanos Bound(const Placement& prefix);
  // Searches the split and recompute of a full order; `budget` > 0 caps
  // its nodes (a heuristic look, which leaves the order open).
  void Leaf(const Placement& order, Nanos bound, std::int64_t budget);
  void Dfs(Placement& prefix, std::vector<char>& used, Nanos bound);
  // The devices that may take the next rank after `prefix` (one of each
  // set of interchangeable ones), in device order.
  std::vector<int> Kids(const Placement& prefix, const std::vector<char>& used) const;
  // Under SearchOptions::share: the units (prefixes every process lists
  // alike), the tree searched over the units granted here, and the
  // threshold shared with the other processes.
  std::vector<Placement> Units() const;
  void SharedDfs();
  void Sync();
  std::vector<Placement> HeuristicOrders() const;
  // Swaps of two ranks' devices from the best order while they improve it
  // (each order searched with a small node budget).
  void PolishOrder(std::int64_t budget);
  void BoundFastestPlacements();

  const SearchProblem& pb_;
  const SearchOptions& opt_;
  const Topology& topo_;
  std::vector<ChoiceContext> ctxs_;
  int n_ = 0;
  bool ring_ = false;
  Link best_link_;
  Nanos work_bound_ = 0;
  std::vector<int> node_class_;
  TopList top_list_;      // the K best (choice, order, split) found
  std::map<std::vector<std::int32_t>, bool> seen_;  // key -> closed
  Nanos open_bound_ = kInf;  // least bound over what was left open
  bool inexact_ = false;     // some leaf closed without a proof
  std::string inexact_reason_;
  std::int64_t nodes_ = 0, evaluations_ = 0, placement_nodes_ = 0, searched_ = 0;
  SearchLimits limits_;   // clock, progress throttle, why it stopped
  // BoundFastestPlacements: sets of ranks for the fastest type, how many
  // were bounded, and the least bound when all were (0: none).
  std::int64_t fast_sets_total_ = 0, fast_sets_done_ = 0;
  Nanos fast_bound_ = 0;
};

}  // namespace ppb::search_detail
