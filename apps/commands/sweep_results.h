// The JSON-lines results file of a sweep (apps/output/sweep_output.h) as
// read back to resume or merge, and appended to.
//
// Reading: every line must be a complete ppb.sweep/1 row. The last line
// alone may be incomplete or malformed (a run killed while writing it, or a
// line without its '\n'): it is reported in `trailing` and, when resuming,
// cut off the file so that its point is redone. A bad line before the last
// is an error with the file and line (exit 2): it is not silently dropped.
//
// Appending: each row is one write(2) of the whole line to a file opened
// with O_APPEND, so a killed run leaves at most one partial trailing line
// and rows of concurrent writers do not interleave.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/output/sweep_output.h"
#include "core/result.h"

namespace ppb {

struct ResultsFile {
  std::vector<SweepRow> rows;     // the good lines, in file order
  std::vector<int> lines;         // 1-based line of each row
  std::uintmax_t good_bytes = 0;  // bytes up to the end of the last good line
  std::string trailing;           // "" or why the last line was not a row
  int trailing_line = 0;
};

// An absent file reads as empty. Errors: unreadable, or a bad line before
// the last ("FILE:LINE: expected a ppb.sweep/1 row; got ...").
Result<ResultsFile> ReadResults(const std::string& path);

// Cuts `path` to `bytes` (the bad trailing line of ReadResults).
Status TruncateResults(const std::string& path, std::uintmax_t bytes);

// An open results file, appended to line by line.
class ResultsWriter {
 public:
  ResultsWriter() = default;
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;
  ~ResultsWriter();
  // Opens (creating) `path` for appending; an error with the system's reason.
  Status Open(const std::string& path);
  // Writes `line` whole; an error with the system's reason.
  Status Append(const std::string& line);

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace ppb
