// The plan's room used as a library, with no job file and no YAML
// (search/plan/): layouts given as search problems built in memory, the
// bounds that prune them (plan_bounds.h) checked against brute force, and
// the branch-and-bound over them (layout_search.h) proving the best of
// every layout's brute-force optimum, the same on any number of threads.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "brute_force.h"
#include "random_instances.h"
#include "search/plan/layout_search.h"
#include "search/plan/plan_bounds.h"
#include "search/plan/plan_layout.h"
#include "search/plan/plan_space.h"

namespace ppb {
namespace {

using namespace brute;  // NOLINT: the tests' enumerator

// One "space": random problems, each standing for a layout (its pipeline
// size p, its micro-batches m), with capacities that sometimes leave a
// layout nothing that fits; and each problem's brute-force optimum.
struct Space {
  std::vector<SearchProblem> problems;
  std::vector<std::optional<Objective>> optimum;  // nullopt: nothing fits
};

Space RandomSpace(std::uint64_t seed, int layouts) {
  std::mt19937_64 rng(seed);
  Space s;
  InstanceOptions io;
  for (int k = 0; k < layouts; ++k) {
    SearchProblem pr = RandomProblem(rng, io);
    const std::vector<Point> points = Enumerate(pr);
    // A third of the layouts get a capacity under their least need.
    const Bytes least = MinUniformCapacity(points);
    if (Chance(rng, 0.33)) {
      SetCapacities(pr, std::vector<Bytes>(static_cast<size_t>(pr.p), least - 1));
    } else {
      SetTightCapacity(rng, pr, points, 0.8);
    }
    s.optimum.push_back(Optimum(points, Capacities(pr)));
    s.problems.push_back(std::move(pr));
  }
  return s;
}

// The layouts of `s` loaded as `ppb-sim plan` loads them (memory floor,
// cheap bound, order of bound), searched on `threads` threads.
PlanSearch RunPlanOver(const Space& s, int threads, std::int64_t* pruned_at_load) {
  PlanSearch plan;
  plan.threads = threads;
  plan.n_layouts = static_cast<int>(s.problems.size());
  for (size_t k = 0; k < s.problems.size(); ++k) {
    auto pr = std::make_shared<const SearchProblem>(s.problems[k]);
    PlanWork w;
    w.id = k;
    w.entry.layout.p = pr->p;
    w.entry.layout.m = pr->m;
    w.entry.layout.mbs = static_cast<int>(k) + 1;  // distinct layouts
    w.entry.problem = pr;
    w.options.min_capacity = false;
    w.options.top_k = 1;
    w.options.threads = 1;
    if (!PlanFloorFits(*pr)) {
      ++plan.pruned_at_load;
      ++plan.done;
      continue;
    }
    w.entry.bound = PlanCheapBound(*pr);
    plan.work.push_back(std::move(w));
  }
  std::stable_sort(plan.work.begin(), plan.work.end(), [](const PlanWork& a, const PlanWork& b) {
    return a.entry.bound < b.entry.bound;
  });
  FirstAnswers(plan);
  Explore(plan);
  *pruned_at_load = plan.pruned_at_load;
  return plan;
}

TEST_CASE("plan room: the floor and the cheap bound hold against brute force", "[plan]") {
  int pruned = 0, bounded = 0;
  for (std::uint64_t seed : Seeds(4601, 8)) {
    const Space s = RandomSpace(seed, 4);
    for (size_t k = 0; k < s.problems.size(); ++k) {
      INFO("seed " << seed << " layout " << k << "\n" << Describe(s.problems[k]));
      if (!PlanFloorFits(s.problems[k])) {
        ++pruned;
        CHECK_FALSE(s.optimum[k].has_value());  // the floor prunes only what cannot fit
        continue;
      }
      if (s.optimum[k]) {
        ++bounded;
        CHECK(PlanCheapBound(s.problems[k]) <= std::get<0>(*s.optimum[k]));
        CHECK(PlanCheapBound(s.problems[k]) > 0);
      }
    }
  }
  CHECK(bounded >= 8);  // the instances exercise both sides
}

TEST_CASE("plan room: the branch-and-bound proves the best layout's brute-force optimum",
          "[plan]") {
  int with_answer = 0, without = 0, layouts_without = 0;
  for (std::uint64_t seed : Seeds(4701, 10)) {
    const Space s = RandomSpace(seed, 5);
    std::optional<Nanos> best;
    for (const auto& o : s.optimum) {
      layouts_without += !o;
      if (o && (!best || std::get<0>(*o) < *best)) best = std::get<0>(*o);
    }
    std::int64_t pruned_at_load = 0;
    const PlanSearch plan = RunPlanOver(s, 1, &pruned_at_load);
    const PlanProof proof = Prove(plan, 0);
    INFO("seed " << seed);
    REQUIRE(proof.found == best.has_value());
    CHECK(proof.proved_optimal == best.has_value());
    if (!best) {
      ++without;
      CHECK(proof.stop_reason == "nothing fits");
      continue;
    }
    ++with_answer;
    CHECK(proof.stop_reason == "proved optimal");
    CHECK(plan.incumbent == *best);
    CHECK(proof.lower_bound == *best);
    CHECK(proof.gap == 0.0);
    CHECK(plan.first_answer_s >= 0);
    CHECK(plan.incumbents.back().second == *best);
    // Every layout is settled, and each layout's own best is no better
    // than its brute-force optimum; the winner's is that optimum.
    std::int64_t settled = pruned_at_load;
    for (const PlanWork& w : plan.work) {
      settled += w.entry.closed || w.entry.bound >= plan.incumbent;
      const std::optional<Objective>& o = s.optimum[w.id];
      if (w.entry.best) {
        REQUIRE(o.has_value());
        CHECK(w.entry.best->makespan >= std::get<0>(*o));
        CHECK(w.entry.best->feasible);
      }
      if (w.entry.closed && w.outcome == "searched" && o && std::get<0>(*o) == *best) {
        REQUIRE(w.entry.best.has_value());
        CHECK(w.entry.best->makespan == *best);
      }
    }
    CHECK(settled == static_cast<std::int64_t>(s.problems.size()));
    CHECK(proof.searched + proof.pruned_by_memory + proof.pruned_by_bound + proof.open +
              pruned_at_load <=
          static_cast<std::int64_t>(s.problems.size()));
    CHECK(proof.open == 0);
  }
  CHECK(with_answer + without == 10);
  CHECK(with_answer >= 6);
  CHECK(layouts_without >= 5);  // layouts that nothing fits are settled too
}

TEST_CASE("plan room: the answer and every layout's outcome are the same on 1 and 3 threads",
          "[plan]") {
  for (std::uint64_t seed : Seeds(4801, 4)) {
    const Space s = RandomSpace(seed, 12);
    std::int64_t a_pruned = 0, b_pruned = 0;
    const PlanSearch a = RunPlanOver(s, 1, &a_pruned);
    const PlanSearch b = RunPlanOver(s, 3, &b_pruned);
    INFO("seed " << seed);
    CHECK(a.incumbent == b.incumbent);
    // The same improvements in the same order (their times differ).
    REQUIRE(a.incumbents.size() == b.incumbents.size());
    for (size_t k = 0; k < a.incumbents.size(); ++k) {
      CHECK(a.incumbents[k].second == b.incumbents[k].second);
    }
    REQUIRE(a.work.size() == b.work.size());
    for (size_t k = 0; k < a.work.size(); ++k) {
      CHECK(a.work[k].id == b.work[k].id);
      CHECK(a.work[k].outcome == b.work[k].outcome);
      CHECK(a.work[k].entry.bound == b.work[k].entry.bound);
      CHECK(a.work[k].entry.closed == b.work[k].entry.closed);
      CHECK(a.work[k].entry.best.has_value() == b.work[k].entry.best.has_value());
      if (a.work[k].entry.best && b.work[k].entry.best) {
        CHECK(a.work[k].entry.best->makespan == b.work[k].entry.best->makespan);
      }
    }
    const PlanProof pa = Prove(a, 0), pb = Prove(b, 0);
    CHECK(pa.lower_bound == pb.lower_bound);
    CHECK(pa.stop_reason == pb.stop_reason);
  }
}

// A dense job as a value: 8 decoder layers, 8 heads over 2 KV groups,
// global batch 8, on 16 GPUs.
PlanJob SmallJob() {
  PlanJob job;
  for (int i = 0; i < 8; ++i) {
    Layer l = MakeLayer("decoder." + std::to_string(i), LayerKind::Decoder, 1000, 100);
    job.layers.push_back(l);
  }
  job.architecture.heads = 8;
  job.architecture.kv_heads = 2;
  job.training.seq = 4096;
  job.training.global_batch = 8;
  job.hardware.step_model = true;
  return job;
}

TEST_CASE("plan room: a job's space enumerated from values, each refusal counted by hand",
          "[plan]") {
  const PlanJob job = SmallJob();
  PlanSettings s;
  s.gpus = 16;
  s.tensor_parallel = {1, 2, 4};
  s.context_parallel = {1};  // (absent: every power of two up to 8)
  s.pipeline_parallel = {1, 2, 4};
  s.micro_batch_size = {1, 2};
  s.schedules = {"1f1b"};
  s.sequence_parallel = {false};
  s.distributed_optimizer = {true};
  s.recompute = {"none"};
  // t = 4 does not divide the 2 KV heads: 3 p x 2 mbs. d = 16 / (t p) and
  // m = 8 / (d mbs): (t, p, mbs) = (1, 1, 1), (1, 1, 2), (1, 2, 2), (2, 1, 2)
  // leave d x mbs above 8. The 8 others are layouts.
  PlanSpace space = EnumeratePlan(job, s, nullptr);
  CHECK(space.total == 18);
  CHECK(space.refused.at("t does not divide the KV heads") == 6);
  CHECK(space.refused.at("the global batch is not a multiple of d x micro_batch_size") == 4);
  REQUIRE(space.layouts.size() == 8);
  CHECK(PlanSpaceSize(job, s) == 18.0);
  for (const PlanLayout& l : space.layouts) {
    CHECK(l.t * l.p * l.d == 16);
    CHECK(l.m * l.d * l.mbs == 8);
    CHECK(l.t <= 2);
  }
  CHECK(DescribeLayout(space.layouts.front()) == "t1 cp1 ep1 p2 d8 mbs1 m1 1f1b v1 none dist-opt");
  // PyTorch's 1F1B needs m >= p (its schedules.py). The layouts are
  // (t, p, mbs, m) = (1, 2, 1, 1), (1, 4, 1, 2), (1, 4, 2, 1), (2, 1, 1, 1),
  // (2, 2, 1, 2), (2, 2, 2, 1), (2, 4, 1, 4), (2, 4, 2, 2): five have fewer
  // micro-batches than stages and are refused by the schedule's rule.
  PlanJob torch = job;
  torch.schedule_params.flavor = Flavor::PyTorch;
  space = EnumeratePlan(torch, s, nullptr);
  CHECK(space.refused.at("the schedule's rules (1f1b)") == 5);
  REQUIRE(space.layouts.size() == 3);
  CHECK(space.layouts[0].p == 1);
  CHECK(space.layouts[1].p == 2);
  CHECK(space.layouts[1].m == 2);
  CHECK(space.layouts[2].p == 4);
  CHECK(space.layouts[2].m == 4);
  for (const PlanLayout& l : space.layouts) CHECK(l.t == 2);
  // The job's own layout, outside the lists, is added and marked.
  PlanLayout own = space.layouts[1];
  own.recompute = "full";
  space = EnumeratePlan(torch, s, &own);
  REQUIRE(space.layouts.size() == 4);
  CHECK(space.layouts.back().yours);
  CHECK(space.total == 19);
}

TEST_CASE("plan room: layouts described as keys and ordered by simplicity", "[plan]") {
  PlanLayout l;
  l.t = 8;
  l.p = 4;
  l.d = 2;
  l.m = 16;
  l.schedule = "interleaved";
  l.v = 2;
  l.sp = true;
  l.dist_opt = true;
  CHECK(DescribeLayout(l) == "t8 cp1 ep1 p4 d2 mbs1 m16 interleaved v2 search sp dist-opt");
  l.sharding = "optim_grads";
  l.precision = "mxfp8";
  l.offload = "{optimizer: 1}";
  CHECK(DescribeLayout(l) ==
        "t8 cp1 ep1 p4 d2 mbs1 m16 interleaved v2 search sp optim_grads mxfp8 offload "
        "{optimizer: 1}");
  PlanLayout u = l;
  u.recompute = "full";
  u.yours = true;
  CHECK(FreeRecomputeKey(u) == DescribeLayout(l));
  CHECK_FALSE(LayoutRecomputeSetting(l, DeployTarget::Any).has_value());
  const std::optional<RecomputeSetting> none =
      LayoutRecomputeSetting([] { PlanLayout x; x.recompute = "none"; return x; }(),
                             DeployTarget::Megatron);
  REQUIRE(none.has_value());
  CHECK(none->mode.empty());
  CHECK(none->target == DeployTarget::Megatron);
  // Fewer model-parallel ranks first (t cp ep p: 32 against 16), then v.
  PlanLayout small = l;
  small.t = 4;
  CHECK(PlanTiePreference(small, l));
  CHECK_FALSE(PlanTiePreference(l, small));
  PlanLayout flat = l;
  flat.v = 1;
  CHECK(PlanTiePreference(flat, l));
  CHECK_FALSE(TargetRunsSchedule(DeployTarget::Megatron, "zb-v"));
  CHECK(TargetRunsSchedule(DeployTarget::Megatron, "interleaved"));
  CHECK(TargetRunsSchedule(DeployTarget::Torchtitan, "zb-v"));
}

}  // namespace
}  // namespace ppb
