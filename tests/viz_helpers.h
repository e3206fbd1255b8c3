// Helpers shared by the tests of the pictures and the bubble breakdown
// (test_viz.cpp, test_breakdown.cpp): schedules run with everything
// recorded, the breakdown's sums checked, shipped configs simulated.
// Included only by test_*.cpp (it uses Catch2).
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <utility>

#include "apps/output/output.h"
#include "core/breakdown.h"
#include "core/engine.h"
#include "schedules/schedule.h"
#include "tests/app_helpers.h"

namespace ppb::viz_test {

inline constexpr Nanos kMs = 1'000'000;

inline Program Must(Result<Program> r) {
  if (!r.ok()) FAIL(r.error().key << ": " << r.error().message);
  return std::move(r).value();
}

inline SimResult Run(const PipelineSpec& spec, const Program& prog, bool memory = false) {
  SimOptions o;
  o.record_ops = true;
  o.record_memory = memory;
  Engine engine;
  return engine.Run(spec, prog, o);
}

// Every device's parts and the pipeline's are >= 0 and add up to the
// makespan; the pipeline's equal the busiest device's and the engine's.
inline void CheckSums(const SimResult& r) {
  const Breakdown b = ComputeBreakdown(r);
  REQUIRE(b.devices.size() == r.devices.size());
  CHECK(b.iteration == r.makespan);
  for (size_t d = 0; d < b.devices.size(); ++d) {
    INFO("rank " << d);
    CHECK(b.devices[d].sum() == r.makespan);
    for (Nanos x : b.devices[d].ns) CHECK(x >= 0);
    CHECK(b.devices[d][BubbleTerm::Recompute] == r.devices[d].recompute);
    CHECK(b.devices[d][BubbleTerm::Communication] ==
          r.devices[d].comm_wait + r.devices[d].comm_blocked);
  }
  CHECK(b.pipeline.sum() == r.makespan);
  CHECK(b.pipeline.ns == b.devices[b.bottleneck].ns);
  CHECK(b.bottleneck == r.breakdown.bottleneck);
  CHECK(b.pipeline[BubbleTerm::Ideal] == r.breakdown.ideal);
  CHECK(b.pipeline[BubbleTerm::Imbalance] == r.breakdown.imbalance);
  CHECK(b.pipeline[BubbleTerm::Recompute] == r.breakdown.recompute);
  CHECK(b.pipeline[BubbleTerm::Communication] == r.breakdown.communication);
  CHECK(b.pipeline[BubbleTerm::WarmupDrain] == r.breakdown.warmup_drain);
}

inline std::string Config(const char* name) { return std::string(PPB_CONFIGS_DIR) + "/" + name; }


// A file path in this process's own temporary directory (ctest runs test
// cases in parallel processes).
inline std::string TempPath(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ppb_test_viz_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A loaded, prepared and simulated config, with everything recorded.
struct Simulated {
  RunConfig config;
  PreparedRun run;
  SimResult result;
  SimulatedRun view() const { return {&config, &run, &result}; }
};

inline Simulated Simulate(Result<RunConfig> config) {
  if (!config.ok()) FAIL(config.error().message);
  Simulated s{std::move(*config), {}, {}};
  auto run = Prepare(s.config);
  if (!run.ok()) FAIL(run.error().message);
  s.run = std::move(*run);
  s.result = Run(s.run.spec, s.run.program, /*memory=*/true);
  return s;
}

inline Simulated SimulateFile(const char* name, const CliOverrides& ov = {}) {
  return Simulate(LoadConfig(Config(name), ov));
}

// A config of `layers` identical decoder layers.
inline std::string UniformYaml(int layers, int p, int m, const std::string& schedule, int v = 1,
                        const std::string& name = "uniform") {
  return "model:\n  name: '" + name +
         "'\n  layers:\n    - {name: block, kind: decoder, repeat: " + std::to_string(layers) +
         ", forward: 1ms, backward: 2ms, static_memory: 1GiB, activation: 64MiB, output: "
         "16MiB}\ncluster:\n  devices: {memory: 80GiB}\n  link: {latency: 5us, bandwidth: "
         "100GB/s}\npipeline:\n  stages: " +
         std::to_string(p) + "\n  microbatches: " + std::to_string(m) +
         "\n  virtual_stages: " + std::to_string(v) + "\n  schedule: " + schedule + "\n";
}

}  // namespace ppb::viz_test
