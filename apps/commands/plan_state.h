// The state of one `ppb-sim plan` between its phases (apps/commands/
// plan_run.h gives the contract): the job's text, the branch-and-bound
// over its layouts (search/plan/layout_search.h) and the run config of each
// layout at work, the result being built; shared by plan_load.cpp (loading
// the space and its first answers) and plan_run.cpp (the top list, the
// parts of an MPI plan). Internal to the plan command.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/commands/plan_run.h"
#include "apps/input/layout_document.h"
#include "search/plan/layout_search.h"

namespace ppb::plan_detail {

using Clock = PlanSearch::Clock;
#define PPB_PLAN_TRY(expr)                 \
  do {                                     \
    if (Status s_ = (expr); !s_.ok()) {    \
      return s_.error();                   \
    }                                      \
  } while (0)

inline double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Everything one plan holds between its phases.
struct PlanState {
  std::string text, filename;
  PlanOptions opt;
  PlanResult res;
  std::optional<PlanLayout> yours;
  std::shared_ptr<RunConfig> own_config;
  std::shared_ptr<const SearchProblem> own_problem;  // built once, with own_config
  PlanSearch search;  // its work in order of the cheap bound
  // The run config of each layout at work, by PlanWork::id.
  std::vector<std::shared_ptr<const RunConfig>> configs;
};

// Parses the job, enumerates the space, loads every layout (a large space's
// sample first, with its even splits tried) with its memory floor and cheap
// bound, and simulates the file's own strategy (plan_load.cpp).
Status Load(PlanState& st);

}  // namespace ppb::plan_detail
