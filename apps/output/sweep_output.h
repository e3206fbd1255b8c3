// One point of a `ppb-sim sweep` as a result (SweepRow) and as one line of
// the results file (schema ppb.sweep/1, docs/sweep.md): a JSON object on one
// line, keys in a fixed order, no timings of the run itself, so that the
// same point gives the same bytes on any machine, thread or rank.
//
//   {"schema":"ppb.sweep/1","point":3,"points":8,"config_hash":"fnv1a64:...",
//    "run":"simulate","settings":"","values":{"pipeline.stages":"4"},
//    "status":"ok","reason":"","note":"","iteration_time_ns":...,
//    "iteration_time_ms":...,"bubble":0.18,"peak_memory_bytes":...,
//    "peak_capacity_bytes":...,"peak_rank":0,"fits":true,
//    "strategy":"1f1b v=1 | layers 9,8,8,9 | recompute 0 layers",
//    "proof":"simulated","gap":null,"lower_bound_ns":null}
//
// status: ok (runs and fits), oom (runs, some rank over its memory),
// deadlock, no_fit (search: nothing fits), refused (the point's combination
// does not load or the schedule refuses it; `reason` says why). A point's
// identity (SweepKey) is its config hash, run, settings and values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/types.h"

namespace ppb {

inline constexpr const char* kSweepSchema = "ppb.sweep/1";

struct SweepRow {
  std::int64_t point = 0;   // index in the grid's cross product
  std::int64_t points = 0;  // the grid's number of points
  std::string config_hash;
  std::string run;                                          // simulate | search | compare
  std::string settings;                                     // the run's settings (RunSettings)
  std::vector<std::pair<std::string, std::string>> values;  // in grid order
  std::string status;  // ok | oom | deadlock | no_fit | refused
  std::string reason;  // refused: why
  std::string note;    // e.g. the strategy fallback taken
  bool ran = false;    // the figures below are set
  Nanos iteration_time = 0;
  double bubble = 0;      // fraction of the iteration
  Bytes peak_memory = 0;  // the largest peak of any rank
  Bytes peak_capacity = 0;
  int peak_rank = -1;
  bool fits = false;
  std::string strategy;  // the schedule, split and recompute of the figures
  std::string proof;     // simulated | proved optimal | gap ... | ...
  std::optional<double> gap;
  std::optional<Nanos> lower_bound;
};

// The line of `row`, ending in '\n'.
std::string SweepLine(const SweepRow& row);

// The row of one line (without its '\n'); an error (message only, no place)
// when it is no complete ppb.sweep/1 row.
Result<SweepRow> ParseSweepLine(std::string_view line);

// A point's identity in a results file: its config hash, run, settings and
// values (in order).
std::string SweepKey(const SweepRow& row);

// The value of dotted key `key` in the row ("run" is its run), or "".
std::string RowValue(const SweepRow& row, const std::string& key);

}  // namespace ppb
