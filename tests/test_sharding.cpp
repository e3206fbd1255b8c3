// Sharded data parallelism and offload (core/sharding.h, core/offload.h,
// core/dp_costs.h): the state bytes of ZeRO-1/2/3, torch FSDP2 and HSDP
// against their closed forms (train-2026.md section 3), one unit's
// all-gather and reduce-scatter with and without prefetch, an offload whose
// host link is the bottleneck, the step's tail of torch FSDP2 under PP and
// of Megatron-FSDP, the config's rules and what the emitters write.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/layout_document.h"
#include "apps/output/emit.h"
#include "core/collective.h"
#include "core/dp_costs.h"
#include "core/engine.h"
#include "core/rank_layout.h"
#include "tests/app_helpers.h"
#include "tests/cost_models.h"

namespace ppb {
namespace {

using test::StepHardware;

Training Job(int dp, int tp = 1, int pp = 1) {
  Training t;
  t.seq = 4096;
  t.micro_batch = 1;
  t.dp = dp;
  t.tp = tp;
  t.pp = pp;
  t.sp = tp > 1;
  t.flash_attention = true;
  return t;
}

Training Sharded(Training t, DpSharding s, Fsdp f) {
  t.sharding.strategy = s;
  t.sharding.fsdp = f;
  t.distributed_optimizer = s >= DpSharding::Optim && f != Fsdp::Torch;
  return t;
}

TEST_CASE("sharded state: bytes per parameter of each strategy", "[sharding]") {
  // BF16 weights 2, FP32 gradients 4, Adam with an FP32 master 12, over 8.
  Sharding s;
  const int n = 8;
  CHECK(ShardedBytesPerParam(s, 1, 2, 4, 12, n) == 18);  // DDP
  s.strategy = DpSharding::Optim;
  CHECK(ShardedBytesPerParam(s, 1, 2, 4, 12, n) == 2 + 4 + 12.0 / 8);  // ZeRO-1
  s.strategy = DpSharding::OptimGrads;
  s.fsdp = Fsdp::Megatron;
  CHECK(ShardedBytesPerParam(s, 1, 2, 4, 12, n) == 2 + 16.0 / 8);  // ZeRO-2
  s.strategy = DpSharding::OptimGradsParams;
  CHECK(ShardedBytesPerParam(s, 1, 2, 4, 12, n) == 18.0 / 8);  // ZeRO-3
  // torch FSDP2: FP32 shards of the parameters (the master), gradients
  // and Adam's moments: 16 / n; with PP it keeps the stage's unsharded BF16
  // parameters and FP32 gradients (2 + 4 per parameter).
  s.fsdp = Fsdp::Torch;
  CHECK(ShardedBytesPerParam(s, 1, 2, 4, 12, n) == 16.0 / 8);
  CHECK(ShardedBytesPerParam(s, 2, 2, 4, 12, n) == 16.0 / 8 + 2 + 4);
  // reshard_after_forward never without PP: the unsharded BF16 parameters
  // stay from the forward to the backward.
  s.reshard = Reshard::Never;
  CHECK(ShardedBytesPerParam(s, 1, 2, 4, 12, n) == 16.0 / 8 + 2);
}

TEST_CASE("sharded state: a decoder layer's static bytes, ZeRO-1/2/3, FSDP2 and HSDP",
          "[sharding]") {
  const Architecture a = test::Llama3_8B();
  const Hardware h = StepHardware("h100-sxm");
  const DerivedLayer base = DeriveLayers(a, Job(16), h)[1];
  const double params = static_cast<double>(base.params.total());
  auto bytes = [&](const Training& t) {
    return static_cast<double>(DeriveLayers(a, t, h)[1].layer.static_memory);
  };
  CHECK(bytes(Job(16)) == Approx(params * 18).epsilon(1e-9));
  CHECK(bytes(Sharded(Job(16), DpSharding::Optim, Fsdp::None)) ==
        Approx(params * (6 + 12.0 / 16)).epsilon(1e-9));
  CHECK(bytes(Sharded(Job(16), DpSharding::OptimGrads, Fsdp::Megatron)) ==
        Approx(params * (2 + 16.0 / 16)).epsilon(1e-9));
  CHECK(bytes(Sharded(Job(16), DpSharding::OptimGradsParams, Fsdp::Megatron)) ==
        Approx(params * 18.0 / 16).epsilon(1e-9));
  CHECK(bytes(Sharded(Job(16), DpSharding::OptimGradsParams, Fsdp::Torch)) ==
        Approx(params * 16.0 / 16).epsilon(1e-9));
  // HSDP: 4 replicas of a shard group of 4; tensor parallel 2 halves it.
  Training hsdp = Sharded(Job(16, 2), DpSharding::OptimGradsParams, Fsdp::Torch);
  hsdp.sharding.shard = 4;
  CHECK(ShardsOf(hsdp).dense == 4);
  CHECK(ShardsOf(hsdp).replicate == 4);
  CHECK(bytes(hsdp) == Approx(params / 2 * 16.0 / 4).epsilon(1e-9));
  // Optimizer offload: Megatron moves half of the optimizer state.
  Training off = Sharded(Job(16), DpSharding::Optim, Fsdp::None);
  off.offload.optimizer = 0.5;
  CHECK(bytes(off) == Approx(params * (6 + 6.0 / 16)).epsilon(1e-9));
}

TEST_CASE("FSDP unit: traffic and exposed time with and without prefetch", "[sharding]") {
  const Architecture a = test::Llama3_8B();
  const Hardware h = StepHardware("h100-sxm");
  const Training plain = Job(16);
  const DerivedLayer base = DeriveLayers(a, plain, h)[1];
  // One decoder layer's BF16 parameters gathered over its 16 ranks (two
  // nodes), and its FP32 (torch) gradients reduce-scattered.
  Training zero3 = Sharded(plain, DpSharding::OptimGradsParams, Fsdp::Torch);
  const JobGroups g = PlaceJob(zero3, h.gpu);
  REQUIRE(g.dp_shard.size == 16);
  const double n = static_cast<double>(base.params.total());
  const Nanos ag = CollectiveTime(Collective::AllGather, 16, static_cast<Bytes>(std::llround(n * 2)),
                                  g.dp_shard.link, h.gpu.network);
  const Nanos rs = CollectiveTime(Collective::ReduceScatter, 16,
                                  static_cast<Bytes>(std::llround(n * 4)), g.dp_shard.link,
                                  h.gpu.network);
  REQUIRE(ag > 0);
  const DerivedLayer torch = DeriveLayers(a, zero3, h)[1];
  // Prefetched: the next unit's collectives run beside this unit's compute.
  CHECK(torch.layer.forward - base.layer.forward ==
        std::max<Nanos>(0, ag - base.layer.forward));
  CHECK(torch.layer.backward() - base.layer.backward() ==
        std::max<Nanos>(0, ag + rs - base.layer.backward()));
  // Megatron-FSDP without --overlap-param-gather / --overlap-grad-reduce:
  // every all-gather and reduce-scatter on the compute stream (its
  // gradients reduce in the gradient dtype, FP32 here).
  const Training mfsdp = Sharded(plain, DpSharding::OptimGradsParams, Fsdp::Megatron);
  const DerivedLayer bare = DeriveLayers(a, mfsdp, h)[1];
  CHECK(bare.layer.forward - base.layer.forward == ag);
  CHECK(bare.layer.backward() - base.layer.backward() == ag + rs);
  CHECK(bare.layer.comm_forward - base.layer.comm_forward == ag);
  // Its working set: two gathered units (prefetch) and the unit's
  // unsharded gradient.
  CHECK(bare.layer.workspace - base.layer.workspace ==
        std::llround(2 * n * 2) + std::llround(n * 4));
  // ZeRO-2 (Megatron-FSDP optim_grads): no parameter gather in the
  // micro-batches, a reduce-scatter after every backward.
  const DerivedLayer z2 =
      DeriveLayers(a, Sharded(plain, DpSharding::OptimGrads, Fsdp::Megatron), h)[1];
  CHECK(z2.layer.forward == base.layer.forward);
  CHECK(z2.layer.backward() - base.layer.backward() == rs);
  // torch FSDP2 under PP: no collective in the micro-batches, one gather
  // per step.
  const DerivedLayer pp =
      DeriveLayers(a, Sharded(Job(16, 1, 2), DpSharding::OptimGradsParams, Fsdp::Torch), h)[1];
  const DerivedLayer pp_base = DeriveLayers(a, Job(16, 1, 2), h)[1];
  CHECK(pp.layer.forward == pp_base.layer.forward);
  CHECK(pp.layer.backward() == pp_base.layer.backward());
  CHECK(pp.layer.step_gather == ag);
}

TEST_CASE("offload: a layer whose host link is the bottleneck", "[offload]") {
  const Architecture a = test::Llama3_8B();
  Hardware h = StepHardware("h100-sxm");
  Training t = Job(8);
  const DerivedLayer base = DeriveLayers(a, t, h)[1];
  t.offload.modules = {OffloadModule::QkvLinear, OffloadModule::MlpNorm};
  // The two modules' saved inputs: 2 x (2 B x 4,096 tokens x 4,096).
  const double bytes = 2.0 * 2 * 4096 * 4096;
  CHECK(OffloadedActivationBytes(a, t, false) == bytes);
  // A link of 1 GB/s: 67.1 ms each way, far beyond the layer's compute.
  h.gpu.host_bytes_per_s = 1e9;
  const DerivedLayer slow = DeriveLayers(a, t, h)[1];
  const Nanos copy = h.gpu.host_latency + std::llround(bytes / 1e9 * 1e9);
  CHECK(slow.offloaded == static_cast<Bytes>(bytes));
  CHECK(slow.layer.activation == base.layer.activation - static_cast<Bytes>(bytes));
  CHECK(slow.layer.forward - base.layer.forward == copy - base.layer.forward);
  CHECK(slow.layer.backward() - base.layer.backward() == copy - base.layer.backward());
  // The preset's PCIe 5.0 (64 GB/s): 1.05 ms, hidden behind the layer.
  h = StepHardware("h100-sxm");
  const DerivedLayer fast = DeriveLayers(a, t, h)[1];
  REQUIRE(CopyTime(bytes, h.gpu.host_bytes_per_s) < base.layer.forward);
  CHECK(fast.layer.forward == base.layer.forward);
  CHECK(fast.layer.activation == base.layer.activation - static_cast<Bytes>(bytes));
  // Half of the groups: half of the bytes.
  t.offload.fraction = 0.5;
  CHECK(DeriveLayers(a, t, h)[1].offloaded == static_cast<Bytes>(bytes / 2));
}

TEST_CASE("offload: the optimizer's host share, by hand", "[offload]") {
  Hardware h = StepHardware("h100-sxm");
  h.gpu.host_bytes_per_s = 50e9;
  h.gpu.compute.host_optimizer = 1e9;
  Training t = Job(8);
  t.offload.optimizer = 0.5;
  // 1e9 local parameters: the GPU's half at 30 B each over HBM, the host's
  // half at 1e9 params/s (0.5 s), FP32 gradients D2H (2 GB: 40 ms) and BF16
  // parameters H2D (1 GB: 20 ms).
  const Nanos gpu = std::llround(0.5e9 * 30 / (h.gpu.hbm_bytes_per_s * h.gpu.compute.hbm) * 1e9);
  CHECK(OptimizerStepTime(1e9, t, h) == gpu + 500'000'000 + 40'000'000 + 20'000'000);
  t.offload.overlap_optimizer_copies = true;
  CHECK(OptimizerStepTime(1e9, t, h) == gpu + 500'000'000);
}

const char* kJob = R"(model:
  name: tiny
  architecture:
    hidden_size: 2048
    num_layers: 8
    num_attention_heads: 16
    ffn_hidden_size: 8192
    vocab_size: 32000
training:
  seq_length: 4096
  micro_batch_size: 1
  global_batch_size: 64
  data_parallel: 16
)";

std::string Job(const std::string& training, const std::string& pipeline = "") {
  return std::string(kJob) + training + "hardware:\n  gpu: h100-sxm\npipeline:\n" +
         (pipeline.empty() ? "  stages: 1\n  schedule: 1f1b\n" : pipeline);
}

TEST_CASE("step tail: torch FSDP2 under PP reduces once, Megatron-FSDP in the backward",
          "[sharding]") {
  // torch FSDP2 with PP: one FP32 reduce-scatter per stage after the last
  // micro-batch (grad sync in the tail), one all-gather per step.
  Result<RunConfig> torch =
      test::Parse(Job("  fsdp: torch\n", "  stages: 2\n  schedule: 1f1b\n"));
  REQUIRE(torch.ok());
  const StepTail& tail = torch->shape.tail;
  CHECK(tail.distributed_optimizer);  // reduce-scatter
  CHECK(!tail.sync_in_pipeline);
  CHECK(tail.params_sharded);
  CHECK(tail.dp == 16);
  Result<PreparedRun> run = Prepare(*torch);
  REQUIRE(run.ok());
  Engine engine;
  const SimResult r = engine.Run(run->spec, run->program);
  // Each rank's one reduce-scatter of its stage's FP32 gradients over the
  // 16 shards (no buckets without overlap_grad_reduce).
  for (int d = 0; d < 2; ++d) {
    const StageCost& c = run->spec.stages[d];
    CHECK(r.steps[d].grad_sync ==
          CollectiveTime(Collective::ReduceScatter, 16, c.grad_bytes, tail.dp_link,
                         tail.efficiency));
    CHECK(c.step_gather > 0);
  }
  // Its memory: the stage's unsharded BF16 parameters and FP32 gradients
  // besides the FP32 shards (6 + 16/16 per parameter of the stage).
  for (const DerivedLayer& d : torch->derived) {
    if (d.layer.kind != LayerKind::Decoder) continue;
    CHECK(static_cast<double>(d.layer.static_memory) ==
          Approx(static_cast<double>(d.params.total()) * (6 + 16.0 / 16)).epsilon(1e-9));
  }
  // Megatron-FSDP ZeRO-3: gradients reduce-scattered per micro-batch, no
  // sync and no gather after the step.
  Result<RunConfig> meg = test::Parse(Job("  data_parallel_sharding: optim_grads_params\n"));
  REQUIRE(meg.ok());
  CHECK(meg->training.sharding.fsdp == Fsdp::Megatron);
  CHECK(meg->training.distributed_optimizer);
  CHECK(meg->shape.tail.sync_in_pipeline);
  Result<PreparedRun> mrun = Prepare(*meg);
  REQUIRE(mrun.ok());
  const SimResult mr = engine.Run(mrun->spec, mrun->program);
  for (const RankStep& s : mr.steps) {
    CHECK(s.grad_sync == 0);
    CHECK(s.param_gather == 0);
  }
}

TEST_CASE("sharding and offload config errors at their line", "[sharding][config]") {
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {Job("  fsdp: deepspeed\n"),
       "run.yaml:14: training.fsdp: must be one of torch, megatron; got deepspeed"},
      {Job("  fsdp: torch\n  data_parallel_sharding: optim\n"),
       "run.yaml:15: training.data_parallel_sharding: must be optim_grads_params with "
       "training.fsdp: torch (FSDP2 shards the parameters; its ZeRO-2 is "
       "training.reshard_after_forward: never); got optim"},
      {Job("  distributed_optimizer: false\n  data_parallel_sharding: optim\n"),
       "run.yaml:14: training.distributed_optimizer: must agree with "
       "training.data_parallel_sharding: optim shards the optimizer state (Megatron-FSDP v1 "
       "runs the distributed optimizer); got false"},
      {Job("  fsdp: torch\n  data_parallel_shard: 3\n"),
       "run.yaml:15: training.data_parallel_shard: must divide training.data_parallel (16): "
       "the replicas are data_parallel / data_parallel_shard; got 3"},
      {Job("  reshard_after_forward: never\n"),
       "run.yaml:14: training.reshard_after_forward: must be given with training.fsdp: torch "
       "(torchtitan's fsdp_reshard_after_forward); got it without"},
      {Job("  offload: {activations: {modules: [attn_proj]}}\n"),
       "run.yaml:14: training.offload.activations.modules: must name core_attn with attn_proj "
       "(Megatron: the input of attn_proj is the output of core_attn, which core_attn's "
       "backward needs); got attn_proj alone"},
      {Job("  offload: {activations: {modules: [mlp]}}\n"),
       "run.yaml:14: training.offload.activations.modules[0]: must be one of attn_norm, "
       "qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act, fused_group_mlp "
       "(Megatron's --offload-modules); got mlp"},
      {Job("  offload: {layers: 2}\n", "  stages: 2\n  schedule: 1f1b\n"),
       "run.yaml:14: training.offload.layers: must be 0 with pipeline parallelism (Megatron: "
       "\"no support for Pipeline parallelism with CPU offloading\"); got 2 with 2 stages"},
      {Job("  offload: {optimizer: 0.5}\n"),
       "run.yaml:14: training.offload.optimizer: must be 0 without the distributed optimizer "
       "(Megatron's --optimizer-cpu-offload needs --use-precision-aware-optimizer, which needs "
       "--use-distributed-optimizer); got a share without it"},
      {Job("  fsdp: torch\n  offload: {optimizer: 0.5}\n"),
       "run.yaml:15: training.offload.optimizer: must be 0 or 1 with training.fsdp: torch "
       "(torchtitan's enable_cpu_offload moves all of the sharded state); got 0.5"},
      {Job("  distributed_optimizer: true\n  offload: {optimizer: 1.5}\n"),
       "run.yaml:15: training.offload.optimizer: must be a number in [0, 1] (the share of the "
       "optimizer state on the host: Megatron's --optimizer-offload-fraction); got 1.5"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(test::ParseError(c.text) == c.message);
  }
}

TEST_CASE("emit: Megatron's sharding and offload flags, torchtitan's HSDP degrees",
          "[sharding][emit]") {
  Result<RunConfig> meg = test::Parse(
      Job("  data_parallel_sharding: optim_grads\n  overlap_grad_reduce: true\n"
          "  offload: {activations: {modules: [core_attn, attn_proj], fraction: 0.5}, "
          "optimizer: 0.25}\n"));
  REQUIRE(meg.ok());
  Result<PreparedRun> run = Prepare(*meg);
  REQUIRE(run.ok());
  Result<Emission> e = Emit(Framework::Megatron, *meg, run->program);
  REQUIRE(e.ok());
  for (const char* line :
       {"--use-distributed-optimizer\n", "--use-megatron-fsdp\n",
        "--data-parallel-sharding-strategy optim_grads\n", "--ckpt-format fsdp_dtensor\n",
        "--optimizer-cpu-offload\n", "--optimizer-offload-fraction 0.25\n",
        "--use-precision-aware-optimizer\n", "--fine-grained-activation-offloading\n",
        "--offload-modules core_attn attn_proj\n", "--activation-offload-fraction 0.5\n"}) {
    INFO(line);
    CHECK(e->text.find(line) != std::string::npos);
  }
  // Megatron's own checks reject what it would reject.
  CHECK(ParseMegatronArgs("--pipeline-model-parallel-size 2\n--use-torch-fsdp2\n"
                          "--no-gradient-accumulation-fusion\n",
                          meg->layers)
            .error()
            .message == "--use-torch-fsdp2 is not supported with pipeline parallelism");
  CHECK(ParseMegatronArgs("--pipeline-model-parallel-size 1\n--optimizer-cpu-offload\n",
                          meg->layers)
            .error()
            .message.find("--use-precision-aware-optimizer") != std::string::npos);
  // torchtitan: HSDP as simulated, 4 replicas of 4.
  Result<RunConfig> tt = test::Parse(
      Job("  fsdp: torch\n  data_parallel_shard: 4\n  reshard_after_forward: never\n"));
  REQUIRE(tt.ok());
  Result<PreparedRun> ttrun = Prepare(*tt);
  REQUIRE(ttrun.ok());
  Result<Emission> te = Emit(Framework::Torchtitan, *tt, ttrun->program);
  INFO((te.ok() ? std::string() : te.error().message));
  REQUIRE(te.ok());
  CHECK(te->text.find("config.parallelism.data_parallel_shard_degree = 4\n") !=
        std::string::npos);
  CHECK(te->text.find("config.parallelism.data_parallel_replicate_degree = 4\n") !=
        std::string::npos);
  CHECK(te->text.find("config.parallelism.fsdp_reshard_after_forward = \"never\"\n") !=
        std::string::npos);
  // Megatron-FSDP is not torchtitan's: refused with why.
  Result<Emission> refused = Emit(Framework::Torchtitan, *meg, run->program);
  REQUIRE(!refused.ok());
  CHECK(refused.error().message.find("cannot express Megatron-FSDP optim_grads") !=
        std::string::npos);
}

TEST_CASE("plan: data-parallel sharding and offload as dimensions", "[sharding][plan]") {
  const std::string plan = R"(plan:
  gpus: 16
  tensor_parallel: [1]
  context_parallel: [1]
  pipeline_parallel: [1]
  micro_batch_size: [1]
  schedules: [1f1b]
  data_parallel_sharding: [optim, optim_grads_params]
  offload: [none, {optimizer: 0.5}]
)";
  const std::string text = Job("") + plan;
  Result<RunConfig> probe = ParseConfigYaml(ProbeDocument(text), "job.yaml", {});
  REQUIRE(probe.ok());
  const PlanSpace space = EnumeratePlan(PlanJobOf(*probe), *probe->plan, nullptr);
  REQUIRE(space.layouts.size() == 4);
  std::vector<std::string> seen;
  for (const PlanLayout& l : space.layouts) {
    seen.push_back(l.sharding + " / " + l.offload);
    // Each layout loads as the strategy and offload it names.
    Result<RunConfig> cfg = ParseConfigYaml(LayoutDocument(text, l), "job.yaml", {});
    REQUIRE(cfg.ok());
    CHECK(DpShardingName(cfg->training.sharding.strategy) == l.sharding);
    CHECK(cfg->training.distributed_optimizer);
    CHECK(cfg->training.sharding.fsdp ==
          (l.sharding == "optim" ? Fsdp::None : Fsdp::Megatron));
    CHECK(cfg->training.offload.optimizer == (l.offload == "none" ? 0 : 0.5));
  }
  CHECK(seen == std::vector<std::string>{"optim / none", "optim / {optimizer: 0.5}",
                                         "optim_grads_params / none",
                                         "optim_grads_params / {optimizer: 0.5}"});
  // Under torch FSDP2 only optim_grads_params loads; optim is refused with
  // the loader's reason (a plan counts it as refused).
  const std::string torch = Job("  fsdp: torch\n") + plan;
  Result<RunConfig> tprobe = ParseConfigYaml(ProbeDocument(torch), "job.yaml", {});
  REQUIRE(tprobe.ok());
  const PlanSpace tspace = EnumeratePlan(PlanJobOf(*tprobe), *tprobe->plan, nullptr);
  REQUIRE(tspace.layouts.size() == 4);
  Result<RunConfig> bad = ParseConfigYaml(LayoutDocument(torch, tspace.layouts[0]), "job.yaml", {});
  REQUIRE(!bad.ok());
  CHECK(bad.error().message.find("must be optim_grads_params with training.fsdp: torch") !=
        std::string::npos);
  // Both lists: refused at the plan's line.
  std::string both = text;
  both.replace(both.find("  data_parallel_sharding:"), 0, "  distributed_optimizer: [true]\n");
  CHECK(test::ParseError(both).find(
            "plan.data_parallel_sharding: must not be given with plan.distributed_optimizer") !=
        std::string::npos);
}

}  // namespace
}  // namespace ppb
