// The tables of a sweep (docs/sweep.md), from its rows in any order (each
// is sorted by point first, so the output does not depend on which worker
// finished first):
//   - the summary: per group (the values of the grid's group_by keys, in
//     order of first appearance; one group "all" without group_by) the
//     number of points, how many fit, and the best point: the fitting one
//     with the shortest iteration time (ties: the lower point index), with
//     its values, time, bubble, peak memory, strategy and proof; text, CSV
//     or JSON (schema ppb.sweep-summary/1);
//   - the per-point table (text or CSV) that `ppb-sim sweep` prints without
//     --output when asked for text or CSV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/output/sweep_output.h"

namespace ppb {

struct SweepTableInfo {
  std::vector<std::string> axes;      // the vary keys, in grid order
  std::vector<std::string> group_by;  // the grid's group_by
  std::int64_t points = 0;            // points of the grid (or of the shard)
};

std::string FormatSweepSummaryText(std::vector<SweepRow> rows, const SweepTableInfo& info);
std::string FormatSweepSummaryCsv(std::vector<SweepRow> rows, const SweepTableInfo& info);
std::string FormatSweepSummaryJson(std::vector<SweepRow> rows, const SweepTableInfo& info);

// The per-point CSV: its header line, and one line per row.
std::string SweepCsvHeader(const SweepTableInfo& info);
std::string SweepCsvRow(const SweepRow& row);
// The per-point text table: header and one line per row.
std::string SweepTextHeader(const SweepTableInfo& info);
std::string SweepTextRow(const SweepRow& row);

}  // namespace ppb
