#include "apps/input/sourced_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "apps/input/config_reader.h"

namespace ppb {

Result<SourcedFile> ReadSourcedFile(const std::string& script_path, const std::string& name) {
  namespace fs = std::filesystem;
  fs::path file(name);
  std::string tried;
  std::error_code ec;
  fs::file_status st = fs::status(file, ec);
  if (file.is_relative() && (ec || !fs::exists(st))) {
    const fs::path in_folder = fs::path(script_path).parent_path() / file;
    if (in_folder != file) {
      tried = file.string() + " from the working directory, then ";
      file = in_folder;
      st = fs::status(file, ec);
    }
  }
  const std::string shown = file.string();
  auto refuse = [&](const std::string& why) {
    return Error{"", fmt::format("must name a readable file (a relative path from the working "
                                 "directory or the script's folder); got {} ({}{}: {})",
                                 name, tried, shown, why)};
  };
  if (ec || !fs::exists(st)) return refuse("no such file");
  if (!fs::is_regular_file(st)) return refuse("not a regular file");
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec) return refuse(ec.message());
  if (size > kMaxSourcedBytes) {
    return refuse(fmt::format("{} bytes, more than the {} ppb reads", size, kMaxSourcedBytes));
  }
  SourcedFile out;
  out.path = shown;
  // An empty file has nothing to run; /proc's files report 0 bytes and
  // are not read (one may block).
  if (size == 0) return out;
  errno = 0;
  if (!config_detail::ReadFile(shown, out.text)) {
    return refuse(errno != 0 ? std::strerror(errno) : "read error");
  }
  return out;
}

}  // namespace ppb
