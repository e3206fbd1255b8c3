// `ppb-sim plan` on issue 34's benchmarks (bench/plan/*.yaml), each at its
// plan.time_limit (60 s): GPT-3 175B on 1,024 A100s over Calculon's space
// and more, Llama-3-70B on 256 H100s (target megatron), a DeepSeek-V3-like
// MoE on 2,048 H100s with expert parallelism. One iteration each; counters:
// best_ms, bound_ms, gap, proved, first_s (the first answer: the file's own
// strategy when it loads), within_2pct_s (when an answer within 2 % of the
// final one came), layouts, searched,
// pruned (by memory and bound), refused, loaded (layouts loaded),
// load_s and load_ms_per_layout (their loading, on the plan's threads).
// Issue 46's jobs over the plan's default space: GPT-3 175B on 1,024 A100s
// at 5 s and at 60 s, and DeepSeek-V3 on 1,024 H100s at 60 s. Wall and
// process CPU time are both reported (CPU / wall: the cores the plan kept
// busy); the 60 s GPT-3 job also on one thread. Its own binary: the seven
// take about six minutes.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "apps/commands/plan_run.h"

namespace {

// `limit_s` > 0 replaces the file's plan.time_limit; `threads` > 0 the
// plan's threads (default: every hardware thread).
void BM_Plan(benchmark::State& state, const char* file, double limit_s, int threads) {
  const std::string path = std::string(PPB_BENCH_PLAN_DIR) + "/" + file;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ppb::PlanOptions options;
  if (limit_s > 0) options.overrides.time_limit = static_cast<ppb::Nanos>(limit_s * 1e9);
  options.threads = threads;
  for (auto _ : state) {
    ppb::Result<ppb::PlanResult> r = ppb::RunPlan(text.str(), path, options);
    if (!r.ok()) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    const ppb::PlanResult& p = *r;
    std::int64_t refused = 0;
    for (const auto& [why, n] : p.refused) refused += n;
    const double best = p.found ? static_cast<double>(p.top.front().best->makespan) / 1e6 : 0;
    state.counters["best_ms"] = best;
    state.counters["bound_ms"] = static_cast<double>(p.lower_bound) / 1e6;
    state.counters["gap"] = p.gap;
    state.counters["proved"] = p.proved_optimal ? 1 : 0;
    state.counters["first_s"] = p.first_answer_s;
    double within = -1;
    for (const auto& [t, mk] : p.incumbents) {
      if (within < 0 && static_cast<double>(mk) / 1e6 <= 1.02 * best) within = t;
    }
    state.counters["within_2pct_s"] = within;
    state.counters["layouts"] = static_cast<double>(p.total);
    state.counters["searched"] = static_cast<double>(p.searched);
    state.counters["pruned"] = static_cast<double>(p.pruned_by_memory + p.pruned_by_bound);
    state.counters["refused"] = static_cast<double>(refused);
    state.counters["loaded"] = static_cast<double>(p.loaded);
    state.counters["load_s"] = p.load_s;
    state.counters["load_ms_per_layout"] =
        p.loaded > 0 ? 1e3 * p.load_s / static_cast<double>(p.loaded) : 0;
  }
}

BENCHMARK_CAPTURE(BM_Plan, gpt3_175b_1024_a100, "gpt3-175b-1024.yaml", 0, 0)
    ->Iterations(1)->Unit(benchmark::kSecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_Plan, llama3_70b_256_h100, "llama3-70b-256.yaml", 0, 0)
    ->Iterations(1)->Unit(benchmark::kSecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_Plan, deepseek_v3_2048_h100, "deepseek-v3-2048.yaml", 0, 0)
    ->Iterations(1)->Unit(benchmark::kSecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_Plan, gpt3_175b_1024_default_5s, "gpt3-175b-1024-default.yaml", 5, 0)
    ->Iterations(1)->Unit(benchmark::kSecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_Plan, gpt3_175b_1024_default_60s, "gpt3-175b-1024-default.yaml", 60, 0)
    ->Iterations(1)->Unit(benchmark::kSecond)->MeasureProcessCPUTime()->UseRealTime();
// The same on one thread: the ratio is what the second core gives.
BENCHMARK_CAPTURE(BM_Plan, gpt3_175b_1024_default_60s_1thread, "gpt3-175b-1024-default.yaml", 60,
                  1)
    ->Iterations(1)->Unit(benchmark::kSecond)->MeasureProcessCPUTime()->UseRealTime();
BENCHMARK_CAPTURE(BM_Plan, deepseek_v3_1024_h100_60s, "deepseek-v3-1024.yaml", 60, 0)
    ->Iterations(1)->Unit(benchmark::kSecond)->MeasureProcessCPUTime()->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
