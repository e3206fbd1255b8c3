// The HTML report of `ppb-sim --report` and `ppb-sim search --report`: one
// self-contained page (inline CSS and SVG, no scripts, fonts or other
// network resources) with the summary, the bubble breakdown (pipeline and
// per device, with its explanation), the per-device table and the picture
// of apps/svg.h; after a search also the recommendation, the search's
// figures (proved optimal, or lower bound and gap; nodes, evaluations,
// time, seed), the top alternatives and the baselines. All text is
// HTML-escaped. Pure formatting, same inputs same bytes.
#pragma once

#include <string>

#include "apps/input/config.h"
#include "apps/output/plan_output.h"
#include "apps/output/search_output.h"
#include "core/engine.h"

namespace ppb {

// One simulated strategy to show in a report: its config (the run's, or the
// search's with the strategy filled in), the prepared run and its
// simulation with record_ops and record_memory.
struct SimulatedRun {
  const RunConfig* config = nullptr;
  const PreparedRun* run = nullptr;
  const SimResult* result = nullptr;
};

// The report of one simulation.
std::string FormatSimReport(const SimulatedRun& sim);

// The report of a search. `shown` is the simulation drawn and broken down:
// the recommendation, or when nothing fits a baseline, which `shown_note`
// names (e.g. "nothing fits; shown: baseline even split, no recompute").
std::string FormatSearchReport(const RunConfig& config, const SearchReport& report,
                               const SimulatedRun& shown, const std::string& shown_note);

// The report of `ppb-sim plan`: the answer and its proof or gap, the
// space's counts, the top layouts, the fastest step found per (tensor
// parallel, pipeline parallel) as a shaded table, and the best layout
// simulated (`best`, when one fits).
std::string FormatPlanReport(const PlanResult& plan, const SimulatedRun& best);

}  // namespace ppb
