// Helpers shared by the tests of --from (test_from_launch.cpp,
// test_from_torchtitan.cpp): a launch read and simulated, compared with a
// hand-written config's simulation. Included only by test_*.cpp (it uses
// Catch2).
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "apps/commands/from_launch.h"
#include "apps/input/config.h"
#include "apps/input/torchtitan_launch.h"
#include "apps/output/output.h"
#include "core/engine.h"

namespace ppb::test {

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The launch inputs of a machine file and a world size.
inline LaunchInputs Machine(const std::string& cluster_path,
                            std::optional<int> gpus = std::nullopt) {
  LaunchInputs in;
  in.cluster_path = cluster_path;
  in.cluster_text = ReadAll(cluster_path);
  in.gpus = gpus;
  return in;
}

// The simulation's JSON report with the names that differ between a
// launch and a hand-written config (path, model name, input notes) made
// equal.
inline std::string SimJson(RunConfig c) {
  c.path = "run";
  c.model_name = "model";
  c.hf_config.clear();
  c.input_notes.clear();
  c.key_lines.clear();
  Result<PreparedRun> run = Prepare(c);
  REQUIRE(run.ok());
  Engine engine;
  const SimResult r = engine.Run(run->spec, run->program, SimOptions{});
  return FormatSimJson(c, *run, r, nullptr);
}

// The launch at `path` read by `framework`'s reader and simulated.
inline std::string LaunchJson(const std::string& framework, const std::string& path,
                              const LaunchInputs& in) {
  // torchtitan main's "registry.py:FUNCTION" names the registry file.
  const std::string file = framework == "torchtitan" ? TorchtitanFile(path) : path;
  Result<commands::LaunchConfig> launch =
      commands::ReadLaunchConfig(framework, path, ReadAll(file), in);
  if (!launch.ok()) FAIL(launch.error().message);
  Result<RunConfig> c = ParseConfig(launch->yaml, path, CliOverrides());
  REQUIRE(c.ok());
  return SimJson(*c);
}

// The shipped configs (configs/ and configs/guide/), in name order, for the
// round trips of --emit then --from.
inline std::vector<std::filesystem::path> ShippedConfigs() {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(PPB_TEST_DATA_DIR) / ".." / ".." / "configs";
  std::vector<fs::path> files;
  for (const fs::path& dir : {root, root / "guide"}) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A config file's machine (its hardware: and cluster: blocks) as --cluster
// text.
inline std::string MachineOf(const std::filesystem::path& config) {
  const YAML::Node doc = YAML::LoadFile(config.string());
  YAML::Node machine;
  for (const char* key : {"hardware", "cluster"}) {
    if (doc[key]) machine[key] = doc[key];
  }
  return YAML::Dump(machine) + "\n";
}

}  // namespace ppb::test
