// Internal to search/: the per-choice searcher (one schedule choice on one
// cluster). Its parts live in their own files:
//   tree.cpp        Run, Prepare, the depth-first branch-and-bound (Dfs),
//                   pruning, limits and progress
//   leaf.cpp        the recompute choice of a whole split (per device:
//                   RecomputeChoice, recompute_choice.h), exhausting and tie
//                   polishing at leaves, simulation of leaves (single and
//                   batched)
//   root_bound.cpp  the root relaxation over the decoders (RootBound)
//   path_bound.cpp  path bounds: the allocation-free path mixture
//                   (PathWeights)
//   open_tree_bound.cpp  the open-tree bound (TotalsPathBound)
//   chunk_recompute.cpp  the least recompute of a rank given its decoders
//                   per chunk (ChunkRecompute, for the open-tree bound)
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
// searched, every leaf's recompute choice was proved, and so was the
// tie-break (peak, then recomputed layers) of every candidate whose time can
// enter the top list (ties_open: the least time of a tie polish that was
// not). Deterministic for
// a given seed and node limit (a time limit can stop at different points).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cost.h"
#include "search/bounds.h"
#include "search/context.h"
#include "search/heuristics.h"
#include "search/incumbent.h"
#include "search/recompute_choice.h"
#include "search/recompute_menu.h"

namespace ppb::search_detail {

class Searcher {
 public:
  Searcher(const SearchProblem& problem, const SearchOptions& options,
           ChoiceContext ctx)
      : cp_(problem, options, std::move(ctx)), rc_(cp_) {
    top_list.top_k = cp_.opt.top_k;
    top_list.cutoff = cp_.opt.cutoff;
    limits.start = Clock::now();
    sim_deadline_ = cp_.opt.deadline;
    tail_floor_ = TailOptimizerFloor(problem);
  }

  // Simulations still running at `deadline` (default: the options') are
  // stopped: nothing of theirs is offered or counted as an evaluation, and
  // the search stops at its time limit, unproved, bounded by its root
  // bound at best (the leaf cut short bounds nothing finer).
  void SimulateUntil(Clock::time_point deadline) { sim_deadline_ = deadline; }

  // Runs heuristics, local search and branch-and-bound (after TryFirst,
  // when it has not run yet).
  void Run();

  // Counts the clock (the options' time limit, the hand-over to the
  // open-tree bound) from now: for a choice that starts after others ran.
  // The times of the improvements so far move with it (negative: before).
  void RestartClock() {
    const auto now = Clock::now();
    const double shift = std::chrono::duration<double>(now - limits.start).count();
    for (auto& e : top_list.incumbents) e.first -= shift;
    limits.start = now;
  }

  // The strategies a user would try first (search/first_tries.h),
  // simulated and offered; once. SearchFixed runs every choice's before
  // any choice's Run, so a time limit never leaves a choice without them.
  void TryFirst();
  std::vector<Candidate> tried_first;  // what TryFirst simulated, fitting or not

  // Whether some split fits every device's memory (any recompute); the
  // split found goes to *split. Depth-first with memory pruning only; past
  // the deadline it answers false with deadline_cut set.
  bool AnyFeasibleSplit(std::vector<int>* split);
  bool deadline_cut = false;  // AnyFeasibleSplit stopped at the deadline

  // Picks the recompute of every device for a full split. Returns false if
  // some device cannot fit. Fills chosen_[s] and rtime_[s] (scaled).
  bool ChooseRecompute(const std::vector<int>& split, bool& exact,
                       int* failed_device = nullptr);

  // With several chunks per device, where a split's recompute lands decides
  // its time, not only each device's total: simulates the split's other
  // recompute choices and offers what it finds. Every Pareto-minimal
  // combination when there are at most kTieCombos and `exhaust` (then
  // `exhaustive` and `best` is the split's least makespan), else DescendLeaf.
  // `first`: the least-total choice's makespan, when the descent ran it.
  // Proves nothing; -1 where nothing was simulated.
  struct ChoiceImprovement {
    Nanos first = -1, best = -1;
    bool exhaustive = false;
  };
  ChoiceImprovement ImproveChoice(const std::vector<int>& split, bool exhaust = true);

  std::int64_t dives = 0;      // strategies completed by Dive and simulated
  TopList top_list;            // sorted by Better, distinct strategies
  SearchLimits limits;         // clock, progress throttle, why it stopped
  Nanos pending_bound = kInf;  // min bound of what was left unexplored
  bool closed = false;
  Nanos ties_open = kInf;  // least time of a tie polish not proved
  std::int64_t nodes = 0, evaluations = 0;  // evaluations: simulations run to their end
  bool interrupted = false;  // a simulation was stopped at the deadline

  // The bound Run() starts its tree search from (valid for every split of
  // this choice on this cluster), without searching.
  Nanos RootOnly() {
    Prepare();
    return pending_bound;
  }
  // Paths (as PathOf gives them) shared by searchers of one program on
  // clusters with the same links: TotalsPathBound starts from them and adds
  // the ones it generates.
  void SharePaths(std::vector<Path>* pool) { path_pool_ = pool; }
  // RootBound's recompute fronts of k decoders, k = 0..D, shared by
  // searchers of one problem (same layers).
  void ShareFronts(Fronts* fronts) { fronts_ = fronts; }
  // RootBound's least recompute per (rank, capacity), for k = 0..D, shared
  // by searchers of one problem and schedule choice.
  void ShareRecompute(RecomputeRows* rows) { rt_cache_ = rows; }
  // The root bound raised by the open-tree bound for strategies that can
  // beat `best` (kInf: no split exists at all).
  Nanos RootAndTotals(Nanos best) {
    if (!Prepare(false)) return kInf;
    const SplitFloor floor = SplitFloorFn();
    return std::max(pending_bound,
                    ScaleBound(TotalsPathBound(cp_, root_.totals, path_pool_, engine_, limits.start,
                                               UnscaleBound(best, cp_.c.bound_scale), &floor),
                               cp_.c.bound_scale));
  }

  Nanos totals_bound = 0;  // TotalsPathBound after the heuristics (0: none)
  // Its bound over all but the splits it evaluated (TotalsPathBound's
  // `unattained`; 0: none).
  Nanos totals_unattained = 0;
  // Seconds since the start when the root bound was known and when the
  // search of this choice ended (SearchResult::bound_time_s).
  double prepared_s = 0, finished_s = 0;
  Nanos root_bound() const { return root_bound_; }

 private:
  // The DFS state and the root bound (pending_bound); false when no split
  // exists at all (closed then).
  bool Prepare(bool path_weights = true);
  // Whether the target's framework cannot run this choice at all
  // (ChoiceRefusal: its v, placement, group; never under target any).
  bool TargetRefusesChoice() const;
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
  // Simulates every slot (on opt.threads threads when the runs are big
  // enough to pay for them).
  void RunBatch(std::vector<BatchSlot>& batch);
  std::vector<Engine> batch_engines_;
  Clock::time_point sim_deadline_;
  // After a simulation: one stopped at the deadline stops the search (and
  // is not counted); false then.
  bool Finished(const SimResult& sim);
  void BuildChosen(const std::vector<int>& split, PipelineSpec& spec, Strategy& st,
                   int& recomputed);
  void ToCandidate(Strategy st, int recomputed, const SimResult& sim, Candidate* out) const;
  // Simulates every Pareto-minimal recompute combination of a split (the
  // best tie-polished; its time goes to `unproved` when that polish is not
  // proved); false (nothing offered) when there are too many.
  // `fastest` (may be null): the split's least makespan among them (kInf:
  // none feasible), when true.
  // `too_many` (may be null) gets every device's time vectors when the
  // combinations are too many to simulate.
  bool ExhaustLeaf(const std::vector<int>& split, Nanos& unproved, Nanos* fastest = nullptr,
                   DeviceVectors* too_many = nullptr);
  // Every device's time vectors of `split` (TimeVectors of its feasible
  // recompute choices) into `out`; returns how many combinations they make
  // across devices, saturated at stop_above + 1 (the listing stops there),
  // or -1 when a device's choices cannot be listed or none fits.
  std::int64_t ListTimeVectors(const std::vector<int>& split, DeviceVectors& out,
                               std::int64_t stop_above);
  static constexpr std::int64_t kListAll = std::numeric_limits<std::int64_t>::max() - 1;
  // A heuristic for a split whose recompute combinations are too many for
  // ExhaustLeaf (leaf_descent.cpp): from every device's least-total time
  // vector, devices in turn take the vector that makes the simulated
  // iteration Better, until none does or the budget ends; the best run is
  // tie-polished and offered. Proves nothing (the leaf stays open).
  // Returns {least-total run's makespan, the split's best after the tie polish
  // (which may meet a faster choice)}, -1 where none ran.
  std::pair<Nanos, Nanos> DescendLeaf(const std::vector<int>& split, const DeviceVectors& vectors);
  // A whole split evaluated as a tree leaf: its recompute choice simulated
  // and offered (ties polished when it can lead), and when that choice is
  // not proved and its time is above `bound` (a bound on the split), every
  // Pareto-minimal choice (ExhaustLeaf). `least`: the split's least
  // makespan when that settled it, else -1; `open`: ExhaustLeaf could not
  // settle it; `fits` false: no device's recompute fits (nothing offered).
  struct LeafResult {
    Nanos least = -1;
    bool open = false;
    bool fits = true;
  };
  // Completes the current path (stages before s placed, layers from pos
  // left) with the even split of the rest and offers it (tree.cpp).
  void Dive(int s, int pos);
  std::int64_t last_leaf_node_ = 0;
  LeafResult EvaluateLeaf(const std::vector<int>& split, Nanos bound);
  // The open-tree bound's SplitFloor: the least makespan of every strategy
  // of `split` at nominal times when the recompute choice is proved (every
  // run offered, ties polished as a leaf's), kInf when no device's
  // recompute lets it fit, else -1.
  SplitValue SplitOptimum(const std::vector<int>& split);
  SplitFloor SplitFloorFn() {
    return [this](const std::vector<int>& split) { return SplitOptimum(split); };
  }
  // Replaces cand by a Better recompute choice of its split that keeps its
  // time; false when the result is not proved the best such choice.
  bool PolishTies(const std::vector<int>& split, Candidate& cand);
  bool PolishChunks(const std::vector<int>& split,
                    const std::vector<std::vector<DeviceChoice>>& opts, Candidate& cand);
  bool FewestRecomputed(const std::vector<int>& split,
                        const std::vector<std::vector<DeviceChoice>>& opts, Bytes cap,
                        Nanos target, const std::vector<const DeviceChoice*>& least,
                        Candidate& best);
  int FirstWithin(const std::vector<int>& split,
                  const std::vector<std::vector<const DeviceChoice*>>& sets, Nanos target,
                  int rc_below, Candidate* out);
  void SimulatePicks(const std::vector<int>& split, const std::vector<const DeviceChoice*>& pick,
                     Candidate* out);

  void Offer(Candidate c);
  Nanos PruneThreshold() const;  // bound must be <= this to explore
  // Whether a subtree whose pipeline-end bound is `bound` cannot enter the
  // top list: every strategy in it ends at least tail_floor_ later.
  bool ShouldPrune(Nanos bound) const;
  Nanos tail_floor_ = 0;  // TailOptimizerFloor (search.h) of the problem

  void Dfs(int s, int pos);
  Nanos ChildBound(int s, int pos, int k, const StageFixed& fx, Nanos rt, Nanos dev_rt) const;
  bool CheckLimits();
  void Report(bool force);

  void LocalSearch(std::vector<int> split, std::mt19937_64& rng, int restarts);

  bool tried_first_ = false;  // TryFirst has run
  const ChoiceProblem cp_;  // read-only for the whole search
  RecomputeChoice rc_;      // menus and the recompute choice per device
  std::vector<Path>* path_pool_ = nullptr;
  Fronts* fronts_ = nullptr;
  RecomputeRows* rt_cache_ = nullptr;
  Engine engine_;
  SimResult sim_;
  PipelineSpec work_spec_;
  // The order the first complete run of the choice's program executed its
  // ops in: every later run follows it (SimOptions::order, the same figures
  // without the worklist). Empty until then.
  ExecutionOrder order_;
  // The options of an evaluation: the order once known, else record it.
  SimOptions EvalOptions() const;
  // Keeps the order `sim` recorded when it is the first complete one.
  void KeepOrder(SimResult& sim);

  // DFS state.
  std::vector<int> split_;            // counts of stages assigned so far
  std::vector<int> first_layer_;      // first layer of each stage
  std::vector<StageFixed> fixed_;     // per assigned stage
  // v = 1: per (stage, first layer, layers) the device's memory floor and
  // least recompute time that fits (-1: none), as Dfs computes them.
  struct V1Stage {
    Bytes floor_peak = 0;
    Nanos rt = -1;
  };
  std::unordered_map<std::uint64_t, V1Stage> v1_stage_;
  std::vector<Nanos> head_, tail_;    // per device (partial sums)
  std::vector<Nanos> work_;           // per device
  Nanos chain_ = 0;                   // one micro-batch through assigned stages
  std::vector<const MenuPoint*> chosen_;  // per stage after ChooseRecompute
  std::vector<Nanos> rtime_;              // per stage, scaled recompute time
  std::vector<Nanos> level_bounds_;       // pending bound per DFS level
  // A child of a DFS node: the layers its stage gets and its bound.
  struct Child {
    int k;
    Nanos bound;
    Nanos rtime;   // v = 1: this stage's recompute
    Nanos dev_rt;  // v > 1, last chunk: the device's least total recompute
  };
  std::vector<std::vector<Child>> children_;  // per DFS level, reused
  Nanos root_bound_ = 0;                  // valid for the whole tree
  Nanos root_nominal_ = 0;  // the same at nominal times (ChoiceContext::bound_scale)
  RootRelaxation root_;                   // RootBound's relaxation
  PathMixture mix_;                       // PathWeights' mixture (empty: none)
  double path_acc_ = 0;                   // the mixture over the placed stages
  // ChildBound's scratch (it runs once per child of every node): each
  // device's head + work + tail, and the devices with stages still open.
  mutable std::vector<Nanos> bound_base_;
  mutable std::vector<std::pair<Nanos, double>> bound_open_;
};

}  // namespace ppb::search_detail
