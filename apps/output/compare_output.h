// The tables of `ppb-sim compare` (one row per variant and schedule) and
// their output: aligned text with notes, JSON ("schema": "ppb.compare/1")
// and CSV. Pure functions: same table, same bytes.
#pragma once

#include <string>
#include <vector>

#include "apps/input/vary.h"
#include "core/engine.h"
#include "core/types.h"

namespace ppb {

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
  // With a derived model (core/step_metrics.h): the step's throughput, so
  // layouts on different GPU counts compare; 0 gpus without one.
  std::int64_t gpus = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
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

// One RFC 4180 field: quoted when it holds a comma, a quote or a line break
// (also used by the sweep's CSV).
std::string CsvField(const std::string& s);

}  // namespace ppb

