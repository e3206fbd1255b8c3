// libFuzzer harness: calibrate's measurements (apps/input/measurements.cpp):
// ppb's runs.yaml and SAPP's dry-run memory YAML. What reads is fitted
// (core/calibrate.h) and reported as `ppb-sim calibrate` reports it (text,
// JSON, the layer-cost YAML); that YAML, under a small cluster and pipeline,
// must load as a run config, which is then simulated and reported
// (fuzz_common.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "apps/input/measurements.h"
#include "apps/output/calibration.h"
#include "core/calibrate.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ppb::SappUnits units{1'000'000, 1 << 20};  // 1ms, 1MiB
  ppb::Result<ppb::Measurements> m = ppb::ParseMeasurements(text, "runs.yaml", units);
  if (!m.ok()) {
    ppb::fuzz::FuzzCheck(!m.error().message.empty(), "an error has a message");
    return 0;
  }
  ppb::Result<ppb::CalibrationResult> fit = ppb::Calibrate(m->problem);
  if (!fit.ok()) return 0;
  ppb::fuzz::Consume(ppb::FormatCalibrationText(*m, *fit));
  ppb::fuzz::CheckJson(ppb::FormatCalibrationJson(*m, *fit), "FormatCalibrationJson is JSON");
  ppb::Result<std::string> model = ppb::FormatCalibratedModel(*m, *fit, "runs.yaml");
  if (!model.ok()) return 0;
  const std::string yaml = *model +
      "cluster: {devices: {memory: 80GiB}, link: {latency: 10us, bandwidth: 50GB/s}}\n"
      "pipeline: {stages: 2, microbatches: 4, schedule: 1f1b}\n"
      "strategy: {allow_empty_chunks: true}\n";
  ppb::Result<ppb::RunConfig> config = ppb::ParseConfig(yaml, "calibrated.yaml", ppb::CliOverrides{});
  if (!config.ok()) return 0;
  ppb::fuzz::SimulateAndReport(*config);
  return 0;
}
