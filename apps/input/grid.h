// The grid file of `ppb-sim sweep` (docs/sweep.md): which dotted config keys
// vary and their values (the points are their cross product, the first key
// outermost, values in the order given), what each point runs (simulate,
// search with its limits, or compare), and the keys the summary groups by.
//
//   vary:                             # a map, in file order; each key once
//     model.hf_config: [hf/llama3-8b.json, hf/llama2-7b.json]
//     pipeline.stages: [2, 4]
//     pipeline.schedule: [1f1b, interleaved]
//     cluster.link.bandwidth: [25GB/s, x2]  # units as in the config, factors
//   run: simulate                     # simulate | search | compare, or a
//                                     # list of them (then the innermost axis)
//   search: {time_limit: 10s, node_limit: 100000, threads: 1, seed: 1}
//   compare: {schedules: [gpipe, 1f1b, interleaved]}
//   group_by: [model.hf_config]       # vary keys (or run); default: none
//
// ParseGrid checks the file's own shape: every error reads
//   grid.yaml:4: vary.pipeline.stages: expected a list of values; got a map
// (exit 2). Whether a key exists in the base config and its values are of
// the key's kind is checked against the config (apps/input/grid_plan.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/types.h"

namespace ppb {

// What one point runs.
enum class SweepRun { Simulate, Search, Compare };
const char* SweepRunName(SweepRun run);

// One axis of the grid: a dotted config key and its values, as written.
struct GridAxis {
  std::string key;
  std::vector<std::string> values;
  int line = 0;                  // 1-based line of the key in the grid file
  std::vector<int> value_lines;  // line of each value
};

struct Grid {
  std::string path;            // the grid file as given
  std::vector<GridAxis> axes;  // cross product, first outermost
  std::vector<SweepRun> runs;  // one, or several: an innermost axis "run"
  int run_line = 0;
  // search: (each unset: the base config's search block decides)
  std::optional<Nanos> time_limit;  // 0: none
  std::optional<std::int64_t> node_limit;
  int search_threads = 1;  // threads of one point's search
  std::optional<std::uint64_t> seed;
  // compare: the schedules of each point's table (empty: every one).
  std::vector<std::string> compare_schedules;
  std::vector<std::string> group_by;  // vary keys or "run"
  int group_by_line = 0;

  // Number of points (the product of the axes' sizes and runs).
  std::int64_t points() const;
};

// At most this many points in one grid.
inline constexpr std::int64_t kMaxGridPoints = 10'000'000;

Result<Grid> ParseGrid(std::string_view text, std::string_view filename);
Result<Grid> LoadGrid(const std::string& path);

// The settings of `run` that decide a point's result besides its values,
// in one canonical line ("" for simulate; "node_limit=1000 threads=1" for
// search; "schedules=gpipe,1f1b" for compare): part of a point's identity
// in a results file.
std::string RunSettings(const Grid& grid, SweepRun run);

}  // namespace ppb
