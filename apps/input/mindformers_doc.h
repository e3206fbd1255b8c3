// What the MindFormers reader (apps/input/mindformers_launch.cpp,
// mindformers_model.cpp) shares: the training YAML's keys by dotted path,
// each placed at its line and remembered as read, and the one way a
// refusal leaves (Bad, caught by ReadMindFormersLaunch). Internal to
// apps/input/mindformers_*.cpp.
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ppb::mindformers_detail {

inline constexpr const char* kVersion = "MindFormers master at f52743ca";
// The largest degree, count or batch read (2^20), so that their products
// (the world, the global batch) stay far inside int64.
inline constexpr std::int64_t kMaxInt = std::int64_t{1} << 20;

struct Bad {
  std::string message;
};
[[noreturn]] inline void Fail(std::string message) { throw Bad{std::move(message)}; }

// A ppb config's bool.
inline std::string Bool(bool b) { return b ? "true" : "false"; }

// The YAML, each key looked up by its dotted path and remembered as read.
class Doc {
 public:
  Doc(std::string path, YAML::Node root) : path_(std::move(path)), root_(std::move(root)) {}

  const std::string& path() const { return path_; }

  // The node at `key` ("parallel_config.data_parallel"), or an undefined
  // node; marks it read.
  YAML::Node Get(const std::string& key) {
    YAML::Node n = Find(key);
    if (n.IsDefined()) read_.insert(key);
    return n;
  }
  bool Has(const std::string& key) const { return Find(key).IsDefined(); }
  void MarkRead(const std::string& key) { read_.insert(key); }

  // "file:LINE" of the value at `key`, or the file alone.
  std::string Line(const std::string& key) const {
    YAML::Mark mark = YAML::Mark::null_mark();
    const YAML::Node n = Find(key, &mark);
    if (!n.IsDefined() || mark.line < 0) return path_;
    return fmt::format("{}:{}", path_, mark.line + 1);
  }

  [[noreturn]] void Wrong(const std::string& key, const std::string& want) const {
    Fail(fmt::format("{}: {}: must be {}; got {}", Line(key), key, want, Given(Find(key))));
  }

  std::int64_t Int(const std::string& key, std::int64_t fallback, std::int64_t lo,
                   const std::string& want) {
    const YAML::Node n = Get(key);
    if (!n.IsDefined() || n.IsNull()) return fallback;
    const std::optional<std::int64_t> v = AsInt(n);
    if (!v || *v < lo || *v > kMaxInt) Wrong(key, fmt::format("{} (at most {})", want, kMaxInt));
    return *v;
  }
  bool Bool(const std::string& key, bool fallback) {
    const YAML::Node n = Get(key);
    if (!n.IsDefined() || n.IsNull()) return fallback;
    const std::optional<bool> b = AsBool(n);
    if (!b) Wrong(key, "a bool (True or False)");
    return *b;
  }
  std::string Str(const std::string& key, const std::string& fallback) {
    const YAML::Node n = Get(key);
    if (!n.IsDefined() || n.IsNull()) return fallback;
    if (!n.IsScalar()) Wrong(key, "a string");
    return n.Scalar();
  }

  // The keys of the map at `section` not read ("section.key"), and for the
  // root the top-level keys none of whose keys were read.
  std::vector<std::string> Unread(const std::string& section) const {
    std::vector<std::string> out;
    const YAML::Node n = section.empty() ? root_ : Find(section);
    if (!n.IsMap()) return out;
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      const std::string full = section.empty() ? k : section + "." + k;
      bool any = false;
      for (const std::string& r : read_) {
        if (r == full || r.rfind(full + ".", 0) == 0) any = true;
      }
      if (!any) out.push_back(full);
    }
    return out;
  }

  static std::optional<std::int64_t> AsInt(const YAML::Node& n) {
    if (!n.IsScalar()) return std::nullopt;
    const std::string& s = n.Scalar();
    if (s.empty() || s.size() > 18) return std::nullopt;
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == s.size()) return std::nullopt;
    for (size_t k = i; k < s.size(); ++k) {
      if (std::isdigit(static_cast<unsigned char>(s[k])) == 0) return std::nullopt;
    }
    return std::stoll(s);
  }
  static std::optional<bool> AsBool(const YAML::Node& n) {
    if (!n.IsScalar()) return std::nullopt;
    const std::string& s = n.Scalar();
    if (s == "True" || s == "true" || s == "TRUE") return true;
    if (s == "False" || s == "false" || s == "FALSE") return false;
    return std::nullopt;
  }
  static std::string Given(const YAML::Node& n) {
    if (!n.IsDefined()) return "nothing";
    if (n.IsNull()) return "None";
    if (n.IsScalar()) return "'" + n.Scalar() + "'";
    if (n.IsSequence()) return "a list";
    return "a map";
  }

 private:
  // The node at `key`; `key_mark`, when given, gets its key's place.
  YAML::Node Find(const std::string& key, YAML::Mark* key_mark = nullptr) const {
    YAML::Node cur = root_;
    size_t start = 0;
    while (true) {
      const size_t dot = key.find('.', start);
      const std::string part =
          key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!cur.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
      YAML::Node next(YAML::NodeType::Undefined);
      for (const auto& kv : cur) {
        if (kv.first.IsScalar() && kv.first.Scalar() == part) {
          next.reset(kv.second);
          if (key_mark != nullptr) *key_mark = kv.first.Mark();
          break;
        }
      }
      if (!next.IsDefined()) return next;
      if (dot == std::string::npos) return next;
      cur.reset(next);
      start = dot + 1;
    }
  }

  std::string path_;
  YAML::Node root_;
  std::set<std::string> read_;
};

}  // namespace ppb::mindformers_detail
