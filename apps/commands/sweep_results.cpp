// The results file of a sweep, read back and appended to
// (apps/commands/sweep_results.h).
#include "apps/commands/sweep_results.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ppb {

Result<ResultsFile> ReadResults(const std::string& path) {
  ResultsFile file;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return file;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in && !in.eof()) {
    return Error{"--output", path + ": must be a readable results file; got " +
                                 std::string(std::strerror(errno))};
  }
  const std::string s = text.str();
  size_t start = 0;
  int line = 0;
  while (start < s.size()) {
    ++line;
    const size_t nl = s.find('\n', start);
    const bool complete = nl != std::string::npos;
    const std::string_view body(s.data() + start, (complete ? nl : s.size()) - start);
    const size_t next = complete ? nl + 1 : s.size();
    const bool last = next >= s.size();
    Result<SweepRow> row = ParseSweepLine(body);
    if (row.ok() && complete) {
      file.rows.push_back(std::move(*row));
      file.lines.push_back(line);
      file.good_bytes = next;
    } else if (last) {
      file.trailing =
          row.ok() ? std::string("the line has no end (no newline)") : row.error().message;
      file.trailing_line = line;
    } else {
      return Error{"--output", path + ":" + std::to_string(line) + ": expected a " + kSweepSchema +
                                   " row; got a bad line (" + row.error().message +
                                   "); remove the line to redo its point"};
    }
    start = next;
  }
  return file;
}

Status TruncateResults(const std::string& path, std::uintmax_t bytes) {
  std::error_code ec;
  std::filesystem::resize_file(path, bytes, ec);
  if (ec) return Error{"--output", "cannot cut " + path + ": " + ec.message()};
  return Status();
}

ResultsWriter::~ResultsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status ResultsWriter::Open(const std::string& path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    return Error{"--output", "cannot write " + path + ": " + std::strerror(errno)};
  }
  return Status();
}

Status ResultsWriter::Append(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Error{"--output", "cannot write " + path_ + ": " +
                                   (n < 0 ? std::strerror(errno) : "the write failed")};
    }
    done += static_cast<size_t>(n);
  }
  return Status();
}

}  // namespace ppb
