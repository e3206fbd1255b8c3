// PlaceLaunchError (apps/input/launch_run.h).
#include "apps/input/launch_run.h"

#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <cctype>

#include "apps/input/text_lines.h"

namespace ppb {

std::string PlaceLaunchError(const LaunchRun& run, std::string_view yaml_path,
                             const std::string& message) {
  const std::string prefix = std::string(yaml_path) + ":";
  if (message.compare(0, prefix.size(), prefix) != 0) return message;
  size_t k = prefix.size();
  int line = 0;
  while (k < message.size() && std::isdigit(static_cast<unsigned char>(message[k]))) {
    line = line * 10 + (message[k] - '0');
    if (line > 1'000'000) return message;
    ++k;
  }
  if (k == prefix.size() || message.compare(k, 2, ": ") != 0) return message;
  const std::string rest = message.substr(k + 2);
  const std::string origin = line >= 1 && static_cast<size_t>(line) <= run.origins.size() &&
                                     !run.origins[static_cast<size_t>(line) - 1].empty()
                                 ? run.origins[static_cast<size_t>(line) - 1]
                                 : std::string(yaml_path);
  const size_t colon = rest.find(": ");
  if (colon == std::string::npos) return origin + ": " + rest;
  return origin + " (read as ppb " + rest.substr(0, colon) + "): " + rest.substr(colon + 2);
}

void ConfigWriter::Text(int indent, const std::string& key, const std::string& value,
                        const std::string& origin) {
  std::string q = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  Line(indent, key + ": " + q + "\"", origin);
}

void ConfigWriter::Copy(std::string_view text, const std::string& path) {
  ForEachLine(text, [&](std::string_view l, int line) {
    Line(0, l == "---" || l == "..." ? "# " + std::string(l) : std::string(l),
         fmt::format("{}:{}", path, line));
    return true;
  });
}

void FinishLaunch(LaunchRun& run, ConfigWriter& o, const std::vector<std::string>& ignored) {
  if (!ignored.empty()) {
    run.notes.push_back(
        fmt::format("ignored (ppb does not model them): {}", fmt::join(ignored, " ")));
  }
  run.yaml = std::move(o.yaml_);
  run.origins = std::move(o.origins_);
}

Status WriteCluster(ConfigWriter& o, const LaunchInputs& in, const std::string& path) {
  if (in.cluster_path.empty()) {
    return Error{
        "", fmt::format("{}: the machine: must be given with --cluster FILE (a YAML file with a "
                        "hardware: block, such as \"hardware: {{gpu: h100-sxm}}\"; a launch does "
                        "not name its GPU); got nothing",
                        path)};
  }
  {
    YAML::Node root;
    try {
      root = YAML::Load(in.cluster_text);
    } catch (const YAML::Exception& e) {
      return Error{"", fmt::format("{}:{}: must be valid YAML; got a syntax error ({})",
                                   in.cluster_path, e.mark.line + 1, e.msg)};
    }
    if (!root.IsMap() || !root["hardware"]) {
      return Error{
          "", fmt::format("{}: must be a map with a hardware: block (and optionally cluster:); "
                          "got {}",
                          in.cluster_path, root.IsMap() ? "no hardware key" : "no map")};
    }
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>("");
      if (key != "hardware" && key != "cluster") {
        return Error{"",
                     fmt::format("{}:{}: {}: must be hardware or cluster (the rest comes from the "
                                 "launch); got {}",
                                 in.cluster_path, kv.first.Mark().line + 1, key, key)};
      }
    }
    if (root.Style() == YAML::EmitterStyle::Flow) {
      // {hardware: {...}}: each key written again as "key: value".
      for (const auto& kv : root) {
        YAML::Emitter e;
        e << YAML::Flow << kv.second;
        o.Line(0, kv.first.as<std::string>("") + ": " + e.c_str(),
               fmt::format("{}:{}", in.cluster_path, kv.first.Mark().line + 1));
      }
    } else {
      o.Copy(in.cluster_text, in.cluster_path);
    }
  }
  return Status();
}

}  // namespace ppb
