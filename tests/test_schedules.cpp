// Schedule generators, action strings and the torch schedule CSV.
//
// The generators are checked three ways:
//   1. against every record of tests/data/schedules-p4.jsonl (per-rank op
//      orders and refusals of PyTorch and Megatron-LM for p = 4);
//   2. for other shapes, against the closed forms of formulas.md §2 (forwards
//      before the first backward = peak in-flight per rank) and the rule that
//      every (stage, microbatch) runs exactly once as F and once as B on the
//      device holding the stage;
//   3. by a unit-time run (F = 1, B = 2, no communication) that must finish
//      (no deadlock) in the iteration time of formulas.md §1.4.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/program.h"
#include "schedules/schedule.h"
#include "tests/reference_ops.h"

namespace ppb {
namespace {

// A spec with only the shape the generators read, default placement.
PipelineSpec Shape(int p, int v, int m) {
  PipelineSpec spec;
  spec.p = p;
  spec.v = v;
  spec.m = m;
  for (int s = 0; s < p * v; ++s) spec.stage_device.push_back(DeviceId(s % p));
  return spec;
}

Op MakeOp(OpKind kind, int stage, int mb) {
  return Op{kind, StageId(stage), MicrobatchId(mb)};
}

std::string OrderString(const std::vector<Op>& ops) {
  std::string s;
  for (const Op& op : ops) s += ActionString(op) + " ";
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

// Most forwards done whose backward (B or I) has not run yet.
int PeakInflight(const std::vector<Op>& ops) {
  int now = 0;
  int peak = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::F) ++now;
    if (op.kind == OpKind::B || op.kind == OpKind::I) --now;
    peak = std::max(peak, now);
  }
  return peak;
}

// Runs a program with F = 1, B = 2 time units and free communication: a
// device runs its list in order, an op starts when the device is free and its
// dependencies have finished (F(s,j) after F(s-1,j); B(s,j) after F(s,j) and
// B(s+1,j)). Returns the makespan, or nothing if the program deadlocks.
// REQUIRES: the program has only F and B ops.
std::optional<int> UnitTimeMakespan(const PipelineSpec& spec,
                                    const Program& program) {
  const int stages = spec.num_stages();
  std::map<std::tuple<int, int, int>, int> finish;  // (kind, stage, mb)
  auto done = [&](OpKind k, int s, int j) -> std::optional<int> {
    auto it = finish.find({static_cast<int>(k), s, j});
    if (it == finish.end()) return std::nullopt;
    return it->second;
  };
  std::vector<size_t> next(program.ops.size(), 0);
  std::vector<int> free_at(program.ops.size(), 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t d = 0; d < program.ops.size(); ++d) {
      while (next[d] < program.ops[d].size()) {
        const Op& op = program.ops[d][next[d]];
        const int s = op.stage.value;
        const int j = op.mb.value;
        std::vector<std::optional<int>> deps;
        if (op.kind == OpKind::F && s > 0)
          deps.push_back(done(OpKind::F, s - 1, j));
        if (op.kind == OpKind::B) {
          deps.push_back(done(OpKind::F, s, j));
          if (s + 1 < stages) deps.push_back(done(OpKind::B, s + 1, j));
        }
        int start = free_at[d];
        bool ready = true;
        for (const auto& t : deps) {
          if (!t)
            ready = false;
          else
            start = std::max(start, *t);
        }
        if (!ready) break;
        const int end = start + (op.kind == OpKind::F ? 1 : 2);
        finish[{static_cast<int>(op.kind), s, j}] = end;
        free_at[d] = end;
        ++next[d];
        progress = true;
      }
    }
  }
  for (size_t d = 0; d < program.ops.size(); ++d) {
    if (next[d] != program.ops[d].size()) return std::nullopt;
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

// Every (stage, mb) exactly once as F and once as B, on its stage's device,
// and nothing else.
void CheckEveryOpOnce(const PipelineSpec& spec, const Program& program) {
  REQUIRE(program.ops.size() == static_cast<size_t>(spec.p));
  std::set<std::tuple<int, int, int>> seen;
  for (size_t d = 0; d < program.ops.size(); ++d) {
    for (const Op& op : program.ops[d]) {
      INFO("device " << d << " op " << ActionString(op));
      REQUIRE((op.kind == OpKind::F || op.kind == OpKind::B));
      REQUIRE(op.stage.value >= 0);
      REQUIRE(op.stage.value < spec.num_stages());
      REQUIRE(op.mb.value >= 0);
      REQUIRE(op.mb.value < spec.m);
      CHECK(spec.stage_device[static_cast<size_t>(op.stage.value)].value ==
            static_cast<int>(d));
      CHECK(
          seen.insert({static_cast<int>(op.kind), op.stage.value, op.mb.value})
              .second);
    }
  }
  CHECK(seen.size() == static_cast<size_t>(2 * spec.num_stages() * spec.m));
}

// ---------------------------------------------------------------------------
// Action strings.

TEST_CASE("ActionString writes torch's <stage><T><mb>", "[program]") {
  CHECK(ActionString(MakeOp(OpKind::F, 2, 0)) == "2F0");
  CHECK(ActionString(MakeOp(OpKind::B, 0, 12)) == "0B12");
  CHECK(ActionString(MakeOp(OpKind::I, 3, 1)) == "3I1");
  CHECK(ActionString(MakeOp(OpKind::W, 13, 7)) == "13W7");
}

TEST_CASE("ParseAction reads what ActionString writes", "[program]") {
  for (const char* text : {"2F0", "0B12", "3I1", "3W1", "15F123"}) {
    Result<Op> op = ParseAction(text);
    REQUIRE(op.ok());
    CHECK(ActionString(*op) == text);
  }
  Result<Op> op = ParseAction("7B3");
  REQUIRE(op.ok());
  CHECK(*op == MakeOp(OpKind::B, 7, 3));
}

TEST_CASE("ParseAction refuses malformed text, saying what it expected",
          "[program]") {
  for (const char* text : {"", "X", "F0", "0F", "0X1", "0f1", "0F1a", "-1F0",
                           "0F-1", " 0F1", "0SEND_F1", "99999999999F0"}) {
    INFO(text);
    Result<Op> op = ParseAction(text);
    REQUIRE_FALSE(op.ok());
    CHECK(op.error().message ==
          std::string("expected an action like 0F1 (stage, F/B/I/W, "
                      "microbatch); got '") +
              text + "'");
  }
}

// ---------------------------------------------------------------------------
// Registry.

TEST_CASE("registry lists the schedules in a fixed order", "[schedules]") {
  std::vector<std::string> names;
  for (const ScheduleInfo& info : ScheduleRegistry()) {
    names.emplace_back(info.name);
    CHECK_FALSE(info.description.empty());
    CHECK(info.generate != nullptr);
  }
  CHECK(names == std::vector<std::string>{
                     "gpipe", "1f1b", "interleaved", "looped-bfs",
                     "interleaved-zero-bubble", "zbv-zero-bubble",
                     "dualpipev", "zb-1p", "zb-2p", "zb-v"});
  REQUIRE(FindSchedule("1f1b") != nullptr);
  CHECK(FindSchedule("1f1b")->generate == &Generate1F1B);
  CHECK(FindSchedule("gpipe")->generate == &GenerateGPipe);
  CHECK(FindSchedule("interleaved")->generate == &GenerateInterleaved);
  CHECK(FindSchedule("1F1B") == nullptr);
  CHECK(FindSchedule("ScheduleLoopedBFS") == nullptr);
}

// ---------------------------------------------------------------------------
// The reference orders.
//
// Mapping of a record to a generator call:
//   source "pytorch/..." -> Flavor::PyTorch, "NVIDIA/Megatron-LM..." ->
//   Flavor::Megatron; schedule GPipe / 1F1B / Interleaved1F1B -> gpipe /
//   1f1b / interleaved; config.microbatch_group_size_per_vp_stage -> group.
// Exception: torch v2.6.0's Schedule1F1B had no m >= p check and ran m < p;
// its orders (m = 1, 3) are exactly the Megatron-rule orders (warm-up
// min(p-r-1, m), which for m < p degenerates to GPipe on the first ranks),
// so those records are run with Flavor::Megatron. Flavor::PyTorch follows the
// current torch (2.14.1), which refuses m < p.

struct RecordCase {
  const ScheduleInfo* schedule = nullptr;
  ScheduleParams params;
};

RecordCase CaseFor(const nlohmann::json& rec) {
  RecordCase c;
  const std::string source = rec.at("source");
  const std::string schedule = rec.at("schedule");
  if (source.rfind("pytorch/pytorch@v2.6.0", 0) == 0) {
    c.params.flavor = Flavor::Megatron;  // see the comment above
  } else if (source.rfind("pytorch/", 0) == 0) {
    c.params.flavor = Flavor::PyTorch;
  } else if (source.rfind("NVIDIA/Megatron-LM", 0) == 0) {
    c.params.flavor = Flavor::Megatron;
  } else {
    FAIL("unknown source " << source);
  }
  if (rec.contains("config") && rec["config"].is_object() &&
      rec["config"].contains("microbatch_group_size_per_vp_stage")) {
    c.params.group =
        rec["config"]["microbatch_group_size_per_vp_stage"].get<int>();
  }
  if (schedule == "GPipe") c.schedule = FindSchedule("gpipe");
  if (schedule == "1F1B") c.schedule = FindSchedule("1f1b");
  if (schedule == "Interleaved1F1B") c.schedule = FindSchedule("interleaved");
  if (c.schedule == nullptr) FAIL("unknown schedule " << schedule);
  return c;
}

// Upstream error text without the exception class and its ": ".
std::string UpstreamMessage(const std::string& error) {
  const size_t colon = error.find(": ");
  return colon == std::string::npos ? error : error.substr(colon + 2);
}

TEST_CASE("generators reproduce every reference record (p = 4)",
          "[schedules][reference]") {
  std::ifstream in(std::string(PPB_TEST_DATA_DIR) + "/schedules-p4.jsonl");
  REQUIRE(in.good());
  int records = 0;
  int passed = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++records;
    const nlohmann::json rec = nlohmann::json::parse(line);
    const int p = rec.at("p");
    const int m = rec.at("m");
    const int v = rec.at("v");
    const RecordCase c = CaseFor(rec);
    INFO("record " << records << ": " << rec.at("source").get<std::string>()
                   << " " << rec.at("schedule").get<std::string>() << " p=" << p
                   << " m=" << m << " v=" << v << " group=" << c.params.group);
    const PipelineSpec spec = Shape(p, v, m);
    Result<Program> program = c.schedule->generate(spec, c.params);
    bool ok = true;

    if (rec.at("status") == "error") {
      const std::string upstream = rec.at("error");
      INFO("upstream: " << upstream);
      CHECK_FALSE(program.ok());
      ok = ok && !program.ok();
      if (!program.ok()) {
        INFO("ours: " << program.error().key << ": "
                      << program.error().message);
        CHECK_FALSE(program.error().key.empty());
        if (c.params.flavor == Flavor::PyTorch) {
          // Our message quotes torch's.
          const bool quoted =
              program.error().message.find(UpstreamMessage(upstream)) !=
              std::string::npos;
          CHECK(quoted);
          ok = ok && quoted;
        } else {
          CHECK(program.error().key == "pipeline.microbatch_group");
          ok = ok && program.error().key == "pipeline.microbatch_group";
        }
      }
    } else {
      REQUIRE(rec.at("status") == "ok");
      if (!program.ok()) {
        FAIL_CHECK(program.error().key << ": " << program.error().message);
        continue;
      }
      const auto& stage_to_rank = rec.at("stage_to_rank");
      REQUIRE(stage_to_rank.size() == spec.stage_device.size());
      for (size_t s = 0; s < stage_to_rank.size(); ++s) {
        CHECK(stage_to_rank[s].get<int>() == spec.stage_device[s].value);
      }
      REQUIRE(program->ops.size() == static_cast<size_t>(p));
      for (size_t r = 0; r < program->ops.size(); ++r) {
        std::vector<Op> expected;
        for (const auto& token : rec.at("ranks").at(r)) {
          expected.push_back(test::OpFromReferenceToken(token.get<std::string>()));
        }
        const std::vector<Op>& got = program->ops[r];
        const auto& per_rank = rec.at("per_rank").at(r);
        const int warmup = per_rank.at("warmup_forwards").get<int>();
        const int peak = per_rank.at("peak_inflight_fb").get<int>();
        INFO("rank " << r << "\n  expected " << OrderString(expected)
                     << "\n  got      " << OrderString(got));
        CHECK(got == expected);
        CHECK(WarmupForwards(got) == warmup);
        CHECK(PeakInflight(got) == peak);
        ok = ok && got == expected && WarmupForwards(got) == warmup &&
             PeakInflight(got) == peak;
      }
    }
    if (ok) ++passed;
  }
  CHECK(records == 76);
  CHECK(passed == records);
}

// ---------------------------------------------------------------------------
// Other shapes: validity rules, formulas.md §2, every op once, no deadlock.

// Whether the flavor's rules accept the shape (restated from the upstream
// checks, independently of the generators), and the group size used.
struct Expectation {
  bool ok = false;
  int group = 0;  // interleaved only
};

Expectation Expect(const std::string& name, Flavor flavor, int p, int v, int m,
                   int group) {
  Expectation e;
  if (name == "gpipe") {
    e.ok = v == 1;
  } else if (name == "1f1b") {
    e.ok = v == 1 && (flavor == Flavor::Megatron || m >= p);
  } else if (flavor == Flavor::Megatron) {
    e.group = group == 0 ? p : group;
    e.ok = v >= 2 && p <= e.group && e.group <= m &&
           (m % e.group == 0 || m % e.group >= p);
  } else {
    const int rounds = std::max(1, m / p);
    e.group = m / rounds;
    e.ok = group == 0 && m % rounds == 0;
  }
  return e;
}

// formulas.md §2: forwards before the first backward on rank r, which is also
// the peak number of in-flight (stage, microbatch) activations.
int ExpectedWarmup(const std::string& name, int p, int v, int m, int g, int r) {
  if (name == "gpipe") return m;
  if (name == "1f1b") return std::min(m, p - r);
  return std::min(v * m, 2 * (p - 1 - r) + (v - 1) * g + 1);
}

TEST_CASE("generators follow the rules and formulas for other shapes",
          "[schedules]") {
  int generated = 0;
  int refused = 0;
  for (const char* schedule : {"gpipe", "1f1b", "interleaved"}) {
    const ScheduleInfo& info = *FindSchedule(schedule);
    const std::string name(info.name);
    for (Flavor flavor : {Flavor::Megatron, Flavor::PyTorch}) {
      for (int p : {1, 2, 3, 4, 5, 8}) {
        for (int v : {1, 2, 3}) {
          const std::set<int> ms = {1,     2,     3,         p - 1,    p,
                                    p + 1, 2 * p, 2 * p + 3, 3 * p + 2};
          for (int m : ms) {
            if (m < 1) continue;
            std::vector<int> groups = {0};
            if (name == "interleaved") {
              for (int g = 1; g <= m + 1; ++g) groups.push_back(g);
            }
            for (int group : groups) {
              INFO(name << (flavor == Flavor::Megatron ? " megatron"
                                                       : " pytorch")
                        << " p=" << p << " v=" << v << " m=" << m
                        << " group=" << group);
              const PipelineSpec spec = Shape(p, v, m);
              const Result<Program> program =
                  info.generate(spec, ScheduleParams{flavor, group});
              const Expectation e = Expect(name, flavor, p, v, m, group);
              REQUIRE(program.ok() == e.ok);
              if (!program.ok()) {
                ++refused;
                CHECK_FALSE(program.error().key.empty());
                CHECK(program.error().message.find("got ") !=
                      std::string::npos);
                continue;
              }
              ++generated;
              CheckEveryOpOnce(spec, *program);
              for (int r = 0; r < p; ++r) {
                const auto& ops = program->ops[static_cast<size_t>(r)];
                const int want = ExpectedWarmup(name, p, v, m, e.group, r);
                INFO("rank " << r << ": " << OrderString(ops));
                CHECK(WarmupForwards(ops) == want);
                CHECK(PeakInflight(ops) == want);
              }
              // formulas.md §1: (m + p - 1)(t_f + t_b) for GPipe and 1F1B,
              // m v (t_f + t_b) + (p - 1)(t_f + t_b) per chunk-op for
              // interleaved when every group has at least p microbatches.
              const std::optional<int> makespan =
                  UnitTimeMakespan(spec, *program);
              REQUIRE(makespan.has_value());
              if (name != "interleaved") {
                CHECK(*makespan == (m + p - 1) * 3);
              } else if (e.group >= p) {
                CHECK(*makespan == m * v * 3 + (p - 1) * 3);
              }
            }
          }
        }
      }
    }
  }
  CHECK(generated > 400);
  CHECK(refused > 100);
}

TEST_CASE("interleaved with g = p and m a multiple of p is Narayanan's order",
          "[schedules]") {
  // p = 2, v = 2, m = 2, g = 2: table (0,c0) (1,c0) (0,c1) (1,c1).
  // Rank 1 warm-up = 2*0 + 1*2 = 2: F0.1 F1.1, then F0.3 B0.3, F1.3 B1.3,
  // then B0.1 B1.1. Rank 0 warm-up = 2*1 + 2 = 4 = all forwards.
  const Result<Program> program =
      GenerateInterleaved(Shape(2, 2, 2), ScheduleParams{});
  REQUIRE(program.ok());
  CHECK(OrderString(program->ops[0]) == "0F0 0F1 2F0 2F1 2B0 2B1 0B0 0B1 ");
  CHECK(OrderString(program->ops[1]) == "1F0 1F1 3F0 3B0 3F1 3B1 1B0 1B1 ");
}

TEST_CASE("the last interleaved group takes the leftover microbatches",
          "[schedules]") {
  // Megatron p = 2, v = 2, m = 5, g = 3 (5 mod 3 = 2 >= p): groups {0,1,2}
  // and {3,4}; rank 1 (warm-up (v-1)g = 3) forwards follow the table
  // (0,0)(1,0)(2,0)(0,1)(1,1)(2,1)(3,0)(4,0)(3,1)(4,1).
  const Result<Program> program =
      GenerateInterleaved(Shape(2, 2, 5), ScheduleParams{Flavor::Megatron, 3});
  REQUIRE(program.ok());
  std::vector<Op> forwards;
  for (const Op& op : program->ops[1]) {
    if (op.kind == OpKind::F) forwards.push_back(op);
  }
  CHECK(OrderString(forwards) == "1F0 1F1 1F2 3F0 3F1 3F2 1F3 1F4 3F3 3F4 ");
  CHECK(WarmupForwards(program->ops[1]) == 4);
}

TEST_CASE("refusals name the key, the rule and the value", "[schedules]") {
  auto error = [](Result<Program> r) {
    REQUIRE_FALSE(r.ok());
    return r.error();
  };
  using P = ScheduleParams;
  Error e = error(GenerateInterleaved(Shape(4, 2, 3), P{Flavor::Megatron, 4}));
  CHECK(e.key == "pipeline.microbatch_group");
  CHECK(e.message ==
        "must be in [stages (4), microbatches (3)] for interleaved "
        "(Megatron); got 4");

  e = error(GenerateInterleaved(Shape(4, 2, 3), P{Flavor::Megatron, 0}));
  CHECK(e.key == "pipeline.microbatches");
  CHECK(e.message.find("must be a multiple of stages (4)") !=
        std::string::npos);
  CHECK(e.message.find("got 3") != std::string::npos);

  e = error(GenerateInterleaved(Shape(4, 2, 6), P{Flavor::Megatron, 0}));
  CHECK(e.key == "pipeline.microbatches");
  CHECK(e.message.find("got 6") != std::string::npos);

  e = error(GenerateInterleaved(Shape(4, 2, 9), P{Flavor::Megatron, 4}));
  CHECK(e.key == "pipeline.microbatch_group");
  CHECK(e.message.find("remainder 1") != std::string::npos);

  e = error(GenerateInterleaved(Shape(4, 1, 8), P{Flavor::Megatron, 0}));
  CHECK(e.key == "pipeline.virtual_stages");
  CHECK(e.message.find("use 1f1b for v = 1") != std::string::npos);

  e = error(GenerateInterleaved(Shape(4, 2, 8), P{Flavor::PyTorch, 4}));
  CHECK(e.key == "pipeline.microbatch_group");

  e = error(GenerateInterleaved(Shape(4, 2, 9), P{Flavor::PyTorch, 0}));
  CHECK(e.key == "pipeline.microbatches");
  CHECK(e.message.find("multiple of the number of rounds (2), but got 9") !=
        std::string::npos);

  e = error(Generate1F1B(Shape(4, 1, 3), P{Flavor::PyTorch, 0}));
  CHECK(e.key == "pipeline.microbatches");
  CHECK(e.message.find("Number of microbatches (3) must be greater than or "
                       "equal to the number of stages (4)") !=
        std::string::npos);

  e = error(Generate1F1B(Shape(4, 2, 8), P{}));
  CHECK(e.key == "pipeline.virtual_stages");
  CHECK(e.message == "must be 1 for 1f1b (use interleaved for v > 1); got 2");

  e = error(GenerateGPipe(Shape(4, 2, 8), P{}));
  CHECK(e.key == "pipeline.virtual_stages");

  PipelineSpec zero = Shape(4, 1, 8);
  zero.m = 0;
  e = error(GenerateGPipe(zero, P{}));
  CHECK(e.key == "pipeline.microbatches");
  CHECK(e.message == "must be >= 1; got 0");

  PipelineSpec misplaced = Shape(2, 1, 2);
  misplaced.stage_device[1] = DeviceId(2);
  e = error(Generate1F1B(misplaced, P{}));
  CHECK(e.message == "stage 1 must be placed on a device in [0, 2); got 2");
}

TEST_CASE("ops go to the device that holds their stage", "[schedules]") {
  const PipelineSpec normal = Shape(3, 2, 6);
  const Result<Program> expected = GenerateInterleaved(normal, {});
  REQUIRE(expected.ok());

  PipelineSpec empty_placement = normal;
  empty_placement.stage_device.clear();  // means the default, s mod p
  const Result<Program> same = GenerateInterleaved(empty_placement, {});
  REQUIRE(same.ok());
  CHECK(same->ops == expected->ops);

  PipelineSpec reversed = normal;  // rank r's stages on device p-1-r
  for (int s = 0; s < reversed.num_stages(); ++s) {
    reversed.stage_device[static_cast<size_t>(s)] = DeviceId(2 - s % 3);
  }
  const Result<Program> moved = GenerateInterleaved(reversed, {});
  REQUIRE(moved.ok());
  CheckEveryOpOnce(reversed, *moved);
  for (int d = 0; d < 3; ++d) {
    CHECK(moved->ops[static_cast<size_t>(d)] ==
          expected->ops[static_cast<size_t>(2 - d)]);
  }
}

// ---------------------------------------------------------------------------
// Schedule CSV.

TEST_CASE("DumpScheduleCsv writes one row per rank", "[csv]") {
  const Result<Program> program = Generate1F1B(Shape(2, 1, 2), {});
  REQUIRE(program.ok());
  CHECK(DumpScheduleCsv(*program) == "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
}

TEST_CASE("CSV round trip gives the same program", "[csv]") {
  for (const ScheduleInfo& info : ScheduleRegistry()) {
    for (int p : {1, 2, 4}) {
      const bool two = info.name == "interleaved" ||
                       info.placement == StagePlacement::V;
      const int v = two ? 2 : 1;
      PipelineSpec spec = Shape(p, v, 2 * p);
      if (info.placement == StagePlacement::V) {
        spec.stage_device = StagePlacementDevices(StagePlacement::V, p, v);
      }
      if (info.name.starts_with("zb-")) {
        // Costs for the adaptive schedules, which plan from them.
        spec = PipelineSpec::Uniform(p, v, 2 * p, 1, 1);
        for (StageCost& c : spec.stages) c.backward_weight = 1;
        if (info.placement == StagePlacement::V) {
          spec.placement = StagePlacement::V;
          spec.stage_device = StagePlacementDevices(StagePlacement::V, p, v);
        }
      }
      const Result<Program> program = info.generate(spec, {});
      REQUIRE(program.ok());
      const std::string csv = DumpScheduleCsv(*program);
      const Result<Program> back = ParseScheduleCsv(csv);
      INFO(info.name << " p=" << p << "\n" << csv);
      REQUIRE(back.ok());
      CHECK(back->ops == program->ops);
      CHECK(DumpScheduleCsv(*back) == csv);
    }
  }
  // torch's overlapped action, both ways (ScheduleDualPipeV's spelling).
  const Result<Program> overlapped =
      ParseScheduleCsv("0F0,(0F1;7B0)OVERLAP_F_B, ( 0F2 ; 7I1 )OVERLAP_F_B\n");
  REQUIRE(overlapped.ok());
  REQUIRE(overlapped->ops.size() == 1);
  const std::vector<Op> pairs = {
      MakeOp(OpKind::F, 0, 0), Op{OpKind::F, StageId(0), MicrobatchId(1), true},
      MakeOp(OpKind::B, 7, 0), Op{OpKind::F, StageId(0), MicrobatchId(2), true},
      MakeOp(OpKind::I, 7, 1)};
  CHECK(overlapped->ops[0] == pairs);
  CHECK(DumpScheduleCsv(*overlapped) ==
        "0F0,(0F1;7B0)OVERLAP_F_B,(0F2;7I1)OVERLAP_F_B\n");
  for (const char* bad : {"(0F1;7B0)", "(0F1;7W0)OVERLAP_F_B",
                          "(7B0;0F1)OVERLAP_F_B", "(0F1)OVERLAP_F_B"}) {
    INFO(bad);
    const Result<Program> r = ParseScheduleCsv(std::string("0F0,") + bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          std::string("line 1, column 2: expected an overlapped action like "
                      "(4F4;3B0)OVERLAP_F_B (an F and then a B or I); got '") +
              bad + "'");
  }

  // I and W ops and a rank with no ops in the middle.
  Program split;
  split.ops = {{MakeOp(OpKind::F, 0, 0), MakeOp(OpKind::I, 0, 0),
                MakeOp(OpKind::W, 0, 0)},
               {},
               {MakeOp(OpKind::B, 12, 345)}};
  const Result<Program> back = ParseScheduleCsv(DumpScheduleCsv(split));
  REQUIRE(back.ok());
  CHECK(back->ops == split.ops);
}

TEST_CASE(
    "CSV parsing skips idle cells, comm actions, CRs and trailing "
    "commas",
    "[csv]") {
  const Result<Program> program = ParseScheduleCsv(
      "\xEF\xBB\xBF"
      "0F0,,0F1,0SEND_F0, 0B0 ,0RECV_B1,0B1,\r\n"
      ",1RECV_F0,1F0,1B0,1SEND_B0,\"1F1\",1B1,,\r\n"
      "\r\n"
      "3F0,3UNSHARD,3RESHARD,3REDUCE_GRAD,3I0,3W0\r\n"
      "\n\n");
  REQUIRE(program.ok());
  REQUIRE(program->ops.size() == 4);
  CHECK(OrderString(program->ops[0]) == "0F0 0F1 0B0 0B1 ");
  CHECK(OrderString(program->ops[1]) == "1F0 1B0 1F1 1B1 ");
  CHECK(program->ops[2].empty());
  CHECK(OrderString(program->ops[3]) == "3F0 3I0 3W0 ");

  const Result<Program> no_newline = ParseScheduleCsv("0F0,0B0");
  REQUIRE(no_newline.ok());
  CHECK(no_newline->ops.size() == 1);
  const Result<Program> empty = ParseScheduleCsv("");
  REQUIRE(empty.ok());
  CHECK(empty->ops.empty());
}

TEST_CASE("CSV errors name the line and column of the bad cell", "[csv]") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"0F0,0F1\n0F0,1F0,X\n",
       "line 2, column 3: expected an action like 0F1 (stage, F/B/I/W, "
       "microbatch); got 'X'"},
      {"0F0,0F1\r\n\r\n,,0Q1\r\n",
       "line 3, column 3: expected an action like 0F1 (stage, F/B/I/W, "
       "microbatch); got '0Q1'"},
      {"F0\n",
       "line 1, column 1: expected an action like 0F1 (stage, F/B/I/W, "
       "microbatch); got 'F0'"},
      {"0F0,0SEND_X0\n",
       "line 1, column 2: expected an action like 0F1 (stage, F/B/I/W, "
       "microbatch); got '0SEND_X0'"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const Result<Program> program = ParseScheduleCsv(c.text);
    REQUIRE_FALSE(program.ok());
    CHECK(program.error().message == c.message);
  }
}

}  // namespace
}  // namespace ppb
