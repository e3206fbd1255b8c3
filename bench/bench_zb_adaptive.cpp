// Time to build an adaptive zero-bubble schedule (zb-1p, zb-2p: every
// candidate order planned and simulated, schedules/zb_adaptive.cpp) at
// p = 16, 32, 64 with m = 4p, unequal stage costs and real links; and the
// engine's throughput on the zb-1p order at p = 64, m = 256 (beside 1F1B's
// in bench_engine.cpp).
#include <benchmark/benchmark.h>

#include "bench/simulate_loop.h"
#include "core/engine.h"
#include "core/spec.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

PipelineSpec Unequal(int p, int m) {
  PipelineSpec spec = PipelineSpec::Uniform(p, 1, m, 1000, 1000);
  for (int s = 0; s < p; ++s) {
    StageCost& c = spec.stages[static_cast<size_t>(s)];
    c.forward = 1000 + 37 * (s % 5);
    c.backward_input = 1100 + 29 * (s % 3);
    c.backward_weight = 800 + 41 * (s % 4);
    c.activation = 1 << 20;
    c.output_bytes = 1 << 20;
  }
  spec.link_matrix =
      RingLinkMatrix(p, std::vector<Link>(p, Link{5000, 100'000'000'000}));
  return spec;
}

void BM_BuildAdaptive(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0));
  const int m = 4 * p;
  const bool two_p = state.range(1) == 2;
  const PipelineSpec spec = Unequal(p, m);
  for (auto _ : state) {
    Result<Program> program =
        two_p ? GenerateZB2P(spec, {}) : GenerateZB1P(spec, {});
    if (!program.ok()) {
      state.SkipWithError(program.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(program->ops.data());
  }
  state.counters["ops"] = 3.0 * p * m;
}

BENCHMARK(BM_BuildAdaptive)
    ->ArgNames({"p", "limit_p"})
    ->ArgsProduct({{16, 32, 64}, {1, 2}})
    ->Unit(benchmark::kMillisecond);

void BM_SimulateZB1P(benchmark::State& state) {
  const PipelineSpec spec = Unequal(64, 256);
  const Result<Program> program = GenerateZB1P(spec, {});
  TimeSimulation(state, spec, program);
}

BENCHMARK(BM_SimulateZB1P)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ppb
