// Helpers shared by the tests of apps/: parse a config given as text, and
// run ppb-sim in process. Included only by test_*.cpp (it uses Catch2).
#pragma once

#include <catch2/catch.hpp>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/cli.h"
#include "apps/input/config.h"

namespace ppb::test {

// The tiny search model (test_search_cli.cpp explains it): 4 identical
// layers on 2 ranks of 7 GiB, 4 micro-batches, 1F1B; the balanced split is
// optimal at 30 ms. 16 lines, so a block appended starts on line 17.
inline constexpr std::string_view kTinySearchConfig = R"(model:
  name: tiny-4l
  layers:
    - name: layer
      repeat: 4
      forward: 1ms
      backward: 2ms
      static_memory: 1GiB
      activation: 1GiB
      recompute:
        full: {activation: 128MiB, time: 1ms}
cluster:
  devices: {memory: 7GiB}
pipeline:
  stages: 2
  microbatches: 4
)";

// A tiny model for the framework-output tests (test_emit*.cpp): an
// embedding, `decoders` decoder layers offering full and selective
// recompute, `mtp` MTP layers, a head; 80 GiB devices.
inline std::string TinyEmitModel(int decoders = 8, int mtp = 0) {
  std::string text =
      "model:\n"
      "  name: tiny\n"
      "  layers:\n"
      "    - {name: embedding, kind: embedding, forward: 1ms, backward: 2ms}\n"
      "    - name: decoder\n"
      "      repeat: " +
      std::to_string(decoders) +
      "\n"
      "      forward: 1ms\n"
      "      backward: 2ms\n"
      "      recompute:\n"
      "        full: {activation: 0B, time: 1ms}\n"
      "        selective: {activation: 0B, time: 0.1ms}\n";
  if (mtp > 0) {
    text += "    - {name: mtp, kind: mtp, repeat: " + std::to_string(mtp) +
            ", forward: 1ms, backward: 2ms, recompute: {full: {activation: "
            "0B, time: 1ms}}}\n";
  }
  text +=
      "    - {name: head, kind: head, forward: 1ms, backward: 2ms}\n"
      "cluster: {devices: {memory: 80GiB}}\n";
  return text;
}

// A split of an embedding, `decoders` body layers and a head (`layers` in
// all) over `stages` stages: one body layer on each, the rest dealt one at
// a time to a uniformly random stage, the embedding on the first and the
// head on the last; no recompute. `body` (may be null) gets the body layers
// per stage.
inline Strategy DealtSplit(std::mt19937_64& rng, int stages, int decoders, size_t layers,
                           std::vector<int>* body = nullptr) {
  std::vector<int> dealt(static_cast<size_t>(stages), 1);
  for (int k = stages; k < decoders; ++k) {
    ++dealt[static_cast<size_t>(std::uniform_int_distribution<int>(0, stages - 1)(rng))];
  }
  Strategy s;
  s.layers_per_stage = dealt;
  s.layers_per_stage.front() += 1;
  s.layers_per_stage.back() += 1;
  s.recompute.assign(layers, 0);
  if (body != nullptr) *body = std::move(dealt);
  return s;
}

// Parses `text` as the config "run.yaml".
inline Result<RunConfig> Parse(const std::string& text,
                               const CliOverrides& cli = {}) {
  return ParseConfig(text, "run.yaml", cli);
}

// The error message of parsing `text`; fails the test if it parses.
inline std::string ParseError(const std::string& text,
                              const CliOverrides& cli = {}) {
  Result<RunConfig> r = Parse(text, cli);
  if (r.ok()) FAIL("expected an error, but the config parsed:\n" << text);
  return r.error().message;
}

// A file's bytes ("" when it cannot be read).
inline std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The lines of `text`, without their newlines.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The exit status and the two streams of one ppb-sim run.
struct CliRun {
  int status = 0;
  std::string out, err;
};

// Runs `ppb-sim args...` in process (RunCli with string streams).
inline CliRun Cli(std::vector<std::string> args) {
  args.insert(args.begin(), "ppb-sim");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliRun r;
  r.status = RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace ppb::test
