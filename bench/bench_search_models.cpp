// The search on the shapes users bring (issue 32): the nine shipped HF
// models (configs/hf/) x TP {4, 8} x p {2, 4, 8, 16} x {1F1B, interleaved
// v in {2, 4}} x memory {tight 40 GiB, loose 80 GiB} x target {any,
// megatron}, each a user config (seq 4096, micro-batch 1, SP, DP 8,
// distributed optimizer, H100 989 TFLOP/s at 0.45, selective recompute, the
// even split, m = 4p) searched with a time limit (default 10 s; the
// benchmark's name carries it; PPB_BENCH_LIMIT_S sets another). Its own
// binary, ppb_bench_models (the whole grid at 10 s is about 50 minutes). Counters:
//   first_s        when the first strategy that fits came (-1: none)
//   best_ms        the answer; first_try_ms: the best first try that fits
//                  (search/first_tries.h) under the same choices (0: none)
//   worse          1 when the answer is slower than that first try (never
//                  expected: the first tries are incumbents)
//   gap, proved    the search's own
// Shapes a model cannot take (p·v above its layers, TP above its heads)
// are skipped with the reason. Run a slice with --benchmark_filter, e.g.
// 'BM_SearchModels/llama3-70b/tp8/p8/.*'.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/search_problem.h"
#include "search/first_tries.h"
#include "search/search.h"

namespace ppb {
namespace {

struct ModelCase {
  std::string model;  // configs/hf/<model>.json
  int tp = 8;
  int p = 4;
  bool tight = false;
  bool megatron = false;
  double limit_s = 10;
};

std::string CaseConfig(const ModelCase& c) {
  const int m = 4 * c.p;
  return "model:\n  name: " + c.model + "\n  hf_config: " + PPB_CONFIGS_DIR + "/hf/" + c.model +
         ".json\n"
         "training:\n  seq_length: 4096\n  micro_batch_size: 1\n  dtype: bf16\n"
         "  tensor_parallel: " +
         std::to_string(c.tp) +
         "\n  sequence_parallel: true\n  data_parallel: 8\n  distributed_optimizer: true\n"
         "hardware: {peak_tflops: 989, achievable_fraction: 0.45}\n"
         "cluster:\n  devices: {memory: " +
         (c.tight ? "40GiB" : "80GiB") +
         "}\n  link: {latency: 5us, bandwidth: 400Gbit/s}\n"
         "pipeline:\n  stages: " +
         std::to_string(c.p) + "\n  microbatches: " + std::to_string(m) +
         "\n  schedule: 1f1b\n"
         "strategy: {recompute: {selective: true}}\n"
         "search:\n  schedules: [1f1b, interleaved]\n  virtual_stages: [1, 2, 4]\n  target: " +
         (c.megatron ? "megatron" : "any") + "\n  threads: 1\n";
}

void BM_SearchModels(benchmark::State& state, ModelCase c) {
  const Result<RunConfig> config = ParseConfig(CaseConfig(c), "bench-" + c.model + ".yaml", {});
  if (!config.ok()) {
    state.SkipWithError(config.error().message.c_str());
    return;
  }
  const Result<SearchProblem> problem = BuildSearchProblem(*config);
  if (!problem.ok()) {
    state.SkipWithError(problem.error().message.c_str());
    return;
  }
  SearchOptions options = MakeSearchOptions(config->search);
  options.time_limit_s = c.limit_s;
  SearchResult last;
  for (auto _ : state) {
    Result<SearchResult> r = Search(*problem, options);
    if (!r.ok()) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    last = std::move(*r);
  }
  // The best first try that fits and the target can deploy.
  Nanos first_try = 0;
  for (const TriedDefault& t : TryDefaults(*problem, options.target)) {
    if (t.candidate.feasible && (first_try == 0 || t.candidate.makespan < first_try)) {
      first_try = t.candidate.makespan;
    }
  }
  state.counters["first_s"] = last.incumbents.empty() ? -1 : last.incumbents.front().first;
  state.counters["best_ms"] = last.found ? ToMs(last.best.makespan) : 0.0;
  state.counters["first_try_ms"] = ToMs(first_try);
  state.counters["worse"] =
      first_try > 0 && (!last.found || last.best.makespan > first_try) ? 1 : 0;
  state.counters["gap"] = last.gap;
  state.counters["proved"] = last.proved_optimal ? 1 : 0;
}

// The grid, registered at start-up.
int RegisterModels() {
  const char* env = std::getenv("PPB_BENCH_LIMIT_S");
  const double limit = env != nullptr && std::atof(env) > 0 ? std::atof(env) : 10.0;
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "/%gs", limit);
  const char* models[] = {"llama2-7b",  "llama2-70b",  "llama3-8b",   "llama3-70b",
                          "llama3.1-405b", "qwen2.5-72b", "mixtral-8x7b", "deepseek-v3",
                          "gpt3-175b"};
  for (const char* model : models) {
    for (const int tp : {4, 8}) {
      for (const int p : {2, 4, 8, 16}) {
        for (const bool tight : {false, true}) {
          for (const bool megatron : {false, true}) {
            ModelCase c{model, tp, p, tight, megatron, limit};
            const std::string name = "BM_SearchModels/" + c.model + "/tp" + std::to_string(tp) +
                                     "/p" + std::to_string(p) + (tight ? "/40GiB" : "/80GiB") +
                                     (megatron ? "/megatron" : "/any") + suffix;
            benchmark::RegisterBenchmark(name.c_str(), BM_SearchModels, c)
                ->Iterations(1)
                ->Unit(benchmark::kMillisecond);
          }
        }
      }
    }
  }
  return 0;
}
const int kRegistered = RegisterModels();

}  // namespace
}  // namespace ppb

BENCHMARK_MAIN();
