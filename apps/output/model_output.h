// The report of `ppb-sim model`: the layers the cost model derived from a
// HuggingFace config (core/cost_model.h) with their parameters, FLOPs,
// times, memory and the source of every number. Pure formatting.
#pragma once

#include <string>

#include "apps/input/config.h"

namespace ppb {

// REQUIRES: !config.derived.empty()
std::string FormatModelText(const RunConfig& config);
// One JSON object, "schema": "ppb.model/1"; ends with a newline.
std::string FormatModelJson(const RunConfig& config);

}  // namespace ppb
