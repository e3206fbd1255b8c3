// The strategy search: how many layers on each (rank, chunk), which layers
// recompute, and (optionally) which schedule / v / micro-batch group, for the
// minimum simulated iteration time with every device within its memory.
//
// Branch-and-bound over contiguous splits (stages assigned in order), with
// valid lower bounds on the simulated makespan, memory pruning, an exact
// per-device recompute choice (multiple-choice knapsack over groups of
// identical layers, solved by enumeration of Pareto-optimal points), an
// incumbent from heuristics polished by local search, and every reported
// strategy evaluated by the engine. Deterministic for a given seed and node
// limit (a time limit can stop at different points).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine.h"
#include "core/lower.h"
#include "core/model.h"
#include "core/result.h"
#include "core/topology.h"
#include "schedules/schedule.h"
#include "search/deployable.h"

namespace ppb {

namespace search_detail {
class ContextCache;  // search/context_cache.h
}  // namespace search_detail

// One pipeline configuration the search may pick.
struct ScheduleChoice {
  std::string schedule = "1f1b";  // a registry name
  int v = 1;
  ScheduleParams params;
};

// The micro-batch group g an interleaved choice runs with (Megatron
// flavor: its group, default p; PyTorch: m / max(1, m / p)); 0 for the
// other schedules.
int EffectiveGroup(const ScheduleChoice& choice, int p, int m);

struct SearchProblem;
// The pipeline communication `choice` runs with (SearchProblem::comm, or
// with comm_by_schedule Megatron-LM's rule for its schedule).
CommMode ChoiceComm(const SearchProblem& problem, const ScheduleChoice& choice);

struct SearchProblem {
  std::vector<Layer> layers;
  Cluster cluster;      // p devices and p links
  int p = 1;            // pipeline ranks
  int m = 1;            // micro-batches
  CommMode comm = CommMode::Overlapped;
  // Communication not given by the user: each choice takes Megatron-LM's
  // rule for its schedule (1f1b and gpipe blocking, the others
  // overlapped; ChoiceComm), not `comm`.
  bool comm_by_schedule = false;
  // The tensor bytes each device's capacity already keeps free for the
  // memory headroom (search.memory_headroom): a candidate over capacity by
  // no more than this fits the GPU but is "at risk" (reports only).
  Bytes headroom = 0;
  std::vector<ScheduleChoice> choices;  // at least one
  // pipeline.fb_overlap in parts per million: an overlapped F+B op
  // (dualpipev) saves that share of the shorter half (PipelineSpec).
  std::int64_t fb_overlap_ppm = 0;
  std::int64_t ep_overlap_ppm = 0;  // PipelineSpec::ep_overlap_ppm (combined 1F1B)
  Nanos op_overhead = 0;            // PipelineSpec::op_overhead (blocking sends)
  // The step after the pipeline (core/step_tail.h): every candidate's
  // makespan includes it. Its time is never below the pipeline's, so the
  // bounds on the pipeline's end stay valid.
  StepTail tail;
  bool allow_empty_chunks = false;
  // A heterogeneous cluster whose device -> rank order the search decides
  // too (issue 6). `cluster` is then the given placement's (the baselines
  // run on it); candidates carry their own placement.
  bool search_placement = false;
  Topology topology;          // used when search_placement
  Placement given_placement;  // the config's order (rank -> device)
  // The strategies the user brought (the config's own): simulated before
  // any tree under every choice and kept as incumbents, with the other
  // first tries of search/first_tries.h, so the answer is never slower than
  // one of them that fits. One with another stage count than a choice's
  // lends that choice its recompute on the even split.
  std::vector<Strategy> seeds;
};

// Progress report for long searches (called from the searching thread).
struct SearchProgress {
  double elapsed_s = 0;
  std::int64_t nodes = 0;
  std::int64_t evaluations = 0;
  Nanos incumbent = -1;    // -1: none yet
  Nanos lower_bound = 0;
  double gap = 1.0;        // (incumbent - lower_bound) / incumbent
  int choice = -1;         // internal: the choice reporting (-1: all)
};

// Work shared with other processes (`mpirun ppb-sim search`; apps/ holds
// the transport). The independent units of work — the schedule choices of
// a fixed-cluster search, the device-order prefixes of a placement search —
// are numbered in one fixed order that every process derives alike; a
// process searches a unit only when `claim` grants it (each unit is granted
// to exactly one process, whichever asks first), and the placement search
// prunes with `exchange`, which publishes this process's threshold (the
// K-th best time it holds, -1: none) and returns the least over all
// processes (-1: none). A SearchResult found under a share covers only the units this
// process searched; MergeParts (search/share.h) combines them.
struct SearchShare {
  int processes = 1;
  bool lead = true;  // runs what is done once (the placement-set bound)
  std::function<bool(std::int64_t unit)> claim;     // thread-safe
  std::function<Nanos(Nanos threshold)> exchange;   // thread-safe; may be empty
};

struct SearchOptions {
  double time_limit_s = 0;        // <= 0: none
  // The instant the whole search must end by: Search sets it from
  // time_limit_s (keeping an earlier one a caller gave). Every phase (root
  // bound, heuristics, tree, open-tree bound, tie polish, placement bound,
  // least capacity) checks it and stops with what it has.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::int64_t node_limit = 0;    // 0: none; shared out over the choices
  int threads = 1;                // >= 1
  std::uint64_t seed = 1;         // local-search restarts
  int top_k = 5;                  // alternatives kept (>= 1)
  int local_search_restarts = 8;
  // A tree that has gone this many nodes without reaching a leaf completes
  // the path it is on with the even split of the rest and simulates it (an
  // incumbent; issue 32); 0: never.
  std::int64_t dive_every = 4096;
  double progress_interval_s = 1.0;
  std::function<void(const SearchProgress&)> progress;  // may be empty
  // Strategies slower than this need not be found (-1: none): subtrees
  // whose bound exceeds it are pruned. Used by the placement search, which
  // runs one search per device order under the best time found so far.
  Nanos cutoff = -1;
  // When nothing fits, bisect for the least uniform capacity that would.
  bool min_capacity = true;
  // A tree left open at a limit gets a sharper lower bound for its report,
  // computed in the last tenth of the time limit.
  bool open_tree_bound = true;
  // Distributed search (see SearchShare); null: this process does it all.
  const SearchShare* share = nullptr;
  // Only strategies this framework's configuration can express
  // (deployable.h); Any: every per-layer choice.
  DeployTarget target = DeployTarget::Any;
  // Internal: the one recompute setting of `target` a search runs under
  // (Search sets it for each setting in turn; empty: not split yet).
  std::optional<RecomputeSetting> setting;
  // The schedule choices' programs and memory profiles (O(p v m) each),
  // built at most once and shared by every search given these options or a
  // copy of them (NewContextCache; Search makes one when empty). A caller
  // that searches one problem several times (each framework's deployable
  // search after the main one) passes one to all. REQUIRES: every search
  // given it is of the same problem (another is served, but not from it).
  std::shared_ptr<search_detail::ContextCache> contexts;
};

// With the step's tail (problem.tail.enabled): what every strategy's
// makespan exceeds its pipeline's end by at least, the optimizer's mean
// share of a rank (sum over layers / p: every rank's optimizer starts after
// the global gradient sync, which follows every pipeline end, and the
// busiest rank's is at least the mean); 0 without the tail.
Nanos TailOptimizerFloor(const SearchProblem& problem);

// A lower bound on the makespan of every strategy Search(problem, options)
// may return: the least, over the choices and the target's recompute
// settings (only options.setting when given), of the searcher's root bound
// (RootBound and the path bound) on the pipeline's end, plus, with the
// step's tail, the optimizer's least share of the busiest rank (sum over
// layers / p: every rank's optimizer starts after the global gradient sync,
// which follows every rank's pipeline end). With `below` > 0, each root
// also gets the open-tree bound (TotalsPathBound) for the strategies that
// end by `below`: the answer is then at most the optimum, and above `below`
// when no strategy ends by it. kInf when no choice holds a split the target
// can run or fits; 0 for a placement search and past options.deadline (the
// open-tree bound stops there with what it has). Runs no strategy's
// simulation (the open-tree bound simulates critical paths).
Result<Nanos> LowerBound(const SearchProblem& problem, const SearchOptions& options,
                         Nanos below = -1);

// An empty cache for SearchOptions::contexts.
std::shared_ptr<search_detail::ContextCache> NewContextCache();

// A fully evaluated strategy.
struct Candidate {
  int choice = 0;       // index into SearchProblem::choices
  Strategy strategy;    // layers per global stage and per-layer recompute
  Nanos makespan = 0;
  double bubble_fraction = 0;
  Bytes max_peak = 0;
  int recomputed_layers = 0;
  bool feasible = false;  // every device within capacity (and no deadlock)
  std::vector<DeviceStats> devices;
  // With SearchProblem::search_placement: rank -> physical device.
  Placement placement;
};

// Orders candidates: feasible first, then shorter makespan, lower max peak,
// fewer recomputed layers, then the strategy itself and the device order
// (determinism).
bool Better(const Candidate& a, const Candidate& b);

struct SearchResult {
  bool found = false;             // a feasible strategy exists and was found
  Candidate best;                 // valid when found
  std::vector<Candidate> top;     // best first, up to top_k distinct
  bool proved_optimal = false;    // found, and the whole tree was closed
  bool proved_infeasible = false; // !found, and the whole tree was closed
  Nanos lower_bound = 0;          // valid bound on the optimum's makespan
  double gap = 0;                 // (best - lower_bound) / best
  std::string stop_reason;        // "proved optimal", "time limit", ...
  std::int64_t nodes = 0;
  std::int64_t evaluations = 0;   // engine runs
  double solve_time_s = 0;
  // Seconds one simulation of the problem took, timed when a deadline is
  // set (0: not timed); Baselines uses it to skip a run that would end past
  // its deadline.
  double simulation_s = 0;
  // When nothing fits: the smallest uniform per-device capacity at which
  // some strategy fits, and the device that binds there (-1 if unknown).
  Bytes min_capacity_needed = 0;
  int binding_device = -1;
  // The search for that capacity stopped at the time limit: a capacity
  // given is one at which a strategy fits, not proved the least (0: none
  // found in time).
  bool min_capacity_cut = false;
  // Each time the best strategy improved: (seconds since start, makespan).
  std::vector<std::pair<double, Nanos>> incumbents;
  std::int64_t dives = 0;  // paths completed and simulated (SearchOptions::dive_every)
  // Every first try the search simulated (search/first_tries.h), fitting or
  // not, with its choice: Baselines takes them instead of simulating the
  // same strategies again after the time limit.
  std::vector<Candidate> first_tries;
  // Which side of the gap moved last: the bound that set lower_bound
  // ("root bound": before the tree search; "tree search": the least bound
  // of what the tree left open; "open-tree bound": TotalsPathBound, run on
  // the tree left open; "incumbent": every choice closed) and when, in
  // seconds since the start (the incumbent's side: incumbents.back()).
  std::string bound_source;
  double bound_time_s = 0;
  // Placement search: distinct device orders whose strategies were
  // searched, and prefixes of orders visited.
  std::int64_t placements_searched = 0;
  std::int64_t placement_nodes = 0;
  // Placement search: the bound over every order from the sets of ranks
  // the fastest device type can take (fast_sets of them; 0: not tried),
  // fast_sets_bounded of which were bounded in the time share; when all
  // were, fast_sets_bound is the least (a bound on the optimum).
  std::int64_t fast_sets = 0;
  std::int64_t fast_sets_bounded = 0;
  Nanos fast_sets_bound = 0;
  // Under SearchOptions::share: the least bound over what this process's
  // units can still hold (found or left open; kInf: none), before it is
  // capped by the best found (-1: nothing left).
  Nanos part_bound = -1;
};

// REQUIRES: the problem's layers/cluster passed config validation.
Result<SearchResult> Search(const SearchProblem& problem,
                            const SearchOptions& options);

// A distributed search (search/share.cpp): each process's result, found
// under SearchOptions::share, travels as text (EncodePart; DecodePart
// simulates its strategies again) and MergeParts combines the parts into
// the result one process would report: the top list of all parts, proved
// when every part closed its units, the least bound of all, the sums of
// nodes and evaluations. `options` are those the parts ran with.
std::string EncodePart(const SearchResult& part);
Result<SearchResult> DecodePart(const SearchProblem& problem, const std::string& text);
Result<SearchResult> MergeParts(const SearchProblem& problem, const SearchOptions& options,
                                const std::vector<SearchResult>& parts);

// Simulates one strategy under choice `choice`, on `placement` when given
// (non-empty; problem.search_placement), else on problem.cluster. A
// simulation still running at `deadline` is stopped (the engine reads the
// clock every Engine::kDeadlineCheckOps ops, so a smaller one always ends):
// the answer is then an error whose key is kTimeLimitKey.
inline constexpr const char* kTimeLimitKey = "time limit";
Result<Candidate> Evaluate(
    const SearchProblem& problem, int choice, const Strategy& strategy,
    const Placement& placement = {},
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

// The baselines users would otherwise run, each simulated: under choice
// `choice` the user's own strategy (SearchProblem::seeds, "your config"),
// the even split without recompute and with each recompute mode on every
// layer that offers it, Megatron's uneven split, Metis-style splits on a
// heterogeneous cluster; and with several choices, the best of them (by
// Better) with the even split and no recompute, named with its schedule.
struct Baseline {
  std::string name;         // "even split, no recompute", ...
  bool applicable = false;  // false: why_not says why
  std::string why_not;
  Candidate candidate;
};
// A baseline that would end past `deadline` (by simulation_s, or the longest
// one simulated so far) is not simulated (why_not says so), unless `known`
// (a search's first_tries) holds the same strategy of the same choice,
// which is taken as simulated.
std::vector<Baseline> Baselines(
    const SearchProblem& problem, int choice,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
    double simulation_s = 0, const std::vector<Candidate>& known = {});

}  // namespace ppb
