// Mixture-of-experts communication (issue 44, core/moe.h): each
// dispatcher's collectives for one layer by hand, DeepEP's two-hop, the
// busiest rank from measured loads and the capacity factor, expert tensor
// parallelism's fold, Megatron's combined 1F1B on a two-micro-batch
// timeline, and training.moe's refusals naming their rule.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "apps/input/config.h"
#include "apps/output/emit.h"
#include "core/cost_model.h"
#include "core/dp_costs.h"
#include "core/engine.h"
#include "core/layer_kernels.h"
#include "core/lower.h"
#include "core/moe.h"
#include "core/rank_layout.h"
#include "core/validate.h"
#include "schedules/schedule.h"
#include "tests/app_helpers.h"
#include "tests/cost_models.h"

namespace ppb {
namespace {

using I64 = std::int64_t;

Training MoeTraining(int tp, int ep, int dp) {
  Training t;
  t.seq = 4096;
  t.micro_batch = 1;
  t.tp = tp;
  t.sp = tp > 1;
  t.ep = ep;
  t.dp = dp;
  t.flash_attention = true;
  return t;
}

const CommOp& Find(const LayerKernels& k, const std::string& name) {
  for (const CommOp& c : k.comms) {
    if (c.name == name) return c;
  }
  FAIL("no collective " << name);
  return k.comms.front();
}

bool Has(const LayerKernels& k, const std::string& name) {
  for (const CommOp& c : k.comms) {
    if (c.name == name) return true;
  }
  return false;
}

Nanos Ring(int n, double bytes, const GroupLink& link, const Hardware& h) {
  const double bw = EffectiveBandwidth(link, static_cast<Bytes>(bytes), h.gpu.network);
  return static_cast<Nanos>(std::llround((n - 1) * static_cast<double>(link.latency) +
                                         (n - 1.0) / n * bytes / bw * 1e9));
}

TEST_CASE("moe: one layer's dispatch and combine under each dispatcher", "[moe]") {
  const Architecture a = test::Mixtral_8x7B();
  const Hardware h = test::StepHardware("h100-sxm");
  // EP 8 in one node: the 4096 tokens' 2 copies of 4096 bf16 each.
  Training t = MoeTraining(1, 8, 8);
  const JobGroups g = PlaceJob(t, h.gpu);
  REQUIRE_FALSE(g.ep.crosses_nodes);
  const double routed = 2.0 * 4096 * 2 * 4096;
  LayerKernels k = DecoderKernels(a, t, 0);
  const CommOp& dispatch = Find(k, "moe dispatch all-to-all");
  CHECK(dispatch.bytes == static_cast<Bytes>(routed));
  CHECK(CommTime(dispatch, g, h) == Ring(8, routed, g.ep.a2a_link, h));
  CHECK(Has(k, "moe combine all-to-all"));

  SECTION("allgather: the etp x ep group's hidden states, no all-to-all") {
    t.moe.dispatcher = Dispatcher::AllGather;
    k = DecoderKernels(a, t, 0);
    CHECK_FALSE(Has(k, "moe dispatch all-to-all"));
    const CommOp& ag = Find(k, "moe all-gather (etp x ep)");
    // 8 ranks x 4096 tokens x 4096 x 2 bytes, gathered.
    CHECK(ag.bytes == 8LL * 4096 * 4096 * 2);
    CHECK(CommTime(ag, g, h) == Ring(8, 8.0 * 4096 * 4096 * 2, g.etp_ep.link, h));
  }
  SECTION("flex deepep in one NVLink domain: 7/8 of the copies at 0.81 of NVLink") {
    t.moe.dispatcher = Dispatcher::Flex;
    k = DecoderKernels(a, t, 0);
    const CommOp& d = Find(k, "moe dispatch (deepep)");
    const double s = routed * 7 / 8 / (h.gpu.nvlink_bytes_per_s * 0.81);
    CHECK(CommTime(d, g, h) == h.gpu.intra_latency + std::llround(s * 1e9));
    t.moe.backend = FlexBackend::HybridEp;  // 8 ranks: 0.61
    k = DecoderKernels(a, t, 0);
    const double s2 = routed * 7 / 8 / (h.gpu.nvlink_bytes_per_s * 0.61);
    CHECK(CommTime(Find(k, "moe dispatch (hybridep)"), g, h) ==
          h.gpu.intra_latency + std::llround(s2 * 1e9));
  }
  SECTION("flex deepep across nodes: once per node over RDMA") {
    t = MoeTraining(1, 8, 32);
    t.moe.dispatcher = Dispatcher::Flex;
    // 4 nodes of 8: EP 8 at stride 1 stays in one; EP 32 needs 32 ranks.
    Architecture big = a;
    big.experts = 32;
    t.ep = 32;
    const JobGroups g32 = PlaceJob(t, h.gpu);
    REQUIRE(g32.ep.crosses_nodes);
    REQUIRE(g32.ep.per_node == 8);
    k = DecoderKernels(big, t, 0);
    const CommOp& d = Find(k, "moe dispatch (deepep)");
    // A token's 2 copies land on 3 (1 - (3/4)^2) = 1.3125 other nodes.
    const double rdma = routed / 2 * 1.3125 / (h.gpu.nic_bytes_per_s * 0.86);
    const double nvl = routed * 31 / 32 / (h.gpu.nvlink_bytes_per_s * 0.81);
    CHECK(CommTime(d, g32, h) == h.gpu.inter_latency + std::llround(std::max(rdma, nvl) * 1e9));
  }
  SECTION("ETP: TP 2 with SP; the experts' ETP 2 gathers the received copies") {
    t = MoeTraining(2, 8, 8);
    k = DecoderKernels(a, t, 0);
    // Each TP rank dispatches its 2048 tokens.
    CHECK(Find(k, "moe dispatch all-to-all").bytes == 2LL * 2048 * 2 * 4096);
    CHECK(Find(k, "moe all-gather (etp)").bytes == 2LL * 2 * 2048 * 2 * 4096);
    // ETP 1: no expert-TP collectives, full-width experts on twice the
    // tokens: the same FLOPs.
    Training one = t;
    one.moe.expert_tp = 1;
    const LayerKernels k1 = DecoderKernels(a, one, 0);
    CHECK_FALSE(Has(k1, "moe all-gather (etp)"));
    double f2 = 0, f1 = 0;
    for (const Gemm& x : k.gemms) f2 += x.name.rfind("expert", 0) == 0 ? x.flops() : 0;
    for (const Gemm& x : k1.gemms) f1 += x.name.rfind("expert", 0) == 0 ? x.flops() : 0;
    CHECK(f1 == f2);
    // The expert weights of a layer: over etp x ep ranks (16 vs 8).
    const std::vector<DerivedLayer> d2 = DeriveLayers(a, t, h);
    const std::vector<DerivedLayer> d1 = DeriveLayers(a, one, h);
    const double bpp2 = RankBytesPerParam(t, ShardsOf(t).expert);
    const double bpp1 = RankBytesPerParam(one, ShardsOf(one).expert);
    CHECK(bpp1 == 18);  // no distributed optimizer
    const double dense = static_cast<double>(d2[1].params.dense) / 2 * 18;
    CHECK(d2[1].layer.static_memory ==
          std::llround(dense + static_cast<double>(d2[1].params.expert) / 16 * bpp2));
    CHECK(d1[1].layer.static_memory ==
          std::llround(dense + static_cast<double>(d1[1].params.expert) / 8 * bpp1));
    // Megatron's folding: expert DP = tp x cp x dp / (etp x ep).
    CHECK(ShardsOf(one).expert == 2);
    CHECK(ShardsOf(t).expert == 1);
  }
}

TEST_CASE("moe: a latent MoE's experts and all-to-alls at the latent width", "[moe]") {
  // Nemotron 3 Super's shape (Megatron-LM moe_latent_size 1024 at h 4096,
  // 512 experts of 2688, top 22) on Mixtral's other dimensions.
  Architecture a = test::Mixtral_8x7B();
  a.experts = 512;
  a.top_k = 22;
  a.expert_ffn = 2688;
  a.gated_mlp = false;  // squared ReLU: fc1 and fc2
  Architecture latent = a;
  latent.moe_latent = 1024;
  // Parameters: the experts' 2 x 1024 x 2688 each, and the two 4096 x 1024
  // projections beside them.
  const ParamCount full = DecoderLayerParams(a, 0), lat = DecoderLayerParams(latent, 0);
  CHECK(full.expert == 512LL * 2 * 4096 * 2688);
  CHECK(lat.expert == 512LL * 2 * 1024 * 2688);
  CHECK(lat.dense - full.dense == 2LL * 4096 * 1024);
  // FLOPs: a token meets 22 latent experts and both projections.
  Training t = MoeTraining(1, 8, 8);
  const double tokens = 4096;
  CHECK(DecoderLayerFlops(a, t, 0).matmul - DecoderLayerFlops(latent, t, 0).matmul ==
        Approx(2.0 * tokens * (22.0 * 2 * 2688 * (4096 - 1024) - 2.0 * 4096 * 1024)));
  // Kernels: the projections on the rank's 4096 tokens, the experts' K and
  // N at 1024, the all-to-all of 22 copies of 1024 bf16 a token.
  const LayerKernels k = DecoderKernels(latent, t, 0);
  auto gemm = [&](const std::string& name) {
    for (const Gemm& g : k.gemms) {
      if (g.name == name) return g;
    }
    FAIL("no GEMM " << name);
    return Gemm{};
  };
  CHECK(gemm("moe latent down").m == 4096);
  CHECK(gemm("moe latent down").n == 1024);
  CHECK(gemm("moe latent down").k == 4096);
  CHECK(gemm("moe latent up").n == 4096);
  CHECK(gemm("moe latent up").k == 1024);
  CHECK(gemm("expert fc1").k == 1024);
  CHECK(gemm("expert fc2").n == 1024);
  CHECK(gemm("router").k == 4096);  // the router reads the hidden states
  CHECK(Find(k, "moe dispatch all-to-all").bytes == 2LL * 4096 * 22 * 1024);
  CHECK(Find(DecoderKernels(a, t, 0), "moe dispatch all-to-all").bytes ==
        2LL * 4096 * 22 * 4096);
}

TEST_CASE("moe: the busiest rank from measured loads and capacity", "[moe]") {
  const std::vector<double> loads = {10, 0, 0, 2, 4, 4, 4, 4};
  // EP 4: ranks hold 10, 2, 8, 8 (mean 7); EP 2: 12, 16 (mean 14).
  CHECK(RankShare(loads, 4) == Approx(10.0 / 7));
  CHECK(RankShare(loads, 2) == Approx(16.0 / 14));
  CHECK(RankShare(loads, 1) == 1.0);
  MoeSettings m;
  m.loads.layers = {loads, {1, 1, 1, 1, 1, 1, 1, 1}};
  CHECK(BusiestShare(m, 1.0, 4, 0) == Approx(10.0 / 7));
  CHECK(BusiestShare(m, 1.0, 4, 1) == 1.0);
  CHECK(BusiestShare(m, 1.0, 4, 7) == 1.0);  // past the rows: the last
  m.capacity_factor = 1.2;                    // dropped beyond 1.2 x mean
  CHECK(BusiestShare(m, 1.0, 4, 0) == Approx(1.2));
  m.pad_to_capacity = true;  // static shapes: every expert at capacity
  CHECK(BusiestShare(m, 1.0, 4, 1) == Approx(1.2));
  MoeSettings forced;
  forced.force_balance = true;
  CHECK(BusiestShare(forced, 1.5, 8, 0) == 1.0);
  CHECK(BusiestShare(MoeSettings{}, 1.5, 8, 0) == 1.5);

  // In the layer: the expert GEMMs and the all-to-alls take the share.
  Architecture a = test::Mixtral_8x7B();
  Training t = MoeTraining(1, 4, 8);
  t.moe.loads.layers = {loads};
  const LayerKernels k = DecoderKernels(a, t, 3);
  CHECK(Find(k, "moe dispatch all-to-all").skew == Approx(10.0 / 7));
  for (const Gemm& g : k.gemms) {
    if (g.name == "expert fc1") CHECK(g.skew == Approx(10.0 / 7));
  }
}

// DeriveLayers derives one layer per class of what the index changes and
// copies it to the others (core/cost_model.cpp DecoderClass): each index
// must still get its own row of loads, its precision and its offload.
TEST_CASE("moe: DeriveLayers keeps what each decoder index changes", "[moe]") {
  const Architecture a = test::Mixtral_8x7B();  // 32 layers, every one MoE
  Training t = MoeTraining(1, 4, 8);
  t.moe.loads.layers = {{10, 0, 0, 2, 4, 4, 4, 4}, {1, 1, 1, 1, 1, 1, 1, 1}};
  t.low.recipe = Recipe::Fp8Blockwise;
  t.low.bf16_end = 1;    // layer 31 in BF16
  t.offload.layers = 3;  // layers 0..2 send their activations to the host
  const Hardware h = test::StepHardware("h100-sxm");
  REQUIRE(ValidateCostInputs(a, t, h).ok());
  const std::vector<DerivedLayer> d = DeriveLayers(a, t, h);
  REQUIRE(d.size() == 34);
  auto at = [&](int i) -> const DerivedLayer& { return d[static_cast<size_t>(i) + 1]; };
  for (int i = 0; i < 32; ++i) CHECK(at(i).layer.name == "decoder." + std::to_string(i));
  // Layer 0 takes the skewed row (busiest rank 10/7 of the mean), 1.. the
  // balanced one (past the rows: the last).
  CHECK(Find(at(0).kernels, "moe dispatch all-to-all").skew == Approx(10.0 / 7));
  CHECK(Find(at(1).kernels, "moe dispatch all-to-all").skew == 1.0);
  CHECK(Find(at(30).kernels, "moe dispatch all-to-all").skew == 1.0);
  CHECK(at(0).times.forward > at(1).times.forward);
  CHECK(at(1).layer.forward == at(2).layer.forward);
  // Offloaded layers keep nothing on the device; layer 3 keeps its own.
  CHECK(at(2).layer.activation == 0);
  CHECK(at(2).offloaded > 0);
  CHECK(at(3).layer.activation > 0);
  CHECK(at(3).offloaded == 0);
  CHECK(at(3).layer.activation == at(2).offloaded);
  // 3..30 are one class.
  for (int i = 4; i < 31; ++i) {
    CHECK(at(i).layer.forward == at(3).layer.forward);
    CHECK(at(i).layer.backward() == at(3).layer.backward());
    CHECK(at(i).layer.activation == at(3).layer.activation);
    CHECK(at(i).layer.static_memory == at(3).layer.static_memory);
    CHECK(at(i).provenance == at(3).provenance);
  }
  // The BF16 last layer: no FP8 weight copies, slower GEMMs.
  CHECK(at(31).kernels.recipe == Recipe::None);
  CHECK(at(30).kernels.recipe == Recipe::Fp8Blockwise);
  CHECK(at(31).layer.static_memory < at(30).layer.static_memory);
  CHECK(at(31).layer.forward > at(30).layer.forward);
}

TEST_CASE("moe: combined 1F1B on two micro-batches by hand", "[moe]") {
  // One stage, F 10 (4 of it all-to-all), B 20 (6 of it all-to-all).
  Layer l;
  l.name = "moe";
  l.forward = 10;
  l.backward_input = 20;
  l.ep_forward = 4;
  l.ep_backward = 6;
  l.static_memory = 0;
  l.activation = 1;
  Cluster one;
  one.devices = {Device{1'000'000, 1.0}};
  one.links = {Link{}};
  PipelineShape shape{1, 1, 2};
  shape.ep_overlap_ppm = 1'000'000;
  Result<PipelineSpec> spec = Lower({l}, one, shape, EvenStrategy({l}, 1, 1));
  REQUIRE(spec.ok());
  ScheduleParams params;
  params.combined_1f1b = true;
  Result<Program> program = Generate1F1B(*spec, params);
  REQUIRE(program.ok());
  // F0, then F1 paired with B0, then B1.
  const std::vector<Op>& ops = program->ops[0];
  REQUIRE(ops.size() == 4);
  CHECK(ops[0].kind == OpKind::F);
  CHECK(ops[1].kind == OpKind::F);
  CHECK(ops[1].mb.value == 1);
  CHECK(ops[1].paired);
  CHECK(ops[2].kind == OpKind::B);
  CHECK(ops[2].mb.value == 0);
  REQUIRE(ValidateProgram(*spec, *program).ok());
  Engine engine;
  const SimResult r = engine.Run(*spec, *program);
  // F0 0-10 (its all-to-all exposed); F1 hides its 4 behind B0's 14 of
  // compute: 6; B0 hides its 6 behind F1's 6 of compute: 14; B1 20 (the
  // last backward exposed): 10 + 6 + 14 + 20.
  CHECK(r.makespan == 50);
  // Half of what could hide (hardware.ep_overlap_efficiency 0.5): F1
  // saves 2, B0 3.
  spec->ep_overlap_ppm = 500'000;
  CHECK(engine.Run(*spec, *program).makespan == 10 + 8 + 17 + 20);
  // Without the overlap the same order runs back to back.
  spec->ep_overlap_ppm = 0;
  CHECK(engine.Run(*spec, *program).makespan == 60);
  // Interleaved: one more warm-up forward than Megatron's plain table.
  PipelineShape s2{2, 2, 4};
  s2.ep_overlap_ppm = 1'000'000;
  Result<PipelineSpec> spec2 = Lower({l, l, l, l}, [] {
    Cluster c;
    c.devices = {Device{1'000'000, 1.0}, Device{1'000'000, 1.0}};
    c.links = {Link{}, Link{}};
    return c;
  }(), s2, EvenStrategy({l, l, l, l}, 2, 2));
  REQUIRE(spec2.ok());
  Result<Program> plain = GenerateInterleaved(*spec2, {});
  Result<Program> combined = GenerateInterleaved(*spec2, params);
  REQUIRE(plain.ok());
  REQUIRE(combined.ok());
  auto warmup = [](const std::vector<Op>& o) {
    size_t n = 0;
    while (n < o.size() && o[n].kind == OpKind::F) ++n;
    return n;
  };
  // Rank 0: 2(p - 1) + (v - 1) g = 2 + 2 = 4 warm-up forwards, then 5;
  // the first steady-state F follows them.
  CHECK(warmup(plain->ops[0]) == 4 + 1);
  CHECK(warmup(combined->ops[0]) == 5 + 1);
  REQUIRE(ValidateProgram(*spec2, *combined).ok());
  const SimResult rc = engine.Run(*spec2, *combined);
  CHECK(rc.outcome == Outcome::Ok);
  spec2->ep_overlap_ppm = 0;
  CHECK(rc.makespan < engine.Run(*spec2, *plain).makespan);
}

std::string MoeConfig(const std::string& moe, const std::string& pipeline = "",
                      const std::string& extra = "") {
  return "model:\n  name: mixtral\n  hf_config: " + std::string(PPB_CONFIGS_DIR) +
         "/hf/mixtral-8x7b.json\ntraining:\n  seq_length: 4096\n  micro_batch_size: 1\n"
         "  global_batch_size: 64\n  tensor_parallel: 2\n  sequence_parallel: true\n"
         "  expert_parallel: 8\n  data_parallel: 8\n" + extra +
         "  moe:\n" + moe + "hardware:\n  gpu: h100-sxm\npipeline:\n" +
         (pipeline.empty() ? "  stages: 2\n  virtual_stages: 2\n  schedule: interleaved\n"
                           : pipeline);
}

TEST_CASE("moe: training.moe parses and refuses with the rule", "[moe]") {
  Result<RunConfig> ok = test::Parse(MoeConfig(
      "    dispatcher: flex\n    backend: hybridep\n    overlap_ep_comm: true\n"
      "    expert_tensor_parallel: 1\n    capacity_factor: 1.25\n"
      "    pad_to_capacity: true\n    force_balance: true\n"));
  REQUIRE(ok.ok());
  const MoeSettings& m = ok->training.moe;
  CHECK(m.dispatcher == Dispatcher::Flex);
  CHECK(m.backend == FlexBackend::HybridEp);
  CHECK(m.overlap_ep_comm);
  CHECK(m.expert_tp == 1);
  CHECK(m.capacity_factor == 1.25);
  CHECK(m.pad_to_capacity);
  CHECK(ok->shape.ep_overlap_ppm == 520'000);  // h100-sxm: 0.52
  CHECK(ok->schedule_params.combined_1f1b);

  struct Case {
    std::string moe, pipeline, extra, says;
  };
  const Case cases[] = {
      {"    backend: deepep\n", "", "",
       "run.yaml:13: training.moe.backend: must be given with dispatcher: flex (Megatron's "
       "--moe-flex-dispatcher-backend); got it with alltoall"},
      {"    overlap_ep_comm: true\n", "  stages: 2\n  schedule: 1f1b\n", "",
       "training.moe.overlap_ep_comm: needs pipeline.virtual_stages > 1 when pipeline.stages "
       "> 1 (Megatron's --overlap-moe-expert-parallel-comm); got 2 stages with 1 virtual "
       "stage"},
      {"    dispatcher: allgather\n    overlap_ep_comm: true\n", "", "",
       "needs dispatcher alltoall or flex (Megatron's --overlap-moe-expert-parallel-comm); "
       "got allgather"},
      {"    pad_to_capacity: true\n", "", "",
       "training.moe.pad_to_capacity: must be given with capacity_factor"},
      {"    force_balance: true\n", "", "  routing_skew: 1.3\n",
       "training.routing_skew: must not be given with training.moe.force_balance"},
      {"    expert_tensor_parallel: 3\n", "", "",
       "training.moe.expert_tensor_parallel: must fold with expert_parallel (8) into the "
       "tensor x context x data parallel ranks of a stage (16"},
      {"    capacity_factor: 0\n", "", "", "training.moe.capacity_factor: must be a number > 0"},
      {"    overlap_ep_comm: true\n", "", "",
       ""},  // fine: interleaved, v 2
  };
  for (const Case& c : cases) {
    INFO(c.moe);
    Result<RunConfig> r = test::Parse(MoeConfig(c.moe, c.pipeline, c.extra));
    if (c.says.empty()) {
      CHECK(r.ok());
      continue;
    }
    REQUIRE_FALSE(r.ok());
    INFO(r.error().message);
    CHECK(r.error().message.find(c.says) != std::string::npos);
  }
  // Full recompute with the overlap names Megatron's rule.
  const std::string full = test::ParseError(
      MoeConfig("    overlap_ep_comm: true\n") + "strategy:\n  recompute: {full: true}\n");
  CHECK(full.find("must not recompute layers fully with training.moe.overlap_ep_comm") !=
        std::string::npos);
}

TEST_CASE("moe: forms without MoE flags say what they cannot carry", "[moe]") {
  const std::string moe =
      "    dispatcher: flex\n    overlap_ep_comm: true\n    expert_tensor_parallel: 1\n"
      "    force_balance: true\n";
  // MindFormers on interleaved p = 2; DeepSpeed (no interleaving) at p = 1,
  // where the combined 1F1B is Megatron's no-pipelining path.
  const std::pair<Framework, std::string> forms[] = {
      {Framework::MindFormers, ""},
      {Framework::DeepSpeed, "  stages: 1\n  schedule: 1f1b\n"}};
  for (const auto& [f, pipeline] : forms) {
    Result<RunConfig> c = test::Parse(MoeConfig(moe, pipeline));
    REQUIRE(c.ok());
    Result<PreparedRun> run = Prepare(*c);
    REQUIRE(run.ok());
    Result<Emission> e = Emit(f, *c, run->program);
    if (!e.ok()) FAIL(e.error().message);
    std::string flat;  // the note is wrapped over comment lines
    for (size_t i = 0; i < e->text.size(); ++i) {
      if (e->text.compare(i, 7, "\n# ppb:") == 0) {
        i += 7;
        flat += ' ';
        while (i + 1 < e->text.size() && e->text[i + 1] == ' ') ++i;
        continue;
      }
      flat += e->text[i];
    }
    INFO(e->text);
    CHECK(flat.find("cannot express training.moe's the flex dispatcher, expert TP 1, the "
                    "combined 1F1B (overlap_ep_comm), forced balance") != std::string::npos);
  }
  // Nothing to say for Megatron's defaults as ppb simulates them.
  Result<RunConfig> plain =
      test::Parse(MoeConfig("    dispatcher: alltoall\n", "  stages: 1\n  schedule: 1f1b\n"));
  REQUIRE(plain.ok());
  Result<PreparedRun> run2 = Prepare(*plain);
  REQUIRE(run2.ok());
  Result<Emission> e = Emit(Framework::DeepSpeed, *plain, run2->program);
  REQUIRE(e.ok());
  CHECK(e->text.find("training.moe") == std::string::npos);
}

}  // namespace
}  // namespace ppb
