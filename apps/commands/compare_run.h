// ppb-sim compare: one table of iteration time, bubble, peak memory and OOM
// per schedule and per variant of numeric config keys, to answer "is
// interleaving worth it here" or "what if communication were twice as slow".
//
// Every row is the simulation `ppb-sim --config FILE --schedule S
// --virtual-stages V` would run on the config edited by the row's variant:
// the variant is applied to the parsed YAML document (or, for the pipeline
// integers, as the --stages / --microbatches / --virtual-stages /
// --microbatch-group overrides) and the result goes through the usual
// loader, Prepare and the engine, so numbers agree exactly with separate runs.
//
// Rows and their order: the cross product of the --vary axes (the first axis
// outermost, values in the order given), and within each variant the
// schedules in the order given. gpipe and 1f1b run with v = 1; interleaved
// with the variant's pipeline.virtual_stages if varied, else
// --virtual-stages, else the config's v when it is >= 2, else v = 2 (said in
// the notes). The strategy is the config's when it loads for the row's
// (schedule, v, shape); otherwise the even split keeping the config's
// recompute, and failing that the even split without recompute (each said in
// the row). A combination the schedule refuses is a row with the reason.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/uncertainty.h"
#include "apps/input/vary.h"
#include "apps/output/compare_output.h"
#include "core/result.h"

namespace ppb {

struct CompareRequest {
  std::vector<std::string> schedules;  // as given; empty: every registered one
  std::vector<VaryAxis> vary;          // cross product, first axis outermost
  CliOverrides overrides;              // --stages, --microbatches,
                                       // --virtual-stages, --microbatch-group
};

// The table for the config `text` (read from `filename`). Errors (a bad
// config, --schedules or --vary) carry a complete message; those about flags
// start with "--vary" or "--schedules", e.g.
//   --vary: cluster.link.bandwidth: expected a bandwidth like 50GB/s or a
//   factor like x0.5; got 'fast'
Result<CompareTable> Compare(std::string_view text, std::string_view filename,
                             const CompareRequest& request);

// --uncertainty: the same table on each drawn machine (the config's
// hardware block edited, apps/input/uncertainty.h), summarized per row of
// `nominal` (named "schedule[ vN][ key=value ...]"). A coefficient a --vary
// axis sets is taken as the axis gives it. Errors: a config without
// hardware.gpu (key "--uncertainty").
Result<UncertaintySummary> CompareUncertainty(std::string_view text, std::string_view filename,
                                              const CompareRequest& request,
                                              const CompareTable& nominal,
                                              const UncertaintyRequest& uncertainty);

}  // namespace ppb
