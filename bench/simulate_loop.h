// The timed loop of the simulation benchmarks: run one program through the
// engine (no op records) once per iteration and count its ops as items, so
// that the reported items/s are simulated ops per second.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/engine.h"
#include "core/program.h"
#include "core/spec.h"

namespace ppb {

// Skips with the generator's error when `program` failed. With `ordered`,
// each run follows the order a first run recorded (SimOptions::order, as
// the search runs its evaluations); else the engine's worklist.
inline void TimeSimulation(benchmark::State& state, const PipelineSpec& spec,
                           const Result<Program>& program, bool ordered = false) {
  if (!program.ok()) {
    state.SkipWithError(program.error().message.c_str());
    return;
  }
  Engine engine;
  SimResult result;
  SimOptions options;
  options.record_ops = false;
  ExecutionOrder order;
  if (ordered) {
    options.record_order = true;
    engine.RunInto(spec, *program, options, result);
    order = ExecutionOrder::Compile(*program, result.order);
    options.record_order = false;
    options.order = &order;
  }
  for (auto _ : state) {
    engine.RunInto(spec, *program, options, result);
    benchmark::DoNotOptimize(result.makespan);
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<int64_t>(program->total_ops()));
}

}  // namespace ppb
