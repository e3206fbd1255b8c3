// A sweep's plan: the grid (apps/input/grid.h) resolved against its base
// config. Each vary key is one of
//   - a pipeline integer (pipeline.stages, .microbatches, .virtual_stages,
//     .microbatch_group), set as the command-line override of that name,
//     values positive integers or factors of the base's value ("x2");
//   - pipeline.schedule, a schedule name of the registry (the override);
//   - any other scalar written in the base config, found as `compare
//     --vary` finds it (apps/input/vary_document.h: cluster keys, layers by
//     name, index or repeated group, ...): numeric values of the key's kind
//     or factors, and non-numeric keys such as model.hf_config take their
//     values as written (each value is loaded once with the base config to
//     check it; paths are relative to the base config, as in the config).
// Points are numbered 0 .. points()-1 in cross-product order (the first key
// outermost, the runs innermost). Errors read
//   grid.yaml:3: vary.cluster.link.bandwidth: expected a bandwidth like
//   50GB/s or a factor like x2; got 'fast'
// (exit 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/grid.h"
#include "apps/input/vary_document.h"
#include "core/result.h"

namespace ppb {

struct PlanAxis {
  enum class Type { PipelineInt, Schedule, Document } type = Type::Document;
  std::string pipeline_key;  // PipelineInt: "stages", ...
  vary_detail::Axis axis;    // the key, its values and (Document) target
  std::vector<int> ints;     // PipelineInt: each value resolved
};

struct SweepPlan {
  Grid grid;
  std::string config_path;  // as given
  std::string config_text;
  std::string config_hash;            // "fnv1a64:<16 hex digits>" of config_text
  std::vector<PlanAxis> axes;         // as grid.axes
  std::vector<std::string> settings;  // RunSettings per grid.runs entry
};

// One point of the plan: its values (one per axis) and its run.
struct SweepPoint {
  std::int64_t index = 0;
  std::vector<std::string> values;
  int run = 0;  // index into grid.runs
};

Result<SweepPlan> PlanSweep(Grid grid, const std::string& config_text,
                            const std::string& config_path);

// REQUIRES: 0 <= index < plan.grid.points().
SweepPoint PointAt(const SweepPlan& plan, std::int64_t index);

// FNV-1a 64-bit of `bytes` as "fnv1a64:%016x".
std::string ContentHash(std::string_view bytes);

}  // namespace ppb
