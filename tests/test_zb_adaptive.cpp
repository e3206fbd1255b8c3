// The adaptive zero-bubble schedules zb-1p and zb-2p (schedules/zb_*.cpp).
//
//   1. The authors' heuristic as ppb writes it reproduces the orders and end
//      times of sail-sg zero-bubble v0.1.0 (tests/data/zb-adaptive-p4.jsonl,
//      copied from the reference records) under their memory model.
//   2. zb-1p / zb-2p are at least as fast as those orders on every record,
//      within the same limit, both when the whole stash is held until W
//      (stricter than the authors' model) and when half is freed at I
//      (input_grad_release, the authors' model: their span is reached too).
//   3. Hand-checkable optima: a limit of one micro-batch forces F I W per
//      micro-batch, m (p F + p I + W); with 2p and equal costs zb-2p reaches
//      the lower bound 3m + p - 1 (the last rank starts at p - 1 and then has
//      3m units of work).
//   4. Every shape: each op once, no deadlock, within the limit, never slower
//      than 1F1B; refusals name their rule.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/engine.h"
#include "core/validate.h"
#include "schedules/schedule.h"
#include "schedules/zb_adaptive.h"
#include "tests/zb_records.h"

namespace ppb {
namespace {

using test::ZbRecord;

// p stages of costs F, I, W, activation `act` per micro-batch, free links.
PipelineSpec Costs(int p, int m, Nanos f, Nanos i, Nanos w, Bytes act) {
  PipelineSpec spec = PipelineSpec::Uniform(p, 1, m, f, i);
  for (StageCost& c : spec.stages) {
    c.backward_weight = w;
    c.activation = act;
  }
  return spec;
}

Nanos LongestSpan(const SimResult& r) {
  Nanos span = 0;
  for (const DeviceStats& d : r.devices) {
    span = std::max(span, d.last_end - d.first_start);
  }
  return span;
}

Program FromOrders(const zb::Orders& orders, int p) {
  Program program;
  program.ops.resize(static_cast<size_t>(p));
  for (size_t s = 0; s < orders.size(); ++s) program.ops[s] = orders[s];
  return program;
}

// The authors' plan in their units: F stashes 2, I frees 1, W the other 1;
// limit 1p = 2p units, 2p = 4p units (memory_model of the records).
zb::Plan AuthorsPlan(const ZbRecord& rec) {
  zb::Plan plan;
  plan.m = rec.m;
  const int multiple = rec.schedule == "ZB-1p" ? 1 : 2;
  for (int s = 0; s < rec.p; ++s) {
    plan.stages.push_back(
        zb::StagePlan{rec.f, rec.i, rec.w, 0, 2, 1, 2 * rec.p * multiple});
  }
  return plan;
}

TEST_CASE("the authors' heuristic reproduces sail-sg zero-bubble v0.1.0",
          "[schedules][zb]") {
  int checked = 0;
  for (const ZbRecord& rec : test::LoadZbRecords({"ZB-1p", "ZB-2p"}, 1)) {
    INFO(rec.schedule << " p=" << rec.p << " m=" << rec.m << " F=" << rec.f
                      << " I=" << rec.i << " W=" << rec.w);
    const zb::Plan plan = AuthorsPlan(rec);
    // initial_solution keeps the first setting with the least per-stage
    // span (end of the last W - start of the first F).
    const PipelineSpec spec = Costs(rec.p, rec.m, rec.f, rec.i, rec.w, 0);
    Engine engine;
    const std::vector<zb::Orders> candidates = zb::AuthorsHeuristic(plan);
    REQUIRE(candidates.size() == 8);
    const zb::Orders* best = nullptr;
    Nanos best_span = 0;
    SimResult best_run;
    for (const zb::Orders& orders : candidates) {
      const SimResult run = engine.Run(spec, FromOrders(orders, rec.p));
      REQUIRE(run.outcome == Outcome::Ok);
      if (best == nullptr || LongestSpan(run) < best_span) {
        best = &orders;
        best_span = LongestSpan(run);
        best_run = run;
      }
    }
    CHECK(best_span == rec.cost);
    for (int r = 0; r < rec.p; ++r) {
      std::vector<std::string> names;
      std::vector<Nanos> ends;
      for (size_t k = 0; k < (*best)[static_cast<size_t>(r)].size(); ++k) {
        names.push_back(test::RecordName((*best)[static_cast<size_t>(r)][k]));
        ends.push_back(best_run.timings[static_cast<size_t>(r)][k].end);
      }
      INFO("rank " << r);
      CHECK(names == rec.ranks[static_cast<size_t>(r)]);
      CHECK(ends == rec.ends[static_cast<size_t>(r)]);
    }
    ++checked;
  }
  CHECK(checked == 16);
}

TEST_CASE("the adaptive planner beats the authors' heuristic in their model",
          "[schedules][zb]") {
  // Same costs, same memory model and limit as the records: both the
  // iteration (last end) and the authors' cost (longest per-stage span).
  int checked = 0;
  for (const ZbRecord& rec : test::LoadZbRecords({"ZB-1p", "ZB-2p"}, 1)) {
    INFO(rec.schedule << " p=" << rec.p << " m=" << rec.m << " F=" << rec.f
                      << " I=" << rec.i << " W=" << rec.w);
    const zb::Plan plan = AuthorsPlan(rec);
    const PipelineSpec spec = Costs(rec.p, rec.m, rec.f, rec.i, rec.w, 0);
    const zb::Orders orders = zb::PlanBest(spec, plan).orders;
    REQUIRE(orders.size() == static_cast<size_t>(rec.p));
    const SimResult run = Engine().Run(spec, FromOrders(orders, rec.p));
    REQUIRE(run.outcome == Outcome::Ok);
    CHECK(run.makespan <= rec.end);
    CHECK(LongestSpan(run) <= rec.cost);
    for (int s = 0; s < rec.p; ++s) {
      CHECK(zb::ActivationPeak(plan.stages[static_cast<size_t>(s)],
                               orders[static_cast<size_t>(s)]) <=
            plan.stages[static_cast<size_t>(s)].limit);
    }
    ++checked;
  }
  CHECK(checked == 16);
}

TEST_CASE("zb-1p and zb-2p end no later than the authors' orders",
          "[schedules][zb]") {
  // ppb's memory model keeps the whole stash until W, so the same limit
  // admits fewer orders than the authors' (which free half at I); the
  // iteration still ends no later than theirs on every record. (Their
  // per-stage span is not always reached: ZB-2p m = 12, F = I = 2, W = 1
  // has span 61 with up to 12 micro-batches stashed in ppb's terms; ppb's
  // order within 8 has span 65 and the same end, 66.)
  int checked = 0;
  std::ostringstream table;
  for (const ZbRecord& rec : test::LoadZbRecords({"ZB-1p", "ZB-2p"}, 1)) {
    INFO(rec.schedule << " p=" << rec.p << " m=" << rec.m << " F=" << rec.f
                      << " I=" << rec.i << " W=" << rec.w);
    const Bytes act = 2;
    const int multiple = rec.schedule == "ZB-1p" ? 1 : 2;
    const Bytes limit = act * rec.p * multiple;
    const PipelineSpec spec = Costs(rec.p, rec.m, rec.f, rec.i, rec.w, act);
    const ScheduleInfo* info =
        FindSchedule(rec.schedule == "ZB-1p" ? "zb-1p" : "zb-2p");
    REQUIRE(info != nullptr);
    const Result<Program> program = info->generate(spec, ScheduleParams{});
    REQUIRE(program.ok());
    REQUIRE(ValidateProgram(spec, *program).ok());
    const SimResult run = Engine().Run(spec, *program);
    REQUIRE(run.outcome == Outcome::Ok);
    CHECK(run.makespan <= rec.end);
    for (const DeviceStats& d : run.devices) CHECK(d.peak_memory <= limit);
    table << rec.schedule << " m=" << rec.m << " F/I/W=" << rec.f << "/"
          << rec.i << "/" << rec.w << ": upstream end " << rec.end
          << " span " << rec.cost << "; ppb end " << run.makespan << " span "
          << LongestSpan(run) << "\n";
    ++checked;
  }
  CHECK(checked == 16);
  INFO(table.str());
}

TEST_CASE("zb-1p and zb-2p in the authors' memory model: half freed at I",
          "[schedules][zb]") {
  // input_grad_release = act / 2 is the records' model (half of a
  // micro-batch's stash freed at I, the rest at W); the planner counts what
  // the engine holds, so the full generator, simulated by the engine, stays
  // within the records' limit and matches both their end and their span.
  int checked = 0;
  for (const ZbRecord& rec : test::LoadZbRecords({"ZB-1p", "ZB-2p"}, 1)) {
    INFO(rec.schedule << " p=" << rec.p << " m=" << rec.m << " F=" << rec.f
                      << " I=" << rec.i << " W=" << rec.w);
    const Bytes act = 2;
    const int multiple = rec.schedule == "ZB-1p" ? 1 : 2;
    const Bytes limit = act * rec.p * multiple;
    PipelineSpec spec = Costs(rec.p, rec.m, rec.f, rec.i, rec.w, act);
    for (StageCost& c : spec.stages) c.input_grad_release = act / 2;
    const ScheduleInfo* info =
        FindSchedule(rec.schedule == "ZB-1p" ? "zb-1p" : "zb-2p");
    REQUIRE(info != nullptr);
    const Result<Program> program = info->generate(spec, ScheduleParams{});
    REQUIRE(program.ok());
    REQUIRE(ValidateProgram(spec, *program).ok());
    const SimResult run = Engine().Run(spec, *program);
    REQUIRE(run.outcome == Outcome::Ok);
    CHECK(run.makespan <= rec.end);
    CHECK(LongestSpan(run) <= rec.cost);
    for (const DeviceStats& d : run.devices) CHECK(d.peak_memory <= limit);
    ++checked;
  }
  CHECK(checked == 16);
}

TEST_CASE("a limit of one micro-batch forces F I W per micro-batch",
          "[schedules][zb]") {
  // Each stage must finish W of micro-batch j before its F of j + 1, so
  // stage 0 waits a full round trip per micro-batch: m (p F + p I + W).
  for (int p : {1, 2, 4}) {
    for (int m : {1, 3, 5}) {
      const PipelineSpec spec = Costs(p, m, 2, 3, 1, 10);
      ScheduleParams params;
      params.activation_bytes = 10;
      const Result<Program> program = GenerateZB1P(spec, params);
      REQUIRE(program.ok());
      const SimResult run = Engine().Run(spec, *program);
      INFO("p=" << p << " m=" << m);
      CHECK(run.makespan == m * (p * 2 + p * 3 + 1));
      for (const DeviceStats& d : run.devices) CHECK(d.peak_memory == 10);
    }
  }
}

TEST_CASE("zb-2p reaches the lower bound 3m + p - 1 with equal costs",
          "[schedules][zb]") {
  for (int m : {8, 12, 16}) {
    const PipelineSpec spec = Costs(4, m, 1, 1, 1, 1);
    const Result<Program> program = GenerateZB2P(spec, ScheduleParams{});
    REQUIRE(program.ok());
    INFO("m=" << m);
    CHECK(Engine().Run(spec, *program).makespan == 3 * m + 4 - 1);
  }
}

// Issue 32, item 5, read with the authors' own cost: their auto_schedule
// ranks orders by the longest per-stage span (end of the last op - start of
// the first; the records' "upstream_cost"), not by the iteration. In their
// memory model (F stashes 2 units, I frees 1, W 1; ZB-2p 2p micro-batches)
// p = 8, m = 16, F = I = W = 1: their heuristic's 48 is a span; zb-2p has
// span 48 on every rank (no bubble inside a rank) and ends at 55, the
// least any order can (the last rank starts after p - 1 forwards and then
// has 3m units). p = 2, m = 6, F = I = 2, W = 1: span 30, end 32.
TEST_CASE("zb-2p on the issue's cases: the authors' span, and the least end",
          "[schedules][zb]") {
  struct Case {
    int p, m;
    Nanos f, i, w;
  };
  for (const Case& c : {Case{8, 16, 1, 1, 1}, Case{2, 6, 2, 2, 1}}) {
    INFO("p=" << c.p << " m=" << c.m);
    PipelineSpec spec = Costs(c.p, c.m, c.f, c.i, c.w, 2);
    for (StageCost& st : spec.stages) st.input_grad_release = 1;
    const Result<Program> program = GenerateZB2P(spec, ScheduleParams{});
    REQUIRE(program.ok());
    const SimResult run = Engine().Run(spec, *program);
    REQUIRE(run.outcome == Outcome::Ok);
    const Nanos work = c.m * (c.f + c.i + c.w);
    CHECK(LongestSpan(run) == work);
    CHECK(run.makespan == work + (c.p - 1) * c.f);
    for (const DeviceStats& d : run.devices) CHECK(d.peak_memory <= 2 * c.p * 2);
  }
}

// zb-2p (and zb-1p) against every order the authors' heuristic gives (ppb's
// port of sail-sg v0.1.0, one per flag setting that fits) under the same
// per-stage costs, messages and limit, at p = 2, 3, 5, 6, 8 with random
// costs: never a later end, and never a longer span at the same end (the
// planner ranks by (end, span, stash) and the authors' orders are among
// its candidates). Seed fixed.
TEST_CASE("zb-1p and zb-2p never lose to the authors' orders on random costs",
          "[schedules][zb]") {
  std::mt19937 rng(20261204);
  std::uniform_int_distribution<Nanos> cost(1, 6);
  int compared = 0;
  for (int p : {2, 3, 5, 6, 8}) {
    for (int m : {p, 2 * p, 3 * p + 1}) {
      PipelineSpec spec = PipelineSpec::Uniform(p, 1, m, 1, 1);
      for (StageCost& c : spec.stages) {
        c.forward = cost(rng);
        c.backward_input = cost(rng);
        c.backward_weight = cost(rng);
        c.activation = 2;
        c.input_grad_release = 1;
        c.output_bytes = 1000;
      }
      for (Link& l : spec.link_matrix) l = Link{cost(rng), 1'000'000'000};
      for (int multiple : {1, 2}) {
        INFO("p=" << p << " m=" << m << " limit " << multiple << "p");
        const Result<Program> program =
            multiple == 1 ? GenerateZB1P(spec, {}) : GenerateZB2P(spec, {});
        REQUIRE(program.ok());
        const SimResult ours = Engine().Run(spec, *program);
        REQUIRE(ours.outcome == Outcome::Ok);
        const zb::Plan plan = zb::MakePlan(spec, multiple, 0);
        for (const zb::Orders& orders : zb::AuthorsHeuristic(plan)) {
          const SimResult theirs = Engine().Run(spec, FromOrders(orders, p));
          REQUIRE(theirs.outcome == Outcome::Ok);
          CHECK(ours.makespan <= theirs.makespan);
          if (ours.makespan == theirs.makespan) CHECK(LongestSpan(ours) <= LongestSpan(theirs));
          ++compared;
        }
      }
    }
  }
  CHECK(compared > 100);
}

TEST_CASE("zb-1p with few micro-batches: (m + p - 1)(F + I) + W",
          "[schedules][zb]") {
  // formulas.md §1.3 (Qi et al., App. H): with m <= p and free links the
  // split backward leaves only the last W after the F/I chain.
  for (const auto& [f, i, w] : std::vector<std::tuple<Nanos, Nanos, Nanos>>{
           {1, 1, 1}, {2, 2, 1}, {3, 2, 1}, {2, 3, 2}}) {
    for (int m = 1; m <= 4; ++m) {
      const PipelineSpec spec = Costs(4, m, f, i, w, 1);
      const Result<Program> program = GenerateZB1P(spec, ScheduleParams{});
      REQUIRE(program.ok());
      INFO("F=" << f << " I=" << i << " W=" << w << " m=" << m);
      CHECK(Engine().Run(spec, *program).makespan == (m + 4 - 1) * (f + i) + w);
    }
  }
}

TEST_CASE("zb-1p and zb-2p on every shape: valid, within the limit, >= 1F1B",
          "[schedules][zb]") {
  int generated = 0, fallbacks = 0, planned = 0;
  for (int p : {1, 2, 3, 4, 5, 8}) {
    const std::set<int> ms = {1, 2, 3, p - 1, p, p + 1, 2 * p, 3 * p + 2};
    for (int m : ms) {
      if (m < 1) continue;
      // Unequal stages and a message time: stage s costs F = 3 + s % 3,
      // I = 4 + s % 2, W = 2 + s % 4, stashes 100 + 10 s bytes.
      PipelineSpec spec = PipelineSpec::Uniform(p, 1, m, 1, 1);
      for (int s = 0; s < p; ++s) {
        StageCost& c = spec.stages[static_cast<size_t>(s)];
        c.forward = 3 + s % 3;
        c.backward_input = 4 + s % 2;
        c.backward_weight = 2 + s % 4;
        c.activation = 100 + 10 * s;
        c.output_bytes = 1000;
      }
      for (Link& l : spec.link_matrix) l = Link{1, 1'000'000'000};  // 1 + 1 ns
      PipelineSpec fused = spec;
      for (StageCost& c : fused.stages) {
        c.backward_input += c.backward_weight;
        c.backward_weight = 0;
      }
      const Result<Program> one_f_one_b = Generate1F1B(fused, ScheduleParams{});
      REQUIRE(one_f_one_b.ok());
      const Nanos baseline = Engine().Run(fused, *one_f_one_b).makespan;
      for (int multiple : {1, 2}) {
        INFO("p=" << p << " m=" << m << " limit " << multiple << "p");
        const Result<Program> program =
            multiple == 1 ? GenerateZB1P(spec, {}) : GenerateZB2P(spec, {});
        REQUIRE(program.ok());
        REQUIRE(ValidateProgram(spec, *program).ok());
        std::set<std::tuple<int, int, int>> seen;
        for (size_t d = 0; d < program->ops.size(); ++d) {
          for (const Op& op : program->ops[d]) {
            CHECK(op.kind != OpKind::B);
            CHECK(op.stage.value == static_cast<int>(d));
            CHECK(seen.insert({static_cast<int>(op.kind), op.stage.value,
                               op.mb.value})
                      .second);
          }
        }
        CHECK(seen.size() == static_cast<size_t>(3 * p * m));
        const SimResult run = Engine().Run(spec, *program);
        REQUIRE(run.outcome == Outcome::Ok);
        for (int d = 0; d < p; ++d) {
          CHECK(run.devices[static_cast<size_t>(d)].peak_memory <=
                multiple * p * (100 + 10 * d));
        }
        CHECK(run.makespan <= baseline);
        // The kept order says where it came from; the fallback says so.
        const std::string& origin = program->origin;
        if (origin.rfind("1F1B with split backward (fallback: no planned order was faster)",
                         0) == 0) {
          ++fallbacks;
        } else {
          CHECK((origin.rfind("the Zero Bubble authors' heuristic", 0) == 0 ||
                 origin.rfind("ppb's ready-first planner", 0) == 0));
          ++planned;
        }
        ++generated;
      }
    }
  }
  CHECK(generated == 76);  // 38 distinct (p, m) pairs, two limits
  // Both happen on these shapes (counted when written: 24 and 52).
  CHECK(fallbacks == 24);
  CHECK(planned == 52);
}

TEST_CASE("zb-1p and zb-2p refusals name the rule", "[schedules][zb]") {
  PipelineSpec spec = PipelineSpec::Uniform(2, 2, 4, 1, 1);
  for (auto* generate : {&GenerateZB1P, &GenerateZB2P}) {
    const Result<Program> r = generate(spec, ScheduleParams{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().key == "pipeline.virtual_stages");
    CHECK(r.error().message.find("must be 1 for zb-") != std::string::npos);
    CHECK(r.error().message.find("got 2") != std::string::npos);
  }
  const PipelineSpec one = Costs(3, 4, 1, 1, 1, 64);
  ScheduleParams params;
  params.activation_bytes = 63;
  const Result<Program> small = GenerateZB1P(one, params);
  REQUIRE_FALSE(small.ok());
  CHECK(small.error().key == "pipeline.activation_limit");
  CHECK(small.error().message ==
        "must hold at least one micro-batch of every stage for zb-1p (stage 0 "
        "stashes 64 bytes per micro-batch); got 63 bytes");
  params.activation_bytes = 64;
  CHECK(GenerateZB1P(one, params).ok());
}

}  // namespace
}  // namespace ppb
