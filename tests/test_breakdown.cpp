// The bubble breakdown (core/breakdown.h): its parts add up to the
// iteration time (closed forms and hand-computed cases, the shipped configs
// and many shapes), the explanation names the cause in figures, and the
// text and JSON reports print it. Split from test_viz.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "apps/output/output.h"
#include "apps/output/report.h"
#include "core/breakdown.h"
#include "core/critical_path.h"
#include "core/engine.h"
#include "schedules/schedule.h"
#include "tests/app_helpers.h"
#include "tests/viz_helpers.h"

namespace ppb {

using namespace viz_test;  // NOLINT: the shared helpers
using test::Cli;
using test::CliRun;
using test::Slurp;

// ---- the bubble breakdown ---------------------------------------------------

TEST_CASE("breakdown: uniform 1F1B and GPipe, closed form", "[viz][breakdown]") {
  // p=4, m=8, tf = tb = 1 ms, free links: every rank computes m(tf+tb) and
  // waits (p-1)(tf+tb) for fill and drain.
  const int p = 4, m = 8;
  PipelineSpec spec = PipelineSpec::Uniform(p, 1, m, kMs, kMs);
  for (auto gen : {&Generate1F1B, &GenerateGPipe}) {
    const SimResult r = Run(spec, Must(gen(spec, {})));
    CheckSums(r);
    const Breakdown b = ComputeBreakdown(r);
    CHECK(b.iteration == (m + p - 1) * 2 * kMs);
    CHECK(b.mean_useful == m * 2 * kMs);
    CHECK(b.bottleneck == 0);
    for (const BubbleParts& parts : b.devices) {
      CHECK(parts[BubbleTerm::Ideal] == m * 2 * kMs);
      CHECK(parts[BubbleTerm::Imbalance] == 0);
      CHECK(parts[BubbleTerm::Recompute] == 0);
      CHECK(parts[BubbleTerm::Communication] == 0);
      CHECK(parts[BubbleTerm::WarmupDrain] == (p - 1) * 2 * kMs);
      CHECK(parts.largest_loss() == BubbleTerm::WarmupDrain);
    }
  }
}

TEST_CASE("breakdown: interleaved, closed form", "[viz][breakdown]") {
  // Per chunk a = b = 1 ms; a rank's share tf = tb = v ms. Warm-up/drain is
  // (p-1)(tf+tb)/v (Narayanan et al., SC'21, section 2.2).
  for (int v : {2, 4}) {
    const int p = 4, m = 8;
    PipelineSpec spec = PipelineSpec::Uniform(p, v, m, kMs, kMs);
    const SimResult r = Run(spec, Must(GenerateInterleaved(spec, {})));
    CheckSums(r);
    const Breakdown b = ComputeBreakdown(r);
    INFO("v=" << v);
    CHECK(b.pipeline[BubbleTerm::Ideal] == m * 2 * v * kMs);
    CHECK(b.pipeline[BubbleTerm::WarmupDrain] == (p - 1) * 2 * v * kMs / v);
  }
}

TEST_CASE("breakdown: uneven stages, hand-computed", "[viz][breakdown]") {
  // Stage 0: f=1, b=2; stage 1: f=3, b=3; p=2, m=2, 1F1B (test_engine):
  // rank 0 busy 6, rank 1 busy 12, makespan 15; mean useful 9.
  PipelineSpec spec = PipelineSpec::Uniform(2, 1, 2, 1, 2);
  spec.stages[1].forward = 3;
  spec.stages[1].backward_input = 3;
  const SimResult r = Run(spec, Must(Generate1F1B(spec, {})));
  REQUIRE(r.makespan == 15);
  CheckSums(r);
  const Breakdown b = ComputeBreakdown(r);
  CHECK(b.mean_useful == 9);
  CHECK(b.bottleneck == 1);
  // Rank 1 holds 3 more than the mean and idles 3 (fill and drain).
  CHECK(b.devices[1].ns == std::array<Nanos, 5>{9, 3, 0, 0, 3});
  // Rank 0 computes 6; 3 of its 9 idle are the share it lacks.
  CHECK(b.devices[0].ns == std::array<Nanos, 5>{6, 3, 0, 0, 6});
}

TEST_CASE("breakdown: communication and recompute, hand-computed", "[viz][breakdown]") {
  SECTION("latency: p=2, m=1, 5 ns links") {
    // rank0 F 0-1, rank1 F 6-7, B 7-9, rank0 B 14-16 (test_engine).
    PipelineSpec spec = PipelineSpec::Uniform(2, 1, 1, 1, 2);
    spec.link_matrix = RingLinkMatrix(2, {Link{5, 0}, Link{5, 0}});
    const SimResult r = Run(spec, Must(Generate1F1B(spec, {})));
    REQUIRE(r.makespan == 16);
    CheckSums(r);
    const Breakdown b = ComputeBreakdown(r);
    // Each rank computes 3 and waits 5 on a message; the rest is fill/drain.
    CHECK(b.devices[0].ns == std::array<Nanos, 5>{3, 0, 0, 5, 8});
    CHECK(b.devices[1].ns == std::array<Nanos, 5>{3, 0, 0, 5, 8});
  }
  SECTION("blocking sends") {
    PipelineSpec spec = PipelineSpec::Uniform(2, 1, 2, 1, 1);
    for (auto& st : spec.stages) st.output_bytes = 10;
    spec.link_matrix = RingLinkMatrix(2, {Link{0, 1'000'000'000}, Link{0, 1'000'000'000}});
    spec.comm = CommMode::Blocking;
    const SimResult r = Run(spec, Must(GenerateGPipe(spec, {})));
    REQUIRE(r.makespan == 46);
    CheckSums(r);
    const Breakdown b = ComputeBreakdown(r);
    CHECK(b.devices[0][BubbleTerm::Communication] >= 20);  // 20 blocked
  }
  SECTION("recompute: one rank, GPipe, m=2") {
    // F 2 each; B = 2 recompute + 4: makespan 16, recompute 4, no idle.
    PipelineSpec spec = PipelineSpec::Uniform(1, 1, 2, 2, 4);
    spec.stages[0].recompute = 2;
    const SimResult r = Run(spec, Must(GenerateGPipe(spec, {})));
    REQUIRE(r.makespan == 16);
    CheckSums(r);
    const Breakdown b = ComputeBreakdown(r);
    CHECK(b.pipeline.ns == std::array<Nanos, 5>{12, 0, 4, 0, 0});
    CHECK(b.pipeline.largest_loss() == BubbleTerm::Recompute);
  }
}

TEST_CASE("breakdown: parts add up on the shipped configs and many shapes", "[viz][breakdown]") {
  for (const char* name : {"example.yaml", "interleaved.yaml", "tight-memory.yaml",
                           "heterogeneous.yaml", "custom.yaml"}) {
    INFO(name);
    CheckSums(SimulateFile(name).result);
  }
  for (const char* schedule : {"gpipe", "1f1b", "interleaved"}) {
    CliOverrides ov;
    ov.schedule = schedule;
    ov.virtual_stages = std::string(schedule) == "interleaved" ? 2 : 1;
    ov.microbatches = 8;
    INFO(schedule);
    CheckSums(SimulateFile("example.yaml", ov).result);
  }
  for (const char* schedule : {"gpipe", "1f1b"}) {
    CliOverrides ov;
    ov.schedule = schedule;
    CheckSums(SimulateFile("heterogeneous.yaml", ov).result);
    CheckSums(SimulateFile("tight-memory.yaml", ov).result);
  }
  // Heterogeneous stages, links and recompute, blocking and overlapped.
  for (CommMode comm : {CommMode::Overlapped, CommMode::Blocking}) {
    for (int p : {2, 3, 5}) {
      PipelineSpec spec = PipelineSpec::Uniform(p, 1, 7, 10, 20);
      for (int s = 0; s < p; ++s) {
        spec.stages[s].forward = 10 + 7 * s;
        spec.stages[s].backward_input = 20 + 3 * s;
        spec.stages[s].recompute = s % 2 == 0 ? 5 : 0;
        spec.stages[s].output_bytes = 1000;
      }
      std::vector<Link> links;
      for (int i = 0; i < p; ++i) links.push_back(Link{3 + i, 100'000'000});
      spec.link_matrix = RingLinkMatrix(p, links);
      spec.comm = comm;
      for (auto gen : {&GenerateGPipe, &Generate1F1B}) CheckSums(Run(spec, Must(gen(spec, {}))));
    }
  }
}

TEST_CASE("breakdown: the explanation names the cause in figures", "[viz][breakdown]") {
  SECTION("warm-up/drain") {
    PipelineSpec spec = PipelineSpec::Uniform(8, 1, 8, kMs, kMs);
    const SimResult r = Run(spec, Must(Generate1F1B(spec, {})));
    const std::string e = ExplainBreakdown(spec, r, ComputeBreakdown(r));
    INFO(e);
    CHECK(e.rfind("warm-up/drain is the largest loss (46.7 % of the iteration on rank 0)", 0) == 0);
    CHECK(e.find("7 of 8 ranks wait up to 7.000 ms for their first op") != std::string::npos);
    CHECK(e.find("interleaving (v > 1)") != std::string::npos);
  }
  SECTION("imbalance") {
    // Layers 5, 5, 5, 9 with f = n, b = 2n; m = 64.
    PipelineSpec spec = PipelineSpec::Uniform(4, 1, 64, 1, 1);
    const int layers[] = {5, 5, 5, 9};
    for (int s = 0; s < 4; ++s) {
      spec.stages[s].num_layers = layers[s];
      spec.stages[s].forward = layers[s] * kMs;
      spec.stages[s].backward_input = 2 * layers[s] * kMs;
    }
    const SimResult r = Run(spec, Must(Generate1F1B(spec, {})));
    CheckSums(r);
    const Breakdown b = ComputeBreakdown(r);
    CHECK(b.pipeline.largest_loss() == BubbleTerm::Imbalance);
    const std::string e = ExplainBreakdown(spec, r, b);
    INFO(e);
    CHECK(e.find("rank 3 holds 9 layers vs 6.00 mean and computes 1728.000 ms vs "
                 "1152.000 ms mean") != std::string::npos);
  }
  SECTION("communication, blocking") {
    PipelineSpec spec = PipelineSpec::Uniform(2, 1, 1, 1, 2);
    spec.link_matrix = RingLinkMatrix(2, {Link{100, 0}, Link{100, 0}});
    spec.comm = CommMode::Blocking;
    const SimResult r = Run(spec, Must(Generate1F1B(spec, {})));
    const Breakdown b = ComputeBreakdown(r);
    CHECK(b.pipeline.largest_loss() == BubbleTerm::Communication);
    const std::string e = ExplainBreakdown(spec, r, b);
    INFO(e);
    CHECK(e.rfind("communication is the largest loss", 0) == 0);
    CHECK(e.find("overlapped communication") != std::string::npos);
  }
  SECTION("recompute") {
    PipelineSpec spec = PipelineSpec::Uniform(1, 1, 2, 2, 4);
    spec.stages[0].recompute = 2;
    spec.stages[0].num_recomputed = 1;
    const SimResult r = Run(spec, Must(GenerateGPipe(spec, {})));
    const std::string e = ExplainBreakdown(spec, r, ComputeBreakdown(r));
    INFO(e);
    CHECK(e.find("(1 of its 1 layers recompute)") != std::string::npos);
  }
  SECTION("nothing lost") {
    PipelineSpec spec = PipelineSpec::Uniform(1, 1, 2, 2, 4);
    const SimResult r = Run(spec, Must(GenerateGPipe(spec, {})));
    CHECK(ExplainBreakdown(spec, r, ComputeBreakdown(r)).rfind("no loss", 0) == 0);
  }
}

// The uneven split separated from fill and drain (issue 32): interleaved
// p = 4, v = 2, m = 8 over 16 identical layers (F = 1 ms, B = 2 ms each).
// Chunks 1, 3 | 3, 1 | ... give every rank 4 layers (no rank imbalance)
// but unequal chunks. The counterfactual of equal stages is then exactly
// the even split 2 per chunk, so its warm-up/drain on the busiest rank is
// the even run's, and the uneven run's excess over it is the split's.
TEST_CASE("breakdown: an uneven split's loss is not booked as fill and drain",
          "[viz][breakdown]") {
  auto layered = [](const std::vector<int>& layers) {
    PipelineSpec spec = PipelineSpec::Uniform(4, 2, 8, 1, 1);
    for (size_t s = 0; s < layers.size(); ++s) {
      spec.stages[s].num_layers = layers[s];
      spec.stages[s].forward = layers[s] * kMs;
      spec.stages[s].backward_input = 2 * layers[s] * kMs;
    }
    return spec;
  };
  const PipelineSpec even = layered({2, 2, 2, 2, 2, 2, 2, 2});
  const PipelineSpec uneven = layered({1, 3, 1, 3, 3, 1, 3, 1});
  const SimResult re = Run(even, Must(GenerateInterleaved(even, {})));
  const SimResult ru = Run(uneven, Must(GenerateInterleaved(uneven, {})));
  REQUIRE(ru.makespan > re.makespan);
  const Breakdown be = ComputeBreakdown(re), bu = ComputeBreakdown(ru);
  // No rank imbalance: every rank computes 4 layers' work.
  CHECK(bu.pipeline[BubbleTerm::Imbalance] == 0);
  const UnevenStages none = UnevenStageLoss(even, Must(GenerateInterleaved(even, {})), be);
  CHECK(none.loss == 0);
  CHECK(none.equal_warmup_drain == be.pipeline[BubbleTerm::WarmupDrain]);
  const UnevenStages u = UnevenStageLoss(uneven, Must(GenerateInterleaved(uneven, {})), bu);
  const Nanos wd = bu.pipeline[BubbleTerm::WarmupDrain];
  CHECK(u.equal_warmup_drain == be.devices[static_cast<size_t>(bu.bottleneck)][BubbleTerm::WarmupDrain]);
  CHECK(u.loss == wd - std::min(wd, u.equal_warmup_drain));
  CHECK(u.loss > 0);
  CHECK(u.slowest == 1);  // the first 3-layer stage
  CHECK(u.slowest_work == 9 * kMs);
  CHECK(u.mean_work == 6 * kMs);
  const std::string e = ExplainBreakdown(uneven, ru, bu, &u);
  INFO(e);
  CHECK(e.find(" of it is the uneven split, not fill and drain: stage 1 (rank 1, chunk 0) with 3 "
               "layers, stage 3 (rank 3, chunk 0) with 3 layers, stage 4 (rank 0, chunk 1) with 3 "
               "layers and 1 more cost 9.000 ms per micro-batch against the stages' mean 6.000 "
               "ms") != std::string::npos);
  // The even split: no such part.
  CHECK(ExplainBreakdown(even, re, be, &none).find("uneven split") == std::string::npos);
}

// The case: GPT-3 175B (HF config), TP 8 + SP, p = 8, v = 4, m = 64,
// with two 4-layer stages in the middle of an otherwise 3-layer layout. It
// runs about 125 ms slower than the even layout; the report names the two
// stages and the part of warm-up/drain they cause.
TEST_CASE("breakdown: GPT-3's two 4-layer stages are named", "[viz][breakdown]") {
  std::string text = Slurp(std::string(PPB_TEST_DATA_DIR) + "/viz/gpt3-175b-flat.yaml");
  text.replace(text.find("hf_config: hf/"), 14, "hf_config: " + Config("hf/"));
  text.replace(text.find("  schedule: 1f1b"), 16, "  schedule: interleaved\n  virtual_stages: 4");
  const std::string layout = "\n  layout: \"Et*2|(t*3|)*14t*4|t*4|(t*3|)*14t*2L\"\n";
  const size_t rc = text.find("  recompute: {selective: true}");
  REQUIRE(rc != std::string::npos);
  const std::string uneven_text = text.substr(0, text.find('\n', rc)) + layout;
  const Simulated u = Simulate(ParseConfig(uneven_text, "gpt3.yaml", {}));
  const Simulated e = Simulate(ParseConfig(text, "gpt3.yaml", {}));
  CHECK(u.result.makespan - e.result.makespan > 100 * kMs);
  const Breakdown b = ComputeBreakdown(u.result);
  const UnevenStages un = UnevenStageLoss(u.run.spec, u.run.program, b);
  CHECK(un.loss > 100 * kMs);
  const std::string why = ExplainBreakdown(u.run.spec, u.result, b, &un);
  INFO(why);
  CHECK(why.find("stage 15 (rank 7, chunk 1) with 4 layers and stage 16 (rank 0, chunk 2) with 4 "
                 "layers cost") != std::string::npos);
}

TEST_CASE("breakdown: text and JSON reports", "[viz][breakdown][cli]") {
  const CliRun j = Cli({"--config", Config("heterogeneous.yaml"), "--format", "json"});
  REQUIRE(j.status == 0);
  const auto json = nlohmann::json::parse(j.out);
  const long long t = json["iteration_time_ns"];
  auto sum = [](const nlohmann::json& ns) {
    long long s = 0;
    for (const auto& [k, v] : ns.items()) s += v.get<long long>();
    return s;
  };
  // The old summary stays, the new object adds ns, fractions and the line.
  CHECK(json.contains("breakdown_ms"));
  const auto& b = json["breakdown"];
  CHECK(sum(b["ns"]) == t);
  CHECK(b["ns"].size() == 5);
  CHECK(b["bottleneck_rank"] == json["breakdown_ms"]["bottleneck_rank"]);
  CHECK(b["explanation"].get<std::string>().find("is the largest loss") != std::string::npos);
  double fractions = 0;
  for (const auto& [k, v] : b["fraction"].items()) fractions += v.get<double>();
  CHECK(fractions == Approx(1.0));
  for (const auto& d : json["devices"]) {
    CHECK(sum(d["breakdown"]["ns"]) == t);
    CHECK(d["breakdown"].contains("largest_loss"));
  }
  const CliRun text = Cli({"--config", Config("heterogeneous.yaml")});
  REQUIRE(text.status == 0);
  CHECK(text.out.find("largest loss") != std::string::npos);
  CHECK(text.out.find("bubble breakdown per rank") != std::string::npos);
}

// ---- the SVG ----------------------------------------------------------------


}  // namespace ppb
