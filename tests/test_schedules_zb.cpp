// The zero-bubble generation of PyTorch's schedules (looped-bfs,
// interleaved-zero-bubble, zbv-zero-bubble, dualpipev):
//   1. every PyTorch record of tests/data/schedules-zb-p4.jsonl (p = 4,
//      torch v2.14.1): per-rank orders, placement, per-rank warm-up and
//      in-flight counts, and refusals quoting torch's error;
//   2. other shapes: every op once on its stage's device, no deadlock, the
//      in-flight closed forms of formulas.md §2;
//   3. unit-time makespans of formulas.md §1.3 / §1.4.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/engine.h"
#include "core/program.h"
#include "core/validate.h"
#include "schedules/schedule.h"
#include "tests/reference_ops.h"

namespace ppb {
namespace {

// The PyTorch records of schedules-zb-p4.jsonl whose schedule is registered,
// and those whose schedule is not (none: all four are).
constexpr int kTorchZbRecords = 57;
constexpr int kTorchZbRecordsLeft = 0;

// The shape a generator reads, on the placement the schedule asks for (as
// Lower places it: V only with v = 2).
PipelineSpec Shape(const ScheduleInfo& info, int p, int v, int m) {
  PipelineSpec spec = PipelineSpec::Uniform(p, v, m, 1, 1);
  if (info.placement == StagePlacement::V && v == 2) {
    spec.placement = StagePlacement::V;
    spec.stage_device = StagePlacementDevices(StagePlacement::V, p, v);
  }
  return spec;
}

// A reference token: one op, or an overlapped "F7.0+B3.7" (the F paired with
// the B that follows it).
void AppendToken(const std::string& token, std::vector<Op>& out) {
  const size_t plus = token.find('+');
  if (plus == std::string::npos) {
    out.push_back(test::OpFromReferenceToken(token));
    return;
  }
  Op f = test::OpFromReferenceToken(token.substr(0, plus));
  f.paired = true;
  out.push_back(f);
  out.push_back(test::OpFromReferenceToken(token.substr(plus + 1)));
}

std::string OrderString(const std::vector<Op>& ops) {
  std::string s;
  for (const Op& op : ops) s += ActionString(op) + (op.paired ? "+" : " ");
  return s;
}

// Forwards before the first backward (B or I).
int WarmupForwards(const std::vector<Op>& ops) {
  int n = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::B || op.kind == OpKind::I) break;
    if (op.kind == OpKind::F) ++n;
  }
  return n;
}

// Most forwards done whose release has not run: the release is B or I
// (`until_w` false) or B or W (`until_w` true).
int PeakInflight(const std::vector<Op>& ops, bool until_w) {
  int now = 0;
  int peak = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::F) ++now;
    if (op.kind == OpKind::B ||
        op.kind == (until_w ? OpKind::W : OpKind::I)) {
      --now;
    }
    peak = std::max(peak, now);
  }
  return peak;
}

std::string UpstreamMessage(const std::string& error) {
  const size_t colon = error.find(": ");
  return colon == std::string::npos ? error : error.substr(colon + 2);
}

TEST_CASE("torch's class names find the zero-bubble schedules",
          "[schedules]") {
  for (const char* name : {"looped-bfs", "LoopedBFS", "ScheduleLoopedBFS",
                           "scheduleloopedbfs"}) {
    INFO(name);
    REQUIRE(FindScheduleByAnyName(name) != nullptr);
    CHECK(FindScheduleByAnyName(name)->generate == &GenerateLoopedBFS);
  }
  for (const char* name : {"interleaved-zero-bubble", "InterleavedZeroBubble",
                           "ScheduleInterleavedZeroBubble"}) {
    INFO(name);
    REQUIRE(FindScheduleByAnyName(name) != nullptr);
    CHECK(FindScheduleByAnyName(name)->generate ==
          &GenerateInterleavedZeroBubble);
  }
  CHECK(FindScheduleByAnyName("ScheduleInterleaved1F1B")->name ==
        "interleaved");
  CHECK(FindScheduleByAnyName("Schedule") == nullptr);
  CHECK(FindScheduleByAnyName("zero-bubble") == nullptr);
  // zb-1p / zb-2p have no torch name: found by their own name only, and
  // an empty name finds nothing.
  REQUIRE(FindScheduleByAnyName("ZB-1P") != nullptr);
  CHECK(FindScheduleByAnyName("ZB-1P")->generate == &GenerateZB1P);
  CHECK(FindScheduleByAnyName("") == nullptr);
}

TEST_CASE("zero-bubble schedules reproduce every PyTorch record (p = 4)",
          "[schedules][reference]") {
  std::ifstream in(std::string(PPB_TEST_DATA_DIR) + "/schedules-zb-p4.jsonl");
  REQUIRE(in.good());
  int records = 0;
  int passed = 0;
  int left = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::json rec = nlohmann::json::parse(line);
    if (!rec.contains("class")) continue;  // the Zero Bubble authors' orders
    const std::string cls = rec.at("class");
    const ScheduleInfo* info = FindScheduleByAnyName(cls);
    if (info == nullptr) {
      ++left;
      continue;
    }
    ++records;
    const int p = rec.at("p");
    const int m = rec.at("m");
    const int v = rec.at("v");
    INFO("record " << records << ": " << cls << " p=" << p << " m=" << m
                   << " v=" << v);
    const PipelineSpec spec = Shape(*info, p, v, m);
    const Result<Program> program = info->generate(spec, ScheduleParams{});
    bool ok = true;
    if (rec.at("status") == "error") {
      const std::string upstream = rec.at("error");
      REQUIRE_FALSE(program.ok());
      INFO("ours: " << program.error().key << ": " << program.error().message);
      CHECK_FALSE(program.error().key.empty());
      const bool quoted = program.error().message.find(
                              UpstreamMessage(upstream)) != std::string::npos;
      CHECK(quoted);
      ok = quoted && !program.error().key.empty();
    } else {
      if (!program.ok()) {
        FAIL_CHECK(program.error().key << ": " << program.error().message);
        continue;
      }
      const auto& stage_to_rank = rec.at("stage_to_rank");
      REQUIRE(stage_to_rank.size() == spec.stage_device.size());
      for (size_t s = 0; s < stage_to_rank.size(); ++s) {
        CHECK(stage_to_rank[s].get<int>() == spec.stage_device[s].value);
        ok = ok && stage_to_rank[s].get<int>() == spec.stage_device[s].value;
      }
      REQUIRE(program->ops.size() == static_cast<size_t>(p));
      for (size_t r = 0; r < program->ops.size(); ++r) {
        std::vector<Op> expected;
        for (const auto& token : rec.at("ranks").at(r)) {
          AppendToken(token.get<std::string>(), expected);
        }
        const std::vector<Op>& got = program->ops[r];
        const auto& per_rank = rec.at("per_rank").at(r);
        INFO("rank " << r << "\n  expected " << OrderString(expected)
                     << "\n  got      " << OrderString(got));
        CHECK(got == expected);
        CHECK(WarmupForwards(got) == per_rank.at("warmup_forwards").get<int>());
        CHECK(PeakInflight(got, false) ==
              per_rank.at("peak_inflight_fb").get<int>());
        CHECK(PeakInflight(got, true) ==
              per_rank.at("peak_inflight_fw").get<int>());
        ok = ok && got == expected &&
             WarmupForwards(got) == per_rank.at("warmup_forwards").get<int>() &&
             PeakInflight(got, false) ==
                 per_rank.at("peak_inflight_fb").get<int>() &&
             PeakInflight(got, true) ==
                 per_rank.at("peak_inflight_fw").get<int>();
      }
      CHECK(ValidateProgram(spec, *program).ok());
    }
    if (ok) ++passed;
  }
  CHECK(records == kTorchZbRecords);
  CHECK(left == kTorchZbRecordsLeft);
  CHECK(passed == records);
}

// ---------------------------------------------------------------------------
// Other shapes.

// Whether torch accepts the shape (restated from its checks, independently
// of the generators).
bool TorchAccepts(const std::string& name, int p, int v, int m) {
  if (name == "looped-bfs") return true;
  if (name == "interleaved-zero-bubble") {
    return m % std::max(1, m / p) == 0;
  }
  if (name == "zbv-zero-bubble") return v == 2;
  return false;
}

// formulas.md §2: forwards before the first backward on rank r (= peak of
// forwards whose B or I has not run).
int ExpectedWarmup(const std::string& name, int p, int v, int m, int r) {
  if (name == "looped-bfs") return v * m;
  if (name == "zbv-zero-bubble") return 2 * p;  // for m >= 2p
  const int g = m / std::max(1, m / p);
  return std::min(v * m, (p - 1 - r) + (v - 1) * g + 1);
}

TEST_CASE("zero-bubble schedules follow torch's rules for other shapes",
          "[schedules]") {
  int generated = 0;
  int refused = 0;
  Engine engine;
  for (const char* schedule :
       {"looped-bfs", "interleaved-zero-bubble", "zbv-zero-bubble"}) {
    const std::string name = schedule;
    const ScheduleInfo* info = FindSchedule(name);
    REQUIRE(info != nullptr);
    for (int p : {1, 2, 3, 5, 6, 8}) {
      for (int v : {1, 2, 3}) {
        for (int m : std::set<int>{1, 2, p - 1, p, p + 1, 2 * p, 2 * p + 1,
                                   3 * p, 3 * p + 2}) {
          if (m < 1) continue;
          INFO(name << " p=" << p << " v=" << v << " m=" << m);
          PipelineSpec spec = Shape(*info, p, v, m);
          const Result<Program> program = info->generate(spec, {});
          REQUIRE(program.ok() == TorchAccepts(name, p, v, m));
          if (!program.ok()) {
            ++refused;
            CHECK(program.error().key ==
                  (name == "zbv-zero-bubble" ? "pipeline.virtual_stages"
                                             : "pipeline.microbatches"));
            continue;
          }
          ++generated;
          const Status valid = ValidateProgram(spec, *program);
          INFO((valid.ok() ? std::string() : valid.error().message));
          REQUIRE(valid.ok());
          for (int r = 0; r < p; ++r) {
            const auto& ops = program->ops[static_cast<size_t>(r)];
            INFO("rank " << r << ": " << OrderString(ops));
            if (name == "zbv-zero-bubble" && m < 2 * p) continue;
            CHECK(WarmupForwards(ops) == ExpectedWarmup(name, p, v, m, r));
            CHECK(PeakInflight(ops, false) ==
                  ExpectedWarmup(name, p, v, m, r));
            // W as the release: ZB-H1 and ZB-V hold on every rank what rank
            // 0 holds (formulas.md §2).
            if (name != "looped-bfs") {
              CHECK(PeakInflight(ops, true) ==
                    ExpectedWarmup(name, p, v, m, 0));
            }
          }
          spec.stages.assign(spec.stages.size(), StageCost{});
          for (StageCost& c : spec.stages) {
            c.forward = 1;
            c.backward_input = 1;
            c.backward_weight = 1;
          }
          const SimResult run = engine.Run(spec, *program, {false, false});
          CHECK(run.outcome == Outcome::Ok);
        }
      }
    }
  }
  CHECK(generated > 200);
  CHECK(refused > 10);
}

// Unit-time makespan of a schedule with F = f, I = b, W = w per chunk-op and
// free communication.
Nanos UnitMakespan(const char* schedule, int p, int v, int m, Nanos f,
                   Nanos b, Nanos w) {
  const ScheduleInfo* info = FindSchedule(schedule);
  REQUIRE(info != nullptr);
  PipelineSpec spec = Shape(*info, p, v, m);
  for (StageCost& c : spec.stages) {
    c.forward = f;
    c.backward_input = b;
    c.backward_weight = w;
  }
  const Result<Program> program = info->generate(spec, {});
  REQUIRE(program.ok());
  Engine engine;
  const SimResult run = engine.Run(spec, *program, {false, false});
  REQUIRE(run.outcome == Outcome::Ok);
  return run.makespan;
}

TEST_CASE("zero-bubble makespans match formulas.md §1.3 and §1.4",
          "[schedules]") {
  // §1.4: Looped BFS costs as interleaved 1F1B, m v (t_f + t_b) + (p-1)
  // (t_f + t_b) per chunk-op: p = 8, m = 24, v = 2, F = 1, B = 2 -> 165.
  CHECK(UnitMakespan("looped-bfs", 8, 2, 24, 1, 1, 1) == 165);
  // ZB-H1 (interleaved-zero-bubble, v = 1): m (T_F + T_B + T_W) plus the
  // bubble (p-1)(T_F + T_B - T_W) [Q24 Table 2]; p = 8, m = 24 -> 79.
  for (int p : {2, 3, 4, 8}) {
    for (int m : {p, 2 * p, 3 * p}) {
      for (auto [f, b, w] : {std::tuple<Nanos, Nanos, Nanos>{1, 1, 1},
                             {2, 2, 1},
                             {3, 2, 2}}) {
        INFO("p=" << p << " m=" << m << " F=" << f << " B=" << b
                  << " W=" << w);
        CHECK(UnitMakespan("interleaved-zero-bubble", p, 1, m, f, b, w) ==
              m * (f + b + w) + (p - 1) * (f + b - w));
      }
    }
  }
  CHECK(UnitMakespan("interleaved-zero-bubble", 8, 1, 24, 1, 1, 1) == 79);
}

TEST_CASE("zbv-zero-bubble has no bubble when F = I = W (formulas.md §1.3)",
          "[schedules]") {
  // Every rank is busy without a gap from its first op to its last: span =
  // 2m (T_F + T_I + T_W) [Q24 §6]; p = 4, m = 8: span 48, makespan 51
  // (ranks start staggered).
  for (int p : {2, 3, 4, 6, 8}) {
    for (int m : {2 * p, 2 * p + 1, 3 * p, 4 * p}) {
      const ScheduleInfo* info = FindSchedule("zbv-zero-bubble");
      REQUIRE(info != nullptr);
      PipelineSpec spec = Shape(*info, p, 2, m);
      for (StageCost& c : spec.stages) c.backward_weight = 1;
      const Result<Program> program = info->generate(spec, {});
      REQUIRE(program.ok());
      Engine engine;
      const SimResult run = engine.Run(spec, *program, {false, false});
      REQUIRE(run.outcome == Outcome::Ok);
      INFO("p=" << p << " m=" << m);
      for (const DeviceStats& d : run.devices) {
        CHECK(d.busy == 6 * m);
        CHECK(d.last_end - d.first_start == 6 * m);
      }
      if (p == 4 && m == 8) CHECK(run.makespan == 51);
    }
  }
}

}  // namespace
}  // namespace ppb
