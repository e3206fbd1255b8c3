// What every libFuzzer harness of tests/fuzz does after its loader accepted
// an input: a small simulation of what loaded and every report of it (text,
// JSON, trace, SVG, HTML, torch CSV, framework emitters, model tables), all
// into strings. The JSON reports are parsed back (they must be JSON), and
// the torch CSV of the program must read back into the same program.
//
// Work is capped so that the fuzzer stays fast: a run whose shape or layer
// count is above kMaxFuzzOps / kMaxFuzzLayers is loaded and reported on as
// far as loading goes, but not simulated. (The limits users see on huge
// shapes are the loaders'; these caps only keep the fuzzer's executions per
// second up.)
//
// A broken contract aborts (FuzzCheck), so the fuzzer records the input.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "apps/input/config.h"
#include "apps/output/emit.h"
#include "apps/output/model_output.h"
#include "apps/output/output.h"
#include "apps/output/report.h"
#include "apps/output/svg.h"
#include "core/engine.h"
#include "schedules/schedule.h"

namespace ppb::fuzz {

// p * v * m (ops per op type) and layers above which nothing is simulated.
inline constexpr std::int64_t kMaxFuzzOps = 64;
inline constexpr std::size_t kMaxFuzzLayers = 128;

// Aborts with `what` when `ok` is false: a contract the fuzzer checks.
inline void FuzzCheck(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "ppb fuzz: contract broken: %s\n", what);
    std::abort();
  }
}

// Keeps the optimiser from dropping a report that is only built.
inline void Consume(const std::string& s) {
  volatile std::size_t n = s.size();
  (void)n;
}

// Every JSON report must be one valid JSON value.
inline void CheckJson(const std::string& text, const char* what) {
  FuzzCheck(nlohmann::json::accept(text), what);
}

inline bool SmallShape(int p, int v, int m, std::size_t layers) {
  return p >= 1 && v >= 1 && m >= 1 && layers <= kMaxFuzzLayers &&
         static_cast<std::int64_t>(p) * v * m <= kMaxFuzzOps;
}

inline bool SmallEnough(const RunConfig& config) {
  return SmallShape(config.shape.p, config.shape.v, config.shape.m,
                    config.layers.size());
}

// Prepares `config` (when small), simulates one iteration and builds every
// report the CLI can write of it.
inline void SimulateAndReport(const RunConfig& config) {
  Consume(DescribeSchedule(config));
  if (!config.derived.empty()) {
    Consume(FormatModelText(config));
    CheckJson(FormatModelJson(config), "FormatModelJson is JSON");
  }
  if (!SmallEnough(config)) return;
  Result<PreparedRun> run = Prepare(config);
  if (!run.ok()) {
    Consume(run.error().message);
    return;
  }
  SimOptions options;
  options.record_ops = true;
  options.record_memory = true;
  Engine engine;
  const SimResult result = engine.Run(run->spec, run->program, options);
  std::vector<CriticalStep> path;
  if (result.outcome != Outcome::Deadlock) {
    path = CriticalPath(run->spec, run->program, result);
  }
  Consume(FormatSimText(config, *run, result));
  CheckJson(FormatSimJson(config, *run, result, &path), "FormatSimJson is JSON");
  Consume(FormatCriticalPath(path));
  CheckJson(FormatChromeTrace(config, *run, result), "FormatChromeTrace is JSON");
  Consume(FormatSvg(config, *run, result));
  const SimulatedRun sim{&config, &*run, &result};
  Consume(FormatSimReport(sim));
  const std::string csv = DumpScheduleCsv(run->program);
  Result<Program> back = ParseScheduleCsv(csv);
  FuzzCheck(back.ok() && back->ops == run->program.ops,
            "DumpScheduleCsv reads back into the same program");
  std::vector<Emission> emissions;
  for (Framework f : {Framework::Megatron, Framework::MindFormers,
                      Framework::Torchtitan, Framework::DeepSpeed}) {
    Result<Emission> e = Emit(f, config, run->program);
    if (!e.ok()) {
      Consume(e.error().message);
      continue;
    }
    Result<EmittedPlan> plan = ParseEmission(f, e->text, config.layers);
    Consume(plan.ok() ? e->text : plan.error().message);
    emissions.push_back(std::move(*e));
  }
  Consume(FormatEmissionsText(emissions));
  CheckJson(AddEmissionsToJson(FormatSimJson(config, *run, result, nullptr),
                               emissions),
            "the JSON report with emissions is JSON");
}

// A file holding `data` in this process's scratch directory (loaders that
// take a path, such as model.hf_config, read it from there). Returns its
// absolute path.
inline std::string ScratchFile(const std::string& name, std::string_view data) {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() /
                              ("ppb-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::filesystem::path file = dir / name;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  FuzzCheck(out.good(), "the scratch file is written");
  return file.string();
}

}  // namespace ppb::fuzz
