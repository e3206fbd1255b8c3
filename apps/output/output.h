// Reports of a simulation: text for people, JSON for tools ("ppb.sim/1"), a
// Chrome/Perfetto trace, and the critical path. Pure formatting: callers
// write the strings where they belong.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "apps/input/config.h"
#include "core/breakdown.h"
#include "core/critical_path.h"
#include "core/engine.h"

namespace ppb {

// The seven parts of the step (core/breakdown.h StepParts) in ms, as the
// JSON reports write them.
nlohmann::ordered_json StepPartsJson(const StepParts& x);

// "1f1b (megatron)", "interleaved (megatron, g=4)", "custom": the schedule
// as the reports name it.
std::string DescribeSchedule(const RunConfig& config);

// "ok", "out_of_memory" or "deadlock": a run's outcome as the JSON and CSV
// reports name it.
const char* OutcomeName(Outcome o);

// One line on the largest part of the pipeline's breakdown other than ideal,
// from the data: which rank, how much, the cause in figures (ranks idle
// during fill and drain, layers held against the mean, recomputed layers,
// message waits) and what shrinks it. E.g. "warm-up/drain is the largest
// loss (27.3 % of the iteration on rank 0): 3 of 4 ranks wait up to 9.000
// ms for their first op (fill) and 3 finish up to 9.000 ms early (drain);
// more micro-batches (m=8 for p=4) or interleaving (v > 1) shrink it".
// With `uneven` (UnevenStageLoss of the run), the part of a warm-up/drain
// that the stages' unequal costs cause, when it is at least 1 % of the
// iteration, is named first, with the stages at fault (the costliest per
// micro-batch and those within 1 % of it), then the rest as fill and drain.
std::string ExplainBreakdown(const PipelineSpec& spec, const SimResult& result,
                             const Breakdown& breakdown, const UnevenStages* uneven = nullptr);

// Human-readable summary, the bubble breakdown (pipeline, with its
// explanation, and per device) and the per-device table.
std::string FormatSimText(const RunConfig& config, const PreparedRun& run,
                          const SimResult& result);

// One JSON object with "schema": "ppb.sim/1"; `path` is included when the
// critical path was asked for. Ends with a newline.
std::string FormatSimJson(const RunConfig& config, const PreparedRun& run,
                          const SimResult& result,
                          const std::vector<CriticalStep>* path);

// Chrome trace-event JSON: one process per rank with a compute and a
// communication thread, ops named by torch action strings, transfers as flow
// arrows, memory as counter events with two series per rank ("static" and
// "activations+workspace", in GiB; they add up to the engine's memory
// sample). REQUIRES: result recorded ops and memory.
std::string FormatChromeTrace(const RunConfig& config, const PreparedRun& run,
                              const SimResult& result);

// The critical path as text, one step per line.
std::string FormatCriticalPath(const std::vector<CriticalStep>& path);

// What the path spends its time on (SummarizeCriticalPath): one line of
// totals, then one per stage on the path, largest first. Empty for an
// empty path.
std::string FormatCriticalPathSummary(const CriticalPathSummary& summary);

// Layers held by each (chunk, rank), e.g. "0-8" or "c0 0-4, c1 20-24";
// indexes into config.layers. One string per rank.
std::vector<std::string> LayersHeld(const RunConfig& config, int p, int v);
// The same for any layers per global stage (size p*v).
std::vector<std::string> LayersHeld(
    const std::vector<int>& layers_per_stage, int p, int v,
    StagePlacement placement = StagePlacement::Loop);

// Per-global-stage values (size p*v, stage s = chunk * p + rank) as
// [chunk][rank] rows.
std::vector<std::vector<int>> ByChunkAndRank(
    const std::vector<int>& per_stage, int p, int v,
    StagePlacement placement = StagePlacement::Loop);

// Where `schedule` puts the stages with v chunks per rank (V for the V
// schedules when v = 2, as Prepare lowers them; Loop otherwise).
StagePlacement PlacementOf(const std::string& schedule, int v);

// "12.50 GiB"-style memory for people.
std::string FormatBytes(Bytes b);

}  // namespace ppb
