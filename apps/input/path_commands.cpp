#include "apps/input/path_commands.h"

#include <filesystem>
#include <system_error>

namespace ppb {
namespace {

std::string StripSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// POSIX dirname: the path without its last component; "." when it has no
// slash, "/" for the root.
std::string Dirname(const std::string& path) {
  std::string p = StripSlashes(path);
  if (p == "/") return p;
  const size_t slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  p = StripSlashes(p.substr(0, slash));
  return p.empty() ? "/" : p;
}

// POSIX basename: the last component, less SUFFIX when it ends with it and
// is not all of it.
std::string Basename(const std::string& path, const std::string& suffix) {
  std::string p = StripSlashes(path);
  if (p == "/") return p;
  const size_t slash = p.find_last_of('/');
  if (slash != std::string::npos) p = p.substr(slash + 1);
  if (!suffix.empty() && p.size() > suffix.size() &&
      p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0) {
    p.resize(p.size() - suffix.size());
  }
  return p;
}

std::optional<std::string> Resolved(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p =
      std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) return std::nullopt;
  return StripSlashes(p.string());  // weakly_canonical keeps the slash of a trailing ..
}

}  // namespace

std::optional<std::string> PathCommand(const std::vector<std::string>& words) {
  if (words.empty()) return std::nullopt;
  const std::string& c = words[0];
  const size_t n = words.size();
  if (c == "pwd" && n == 1) {
    std::error_code ec;
    const std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (ec) return std::nullopt;
    return cwd.string();
  }
  if (c == "dirname" && n == 2 && !words[1].empty()) return Dirname(words[1]);
  if (c == "basename" && (n == 2 || n == 3) && !words[1].empty()) {
    return Basename(words[1], n == 3 ? words[2] : "");
  }
  if (c == "readlink" && n == 3 && words[1] == "-f" && !words[2].empty()) {
    return Resolved(words[2]);
  }
  if (c == "realpath" && n == 2 && !words[1].empty()) return Resolved(words[1]);
  return std::nullopt;
}

}  // namespace ppb
