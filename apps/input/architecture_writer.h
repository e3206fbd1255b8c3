// model.architecture written from an Architecture (core/architecture.h):
// the keys of configs/README-format.yaml that ParseArchitecture
// (apps/input/config_training.cpp) reads back as the same model
// (SameLayers), each line placed where the reader of another framework's
// config found the field. The readers of torchtitan and MindFormers
// configs write their model through it.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "apps/input/launch_run.h"
#include "core/architecture.h"
#include "core/result.h"

namespace ppb {

// Writes "  architecture:" and its keys at indent 2 and deeper; `origin`
// gives each key's origin by its ppb name ("hidden_size", "moe.top_k",
// "mla.kv_lora_rank", "mamba.num_heads"). Layers that ppb's keys cannot
// write (gated DeltaNet, an attention output gate, a Mamba mixer beside an
// MLP) are an error naming them, and nothing is written.
Status WriteArchitecture(ConfigWriter& o, const Architecture& a,
                         const std::function<std::string(std::string_view key)>& origin);

}  // namespace ppb
