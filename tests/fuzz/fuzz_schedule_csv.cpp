// libFuzzer harness: the torch schedule CSV (schedules/csv.cpp). What parses
// is run as a custom schedule on a small model with p = the CSV's ranks and
// v, m taken from its ops (as `pipeline.schedule: custom` does), simulated
// and reported (fuzz_common.h); ValidateProgram refuses what the engine
// cannot run.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ppb::Result<ppb::Program> program = ppb::ParseScheduleCsv(text);
  if (!program.ok()) return 0;
  const int p = static_cast<int>(program->ops.size());
  int stages = 0, m = 0;
  for (const auto& device : program->ops) {
    for (const ppb::Op& op : device) {
      stages = std::max(stages, op.stage.value + 1);
      m = std::max(m, op.mb.value + 1);
    }
  }
  if (p < 1 || p > 16 || stages < p || stages % p != 0 || m < 1) return 0;
  const int v = stages / p;
  if (!ppb::fuzz::SmallShape(p, v, m, 0)) return 0;
  // The CSV as a config's custom schedule: the same path users take.
  const std::string csv = ppb::fuzz::ScratchFile("schedule.csv", text);
  const std::string yaml =
      "model:\n  layers:\n"
      "    - {name: e, kind: embedding, forward: 1ms, backward: 2ms, static_memory: 1GiB, "
      "activation: 10MiB, output: 1MiB}\n"
      "    - {name: d, kind: decoder, repeat: " + std::to_string(std::max(stages, 2)) +
      ", forward: 2ms, backward: 4ms, static_memory: 1GiB, activation: 100MiB, output: 1MiB,"
      " recompute: {full: {activation: 1MiB, time: 2ms}}}\n"
      "    - {name: h, kind: head, forward: 1ms, backward: 2ms, static_memory: 1GiB, "
      "activation: 10MiB}\n"
      "cluster: {devices: {memory: 40GiB}, link: {latency: 10us, bandwidth: 50GB/s}}\n"
      "pipeline: {stages: " + std::to_string(p) + ", virtual_stages: " + std::to_string(v) +
      ", microbatches: " + std::to_string(m) + ", schedule: custom, schedule_csv: " + csv + "}\n"
      "strategy: {allow_empty_chunks: true}\n";
  ppb::Result<ppb::RunConfig> config = ppb::ParseConfig(yaml, "fuzz.yaml", ppb::CliOverrides{});
  if (!config.ok()) return 0;
  ppb::fuzz::SimulateAndReport(*config);
  return 0;
}
