// Engine tests: closed forms (formulas.md §1-2) and hand-computed cases.
#include <catch2/catch.hpp>

#include "core/engine.h"
#include "core/lower.h"
#include "core/validate.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

Program Must(Result<Program> r) {
  if (!r.ok()) FAIL(r.error().key << ": " << r.error().message);
  return std::move(r).value();
}

Op F(int s, int j) { return Op{OpKind::F, StageId(s), MicrobatchId(j)}; }
Op B(int s, int j) { return Op{OpKind::B, StageId(s), MicrobatchId(j)}; }

SimResult RunChecked(const PipelineSpec& spec, const Program& program) {
  REQUIRE(ValidateSpec(spec).ok());
  const Status st = ValidateProgram(spec, program);
  INFO(st.error().message);
  REQUIRE(st.ok());
  Engine engine;
  return engine.Run(spec, program);
}

}  // namespace

TEST_CASE("GPipe and 1F1B take (m+p-1)(tf+tb) with uniform stages",
          "[engine][closed-form]") {
  const Nanos tf = 3, tb = 7;
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 4, 5, 8, 13}) {
      PipelineSpec spec = PipelineSpec::Uniform(p, 1, m, tf, tb);
      for (auto gen : {&GenerateGPipe, &Generate1F1B}) {
        const SimResult r = RunChecked(spec, Must(gen(spec, {})));
        INFO("p=" << p << " m=" << m);
        CHECK(r.outcome == Outcome::Ok);
        CHECK(r.makespan == (m + p - 1) * (tf + tb));
        CHECK(r.bubble_fraction() ==
              Approx(static_cast<double>(p - 1) / (m + p - 1)));
        for (int d = 0; d < p; ++d) {
          CHECK(r.devices[d].busy == m * (tf + tb));
          CHECK(r.devices[d].idle == (p - 1) * (tf + tb));
        }
        CHECK(r.breakdown.ideal == m * (tf + tb));
        CHECK(r.breakdown.imbalance == 0);
        CHECK(r.breakdown.recompute == 0);
        CHECK(r.breakdown.communication == 0);
        CHECK(r.breakdown.warmup_drain == (p - 1) * (tf + tb));
      }
    }
  }
}

TEST_CASE("Interleaved 1F1B takes m(tf+tb) + (p-1)(tf+tb)/v",
          "[engine][closed-form]") {
  // Per-chunk times a and b; a rank's whole share is tf = v*a, tb = v*b.
  const Nanos a = 2, b = 5;
  for (int p : {2, 4, 8}) {
    for (int v : {2, 3, 4}) {
      for (int m : {p, 2 * p, 3 * p}) {
        PipelineSpec spec = PipelineSpec::Uniform(p, v, m, a, b);
        const SimResult r =
            RunChecked(spec, Must(GenerateInterleaved(spec, {})));
        INFO("p=" << p << " v=" << v << " m=" << m);
        const Nanos tf = v * a, tb = v * b;
        CHECK(r.makespan == m * (tf + tb) + (p - 1) * (tf + tb) / v);
      }
    }
  }
}

TEST_CASE("peak in-flight microbatches follow formulas.md section 2",
          "[engine][closed-form]") {
  for (int p : {2, 4, 5}) {
    for (int m : {1, 3, 4, 8, 9}) {
      PipelineSpec spec = PipelineSpec::Uniform(p, 1, m, 1, 2);
      for (auto& st : spec.stages) {
        st.activation = 100;
        st.static_memory = 7;
      }
      const SimResult g = RunChecked(spec, Must(GenerateGPipe(spec, {})));
      const SimResult o = RunChecked(spec, Must(Generate1F1B(spec, {})));
      for (int r = 0; r < p; ++r) {
        INFO("p=" << p << " m=" << m << " r=" << r);
        CHECK(g.devices[r].peak_inflight == m);
        CHECK(g.devices[r].peak_memory == 7 + 100 * m);
        CHECK(o.devices[r].peak_inflight == std::min(m, p - r));
        CHECK(o.devices[r].peak_memory == 7 + 100 * std::min(m, p - r));
      }
    }
  }
  for (int p : {2, 4}) {
    for (int v : {2, 3}) {
      for (int m : {p, 2 * p, 3 * p}) {
        for (int g : {p, m}) {
          if (m % g != 0 && m % g < p) continue;
          PipelineSpec spec = PipelineSpec::Uniform(p, v, m, 1, 2);
          ScheduleParams params;
          params.group = g;
          const SimResult res =
              RunChecked(spec, Must(GenerateInterleaved(spec, params)));
          for (int r = 0; r < p; ++r) {
            INFO("p=" << p << " v=" << v << " m=" << m << " g=" << g
                      << " r=" << r);
            CHECK(res.devices[r].peak_inflight ==
                  std::min(v * m, 2 * (p - 1 - r) + (v - 1) * g + 1));
          }
        }
      }
    }
  }
}

TEST_CASE("uneven stages, hand-computed", "[engine][hand]") {
  // Stage 0: f=1, b=2. Stage 1: f=3, b=3. p=2, m=2, no communication cost.
  PipelineSpec spec = PipelineSpec::Uniform(2, 1, 2, 1, 2);
  spec.stages[1].forward = 3;
  spec.stages[1].backward_input = 3;
  // GPipe. rank1: F0 1-4, F1 4-7, B0 7-10, B1 10-13;
  //        rank0: F0 0-1, F1 1-2, B0 10-12, B1 13-15.
  const Program gpipe = Must(GenerateGPipe(spec, {}));
  const SimResult g = RunChecked(spec, gpipe);
  CHECK(g.makespan == 15);
  CHECK(g.timings[1][0].start == 1);
  CHECK(g.timings[1][3].end == 13);
  CHECK(g.timings[0][2].start == 10);
  CHECK(g.timings[0][3].start == 13);
  CHECK(g.devices[0].busy == 6);
  CHECK(g.devices[1].busy == 12);
  CHECK(g.devices[0].first_start == 0);
  CHECK(g.devices[1].first_start == 1);
  CHECK(g.devices[1].last_end == 13);
  // 1F1B (Megatron): rank0 F0 F1 B0 B1; rank1 F0 B0 F1 B1.
  //   rank1: F0 1-4, B0 4-7, F1 7-10, B1 10-13; rank0: B0 7-9, B1 13-15.
  const Program ofob = Must(Generate1F1B(spec, {}));
  REQUIRE(ofob.ops[0] == std::vector<Op>{F(0, 0), F(0, 1), B(0, 0), B(0, 1)});
  REQUIRE(ofob.ops[1] == std::vector<Op>{F(1, 0), B(1, 0), F(1, 1), B(1, 1)});
  const SimResult o = RunChecked(spec, ofob);
  CHECK(o.makespan == 15);
  CHECK(o.timings[0][2].start == 7);
  CHECK(o.timings[0][2].end == 9);
  CHECK(o.timings[1][2].start == 7);
  CHECK(o.devices[0].peak_inflight == 2);
  CHECK(o.devices[1].peak_inflight == 1);
  // Busiest device is rank 1 (12 of 15): ideal 9, imbalance 3, rest 3.
  CHECK(o.breakdown.bottleneck == 1);
  CHECK(o.breakdown.ideal == 9);
  CHECK(o.breakdown.imbalance == 3);
  CHECK(o.breakdown.warmup_drain == 3);
}

TEST_CASE("communication latency and link serialization, hand-computed",
          "[engine][hand][comm]") {
  SECTION("latency only: p=2, m=1") {
    PipelineSpec spec = PipelineSpec::Uniform(2, 1, 1, 1, 2);
    spec.link_matrix = RingLinkMatrix(2, {Link{5, 0}, Link{5, 0}});
    const Program prog = Must(Generate1F1B(spec, {}));
    const SimResult r = RunChecked(spec, prog);
    // F 0-1 on rank0, arrives 6; rank1 F 6-7, B 7-9; gradient arrives 14;
    // rank0 B 14-16.
    CHECK(r.makespan == 16);
    CHECK(r.timings[1][0].start == 6);
    CHECK(r.timings[0][1].start == 14);
    CHECK(r.transfers.size() == 2);
    CHECK(r.devices[0].comm_wait == 5);
    CHECK(r.devices[1].comm_wait == 5);
    const auto path = CriticalPath(spec, prog, r);
    REQUIRE(path.size() == 6);
    CHECK(ActionString(path[0].op) == "0F0");
    CHECK(path[1].is_transfer);
    CHECK(path[1].start == 1);
    CHECK(path[1].end == 6);
    CHECK(ActionString(path[2].op) == "1F0");
    CHECK(ActionString(path[3].op) == "1B0");
    CHECK(path[4].is_transfer);
    CHECK(ActionString(path[5].op) == "0B0");
    CHECK(path[5].end == 16);
  }
  SECTION("bandwidth: messages on one direction serialize") {
    // f = b = 1 everywhere; each message occupies its link for 10 ns
    // (10 bytes at 1 GB/s).
    PipelineSpec spec = PipelineSpec::Uniform(2, 1, 2, 1, 1);
    for (auto& st : spec.stages) st.output_bytes = 10;
    spec.link_matrix =
        RingLinkMatrix(2, {Link{0, 1'000'000'000}, Link{0, 1'000'000'000}});
    const Program prog = Must(GenerateGPipe(spec, {}));
    // rank0 F0 0-1, F1 1-2; messages leave at 1 and 11, arrive 11 and 21.
    // rank1 F0 11-12, F1 21-22, B0 22-23, B1 23-24; gradients leave 23 and
    // 33, arrive 33 and 43; rank0 B0 33-34, B1 43-44.
    const SimResult r = RunChecked(spec, prog);
    CHECK(r.makespan == 44);
    CHECK(r.timings[1][1].start == 21);
    CHECK(r.timings[0][2].start == 33);
    CHECK(r.timings[0][3].start == 43);
    REQUIRE(r.transfers.size() == 4);
    CHECK(r.transfers[1].send == 11);
    CHECK(r.transfers[1].arrive == 21);

    SECTION("blocking communication holds the sender") {
      spec.comm = CommMode::Blocking;
      // rank0 F0 0-1 blocked to 11, F1 11-12 blocked to 22; rank1 F0 11-12,
      // F1 22-23, B0 23-24 blocked to 34, B1 34-35 blocked to 45;
      // rank0 B0 34-35, B1 45-46.
      const SimResult b = RunChecked(spec, prog);
      CHECK(b.makespan == 46);
      CHECK(b.timings[0][1].start == 11);
      CHECK(b.timings[1][3].start == 34);
      CHECK(b.devices[0].comm_blocked == 20);
      CHECK(b.devices[1].comm_blocked == 20);
    }
  }
}

TEST_CASE("lowering: recompute, heterogeneous speed, OOM", "[engine][lower]") {
  Layer l;
  l.name = "d";
  l.forward = 2;
  l.backward_input = 4;
  l.static_memory = 1000;
  l.activation = 100;
  l.output_bytes = 0;
  l.recompute.push_back(RecomputeOption{"full", 10, 2});
  Cluster one;
  one.devices = {Device{1'000'000, 1.0}};
  one.links = {Link{}};

  SECTION("full recompute: extra forward before B, smaller stash") {
    Strategy s = EvenStrategy({l}, 1, 1);
    s.recompute = {1};
    auto spec = Lower({l}, one, PipelineShape{1, 1, 2}, s);
    REQUIRE(spec.ok());
    const SimResult r = RunChecked(*spec, Must(GenerateGPipe(*spec, {})));
    // F0 0-2, F1 2-4, B0 4-10 (2 recompute + 4), B1 10-16.
    CHECK(r.makespan == 16);
    CHECK(r.devices[0].recompute == 4);
    CHECK(r.timings[0][2].recompute == 2);
    // Two stashes of 10 plus the re-materialized 90 during B.
    CHECK(r.devices[0].peak_memory == 1000 + 10 + 10 + 90);
    CHECK(r.breakdown.recompute == 4);
  }
  SECTION("a device twice as fast runs its ops in half the time") {
    Cluster two;
    two.devices = {Device{1'000'000, 1.0}, Device{1'000'000, 2.0}};
    two.links = {Link{}, Link{}};
    l.forward = 4;
    l.backward_input = 8;
    auto spec = Lower({l, l}, two, PipelineShape{2, 1, 1},
                      EvenStrategy({l, l}, 2, 1));
    REQUIRE(spec.ok());
    CHECK(spec->stages[1].forward == 2);
    const SimResult r = RunChecked(*spec, Must(Generate1F1B(*spec, {})));
    // rank0 F 0-4; rank1 F 4-6, B 6-10; rank0 B 10-18.
    CHECK(r.makespan == 18);
  }
  SECTION("over capacity is an outcome, not a failure") {
    one.devices[0].memory_capacity = 1150;
    auto spec = Lower({l}, one, PipelineShape{1, 1, 2}, EvenStrategy({l}, 1, 1));
    REQUIRE(spec.ok());
    const SimResult r = RunChecked(*spec, Must(GenerateGPipe(*spec, {})));
    CHECK(r.devices[0].peak_memory == 1200);
    CHECK(r.devices[0].oom);
    CHECK(r.outcome == Outcome::OutOfMemory);
    CHECK(r.makespan == 12);
  }
}

TEST_CASE("EvenStrategy pins embedding and head, spreads the remainder",
          "[lower]") {
  std::vector<Layer> layers(1 + 10 + 1);
  layers.front().kind = LayerKind::Embedding;
  layers.back().kind = LayerKind::Head;
  const Strategy s = EvenStrategy(layers, 4, 1);
  CHECK(s.layers_per_stage == std::vector<int>{1 + 2, 3, 3, 2 + 1});
  const Strategy s2 = EvenStrategy(layers, 2, 2);
  CHECK(s2.layers_per_stage == std::vector<int>{1 + 2, 3, 3, 2 + 1});
  const Strategy s3 = EvenStrategy(layers, 3, 1);
  CHECK(s3.layers_per_stage == std::vector<int>{1 + 3, 4, 3 + 1});
}

TEST_CASE("Lower refuses strategies that drop or invent layers", "[lower]") {
  std::vector<Layer> layers(4);
  for (auto& l : layers) l.forward = l.backward_input = 1;
  Cluster c;
  c.devices.assign(2, Device{100, 1.0});
  c.links.assign(2, Link{});
  Strategy s = EvenStrategy(layers, 2, 1);
  s.layers_per_stage = {1, 2};
  auto r = Lower(layers, c, PipelineShape{2, 1, 1}, s);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "layer counts must add up to the model's 4 layers; got 3 (layers "
        "would be dropped)");
  s.layers_per_stage = {4, 0};
  r = Lower(layers, c, PipelineShape{2, 1, 1}, s);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("must hold at least one layer") !=
        std::string::npos);
  CHECK(Lower(layers, c, PipelineShape{2, 1, 1}, s, /*allow_empty=*/true).ok());
}

TEST_CASE("deadlocked programs are refused and reported", "[engine][validate]") {
  PipelineSpec spec = PipelineSpec::Uniform(2, 1, 1, 1, 1);
  // Rank 1 wants its B before its F: waits on itself.
  Program bad;
  bad.ops = {{F(0, 0), B(0, 0)}, {B(1, 0), F(1, 0)}};
  const Status st = ValidateProgram(spec, bad);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("deadlocks") != std::string::npos);
  Engine engine;
  const SimResult r = engine.Run(spec, bad);
  CHECK(r.outcome == Outcome::Deadlock);
  REQUIRE(r.stuck.size() == 2);
  CHECK(ActionString(r.stuck[1]) == "1B0");

  Program missing;
  missing.ops = {{F(0, 0), B(0, 0)}, {F(1, 0)}};
  const Status st2 = ValidateProgram(spec, missing);
  REQUIRE_FALSE(st2.ok());
  CHECK(st2.error().message ==
        "expected exactly one B, or one I and one W for stage 1, microbatch 0; "
        "got 0 B, 0 I, 0 W");
}

TEST_CASE("every registered schedule validates and simulates", "[schedules][validate]") {
  for (const ScheduleInfo& info : ScheduleRegistry()) {
    for (int p : {1, 2, 4, 8}) {
      for (int v : {1, 2, 3}) {
        for (int m : {1, 2, 4, 8, 12, 16}) {
          PipelineSpec spec = PipelineSpec::Uniform(p, v, m, 2, 3);
          auto prog = info.generate(spec, {});
          if (!prog.ok()) continue;  // refusals are tested per schedule
          INFO(info.name << " p=" << p << " v=" << v << " m=" << m);
          const Status st = ValidateProgram(spec, *prog);
          INFO(st.error().message);
          CHECK(st.ok());
          Engine engine;
          CHECK(engine.Run(spec, *prog).outcome == Outcome::Ok);
        }
      }
    }
  }
}

}  // namespace ppb
