// Internal to search/: what every part of the strategy search shares.
//
// Contract: ChoiceContext is one schedule choice made concrete (its program,
// a template PipelineSpec with the cluster's placement, links and
// capacities, and the program's memory profile); it is built once per
// choice (MakeContext) and only read afterwards. StageFixed is what a stage
// costs on its device apart from recompute. kInf is the "no bound / no
// time" sentinel: far below overflow when a few are added.
#pragma once

#include <chrono>
#include <limits>

#include "search/memory_profile.h"
#include "search/search.h"

namespace ppb::search_detail {

using Clock = std::chrono::steady_clock;
constexpr Nanos kInf = std::numeric_limits<Nanos>::max() / 4;

// ---------------------------------------------------------------------------
// Per-choice search state.

struct ChoiceContext {
  int index = 0;
  ScheduleChoice choice;
  int p = 1, v = 1, m = 1, S = 1, L = 0;
  Program program;
  PipelineSpec spec;  // template: shape, placement, links, capacities
  MemoryProfile profile;
};

// What a stage costs on its device with the cheapest-memory recompute, and
// the fixed parts that do not depend on recompute.
struct StageFixed {
  Nanos f = 0, bi = 0, bw = 0;  // scaled to the device
  Bytes static_mem = 0;
  Bytes workspace = 0;
  Bytes output = 0;
};

}  // namespace ppb::search_detail
