// The config text the config tests edit (test_config.cpp,
// test_config_errors.cpp, test_strategy_layout.cpp): kBase, the
// README-format example with known line numbers, and the helpers that edit
// it, parse it and prepare it. Included only by test_*.cpp (it uses Catch2).
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/input/config.h"
#include "tests/app_helpers.h"

namespace ppb::test {

// The README-format example, 4 ranks, 10 layers. Line numbers matter.
inline constexpr std::string_view kBase = R"(model:
  name: tiny
  layers:
    - name: embedding
      kind: embedding
      forward: 0.2ms
      backward: 0.4ms
      static_memory: 1GiB
      activation: 64MiB
      output: 16MiB
    - name: decoder
      kind: decoder
      repeat: 8
      forward: 1ms
      backward_input: 1ms
      backward_weight: 1ms
      static_memory: 2GiB
      activation: 1GiB
      workspace: 128MiB
      output: 16MiB
      recompute:
        full: {activation: 16MiB, time: 1ms}
        selective: {activation: 600MiB, time: 0.2ms}
    - name: head
      kind: head
      forward: 0.5ms
      backward: 1ms
      static_memory: 1GiB
      activation: 256MiB
      workspace: 2GiB
      output: 0B
cluster:
  devices:
    memory: 80GiB
    speed: 1.0
    overrides:
      - {rank: 3, memory: 40GiB, speed: 2.0}
  link: {latency: 10us, bandwidth: 50GB/s}
  links:
    - {rank: 1, latency: 20us, bandwidth: 25GB/s}
pipeline:
  stages: 4
  microbatches: 8
  virtual_stages: 1
  schedule: 1f1b
  flavor: megatron
  communication: overlapped
strategy:
  layers_per_chunk: [[3, 2, 2, 3]]
  allow_empty_chunks: false
  recompute:
    full: [2, 1, 0, 0]
    selective: [0, 1, 2, 2]
    layers: {decoder.7: full}
)";
// Line 1 model, 3 layers, 4/11/24 the three layer entries, 13 repeat,
// 14-16 decoder times, 22-23 recompute modes, 25-31 head fields,
// 32 cluster, 33 devices, 34 memory, 35 speed, 37 override, 38 link,
// 40 links[0], 41 pipeline, 42 stages, 43 microbatches, 44 virtual_stages,
// 45 schedule, 46 flavor, 47 communication, 48 strategy,
// 49 layers_per_chunk, 50 allow_empty_chunks, 51 recompute, 52 full,
// 53 selective, 54 layers.

// kBase with each `from` (which must occur exactly once) replaced by `to`.
inline std::string Edit(std::vector<std::pair<std::string, std::string>> edits,
                 std::string_view base = kBase) {
  std::string text(base);
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    REQUIRE(text.find(from, at + 1) == std::string::npos);
    text.replace(at, from.size(), to);
  }
  return text;
}

// kBase up to (not including) its strategy section.
inline std::string WithoutStrategy() {
  const std::string text(kBase);
  return text.substr(0, text.find("strategy:"));
}

// The error message of preparing `text` (which must parse).
inline std::string PrepareError(const std::string& text,
                         const CliOverrides& cli = {}) {
  Result<RunConfig> r = Parse(text, cli);
  if (!r.ok()) FAIL("the config did not parse: " << r.error().message);
  Result<PreparedRun> run = Prepare(*r);
  if (run.ok()) FAIL("expected an error from Prepare");
  return run.error().message;
}

}  // namespace ppb::test
