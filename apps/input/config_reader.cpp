// The shared reader of config keys (apps/input/config_reader.h) and
// FormatError: where an error goes is the line of its key, else of the
// nearest enclosing key seen, else the command-line flag that set it.
#include "apps/input/config_reader.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace ppb {
namespace {

// The command-line flag that sets a config key, or empty.
std::string_view FlagFor(std::string_view key) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"pipeline.stages", "--stages"},
      {"pipeline.microbatches", "--microbatches"},
      {"pipeline.virtual_stages", "--virtual-stages"},
      {"pipeline.microbatch_group", "--microbatch-group"},
      {"pipeline.schedule", "--schedule"},
      {"pipeline.schedule_csv", "--schedule-csv"},
      {"search.schedules", "--schedules"},
      {"search.virtual_stages", "--virtual-stages-list"},
      {"search.microbatch_groups", "--microbatch-groups"},
      {"search.time_limit", "--time-limit"},
      {"search.node_limit", "--node-limit"},
      {"search.seed", "--seed"},
      {"search.threads", "--threads"},
      {"search.top", "--top"},
  };
  for (const auto& [k, flag] : kFlags) {
    if (k == key) return flag;
  }
  return {};
}

// The parent of a key path: "a.b[2]" -> "a.b", "a.b" -> "a", "a" -> "".
std::string ParentKey(const std::string& key) {
  if (!key.empty() && key.back() == ']') {
    const size_t open = key.rfind('[');
    if (open != std::string::npos) return key.substr(0, open);
  }
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? std::string() : key.substr(0, dot);
}

}  // namespace

std::string FormatError(const RunConfig& config, const Error& error) {
  if (error.key.empty()) return config.path + ": " + error.message;
  for (std::string k = error.key; !k.empty(); k = ParentKey(k)) {
    auto it = config.key_lines.find(k);
    if (it == config.key_lines.end()) continue;
    if (it->second > 0) {
      return config.path + ":" + std::to_string(it->second) + ": " + error.key +
             ": " + error.message;
    }
    const std::string_view flag = FlagFor(k);
    if (!flag.empty()) {
      return config.path + ": " + std::string(flag) + ": " + error.message;
    }
    break;
  }
  return config.path + ": " + error.key + ": " + error.message;
}

namespace config_detail {

const Entry* Find(const Entries& entries, std::string_view key) {
  for (const Entry& e : entries) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

// How a value appears in "; got ..." when it is not what was expected
// (a long scalar abbreviated, core/result.h).
std::string Given(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsScalar()) {
    return node.Scalar().empty() ? "an empty string"
                                 : Abbreviate(node.Scalar());
  }
  if (node.IsSequence()) {
    return "a list of " + std::to_string(node.size());
  }
  return "a map";
}

std::string Join(std::initializer_list<std::string_view> words) {
  return fmt::format("{}", fmt::join(words, ", "));
}

std::string Join(const std::vector<std::string>& words) {
  return fmt::format("{}", fmt::join(words, ", "));
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

namespace {

// The texts of this thread's live ScopedConfigText guards, by path: a
// command reads its config on the thread that runs it, so two threads may
// each give a text at the same path.
std::map<std::string, std::string>& Texts() {
  thread_local std::map<std::string, std::string> texts;
  return texts;
}

}  // namespace

// Reads a whole file; false (errno set) when it cannot be read. A
// directory opens as a stream that reads nothing: refused as EISDIR.
bool ReadFile(const std::string& path, std::string& out) {
  if (const auto it = Texts().find(path); it != Texts().end()) {
    out = it->second;
    return true;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    errno = EISDIR;
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return false;
  out = ss.str();
  return true;
}

ConfigReader::ConfigReader(std::string_view filename, RunConfig base)
    : cfg_(std::move(base)) {
  cfg_.path = std::string(filename);
  cfg_.key_lines.clear();
}

Error ConfigReader::Fail(const std::string& key,
                         const std::string& message) const {
  return Error{key, FormatError(cfg_, Error{key, message})};
}

std::string ConfigReader::At(const YAML::Mark& mark) const {
  return mark.line < 0 ? cfg_.path
                       : cfg_.path + ":" + std::to_string(mark.line + 1);
}

void ConfigReader::Mark(const std::string& path, const YAML::Mark& mark) {
  if (mark.line >= 0) cfg_.key_lines[path] = mark.line + 1;
}

Result<Entries> ConfigReader::Map(
    const YAML::Node& node, const std::string& path,
    std::initializer_list<std::string_view> allowed) {
  if (!node.IsMap()) {
    std::string expected = "must be a map";
    if (allowed.size() > 0) expected += " with keys " + Join(allowed);
    // The document itself (path ""): no key to name, so its line.
    if (path.empty()) return Error{"", At(node.Mark()) + ": " + expected + "; got " + Given(node)};
    return Fail(path, expected + "; got " + Given(node));
  }
  Entries entries;
  for (const auto& kv : node) {
    const std::string prefix = path.empty() ? "" : path + ".";
    if (!kv.first.IsScalar()) {
      Mark(prefix + "?", kv.first.Mark());
      return Fail(prefix + "?",
                  "must be a plain key name; got " + Given(kv.first));
    }
    Entry e{kv.first.Scalar(), prefix + kv.first.Scalar(), kv.second};
    if (Find(entries, e.key) != nullptr) {
      const int first = cfg_.key_lines[e.path];
      Mark(e.path, kv.first.Mark());
      return Fail(e.path, "must be given once; got it again (first on line " +
                              std::to_string(first) + ")");
    }
    Mark(e.path, kv.first.Mark());
    if (allowed.size() > 0 &&
        std::find(allowed.begin(), allowed.end(), e.key) == allowed.end()) {
      return Fail(e.path, "unknown key; expected one of " + Join(allowed));
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

Result<std::vector<Entry>> ConfigReader::List(const YAML::Node& node,
                                              const std::string& path,
                                              std::string_view expected) {
  if (!node.IsSequence()) {
    return Fail(path,
                "must be " + std::string(expected) + "; got " + Given(node));
  }
  std::vector<Entry> items;
  for (size_t i = 0; i < node.size(); ++i) {
    Entry e{std::to_string(i), path + "[" + std::to_string(i) + "]", node[i]};
    Mark(e.path, node[i].Mark());
    items.push_back(std::move(e));
  }
  return items;
}

Result<std::vector<Entry>> ConfigReader::RequiredList(const Entries& entries,
                                                      std::string_view key,
                                                      const std::string& path,
                                                      const std::string& noun) {
  const Entry* list = Find(entries, key);
  if (list == nullptr) {
    return Fail(path, "must be given (a list of " + noun + "); got nothing");
  }
  Result<std::vector<Entry>> items =
      List(list->value, list->path, "a non-empty list of " + noun);
  if (!items.ok()) return items.error();
  if (items->empty()) {
    return Fail(list->path, "must be a non-empty list of " + noun +
                                "; got an empty list");
  }
  return items;
}

Result<std::int64_t> ConfigReader::Integer(const YAML::Node& node,
                                           const std::string& path,
                                           std::int64_t min, std::int64_t max,
                                           std::string_view expected) {
  const std::string want = "must be " + std::string(expected);
  if (!node.IsScalar()) return Fail(path, want + "; got " + Given(node));
  const std::string& s = node.Scalar();
  std::int64_t x = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, x);
  if (s.empty() || ec == std::errc::invalid_argument || ptr != end) {
    return Fail(path, want + "; got " + Given(node));
  }
  if (ec == std::errc::result_out_of_range || x > max) {
    const std::string note =
        max == INT_MAX ? " (at most " + std::to_string(max) + ")" : "";
    return Fail(path, want + note + "; got " + Abbreviate(s));
  }
  if (x < min) return Fail(path, want + "; got " + Abbreviate(s));
  return x;
}

Result<int> ConfigReader::PositiveInt(const YAML::Node& node,
                                      const std::string& path) {
  Result<std::int64_t> r =
      Integer(node, path, 1, INT_MAX, "a positive integer");
  if (!r.ok()) return r.error();
  return static_cast<int>(*r);
}

Result<std::string> ConfigReader::String(const YAML::Node& node,
                                         const std::string& path,
                                         std::string_view expected) {
  if (!node.IsScalar() || node.Scalar().empty()) {
    return Fail(path,
                "must be " + std::string(expected) + "; got " + Given(node));
  }
  return node.Scalar();
}

Result<size_t> ConfigReader::Choice(
    const YAML::Node& node, const std::string& path,
    std::initializer_list<std::string_view> choices) {
  return Choice(node, path, std::vector<std::string>(choices.begin(), choices.end()));
}

Result<size_t> ConfigReader::Choice(const YAML::Node& node, const std::string& path,
                                   const std::vector<std::string>& choices) {
  const std::string want = "must be one of " + Join(choices);
  if (!node.IsScalar()) return Fail(path, want + "; got " + Given(node));
  const std::string value = Lower(node.Scalar());
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == value) return i;
  }
  return Fail(path, want + "; got " + Given(node));
}

Result<bool> ConfigReader::Bool(const YAML::Node& node,
                                const std::string& path) {
  if (node.IsScalar()) {
    const std::string value = Lower(node.Scalar());
    if (value == "true") return true;
    if (value == "false") return false;
  }
  return Fail(path, "must be true or false; got " + Given(node));
}

Result<double> ConfigReader::PositiveNumber(const YAML::Node& node,
                                            const std::string& path) {
  const std::string want = "must be a positive number";
  if (!node.IsScalar()) return Fail(path, want + "; got " + Given(node));
  const std::string& s = node.Scalar();
  double x = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, x);
  if (s.empty() || ec != std::errc() || ptr != end || !std::isfinite(x) ||
      !(x > 0)) {
    return Fail(path, want + "; got " + Given(node));
  }
  return x;
}

Result<double> ConfigReader::Share(const YAML::Node& node, const std::string& path,
                                   double max, std::string_view expected) {
  double x = -1;
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, x);
    if (s.empty() || ec != std::errc() || ptr != end) x = -1;
  }
  if (!(x >= 0.0 && x <= max)) {
    return Fail(path, "must be " + std::string(expected) + "; got " + Given(node));
  }
  return x;
}

Result<double> ConfigReader::Speed(const YAML::Node& node,
                                   const std::string& path) {
  Result<double> x = PositiveNumber(node, path);
  if (!x.ok()) return x;
  if (*x < kMinSpeed || *x > kMaxSpeed) {
    return Fail(path, "must be a relative speed in " + std::string(kSpeedRangeText) + "; got " +
                          Given(node));
  }
  return x;
}

Result<Nanos> ConfigReader::Duration(const YAML::Node& node,
                                     const std::string& path, bool positive,
                                     Nanos max, std::string_view max_text) {
  return UnitValue(node, path, ParseDuration, "duration", positive, max,
                   max_text);
}

Result<Bytes> ConfigReader::Size(const YAML::Node& node,
                                 const std::string& path, bool positive) {
  return UnitValue(node, path, ParseBytes, "size", positive, kMaxSize,
                   kMaxSizeText);
}

Result<BytesPerSec> ConfigReader::Bandwidth(const YAML::Node& node,
                                            const std::string& path) {
  return UnitValue(node, path, ParseBandwidth, "bandwidth", true,
                   std::numeric_limits<std::int64_t>::max(), "");
}

}  // namespace config_detail

ScopedConfigText::ScopedConfigText(std::string path, std::string text) : path_(std::move(path)) {
  config_detail::Texts()[path_] = std::move(text);
}

ScopedConfigText::~ScopedConfigText() { config_detail::Texts().erase(path_); }

bool ReadTextFile(const std::string& path, std::string& out) {
  return config_detail::ReadFile(path, out);
}

}  // namespace ppb
