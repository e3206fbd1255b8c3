// The run configuration: one YAML file (model, cluster, pipeline, strategy)
// plus CLI overrides, loaded and validated before anything runs.
//
// Every error is reported once, at load time, formatted as
//   run.yaml:14: pipeline.microbatches: must be a multiple of ...; got 6
// (file, 1-based line, key, what was expected, what was given). The CLI exits
// with status 2 on any of them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine.h"
#include "core/lower.h"
#include "core/model.h"
#include "core/program.h"
#include "core/result.h"
#include "core/spec.h"
#include "schedules/schedule.h"

namespace ppb {

// Values given on the command line; they replace the file's.
struct CliOverrides {
  std::optional<int> stages;
  std::optional<int> microbatches;
  std::optional<int> virtual_stages;
  std::optional<int> microbatch_group;
  std::optional<std::string> schedule;
  std::optional<std::string> schedule_csv;  // path; implies schedule custom
};

struct RunConfig {
  std::string path;  // the config file as given
  std::string model_name;
  std::vector<Layer> layers;  // after `repeat` expansion, in model order
  Cluster cluster;            // p devices and p links
  PipelineShape shape;
  std::string schedule = "1f1b";  // a registry name or "custom"
  ScheduleParams schedule_params;
  std::string schedule_csv;  // path of the CSV for "custom" (as given)
  Strategy strategy;         // complete: counts for p*v stages, per-layer
                             // recompute of layers.size()
  bool allow_empty_chunks = false;
  // Line (1-based) of each key seen in the file, e.g. "pipeline.stages";
  // used to place errors found after loading. Keys set on the command line
  // map to 0.
  std::map<std::string, int> key_lines;
};

// Reads and validates `path`. `text` overload: parse YAML given as a string
// (tests), reporting errors against `filename`.
Result<RunConfig> LoadConfig(const std::string& path,
                             const CliOverrides& overrides);
Result<RunConfig> ParseConfig(std::string_view text, std::string_view filename,
                              const CliOverrides& overrides);

// A config made ready to run: lowered spec and the schedule's program, both
// validated (ValidateSpec, ValidateProgram). Errors from lowering, from the
// schedule's constraints or from a custom CSV are formatted like load errors,
// with the line of the key they concern.
struct PreparedRun {
  PipelineSpec spec;
  Program program;
};
Result<PreparedRun> Prepare(const RunConfig& config);

// Formats "file:line: key: message" for an error about `config`.
std::string FormatError(const RunConfig& config, const Error& error);

}  // namespace ppb
