// Simulated compute ops per second of the engine (issue 2: >= 20M ops/s on
// one core for p=64, m=256, v=4, i.e. 131,072 compute ops per run; issue 13:
// >= 100M). ordered:1 follows a recorded order (SimOptions::order, the
// search's evaluations); ordered:0 is the worklist (every other run).
#include <benchmark/benchmark.h>

#include "bench/simulate_loop.h"
#include "core/engine.h"
#include "core/spec.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

void BM_Simulate(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const int v = static_cast<int>(state.range(2));
  const bool ordered = state.range(3) != 0;
  PipelineSpec spec = PipelineSpec::Uniform(p, v, m, 1000, 2000);
  for (auto& st : spec.stages) {
    st.activation = 1 << 20;
    st.output_bytes = 1 << 20;
  }
  spec.link_matrix =
      RingLinkMatrix(p, std::vector<Link>(p, Link{5000, 100'000'000'000}));
  auto program = v == 1 ? Generate1F1B(spec, {}) : GenerateInterleaved(spec, {});
  TimeSimulation(state, spec, program, ordered);
  if (program.ok()) state.counters["ops"] = static_cast<double>(program->total_ops());
}

BENCHMARK(BM_Simulate)
    ->ArgNames({"p", "m", "v", "ordered"})
    ->ArgsProduct({{8, 64}, {64, 256}, {1, 4}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// A named schedule at p = 64, m = 256 (its own v and placement), beside 1F1B:
// the split-backward schedules run 3 ops per (stage, micro-batch) instead
// of 2. Items = compute ops simulated.
void BM_SimulateSchedule(benchmark::State& state, const char* name) {
  const ScheduleInfo* info = FindSchedule(name);
  const int p = 64, m = 256;
  const int v = info->placement == StagePlacement::V ? 2 : 1;
  PipelineSpec spec = PipelineSpec::Uniform(p, v, m, 1000, 1000);
  if (info->placement == StagePlacement::V) {
    spec.placement = StagePlacement::V;
    spec.stage_device = StagePlacementDevices(StagePlacement::V, p, v);
  }
  for (auto& st : spec.stages) {
    st.backward_weight = 1000;
    st.activation = 1 << 20;
    st.input_grad_release = 1 << 19;
    st.output_bytes = 1 << 20;
  }
  spec.link_matrix =
      RingLinkMatrix(p, std::vector<Link>(p, Link{5000, 100'000'000'000}));
  auto program = info->generate(spec, {});
  TimeSimulation(state, spec, program);
  if (program.ok()) state.counters["ops"] = static_cast<double>(program->total_ops());
}

BENCHMARK_CAPTURE(BM_SimulateSchedule, 1f1b, "1f1b")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SimulateSchedule, zbv_zero_bubble, "zbv-zero-bubble")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SimulateSchedule, interleaved_zero_bubble,
                  "interleaved-zero-bubble")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SimulateSchedule, dualpipev, "dualpipev")
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ppb

BENCHMARK_MAIN();
