// Issue 48: the newer commands (plan, the step model's keys, calibrate
// --runs) under hostile input: each case of the survey, refused at
// its key and line with exit 2, or answered with every combination counted
// and the time limit kept.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "app_helpers.h"
#include "apps/commands/plan_run.h"
#include "apps/input/config.h"
#include "apps/input/layout_document.h"
#include "apps/input/step_runs.h"
#include "apps/output/plan_output.h"
#include "apps/output/step_calibration.h"
#include "core/gpu.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

using test::Cli;

// A tiny dense job on A100s with a plan block `plan` (line 15 on).
std::string Job(const std::string& training_extra, const std::string& plan,
                const std::string& hardware = "gpu: a100-sxm4-80gb") {
  return "model:\n"                                                               // 1
         "  name: tiny\n"                                                         // 2
         "  architecture: {hidden_size: 1024, num_layers: 8, num_attention_heads: 16,\n"
         "                 ffn_hidden_size: 4096, vocab_size: 32000}\n"           // 4
         "training:\n"                                                            // 5
         "  seq_length: 2048\n"                                                   // 6
         "  global_batch_size: 16\n" +                                            // 7
         training_extra +
         "hardware: {" + hardware + "}\n" + plan;
}

std::string Join(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += (s.empty() ? "" : ", ") + std::to_string(i);
  return s;
}

// Every combination counted once: refused, pruned, searched, left open or
// not loaded.
void CheckCounts(const PlanResult& r) {
  std::int64_t refused = 0;
  for (const auto& [why, n] : r.refused) refused += n;
  CHECK(refused + r.pruned_by_memory + r.pruned_by_bound + r.searched + r.open +
            r.not_loaded ==
        r.total);
}

TEST_CASE("hardening: plan lists that multiply past int64 are refused, not divided by 0",
          "[hardening][plan]") {
  const std::string text = Job("", "plan:\n  gpus: 8\n  tensor_parallel: [2097152]\n"
                                   "  context_parallel: [2097152]\n"
                                   "  pipeline_parallel: [4194304]\n"
                                   "  micro_batch_size: [1]\n  schedules: [1f1b]\n"
                                   "  time_limit: 0s\n");
  Result<PlanResult> r = RunPlan(text, "job.yaml", PlanOptions{});
  REQUIRE(r.ok());
  CHECK(r->total == 1);
  CHECK(r->refused.at("t x cp x p does not divide the GPUs") == 1);
  CHECK_FALSE(r->found);
  CheckCounts(*r);
}

TEST_CASE("hardening: the time limit bounds the enumeration of a huge plan space",
          "[hardening][plan]") {
  // 300 values each of t, cp, ep and p: 8.1e9 shapes, far more than 0.2 s
  // enumerates. The plan stops, counts the rest as not loaded and proves
  // nothing (whatever the machine's speed: no timing is asserted).
  const std::string list = "[" + Join(1, 300) + "]";
  const std::string text =
      Job("", "plan:\n  gpus: 8\n  tensor_parallel: " + list + "\n  context_parallel: " +
                  list + "\n  expert_parallel: " + list + "\n  pipeline_parallel: " + list +
                  "\n  micro_batch_size: [1]\n  schedules: [1f1b]\n  time_limit: 200ms\n");
  Result<PlanResult> r = RunPlan(text, "job.yaml", PlanOptions{});
  REQUIRE(r.ok());
  CHECK(r->total == 300LL * 300 * 300 * 300);
  CHECK(r->not_loaded > 0);
  CHECK_FALSE(r->proved_optimal);
  CHECK(r->stop_reason == "time limit");
  CheckCounts(*r);
  // A space past 1e12 combinations is refused at the plan's line.
  const std::string big = "[" + Join(1, 1200) + "]";
  Result<PlanResult> too_big = RunPlan(
      Job("", "plan:\n  gpus: 8\n  tensor_parallel: " + big + "\n  context_parallel: " + big +
                  "\n  expert_parallel: " + big + "\n  pipeline_parallel: " + big + "\n"),
      "job.yaml", PlanOptions{});
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.error().message.rfind(
            "job.yaml:9: plan: must make at most 1e+12 combinations (the product of its "
            "lists' sizes); got about ",
            0) == 0);
}

TEST_CASE("hardening: a listed v the schedule does not run is counted as refused",
          "[hardening][plan]") {
  const std::string text = Job("", "plan:\n  gpus: 8\n  tensor_parallel: [1]\n"
                                   "  context_parallel: [1]\n  pipeline_parallel: [2]\n"
                                   "  micro_batch_size: [1]\n  schedules: [interleaved]\n"
                                   "  virtual_stages: [1, 2]\n  time_limit: 0s\n");
  Result<RunConfig> probe = ParseConfigYaml(ProbeDocument(text), "job.yaml", {});
  REQUIRE(probe.ok());
  const PlanSpace space = EnumeratePlan(PlanJobOf(*probe), *probe->plan, nullptr);
  CHECK(space.total == 2);
  CHECK(space.refused.at("interleaved needs virtual_stages >= 2") == 1);
  REQUIRE(space.layouts.size() == 1);
  CHECK(space.layouts[0].v == 2);
}

TEST_CASE("hardening: the step model's keys are bounded at their own line", "[hardening]") {
  struct Bad {
    std::string yaml, message;
  };
  const std::string moe =
      "model:\n  name: moe\n"
      "  architecture: {hidden_size: 1024, num_layers: 4, num_attention_heads: 16,\n"
      "                 vocab_size: 32000, moe: {num_experts: 8, top_k: 2,\n"
      "                 expert_ffn_hidden_size: 1024}}\n"
      "training:\n  seq_length: 2048\n  global_batch_size: 8\n  expert_parallel: 2\n"
      "  data_parallel: 2\n";
  const Bad bad[] = {
      {moe + "  routing_skew: 1e12\nhardware: {gpu: h100-sxm}\npipeline: {stages: 2}\n",
       "job.yaml:11: training.routing_skew: must be in [1, 1000] (the busiest rank's tokens "
       "over the mean); got 1e12"},
      {moe + "  routing_skew: 1e300\nhardware: {gpu: h100-sxm}\npipeline: {stages: 2}\n",
       "job.yaml:11: training.routing_skew: must be in [1, 1000] (the busiest rank's tokens "
       "over the mean); got 1e300"},
      {Job("  routing_skew: 2\n", "pipeline: {stages: 2}\n"),
       "job.yaml:8: training.routing_skew: must be given with a mixture-of-experts model (it "
       "scales the expert GEMMs and all-to-alls; this model has no routed experts); got 2"},
      {Job("", "pipeline: {stages: 2}\n", "gpu: h100-sxm, peak_tflops: 1e300"),
       "job.yaml:8: hardware.peak_tflops: must be in [0.001, 1e6] TFLOP/s; got 1e300"},
      {Job("", "pipeline: {stages: 2}\n", "peak_tflops: 1e-9, memory: 80GiB"),
       "job.yaml:8: hardware.peak_tflops: must be in [0.001, 1e6] TFLOP/s; got 1e-9"},
  };
  for (const Bad& b : bad) {
    DYNAMIC_SECTION(b.message) {
      Result<RunConfig> r = ParseConfig(b.yaml, "job.yaml", {});
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().message == b.message);
    }
  }
  // The global batch's m past the op limit names the key the file has.
  std::string gbs = Job("", "pipeline: {stages: 2}\n");
  gbs.replace(gbs.find("global_batch_size: 16"), 21, "global_batch_size: 2147483646");
  Result<RunConfig> r = ParseConfig(gbs, "job.yaml", {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.rfind("job.yaml:7: training.global_batch_size: must keep one "
                                "simulation within 2000000 ops",
                                0) == 0);
  CHECK(r.error().message.find("got 2147483646 (m = 2147483646 micro-batches)") !=
        std::string::npos);
}

TEST_CASE("hardening: the plan block and the plan command's arguments", "[hardening][plan]") {
  for (const char* plan : {"plan: [64]\n", "plan:\n", "plan: ~\n"}) {
    Result<PlanResult> r = RunPlan(Job("", plan), "job.yaml", PlanOptions{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.rfind("job.yaml:9: plan: must be a map with keys gpus", 0) == 0);
  }
  const test::CliRun help = Cli({"plan", "--help"});
  CHECK(help.status == 0);
  CHECK(help.out.find("plan options") != std::string::npos);
  const test::CliRun none = Cli({"plan"});
  CHECK(none.status == 2);
  CHECK(none.err.rfind("ppb-sim: --config: required; give the run config (YAML); got nothing",
                       0) == 0);
  const std::string dir =
      (std::filesystem::temp_directory_path() / "ppb-hardening-dir").string();
  std::filesystem::create_directories(dir);
  const test::CliRun d = Cli({"plan", "--config", dir});
  CHECK(d.status == 2);
  CHECK(d.err == dir + ": must be a readable config file; got Is a directory\n");
}

TEST_CASE("hardening: a model name that is not UTF-8 reaches the plan's JSON replaced",
          "[hardening][plan]") {
  // fuzz_plan's finding (tests/fuzz/corpus/plan/invalid-utf8-name.yaml):
  // nlohmann::json threw type_error 316 on the name's byte 0x84.
  std::string text = Job("", "plan:\n  gpus: 8\n  tensor_parallel: [1]\n"
                             "  context_parallel: [1]\n  pipeline_parallel: [2]\n"
                             "  micro_batch_size: [1]\n  schedules: [1f1b]\n"
                             "  time_limit: 0s\n");
  text.replace(text.find("name: tiny"), 10, "name: ti\x84ny");
  Result<PlanResult> r = RunPlan(text, "job.yaml", PlanOptions{});
  REQUIRE(r.ok());
  const std::string json = FormatPlanJson(*r);
  CHECK(json.find("ti\xEF\xBF\xBDny") != std::string::npos);
}

// A runs file in a temporary folder beside copies of the step fixtures.
struct RunsDir {
  std::filesystem::path dir;
  RunsDir() {
    dir = std::filesystem::temp_directory_path() / "ppb-hardening-runs";
    std::filesystem::create_directories(dir);
    for (const char* f : {"compute.yaml", "tensor.yaml", "data.yaml"}) {
      std::filesystem::copy_file(std::string(PPB_TEST_DATA_DIR) + "/step/" + f, dir / f,
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
  std::string Write(const std::string& runs) const {
    const std::string path = (dir / "runs.yaml").string();
    std::ofstream(path) << runs;
    return path;
  }
};

TEST_CASE("hardening: calibrate --runs counts distinct configs and says what it cannot fit",
          "[hardening]") {
  RunsDir d;
  // One config listed three times measures one thing.
  const std::string thrice =
      "runs:\n"
      "  - {config: compute.yaml, iteration_time: 1471896434ns}\n"
      "  - {config: compute.yaml, iteration_time: 1471896434ns}\n"
      "  - {config: compute.yaml, iteration_time: 1471896434ns}\n";
  Result<StepRuns> three = LoadStepRuns(
      d.Write(thrice + "fit: [matmul_efficiency, collective_efficiency, hbm_efficiency]\n"));
  REQUIRE_FALSE(three.ok());
  CHECK(three.error().message ==
        (d.dir / "runs.yaml").string() +
            ":5: fit: must name 1 to 1 coefficients (at most one per distinct measured "
            "config: 3 runs name 1 configs); got 3");
  // Without a fit list it fits one coefficient and says why.
  Result<StepRuns> one = LoadStepRuns(d.Write(thrice));
  REQUIRE(one.ok());
  CHECK(one->distinct == 1);
  REQUIRE(one->fit.size() == 1);
  Result<StepFit> fit = FitStepRuns(*one);
  REQUIRE(fit.ok());
  REQUIRE(fit->warnings.size() == 1);
  CHECK(fit->warnings[0] ==
        "3 runs name 1 distinct configs: repeated configs add no information on the "
        "coefficients");
  // Steps measured at 1 ns: the fit runs to its bound and cannot explain
  // them; the block to paste carries the warnings.
  Result<StepRuns> ns = LoadStepRuns(d.Write(
      "runs:\n  - {config: compute.yaml, iteration_time: 1ns}\n"
      "  - {config: tensor.yaml, iteration_time: 1ns}\n"
      "  - {config: data.yaml, iteration_time: 1ns}\n"));
  REQUIRE(ns.ok());
  Result<StepFit> bound = FitStepRuns(*ns);
  REQUIRE(bound.ok());
  REQUIRE(bound->warnings.size() >= 2);
  CHECK(bound->warnings[0].rfind("matmul_efficiency ended at the bound of its search (1)", 0) ==
        0);
  const std::string yaml = StepFitHardwareYaml(*ns, *bound);
  CHECK(yaml.rfind("# WARNING: ", 0) == 0);
  CHECK(FormatStepFitText(*ns, *bound).find("only after checking the warnings above") !=
        std::string::npos);
  // Runs on two GPU presets are two machines.
  std::string a100 = "model:\n  name: other\n"
                     "  architecture: {hidden_size: 1024, num_layers: 8, num_attention_heads: "
                     "16, ffn_hidden_size: 4096, vocab_size: 32000}\n"
                     "training: {seq_length: 2048, global_batch_size: 8}\n"
                     "hardware: {gpu: a100-sxm4-80gb}\npipeline: {stages: 2}\n";
  std::ofstream((d.dir / "a100.yaml").string()) << a100;
  Result<StepRuns> mixed = LoadStepRuns(d.Write(
      "runs:\n  - {config: compute.yaml, iteration_time: 1s}\n"
      "  - {config: a100.yaml, iteration_time: 1s}\nfit: [matmul_efficiency]\n"));
  REQUIRE(mixed.ok());
  Result<StepFit> two = FitStepRuns(*mixed);
  REQUIRE_FALSE(two.ok());
  CHECK(two.error().message ==
        (d.dir / "runs.yaml").string() +
            ":3: runs[1].config: must run on the first run's GPU (h100-sxm; calibrate fits "
            "one machine: give each GPU its own runs file); got a100-sxm4-80gb");
  // --memory-unit belongs to SAPP's measurements.
  const test::CliRun unit =
      Cli({"calibrate", "--runs", (d.dir / "runs.yaml").string(), "--memory-unit", "1MiB"});
  CHECK(unit.status == 2);
  CHECK(unit.err.rfind("ppb-sim: --memory-unit: must not be given with --runs", 0) == 0);
}

}  // namespace
}  // namespace ppb

namespace ppb {

TEST_CASE("every command's help: its own usage, and the registries' names", "[hardening][cli]") {
  for (const char* command :
       {"simulate", "search", "rank", "compare", "model", "calibrate", "sweep", "plan"}) {
    INFO(command);
    const test::CliRun help = Cli({command, "--help"});
    CHECK(help.status == 0);
    CHECK(help.err.empty());
    // The command's own usage first, not the global one.
    const std::string own = std::string(command) == "simulate"
                                ? "usage: ppb-sim [simulate] --config"
                                : "usage: ppb-sim " + std::string(command) + " ";
    CHECK(help.out.rfind(own, 0) == 0);
    CHECK(help.out.find(std::string(command) + " options") != std::string::npos);
    // Every schedule the loader takes and every GPU preset, by name.
    for (const ScheduleInfo& s : ScheduleRegistry()) {
      CHECK(help.out.find(std::string(s.name) + ",") != std::string::npos);
    }
    CHECK(help.out.find("custom (pipeline.schedule_csv)") != std::string::npos);
    for (const std::string& g : GpuNames()) CHECK(help.out.find(g) != std::string::npos);
  }
  // Each schedule is in the list once: eleven names in all.
  const test::CliRun search = Cli({"search", "--help"});
  const size_t from = search.out.find("schedules (pipeline.schedule):");
  const size_t to = search.out.find("GPU presets");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string list = search.out.substr(from, to - from);
  CHECK(std::count(list.begin(), list.end(), ',') == 10);
  CHECK(ScheduleRegistry().size() == 10);
}

}  // namespace ppb
