// libFuzzer harness: SAPP's layer-description JSON (apps/input/sapp.cpp).
// Any input either reads into layers or is refused with the key and what was
// expected; what reads is loaded the way users load it, as
// `model: {sapp_layers: FILE, sapp_units: ...}` of a run config, and when
// small simulated and reported (fuzz_common.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "apps/input/sapp.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ppb::SappUnits units{1'000'000, 1 << 20};  // 1ms, 1MiB
  ppb::Result<std::vector<ppb::Layer>> layers =
      ppb::ParseSappLayers(text, "layers.json", units);
  if (!layers.ok()) {
    ppb::fuzz::FuzzCheck(!layers.error().message.empty(), "an error has a message");
    return 0;
  }
  if (layers->size() > ppb::fuzz::kMaxFuzzLayers) return 0;
  const std::string json = ppb::fuzz::ScratchFile("layers.json", text);
  const std::string yaml =
      "model: {sapp_layers: " + json + ", sapp_units: {time: 1ms, memory: 1MiB}}\n"
      "cluster: {devices: {memory: 64GiB}, link: {latency: 10us, bandwidth: 50GB/s}}\n"
      "pipeline: {stages: 2, microbatches: 4, schedule: 1f1b}\n"
      "strategy: {allow_empty_chunks: true}\n";
  ppb::Result<ppb::RunConfig> config = ppb::ParseConfig(yaml, "fuzz.yaml", ppb::CliOverrides{});
  if (!config.ok()) return 0;
  ppb::fuzz::SimulateAndReport(*config);
  return 0;
}
