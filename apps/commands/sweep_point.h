// One point of a sweep, evaluated: the base config with the point's edits
// (apps/input/grid_plan.h) loaded, then what the point runs:
//   simulate: the simulation `ppb-sim simulate` runs on that config with
//     the point's pipeline overrides. The strategy is the config's when it
//     loads for the point's shape; else the even split with its recompute,
//     else without (said in `note`), as `ppb-sim compare` does.
//   search: `ppb-sim search` on it, with the grid's search limits (and the
//     same strategy fallback, which only matters for loading: the search
//     chooses the split and recompute). Proof or bound and gap as the
//     search reports them; a time limit makes the answer depend on speed.
//   compare: `ppb-sim compare` on it (compare.schedules); the figures are
//     the fastest schedule that fits (else the fastest that runs).
// A point that does not load, that the schedule refuses or that the
// search refuses is a row of status "refused" with the reason, never an
// error. Safe to call from several threads at once (no shared state).
#pragma once

#include "apps/input/grid_plan.h"
#include "apps/output/sweep_output.h"

namespace ppb {

SweepRow EvaluatePoint(const SweepPlan& plan, const SweepPoint& point);

}  // namespace ppb
