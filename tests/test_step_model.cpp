// The step model (issue 33): collectives in NCCL's closed forms, the rank
// layout's links, a layer's kernels at TP 1 and 8 by hand, the step's tail
// (gradient buckets, optimizer) against hand timelines, the breakdown's
// sum, the config's refusals and the global batch.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "apps/input/config.h"
#include "apps/input/step_runs.h"
#include "apps/output/emit.h"
#include "core/breakdown.h"
#include "core/collective.h"
#include "core/cost_model.h"
#include "core/engine.h"
#include "core/layer_kernels.h"
#include "core/rank_layout.h"
#include "core/step_metrics.h"
#include "core/step_tail.h"
#include "tests/app_helpers.h"
#include "tests/cost_models.h"

namespace ppb {
namespace {

// Efficiency 1 at every size: the closed forms exactly.
CollectiveEfficiency Ideal() { return CollectiveEfficiency{1.0, 0}; }

TEST_CASE("collectives follow NCCL's ring closed forms", "[step]") {
  const GroupLink link{1e11, 2000, false};  // 100 GB/s, 2 us a step
  const Bytes s = 1'000'000'000;            // 10 ms of wire time
  // all-reduce: 2(n-1) a + 2(n-1)/n S/B = 28 us + 17.5 ms.
  CHECK(CollectiveTime(Collective::AllReduce, 8, s, link, Ideal()) == 28'000 + 17'500'000);
  // reduce-scatter / all-gather / all-to-all: (n-1) a + (n-1)/n S/B.
  CHECK(CollectiveTime(Collective::ReduceScatter, 8, s, link, Ideal()) == 14'000 + 8'750'000);
  CHECK(CollectiveTime(Collective::AllGather, 8, s, link, Ideal()) == 14'000 + 8'750'000);
  CHECK(CollectiveTime(Collective::AllToAll, 4, s, link, Ideal()) == 6'000 + 7'500'000);
  CHECK(CollectiveTime(Collective::SendRecv, 2, s, link, Ideal()) == 2'000 + 10'000'000);
  // One rank: nothing to do.
  CHECK(CollectiveTime(Collective::AllReduce, 1, s, link, Ideal()) == 0);
  // Efficiency by size: 8 MiB at half size 8 MiB and 0.8 moves at 0.4 B.
  const CollectiveEfficiency eff{0.8, 8 << 20};
  CHECK(EffectiveBandwidth(link, 8 << 20, eff) == Approx(0.4e11));
  const double wire = 2.0 * 7 / 8 * (8 << 20) / 0.4e11 * 1e9;
  CHECK(CollectiveTime(Collective::AllReduce, 8, 8 << 20, link, eff) ==
        28'000 + std::llround(wire));
}

TEST_CASE("groups use NVLink inside a node and the NICs across", "[step]") {
  const Gpu& a100 = *FindGpu("a100-sxm4-80gb");
  REQUIRE(a100.gpus_per_node == 8);
  REQUIRE(a100.nvlink_bytes_per_s == 300e9);  // 600 GB/s both directions
  REQUIRE(a100.nic_bytes_per_s == 25e9);      // one 200 Gb/s HDR per GPU
  const GroupPlacement tp8 = PlaceGroup(8, 1, a100);
  CHECK_FALSE(tp8.crosses_nodes);
  CHECK(tp8.link.bytes_per_s == 300e9);
  CHECK(tp8.link.latency == a100.intra_latency);
  // TP 16 spans two nodes; NCCL's rings use all 8 NICs of each node.
  const GroupPlacement tp16 = PlaceGroup(16, 1, a100);
  CHECK(tp16.crosses_nodes);
  CHECK(tp16.per_node == 8);
  CHECK(tp16.link.bytes_per_s == 200e9);
  CHECK(tp16.link.latency == a100.inter_latency);
  // DP after TP 8: one member per node, one NIC.
  const GroupPlacement dp = PlaceGroup(24, 8, a100);
  CHECK(dp.per_node == 1);
  CHECK(dp.link.bytes_per_s == 25e9);
  // All-to-all across nodes: EP 64 with 8 per node sends 56/64 of its data
  // through its own NIC: (n - 1)/n S / B' = 56/64 S / 25 GB/s.
  const GroupPlacement ep64 = PlaceGroup(64, 1, a100);
  CHECK(ep64.per_node == 8);
  CHECK(ep64.a2a_link.bytes_per_s == Approx(25e9 * 63.0 / 56.0));
  CHECK(CollectiveTime(Collective::AllToAll, 64, 1'000'000'000, ep64.a2a_link, Ideal()) ==
        63 * ep64.a2a_link.latency + std::llround(56.0 / 64 * 1e9 / 25e9 * 1e9));
  CHECK(tp8.a2a_link.bytes_per_s == 300e9);
  // DP 4 after TP 2: ranks 0, 2, 4, 6 of one node.
  const GroupPlacement dp4 = PlaceGroup(4, 2, a100);
  CHECK_FALSE(dp4.crosses_nodes);
  CHECK(dp4.per_node == 4);
  // Pipeline neighbours t x cp x d = 4 apart: ranks 0, 4 | 8, 12.
  Training t;
  t.tp = 2;
  t.dp = 2;
  t.pp = 4;
  const std::vector<Link> links = PipelineLinks(t, a100);
  REQUIRE(links.size() == 4);
  CHECK(links[0].bandwidth == 300'000'000'000);
  CHECK(links[1].bandwidth == 25'000'000'000);
  CHECK(links[2].bandwidth == 300'000'000'000);
  CHECK(links[3].bandwidth == 25'000'000'000);
}

TEST_CASE("a layer's GEMMs at TP 1 and 8 by hand", "[step]") {
  // Llama-2-70B's shape: h 8192, 64 heads, 8 KV heads, ffn 28672.
  const Architecture a = test::Llama2_70B();
  Training t;
  t.seq = 4096;
  t.micro_batch = 1;
  t.tp = 8;
  const LayerKernels k = DecoderKernels(a, t, 0);
  REQUIRE(k.gemms.size() == 4);
  // QKV: (64/8 + 2 x 8/8) x 128 = 1280 columns per rank.
  CHECK(k.gemms[0].m == 4096);
  CHECK(k.gemms[0].n == 1280);
  CHECK(k.gemms[0].k == 8192);
  CHECK(k.gemms[1].n == 8192);  // proj back to h
  CHECK(k.gemms[1].k == 1024);
  CHECK(k.gemms[2].n == 2 * 28672 / 8);  // gate and up
  CHECK(k.gemms[3].k == 28672 / 8);
  // Every rank's GEMMs are 1/8 of the layer's matmul FLOPs.
  double flops = 0;
  for (const Gemm& g : k.gemms) flops += g.flops();
  CHECK(flops * 8 == Approx(DecoderLayerFlops(a, t, 0).matmul).epsilon(1e-12));
  // Without SP: one all-reduce of the hidden states (e b s h) after each
  // row-parallel linear, and one in the backward.
  REQUIRE(k.comms.size() == 2);
  for (const CommOp& c : k.comms) {
    CHECK(c.kind == Collective::AllReduce);
    CHECK(c.bytes == 2LL * 4096 * 8192);
    CHECK(c.forward == 1);
    CHECK(c.backward == 1);
  }
  // The priced forward is the sum of its parts on an A100 node.
  Hardware h;
  h.step_model = true;
  h.gpu = *FindGpu("a100-sxm4-80gb");
  h.peak_tflops = h.gpu.peak_tflops;
  const JobGroups groups = PlaceJob(t, h.gpu);
  const KernelTimes times = PriceKernels(k, t, h, groups);
  Nanos gemm = 0;
  for (const Gemm& g : k.gemms) gemm += GemmTime(g, h);
  const Nanos ar = CollectiveTime(Collective::AllReduce, 8, 2LL * 4096 * 8192,
                                  groups.tp.link, h.gpu.network);
  CHECK(times.comm_forward == 2 * ar);
  CHECK(times.forward == gemm + times.attention +
                             ElementwiseTime(k.elementwise_bytes, k.elementwise_kernels, h) +
                             2 * ar);
  CHECK(times.backward_weight == gemm);
  // One GEMM by hand: QKV is 2 x 4096 x 1280 x 8192 = 85.9 GFLOP; at
  // 312 TFLOP/s x 0.7 x f / (f + 312e12 x 3.2 us) it takes f / rate.
  const double f = 2.0 * 4096 * 1280 * 8192;
  const double rate = 312e12 * 0.7 * f / (f + 312e12 * 3.2e-6);
  CHECK(GemmTime(k.gemms[0], h) == std::llround(f / rate * 1e9));
  // TP 1 on the same GPU: no collective, and TP 8 is not 8 times faster
  // (the all-reduces and the element-wise kernels every rank runs whole).
  Training t1 = t;
  t1.tp = 1;
  const KernelTimes one = PriceKernels(DecoderKernels(a, t1, 0), t1, h, PlaceJob(t1, h.gpu));
  CHECK(one.comm_forward == 0);
  CHECK(times.forward * 8 > one.forward * 1.1);
}

TEST_CASE("context and expert parallelism by hand", "[step]") {
  Hardware h;
  h.step_model = true;
  h.gpu = *FindGpu("h100-sxm");
  h.peak_tflops = h.gpu.peak_tflops;
  // CP 2 (a ring over ranks t = 1 apart: NVLink): each rank holds s / 2
  // tokens and sends its K and V block (8 KV heads x 128 x 2) per step.
  const Architecture a = test::Llama2_70B();
  Training t;
  t.seq = 8192;
  t.cp = 2;
  const LayerKernels k = DecoderKernels(a, t, 0);
  CHECK(k.gemms[0].m == 4096);
  CHECK(k.cp_block_bytes == 2LL * 4096 * 8 * (128 + 128));
  const JobGroups g = PlaceJob(t, h.gpu);
  REQUIRE(g.cp.size == 2);
  const KernelTimes x = PriceKernels(k, t, h, g);
  const Nanos send = CollectiveTime(Collective::SendRecv, 2, k.cp_block_bytes, g.cp.link,
                                    h.gpu.network);
  // One step: exposed only what the send takes beyond half the attention.
  CHECK(x.comm_forward == std::max<Nanos>(0, send - x.attention / 2));
  // The attention core is the causal half over t x cp.
  CHECK(k.attention_flops ==
        Approx(0.5 * 2.0 * 8192.0 * 8192 * 64 * 256 / 2));
  // EP 4 on Mixtral-8x7B: 8 experts, 2 per rank, each meeting T x top_k x
  // ep / E tokens; dispatch and combine all-to-alls of e T top_k h bytes.
  const Architecture moe = test::Mixtral_8x7B();
  Training te;
  te.seq = 4096;
  te.ep = 4;
  const LayerKernels km = DecoderKernels(moe, te, 0);
  const Gemm* fc1 = nullptr;
  for (const Gemm& gm : km.gemms) {
    if (gm.name == "expert fc1") fc1 = &gm;
  }
  REQUIRE(fc1 != nullptr);
  CHECK(fc1->count == 2);
  CHECK(fc1->m == 4096 * 2 * 4 / 8);
  CHECK(fc1->n == 2 * 14336);
  int a2a = 0;
  for (const CommOp& c : km.comms) {
    if (c.kind != Collective::AllToAll) continue;
    ++a2a;
    CHECK(c.group == CommGroup::Ep);
    CHECK(c.bytes == 2LL * 4096 * 2 * 4096);
    CHECK(c.forward == 1);
    CHECK(c.backward == 1);
  }
  CHECK(a2a == 2);
  // The local experts do the layer's routed work: E/ep x their tokens =
  // T x top_k, the same FLOPs as the whole layer's routed experts.
  CHECK(fc1->flops() == Approx(2.0 * 4096 * 2 * 4096 * 2 * 14336));
}

TEST_CASE("the step's tail: buckets in the last backward's window", "[step]") {
  StepTail tail;
  tail.enabled = true;
  tail.overlap_grad_reduce = true;
  tail.dp = 2;
  tail.dp_link = GroupLink{1e9, 0, true};  // 1 B/ns
  tail.bucket_bytes = 250;                  // all-reduce n = 2: S / B = 250 ns
  tail.efficiency = Ideal();
  // One stage on rank 0 whose last backward runs [100, 1100]: four buckets,
  // the first ready at 350, back to back until 1350 = the backward's end
  // + one bucket: the window closes exactly when the last bucket is ready.
  const std::vector<TailStage> stages = {{0, 100, 1100, 1000, 0, 40}};
  std::vector<TailTiming> t = RunTail(tail, stages, {1100});
  CHECK(t[0].grad_sync_busy == 1000);
  CHECK(t[0].grad_sync_end == 1350);
  CHECK(t[0].end == 1390);
  // Without overlap the sync waits for the flush: 1100 + 1000.
  tail.overlap_grad_reduce = false;
  t = RunTail(tail, stages, {1100});
  CHECK(t[0].grad_sync_end == 2100);
  CHECK(t[0].end == 2140);
  // DP = 1: no sync, only the optimizer.
  tail.dp = 1;
  t = RunTail(tail, stages, {1100});
  CHECK(t[0].grad_sync_busy == 0);
  CHECK(t[0].end == 1140);
  // Two ranks: both optimizers wait for the later rank's gradients.
  tail.dp = 2;
  const std::vector<TailStage> two = {{0, 0, 500, 1000, 0, 40},
                                      {1, 0, 100, 500, 0, 70}};
  t = RunTail(tail, two, {800, 900});
  CHECK(t[0].grad_sync_end == 1800);  // 800 + 1000
  CHECK(t[1].grad_sync_end == 1400);  // 900 + 500
  CHECK(t[0].end == 1840);
  CHECK(t[1].end == 1870);
}

TEST_CASE("the engine ends the step after the tail, the parts add up", "[step]") {
  PipelineSpec spec = PipelineSpec::Uniform(2, 1, 4, 100, 200);
  spec.tail.enabled = true;
  spec.tail.dp = 2;
  spec.tail.dp_link = GroupLink{1e9, 0, true};
  spec.tail.efficiency = Ideal();
  for (StageCost& s : spec.stages) {
    s.grad_bytes = 300;
    s.optimizer = 50;
  }
  Program program;
  program.ops.resize(2);
  // GPipe by hand: F0..F3 then B3..B0 on each rank.
  for (int d = 0; d < 2; ++d) {
    for (int j = 0; j < 4; ++j) program.ops[d].push_back({OpKind::F, StageId(d), MicrobatchId(j)});
    for (int j = 3; j >= 0; --j) program.ops[d].push_back({OpKind::B, StageId(d), MicrobatchId(j)});
  }
  Engine engine;
  const SimResult r = engine.Run(spec, program);
  REQUIRE(r.outcome == Outcome::Ok);
  // Pipeline: rank 1 runs F 100..500, B 500..1300; rank 0's last B ends
  // at 1500 (its B3 waits for rank 1's at 700: 700 + 4 x 200).
  CHECK(r.pipeline_end == 1500);
  // Rank 0 syncs 300 ns after 1500, rank 1 after 1300: every rank has its
  // gradients at 1800, then 50 ns of optimizer.
  CHECK(r.makespan == 1850);
  const BubbleBreakdown& b = r.breakdown;
  CHECK(b.grad_sync == 300);
  CHECK(b.optimizer == 50);
  CHECK(b.ideal + b.imbalance + b.recompute + b.communication + b.warmup_drain +
            b.grad_sync + b.optimizer ==
        r.makespan);
}

TEST_CASE("the step's parts add up on every rank of a shipped job", "[step]") {
  Result<RunConfig> cfg =
      LoadConfig(std::string(PPB_CONFIGS_DIR) + "/megatron-145b-a100.yaml", {});
  REQUIRE(cfg.ok());
  Result<PreparedRun> run = Prepare(*cfg);
  REQUIRE(run.ok());
  Engine engine;
  const SimResult r = engine.Run(run->spec, run->program);
  REQUIRE(r.outcome == Outcome::Ok);
  REQUIRE(r.makespan > r.pipeline_end);
  const PipelineSpec& spec = run->spec;
  for (int d = 0; d < spec.p; ++d) {
    INFO("rank " << d);
    const StepParts x = DeviceStepParts(r, d);
    CHECK(x.sum() == r.makespan);
    CHECK(x.compute > 0);
    // Each micro-batch's F and B on the rank's stage expose its
    // collectives once: m x (forward + backward) of the stage.
    const StageCost& c = spec.stages[static_cast<size_t>(d)];
    CHECK(c.collective_forward > 0);
    CHECK(x.collectives == spec.m * (c.collective_forward + c.collective_backward));
  }
  // The breakdown's seven parts on the busiest rank make the iteration.
  const BubbleBreakdown& b = r.breakdown;
  CHECK(b.ideal + b.imbalance + b.recompute + b.communication + b.warmup_drain +
            b.grad_sync + b.optimizer ==
        r.makespan);
}

std::string JobYaml(const std::string& training, const std::string& extra = "") {
  return "model:\n"
         "  name: tiny\n"
         "  architecture: {hidden_size: 1024, num_layers: 8, num_attention_heads: 16,\n"
         "                 num_key_value_heads: 8, ffn_hidden_size: 4096, vocab_size: 32000}\n"
         "training: {seq_length: 2048, " + training + "}\n"
         "hardware: {gpu: a100-sxm4-80gb}\n"
         "pipeline: {stages: 2" + extra + "}\n";
}

TEST_CASE("the global batch sets m, the job's refusals", "[step]") {
  Result<RunConfig> ok = ParseConfig(
      JobYaml("micro_batch_size: 2, global_batch_size: 64, data_parallel: 4, "
              "tensor_parallel: 4"),
      "job.yaml", {});
  REQUIRE(ok.ok());
  CHECK(ok->shape.m == 8);  // 64 / (4 x 2)
  CHECK(ok->hardware.step_model);
  CHECK(ok->shape.tail.enabled);
  CHECK(ok->shape.tail.dp == 4);
  // What the process leaves for tensors (core/process_memory.h): 80 GiB
  // less the context (512 MiB), workspaces (128 MiB) and NCCL's buffers
  // for 5 peers (448 MiB each: TP 4's other 3 ranks, DP's ring neighbours
  // 2), 15 % of the rest fragmentation.
  const ProcessMemory& pm = ok->hardware.gpu.process_memory;
  CHECK(ok->hardware.nccl_peers.peers == 5);
  const Bytes fixed = (512LL + 128 + 5 * 448) << 20;
  CHECK(FixedProcessBytes(pm, ok->hardware.nccl_peers) == fixed);
  CHECK(ok->cluster.devices[0].memory_capacity == AllocatableBytes(pm, 80LL << 30, fixed));
  CHECK(ok->cluster.devices[0].memory_capacity ==
        Approx(static_cast<double>((80LL << 30) - fixed) * 0.85).epsilon(1e-9));
  struct Bad {
    std::string yaml, message;
  };
  const Bad bad[] = {
      {JobYaml("global_batch_size: 63, data_parallel: 4, micro_batch_size: 2"),
       "job.yaml:5: training.global_batch_size: must be a multiple of "
       "data_parallel x micro_batch_size (4 x 2 = 8); got 63"},
      {JobYaml("global_batch_size: 64", ", microbatches: 8"),
       "job.yaml:5: training.global_batch_size: must not be given with "
       "pipeline.microbatches (it sets m = global_batch_size / (data_parallel "
       "x micro_batch_size)); got both"},
      {JobYaml("tensor_parallel: 16, global_batch_size: 8"),
       "job.yaml:5: training.tensor_parallel: must divide the attention "
       "heads (16) and the KV heads (8): Megatron splits both over the "
       "tensor-parallel ranks and does not replicate KV heads; got 16"},
  };
  for (const Bad& b : bad) {
    Result<RunConfig> r = ParseConfig(b.yaml, "job.yaml", {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == b.message);
  }
  // TP over a node, and coefficients out of range (a smaller share would
  // price a layer beyond any step).
  std::string yaml = JobYaml("tensor_parallel: 16, global_batch_size: 8");
  yaml.replace(yaml.find("num_attention_heads: 16"), 23, "num_attention_heads: 32");
  yaml.replace(yaml.find("num_key_value_heads: 8"), 22, "num_key_value_heads: 16");
  Result<RunConfig> r = ParseConfig(yaml, "job.yaml", {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "job.yaml:5: training.tensor_parallel: must fit in a node "
        "(hardware.gpus_per_node = 8; set training.tp_across_nodes: true to "
        "let its all-reduces cross the NICs); got 16");
  yaml = JobYaml("global_batch_size: 8");
  yaml.replace(yaml.find("{gpu: a100-sxm4-80gb}"), 21,
               "{gpu: a100-sxm4-80gb, matmul_efficiency: 0.001}");
  r = ParseConfig(yaml, "job.yaml", {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "job.yaml:6: hardware.matmul_efficiency: must be a number in [0.01, 1]; got 0.001");
}

TEST_CASE("Megatron's flags carry the job's parallel block", "[step]") {
  Result<RunConfig> cfg = ParseConfig(
      JobYaml("micro_batch_size: 2, global_batch_size: 64, data_parallel: 4, "
              "tensor_parallel: 4, sequence_parallel: true, "
              "distributed_optimizer: true, overlap_grad_reduce: true, "
              "overlap_param_gather: true"),
      "job.yaml", {});
  REQUIRE(cfg.ok());
  // Megatron-LM core 0.20 runs 1F1B with blocking p2p (overlap_p2p_comm is
  // forced off without interleaving): the step model's default.
  CHECK(cfg->shape.comm == CommMode::Blocking);
  Result<PreparedRun> run = Prepare(*cfg);
  REQUIRE(run.ok());
  Result<Emission> e = Emit(Framework::Megatron, *cfg, run->program);
  REQUIRE(e.ok());
  for (const char* line :
       {"--tensor-model-parallel-size 4\n", "--sequence-parallel\n",
        "--seq-length 2048\n", "--micro-batch-size 2\n",
        "--global-batch-size 64\n", "--bf16\n", "--use-distributed-optimizer\n",
        "--overlap-grad-reduce\n", "--overlap-param-gather\n"}) {
    INFO(line);
    CHECK(e->text.find(line) != std::string::npos);
  }
  CHECK(e->text.find("--tp-comm-overlap") == std::string::npos);
  CHECK(e->text.find("launch on 32 GPUs: data parallel size 4") != std::string::npos);
  // ppb's reader takes the switches back.
  CHECK(ParseMegatronArgs(e->text, cfg->layers).ok());
}

TEST_CASE("tokens per second and MFU by hand", "[step]") {
  Architecture a = test::Dense(1024, 2, 16, 16, 4096, 32000);
  Training t;
  t.seq = 1024;
  t.micro_batch = 2;
  t.dp = 4;
  t.tp = 2;
  t.pp = 1;
  Hardware h;
  h.peak_tflops = 100;
  h.achievable_fraction = 1;
  const std::vector<DerivedLayer> layers = DeriveLayers(a, t, h);
  const int m = 8;
  const StepMetrics s =
      ComputeStepMetrics(layers, std::vector<std::uint8_t>(layers.size(), 0), t, h, m, 2'000'000'000);
  CHECK(s.gpus == 8);
  CHECK(s.tokens_per_step == 4.0 * 8 * 2 * 1024);
  CHECK(s.tokens_per_s == Approx(4.0 * 8 * 2 * 1024 / 2));
  // 6 x weights x tokens + 3 x the causal half of 4 b s^2 h per layer.
  double weights = 0;
  for (const DerivedLayer& d : layers) weights += d.flops.matmul;
  const double attention = 2 * 3 * 0.5 * 4.0 * 2 * 1024.0 * 1024 * 1024;
  const double per_mb = 3 * weights + attention;
  CHECK(s.model_flops == Approx(per_mb * 4 * 8));
  CHECK(s.mfu == Approx(per_mb * 32 / 2.0 / 8 / 100e12));
  CHECK(s.hfu == Approx(s.mfu));
}

TEST_CASE("calibrate --runs recovers the coefficients that made the runs", "[step]") {
  // tests/data/step/runs.yaml holds the times ppb simulates for its three
  // configs with matmul 0.55, collective 0.5 and a 20 GB/s NIC; the fit
  // starts from the h100-sxm preset (0.61, 0.8, 50 GB/s).
  Result<StepRuns> runs = LoadStepRuns(std::string(PPB_TEST_DATA_DIR) + "/step/runs.yaml");
  REQUIRE(runs.ok());
  REQUIRE(runs->fit.size() == 3);
  CHECK(runs->fit[0] == StepCoefficient::MatmulEfficiency);
  CHECK(runs->fit[1] == StepCoefficient::CollectiveEfficiency);
  CHECK(runs->fit[2] == StepCoefficient::InterNodeBandwidth);
  Result<StepFit> fit = FitStepRuns(*runs);
  REQUIRE(fit.ok());
  CHECK(fit->before[0] == Approx(0.61));
  CHECK(fit->after[0] == Approx(0.55).epsilon(0.01));
  CHECK(fit->after[1] == Approx(0.5).epsilon(0.01));
  CHECK(fit->after[2] == Approx(20e9).epsilon(0.01));
  CHECK(fit->rms_before > 0.3);
  CHECK(fit->rms_after < 0.001);
}

TEST_CASE("calibrate --runs fits the FP8 GEMM share apart from BF16's", "[step][precision]") {
  // One job measured in BF16 and in FP8 (tests/data/step/runs-fp8.yaml,
  // made with matmul 0.55 and fp8 0.45); the fit starts from the h100-sxm
  // preset (0.61, 0.5734) and recovers both.
  Result<StepRuns> runs = LoadStepRuns(std::string(PPB_TEST_DATA_DIR) + "/step/runs-fp8.yaml");
  REQUIRE(runs.ok());
  REQUIRE(runs->fit.size() == 2);
  CHECK(runs->fit[1] == StepCoefficient::Fp8MatmulEfficiency);
  Result<StepFit> fit = FitStepRuns(*runs);
  REQUIRE(fit.ok());
  CHECK(fit->before[1] == Approx(0.94 * 0.61));
  CHECK(fit->after[0] == Approx(0.55).epsilon(0.01));
  CHECK(fit->after[1] == Approx(0.45).epsilon(0.01));
  CHECK(fit->rms_after < 0.001);
  // Fitting the FP8 share to BF16 runs alone fits nothing: refused.
  Result<StepRuns> bf16 = LoadStepRuns(std::string(PPB_TEST_DATA_DIR) + "/step/runs.yaml");
  REQUIRE(bf16.ok());
  bf16->fit = {StepCoefficient::MatmulEfficiency, StepCoefficient::Fp8MatmulEfficiency};
  Result<StepFit> none = FitStepRuns(*bf16);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message ==
        bf16->path + ": fit: fp8_matmul_efficiency must be fitted to runs that train in FP8 "
                     "(training.fp8 / training.fp4); got none");
}

namespace {

// The iteration time ppb simulates for `config` (a text) with the hidden
// coefficients matmul 0.55, collective 0.5, a 20 GB/s NIC.
Nanos HiddenTime(std::string config) {
  config.replace(config.find("hardware: {gpu: h100-sxm}"), 25,
                 "hardware: {gpu: h100-sxm, matmul_efficiency: 0.55, collective_efficiency: "
                 "0.5, inter_node: {bandwidth: 20GB/s}}");
  Result<RunConfig> c = test::Parse(config);
  REQUIRE(c.ok());
  Result<PreparedRun> run = Prepare(*c);
  REQUIRE(run.ok());
  Engine engine;
  return engine.Run(run->spec, run->program).makespan;
}

}  // namespace

TEST_CASE("calibrate --runs: leave-one-out on four runs, and what the runs cannot determine",
          "[step]") {
  // Four configs of one job (tests/data/step's three and a fourth with TP 4
  // across DP 8), measured at the hidden coefficients: every three of them
  // determine the three coefficients, so each run left out is predicted
  // by the fit to the others within 0.5 %.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "ppb_test_loo";
  fs::create_directories(dir);
  const std::string data = std::string(PPB_TEST_DATA_DIR) + "/step/";
  std::string fourth = test::Slurp(data + "data.yaml");
  fourth.replace(fourth.find("tensor_parallel: 8"), 18, "tensor_parallel: 4");
  fourth.replace(fourth.find("data_parallel: 4"), 16, "data_parallel: 8");
  std::string runs = "runs:\n";
  for (const char* name : {"compute.yaml", "tensor.yaml", "data.yaml", "fourth.yaml"}) {
    const std::string text =
        std::string(name) == "fourth.yaml" ? fourth : test::Slurp(data + name);
    std::ofstream(dir / name) << text;
    runs += fmt::format("  - config: {}\n    iteration_time: {}ns\n", name, HiddenTime(text));
  }
  std::ofstream(dir / "runs.yaml") << runs;
  Result<StepRuns> loaded = LoadStepRuns((dir / "runs.yaml").string());
  REQUIRE(loaded.ok());
  Result<StepFit> fit = FitStepRuns(*loaded);
  REQUIRE(fit.ok());
  REQUIRE(fit->fit.size() == 3);
  CHECK(fit->after[0] == Approx(0.55).epsilon(0.01));
  CHECK(fit->after[1] == Approx(0.5).epsilon(0.01));
  CHECK(fit->after[2] == Approx(20e9).epsilon(0.01));
  CHECK(fit->loo_runs == 4);
  for (size_t i = 0; i < 4; ++i) {
    const double m = static_cast<double>(loaded->runs[i].measured);
    CHECK(std::abs(static_cast<double>(fit->loo[i]) - m) / m < 0.005);
  }
  CHECK(fit->rms_loo < 0.005);
  // Two runs inside one node (TP 8, no data parallelism across nodes) say
  // nothing about the NIC: named in `fit`, it is refused; by default it is
  // left out with a warning.
  std::string node = test::Slurp(data + "data.yaml");
  node.replace(node.find("data_parallel: 4"), 16, "data_parallel: 1");
  node.replace(node.find("global_batch_size: 8"), 20, "global_batch_size: 2");
  std::string node2 = node;
  node2.replace(node2.find("tensor_parallel: 8"), 18, "tensor_parallel: 4");
  std::ofstream(dir / "node.yaml") << node;
  std::ofstream(dir / "node2.yaml") << node2;
  std::ofstream(dir / "runs-node.yaml")
      << fmt::format("runs:\n  - config: node.yaml\n    iteration_time: {}ns\n"
                     "  - config: node2.yaml\n    iteration_time: {}ns\n"
                     "fit: [matmul_efficiency, inter_node.bandwidth]\n",
                     HiddenTime(node), HiddenTime(node2));
  Result<StepRuns> named = LoadStepRuns((dir / "runs-node.yaml").string());
  REQUIRE(named.ok());
  Result<StepFit> refused = FitStepRuns(*named);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message ==
        (dir / "runs-node.yaml").string() +
            ": fit: inter_node.bandwidth cannot be determined by these runs: no run's step time "
            "depends on it; fit it with runs that differ in it, or leave it out");
  named->fit_given = false;
  Result<StepFit> dropped = FitStepRuns(*named);
  REQUIRE(dropped.ok());
  REQUIRE(dropped->fit.size() == 1);
  CHECK(dropped->fit[0] == StepCoefficient::MatmulEfficiency);
  REQUIRE_FALSE(dropped->warnings.empty());
  CHECK(dropped->warnings[0] ==
        "inter_node.bandwidth not fitted: no run's step time depends on it");
  fs::remove_all(dir);
}

TEST_CASE("calibrate --runs refuses what it cannot fit", "[step]") {
  const std::string compute = std::string(PPB_TEST_DATA_DIR) + "/step/compute.yaml";
  const std::string path =
      (std::filesystem::temp_directory_path() / "ppb-test-bad-runs.yaml").string();
  struct Case {
    std::string yaml, message;
  };
  const Case cases[] = {
      {"runs:\n  - config: " + compute + "\n    iteration_time: 1s\n"
       "fit: [matmul_efficiency, hbm_efficiency]\n",
       path + ":4: fit: must name 1 to 1 coefficients (at most one per distinct "
              "measured config); got 2"},
      {"runs:\n  - config: " + compute + "\n", path + ":2: runs[0].iteration_time: must be "
                                                   "given (the measured step time, e.g. "
                                                   "21.3s); got nothing"},
      {"runs:\n  - config: " + compute + "\n    iteration_time: 1s\nfit: [speed]\n",
       path + ":4: fit[0]: must be one of matmul_efficiency, attention_efficiency, "
              "hbm_efficiency, collective_efficiency, intra_node.bandwidth, "
              "inter_node.bandwidth, fp8_matmul_efficiency, fp4_matmul_efficiency, "
              "launch_overhead, layer_overhead, microbatch_overhead; got "
              "speed"},
  };
  for (const Case& c : cases) {
    {
      std::ofstream f(path);
      f << c.yaml;
    }
    Result<StepRuns> r = LoadStepRuns(path);
    std::remove(path.c_str());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == c.message);
  }
}

}  // namespace
}  // namespace ppb
