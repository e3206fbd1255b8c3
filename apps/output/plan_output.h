// The report of `ppb-sim plan` (apps/commands/plan_run.h): a table of the
// best layouts a person reads, and JSON with schema "ppb.plan/1".
//
// JSON keys (fixed): schema, model, gpus, gpu, seq_length, global_batch_size,
// target, best and top (entries with tensor_parallel, context_parallel,
// expert_parallel, pipeline_parallel, data_parallel, micro_batch_size,
// microbatches, schedule, virtual_stages, sequence_parallel,
// distributed_optimizer, data_parallel_sharding and offload (where the plan
// set them), layout (layers per global stage), recompute (the
// mode of each layer, "none" where none), recompute_choice (search, none, a
// mode, or yours), iteration_time_ns, tokens_per_s_per_gpu, mfu,
// max_peak_memory_bytes, memory_capacity_bytes, fits, step_breakdown_ms,
// note), proved_optimal, gap, lower_bound_ns, stop_reason, candidates
// (total, refused {reason: count}, pruned_by_memory, pruned_by_bound,
// searched), your_config, first_answer_s, incumbents, solve_time_s.
// best is null when nothing fits.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/layout_document.h"
#include "core/breakdown.h"
#include "core/step_metrics.h"
#include "search/plan/layout_search.h"
#include "search/search.h"

namespace ppb {

// One layout's outcome (search/plan/layout_search.h), with what the report
// adds.
struct PlanEntry : PlanOutcome {
  std::string note;               // "your config", "your layout"
  // Layouts whose best simulates to the same step (to the nanosecond): one
  // tie group, this entry its simplest member (PlanTiePreference), the
  // others here in that order.
  std::vector<PlanLayout> ties;
  // For the entries reported (the top list), its best simulated in full:
  // where the step goes on the rank that ends last (with the step model),
  // and the step's figures (a derived model).
  std::optional<StepParts> parts;
  std::optional<StepMetrics> metrics;
  // The layout's run config (for the report and --emit).
  std::shared_ptr<const RunConfig> config;
};

// "(search stopped at its node limit)", "(first tries only: pruned at its
// bound 3416.1 ms)", or "" for an entry searched to the end.
std::string PlanDepthMark(const PlanEntry& e);

struct PlanResult {
  PlanSettings settings;
  // The job: what the header says.
  std::string model_name, gpu;
  std::int64_t seq = 0, global_batch = 0;
  std::int64_t total = 0;                        // combinations considered
  std::map<std::string, std::int64_t> refused;   // reason -> count
  // The loader's or the search's refusals: one full message per reason.
  std::map<std::string, std::string> refused_example;
  std::int64_t pruned_by_memory = 0, pruned_by_bound = 0, searched = 0;
  std::int64_t not_loaded = 0;  // left when the time limit came while loading
  std::int64_t open = 0;        // loaded, never reached before the time limit
  std::vector<PlanEntry> top;  // the best layouts, best first (feasible only)
  bool found = false;
  bool proved_optimal = false;
  Nanos lower_bound = 0;
  double gap = 0;
  std::string stop_reason;  // "proved optimal", "time limit", "nothing fits"
  double solve_time_s = 0;
  int processes = 1;  // MPI processes that shared the layouts
  double first_answer_s = -1;  // when the first incumbent came (-1: none)
  // Loading: the layouts loaded (each a run config, its search problem,
  // memory floor and cheap bound) and the seconds that took, less the
  // sample's even-split tries (bench/bench_plan.cpp; not printed).
  std::int64_t loaded = 0;
  double load_s = 0;
  std::vector<std::pair<double, Nanos>> incumbents;  // each improvement
  // The job config's own layout and strategy, simulated (when it has
  // plan.gpus GPUs and loads): its time and whether it fits.
  std::optional<Candidate> yours;
  std::string yours_layout;  // DescribeLayout of it
  std::string yours_error;   // why the file as written does not load (else empty)
  // The fastest step found at each (tensor parallel, pipeline parallel)
  // over every layout (for the report's chart).
  std::map<std::pair<int, int>, Nanos> best_by_tp;
};


std::string FormatPlanText(const PlanResult& plan);
std::string FormatPlanJson(const PlanResult& plan);

// "full", "selective", "none", or "mixed: 40 full, 12 selective" over the
// layers of `e`'s best strategy.
std::string DescribePlanRecompute(const PlanEntry& e);

}  // namespace ppb
