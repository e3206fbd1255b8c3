// The config loader (apps/config.h), unit strings (apps/units.h) and the
// strategy notations (core/strategy.h).
//
// Most error tests edit one line of kBase (below, line numbers in the
// comments) and check that the error starts with the exact
// "run.yaml:<line>: <key>: " prefix and states what was expected.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/units.h"
#include "core/strategy.h"
#include "tests/app_helpers.h"

namespace ppb {
namespace {

// The README-format example, 4 ranks, 10 layers. Line numbers matter.
constexpr std::string_view kBase = R"(model:
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
std::string Edit(std::vector<std::pair<std::string, std::string>> edits,
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
std::string WithoutStrategy() {
  const std::string text(kBase);
  return text.substr(0, text.find("strategy:"));
}

using test::Parse;
using test::ParseError;

// The error message of preparing `text` (which must parse).
std::string PrepareError(const std::string& text,
                         const CliOverrides& cli = {}) {
  Result<RunConfig> r = Parse(text, cli);
  if (!r.ok()) FAIL("the config did not parse: " << r.error().message);
  Result<PreparedRun> run = Prepare(*r);
  if (run.ok()) FAIL("expected an error from Prepare");
  return run.error().message;
}

std::vector<Layer> Kinds(std::string_view symbols) {
  std::vector<Layer> layers;
  int t = 0;
  for (char c : symbols) {
    Layer l;
    switch (c) {
      case 'E':
        l.kind = LayerKind::Embedding;
        l.name = "embedding";
        break;
      case 'L':
        l.kind = LayerKind::Head;
        l.name = "head";
        break;
      case 'm':
        l.kind = LayerKind::Mtp;
        l.name = "mtp";
        break;
      default:
        l.kind = LayerKind::Decoder;
        l.name = "decoder." + std::to_string(t++);
    }
    layers.push_back(l);
  }
  return layers;
}

struct ErrorCase {
  std::vector<std::pair<std::string, std::string>> edits;
  std::string prefix;  // exact start of the message
};

void CheckErrors(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    DYNAMIC_SECTION(c.prefix) {
      const std::string message = ParseError(Edit(c.edits));
      INFO(message);
      CHECK(message.rfind(c.prefix, 0) == 0);
    }
  }
}

// ---- units -----------------------------------------------------------------

TEST_CASE("units: exact values", "[config][units]") {
  CHECK(*ParseBytes("1.5GiB") == 1610612736);
  CHECK(*ParseBandwidth("200GB/s") == 200000000000);
  CHECK(*ParseDuration("850us") == 850000);
  CHECK(*ParseBandwidth("25Gbit/s") == 3125000000);
  CHECK(*ParseDuration("3.2ms") == 3200000);
  CHECK(*ParseDuration("0.2ms") == 200000);
  CHECK(*ParseDuration("1s") == 1000000000);
  CHECK(*ParseDuration("7ns") == 7);
  CHECK(*ParseDuration("850 us") == 850000);
  CHECK(*ParseDuration(" 1.5 s ") == 1500000000);
  CHECK(*ParseDuration("850\xC2\xB5s") == 850000);  // µs
  CHECK(*ParseDuration("1e3us") == 1000000);
  CHECK(*ParseDuration("2.5E-3s") == 2500000);
  CHECK(*ParseDuration(".5ms") == 500000);
  CHECK(*ParseDuration("0.5ns") == 1);  // halves round up
  CHECK(*ParseDuration("0.4999ns") == 0);
  CHECK(*ParseDuration("0ms") == 0);
  CHECK(*ParseBytes("0B") == 0);
  CHECK(*ParseBytes("80GiB") == 85899345920);
  CHECK(*ParseBytes("64MiB") == 67108864);
  CHECK(*ParseBytes("1TB") == 1000000000000);
  CHECK(*ParseBytes("1KiB") == 1024);
  CHECK(*ParseBytes("0.1KB") == 100);
  CHECK(*ParseBytes("1.000000000000000000001GiB") == 1073741824);
}

TEST_CASE("units: more bandwidths and limits", "[config][units]") {
  CHECK(*ParseBandwidth("50GB/s") == 50000000000);
  CHECK(*ParseBandwidth("1GiB/s") == 1073741824);
  CHECK(*ParseBandwidth("100Gbit/s") == 12500000000);
  CHECK(*ParseBandwidth("1Kbit/s") == 125);
  CHECK(*ParseBandwidth("1B/s") == 1);
  CHECK(*ParseDuration("9223372036854775807ns") == 9223372036854775807);
  CHECK(*ParseDuration("9223372036.854775807s") == 9223372036854775807);
}

TEST_CASE("units: errors state expected and given", "[config][units]") {
  auto message = [](Result<std::int64_t> r) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().key.empty());
    return r.error().message;
  };
  CHECK(message(ParseDuration("3.2")) ==
        "must be a duration with a unit (ns, us, ms, s); got 3.2 (no unit)");
  CHECK(message(ParseDuration("3min")) ==
        "must be a duration with a unit (ns, us, ms, s); got 3min (unknown "
        "unit \"min\")");
  CHECK(message(ParseDuration("-3ms")) ==
        "must be a non-negative duration; got -3ms");
  CHECK(message(ParseDuration("9223372036854775808ns")) ==
        "must be at most 9223372036854775807 ns; got 9223372036854775808ns");
  CHECK(message(ParseDuration("1e30s")) ==
        "must be at most 9223372036854775807 ns; got 1e30s");
  CHECK(message(ParseDuration("fast")) ==
        "must be a duration with a unit (ns, us, ms, s); got fast");
  CHECK(message(ParseDuration("")) ==
        "must be a duration with a unit (ns, us, ms, s); got an empty string");
  CHECK(message(ParseBytes("3mb")) ==
        "must be a size with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB); "
        "got 3mb (unknown unit \"mb\")");
  CHECK(message(ParseBytes("24")).find("got 24 (no unit)") !=
        std::string::npos);
  CHECK(message(ParseBandwidth("25Gb/s")).find("(unknown unit \"Gb/s\")") !=
        std::string::npos);
  CHECK(message(ParseBandwidth("50GB")).find("(unknown unit \"GB\")") !=
        std::string::npos);
  CHECK(message(ParseBytes("1.2.3GB")).find("(unknown unit \".3GB\")") !=
        std::string::npos);
}

// ---- a full config ---------------------------------------------------------

TEST_CASE("config: the full example parses to exact values", "[config]") {
  Result<RunConfig> r = Parse(std::string(kBase));
  REQUIRE(r.ok());
  const RunConfig& c = *r;
  CHECK(c.path == "run.yaml");
  CHECK(c.model_name == "tiny");
  REQUIRE(c.layers.size() == 10);

  const Layer& e = c.layers[0];
  CHECK(e.name == "embedding");
  CHECK(e.kind == LayerKind::Embedding);
  CHECK(e.forward == 200000);
  CHECK(e.backward_input == 400000);
  CHECK(e.backward_weight == 0);
  CHECK_FALSE(e.split_backward);
  CHECK(e.static_memory == 1073741824);
  CHECK(e.activation == 67108864);
  CHECK(e.workspace == 0);
  CHECK(e.output_bytes == 16777216);
  CHECK(e.recompute.empty());

  const Layer& d = c.layers[5];
  CHECK(d.name == "decoder.4");
  CHECK(d.kind == LayerKind::Decoder);
  CHECK(d.forward == 1000000);
  CHECK(d.backward_input == 1000000);
  CHECK(d.backward_weight == 1000000);
  CHECK(d.split_backward);
  CHECK(d.backward() == 2000000);
  CHECK(d.static_memory == 2147483648);
  CHECK(d.activation == 1073741824);
  CHECK(d.workspace == 134217728);
  CHECK(d.output_bytes == 16777216);
  REQUIRE(d.recompute.size() == 2);
  CHECK(d.recompute[0].name == "full");
  CHECK(d.recompute[0].retained_activation == 16777216);
  CHECK(d.recompute[0].extra_time == 1000000);
  CHECK(d.recompute[1].name == "selective");
  CHECK(d.recompute[1].retained_activation == 629145600);
  CHECK(d.recompute[1].extra_time == 200000);

  const Layer& h = c.layers[9];
  CHECK(h.name == "head");
  CHECK(h.kind == LayerKind::Head);
  CHECK(h.forward == 500000);
  CHECK(h.backward_input == 1000000);
  CHECK(h.workspace == 2147483648);
  CHECK(h.output_bytes == 0);

  REQUIRE(c.cluster.devices.size() == 4);
  CHECK(c.cluster.devices[0].memory_capacity == 85899345920);
  CHECK(c.cluster.devices[0].speed == 1.0);
  CHECK(c.cluster.devices[3].memory_capacity == 42949672960);
  CHECK(c.cluster.devices[3].speed == 2.0);
  REQUIRE(c.cluster.links.size() == 4);
  CHECK(c.cluster.links[0].latency == 10000);
  CHECK(c.cluster.links[0].bandwidth == 50000000000);
  CHECK(c.cluster.links[1].latency == 20000);
  CHECK(c.cluster.links[1].bandwidth == 25000000000);
  CHECK(c.cluster.links[3].bandwidth == 50000000000);

  CHECK(c.shape.p == 4);
  CHECK(c.shape.m == 8);
  CHECK(c.shape.v == 1);
  CHECK(c.shape.comm == CommMode::Overlapped);
  CHECK(c.schedule == "1f1b");
  CHECK(c.schedule_params.flavor == Flavor::Megatron);
  CHECK(c.schedule_params.group == 0);
  CHECK_FALSE(c.allow_empty_chunks);

  CHECK(c.strategy.layers_per_stage == std::vector<int>{3, 2, 2, 3});
  // Stages: [embedding d0 d1] [d2 d3] [d4 d5] [d6 d7 head]. full [2,1,0,0]
  // skips the embedding (it offers no full) and takes d0 d1, d2; selective
  // [0,1,2,2] finds d2 already set, takes d4 d5, d6 d7; layers sets d7 full.
  CHECK(c.strategy.recompute ==
        std::vector<std::uint8_t>{0, 1, 1, 1, 0, 2, 2, 2, 1, 0});

  CHECK(c.key_lines.at("pipeline.microbatches") == 43);
  CHECK(c.key_lines.at("model.layers[1].forward") == 14);
  CHECK(c.key_lines.at("strategy.recompute.layers.decoder.7") == 54);

  Result<PreparedRun> run = Prepare(c);
  REQUIRE(run.ok());
  CHECK(run->spec.p == 4);
  CHECK(run->program.ops.size() == 4);
  CHECK(run->program.total_ops() == 4 * 8 * 2);
}

TEST_CASE("config: repeat expands names and copies costs", "[config]") {
  Result<RunConfig> r = Parse(std::string(kBase));
  REQUIRE(r.ok());
  for (int k = 0; k < 8; ++k) {
    const Layer& l = r->layers[1 + k];
    CHECK(l.name == "decoder." + std::to_string(k));
    CHECK(l.forward == 1000000);
    CHECK(l.recompute.size() == 2);
  }
  // repeat: 1 still suffixes ".0": the names do not depend on the count.
  Result<RunConfig> one = Parse(Edit(
      {{"repeat: 8", "repeat: 1"},
       {"layers_per_chunk: [[3, 2, 2, 3]]", "layers_per_chunk: [[1, 1, 0, 1]]"},
       {"allow_empty_chunks: false", "allow_empty_chunks: true"},
       {"full: [2, 1, 0, 0]", "full: 0"},
       {"selective: [0, 1, 2, 2]", "selective: false"},
       {"decoder.7: full", "decoder.0: selective"}}));
  REQUIRE(one.ok());
  REQUIRE(one->layers.size() == 3);
  CHECK(one->layers[1].name == "decoder.0");
  CHECK(one->strategy.layers_per_stage == std::vector<int>{1, 1, 0, 1});
  CHECK(one->strategy.recompute == std::vector<std::uint8_t>{0, 2, 0});
}

TEST_CASE("config: defaults", "[config]") {
  const std::string text = R"(model:
  layers:
    - {name: block, repeat: 6, forward: 1ms, backward: 2ms}
cluster:
  devices: {memory: 24GiB}
pipeline:
  stages: 3
  microbatches: 6
)";
  Result<RunConfig> r = Parse(text);
  REQUIRE(r.ok());
  const RunConfig& c = *r;
  CHECK(c.model_name.empty());
  REQUIRE(c.layers.size() == 6);
  CHECK(c.layers[0].kind == LayerKind::Decoder);
  CHECK(c.layers[0].static_memory == 0);
  CHECK(c.layers[0].activation == 0);
  CHECK(c.layers[0].workspace == 0);
  CHECK(c.layers[0].output_bytes == 0);
  CHECK(c.shape.v == 1);
  CHECK(c.shape.comm == CommMode::Overlapped);
  CHECK(c.schedule == "1f1b");
  CHECK(c.schedule_params.flavor == Flavor::Megatron);
  CHECK(c.schedule_params.group == 0);
  REQUIRE(c.cluster.devices.size() == 3);
  CHECK(c.cluster.devices[2].speed == 1.0);
  REQUIRE(c.cluster.links.size() == 3);
  CHECK(c.cluster.links[0].latency == 0);
  CHECK(c.cluster.links[0].bandwidth == 0);  // infinite
  CHECK(c.strategy.layers_per_stage == std::vector<int>{2, 2, 2});
  CHECK(c.strategy.recompute == std::vector<std::uint8_t>(6, 0));
  CHECK_FALSE(c.allow_empty_chunks);
  CHECK(Prepare(c).ok());

  // The default split follows EvenStrategy: embedding first, head last.
  Result<RunConfig> even = Parse(WithoutStrategy());
  REQUIRE(even.ok());
  CHECK(even->strategy.layers_per_stage == std::vector<int>{3, 2, 2, 3});
}

TEST_CASE("config: pipeline.activation_limit for zb-1p / zb-2p", "[config]") {
  Result<RunConfig> plain = Parse(Edit({{"schedule: 1f1b", "schedule: zb-2p"}}));
  REQUIRE(plain.ok());
  CHECK(plain->schedule == "zb-2p");
  CHECK(plain->schedule_params.activation_multiple == 0);
  CHECK(plain->schedule_params.activation_bytes == 0);
  Result<RunConfig> kp = Parse(Edit(
      {{"communication: overlapped",
        "communication: overlapped\n  activation_limit: 3p"}}));
  REQUIRE(kp.ok());
  CHECK(kp->schedule_params.activation_multiple == 3);
  Result<RunConfig> size = Parse(Edit(
      {{"communication: overlapped",
        "communication: overlapped\n  activation_limit: 24GiB"}}));
  REQUIRE(size.ok());
  CHECK(size->schedule_params.activation_bytes == Bytes{24} << 30);
}

TEST_CASE("config: schedule names, flavor, devices list", "[config]") {
  Result<RunConfig> r = Parse(Edit(
      {{"schedule: 1f1b", "schedule: Interleaved1F1B"},
       {"virtual_stages: 1", "virtual_stages: 2"},
       {"flavor: megatron", "flavor: pytorch"},
       {"communication: overlapped", "communication: blocking"},
       {"  devices:\n    memory: 80GiB\n    speed: 1.0\n    overrides:\n"
        "      - {rank: 3, memory: 40GiB, speed: 2.0}\n",
        "  devices:\n    - {memory: 80GiB}\n    - {memory: 80GiB, speed: 1.5}\n"
        "    - {memory: 40GiB}\n    - {memory: 40GiB}\n"}},
      WithoutStrategy()));
  REQUIRE(r.ok());
  CHECK(r->schedule == "interleaved");
  CHECK(r->shape.v == 2);
  CHECK(r->schedule_params.flavor == Flavor::PyTorch);
  CHECK(r->shape.comm == CommMode::Blocking);
  CHECK(r->cluster.devices[1].speed == 1.5);
  CHECK(r->cluster.devices[2].memory_capacity == 42949672960);
  // 8 decoder layers over 8 stages, embedding first, head last.
  CHECK(r->strategy.layers_per_stage ==
        std::vector<int>{2, 1, 1, 1, 1, 1, 1, 2});
  CHECK(Prepare(*r).ok());
}

TEST_CASE("config: strategy notations", "[config]") {
  SECTION("[v][p] counts and flat counts") {
    const std::string base = Edit({{"virtual_stages: 1", "virtual_stages: 2"},
                                   {"schedule: 1f1b", "schedule: interleaved"}},
                                  WithoutStrategy());
    Result<RunConfig> nested = Parse(
        base + "strategy:\n  layers_per_chunk: [[2, 1, 1, 1], [1, 1, 1, 2]]\n");
    REQUIRE(nested.ok());
    CHECK(nested->strategy.layers_per_stage ==
          std::vector<int>{2, 1, 1, 1, 1, 1, 1, 2});
    Result<RunConfig> flat = Parse(
        base + "strategy:\n  layers_per_chunk: [2, 1, 1, 1, 1, 1, 1, 2]\n");
    REQUIRE(flat.ok());
    CHECK(flat->strategy.layers_per_stage == nested->strategy.layers_per_stage);
    CHECK(Prepare(*flat).ok());
  }
  SECTION("flat counts for v = 1") {
    Result<RunConfig> r = Parse(Edit({{"layers_per_chunk: [[3, 2, 2, 3]]",
                                       "layers_per_chunk: [2, 3, 3, 2]"}}));
    REQUIRE(r.ok());
    CHECK(r->strategy.layers_per_stage == std::vector<int>{2, 3, 3, 2});
  }
  SECTION("Megatron layout") {
    Result<RunConfig> r =
        Parse(WithoutStrategy() + "strategy:\n  layout: \"Et|t*3|t*3,|tL\"\n");
    REQUIRE(r.ok());
    CHECK(r->strategy.layers_per_stage == std::vector<int>{2, 3, 3, 2});
  }
  SECTION("MindFormers offset, list of p") {
    // 8 decoder layers over 4 stages: 2 each, + offset; embedding on stage 0
    // and head on stage 3 come on top.
    Result<RunConfig> r =
        Parse(WithoutStrategy() + "strategy:\n  offset: [-1, 1, 1, -1]\n");
    REQUIRE(r.ok());
    CHECK(r->strategy.layers_per_stage == std::vector<int>{2, 3, 3, 2});
  }
  SECTION("MindFormers offset, int and [v][p] with a remainder") {
    Result<RunConfig> zero =
        Parse(WithoutStrategy() + "strategy:\n  offset: 0\n");
    REQUIRE(zero.ok());
    CHECK(zero->strategy.layers_per_stage == std::vector<int>{3, 2, 2, 3});
    // 10 decoder layers, p = 2, v = 2: 10 // 4 = 2, remainder 2.
    Result<RunConfig> r = Parse(
        Edit({{"repeat: 8", "repeat: 10"},
              {"stages: 4", "stages: 2"},
              {"virtual_stages: 1", "virtual_stages: 2"},
              {"schedule: 1f1b", "schedule: interleaved"},
              {"    overrides:\n      - {rank: 3, memory: 40GiB, speed: 2.0}\n",
               ""},
              {"    - {rank: 1, latency: 20us, bandwidth: 25GB/s}\n", ""},
              {"  links:\n", ""}},
             WithoutStrategy()) +
        "strategy:\n  offset: [[0, 1], [1, 0]]\n");
    REQUIRE(r.ok());
    CHECK(r->strategy.layers_per_stage == std::vector<int>{3, 3, 3, 3});
  }
  SECTION("recompute: true and a single count") {
    Result<RunConfig> r =
        Parse(Edit({{"full: [2, 1, 0, 0]", "full: true"},
                    {"selective: [0, 1, 2, 2]", "selective: 1"},
                    {"decoder.7: full", "decoder.7: none"}}));
    REQUIRE(r.ok());
    CHECK(r->strategy.recompute ==
          std::vector<std::uint8_t>{0, 1, 1, 1, 1, 1, 1, 1, 0, 0});
  }
}

// ---- CLI overrides ---------------------------------------------------------

TEST_CASE("config: CLI overrides replace file values", "[config]") {
  CliOverrides cli;
  cli.stages = 2;
  cli.microbatches = 16;
  const std::string no_overrides = Edit(
      {{"    overrides:\n      - {rank: 3, memory: 40GiB, speed: 2.0}\n", ""}},
      WithoutStrategy());
  Result<RunConfig> r = Parse(no_overrides, cli);
  REQUIRE(r.ok());
  CHECK(r->shape.p == 2);
  CHECK(r->shape.m == 16);
  CHECK(r->key_lines.at("pipeline.stages") == 0);
  CHECK(r->key_lines.at("pipeline.microbatches") == 0);
  CHECK(r->key_lines.at("pipeline.virtual_stages") == 42);
  CHECK(r->cluster.devices.size() == 2);
  CHECK(r->strategy.layers_per_stage == std::vector<int>{5, 5});

  SECTION("an error about an overridden value names the flag") {
    CliOverrides bad;
    bad.stages = 0;
    CHECK(ParseError(std::string(kBase), bad) ==
          "run.yaml: --stages: must be a positive integer; got 0");
  }
  SECTION("shape errors say where p came from") {
    CliOverrides eight;
    eight.stages = 8;
    const std::string message = ParseError(
        Edit({{"    overrides:\n      - {rank: 3, memory: 40GiB, speed: 2.0}\n",
               ""}}),
        eight);
    // Two lines fewer: the override entry was removed.
    CHECK(message ==
          "run.yaml:47: strategy.layers_per_chunk[0]: must be a list of 8 "
          "integers, one per rank (--stages 8); got a list of 4");
  }
  SECTION("schedule overrides") {
    CliOverrides s;
    s.schedule = "gpipe";
    Result<RunConfig> g = Parse(std::string(kBase), s);
    REQUIRE(g.ok());
    CHECK(g->schedule == "gpipe");
    CHECK(g->key_lines.at("pipeline.schedule") == 0);

    CliOverrides csv;
    csv.schedule_csv = "mine.csv";
    Result<RunConfig> c = Parse(std::string(kBase), csv);
    REQUIRE(c.ok());
    CHECK(c->schedule == "custom");
    CHECK(c->schedule_csv == "mine.csv");

    csv.schedule = "gpipe";
    CHECK(ParseError(std::string(kBase), csv) ==
          "run.yaml: --schedule: must be custom when --schedule-csv is given; "
          "got gpipe");
    CliOverrides unknown;
    unknown.schedule = "zb";
    CHECK(ParseError(std::string(kBase), unknown) ==
          "run.yaml: --schedule: must be one of gpipe, 1f1b, interleaved, "
          "looped-bfs, interleaved-zero-bubble, zbv-zero-bubble, dualpipev, "
          "zb-1p, zb-2p, zb-v, custom; got zb");
  }
  SECTION("a schedule constraint on an overridden value names the flag") {
    CliOverrides m;
    m.microbatches = 3;
    m.virtual_stages = 2;
    m.schedule = "interleaved";
    const std::string message = PrepareError(WithoutStrategy(), m);
    CHECK(message.rfind("run.yaml: --microbatches: must ", 0) == 0);
    CHECK(message.ends_with("; got 3"));
  }
}

// ---- validation errors, one per rule
// -----------------------------------------

TEST_CASE("config errors: YAML and structure", "[config]") {
  CHECK(ParseError("model: [\n")
            .rfind("run.yaml:2: must be valid YAML; got a "
                   "syntax error",
                   0) == 0);
  CHECK(ParseError("") ==
        "run.yaml: must be a map with model, cluster, pipeline and optional "
        "strategy and search; got an empty file");
  CHECK(ParseError("- a\n- b\n") ==
        "run.yaml: must be a map with keys model, cluster, pipeline, "
        "strategy, search, training, hardware; got a list of 2");
  CHECK(ParseError(std::string(kBase) + "extra: 1\n") ==
        "run.yaml:55: extra: unknown key; expected one of model, cluster, "
        "pipeline, strategy, search, training, hardware");
  CHECK(ParseError(
            WithoutStrategy().substr(WithoutStrategy().find("cluster:"))) ==
        "run.yaml: model: must be given (a map with layers); got nothing");
  const std::string no_cluster =
      std::string(kBase).substr(0, std::string(kBase).find("cluster:"));
  CHECK(ParseError(no_cluster + "pipeline: {stages: 1, microbatches: 1}\n") ==
        "run.yaml: cluster: must be given (a map with devices); got nothing");
  CHECK(ParseError(
            "model: {layers: []}\npipeline: {stages: 1, microbatches: 1}\n") ==
        "run.yaml:1: model.layers: must be a non-empty list of layers; got an "
        "empty list");
  CheckErrors({
      {{{"      output: 0B", "      outptu: 0B"}},
       "run.yaml:31: model.layers[2].outptu: unknown key; expected one of "
       "name, "
       "kind, repeat, forward, backward, backward_input, backward_weight, "
       "static_memory, activation, activation_after_input_grad, workspace, "
       "output, recompute"},
      {{{"virtual_stages: 1", "stages: 4"}},
       "run.yaml:44: pipeline.stages: must be given once; got it again (first "
       "on line 42)"},
      {{{"  flavor: megatron", "  flavour: megatron"}},
       "run.yaml:46: pipeline.flavour: unknown key; expected one of stages, "},
      {{{"  link: {latency: 10us, bandwidth: 50GB/s}",
         "  link: {latency: 10us, bandwidth: 50GB/s, mtu: 1B}"}},
       "run.yaml:38: cluster.link.mtu: unknown key"},
      {{{"layers_per_chunk", "layers_per_stage"}},
       "run.yaml:49: strategy.layers_per_stage: unknown key; expected one of "
       "layers_per_chunk, layout, offset, allow_empty_chunks, recompute"},
  });
}

TEST_CASE("config errors: pipeline", "[config]") {
  CheckErrors({
      {{{"microbatches: 8", "microbatches: -3"}},
       "run.yaml:43: pipeline.microbatches: must be a positive integer; got "
       "-3"},
      {{{"stages: 4", "stages: 0"}},
       "run.yaml:42: pipeline.stages: must be a positive integer; got 0"},
      {{{"stages: 4", "stages: four"}},
       "run.yaml:42: pipeline.stages: must be a positive integer; got four"},
      {{{"stages: 4", "stages: 4.5"}},
       "run.yaml:42: pipeline.stages: must be a positive integer; got 4.5"},
      {{{"stages: 4", "stages: 99999999999"}},
       "run.yaml:42: pipeline.stages: must be a positive integer (at most "
       "2147483647); got 99999999999"},
      {{{"  stages: 4\n", "  # stages: 4\n"}},
       "run.yaml:41: pipeline.stages: must be given (a positive integer); got "
       "nothing"},
      {{{"virtual_stages: 1", "virtual_stages: 0"}},
       "run.yaml:44: pipeline.virtual_stages: must be a positive integer; got "
       "0"},
      {{{"flavor: megatron", "microbatch_group: 0"}},
       "run.yaml:46: pipeline.microbatch_group: must be a positive integer; "
       "got "
       "0"},
      {{{"schedule: 1f1b", "schedule: zb"}},
       "run.yaml:45: pipeline.schedule: must be one of gpipe, 1f1b, "
       "interleaved, looped-bfs, interleaved-zero-bubble, zbv-zero-bubble, "
       "dualpipev, zb-1p, zb-2p, zb-v, custom; got zb"},
      {{{"communication: overlapped",
          "communication: overlapped\n  activation_limit: 0p"}},
       "run.yaml:48: pipeline.activation_limit: must be a size (e.g. 24GiB) "
       "or kp with k a positive integer (1p, 2p); got 0p"},
      {{{"communication: overlapped",
          "communication: overlapped\n  activation_limit: lots"}},
       "run.yaml:48: pipeline.activation_limit: must be a size (e.g. 24GiB) "
       "or kp with k a positive integer (1p, 2p); got lots"},
      {{{"flavor: megatron", "flavor: nvidia"}},
       "run.yaml:46: pipeline.flavor: must be one of megatron, pytorch; got "
       "nvidia"},
      {{{"communication: overlapped", "communication: async"}},
       "run.yaml:47: pipeline.communication: must be one of overlapped, "
       "blocking; got async"},
      {{{"schedule: 1f1b", "schedule: custom"}},
       "run.yaml:41: pipeline.schedule_csv: must be given for schedule custom"},
      {{{"communication: overlapped", "schedule_csv: mine.csv"}},
       "run.yaml:47: pipeline.schedule_csv: must only be given with schedule "
       "custom; got mine.csv with schedule 1f1b"},
  });
}

TEST_CASE("config errors: layers", "[config]") {
  CheckErrors({
      {{{"    - name: head", "    - repeat: 1"}},
       "run.yaml:24: model.layers[2].name: must be given (a unique layer "
       "name); got nothing"},
      {{{"    - name: head", "    - name: decoder.3"}},
       "run.yaml:24: model.layers[2].name: must be unique after repeat "
       "expansion; got decoder.3, also the name of a layer of model.layers[1]"},
      {{{"kind: head", "kind: loss"}},
       "run.yaml:25: model.layers[2].kind: must be one of embedding, decoder, "
       "moe, head, mtp, other; got loss"},
      {{{"repeat: 8", "repeat: 0"}},
       "run.yaml:13: model.layers[1].repeat: must be a positive integer up to "
       "100000; got 0"},
      {{{"forward: 0.5ms", "forward: 0ms"}},
       "run.yaml:26: model.layers[2].forward: must be a positive duration; got "
       "0ms"},
      {{{"forward: 0.5ms", "forward: -1ms"}},
       "run.yaml:26: model.layers[2].forward: must be a positive duration; got "
       "-1ms"},
      {{{"forward: 0.5ms", "forward: 3.2"}},
       "run.yaml:26: model.layers[2].forward: must be a duration with a unit "
       "(ns, us, ms, s); got 3.2 (no unit)"},
      {{{"forward: 0.5ms", "forward: 1min"}},
       "run.yaml:26: model.layers[2].forward: must be a duration with a unit "
       "(ns, us, ms, s); got 1min (unknown unit \"min\")"},
      {{{"forward: 0.5ms", "forward: [1ms]"}},
       "run.yaml:26: model.layers[2].forward: must be a duration with a unit "
       "(ns, us, ms, s); got a list of 1"},
      {{{"      forward: 0.5ms\n", ""}},
       "run.yaml:24: model.layers[2].forward: must be given (a positive "
       "duration); got nothing"},
      {{{"      backward: 1ms\n", "\n"}},
       "run.yaml:24: model.layers[2].backward: must be given (a positive "
       "duration), or backward_input and backward_weight; got nothing"},
      {{{"backward: 1ms", "backward: 0ns"}},
       "run.yaml:27: model.layers[2].backward: must be a positive duration; "
       "got 0ns"},
      {{{"static_memory: 2GiB", "backward: 2ms"}},
       "run.yaml:15: model.layers[1].backward_input: must not be given with "
       "backward (give backward, or backward_input and backward_weight); got "
       "both"},
      {{{"      backward_weight: 1ms\n", "\n"}},
       "run.yaml:11: model.layers[1].backward_weight: must be given with "
       "backward_input; got nothing"},
      {{{"      backward_input: 1ms\n", "\n"}},
       "run.yaml:11: model.layers[1].backward_input: must be given with "
       "backward_weight; got nothing"},
      {{{"backward_input: 1ms", "backward_input: 0ms"}},
       "run.yaml:15: model.layers[1].backward_input: must be a positive "
       "duration; got 0ms"},
      {{{"backward_weight: 1ms", "backward_weight: -1ms"}},
       "run.yaml:16: model.layers[1].backward_weight: must be a non-negative "
       "duration; got -1ms"},
      {{{"static_memory: 2GiB", "static_memory: -2GiB"}},
       "run.yaml:17: model.layers[1].static_memory: must be a non-negative "
       "size; got -2GiB"},
      {{{"activation: 256MiB", "activation: lots"}},
       "run.yaml:29: model.layers[2].activation: must be a size with a unit "
       "(B, "
       "KB, MB, GB, TB, KiB, MiB, GiB, TiB); got lots"},
      {{{"workspace: 2GiB", "workspace: 2G"}},
       "run.yaml:30: model.layers[2].workspace: must be a size with a unit"},
      {{{"output: 0B", "output: 0"}},
       "run.yaml:31: model.layers[2].output: must be a size with a unit (B, "
       "KB, "
       "MB, GB, TB, KiB, MiB, GiB, TiB); got 0 (no unit)"},
      {{{"selective: {activation: 600MiB", "none: {activation: 600MiB"}},
       "run.yaml:23: model.layers[1].recompute.none: must not be declared "
       "(\"none\" is always offered); got a mode named none"},
      {{{"selective: {activation: 600MiB", "layers: {activation: 600MiB"}},
       "run.yaml:23: model.layers[1].recompute.layers: must not be named "
       "layers (strategy.recompute uses that key for per-layer choices); got a "
       "mode named layers"},
      {{{"full: {activation: 16MiB, time: 1ms}", "full: {activation: 16MiB}"}},
       "run.yaml:22: model.layers[1].recompute.full.time: must be given (extra "
       "time before the backward); got nothing"},
      {{{"full: {activation: 16MiB, time: 1ms}", "full: {time: 1ms}"}},
       "run.yaml:22: model.layers[1].recompute.full.activation: must be given "
       "(bytes kept per micro-batch); got nothing"},
      {{{"full: {activation: 16MiB, time: 1ms}",
         "full: {activation: 2GiB, time: 1ms}"}},
       "run.yaml:22: model.layers[1].recompute.full.activation: must be at "
       "most the layer's activation (1GiB); got 2GiB"},
      {{{"full: {activation: 16MiB, time: 1ms}",
         "full: {activation: 16MiB, time: 1ms, memory: 1B}"}},
       "run.yaml:22: model.layers[1].recompute.full.memory: unknown key; "
       "expected one of activation, time"},
      {{{"full: {activation: 16MiB, time: 1ms}", "full: 16MiB"}},
       "run.yaml:22: model.layers[1].recompute.full: must be a map with keys "
       "activation, time; got 16MiB"},
  });
}

TEST_CASE("config errors: cluster", "[config]") {
  CheckErrors({
      {{{"memory: 80GiB", "memory: 0GiB"}},
       "run.yaml:34: cluster.devices.memory: must be a positive size; got "
       "0GiB"},
      {{{"    memory: 80GiB\n", "\n"}},
       "run.yaml:33: cluster.devices.memory: must be given (a positive size, "
       "e.g. 80GiB); got nothing"},
      {{{"speed: 1.0", "speed: 0"}},
       "run.yaml:35: cluster.devices.speed: must be a positive number; got 0"},
      {{{"speed: 1.0", "speed: fast"}},
       "run.yaml:35: cluster.devices.speed: must be a positive number; got "
       "fast"},
      {{{"{rank: 3, memory: 40GiB", "{rank: 4, memory: 40GiB"}},
       "run.yaml:37: cluster.devices.overrides[0].rank: must be a rank in 0 .. "
       "3 (pipeline.stages = 4); got 4"},
      {{{"      - {rank: 3, memory: 40GiB, speed: 2.0}",
         "      - {rank: 3, memory: 40GiB}\n      - {rank: 3, speed: 2.0}"}},
       "run.yaml:38: cluster.devices.overrides[1].rank: must name each rank "
       "once; got rank 3 again (also cluster.devices.overrides[0].rank)"},
      {{{"      - {rank: 3, memory: 40GiB, speed: 2.0}",
         "      - {memory: 40GiB, speed: 2.0}"}},
       "run.yaml:37: cluster.devices.overrides[0].rank: must be given (0 .. "
       "3); got nothing"},
      {{{"  devices:\n    memory: 80GiB\n    speed: 1.0\n    overrides:\n"
         "      - {rank: 3, memory: 40GiB, speed: 2.0}\n",
         "  devices:\n    - {memory: 80GiB}\n    - {memory: 80GiB}\n"
         "    - {memory: 80GiB}\n\n\n"}},
       "run.yaml:33: cluster.devices: must list one device per rank "
       "(pipeline.stages = 4); got 3"},
      {{{"  devices:\n    memory: 80GiB\n    speed: 1.0\n    overrides:\n"
         "      - {rank: 3, memory: 40GiB, speed: 2.0}\n",
         "  devices: 80GiB\n\n\n\n\n"}},
       "run.yaml:33: cluster.devices: must be a map (every rank alike) or a "
       "list of one device per rank; got 80GiB"},
      {{{"bandwidth: 50GB/s}", "bandwidth: 0GB/s}"}},
       "run.yaml:38: cluster.link.bandwidth: must be a positive bandwidth; got "
       "0GB/s"},
      {{{"bandwidth: 50GB/s}", "bandwidth: 50GB}"}},
       "run.yaml:38: cluster.link.bandwidth: must be a bandwidth with a unit"},
      {{{"{latency: 10us, bandwidth: 50GB/s}", "{latency: 10us}"}},
       "run.yaml:38: cluster.link.bandwidth: must be given (a positive "
       "bandwidth); got nothing"},
      {{{"latency: 10us,", "latency: -10us,"}},
       "run.yaml:38: cluster.link.latency: must be a non-negative duration; "
       "got -10us"},
      {{{"{rank: 1, latency: 20us", "{rank: -1, latency: 20us"}},
       "run.yaml:40: cluster.links[0].rank: must be a rank in 0 .. 3 "
       "(pipeline.stages = 4); got -1"},
      {{{"bandwidth: 25GB/s}", "bandwidth: 25Gb/s}"}},
       "run.yaml:40: cluster.links[0].bandwidth: must be a bandwidth with a "
       "unit (B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s, Kbit/s, "
       "Mbit/s, Gbit/s, Tbit/s); got 25Gb/s (unknown unit \"Gb/s\")"},
  });
}

TEST_CASE("config errors: strategy", "[config]") {
  CheckErrors({
      {{{"[[3, 2, 2, 3]]", "[[3, 2, 2, 2]]"}},
       "run.yaml:49: strategy.layers_per_chunk: must add up to the model's 10 "
       "layers (after repeat); got 9 (3+2+2+2), which would drop layers"},
      {{{"[[3, 2, 2, 3]]", "[[3, 2, 2, 4]]"}},
       "run.yaml:49: strategy.layers_per_chunk: must add up to the model's 10 "
       "layers (after repeat); got 11 (3+2+2+4)"},
      {{{"[[3, 2, 2, 3]]", "[[3, 2, 5]]"}},
       "run.yaml:49: strategy.layers_per_chunk[0]: must be a list of 4 "
       "integers, one per rank (pipeline.stages = 4); got a list of 3"},
      {{{"[[3, 2, 2, 3]]", "[[3, 2], [2, 3]]"}},
       "run.yaml:49: strategy.layers_per_chunk: must be a list of 1 list of 4 "
       "integers ([chunk][rank], pipeline.stages = 4) or a flat list of 4; got "
       "a list of 2 lists"},
      {{{"[[3, 2, 2, 3]]", "[3, 2, 5]"}},
       "run.yaml:49: strategy.layers_per_chunk: must be a list of 1 list of 4 "
       "integers ([chunk][rank], pipeline.stages = 4) or a flat list of 4; got "
       "a list of 3"},
      {{{"[[3, 2, 2, 3]]", "[[3, 0, 4, 3]]"}},
       "run.yaml:49: strategy.layers_per_chunk[0][1]: must be positive (chunk "
       "0 of rank 1 would be empty; set strategy.allow_empty_chunks to allow "
       "it); got 0"},
      {{{"[[3, 2, 2, 3]]", "[[3, -1, 5, 3]]"}},
       "run.yaml:49: strategy.layers_per_chunk[0][1]: must be a non-negative "
       "integer; got -1"},
      {{{"  allow_empty_chunks: false", "  layout: \"Et*2|t*2|t*2|t*2L\""}},
       "run.yaml:50: strategy.layout: must not be given with "
       "strategy.layers_per_chunk (give one of layers_per_chunk, layout, "
       "offset); got both"},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "layout: \"Et*2|t*2|t*x|t*2L\""}},
       "run.yaml:49: strategy.layout: position 12: '*' must be followed by a "
       "repeat count; got \"Et*2|t*2|t*x|t*2L\""},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "layout: \"Et*2|t*2|t*4L\""}},
       "run.yaml:49: strategy.layout: must have p*v = 4 stages (p=4, v=1) "
       "separated by '|'; got 3 in \"Et*2|t*2|t*4L\""},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "layout: \"Et*2|t*2|t*2|t*3L\""}},
       "run.yaml:49: strategy.layout: position 14: expected 'L' (loss/head) "
       "for layer 9 (head); got 't' (decoder layer) in "
       "\"Et*2|t*2|t*2|t*3L\""},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "layout: \"Et*2|t*6||L\""}},
       "run.yaml:49: strategy.layout: must give every stage a layer (set "
       "strategy.allow_empty_chunks to allow empty ones); got stage 2 (chunk 0 "
       "of rank 2) empty in \"Et*2|t*6||L\""},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "offset: [1, 0, 0, 0]"}},
       "run.yaml:49: strategy.offset: must add up to 0 (the 8 decoder layers "
       "mod p*v = 4, pipeline.stages = 4); got 1"},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "offset: [-3, 3, 0, 0]"}},
       "run.yaml:49: strategy.offset[0]: must be at least -2 (chunk 0 of rank "
       "0 gets 2 + offset decoder layers); got -3"},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "offset: [0, -2, 2, 0]"}},
       "run.yaml:49: strategy.offset[1]: must leave chunk 0 of rank 1 at "
       "least one layer (set strategy.allow_empty_chunks to allow empty "
       "chunks); got -2 (2 + offset = 0)"},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "offset: [0, x, 0, 0]"}},
       "run.yaml:49: strategy.offset[1]: must be an integer; got x"},
      {{{"allow_empty_chunks: false", "allow_empty_chunks: maybe"}},
       "run.yaml:50: strategy.allow_empty_chunks: must be true or false; got "
       "maybe"},
      {{{"full: [2, 1, 0, 0]", "full: [4, 1, 0, 0]"}},
       "run.yaml:52: strategy.recompute.full[0]: must be at most the 3 layers "
       "of stage 0 (chunk 0 of rank 0); got 4"},
      {{{"full: [2, 1, 0, 0]", "full: [2, 1, 0]"}},
       "run.yaml:52: strategy.recompute.full: must be a list of 1 list of 4 "
       "integers ([chunk][rank], pipeline.stages = 4) or a flat list of 4, or "
       "one integer; got a list of 3"},
      {{{"full: [2, 1, 0, 0]", "full: [2, -1, 0, 0]"}},
       "run.yaml:52: strategy.recompute.full[1]: must be a non-negative "
       "integer; got -1"},
      {{{"full: [2, 1, 0, 0]", "fancy: [2, 1, 0, 0]"}},
       "run.yaml:52: strategy.recompute.fancy: must name a recompute mode some "
       "layer offers (full, selective) or be layers; got fancy"},
      {{{"kind: head", "kind: other"},
        {"full: [2, 1, 0, 0]", "full: [0, 0, 0, 3]"}},
       "run.yaml:52: strategy.recompute.full: stage 3: the first 3 layers must "
       "offer recompute mode \"full\"; got layer head, which offers none"},
      {{{"decoder.7: full", "decoder.9: full"}},
       "run.yaml:54: strategy.recompute.layers.decoder.9: must name a layer of "
       "the model (after repeat, e.g. head); got decoder.9"},
      {{{"decoder.7: full", "head: full"}},
       "run.yaml:54: strategy.recompute.layers.head: must be a recompute mode "
       "head offers (none); got full"},
      {{{"decoder.7: full", "decoder.7: partial"}},
       "run.yaml:54: strategy.recompute.layers.decoder.7: must be a recompute "
       "mode decoder.7 offers (none, full, selective); got partial"},
  });
}

TEST_CASE("config errors: the default split must fill every stage",
          "[config]") {
  CHECK(ParseError(Edit({{"stages: 4", "stages: 16"},
                         {"{rank: 3, memory", "{rank: 13, memory"}},
                        WithoutStrategy())) ==
        "run.yaml:3: model.layers: must fill all 16 stages (pipeline.stages = "
        "16) for the default even split; got 10 layers, which leave chunk 0 of "
        "rank 9 empty (give strategy.layers_per_chunk or set "
        "strategy.allow_empty_chunks)");
  Result<RunConfig> allowed =
      Parse(Edit({{"stages: 4", "stages: 16"},
                  {"{rank: 3, memory", "{rank: 13, memory"}},
                 WithoutStrategy()) +
            "strategy:\n  allow_empty_chunks: true\n");
  REQUIRE(allowed.ok());
  CHECK(allowed->strategy.layers_per_stage ==
        std::vector<int>{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1});
}

TEST_CASE("config errors: Prepare places schedule errors", "[config]") {
  const std::string interleaved =
      Edit({{"virtual_stages: 1", "virtual_stages: 2"},
            {"schedule: 1f1b", "schedule: interleaved"}},
           WithoutStrategy());
  REQUIRE(Parse(interleaved).ok());
  CHECK(Prepare(*Parse(interleaved)).ok());
  CHECK(
      PrepareError(Edit({{"microbatches: 8", "microbatches: 3"}}, interleaved))
          .rfind("run.yaml:43: pipeline.microbatches: must ", 0) == 0);
  CHECK(PrepareError(
            Edit({{"flavor: megatron", "microbatch_group: 3"}}, interleaved))
            .rfind("run.yaml:46: pipeline.microbatch_group: must ", 0) == 0);
  CHECK(PrepareError(Edit({{"virtual_stages: 1", "virtual_stages: 2"}},
                          WithoutStrategy()))
            .rfind("run.yaml:44: pipeline.virtual_stages: ", 0) == 0);
  CHECK(PrepareError(Edit({{"schedule: 1f1b",
                            "schedule: custom\n"
                            "  schedule_csv: no-such.csv"}}))
            .rfind("run.yaml:46: pipeline.schedule_csv: must name a readable "
                   "schedule CSV; got no-such.csv (no-such.csv: ",
                   0) == 0);
}

// ---- fixtures on disk
// --------------------------------------------------------

const std::string kData = PPB_TEST_DATA_DIR "/configs/";

TEST_CASE("config: custom schedule CSV relative to the config", "[config]") {
  Result<RunConfig> r = LoadConfig(kData + "custom-p2.yaml", {});
  REQUIRE(r.ok());
  CHECK(r->schedule == "custom");
  Result<PreparedRun> run = Prepare(*r);
  REQUIRE(run.ok());
  REQUIRE(run->program.ops.size() == 2);
  CHECK(run->program.ops[0].size() == 4);

  CliOverrides bad;
  bad.schedule_csv = kData + "bad-action.csv";
  Result<RunConfig> b = LoadConfig(kData + "custom-p2.yaml", bad);
  REQUIRE(b.ok());
  Result<PreparedRun> bad_run = Prepare(*b);
  REQUIRE_FALSE(bad_run.ok());
  CHECK(bad_run.error().message.rfind(
            kData +
                "custom-p2.yaml: --schedule-csv: must be a valid torch "
                "schedule CSV; got " +
                kData + "bad-action.csv, line 2",
            0) == 0);

  CliOverrides deadlock;
  deadlock.schedule_csv = kData + "deadlock-p2.csv";
  Result<RunConfig> d = LoadConfig(kData + "custom-p2.yaml", deadlock);
  REQUIRE(d.ok());
  Result<PreparedRun> dead_run = Prepare(*d);
  REQUIRE_FALSE(dead_run.ok());
  CHECK(dead_run.error().message.rfind(
            kData + "custom-p2.yaml: --schedule-csv: ", 0) == 0);
  CHECK(dead_run.error().message.find("deadlock") != std::string::npos);
}

TEST_CASE("config: unreadable file", "[config]") {
  Result<RunConfig> r = LoadConfig(kData + "no-such.yaml", {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == kData +
                                 "no-such.yaml: must be a readable config "
                                 "file; got No such file or directory");
}

TEST_CASE("config: shipped configs load and prepare", "[config]") {
  int n = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(PPB_CONFIGS_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    ++n;
    INFO(entry.path().string());
    Result<RunConfig> r = LoadConfig(entry.path().string(), {});
    if (!r.ok()) FAIL(r.error().message);
    Result<PreparedRun> run = Prepare(*r);
    if (!run.ok()) FAIL(run.error().message);
  }
  CHECK(n >= 1);
}

TEST_CASE("config: FormatError", "[config]") {
  RunConfig c;
  c.path = "run.yaml";
  c.key_lines = {
      {"pipeline", 3}, {"pipeline.stages", 0}, {"strategy.layout", 9}};
  CHECK(FormatError(c, Error{"", "bad"}) == "run.yaml: bad");
  CHECK(FormatError(c, Error{"strategy.layout", "x"}) ==
        "run.yaml:9: strategy.layout: x");
  CHECK(FormatError(c, Error{"pipeline.microbatch_group", "x"}) ==
        "run.yaml:3: pipeline.microbatch_group: x");
  CHECK(FormatError(c, Error{"pipeline.stages", "x"}) ==
        "run.yaml: --stages: x");
  CHECK(FormatError(c, Error{"placement", "x"}) == "run.yaml: placement: x");
}

// ---- Megatron layouts and first-N recompute --------------------------------

TEST_CASE("strategy: Megatron layout strings", "[config][strategy]") {
  // DeepSeek-V3: 61 decoder layers + MTP, p = 16, v = 2.
  const std::vector<Layer> ds = Kinds("E" + std::string(61, 't') + "mL");
  Result<std::vector<int>> r =
      ParseMegatronLayout("Et*3|(tt|)*29,m|L", ds, 16, 2);
  REQUIRE(r.ok());
  std::vector<int> want = {4};
  for (int i = 0; i < 29; ++i) want.push_back(2);
  want.push_back(1);
  want.push_back(1);
  CHECK(*r == want);
  CHECK(FormatMegatronLayout(*r, ds) == "Et*3|" + [] {
    std::string s;
    for (int i = 0; i < 29; ++i) s += "t*2|";
    return s;
  }() + "m|L");
  Result<std::vector<int>> again =
      ParseMegatronLayout(FormatMegatronLayout(*r, ds), ds, 16, 2);
  REQUIRE(again.ok());
  CHECK(*again == *r);

  const std::vector<Layer> small = Kinds("EttttL");
  CHECK(*ParseMegatronLayout("Et|tt|tL", small, 3, 1) ==
        std::vector<int>{2, 2, 2});
  CHECK(*ParseMegatronLayout(" E , t | ((t)*2) | t L ", small, 3, 1) ==
        std::vector<int>{2, 2, 2});
  CHECK(*ParseMegatronLayout("E|t*4||L", small, 2, 2) ==
        std::vector<int>{1, 4, 0, 1});
  CHECK(FormatMegatronLayout({1, 4, 0, 1}, small) == "E|t*4||L");
  CHECK(*ParseMegatronLayout("Et*0tttt|L", small, 2, 1) ==
        std::vector<int>{5, 1});
}

TEST_CASE("strategy: bad Megatron layouts name the position",
          "[config][strategy]") {
  const std::vector<Layer> ds = Kinds("E" + std::string(61, 't') + "mL");
  const std::vector<Layer> small = Kinds("EttttL");
  auto message = [](Result<std::vector<int>> r) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().key == "strategy.layout");
    return r.error().message;
  };
  CHECK(message(ParseMegatronLayout("Et*3|(tt|)*29,m|L", ds, 16, 1)) ==
        "position 9: must have p*v = 16 stages (p=16, v=1), this '|' starts "
        "stage 17; got \"Et*3|(tt|)*29,m|L\"");
  CHECK(message(ParseMegatronLayout("Et*3|(tt|*29,m|L", ds, 16, 2)) ==
        "position 6: '(' is never closed; got \"Et*3|(tt|*29,m|L\"");
  CHECK(message(ParseMegatronLayout("Et)|tt|tL", small, 3, 1)) ==
        "position 3: ')' without a matching '('; got \"Et)|tt|tL\"");
  CHECK(message(ParseMegatronLayout("Ex|tt|tL", small, 3, 1)) ==
        "position 2: expected E, t, m, L, '|', '(' or ')', not 'x'; got "
        "\"Ex|tt|tL\"");
  CHECK(message(ParseMegatronLayout("*3E", small, 3, 1)) ==
        "position 1: '*' must follow a symbol or a ')'; got \"*3E\"");
  CHECK(message(ParseMegatronLayout("tE|tt|tL", small, 3, 1)) ==
        "position 1: expected 'E' (embedding) for layer 0 (embedding); got "
        "'t' (decoder layer) in \"tE|tt|tL\"");
  CHECK(message(ParseMegatronLayout("Et|tt|tLt", small, 3, 1)) ==
        "position 9: 't' (decoder layer) is past the model's last layer (the "
        "model has 6 layers); got \"Et|tt|tLt\"");
  CHECK(message(ParseMegatronLayout("Et|tt|t", small, 3, 1)) ==
        "must place all 6 layers of the model; got 5 in \"Et|tt|t\" (the next "
        "would be 'L' (loss/head) for head)");
  CHECK(message(ParseMegatronLayout("t*1000000000", small, 3, 1)) ==
        "position 13: the layout must expand to at most 100 symbols (far more "
        "than the model has); got \"t*1000000000\"");
  const std::vector<Layer> mtp = Kinds("EttmL");
  CHECK(
      message(ParseMegatronLayout("Et|tm||L", mtp, 2, 2)) ==
      "position 5: an MTP layer must be in a rank's last chunk (chunk 1); got "
      "it in stage 1 (chunk 0 of rank 1) in \"Et|tm||L\"");
  CHECK(*ParseMegatronLayout("Et|t|m|L", mtp, 2, 2) ==
        std::vector<int>{2, 1, 1, 1});
}

TEST_CASE("strategy: a layout nested 30,000 deep is refused, not a crash",
          "[config][strategy]") {
  const std::vector<Layer> small = Kinds("EttttL");
  const std::string deep =
      std::string(30000, '(') + "Ett|ttL" + std::string(30000, ')');
  Result<std::vector<int>> r = ParseMegatronLayout(deep, small, 2, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "position 101: '(' must nest at most 100 deep; got \"" +
            std::string(60, '(') + "... (60007 characters)\"");
  CHECK(MegatronLayoutStages(deep, 1000).error().message ==
        r.error().message);
  // 100 levels are accepted.
  CHECK(*ParseMegatronLayout(std::string(100, '(') + "Ett|ttL" +
                                 std::string(100, ')'),
                             small, 2, 1) == std::vector<int>{3, 3});
  // Through the config: file, line, key; the value abbreviated.
  const std::string message = ParseError(
      WithoutStrategy() + "strategy:\n  layout: \"" + deep + "\"\n");
  CHECK(message.find(": strategy.layout: position 101: '(' must nest at most "
                     "100 deep; got \"((((") != std::string::npos);
  CHECK(message.rfind("run.yaml:", 0) == 0);
  CHECK(message.size() < 300);
}

TEST_CASE("errors abbreviate a long value they give back", "[config]") {
  CHECK(Abbreviate(std::string(80, 'x')) == std::string(80, 'x'));
  CHECK(Abbreviate(std::string(81, 'x')) ==
        std::string(60, 'x') + "... (81 characters)");
  // Not cut inside a UTF-8 sequence: 59 bytes, then a 2-byte character.
  CHECK(Abbreviate(std::string(59, 'x') + "\xc3\xa9" + std::string(40, 'y')) ==
        std::string(59, 'x') + "... (101 characters)");
  std::string text(test::kTinySearchConfig);
  text.replace(text.find("forward: 1ms") + 9, 3, std::string(5000, 'z'));
  CHECK(ParseError(text) ==
        "run.yaml:6: model.layers[0].forward: must be a duration with a unit "
        "(ns, us, ms, s); got " +
            std::string(60, 'z') + "... (5000 characters)");
}

TEST_CASE("bounds keep the simulator's sums in range", "[config]") {
  auto edited = [](std::string_view from, const std::string& to) {
    std::string text(test::kTinySearchConfig);
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  // One value beyond its bound: file, line, key, the bound, the value.
  CHECK(ParseError(edited("forward: 1ms", "forward: 5000000000s")) ==
        "run.yaml:6: model.layers[0].forward: must be a duration of at most "
        "1000s; got 5000000000s");
  CHECK(ParseError(edited("static_memory: 1GiB", "static_memory: 2000TB")) ==
        "run.yaml:8: model.layers[0].static_memory: must be a size of at "
        "most 1TiB; got 2000TB");
  CHECK(ParseError(edited("{memory: 7GiB}", "{memory: 7GiB, speed: 1e-300}")) ==
        "run.yaml:13: cluster.devices.speed: must be a relative speed in "
        "[0.1, 1000]; got 1e-300");
  CHECK(ParseError(edited("{memory: 7GiB}", "{memory: 7GiB, speed: 1e300}")) ==
        "run.yaml:13: cluster.devices.speed: must be a relative speed in "
        "[0.1, 1000]; got 1e300");
  CHECK(Parse(edited("forward: 1ms", "forward: 1000s")).ok());
  // Values in bounds whose iteration total is not: the micro-batches named.
  std::string big = edited("repeat: 4", "repeat: 1000");
  big.replace(big.find("forward: 1ms"), 12, "forward: 1000s");
  big.replace(big.find("microbatches: 4"), 15, "microbatches: 10000");
  CHECK(PrepareError(big) ==
        "run.yaml:16: pipeline.microbatches: must keep one iteration's work "
        "(every op and transfer of every micro-batch) under 2^62 ns (146 "
        "years) and its memory under 2^62 bytes; got m = 10000 with 1e+10 s "
        "of work and 1.07e+16 bytes");
}

TEST_CASE("strategy: first-N recompute", "[config][strategy]") {
  std::vector<Layer> layers = Kinds("EttttL");
  for (Layer& l : layers) {
    if (l.kind == LayerKind::Decoder) {
      l.recompute = {{"full", 0, 1}, {"selective", 0, 1}};
    }
  }
  std::vector<std::uint8_t> rc(layers.size(), 0);
  // Stages [E t t] [t t L]: the embedding is skipped without counting.
  REQUIRE(ApplyFirstNRecompute(layers, {3, 3}, {1, 3}, "full", rc).ok());
  CHECK(rc == std::vector<std::uint8_t>{0, 1, 0, 1, 1, 0});
  REQUIRE(ApplyFirstNRecompute(layers, {3, 3}, {2, 1}, "selective", rc).ok());
  CHECK(rc == std::vector<std::uint8_t>{0, 1, 2, 1, 1, 0});

  Status over = ApplyFirstNRecompute(layers, {3, 3}, {4, 0}, "full", rc);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().key == "strategy.recompute.full");
  CHECK(over.error().message ==
        "stage 0: must be in [0, 3] (the layers of the stage); got 4");

  layers[4].recompute.clear();
  Status lacks = ApplyFirstNRecompute(layers, {3, 3}, {0, 2}, "full", rc);
  REQUIRE_FALSE(lacks.ok());
  CHECK(lacks.error().message ==
        "stage 1: the first 2 layers must offer recompute mode \"full\"; got "
        "layer decoder.3, which offers none");
}

}  // namespace
}  // namespace ppb
