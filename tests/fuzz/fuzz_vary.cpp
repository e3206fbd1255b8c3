// libFuzzer harness: the --vary specs of `ppb-sim compare`
// (apps/input/vary.cpp, vary_document.h). Each line of the input is one
// --vary flag (at most three); what parses is applied to a small config and
// compared over every registered schedule as `ppb-sim compare` does, and the
// table is written as text, JSON and CSV.
//
// To keep executions fast, a variant product above 8 or a pipeline value
// above 8 (or a factor above x4) is not run.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "apps/commands/compare_run.h"
#include "apps/input/vary.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

constexpr const char* kBase = R"(model:
  name: vary-base
  layers:
    - {name: embedding, kind: embedding, forward: 0.5ms, backward: 1ms, static_memory: 1GiB,
       activation: 16MiB, output: 8MiB}
    - {name: decoder, kind: decoder, repeat: 8, forward: 2ms, backward: 4ms,
       static_memory: 2GiB, activation: 512MiB, output: 8MiB,
       recompute: {full: {activation: 8MiB, time: 2ms}}}
    - {name: head, kind: head, forward: 1ms, backward: 2ms, static_memory: 1GiB,
       activation: 32MiB, workspace: 256MiB}
cluster:
  devices: {memory: 16GiB}
  link: {latency: 10us, bandwidth: 50GB/s}
pipeline:
  stages: 2
  microbatches: 4
  schedule: 1f1b
strategy:
  layers_per_chunk: [[5, 5]]
  recompute: {full: [2, 0]}
)";

// A value a pipeline integer may take here without slowing the fuzzer.
bool SmallPipelineValue(const std::string& v) {
  if (v.empty() || v.size() > 3) return false;
  if (v[0] == 'x') return v.size() == 2 && v[1] >= '0' && v[1] <= '4';
  for (char c : v) {
    if (c < '0' || c > '9') return false;
  }
  return std::stoi(v) <= 8;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  ppb::CompareRequest request;
  std::size_t variants = 1;
  std::size_t start = 0;
  while (start <= input.size() && request.vary.size() < 3) {
    std::size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    ppb::Result<ppb::VaryAxis> axis = ppb::ParseVary(input.substr(start, end - start));
    if (!axis.ok()) {
      ppb::fuzz::FuzzCheck(!axis.error().message.empty(), "an error has a message");
      return 0;
    }
    variants *= axis->values.size();
    if (variants > 8) return 0;
    if (axis->key.rfind("pipeline.", 0) == 0) {
      for (const std::string& v : axis->values) {
        if (!SmallPipelineValue(v)) return 0;
      }
    }
    request.vary.push_back(std::move(*axis));
    start = end + 1;
  }
  ppb::Result<ppb::CompareTable> table = ppb::Compare(kBase, "base.yaml", request);
  if (!table.ok()) {
    ppb::fuzz::FuzzCheck(!table.error().message.empty(), "an error has a message");
    return 0;
  }
  ppb::fuzz::Consume(ppb::FormatCompareText(*table));
  ppb::fuzz::CheckJson(ppb::FormatCompareJson(*table), "FormatCompareJson is JSON");
  ppb::fuzz::Consume(ppb::FormatCompareCsv(*table));
  return 0;
}
