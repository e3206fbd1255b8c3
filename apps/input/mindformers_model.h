// The model of a MindFormers training YAML (apps/input/mindformers_launch.h):
// model.model_config in the mcore form (HuggingFace's names and model_type,
// over pretrained_model_dir's config.json) or the legacy LlamaConfig form
// (with moe_config), every alias read as MindFormers' COMMON_CONFIG_MAPPING
// maps it, then read as a HuggingFace config (apps/input/hf_config.h) and
// written as ppb's model.architecture. Internal to
// apps/input/mindformers_*.cpp; refusals leave as mindformers_detail::Bad.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/input/launch_run.h"
#include "apps/input/mindformers_doc.h"
#include "core/architecture.h"

namespace ppb::mindformers_detail {

// The model's shape as a HuggingFace config: pretrained_model_dir's
// config.json overridden by model_config's keys, each field with where it
// came from.
struct ModelDict {
  nlohmann::json hf = nlohmann::json::object();
  std::map<std::string, std::string> origin;  // HF field -> "file:line: key"
  std::vector<std::string> ignored;           // model_config keys not read
  std::string unread_dir;                     // pretrained_model_dir's config.json, not readable
};

// model_config (and pretrained_model_dir) as HuggingFace fields; `notes`
// gets what was assumed.
ModelDict ReadModelDict(Doc& doc, std::vector<std::string>& notes);

// The Architecture of the dict: the legacy form's model_type and experts
// filled in, the experts' count under the family's name.
Architecture ReadModel(Doc& doc, ModelDict& d);

// Writes model.architecture (each key with its origin among `origin`,
// else `where`); refuses hybrid and windowed models.
void WriteArchitecture(ConfigWriter& o, const Architecture& a,
                       const std::map<std::string, std::string>& origin, const std::string& where);

}  // namespace ppb::mindformers_detail
