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
#include "core/engine.h"
#include "core/result.h"
#include "core/types.h"

namespace ppb {

// One --vary axis: a config key and the values it takes.
struct VaryAxis {
  std::string key;                  // dotted key as given
  std::vector<std::string> values;  // as given: "25GB/s" or a factor "x0.5"
};

// Parses "KEY=V1,V2,..." (the syntax only; keys and values are checked by
// Compare). Errors read "--vary: expected KEY=V1,V2,...; got 'foo'".
Result<VaryAxis> ParseVary(std::string_view text);

struct CompareRequest {
  std::vector<std::string> schedules;  // as given; empty: every registered one
  std::vector<VaryAxis> vary;          // cross product, first axis outermost
  CliOverrides overrides;              // --stages, --microbatches,
                                       // --virtual-stages, --microbatch-group
};

// One (variant, schedule) of the table.
struct CompareRow {
  int variant = 0;       // index into CompareTable::variants
  std::string schedule;  // registry name
  int p = 0, v = 1, m = 0;
  int group = 0;       // g interleaved uses (0 otherwise)
  bool ran = false;    // false: the schedule refused it
  std::string reason;  // why not ("pipeline.microbatches: ...")
  // The strategy used: the config's split (layers_per_chunk, layout or
  // offset) or the even split; its recompute or none.
  bool config_split = false;          // the config gives a split and it applied
  bool split_fallback = false;        // the config's split did not apply
  bool recompute_fallback = false;    // nor did its recompute: none used
  bool config_recompute = false;      // the config's strategy.recompute used
  std::string fallback_reason;        // the loader's reason, when a fallback
  std::vector<int> layers_per_stage;  // size p*v
  int recomputed_layers = 0;
  // The simulation (when ran).
  Outcome outcome = Outcome::Ok;
  Nanos iteration_time = 0;
  Nanos idle_total = 0;         // idle summed over ranks
  double bubble_fraction = 0;   // idle_total / (p * iteration_time)
  Bytes max_peak = 0;           // largest peak memory of any rank
  int max_peak_rank = 0;        // the first rank with it
  Bytes max_peak_capacity = 0;  // that rank's capacity
  std::vector<int> oom_ranks;
};

struct CompareTable {
  std::string config_path;
  std::string model_name;
  std::vector<VaryAxis> vary;
  // variants[i][k]: the value of axis k in variant i (as given).
  std::vector<std::vector<std::string>> variants;
  std::vector<std::string> schedules;  // registry names, in order
  std::vector<std::string> notes;      // e.g. the v interleaved runs with
  std::vector<CompareRow> rows;
};

// The table for the config `text` (read from `filename`). Errors (a bad
// config, --schedules or --vary) carry a complete message; those about flags
// start with "--vary" or "--schedules", e.g.
//   --vary: cluster.link.bandwidth: expected a bandwidth like 50GB/s or a
//   factor like x0.5; got 'fast'
Result<CompareTable> Compare(std::string_view text, std::string_view filename,
                             const CompareRequest& request);

// Speed-ups of row `i` (time of the reference / time of the row): against
// the first schedule of the same variant, and against the same schedule in
// the first variant; 0 when either did not run to completion.
double SpeedupVsFirstSchedule(const CompareTable& table, size_t i);
double SpeedupVsFirstVariant(const CompareTable& table, size_t i);

// An aligned table with notes; JSON with "schema": "ppb.compare/1"; CSV
// (RFC 4180: a header row, one row per (variant, schedule), CRLF).
std::string FormatCompareText(const CompareTable& table);
std::string FormatCompareJson(const CompareTable& table);
std::string FormatCompareCsv(const CompareTable& table);

}  // namespace ppb
