// Engine scratch reuse and the optional deadline (core/engine.h): an Engine
// reused across runs of other programs must give what a fresh one gives
// (its per-key times are not cleared between runs, only their flags), and a
// deadline stops a long run with Outcome::Interrupted while leaving every
// figure of an uninterrupted run unchanged.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>

#include "core/engine.h"
#include "schedules/schedule.h"
#include "tests/sim_compare.h"

namespace ppb {
namespace {

Program Must(Result<Program> r) {
  if (!r.ok()) FAIL(r.error().key << ": " << r.error().message);
  return std::move(r).value();
}

// p ranks with 1 MiB activations and messages over 5 us links, so that
// arrival times differ from send times.
PipelineSpec LinkedSpec(int p, int v, int m) {
  PipelineSpec spec = PipelineSpec::Uniform(p, v, m, 1000, 2000);
  for (auto& st : spec.stages) {
    st.activation = 1 << 20;
    st.output_bytes = 1 << 20;
  }
  spec.link_matrix =
      RingLinkMatrix(p, std::vector<Link>(p, Link{5000, 100'000'000'000}));
  return spec;
}

}  // namespace

TEST_CASE("an engine reused across programs gives what a fresh one gives", "[engine]") {
  // A large interleaved run leaves times in every key; then smaller runs of
  // other shapes, a deadlocking program (its keys stay partly unset) and the
  // large one again.
  const PipelineSpec big = LinkedSpec(4, 2, 8);
  const Program big_prog = Must(GenerateInterleaved(big, {}));
  const PipelineSpec small = LinkedSpec(4, 1, 4);
  const Program small_prog = Must(Generate1F1B(small, {}));
  // Rank 0 starts with its first backward, which needs its own F: stuck.
  Program stuck_prog = small_prog;
  auto& r0 = stuck_prog.ops[0];
  const auto first_b = std::find_if(r0.begin(), r0.end(),
                                    [](const Op& op) { return op.kind == OpKind::B; });
  REQUIRE(first_b != r0.end());
  std::rotate(r0.begin(), first_b, first_b + 1);

  Engine reused;
  SimResult r;
  for (int round = 0; round < 2; ++round) {
    reused.RunInto(big, big_prog, {}, r);
    RequireSame(r, Engine{}.Run(big, big_prog));
    reused.RunInto(small, small_prog, {}, r);
    RequireSame(r, Engine{}.Run(small, small_prog));
    reused.RunInto(small, stuck_prog, {}, r);
    REQUIRE(r.outcome == Outcome::Deadlock);
    RequireSame(r, Engine{}.Run(small, stuck_prog));
  }
}

TEST_CASE("a passed deadline interrupts a long simulation", "[engine]") {
  // p = 16, v = 4, m = 1024: 131,072 ops, two deadline checks' worth.
  const PipelineSpec spec = LinkedSpec(16, 4, 1024);
  const Program prog = Must(GenerateInterleaved(spec, {}));
  REQUIRE(prog.total_ops() == 16u * 4 * 1024 * 2);
  REQUIRE(prog.total_ops() >= 2 * Engine::kDeadlineCheckOps);

  SimOptions past;
  past.deadline = SimOptions::Clock::now() - std::chrono::seconds(1);
  Engine engine;
  const SimResult r = engine.Run(spec, prog, past);
  REQUIRE(r.outcome == Outcome::Interrupted);
  REQUIRE(r.stuck.empty());  // not a deadlock

  // The same engine then runs it to the end, as a fresh one does, with or
  // without a deadline far away.
  SimOptions later;
  later.deadline = SimOptions::Clock::now() + std::chrono::hours(1);
  const SimResult full = engine.Run(spec, prog, later);
  REQUIRE(full.outcome == Outcome::Ok);
  RequireSame(full, Engine{}.Run(spec, prog));
  // 1F1B-interleaved with equal stages: the makespan is at least the busy
  // time of one device, v * m * (F + B).
  REQUIRE(full.makespan >= Nanos{4} * 1024 * 3000);
}

TEST_CASE("a run shorter than one deadline check is never interrupted", "[engine]") {
  const PipelineSpec spec = LinkedSpec(4, 1, 8);
  const Program prog = Must(Generate1F1B(spec, {}));
  REQUIRE(prog.total_ops() < Engine::kDeadlineCheckOps);
  SimOptions past;
  past.deadline = SimOptions::Clock::now() - std::chrono::seconds(1);
  RequireSame(Engine{}.Run(spec, prog, past), Engine{}.Run(spec, prog));
}

}  // namespace ppb
