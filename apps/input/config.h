// The run configuration: one YAML file (model, cluster, pipeline, strategy)
// plus CLI overrides, loaded and validated before anything runs.
//
// Every error is reported once, at load time, formatted as
//   run.yaml:14: pipeline.microbatches: must be a multiple of ...; got 6
// (file, 1-based line, key, what was expected, what was given). The CLI exits
// with status 2 on any of them.
//
// Each section is read in its own file (apps/input/config_<section>.cpp)
// with the shared key reader of apps/input/config_reader.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost_model.h"
#include "core/engine.h"
#include "core/lower.h"
#include "core/model.h"
#include "core/program.h"
#include "core/result.h"
#include "core/spec.h"
#include "core/step_metrics.h"
#include "core/topology.h"
#include "schedules/schedule.h"
#include "search/deployable.h"
#include "search/plan/plan_space.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace ppb {

// Values given on the command line; they replace the file's.
struct CliOverrides {
  std::optional<int> stages;
  std::optional<int> microbatches;
  std::optional<int> virtual_stages;
  std::optional<int> microbatch_group;
  std::optional<std::string> schedule;
  std::optional<std::string> schedule_csv;  // path; implies schedule custom
  // The search block (ppb-sim search), each replacing the file's search.*
  // key of the same name.
  std::optional<std::vector<std::string>> schedules;    // --schedules
  std::optional<std::vector<int>> virtual_stages_list;  // --virtual-stages-list
  std::optional<std::vector<int>> microbatch_groups;    // --microbatch-groups
  std::optional<Nanos> time_limit;                      // --time-limit; 0: none
  std::optional<std::int64_t> node_limit;               // --node-limit
  std::optional<std::uint64_t> seed;                    // --seed
  std::optional<int> threads;                           // --threads
  std::optional<int> top;                               // --top
  std::optional<DeployTarget> target;                         // --target
  // The most ops one simulation may run (--max-ops; default
  // kDefaultMaxOps, apps/input/config_reader.h): a shape above it is
  // refused at load with the estimate.
  std::optional<std::int64_t> max_ops;
};

// The optional `search:` block of the config (with CLI overrides applied):
// what `ppb-sim search` may choose besides the split and the recompute, and
// its limits. Lists are validated names / positive values without repeats;
// which combinations make sense is decided by BuildSearchProblem
// (apps/input/search_problem.h).
struct SearchSettings {
  std::vector<std::string> schedules;  // registry names (no "custom");
                                       // empty: pipeline.schedule
  std::vector<int> virtual_stages;     // empty: pipeline.virtual_stages
  std::vector<int> microbatch_groups;  // empty: pipeline.microbatch_group
  Nanos time_limit = 60'000'000'000;   // 0: no limit
  std::int64_t node_limit = 0;         // 0: no limit
  std::uint64_t seed = 1;              // local-search restarts
  int threads = 0;                     // 0: every hardware thread
  int top = 5;                         // alternatives reported
  // With a heterogeneous cluster (RunConfig::topology): whether the search
  // decides which device runs each rank (search.device_order: search, the
  // default) or keeps cluster.placement (given).
  bool search_device_order = true;
  // search.target: only strategies this framework's configuration can
  // express (search/deployable.h); any: every per-layer choice.
  DeployTarget target = DeployTarget::Any;
  MemoryHeadroom memory_headroom;
};

// One immutable vector that a copy shares rather than copies, read as a
// const std::vector<T>: a run config copied (a plan's layouts that differ
// only in schedule and v, apps/input/apply_layout.h; a search's
// candidates) shares its derived layers, whose copy would cost more than
// everything else the config holds.
template <class T>
class SharedVector {
 public:
  SharedVector() = default;
  SharedVector(std::vector<T> v)  // NOLINT: set from a vector
      : p_(std::make_shared<const std::vector<T>>(std::move(v))) {}
  const std::vector<T>& get() const { return p_ ? *p_ : Empty(); }
  operator const std::vector<T>&() const { return get(); }  // NOLINT
  typename std::vector<T>::const_iterator begin() const { return get().begin(); }
  typename std::vector<T>::const_iterator end() const { return get().end(); }
  size_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  const T& operator[](size_t i) const { return get()[i]; }
  const T& front() const { return get().front(); }
  const T& back() const { return get().back(); }

 private:
  static const std::vector<T>& Empty() {
    static const std::vector<T> empty;
    return empty;
  }
  std::shared_ptr<const std::vector<T>> p_;
};

struct RunConfig {
  std::string path;  // the config file as given
  std::string model_name;
  std::vector<Layer> layers;  // after `repeat` expansion, in model order
  // With `model: {hf_config: ...}`: the file (relative to the config
  // resolved), and the derived layers with their sources (the same layers
  // as `layers`, plus params, FLOPs and provenance). Empty otherwise.
  std::string hf_config;
  SharedVector<DerivedLayer> derived;
  // With derived layers: what they were derived from.
  Architecture architecture;
  Training training;
  Hardware hardware;  // with derived layers: the device (and the step model)
  // With model.sapp_layers: SAPP's stage_const_mem, memory each stage holds
  // besides its layers (may be negative). It is taken off every device's
  // capacity (cluster and topology) after loading.
  Bytes stage_constant = 0;
  // What the loader assumed and the reports print ("SAPP time read as
  // forward ...").
  std::vector<std::string> input_notes;
  Cluster cluster;            // p devices and p links (with a topology:
                              // those of `placement`)
  // A heterogeneous cluster (cluster.device_types, cluster.nodes,
  // cluster.link_classes) and the device of each rank (cluster.placement,
  // default: devices in node order). Unset for a per-rank cluster.
  std::optional<Topology> topology;
  Placement placement;
  PipelineShape shape;
  std::string schedule = "1f1b";  // a registry name or "custom"
  ScheduleParams schedule_params;
  std::string schedule_csv;  // path of the CSV for "custom" (as given)
  Strategy strategy;         // complete: counts for p*v stages, per-layer
                             // recompute of layers.size()
  bool allow_empty_chunks = false;
  // pipeline.communication was given (else each schedule takes Megatron's
  // rule: 1f1b and gpipe blocking, the others overlapped).
  bool communication_given = false;
  SearchSettings search;
  std::optional<PlanSettings> plan;  // the plan block, when given
  // Line (1-based) of each key seen in the file, e.g. "pipeline.stages";
  // used to place errors found after loading. Keys set on the command line
  // map to 0.
  std::map<std::string, int> key_lines;
};

// The headroom `h` of `config` in device bytes, and in the tensor bytes it
// takes off the allocatable capacity (its share that is not allocator
// fragmentation, with the step model).
Bytes HeadroomBytes(const RunConfig& config, const MemoryHeadroom& h);
Bytes HeadroomTensorBytes(const RunConfig& config, const MemoryHeadroom& h);

// Reads and validates `path`. `text` overload: parse YAML given as a string
// (tests), reporting errors against `filename`.
Result<RunConfig> LoadConfig(const std::string& path,
                             const CliOverrides& overrides);
Result<RunConfig> ParseConfig(std::string_view text, std::string_view filename,
                              const CliOverrides& overrides);
// Reads a whole file (or the text a ScopedConfigText holds at `path`);
// false, errno set, when it cannot be read (a folder: EISDIR).
bool ReadTextFile(const std::string& path, std::string& out);

// A config given as text rather than a file (the Python module's dict or
// YAML string): while the guard lives, every loader that reads `path`
// (LoadConfig, the plan's own read) gets `text` instead, so the config's
// relative paths (hf_config, schedule_csv) resolve against the folder of
// `path` and its errors name `path` and the text's lines. The guard holds
// on the thread that made it (where a command reads its config), so
// threads may each give a text at one path; on one thread, one guard per
// path.
class ScopedConfigText {
 public:
  ScopedConfigText(std::string path, std::string text);
  ~ScopedConfigText();
  ScopedConfigText(const ScopedConfigText&) = delete;
  ScopedConfigText& operator=(const ScopedConfigText&) = delete;

 private:
  std::string path_;
};

// The same for a YAML document already loaded (and possibly edited, as
// `ppb-sim compare --vary` does); errors are placed at the marks of its
// nodes (edited or added nodes without a mark take their parent key's line).
Result<RunConfig> ParseConfigYaml(const YAML::Node& root,
                                  std::string_view filename,
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

// The step's figures (core/step_metrics.h) of a derived model run with
// `recompute` over m micro-batches in `iteration`; nullopt without derived
// layers (an explicit model has no FLOP count).
std::optional<StepMetrics> StepMetricsOf(const RunConfig& config,
                                         const std::vector<std::uint8_t>& recompute,
                                         int m, Nanos iteration);

// Formats "file:line: key: message" for an error about `config`.
std::string FormatError(const RunConfig& config, const Error& error);

}  // namespace ppb
