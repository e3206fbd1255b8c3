// `--from megatron|torchtitan FILE [--cluster FILE] [--gpus N]
// [--show-config]`: a run given as the framework's own launch instead of a
// ppb config: a Megatron-LM launch script or training log
// (apps/input/megatron_launch.h), a torchtitan v0.2.2 TOML job config or a
// function of torchtitan main's config registry, "registry.py:FUNCTION"
// (apps/input/torchtitan_launch.h).
//
// TakeFrom removes these flags from a command's arguments, reads the launch
// into a ppb config (the model, training, pipeline; the split and recompute
// by the framework's rules through its emitted form's reader,
// ParseMegatronArgs or ParseTorchtitan, plus torchtitan's per-rank layer
// SAC; the machine from --cluster), loads and prepares it once so that
// every error is placed at the launch's line and flag or key (exit 2),
// prints what it assumed and ignored on `err` ("ppb-sim: --from FRAMEWORK
// FILE: ..."), and hands the command "--config FILE" with the config text
// held at FILE's path (ScopedConfigText) for as long as `held` lives. With
// --show-config it prints that config, each line marked with where it came
// from, and the command is not run.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/megatron_launch.h"

namespace ppb::commands {

// A launch read as a ppb config text (the strategy included), loaded and
// prepared once: every error is returned placed at the launch's line and
// flag. `origins[i]` says where line i + 1 of `yaml` came from.
struct LaunchConfig {
  std::string yaml;
  std::vector<std::string> origins;
  std::vector<std::string> notes;
};
// `framework` is "megatron" or "torchtitan".
Result<LaunchConfig> ReadLaunchConfig(const std::string& framework, const std::string& path,
                                      std::string_view text, const LaunchInputs& inputs);

// nullopt: run the command with `args` (rewritten when --from was given);
// else the exit status to return without running it.
std::optional<int> TakeFrom(std::vector<std::string>& args,
                            std::unique_ptr<ScopedConfigText>& held, std::ostream& out,
                            std::ostream& err);

}  // namespace ppb::commands
