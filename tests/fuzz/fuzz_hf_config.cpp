// libFuzzer harness: a HuggingFace config.json (apps/input/hf_config.cpp).
// Any input either reads into an Architecture or is refused with the field
// and what was expected; what reads is then loaded the way users load it,
// as `model: {hf_config: FILE}` of a run config (the cost model derives the
// layers), reported by `ppb-sim model` (text, JSON) and, when small,
// simulated and reported (fuzz_common.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "apps/input/hf_config.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ppb::Result<ppb::Architecture> arch = ppb::ParseHfConfig(text);
  if (!arch.ok()) {
    ppb::fuzz::Consume(ppb::FormatHfError("config.json", arch.error()));
    return 0;
  }
  // Deriving 10^6 layers is a resource limit of its own (not this
  // harness's to find); keep the executions fast.
  if (arch->layers + arch->mtp_layers > 256) return 0;
  const std::string json = ppb::fuzz::ScratchFile("config.json", text);
  const std::string yaml =
      "model: {hf_config: " + json + "}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, dtype: bf16, tensor_parallel: 1,"
      " data_parallel: 2}\n"
      "hardware: {peak_tflops: 989, achievable_fraction: 0.45}\n"
      "cluster: {devices: {memory: 80GiB}, link: {latency: 10us, bandwidth: 50GB/s}}\n"
      "pipeline: {stages: 2, microbatches: 4, schedule: 1f1b}\n";
  ppb::Result<ppb::RunConfig> config = ppb::ParseConfig(yaml, "fuzz.yaml", ppb::CliOverrides{});
  if (!config.ok()) return 0;
  ppb::fuzz::SimulateAndReport(*config);
  return 0;
}
