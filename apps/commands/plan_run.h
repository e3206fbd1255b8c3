// ppb-sim plan over a job config: the space of search/plan/plan_space.h,
// each layout loaded as a run config of its own (LayoutDocument, the usual
// loader, BuildSearchProblem), then the branch-and-bound over the layouts
// of search/plan/layout_search.h (contracts 2 to 4), whose searches are
// the pipeline search of `ppb-sim search` (split, recompute per layer or
// one uniform mode, the layout's schedule and v).
//
// Contract:
//   1. Every layout gets a valid lower bound before any simulation
//      (search/plan/plan_bounds.h PlanCheapBound, then search/search.h
//      LowerBound just before its search) and a memory floor
//      (PlanFloorFits). A layout whose floor does not fit, or whose bound
//      is infinite (no split the target can run fits), is pruned by
//      memory. The job config's own strategy (when it has plan.gpus GPUs)
//      is simulated before any layout loads: the first incumbent. A space
//      of at least PlanOptions::sample_from layouts loads a sample first,
//      every 16th layout in enumeration order, and tries the sample's even
//      splits (contract 2, for a twentieth of the time once loaded) before
//      the rest loads: a first answer while a large space loads.
//   2 to 4: layout_search.h's first answers, rounds and proof; then the
//      top list (tie groups by PlanTiePreference), each entry simulated in
//      full for its step parts and figures.
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
#include "search/plan/layout_search.h"
#include "search/plan/plan_bounds.h"
#include "search/search.h"

namespace ppb {

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
  // (contract 1; policy: spaces whose loading takes more than about a
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
