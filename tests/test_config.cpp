// The config loader (apps/config.h): a full config parsed to exact values,
// defaults, CLI overrides, fixtures on disk, error formatting and the bounds
// that keep the simulator's sums in range. The validation errors are in
// test_config_errors.cpp, the unit strings in test_units.cpp, the strategy
// notations in test_strategy_layout.cpp.
//
// Most tests edit kBase (tests/config_text.h, line numbers in its comments).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/search_problem.h"
#include "core/strategy.h"
#include "tests/app_helpers.h"
#include "tests/config_text.h"

namespace ppb {
namespace {

using test::Edit;
using test::kBase;
using test::Parse;
using test::ParseError;
using test::PrepareError;
using test::WithoutStrategy;

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
  CHECK(c.communication_given);
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
  CHECK(c.shape.comm == CommMode::Blocking);  // 1f1b: Megatron's rule
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

// A CSV with I and W actions needs both halves of every backward it splits:
// on layers that give only a fused `backward` (custom-p2.yaml) it is bad
// input naming the action, its line and the layer (issue 32); on layers
// that give backward_input and backward_weight it runs, each I and W taking
// its half (rank 1: F0, I0, W0, F1, I1, W1 of 1 ms each, back to back once
// rank 0's F0 has arrived).
TEST_CASE("config: a CSV's I and W need split backward costs", "[config]") {
  CliOverrides split;
  split.schedule_csv = kData + "split-p2.csv";
  Result<RunConfig> fused = LoadConfig(kData + "custom-p2.yaml", split);
  REQUIRE(fused.ok());
  Result<PreparedRun> refused = Prepare(*fused);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message ==
        kData + "custom-p2.yaml: --schedule-csv: must run B, not I and W, on a stage whose "
                "layers give only a fused backward; got 0I0 on line 1 of " +
                kData +
                "split-p2.csv, and stage 0 holds layer block.0 (backward: given whole; give "
                "backward_input and backward_weight to split it)");
  Result<RunConfig> ok = LoadConfig(kData + "split-p2.yaml", {});
  REQUIRE(ok.ok());
  Result<PreparedRun> run = Prepare(*ok);
  REQUIRE(run.ok());
  const SimResult r = Engine().Run(run->spec, run->program);
  REQUIRE(r.outcome == Outcome::Ok);
  // Rank 1's six 1 ms ops after F0 of rank 0 (1 ms) and the message.
  CHECK(r.timings[1].back().end - r.timings[1].front().start == 6'000'000);
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

}  // namespace
TEST_CASE("config: pipeline communication follows Megatron's rule per schedule", "[config]") {
  // Without pipeline.communication: 1f1b blocking, interleaved overlapped,
  // in the config and in each choice of a search over both.
  std::string text(test::kTinySearchConfig);
  text += "search:\n  schedules: [1f1b, interleaved]\n  virtual_stages: [1, 2]\n";
  Result<RunConfig> c = Parse(text);
  REQUIRE(c.ok());
  CHECK(!c->communication_given);
  CHECK(c->shape.comm == CommMode::Blocking);
  Result<SearchProblem> p = BuildSearchProblem(*c);
  REQUIRE(p.ok());
  REQUIRE(p->choices.size() == 2);
  CHECK(p->comm_by_schedule);
  CHECK(ChoiceComm(*p, p->choices[0]) == CommMode::Blocking);
  CHECK(ChoiceComm(*p, p->choices[1]) == CommMode::Overlapped);
  CHECK(DescribeComm(*p) == "blocking for 1f1b/gpipe, overlapped otherwise (Megatron's rule)");
  Candidate cand;
  cand.choice = 1;
  cand.strategy = c->strategy;
  CHECK(CandidateConfig(*c, *p, cand).shape.comm == CommMode::Overlapped);
  // Given: every choice takes it.
  std::string given(test::kTinySearchConfig);
  given += "  communication: overlapped\n";
  given += "search:\n  schedules: [1f1b, interleaved]\n  virtual_stages: [1, 2]\n";
  Result<RunConfig> g = Parse(given);
  REQUIRE(g.ok());
  CHECK(g->communication_given);
  Result<SearchProblem> q = BuildSearchProblem(*g);
  REQUIRE(q.ok());
  CHECK(ChoiceComm(*q, q->choices[0]) == CommMode::Overlapped);
  CHECK(DescribeComm(*q) == "overlapped");
}

}  // namespace ppb
