// A framework's launch read as a ppb config (apps/input/megatron_launch.h,
// torchtitan_launch.h): the config text, where each of its lines came
// from, the notes of what was assumed and ignored, and the pipeline form
// left for the framework's own split rules (apps/output/emit.h's readers),
// which need the model's layers and so run after the first load.
#pragma once

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace ppb {

// What a launch cannot say, from the command line.
struct LaunchInputs {
  std::string cluster_path;  // empty: none given
  std::string cluster_text;
  std::optional<int> gpus;
};

struct LaunchRun {
  std::string yaml;  // a ppb config, without its strategy
  // Where each line of `yaml` came from ("train.sh:57: --hidden-size"), by
  // line - 1; empty for lines ppb wrote.
  std::vector<std::string> origins;
  // The pipeline split and recompute in the framework's emitted form:
  // Megatron-LM: one "--flag value" a line, as ParseMegatronArgs reads
  // them; torchtitan: the v0.2.2 TOML fragment ParseTorchtitan reads.
  std::string pipeline_flags;
  // flag or key -> "file:line" where it was written; "split" is where the
  // split as a whole comes from.
  std::map<std::string, std::string> pipeline_origins;
  // torchtitan's recompute beyond what its fragment says (none | full):
  // every decoder layer in `recompute_all` ("selective"), or its layer SAC:
  // full recompute on every `recompute_every`-th decoder layer of each
  // rank, counted over the rank's stages in order (torchtitan v0.2.2
  // activation_checkpoint.py _apply_layer_sac); 0 for none.
  std::string recompute_all;
  int recompute_every = 0;
  std::string recompute_origin;
  std::vector<std::string> notes;  // what was assumed and ignored
};

// The ppb config text a launch reader writes, each line with where it came
// from (LaunchRun::yaml and origins).
class ConfigWriter {
 public:
  void Line(int indent, const std::string& text, const std::string& origin = "") {
    yaml_ += std::string(static_cast<size_t>(indent), ' ') + text + "\n";
    origins_.push_back(origin);
  }
  template <class T>
  void Key(int indent, const std::string& key, const T& value, const std::string& origin) {
    Line(indent, fmt::format("{}: {}", key, value), origin);
  }
  // A YAML double-quoted string.
  void Text(int indent, const std::string& key, const std::string& value,
            const std::string& origin);
  // Lines copied from another file (a --cluster file), placed at their own
  // lines; "---" and "..." become comments.
  void Copy(std::string_view text, const std::string& path);

  std::string yaml_;
  std::vector<std::string> origins_;
};

// The machine from --cluster FILE (a YAML map with a hardware: block and
// optionally a cluster: block), copied with its lines; an error when none
// was given (`path` is the launch, which does not name its GPU) or the
// file is not such a map.
Status WriteCluster(ConfigWriter& o, const LaunchInputs& in, const std::string& path);

// Ends a reader's translation: `ignored` (the keys or flags ppb does not
// model) as one note when there are any, and the config text with its
// origins moved from `o` into `run`.
void FinishLaunch(LaunchRun& run, ConfigWriter& o, const std::vector<std::string>& ignored);

// A ppb config error (message "yaml_path:LINE: key: ...") about the text of
// `run.yaml` placed where that line came from: "train.sh:57: --hidden-size
// (read as ppb model.architecture.hidden_size): ...". Other messages are
// returned as they are.
std::string PlaceLaunchError(const LaunchRun& run, std::string_view yaml_path,
                             const std::string& message);

}  // namespace ppb
