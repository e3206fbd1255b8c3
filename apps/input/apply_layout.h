// A layout's schedule and virtual stages applied as values to a run config
// the loader gave for the same layout with another schedule and v: what
// `ppb-sim plan` does for the layouts that differ from one it loaded only
// in those two, in place of writing and loading the job's document again
// (issue 46's job and layout values, for the pipeline's part of a layout).
//
// Contract: `loaded` is what ParseConfigYaml gave for LayoutDocument(text,
// L) (apps/input/layout_document.h) with no overrides; L' is L with schedule
// `schedule` and v `v`. ApplyScheduleV returns exactly what the loader
// gives for LayoutDocument(text, L') (the same shape, schedule, its
// parameters, communication, strategy; everything else is the same
// document's), or nullopt wherever the loader could refuse L' or reads the
// schedule or v for more than these: a p x v or op count past the loader's
// limits, a default even split that leaves a chunk empty, the combined
// 1F1B of training.moe.overlap_ep_comm, a custom schedule. The caller then
// loads L' itself, so every refusal is the loader's own, by key and line.
// tests/test_plan.cpp checks the contract layout by layout against the
// loader on whole spaces.
#pragma once

#include <optional>
#include <string>

#include "apps/input/config.h"

namespace ppb {

std::optional<RunConfig> ApplyScheduleV(const RunConfig& loaded, const std::string& schedule,
                                        int v);

// False where ApplyScheduleV declines every schedule and v for `loaded`
// (a custom schedule, the combined 1F1B): there is no point keeping it.
bool AppliesScheduleV(const RunConfig& loaded);

}  // namespace ppb
