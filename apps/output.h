// Reports of a simulation: text for people, JSON for tools ("ppb.sim/1"), a
// Chrome/Perfetto trace, and the critical path. Pure formatting: callers
// write the strings where they belong.
#pragma once

#include <string>
#include <vector>

#include "apps/config.h"
#include "core/engine.h"

namespace ppb {

// Human-readable summary and per-device table.
std::string FormatSimText(const RunConfig& config, const PreparedRun& run,
                          const SimResult& result);

// One JSON object with "schema": "ppb.sim/1"; `path` is included when the
// critical path was asked for. Ends with a newline.
std::string FormatSimJson(const RunConfig& config, const PreparedRun& run,
                          const SimResult& result,
                          const std::vector<CriticalStep>* path);

// Chrome trace-event JSON: one process per rank with a compute and a
// communication thread, ops named by torch action strings, transfers as flow
// arrows, memory as counter events. REQUIRES: result recorded ops and memory.
std::string FormatChromeTrace(const RunConfig& config, const PreparedRun& run,
                              const SimResult& result);

// The critical path as text, one step per line.
std::string FormatCriticalPath(const std::vector<CriticalStep>& path);

// Layers held by each (chunk, rank), e.g. "0-8" or "c0 0-4, c1 20-24";
// indexes into config.layers. One string per rank.
std::vector<std::string> LayersHeld(const RunConfig& config, int p, int v);
// The same for any layers per global stage (size p*v).
std::vector<std::string> LayersHeld(const std::vector<int>& layers_per_stage,
                                    int p, int v);

// Per-global-stage values (size p*v, stage s = chunk * p + rank) as
// [chunk][rank] rows.
std::vector<std::vector<int>> ByChunkAndRank(const std::vector<int>& per_stage,
                                             int p, int v);

// "12.50 GiB"-style memory for people.
std::string FormatBytes(Bytes b);

}  // namespace ppb
