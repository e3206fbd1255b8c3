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
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/commands/from_launch.h"
#include "apps/input/config.h"
#include "apps/input/torchtitan_launch.h"
#include "apps/output/emit.h"
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

// The H100 machine of configs/megatron/h100.yaml, with a world size.
inline LaunchInputs H100(std::optional<int> gpus = std::nullopt);

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

inline LaunchInputs H100(std::optional<int> gpus) {
  return Machine(std::string(PPB_TEST_DATA_DIR) + "/../../configs/megatron/h100.yaml", gpus);
}

// A ppb config file loaded and simulated.
inline std::string FileJson(const std::string& path) {
  Result<RunConfig> c = LoadConfig(path, CliOverrides());
  if (!c.ok()) FAIL(c.error().message);
  return SimJson(*c);
}

// A file of tests/data/torchtitan; the simulation of a hand-written config
// there; a TOML text read as a torchtitan launch ("run.toml") on the H100
// machine.
inline std::string TorchtitanData(const std::string& name) {
  return std::string(PPB_TEST_DATA_DIR) + "/torchtitan/" + name;
}
inline std::string TorchtitanConfigJson(const std::string& file) {
  return FileJson(TorchtitanData(file));
}
inline Result<commands::LaunchConfig> TorchtitanToml(const std::string& text,
                                                     std::optional<int> gpus = std::nullopt) {
  return commands::ReadLaunchConfig("torchtitan", "run.toml", text, H100(gpus));
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

// --emit `emit`, then --from `framework` on what it wrote (read as `path`):
// the simulation JSONs of what was read back and of the config. Empty when
// the emission is refused, does not express the recompute, or its text
// holds one of `cannot` (`why` says which). `wrap` turns the emitted text
// into the file read (torchtitan main's form into a config function).
inline std::pair<std::string, std::string> EmitReadBack(
    const RunConfig& c, Framework emit, const std::string& framework, const std::string& path,
    const std::string& machine, const std::vector<std::string>& cannot, std::string& why,
    const std::function<std::string(const std::string&)>& wrap = nullptr) {
  Result<PreparedRun> run = Prepare(c);
  REQUIRE(run.ok());
  Result<Emission> e = Emit(emit, c, run->program);
  if (!e.ok()) {
    why = e.error().message;
    return {};
  }
  const bool refused = std::any_of(cannot.begin(), cannot.end(), [&](const std::string& s) {
    return e->text.find(s) != std::string::npos;
  });
  if (!e->recompute_expressed || refused) {
    why = "not expressed";
    return {};
  }
  LaunchInputs in;
  in.cluster_path = "machine.yaml";
  in.cluster_text = machine;
  const Training& t = c.training;
  in.gpus = static_cast<int>(t.tp * t.cp * c.shape.p * t.dp);
  Result<commands::LaunchConfig> back =
      commands::ReadLaunchConfig(framework, path, wrap ? wrap(e->text) : e->text, in);
  INFO(e->text);
  if (!back.ok()) FAIL(back.error().message);
  Result<RunConfig> b = ParseConfig(back->yaml, path, CliOverrides());
  REQUIRE(b.ok());
  return {SimJson(*b), SimJson(c)};
}

// Every shipped config with a derived model through `round_trip(config,
// machine, why)` (an EmitReadBack), each read-back checked equal; returns
// how many were compared, the others in `skipped` with their reasons.
template <class RoundTripFn>
int ShippedRoundTrips(RoundTripFn round_trip, std::vector<std::string>& skipped) {
  int compared = 0;
  for (const std::filesystem::path& f : ShippedConfigs()) {
    Result<RunConfig> c = LoadConfig(f.string(), CliOverrides());
    if (!c.ok() || c->derived.empty()) continue;
    std::string why;
    const auto [back, original] = round_trip(*c, MachineOf(f), why);
    INFO(f.filename().string());
    if (back.empty()) {
      skipped.push_back(f.filename().string() + ": " + why);
      continue;
    }
    CHECK(back == original);
    ++compared;
  }
  return compared;
}

}  // namespace ppb::test
