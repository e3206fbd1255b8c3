// ppb-sim plan's branch-and-bound over whole-job layouts: the space of
// apps/input/plan_space.h, each layout loaded as a run config of its own
// (LayoutDocument, the usual loader, BuildSearchProblem) and searched with
// the pipeline search of `ppb-sim search` (split, recompute per layer or one
// uniform mode, the layout's schedule and v).
//
// Contract:
//   1. Every layout gets a valid lower bound before any simulation
//      (search/search.h LowerBound: the root bound of its pipeline plus the
//      optimizer's share) and a memory floor (every layer's static memory and
//      least stash against the layout's whole memory: some rank holds at
//      least the mean, and each rank holds one micro-batch's stash of all its
//      chunks when its first backward starts). A layout whose floor does not
//      fit, or whose bound is infinite (no split the target can run fits), is
//      pruned by memory.
//   2. First answers: in order of bound, each layout's even split with its
//      recompute choice (for "search": none, then each mode on every layer
//      that offers it, the first that fits) is simulated, within the first
//      tenth of the time; the job config's own strategy too (when it has
//      plan.gpus GPUs). These are incumbents. A space of at least
//      PlanOptions::sample_from layouts loads a sample first, every 16th
//      layout in enumeration order, and tries the sample's even splits the
//      same way (for a twentieth of the time once loaded) before the rest
//      loads: a first answer while a large space loads.
//   3. Then the layouts in order of bound: one whose bound is not below the
//      incumbent is pruned by bound (so are all after it); the others are
//      searched with the incumbent as cutoff and an equal share of the time
//      left. A layout is closed when its search closed its tree (found its
//      best, or proved nothing below the cutoff or nothing fits). They go in
//      rounds of 8 on `threads` threads, each against the incumbent of its
//      round's start, taken in order after the round: the same answer on
//      any number of threads.
//   4. The plan's lower bound is the least of the incumbent and every open
//      layout's bound (the larger of its own and its search's); it is proved
//      optimal when every layout is closed or pruned.
// Deterministic without a time limit (the searches are); a time limit may
// stop at different points on another machine.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

#include "apps/input/config.h"
#include "apps/input/uncertainty.h"
#include "apps/output/plan_output.h"
#include "core/result.h"
#include "search/search.h"

namespace ppb {

struct PlanProgress {
  double elapsed_s = 0;
  int done = 0, total = 0;  // layouts settled (searched or pruned) / all
  std::int64_t pruned = 0;
  Nanos best = -1;
  double gap = 1.0;
};

struct PlanOptions {
  CliOverrides overrides;       // target, time limit, top
  // Branch-and-bound nodes each layout's search may take (0: none); with
  // no time limit the plan is then deterministic and bounded.
  std::int64_t node_limit = 0;
  // Layouts loaded and searched at once (contract 3's rounds; what a round
  // leaves goes inside each search). 0: search.threads of the file, else
  // every hardware thread.
  int threads = 0;
  // Spaces of at least this many layouts load and try a sample first
  // (contract 2; policy: spaces whose loading takes more than about a
  // tenth of a second on one core). Tests set it lower.
  std::size_t sample_from = 2048;
  // Under mpirun (apps/commands/search_mpi.h): the layouts are numbered in
  // order of the cheap bound, the same in every process; a process settles
  // a layout only when share->claim grants it, and share->exchange gives
  // the least incumbent of all. `part` (may be null) receives what this
  // process learned, for MergePlan on the lead.
  const SearchShare* share = nullptr;
  std::string* part = nullptr;
  std::function<void(const PlanProgress&)> progress;  // may be empty
};

// Contract 1's memory floor: false when no strategy of the problem fits
// (under `setting`, a uniform recompute mode, when given).
bool PlanFloorFits(const SearchProblem& problem,
                   const std::optional<RecomputeSetting>& setting = std::nullopt);
// Contract 1's cheap bound on every strategy of the problem (no recompute,
// no pipeline messages counted): the larger of
//   - every micro-batch's forward and backward work W (per micro-batch,
//     times m) at perfect balance over the ranks' speeds;
//   - on equal-speed ranks, a schedule that loops stages over the ranks
//     without empty chunks: every op of rank d waits for micro-batch j's
//     forwards through the stages before rank d's first (and, with a fused
//     backward, is followed by their backwards), which hold at least d
//     distinct layers: T >= (m W + Sum_d S_d) / p, S_d the d smallest
//     layers' share; with v = 1, T >= m W_d + f Sum_{d'<d} W_d' for every
//     rank, whose least over every split is f W / (1 - (1 - f/m)^p) (f: 1
//     fused, else the least forward share of a layer's work);
// plus the optimizer's mean share after the pipeline (as search/search.h
// LowerBound).
Nanos PlanCheapBound(const SearchProblem& problem);

// The run config of entry `e`'s best (the file's own for "your config"),
// ready for Prepare: what is emitted and drawn. REQUIRES: e.best.
RunConfig EntryConfig(const PlanEntry& e);

// --uncertainty on the plan: each reported layout's best strategy
// simulated again on every drawn machine (apps/input/uncertainty.h), the
// job's text edited and each layout loaded from it as the plan loads it.
// Rows in the table's order, named by DescribeLayout ("your config" for
// the file's own). Errors: a job without hardware.gpu (key
// "--uncertainty").
Result<UncertaintySummary> PlanUncertainty(std::string_view text, std::string_view filename,
                                           const PlanResult& plan,
                                           const UncertaintyRequest& request);

// The plan of the job config `text` (read from `filename`); errors carry a
// complete message (bad input, exit 2).
Result<PlanResult> RunPlan(std::string_view text, std::string_view filename,
                           const PlanOptions& options);

// The lead's answer under mpirun: the job loaded again, every process's
// part (its own included) merged in (each layout's outcome from the process
// that settled it, every bound, the best strategies simulated again), then
// the proof or gap and the top list as RunPlan's.
Result<PlanResult> MergePlan(std::string_view text, std::string_view filename,
                             const PlanOptions& options, const std::vector<std::string>& parts);

}  // namespace ppb
