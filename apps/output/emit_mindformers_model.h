// The model of a derived run as MindFormers' mcore form names it
// (use_legacy: False; model.model_config with HuggingFace's field names and
// model_type, mindspore-lab/mindformers master at f52743ca), for --emit
// mindformers to write the whole run and --from mindformers to read it
// back. The fields are checked by reading them back as ppb reads a
// HuggingFace config (apps/input/hf_config.h): a shape no family of
// llama, qwen3 and qwen3_moe gives exactly is not written, and `why` says
// so.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/architecture.h"

namespace ppb::emit_detail {

// model_config's shape fields ("model_type", "\"qwen3\"") in order, or
// nullopt with `why` set.
std::optional<std::vector<std::pair<std::string, std::string>>> MindFormersModelFields(
    const Architecture& a, std::string& why);

}  // namespace ppb::emit_detail
