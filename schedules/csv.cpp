// torch schedule CSV (torch.distributed.pipelining PipelineScheduleMulti
// _load_csv / _dump_csv; torchtitan's pipeline_parallel_schedule_csv): row r
// is rank r's actions in execution order, comma-separated.
//
// Reading follows Python's csv.reader on those files, with these details:
//   - lines end in "\n" or "\r\n"; a leading UTF-8 byte order mark is skipped;
//   - a blank line inside the file is a rank with no ops; blank lines at the
//     end of the file (after the last non-blank line) are not ranks;
//   - cells are trimmed of spaces and tabs and may be wrapped in double
//     quotes; an empty cell (also from a trailing comma) is an idle step;
//   - communication and FSDP actions (SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD,
//     RESHARD, REDUCE_GRAD, e.g. "1SEND_F0") are skipped;
//   - an overlapped forward+backward is torch's OVERLAP_F_B action with its
//     sub-actions, "(4F4;3B0)OVERLAP_F_B" (torch _Action.__repr__ /
//     from_str, v2.14.1; ScheduleDualPipeV): an F and then a B or I, read
//     as the F with Op::paired set followed by the backward;
//   - "column" in errors is the 1-based cell number within the line.
#include <array>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/schedule.h"

namespace ppb {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

bool IsDigits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// True for torch's non-compute actions: "<stage><NAME>[<microbatch>]".
bool IsCommAction(std::string_view cell) {
  static constexpr std::array<std::string_view, 7> kNames = {
      "SEND_F",  "RECV_F",  "SEND_B",     "RECV_B",
      "UNSHARD", "RESHARD", "REDUCE_GRAD"};
  size_t n = 0;
  while (n < cell.size() && cell[n] >= '0' && cell[n] <= '9') ++n;
  if (n == 0) return false;
  std::string_view rest = cell.substr(n);
  for (std::string_view name : kNames) {
    if (rest.starts_with(name) && IsDigits(rest.substr(name.size()))) {
      return true;
    }
  }
  return false;
}

// Splits `text` into lines without their "\n" / "\r\n"; the empty piece
// after a final newline is not a line.
std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

constexpr std::string_view kOverlap = "OVERLAP_F_B";

// "(<F action>;<B or I action>)OVERLAP_F_B" -> the two ops, the F paired.
Result<std::pair<Op, Op>> ParseOverlap(std::string_view cell) {
  const Error bad{"", "expected an overlapped action like (4F4;3B0)" +
                          std::string(kOverlap) +
                          " (an F and then a B or I); got '" +
                          std::string(cell) + "'"};
  const size_t close = cell.find(')');
  if (close == std::string_view::npos || cell.substr(close + 1) != kOverlap) {
    return bad;
  }
  const std::string_view inner = cell.substr(1, close - 1);
  const size_t semi = inner.find(';');
  if (semi == std::string_view::npos) return bad;
  Result<Op> f = ParseAction(Trim(inner.substr(0, semi)));
  Result<Op> b = ParseAction(Trim(inner.substr(semi + 1)));
  if (!f.ok() || !b.ok() || f->kind != OpKind::F ||
      (b->kind != OpKind::B && b->kind != OpKind::I)) {
    return bad;
  }
  f->paired = true;
  return std::pair<Op, Op>{*f, *b};
}

}  // namespace

Result<Program> ParseScheduleCsv(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.starts_with(kBom)) text.remove_prefix(kBom.size());
  std::vector<std::string_view> lines = SplitLines(text);
  while (!lines.empty() && Trim(lines.back()).empty()) lines.pop_back();

  Program program;
  program.ops.resize(lines.size());
  for (size_t row = 0; row < lines.size(); ++row) {
    std::string_view line = lines[row];
    size_t column = 1;
    while (true) {
      const size_t comma = line.find(',');
      std::string_view cell = Trim(line.substr(0, comma));
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
        cell = Trim(cell.substr(1, cell.size() - 2));
      }
      if (cell.starts_with("(")) {
        Result<std::pair<Op, Op>> pair = ParseOverlap(cell);
        if (!pair.ok()) {
          return Error{"", "line " + std::to_string(row + 1) + ", column " +
                               std::to_string(column) + ": " +
                               pair.error().message};
        }
        program.ops[row].push_back(pair->first);
        program.ops[row].push_back(pair->second);
      } else if (!cell.empty() && !IsCommAction(cell)) {
        Result<Op> op = ParseAction(cell);
        if (!op.ok()) {
          return Error{"", "line " + std::to_string(row + 1) + ", column " +
                               std::to_string(column) + ": " +
                               op.error().message};
        }
        program.ops[row].push_back(*op);
      }
      if (comma == std::string_view::npos) break;
      line.remove_prefix(comma + 1);
      ++column;
    }
  }
  return program;
}

// One line per device, compute ops only. ParseScheduleCsv reads it back to
// the same program, except that empty devices at the end (blank last lines)
// are dropped; a generated program has ops on every device.
std::string DumpScheduleCsv(const Program& program) {
  std::string out;
  for (const std::vector<Op>& device_ops : program.ops) {
    for (size_t i = 0; i < device_ops.size(); ++i) {
      if (i > 0) out += ',';
      if (device_ops[i].paired && i + 1 < device_ops.size()) {
        // Appended piece by piece: a chain of operator+ here trips GCC 12's
        // -Wrestrict false positive in Release (-O3 inlining).
        out += '(';
        out += ActionString(device_ops[i]);
        out += ';';
        out += ActionString(device_ops[i + 1]);
        out += ')';
        out += kOverlap;
        ++i;
        continue;
      }
      out += ActionString(device_ops[i]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace ppb
