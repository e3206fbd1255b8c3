// A run that follows a recorded order (SimOptions::record_order, then
// SimOptions::order; core/engine.h) gives what the worklist gives, figure for
// figure, for every registered schedule on random specs: unequal stages,
// recompute, split backward with a partial release at I, transient working
// sets, links of random latency and bandwidth, blocking sends, the ranks
// holding the stages in a random order (the program made for it), tight
// capacities (out of memory), overlapped F+B pairs. One order serves every
// spec of its program. An order of another program stops the run as a
// deadlock, reading nothing out of bounds (the sanitizer build runs this).
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/engine.h"
#include "schedules/schedule.h"
#include "tests/sim_compare.h"

namespace ppb {
namespace {

// A spec of p ranks, v chunks, m micro-batches with random costs; stages on
// the schedule's placement, or (Loop) on a random permutation of the ranks.
PipelineSpec RandomSpec(std::mt19937_64& rng, const ScheduleInfo& info, int p, int v, int m) {
  auto uni = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  PipelineSpec spec = PipelineSpec::Uniform(p, v, m, 1, 1);
  if (info.placement == StagePlacement::V) {
    spec.placement = StagePlacement::V;
    spec.stage_device = StagePlacementDevices(StagePlacement::V, p, v);
  } else if (uni(0, 1) == 1) {
    std::vector<int> perm(static_cast<size_t>(p));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (auto& d : spec.stage_device) d = DeviceId(perm[static_cast<size_t>(d.value)]);
  }
  for (StageCost& st : spec.stages) {
    st.forward = uni(1, 50) * 100;
    st.backward_input = uni(1, 80) * 100;
    st.backward_weight = uni(0, 40) * 100;
    st.recompute = uni(0, 2) == 0 ? uni(1, 30) * 100 : 0;
    st.static_memory = uni(0, 100) << 20;
    st.activation = uni(1, 64) << 20;
    st.input_grad_release = uni(0, 1) == 1 ? st.activation / uni(1, 4) : 0;
    st.forward_transient = uni(0, 32) << 20;
    st.backward_transient = uni(0, 32) << 20;
    st.output_bytes = uni(0, 16) << 20;
  }
  for (Link& l : spec.link_matrix) {
    l.latency = uni(0, 3) * 1000;
    l.bandwidth = uni(1, 100) * 1'000'000'000LL;
  }
  spec.comm = uni(0, 2) == 0 ? CommMode::Blocking : CommMode::Overlapped;
  spec.fb_overlap_ppm = uni(0, 1) == 1 ? uni(0, 1'000'000) : 0;
  // Now and then a capacity some devices exceed.
  if (uni(0, 2) == 0) spec.device_capacity.assign(static_cast<size_t>(p), uni(100, 900) << 20);
  return spec;
}

SimResult RunWith(Engine& engine, const PipelineSpec& spec, const Program& program,
                  const std::vector<std::int32_t>* order) {
  SimOptions options;
  options.record_ops = false;
  ExecutionOrder compiled;
  if (order != nullptr) compiled = ExecutionOrder::Compile(program, *order);
  options.order = order != nullptr ? &compiled : nullptr;
  SimResult r;
  engine.RunInto(spec, program, options, r);
  return r;
}

// A run that records its order (no per-op timings).
SimResult Recording(Engine& engine, const PipelineSpec& spec, const Program& program) {
  SimOptions rec;
  rec.record_ops = false;
  rec.record_order = true;
  SimResult r;
  engine.RunInto(spec, program, rec, r);
  return r;
}

TEST_CASE("a run in a recorded order gives what the worklist gives", "[engine][order]") {
  std::mt19937_64 rng(20261202);
  int compared = 0, oom = 0, paired = 0;
  for (const ScheduleInfo& info : ScheduleRegistry()) {
    for (int trial = 0; trial < 12; ++trial) {
      const int p = std::uniform_int_distribution<int>(1, 5)(rng);
      const int v = info.placement == StagePlacement::V ? 2
                                                        : std::uniform_int_distribution<int>(1, 3)(rng);
      const int m = p * std::uniform_int_distribution<int>(1, 3)(rng) +
                    std::uniform_int_distribution<int>(0, 1)(rng) * p;
      const PipelineSpec planned_for = RandomSpec(rng, info, p, v, m);
      const Result<Program> program = info.generate(planned_for, {});
      if (!program.ok()) continue;  // a shape the schedule refuses
      INFO(info.name << " p=" << p << " v=" << v << " m=" << m << " trial " << trial);
      // The order, recorded on the spec the program was made for.
      Engine engine;
      const SimResult recorded = Recording(engine, planned_for, *program);
      REQUIRE(recorded.outcome != Outcome::Deadlock);
      REQUIRE(recorded.order.size() == program->total_ops());
      const std::vector<std::int32_t> order = recorded.order;
      for (const auto& ops : program->ops) {
        for (const Op& op : ops) paired += op.paired ? 1 : 0;
      }
      // The same order on other specs of the program, with the engine
      // reused both ways.
      for (int other = 0; other < 4; ++other) {
        // The program's lists are per device: its stages stay where they
        // are (the devices' speeds, memories and links change).
        PipelineSpec spec = other == 0 ? planned_for : RandomSpec(rng, info, p, v, m);
        spec.stage_device = planned_for.stage_device;
        const SimResult want = RunWith(engine, spec, *program, nullptr);
        const SimResult got = RunWith(engine, spec, *program, &order);
        RequireSame(got, want);
        Engine fresh;
        RequireSame(RunWith(fresh, spec, *program, &order), want);
        oom += want.outcome == Outcome::OutOfMemory ? 1 : 0;
        ++compared;
      }
    }
  }
  // Every schedule ran, some runs out of memory, some with F+B pairs.
  CHECK(compared >= 4 * 12 * 5);
  CHECK(oom > 0);
  CHECK(paired > 0);
}

TEST_CASE("an order of another program ends the run as a deadlock", "[engine][order]") {
  PipelineSpec spec = PipelineSpec::Uniform(3, 1, 6, 1000, 2000);
  const Result<Program> program = Generate1F1B(spec, {});
  REQUIRE(program.ok());
  Engine engine;
  SimOptions options;
  options.record_ops = false;
  SimResult want;
  engine.RunInto(spec, *program, options, want);
  REQUIRE(want.outcome == Outcome::Ok);
  // Too short, a device named too often, a device out of range.
  std::vector<std::int32_t> shorter(5, 0);
  std::vector<std::int32_t> too_many(program->total_ops(), 0);
  std::vector<std::int32_t> out_of_range(program->total_ops(), 7);
  for (const auto* order : {&shorter, &too_many, &out_of_range}) {
    const ExecutionOrder compiled = ExecutionOrder::Compile(*program, *order);
    options.order = &compiled;
    SimResult r;
    engine.RunInto(spec, *program, options, r);
    CHECK(r.outcome == Outcome::Deadlock);
    CHECK_FALSE(r.stuck.empty());
  }
  // A whole order compiled against another program: a longer pipeline (its
  // stages and micro-batches out of this spec's range), and one of the same
  // shape with a rank's list one op short. Neither fits; no step runs.
  {
    PipelineSpec wider = PipelineSpec::Uniform(4, 1, 8, 1000, 2000);
    const Result<Program> other = Generate1F1B(wider, {});
    REQUIRE(other.ok());
    const SimResult recorded = Recording(engine, wider, *other);
    REQUIRE(recorded.outcome == Outcome::Ok);
    const ExecutionOrder foreign = ExecutionOrder::Compile(*other, recorded.order);
    CHECK(foreign.size() == other->total_ops());
    CHECK_FALSE(foreign.Fits(*program, spec.num_stages(), spec.m));
    CHECK(foreign.Fits(*other, wider.num_stages(), wider.m));
    options.order = &foreign;
    SimResult r;
    engine.RunInto(spec, *program, options, r);
    CHECK(r.outcome == Outcome::Deadlock);
    CHECK(r.stuck.size() == 3);

    Program trimmed = *program;
    trimmed.ops[1].pop_back();
    const ExecutionOrder short_one =
        ExecutionOrder::Compile(trimmed, Recording(engine, spec, trimmed).order);
    CHECK_FALSE(short_one.Fits(*program, spec.num_stages(), spec.m));
  }
  // The engine is then as good as new.
  options.order = nullptr;
  SimResult again;
  engine.RunInto(spec, *program, options, again);
  RequireSame(again, want);
}

TEST_CASE("a recorded order follows each device's program order", "[engine][order]") {
  // 1F1B, p = 2, m = 2, F = 1 us, B = 2 us, no links: rank 0 runs F0 F1
  // B0 B1 ... whatever the interleaving, each rank's ops appear in its own
  // order and each op after its inputs: rank 0's first F comes first, rank
  // 1's first op (F of micro-batch 0 on stage 1) after it.
  PipelineSpec spec = PipelineSpec::Uniform(2, 1, 2, 1000, 2000);
  const Result<Program> program = Generate1F1B(spec, {});
  REQUIRE(program.ok());
  Engine engine;
  const SimResult r = Recording(engine, spec, *program);
  REQUIRE(r.order.size() == 8);
  CHECK(r.order.front() == 0);
  CHECK(std::count(r.order.begin(), r.order.end(), 0) == 4);
  CHECK(std::count(r.order.begin(), r.order.end(), 1) == 4);
  // The last op is rank 0's last backward (stage 0 ends the iteration).
  CHECK(r.order.back() == 0);
}

}  // namespace
}  // namespace ppb
