// Internal to search/: the per-choice searcher (one schedule choice on one
// cluster). Its parts live in their own files:
//   tree.cpp        Run, Prepare, the depth-first branch-and-bound (Dfs),
//                   pruning, limits and progress
//   leaf.cpp        the recompute choice of a split (memory model, exact
//                   per-device choice), exhausting and tie polishing at
//                   leaves, simulation of leaves (single and batched)
//   root_bound.cpp  the root relaxation over the decoders (RootBound)
//   path_bound.cpp  path bounds: the allocation-free path mixture
//                   (PathWeights) and the open-tree bound (TotalsPathBound)
//   heuristics.cpp  incumbent splits, local search, any feasible split
//
// Shape of the search, per schedule choice (schedule, v, g):
//   1. The program depends only on (p, v, m, g): generate it once, and derive
//      each device's memory profile from it (MemoryProfile): memory changes
//      only at the device's own op boundaries, in program order, so a
//      device's simulated peak is max over its ops of a linear function of
//      its stages' stash sizes plus a transient - no timing needed.
//   2. For a stage holding layers [i, j), the recompute choices that can
//      matter form a Pareto set ("menu") over (stash per micro-batch, largest
//      re-materialized activation, recompute time, recomputed layers); layers
//      with identical costs are grouped and only counts per mode enumerated.
//   3. Depth-first branch-and-bound over the layer count of stages 0, 1, ...,
//      S-1. Each child gets a valid lower bound on the simulated makespan
//      (see tree.cpp); children are explored best bound first; a child
//      whose bound cannot beat the K-th best candidate is pruned. Leaves pick
//      each device's recompute exactly (v = 1: the cheapest feasible menu
//      point; v > 1: a small exact search for the least total recompute) and
//      are simulated by the engine.
//   4. Heuristic incumbents first (even split, work-balanced split) polished
//      by local search (boundary moves, seeded random restarts).
//
// Contract: a Searcher reports only strategies it simulated (top, best
// first, distinct splits); pending_bound (with top) bounds every strategy
// of its choice it did not rule out; `closed` means the whole tree was
// searched and every leaf's recompute choice was proved. Deterministic for
// a given seed and node limit (a time limit can stop at different points).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cost.h"
#include "search/context.h"
#include "search/recompute_menu.h"

namespace ppb::search_detail {

class Searcher {
 public:
  Searcher(const SearchProblem& problem, const SearchOptions& options,
           ChoiceContext ctx)
      : pb_(problem), opt_(options), c_(std::move(ctx)) {
    const int L = c_.L;
    pf_.assign(L + 1, 0);
    pbi_.assign(L + 1, 0);
    pbw_.assign(L + 1, 0);
    pst_.assign(L + 1, 0);
    for (int l = 0; l < L; ++l) {
      pf_[l + 1] = pf_[l] + pb_.layers[l].forward;
      pbi_[l + 1] = pbi_[l] + pb_.layers[l].backward_input;
      pbw_[l + 1] = pbw_[l] + pb_.layers[l].backward_weight;
      pst_[l + 1] = pst_[l] + pb_.layers[l].static_memory;
    }
    max_speed_ = 0;
    for (const auto& d : pb_.cluster.devices) max_speed_ = std::max(max_speed_, d.speed);
    start_ = Clock::now();
  }

  // Runs heuristics, local search and branch-and-bound.
  void Run();

  // Whether some split fits every device's memory (any recompute); the
  // split found goes to *split. Depth-first with memory pruning only.
  bool AnyFeasibleSplit(std::vector<int>* split);

  bool ChooseRecompute(const std::vector<int>& split, bool& exact,
                       int* failed_device = nullptr);

  std::vector<Candidate> top;  // sorted by Better, distinct strategies
  Nanos pending_bound = kInf;  // min bound of what was left unexplored
  bool closed = false;
  bool limit_hit = false;
  std::string stop_reason;
  std::int64_t nodes = 0, evaluations = 0;
  std::vector<std::pair<double, Nanos>> incumbents;  // (s, makespan)

  // The bound Run() starts its tree search from (valid for every split of
  // this choice on this cluster), without searching.
  Nanos RootOnly() {
    Prepare();
    return pending_bound;
  }
  // A path through the program's dependency graph: its length is
  // sum_s (a[s] * F_s + b[s] * B_s) + c for stage times F_s, B_s.
  struct Path {
    std::vector<double> a, b;
    double c = 0;
  };
  // Paths (as PathOf gives them) shared by searchers of one program on
  // clusters with the same links: TotalsPathBound starts from them and adds
  // the ones it generates.
  void SharePaths(std::vector<Path>* pool) { path_pool_ = pool; }
  // RootBound's recompute fronts of k decoders, k = 0..D, shared by
  // searchers of one problem (same layers).
  void ShareFronts(std::vector<std::vector<std::pair<Bytes, Nanos>>>* fronts) { fronts_ = fronts; }
  // RootBound's least recompute per (rank, capacity), for k = 0..D, shared
  // by searchers of one problem and schedule choice.
  using RecomputeRows = std::map<std::pair<int, Bytes>, std::vector<Nanos>>;
  void ShareRecompute(RecomputeRows* rows) { rt_cache_ = rows; }
  // The root bound raised by the open-tree bound for strategies that can
  // beat `best` (kInf: no split exists at all).
  Nanos RootAndTotals(Nanos best) {
    if (!Prepare(false)) return kInf;
    return std::max(pending_bound, TotalsPathBound(best));
  }

 private:
  // Prefix sums and the root bound (pending_bound); false when no split
  // exists at all (closed then).
  bool Prepare(bool path_weights = true);
  const Menu& GetMenu(int i, int j) {
    const std::uint64_t key = static_cast<std::uint64_t>(i) * (c_.L + 1) + j;
    auto it = menus_.find(key);
    if (it != menus_.end()) return it->second;
    const Menu& menu = menus_.emplace(key, BuildMenu(pb_.layers, i, j)).first->second;
    if (menu.truncated) menus_truncated_ = true;
    return menu;
  }

  StageFixed Fixed(int s, int i, int j, Bytes prev_output) const {
    const double speed = pb_.cluster.devices[s % c_.p].speed;
    StageFixed x;
    x.f = ScaleTime(pf_[j] - pf_[i], speed);
    x.bi = ScaleTime(pbi_[j] - pbi_[i], speed);
    x.bw = ScaleTime(pbw_[j] - pbw_[i], speed);
    x.static_mem = pst_[j] - pst_[i];
    for (int l = i; l < j; ++l) x.workspace = std::max(x.workspace, pb_.layers[l].workspace);
    x.output = j > i ? pb_.layers[j - 1].output_bytes : prev_output;
    return x;
  }

  Nanos CommFwd(int s, Bytes bytes) const {
    if (s + 1 >= c_.S) return 0;
    const int a = s % c_.p, b = (s + 1) % c_.p;
    if (a == b) return 0;
    const Link& l = c_.spec.link(DeviceId(a), DeviceId(b));
    return l.latency + LinkOccupancy(bytes, l.bandwidth);
  }
  Nanos CommBwd(int s, Bytes bytes) const {  // gradient from s+1 to s
    if (s + 1 >= c_.S) return 0;
    const int a = (s + 1) % c_.p, b = s % c_.p;
    if (a == b) return 0;
    const Link& l = c_.spec.link(DeviceId(a), DeviceId(b));
    return l.latency + LinkOccupancy(bytes, l.bandwidth);
  }

  // Peak memory of device d for menu points pts[c] (one per chunk) of stages
  // with the given fixed parts.
  Bytes DevicePeak(int d, const std::vector<const StageFixed*>& fx,
                   const std::vector<const MenuPoint*>& pts) const {
    Bytes stat = 0;
    for (int c = 0; c < c_.v; ++c) stat += fx[c]->static_mem;
    Bytes best = stat;
    for (const Moment& mo : c_.profile.moments[d]) {
      Bytes x = stat;
      for (int c = 0; c < c_.v; ++c) x += static_cast<Bytes>(mo.counts[c]) * pts[c]->stash;
      const int c = mo.chunk;
      x += mo.forward ? pts[c]->stash + fx[c]->workspace
                      : fx[c]->workspace + pts[c]->remat;
      best = std::max(best, x);
    }
    return best;
  }

  // Lower bound on device d's peak from the chunks assigned so far (others
  // empty), using each chunk's least stash and re-materialization.
  Bytes DevicePeakLowerBound(int d, int assigned_stages) const;

  // Picks the recompute of every device for a full split. Returns false if
  // some device cannot fit. Fills chosen_[s] and rtime_[s] (scaled).
  bool WalkFits(int d, const std::vector<const Menu*>& menus,
                const std::vector<const StageFixed*>& fxp, Bytes cap, std::int64_t& budget,
                const std::function<Nanos()>& limit,
                const std::function<void(const std::vector<const MenuPoint*>&, Nanos, Bytes)>&
                    leaf) const;
  Nanos DeviceRecompute(int d, const std::vector<int>& first,
                        const std::vector<int>& split,
                        const std::vector<StageFixed>& fx,
                        std::vector<const MenuPoint*>& pts, bool& exact,
                        Bytes cap_limit = -1, bool fewest_recomputed = false);

  // Full evaluation of a split: recompute choice + simulation. Returns
  // false when infeasible in memory.
  bool EvaluateSplit(const std::vector<int>& split, Candidate* out, bool& exact);
  void SimulateChosen(const std::vector<int>& split, Candidate* out);
  struct BatchSlot {
    std::vector<int> split;
    PipelineSpec spec;
    Strategy strategy;
    int recomputed = 0;
    SimResult sim;
  };
  // Simulates every slot (on opt_.threads threads when the runs are big
  // enough to pay for them).
  void RunBatch(std::vector<BatchSlot>& batch);
  std::vector<Engine> batch_engines_;
  void BuildChosen(const std::vector<int>& split, PipelineSpec& spec, Strategy& st,
                   int& recomputed);
  void ToCandidate(Strategy st, int recomputed, const SimResult& sim, Candidate* out) const;
  bool ExhaustLeaf(const std::vector<int>& split);
  struct DeviceChoice {
    std::vector<Nanos> times;  // per chunk, scaled
    Nanos total = 0;
    Bytes peak = 0;
    int rc = 0;
    std::vector<const MenuPoint*> pts;
  };
  void SplitLayout(const std::vector<int>& split, std::vector<int>& first,
                   std::vector<StageFixed>& fx) const;
  bool EnumerateDevice(int d, const std::vector<int>& first,
                       const std::vector<int>& split,
                       const std::vector<StageFixed>& fx,
                       std::vector<DeviceChoice>& found);
  void PolishTies(const std::vector<int>& split, Candidate& cand);

  void Offer(Candidate c);
  Nanos PruneThreshold() const;  // bound must be <= this to explore
  bool ShouldPrune(Nanos bound) const;

  void Dfs(int s, int pos);
  bool CheckLimits();
  void Report(bool force);

  Nanos RootBound(std::vector<int>* decoders_per_device, int* decoder_rep);
  std::vector<Path> BuildPaths() const;
  Nanos LeastHop(int a, int b) const;
  Path PathOf(const std::vector<CriticalStep>& steps) const;
  Nanos PathWeights();
  Nanos TotalsPathBound(Nanos best);
  std::vector<Path>* path_pool_ = nullptr;
  std::vector<std::vector<std::pair<Bytes, Nanos>>>* fronts_ = nullptr;
  RecomputeRows* rt_cache_ = nullptr;
  std::vector<int> RelaxedSplit(const std::vector<int>& per_device, int rep) const;
  std::vector<int> SplitFromQuota(const std::vector<int>& quota, int rep) const;
  std::vector<int> ChunkAwareSplit(const std::vector<int>& per_device, int rep);
  std::vector<int> EvenSplit() const;
  std::vector<int> BalancedSplit() const;
  void LocalSearch(std::vector<int> split, std::mt19937_64& rng, int restarts);

  const SearchProblem& pb_;
  const SearchOptions& opt_;
  ChoiceContext c_;
  std::vector<Nanos> pf_, pbi_, pbw_;
  std::vector<Bytes> pst_;
  double max_speed_ = 1.0;
  std::unordered_map<std::uint64_t, Menu> menus_;
  bool menus_truncated_ = false;
  Engine engine_;
  SimResult sim_;
  PipelineSpec work_spec_;
  Clock::time_point start_;
  Clock::time_point last_report_{};

  // DFS state.
  std::vector<int> split_;            // counts of stages assigned so far
  std::vector<int> first_layer_;      // first layer of each stage
  std::vector<StageFixed> fixed_;     // per assigned stage
  std::vector<Nanos> head_, tail_;    // per device (partial sums)
  std::vector<Nanos> work_;           // per device
  Nanos chain_ = 0;                   // one micro-batch through assigned stages
  std::vector<const MenuPoint*> chosen_;  // per stage after ChooseRecompute
  std::vector<Nanos> rtime_;              // per stage, scaled recompute time
  std::vector<Nanos> min_rtime_;          // v=1: least feasible recompute
  std::vector<Nanos> suffix_work_;        // unscaled m-less work of layers >= l
  std::vector<Nanos> level_bounds_;       // pending bound per DFS level
  Nanos root_bound_ = 0;                  // valid for the whole tree
  // RootBound's relaxation, kept for TotalsPathBound: the largest group of
  // identical layers ("decoders") and load[d][k], a lower bound on the
  // makespan when rank d holds k of them (kInf: k cannot fit).
  struct Totals {
    int decoders = 0, rep = 0, free_others = 0;
    bool first_pinned = false, last_pinned = false;
    std::vector<std::vector<Nanos>> load;
    std::vector<std::vector<Nanos>> rt;  // [d][k] least recompute per mb (speed 1), or kInf
  } totals_;
 public:
  Nanos totals_bound = 0;  // TotalsPathBound after the heuristics (0: none)
 private:
  // Path bound (PathWeights): T >= sum_s (pa_[s] f_s + pb_[s] b_s) + pconst_
  // for any allocation; pa_min_[s] / pb_min_[s] = least coefficient per unit
  // of unscaled work over stages >= s (for layers not yet placed).
  std::vector<double> pa_, pbw_coef_, pa_min_, pb_min_;
  double pconst_ = 0, path_acc_ = 0;
  Nanos forced_recompute_ = 0;  // RootBound: least total recompute per mb
  Bytes least_output_ = 0;      // least bytes a stage can send (LeastHop)
  std::vector<Nanos> suffix_f_, suffix_b_;
  std::vector<int> relaxed_per_device_;   // the root relaxation's allocation
  int relaxed_rep_ = 0;
  struct RecomputeMemo {
    Nanos time;
    std::vector<const MenuPoint*> pts;  // point into menus_ (stable nodes)
    bool exact;
  };
  struct KeyHash {
    size_t operator()(const std::vector<std::int32_t>& k) const {
      std::uint64_t h = 1469598103934665603ULL;
      for (std::int32_t x : k) h = (h ^ static_cast<std::uint32_t>(x)) * 1099511628211ULL;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::vector<std::int32_t>, RecomputeMemo, KeyHash> recompute_memo_;
};

}  // namespace ppb::search_detail
