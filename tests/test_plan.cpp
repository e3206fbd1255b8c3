// ppb-sim plan (apps/commands/plan_run.h, search/plan/plan_space.h, apps/input/layout_document.h): the
// plan's answer against brute force over every layout of small spaces (every
// split and recompute simulated), its bounds below every layout's optimum,
// the candidates counted, the refusal rules, "your config" among the
// candidates, errors, and --emit read back by the Megatron reader.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "app_helpers.h"
#include "apps/commands/plan_run.h"
#include "apps/input/apply_layout.h"
#include "apps/input/layout_document.h"
#include "apps/input/search_problem.h"
#include "apps/output/emit.h"
#include "apps/output/output.h"
#include "core/engine.h"
#include "apps/output/plan_output.h"
#include "brute_force.h"
#include "search/first_tries.h"

namespace ppb {
namespace {

// A 4-decoder GPT (embedding and head besides) priced by the step model on
// A100s; 2.5 GiB of each GPU's 4 GiB kept free leaves 1.5 GiB (no process
// memory: core/process_memory.h's coefficients zero), less the default
// headroom, so that some layouts fit only with recompute and some not at all.
std::string TinyJob(const std::string& plan, const std::string& training_extra = "") {
  return R"(model:
  name: tiny
  architecture:
    hidden_size: 1024
    num_layers: 4
    num_attention_heads: 8
    ffn_hidden_size: 4096
    vocab_size: 32000
training:
  seq_length: 2048
  global_batch_size: 16
  dtype: bf16
)" + training_extra +
         R"(hardware: {gpu: a100-sxm4-80gb, memory: 4GiB,
  memory_reserve: 2560MiB,
  memory_fragmentation: 0, memory_nccl_per_peer: 0B, memory_context: 0B,
  memory_workspace: 0B}
)" + plan;
}

const std::string kSpace = R"(plan:
  gpus: 8
  tensor_parallel: [1, 2]
  context_parallel: [1]
  pipeline_parallel: [1, 2]
  micro_batch_size: [1, 2]
  schedules: [1f1b, interleaved]
  virtual_stages: [2]
  time_limit: 0s
)";

// The plan space of the job `text`.
PlanSpace SpaceOf(const std::string& text) {
  Result<RunConfig> probe = ParseConfigYaml(ProbeDocument(text), "job.yaml", {});
  REQUIRE(probe.ok());
  return EnumeratePlan(PlanJobOf(*probe), *probe->plan, nullptr);
}

struct Layout {
  PlanLayout layout;
  SearchProblem problem;
  std::optional<brute::Objective> optimum;  // nullopt: nothing fits
};

// Every layout of the job's space, loaded and brute-forced: strategies
// restricted to the layout's recompute choice (search: any; a mode: that
// mode on every layer that offers it).
std::vector<Layout> BruteForce(const std::string& text) {
  Result<RunConfig> probe = ParseConfigYaml(ProbeDocument(text), "job.yaml", {});
  REQUIRE(probe.ok());
  const PlanSpace space = EnumeratePlan(PlanJobOf(*probe), *probe->plan, nullptr);
  std::vector<Layout> out;
  for (const PlanLayout& l : space.layouts) {
    Result<RunConfig> cfg = ParseConfigYaml(LayoutDocument(text, l), "job.yaml", {});
    REQUIRE(cfg.ok());
    Result<SearchProblem> pr = BuildSearchProblem(*cfg);
    REQUIRE(pr.ok());
    Layout x{l, *pr, std::nullopt};
    std::vector<brute::Point> points = brute::Enumerate(*pr);
    if (l.recompute != "search") {
      const Strategy uniform =
          l.recompute == "none"
              ? EvenStrategy(pr->layers, pr->p, l.v)
              : WithModeEverywhere(EvenStrategy(pr->layers, pr->p, l.v), pr->layers, l.recompute);
      std::vector<brute::Point> kept;
      for (brute::Point& pt : points) {
        std::vector<std::uint8_t> want = uniform.recompute;
        if (l.recompute == "none") std::fill(want.begin(), want.end(), 0);
        if (pt.strategy.recompute == want) kept.push_back(std::move(pt));
      }
      points = std::move(kept);
    }
    x.optimum = brute::Optimum(points, brute::Capacities(*pr));
    out.push_back(std::move(x));
  }
  return out;
}

void CheckAgainstBruteForce(const std::string& text) {
  const std::vector<Layout> all = BruteForce(text);
  Result<PlanResult> plan = RunPlan(text, "job.yaml", PlanOptions{});
  REQUIRE(plan.ok());
  Nanos best = -1;
  int fitting = 0;
  for (const Layout& x : all) {
    INFO(DescribeLayout(x.layout));
    if (!x.optimum) {
      // The memory floor never prunes a layout where something fits.
      continue;
    }
    ++fitting;
    const Nanos opt = std::get<0>(*x.optimum);
    if (best < 0 || opt < best) best = opt;
    // Every bound the plan uses is at most the layout's optimum.
    SearchOptions o;
    o.target = plan->settings.target;
    if (x.layout.recompute != "search") {
      RecomputeSetting s;
      s.target = o.target;
      s.kind = RecomputeSetting::Kind::Every;
      s.mode = x.layout.recompute == "none" ? "" : x.layout.recompute;
      o.setting = s;
    }
    CHECK(PlanFloorFits(x.problem, o.setting));
    CHECK(PlanCheapBound(x.problem) <= opt);
    Result<Nanos> lb = LowerBound(x.problem, o);
    REQUIRE(lb.ok());
    CHECK(*lb <= opt);
    // With the open-tree bound below a cutoff: at most the optimum whatever
    // the cutoff (above it only when nothing ends by it).
    for (Nanos below : {opt, opt + 1, opt + opt / 10, opt - 1, opt / 2}) {
      Result<Nanos> cut = LowerBound(x.problem, o, below);
      REQUIRE(cut.ok());
      CHECK(*cut <= opt);
    }
  }
  REQUIRE(fitting > 0);
  REQUIRE(plan->found);
  CHECK(plan->proved_optimal);
  CHECK(plan->gap == 0.0);
  CHECK(plan->top.front().best->makespan == best);
  CHECK(plan->lower_bound == best);
  // Every combination is accounted for once.
  std::int64_t refused = 0;
  for (const auto& [why, n] : plan->refused) refused += n;
  CHECK(plan->not_loaded == 0);
  CHECK(plan->open == 0);
  CHECK(refused + plan->pruned_by_memory + plan->pruned_by_bound + plan->searched ==
        plan->total);
  CHECK(static_cast<std::int64_t>(all.size()) ==
        plan->pruned_by_memory + plan->pruned_by_bound + plan->searched);
  // The top list is sorted and each entry fits.
  for (size_t i = 0; i < plan->top.size(); ++i) {
    CHECK(plan->top[i].best->feasible);
    if (i > 0) CHECK(plan->top[i - 1].best->makespan <= plan->top[i].best->makespan);
  }
}

TEST_CASE("plan: the answer equals brute force over every layout, proved", "[plan]") {
  CheckAgainstBruteForce(TinyJob(kSpace));
}

TEST_CASE("plan: uniform recompute choices against brute force", "[plan]") {
  std::string space = kSpace;
  space += "  recompute: [none, full]\n";
  CheckAgainstBruteForce(TinyJob(space));
}

TEST_CASE("plan: memory binds: fewer layouts fit, the answer still equals brute force",
          "[plan]") {
  std::string job = TinyJob(kSpace);
  job.replace(job.find("memory_reserve: 2560MiB"), 23, "memory_reserve: 3000MiB");
  CheckAgainstBruteForce(job);
}

TEST_CASE("plan: under a node limit the answer is the same on 1 2 and 3 threads", "[plan]") {
  // A space of more layouts than one round (8) whose searches stop at the
  // node limit, so that an incumbent found in a round bounds the next.
  const std::string text = TinyJob(R"(plan:
  gpus: 8
  tensor_parallel: [1, 2]
  context_parallel: [1]
  pipeline_parallel: [1, 2, 4]
  micro_batch_size: [1, 2, 4]
  schedules: [1f1b, interleaved, zb-v]
  virtual_stages: [2, 3]
  recompute: [search, none, selective, full]
  time_limit: 0s
)");
  std::vector<std::string> json;
  std::int64_t searched = 0;
  for (int threads : {1, 2, 3}) {
    PlanOptions o;
    o.node_limit = 5;
    o.threads = threads;
    Result<PlanResult> plan = RunPlan(text, "job.yaml", o);
    REQUIRE(plan.ok());
    REQUIRE(plan->found);
    searched = plan->searched;
    nlohmann::json j = nlohmann::json::parse(FormatPlanJson(*plan));
    for (const char* k : {"solve_time_s", "first_answer_s", "incumbents"}) j.erase(k);
    json.push_back(j.dump(1));
  }
  INFO(json[0]);
  CHECK(searched > 8);  // more than one round searched
  CHECK(json[1] == json[0]);
  CHECK(json[2] == json[0]);
}

TEST_CASE("plan: a space that loads a sample first keeps its proved answer and its threads", "[plan]") {
  // Every space here loads its sample first (every 16th layout, its even
  // splits tried before the rest loads): the proved optimum is the same as
  // without, and under a node limit the answer is the same on any threads.
  PlanOptions whole;
  PlanOptions sampled;
  sampled.sample_from = 1;
  Result<PlanResult> a = RunPlan(TinyJob(kSpace), "job.yaml", whole);
  Result<PlanResult> b = RunPlan(TinyJob(kSpace), "job.yaml", sampled);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->proved_optimal);
  CHECK(b->proved_optimal);
  REQUIRE(a->found);
  REQUIRE(b->found);
  CHECK(b->top.front().best->makespan == a->top.front().best->makespan);
  CHECK(b->lower_bound == a->lower_bound);
  CHECK(b->loaded == a->loaded);
  CHECK(DescribeLayout(b->top.front().layout) == DescribeLayout(a->top.front().layout));

  const std::string text = TinyJob(R"(plan:
  gpus: 8
  tensor_parallel: [1, 2]
  pipeline_parallel: [1, 2, 4]
  micro_batch_size: [1, 2]
  schedules: [1f1b, interleaved, zb-v]
  virtual_stages: [2]
  recompute: [search, none, full]
  time_limit: 0s
)");
  std::vector<std::string> json;
  for (int threads : {1, 2, 3}) {
    PlanOptions o = sampled;
    o.node_limit = 5;
    o.threads = threads;
    Result<PlanResult> plan = RunPlan(text, "job.yaml", o);
    REQUIRE(plan.ok());
    REQUIRE(plan->found);
    nlohmann::json j = nlohmann::json::parse(FormatPlanJson(*plan));
    for (const char* k : {"solve_time_s", "first_answer_s", "incumbents"}) j.erase(k);
    json.push_back(j.dump(1));
  }
  INFO(json[0]);
  CHECK(json[1] == json[0]);
  CHECK(json[2] == json[0]);
}

// apps/input/apply_layout.h's contract, layout by layout over a space:
// for every layout the loader takes (with its default even split) and
// every other layout of the space that differs from it only in schedule
// and v, ApplyScheduleV either declines or gives what the loader gives
// for that layout: the same run config where a schedule or v reads it,
// and the same simulation, report for report. Returns how many it gave.
int CheckScheduleVAgainstLoader(const std::string& text) {
  Result<RunConfig> probe = ParseConfigYaml(ProbeDocument(text), "job.yaml", CliOverrides{});
  REQUIRE(probe.ok());
  const PlanSpace space = EnumeratePlan(PlanJobOf(*probe), *probe->plan, nullptr, [] { return false; });
  auto key = [](PlanLayout l) {
    l.schedule.clear();
    l.v = 0;
    return DescribeLayout(l);
  };
  auto simulate = [](const RunConfig& c) {
    Result<PreparedRun> run = Prepare(c);
    if (!run.ok()) return "refused: " + run.error().message;
    Engine engine;
    const SimResult r = engine.Run(run->spec, run->program, SimOptions{});
    return FormatSimJson(c, *run, r, nullptr);
  };
  int applied = 0;
  for (const PlanLayout& a : space.layouts) {
    Result<RunConfig> base = ParseConfigYaml(LayoutDocument(text, a), "job.yaml", CliOverrides{});
    if (!base.ok()) continue;
    for (const PlanLayout& b : space.layouts) {
      if (&a == &b || key(a) != key(b)) continue;
      const std::optional<RunConfig> x = ApplyScheduleV(*base, b.schedule, b.v);
      if (!x) continue;
      Result<RunConfig> y = ParseConfigYaml(LayoutDocument(text, b), "job.yaml", CliOverrides{});
      INFO(DescribeLayout(a) + " -> " + DescribeLayout(b));
      REQUIRE(y.ok());
      ++applied;
      CHECK(x->schedule == y->schedule);
      CHECK(x->shape.p == y->shape.p);
      CHECK(x->shape.v == y->shape.v);
      CHECK(x->shape.m == y->shape.m);
      CHECK(x->shape.comm == y->shape.comm);
      CHECK(x->shape.op_overhead == y->shape.op_overhead);
      CHECK(x->shape.ep_overlap_ppm == y->shape.ep_overlap_ppm);
      CHECK(x->schedule_params.group == y->schedule_params.group);
      CHECK(x->schedule_params.combined_1f1b == y->schedule_params.combined_1f1b);
      CHECK(x->strategy.layers_per_stage == y->strategy.layers_per_stage);
      CHECK(x->strategy.recompute == y->strategy.recompute);
      CHECK(x->key_lines == y->key_lines);
      CHECK(x->training.pp == y->training.pp);
      Result<SearchProblem> px = BuildSearchProblem(*x);
      Result<SearchProblem> py = BuildSearchProblem(*y);
      CHECK(px.ok() == py.ok());
      CHECK(simulate(*x) == simulate(*y));
    }
  }
  return applied;
}

TEST_CASE("plan: a schedule and v applied to a loaded layout give what the loader gives",
          "[plan]") {
  const std::string space = R"(plan:
  gpus: 8
  tensor_parallel: [1, 2]
  pipeline_parallel: [1, 2, 4]
  micro_batch_size: [1, 2]
  schedules: [1f1b, gpipe, interleaved, zb-v, zb-1p, looped-bfs]
  virtual_stages: [2, 3]
  recompute: [search, full]
  time_limit: 0s
)";
  // Megatron's default communication for each schedule, and one given.
  CHECK(CheckScheduleVAgainstLoader(TinyJob(space)) > 50);
  CHECK(CheckScheduleVAgainstLoader(TinyJob("pipeline: {communication: overlapped}\n" + space)) >
        50);
  // Recompute named in the file (MindFormers' bool) carries over.
  CHECK(CheckScheduleVAgainstLoader(
            TinyJob("strategy: {recompute: {selective: true}}\n" + space)) > 50);
  // Two MTP layers ride with the head on the last stage: at p x v = 6 the
  // default even split leaves a chunk empty, which the loader refuses (and
  // the plan loads with the most even counts instead).
  std::string mtp = TinyJob(space);
  mtp.replace(mtp.find("    vocab_size: 32000\n"), 22, "    vocab_size: 32000\n    mtp_layers: 2\n");
  CHECK(CheckScheduleVAgainstLoader(mtp) > 50);
}

TEST_CASE("plan: a time limit that comes while loading proves nothing and says so", "[plan]") {
  std::string job = TinyJob(kSpace);
  job.replace(job.find("time_limit: 0s"), 14, "time_limit: 1ns");
  Result<PlanResult> plan = RunPlan(job, "job.yaml", PlanOptions{});
  REQUIRE(plan.ok());
  CHECK_FALSE(plan->proved_optimal);
  CHECK(plan->lower_bound == 0);
  CHECK(plan->stop_reason == "time limit");
  CHECK(plan->not_loaded == 12);  // every layout the rules let through (16 - 4 refused)
  std::int64_t refused = 0;
  for (const auto& [why, n] : plan->refused) refused += n;
  CHECK(refused + plan->pruned_by_memory + plan->pruned_by_bound + plan->searched + plan->open +
            plan->not_loaded ==
        plan->total);
}

TEST_CASE("plan: the space's rules, each refusal counted by reason", "[plan]") {
  const std::string text = TinyJob(R"(plan:
  gpus: 48
  tensor_parallel: [1, 2, 3, 16]
  context_parallel: [1, 3]
  expert_parallel: [1, 2]
  pipeline_parallel: [1, 2]
  micro_batch_size: [1]
  schedules: [1f1b, zb-v]
  target: megatron
  time_limit: 0s
)");
  const PlanSpace space = SpaceOf(text);
  // 4 t x 2 cp x 2 ep x 2 p = 32 shapes; each with 1 mbs, 1 dist-opt and
  // 2 (schedule, v) pairs (1f1b v1, zb-v v2) and one recompute choice: 2
  // combinations per shape (sp: true at t > 1, false at t = 1: one each).
  CHECK(space.total == 64);
  // By hand, shape by shape (t, cp, ep, p), the first rule broken:
  //   t = 1, 2: t cp p divides 48; cp = 3 splits 2048 into 6 chunks: no
  //     (4 shapes each); cp = 1, ep = 2: a dense model (2 each); cp = 1,
  //     ep = 1: d = 48 / (t p) in {48, 24} (t 1), {24, 12} (t 2), none
  //     dividing the global batch of 16 (2 each).
  //   t = 3: t cp p in {3, 6, 9, 18}: 9 and 18 do not divide 48 (4 shapes),
  //     3 and 6 do, then 8 heads % 3 (4 shapes).
  //   t = 16: t cp p in {16, 32, 48, 96}: 32 and 96 do not divide 48 (4
  //     shapes), 16 and 48 do, then 8 heads % 16 (4 shapes).
  // Two combinations per shape.
  std::map<std::string, std::int64_t> want;
  want["t x cp x p does not divide the GPUs"] = 2 * 8;
  want["t does not divide the attention heads"] = 2 * 8;
  want["cp does not split the sequence into 2 x cp equal chunks"] = 2 * 8;
  want["ep > 1 needs routed experts (a dense model)"] = 2 * 4;
  want["the global batch is not a multiple of d x micro_batch_size"] = 2 * 4;
  CHECK(space.refused == want);
  CHECK(space.layouts.empty());
}

TEST_CASE("plan: precision is a dimension, refused where the GPU cannot run it", "[plan]") {
  // The tiny job on H100s with BF16, FP8 current scaling and MXFP8 listed:
  // MXFP8 needs Blackwell, so each of its combinations is refused with the
  // reason; BF16 and FP8 are searched, and the answer equals brute force.
  // The space of this test, with its precision list.
  auto space_with = [](const std::string& precision) {
    return "plan:\n  gpus: 8\n  tensor_parallel: [1, 2]\n  context_parallel: [1]\n"
           "  pipeline_parallel: [1, 2]\n  micro_batch_size: [1, 2]\n  schedules: [1f1b]\n"
           "  precision: " + precision + "\n  time_limit: 0s\n";
  };
  std::string text = TinyJob(space_with("[bf16, fp8-tensorwise, mxfp8]"));
  text.replace(text.find("a100-sxm4-80gb"), 14, "h100-sxm");
  const PlanSpace space = SpaceOf(text);
  // 2 t x 2 p x 2 mbs x 3 precisions = 24 combinations, a third refused.
  CHECK(space.total == 24);
  REQUIRE(space.refused.size() == 1);
  CHECK(space.refused.begin()->first ==
        "mxfp8 needs block-scaled (MX) tensor cores: Blackwell (SM100/103) or CDNA 4 "
        "(h100-sxm is Hopper (SM90))");
  CHECK(space.refused.begin()->second == 8);
  int fp8 = 0;
  for (const PlanLayout& l : space.layouts) fp8 += l.precision == "fp8-tensorwise";
  CHECK(fp8 == 8);
  CheckAgainstBruteForce(text);
  // More choices never give a worse answer: BF16 alone against BF16 + FP8.
  std::string bf16 = TinyJob(space_with("[bf16]"));
  bf16.replace(bf16.find("a100-sxm4-80gb"), 14, "h100-sxm");
  Result<PlanResult> one = RunPlan(bf16, "job.yaml", PlanOptions{});
  Result<PlanResult> two = RunPlan(text, "job.yaml", PlanOptions{});
  REQUIRE(one.ok());
  REQUIRE(two.ok());
  REQUIRE(one->found);
  REQUIRE(two->found);
  CHECK(two->top.front().best->makespan <= one->top.front().best->makespan);
  // On A100s FP8 is refused everywhere: the answer is BF16's.
  const PlanSpace a100 = SpaceOf(TinyJob(space_with("[fp8-tensorwise]")));
  CHECK(a100.layouts.empty());
  CHECK(a100.refused.at("fp8-tensorwise needs FP8 tensor cores (SM89 or later) (a100-sxm4-80gb "
                        "is Ampere (SM80))") == 8);
}

TEST_CASE("plan: megatron refuses the schedules it does not run, and p < 2 interleaving",
          "[plan]") {
  const std::string text = TinyJob(R"(plan:
  gpus: 8
  tensor_parallel: [1]
  context_parallel: [1]
  pipeline_parallel: [1, 2]
  micro_batch_size: [1]
  schedules: [1f1b, interleaved, zb-v]
  virtual_stages: [2]
  target: megatron
  time_limit: 0s
)");
  const PlanSpace space = SpaceOf(text);
  // p in {1, 2} x (1f1b v1, interleaved v2, zb-v v2) = 6; m = 16 / (8 / p).
  CHECK(space.total == 6);
  CHECK(space.refused.at("megatron runs 1f1b and interleaved only") == 2);
  CHECK(space.refused.at("interleaving needs p >= 2") == 1);
  REQUIRE(space.layouts.size() == 3);
  CHECK(DescribeLayout(space.layouts[0]) == "t1 cp1 ep1 p1 d8 mbs1 m2 1f1b v1 search dist-opt");
  CHECK(DescribeLayout(space.layouts[1]) == "t1 cp1 ep1 p2 d4 mbs1 m4 1f1b v1 search dist-opt");
  CHECK(DescribeLayout(space.layouts[2]) ==
        "t1 cp1 ep1 p2 d4 mbs1 m4 interleaved v2 search dist-opt");
}

TEST_CASE("plan: the job's own layout and strategy is a candidate and never beaten by worse",
          "[plan]") {
  // The file's own layout: t 2, p 2, d 2, mbs 1, full recompute everywhere.
  const std::string own = R"(  tensor_parallel: 2
  sequence_parallel: true
  data_parallel: 2
  micro_batch_size: 1
  distributed_optimizer: true
)";
  std::string text = TinyJob(kSpace, own);
  text += "pipeline:\n  stages: 2\n  schedule: 1f1b\nstrategy:\n  recompute: {full: true}\n";
  Result<PlanResult> plan = RunPlan(text, "job.yaml", PlanOptions{});
  REQUIRE(plan.ok());
  REQUIRE(plan->yours.has_value());
  CHECK(plan->yours_layout == "t2 cp1 ep1 p2 d2 mbs1 m8 1f1b v1 search sp dist-opt");
  REQUIRE(plan->found);
  CHECK(plan->top.front().best->makespan <= plan->yours->makespan);
  // The config loaded alone simulates to the same time.
  Result<RunConfig> cfg = test::Parse(text);
  REQUIRE(cfg.ok());
  Result<SearchProblem> pr = BuildSearchProblem(*cfg);
  REQUIRE(pr.ok());
  Result<Candidate> c = Evaluate(*pr, 0, cfg->strategy);
  REQUIRE(c.ok());
  CHECK(c->makespan == plan->yours->makespan);
}

TEST_CASE("plan: bad input is refused with the file, line and key", "[plan]") {
  using test::Cli;
  auto run_text = [](const std::string& text) {
    Result<PlanResult> r = RunPlan(text, "job.yaml", PlanOptions{});
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(run_text(TinyJob("plan:\n  tensor_parallel: [1]\n")) ==
        "job.yaml:18: plan.gpus: must be given (the number of GPUs, t x cp x p x d); got "
        "nothing");
  CHECK(run_text(TinyJob("plan:\n  gpus: 8\n  recompute: [search, some]\n")) ==
        "job.yaml:19: plan.recompute[1]: must be one of search, none, selective, full "
        "(search: per layer; a mode: on every layer that offers it); got some");
  CHECK(run_text(TinyJob("plan:\n  gpus: 8\n  pipeline_parallel: [2, 2]\n")) ==
        "job.yaml:19: plan.pipeline_parallel[1]: must list each value once; got 2 again");
  CHECK(run_text(TinyJob("plan:\n  gpus: 8\n  schedules: [1f1b, nope]\n")) ==
        "job.yaml:19: plan.schedules[1]: must be one of gpipe, 1f1b, interleaved, looped-bfs, "
        "interleaved-zero-bubble, zbv-zero-bubble, dualpipev, zb-1p, zb-2p, zb-v; got nope");
  CHECK(run_text(TinyJob("plan:\n  gpus: 8\n  precision: [bf16, fp6]\n")) ==
        "job.yaml:19: plan.precision[1]: must be one of bf16, fp8-delayed, fp8-tensorwise, "
        "fp8-blockwise, mxfp8, nvfp4; got fp6");
  CHECK(run_text(TinyJob("plan:\n  gpus: 8\n  precision: [mxfp8, mxfp8]\n")) ==
        "job.yaml:19: plan.precision[1]: must list each precision once; got mxfp8 again");
  CHECK(run_text(TinyJob("")) ==
        "job.yaml: plan: must be given (a map with gpus and the lists to search); got nothing");
  std::string no_gbs = TinyJob(kSpace);
  no_gbs.replace(no_gbs.find("  global_batch_size: 16\n"), 24, "");
  CHECK(run_text(no_gbs) ==
        "job.yaml:10: training.global_batch_size: must be given for a plan (m = "
        "global_batch_size / (d x micro_batch_size) at each layout); got nothing");
}

TEST_CASE("plan: --emit megatron writes the best layout, read back by the Megatron reader",
          "[plan]") {
  const std::string path = "plan_emit_job.yaml";
  {
    std::ofstream f(path);
    f << TinyJob(kSpace);
  }
  const test::CliRun r = test::Cli({"plan", "--config", path, "--format", "json", "--emit",
                                    "megatron,mindformers", "--quiet"});
  std::remove(path.c_str());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppb.plan/1");
  const auto& best = j["best"];
  const std::string text = j["emit"]["megatron"]["text"];
  CHECK(text.find("--tensor-model-parallel-size " +
                  std::to_string(best["tensor_parallel"].get<int>())) != std::string::npos);
  CHECK(text.find("--micro-batch-size " + std::to_string(best["micro_batch_size"].get<int>())) !=
        std::string::npos);
  CHECK(text.find("--global-batch-size 16") != std::string::npos);
  // The layers the reader takes: the model of the best layout.
  Result<RunConfig> probe =
      ParseConfigYaml(ProbeDocument(TinyJob(kSpace)), "job.yaml", {});
  REQUIRE(probe.ok());
  Result<EmittedPlan> back = ParseMegatronArgs(text, probe->layers);
  REQUIRE(back.ok());
  CHECK(back->p == best["pipeline_parallel"].get<int>());
  CHECK(back->v == best["virtual_stages"].get<int>());
  CHECK(back->strategy.layers_per_stage == best["layout"].get<std::vector<int>>());
  // torchtitan's and MindFormers' forms carry every dimension too;
  // torchtitan's data parallelism is FSDP2, so its plan simulates it
  // (training.fsdp: torch); the ZeRO-1 plan's torchtitan form is refused.
  const int d = best["data_parallel"].get<int>();
  {
    std::ofstream f(path);
    f << TinyJob(kSpace);
  }
  const test::CliRun zero1 = test::Cli({"plan", "--config", path, "--format", "json", "--emit",
                                        "torchtitan", "--quiet"});
  CHECK(zero1.status == 2);
  CHECK(zero1.err.find("cannot express the distributed optimizer (ZeRO-1)") != std::string::npos);
  {
    std::ofstream f(path);
    f << TinyJob(kSpace, "  fsdp: torch\n");
  }
  const test::CliRun fsdp = test::Cli({"plan", "--config", path, "--format", "json", "--emit",
                                       "torchtitan", "--quiet"});
  std::remove(path.c_str());
  INFO(fsdp.err);
  REQUIRE(fsdp.status == 0);
  const nlohmann::json jt = nlohmann::json::parse(fsdp.out);
  CHECK(jt["best"]["data_parallel_sharding"] == "optim_grads_params");
  const std::string tt = jt["emit"]["torchtitan"]["text"];
  const int dt = jt["best"]["data_parallel"].get<int>();
  CHECK(tt.find("config.parallelism.data_parallel_shard_degree = " + std::to_string(dt)) !=
        std::string::npos);
  CHECK(tt.find("config.parallelism.data_parallel_replicate_degree = 1\n") != std::string::npos);
  CHECK(tt.find("config.parallelism.tensor_parallel_degree = " +
                std::to_string(jt["best"]["tensor_parallel"].get<int>())) != std::string::npos);
  CHECK(tt.find("config.training.num_tokens_per_train_step = 32768") != std::string::npos);
  Result<EmittedPlan> tt_back = ParseTorchtitan(Framework::Torchtitan, tt, probe->layers);
  REQUIRE(tt_back.ok());
  CHECK(tt_back->strategy.layers_per_stage == jt["best"]["layout"].get<std::vector<int>>());
  const std::string mf = j["emit"]["mindformers"]["text"];
  CHECK(mf.find("  data_parallel: " + std::to_string(d) + "\n") != std::string::npos);
  CHECK(mf.find("  enable_parallel_optimizer: True\n") != std::string::npos);
  for (const char* key : {"tensor_parallel", "context_parallel", "expert_parallel",
                          "pipeline_parallel", "data_parallel", "micro_batch_size",
                          "microbatches", "schedule", "virtual_stages", "layout", "recompute",
                          "iteration_time_ns", "tokens_per_s_per_gpu", "mfu",
                          "max_peak_memory_bytes", "fits"}) {
    CHECK(best.contains(key));
  }
  for (const char* key : {"total", "refused", "pruned_by_memory", "pruned_by_bound", "searched"}) {
    CHECK(j["candidates"].contains(key));
  }
  CHECK(j["proved_optimal"] == true);
  CHECK(j["gap"] == 0.0);
}

TEST_CASE("plan: tie groups show different answers, the simplest first, all refused says the rule",
          "[plan]") {
  // With uniform recompute choices beside the search, a layout whose
  // searched best recomputes nothing ties with its "none" twin.
  const std::string space = kSpace + "  recompute: [search, none, full]\n";
  Result<PlanResult> plan = RunPlan(TinyJob(space), "job.yaml", PlanOptions{});
  REQUIRE(plan.ok());
  REQUIRE(plan->top.size() >= 2);
  int ties = 0;
  for (size_t i = 0; i < plan->top.size(); ++i) {
    const PlanEntry& e = plan->top[i];
    // Every row is another step: the ties sit inside their group.
    if (i > 0) CHECK(e.best->makespan > plan->top[i - 1].best->makespan);
    for (const PlanLayout& t : e.ties) {
      ++ties;
      CHECK_FALSE(PlanTiePreference(t, e.layout));  // the lead is the simplest
    }
    // The depth mark says how far the row was searched.
    if (!e.searched) CHECK(PlanDepthMark(e).rfind("first tries only: pruned at its bound", 0) == 0);
    if (e.searched && e.closed) CHECK(PlanDepthMark(e).empty());
  }
  CHECK(ties > 0);  // this space has layouts that simulate to the same step
  // The preference: fewer model-parallel ranks, then fewer virtual stages,
  // then the smaller micro-batch.
  PlanLayout a, b;
  a.cp = 2;
  a.mbs = 1;
  b.cp = 4;
  b.mbs = 2;
  CHECK(PlanTiePreference(a, b));
  CHECK_FALSE(PlanTiePreference(b, a));
  // A space the rules refuse whole: the rule, not memory, is named.
  std::string all_refused = TinyJob(kSpace);
  all_refused.replace(all_refused.find("gpus: 8"), 7, "gpus: 7");
  Result<PlanResult> none = RunPlan(all_refused, "job.yaml", PlanOptions{});
  REQUIRE(none.ok());
  CHECK_FALSE(none->found);
  const std::string text = FormatPlanText(*none);
  std::int64_t refused = 0;
  for (const auto& [why, n] : none->refused) refused += n;
  CHECK(refused == none->total);
  INFO(text);
  CHECK(text.find("no layout can run: the rules refuse all " + std::to_string(refused) +
                  " (most: ") != std::string::npos);
  CHECK(text.find("fits") == std::string::npos);
}

}  // namespace
}  // namespace ppb
