// The step model's part of `ppb-sim model` (with hardware.gpu): the GPU and
// its sources, every coefficient with whether it is the preset's guess or
// the config's, the groups and their links, each distinct layer's kernels
// (GEMM shapes, efficiency, time; collectives with size, group, link,
// time) and the step's tail. Pure formatting.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "apps/input/config.h"

namespace ppb {

// REQUIRES: config.hardware.step_model
std::string StepModelText(const RunConfig& config);
nlohmann::ordered_json StepModelJson(const RunConfig& config);

}  // namespace ppb
