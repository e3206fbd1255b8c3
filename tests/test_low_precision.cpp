// Low precision (issue 42, core/precision.h) and the NVL72 racks: one
// layer's GEMM and quantize times per recipe on h100-sxm and b200 by hand,
// the saved inputs and weight copies of one layer, the rank layout on a
// 72-GPU NVLink domain, the config's refusals at their line, Megatron's
// flags, and the plan's precision dimension.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "apps/input/config.h"
#include "apps/input/layout_document.h"
#include "apps/output/emit.h"
#include "core/cost_model.h"
#include "core/layer_kernels.h"
#include "core/precision.h"
#include "core/rank_layout.h"
#include "tests/cost_models.h"

namespace ppb {
namespace {

using test::StepHardware;

// The GEMM curve by hand: f / (peak x share x f / (f + peak x 3.2 us)).
double HandGemmNs(double f, double peak_tflops, double share) {
  const double peak = peak_tflops * 1e12;
  const double eff = share * f / (f + peak * 3.2e-6);
  return f / (peak * eff) * 1e9;
}

TEST_CASE("the presets' low-precision peaks and shares", "[precision]") {
  const Gpu& h100 = *FindGpu("h100-sxm");
  CHECK(h100.fp8_tflops == 1979);
  CHECK(h100.fp4_tflops == 0);
  CHECK(h100.compute.fp8_matmul == Approx(0.94 * 0.61));
  const Gpu& b200 = *FindGpu("b200");
  CHECK(b200.fp8_tflops == 4500);
  CHECK(b200.fp4_tflops == 9000);
  CHECK(b200.compute.fp4_matmul == Approx(0.57 * 0.61));
  const Gpu& gb200 = *FindGpu("gb200-nvl72");
  CHECK(gb200.nvlink_domain == 72);
  CHECK(gb200.gpus_per_node == 4);
  CHECK(gb200.host_bytes_per_s == 225e9);
  CHECK(gb200.memory == 186LL << 30);
  CHECK(FindGpu("gb300-nvl72")->fp4_tflops == 15000);
  CHECK(FindGpu("b300")->nic_bytes_per_s == 100e9);
  CHECK(FindGpu("a100-sxm4-80gb")->fp8_tflops == 0);
  CHECK(FindGpu("mi355x")->arch == GpuArch::Cdna4);
}

TEST_CASE("one layer's GEMMs at each recipe by hand", "[precision]") {
  // Llama-2-70B's fc1 at TP 8, 4,096 tokens: 4096 x 7168 x 8192.
  const Architecture a = test::Llama2_70B();
  Training t;
  t.seq = 4096;
  t.tp = 8;
  for (const char* gpu : {"h100-sxm", "b200"}) {
    const Hardware h = StepHardware(gpu);
    for (Recipe r : {Recipe::None, Recipe::Fp8Delayed, Recipe::Fp8Tensorwise,
                     Recipe::Fp8Blockwise, Recipe::Mxfp8, Recipe::Nvfp4}) {
      if (!RecipeRuns(r, h.gpu).empty()) continue;
      DYNAMIC_SECTION(gpu << " " << RecipeName(r)) {
        t.low.recipe = r;
        const LayerKernels k = DecoderKernels(a, t, 0);
        REQUIRE(k.gemms[2].name == "fc1");
        const double f = 2.0 * 4096 * 7168 * 8192;
        double peak = h.gpu.peak_tflops, share = h.gpu.compute.matmul;
        if (r == Recipe::Nvfp4) {
          peak = h.gpu.fp4_tflops, share = h.gpu.compute.fp4_matmul;
        } else if (r != Recipe::None) {
          // Hopper's block-scaled GEMMs at 0.83, MXFP8's at 0.93 of the
          // per-tensor FP8 share (core/precision.h).
          peak = h.gpu.fp8_tflops, share = h.gpu.compute.fp8_matmul;
          if (r == Recipe::Fp8Blockwise) share *= 0.83;
          if (r == Recipe::Mxfp8) share *= 0.93;
        }
        CHECK(GemmTime(k.gemms[2], h) == std::llround(HandGemmNs(f, peak, share)));
        CHECK(k.gemms[2].recipe == r);
      }
    }
  }
  // The numbers: a 481.04 GFLOP GEMM on H100 reaches 0.61 x 481.04 /
  // (481.04 + 3.16) = 0.6060 of 989 TFLOP/s in BF16 (0.8026 ms) and
  // 0.5734 x 481.04 / (481.04 + 6.33) = 0.5659 of 1979 in FP8 (0.4295 ms):
  // 1.87x, under the peaks' 2x (a lower share, a larger half-size).
  const Hardware h100 = StepHardware("h100-sxm");
  t.low.recipe = Recipe::None;
  const Nanos bf16 = GemmTime(DecoderKernels(a, t, 0).gemms[2], h100);
  t.low.recipe = Recipe::Fp8Tensorwise;
  const Nanos fp8 = GemmTime(DecoderKernels(a, t, 0).gemms[2], h100);
  CHECK(bf16 == Approx(802'600).epsilon(1e-4));
  CHECK(fp8 == Approx(429'500).epsilon(1e-4));
  // Small GEMMs gain less: the projection at TP 8 and 1,024 tokens.
  t.seq = 1024;
  t.low.recipe = Recipe::None;
  const Nanos small_bf16 = GemmTime(DecoderKernels(a, t, 0).gemms[1], h100);
  t.low.recipe = Recipe::Fp8Tensorwise;
  const Nanos small_fp8 = GemmTime(DecoderKernels(a, t, 0).gemms[1], h100);
  CHECK(static_cast<double>(small_bf16) / small_fp8 <
        static_cast<double>(bf16) / fp8);
}

TEST_CASE("the router, attention and head stay in the training dtype", "[precision]") {
  const Architecture a = test::Llama2_70B();
  Training t;
  t.seq = 4096;
  t.tp = 8;
  t.low.recipe = Recipe::Mxfp8;
  for (const Gemm& g : DecoderKernels(a, t, 0).gemms) CHECK(g.recipe == Recipe::Mxfp8);
  for (const Gemm& g : HeadKernels(a, t).gemms) CHECK(g.recipe == Recipe::None);
  // First and last layers in BF16.
  t.low.bf16_start = 1;
  t.low.bf16_end = 2;
  CHECK(DecoderKernels(a, t, 0).recipe == Recipe::None);
  CHECK(DecoderKernels(a, t, 1).recipe == Recipe::Mxfp8);
  CHECK(DecoderKernels(a, t, a.layers - 3).recipe == Recipe::Mxfp8);
  CHECK(DecoderKernels(a, t, a.layers - 2).recipe == Recipe::None);
  // An MoE layer's router is never quantized; its experts are.
  const Architecture moe = test::Mixtral_8x7B();
  t.low = {};
  t.low.recipe = Recipe::Fp8Blockwise;
  for (const Gemm& g : DecoderKernels(moe, t, 0).gemms) {
    CHECK(g.recipe == (g.name == "router" ? Recipe::None : Recipe::Fp8Blockwise));
  }
}

TEST_CASE("the quantize kernels by the bytes they move", "[precision]") {
  // 1e8 elements: one input cast, one gradient cast, weights once a step.
  LayerKernels k;
  k.quantize_input = 1e8;
  k.quantize_grad = 1e8;
  k.quantize_weight = 1e8;
  struct Case {
    const char* gpu;
    Recipe recipe;
    double bytes;  // per 1e8-element cast
  };
  const Case cases[] = {
      // delayed: read 2N, write N, + N transposed on Hopper.
      {"h100-sxm", Recipe::Fp8Delayed, 4e8},
      {"b200", Recipe::Fp8Delayed, 3e8},
      // tensorwise: the amax pass (2N) first.
      {"h100-sxm", Recipe::Fp8Tensorwise, 6e8},
      // blockwise: both orientations and an fp32 scale per 128.
      {"h100-sxm", Recipe::Fp8Blockwise, 2e8 + 2 * (1e8 + 4e8 / 128)},
      // mxfp8: both orientations and an E8M0 scale per 32.
      {"b200", Recipe::Mxfp8, 2e8 + 2 * (1e8 + 1e8 / 32)},
      // nvfp4: amax pass, two 4-bit orientations, an E4M3 scale per 16.
      {"b200", Recipe::Nvfp4, 4e8 + 2 * (0.5e8 + 1e8 / 16)},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.gpu << " " << RecipeName(c.recipe)) {
      const Hardware h = StepHardware(c.gpu);
      k.recipe = c.recipe;
      const double bw = h.gpu.hbm_bytes_per_s * 0.8;
      const QuantizeTimes q = QuantizeTime(k, h);
      CHECK(q.backward == std::llround(c.bytes / bw * 1e9));
      CHECK(q.weight_step == std::llround(c.bytes / bw * 1e9));
      // NVFP4's Hadamard of both wgrad operands (read and write 2N each).
      const double hadamard = c.recipe == Recipe::Nvfp4 ? 4e8 : 0;
      CHECK(q.forward == std::llround((c.bytes + hadamard) / bw * 1e9));
      CHECK(q.hadamard_grad == std::llround(hadamard / bw * 1e9));
    }
  }
  // A norm-fused delayed cast writes only: N + N (Hopper's transpose).
  k = {};
  k.recipe = Recipe::Fp8Delayed;
  k.quantize_input_fused = 1e8;
  const Hardware h100 = StepHardware("h100-sxm");
  CHECK(QuantizeTime(k, h100).forward == std::llround(2e8 / (3350e9 * 0.8) * 1e9));
}

TEST_CASE("one layer's saved inputs and weight copies per recipe", "[precision]") {
  // TP 1, no SP, a tiny layer: h 1024, 16 heads of 64, ffn 4096, s 2048.
  const Architecture a = test::Dense(1024, 4, 16, 16, 4096, 32000);
  Training t;
  t.seq = 2048;
  t.flash_attention = true;
  const std::int64_t sbh = 2048LL * 1024;
  // Linear inputs: QKV and fc1 (the norms' outputs, 2 sbh), the projection
  // (s b a d_v = sbh) and fc2 (s b ffn = 4 sbh): 7 sbh elements.
  const std::int64_t linear = 7 * sbh;
  const std::int64_t bf16 = DecoderActivation(a, t, false).none;
  CHECK(bf16 - DecoderActivation(a, t, false, Recipe::Fp8Tensorwise).none == linear);
  CHECK(bf16 - DecoderActivation(a, t, false, Recipe::Mxfp8).none ==
        std::llround(linear * (2 - 1.03125)));
  CHECK(bf16 - DecoderActivation(a, t, false, Recipe::Nvfp4).none ==
        std::llround(linear * (2 - 0.5625)));
  // Full recompute keeps the layer input in bf16.
  CHECK(DecoderActivation(a, t, false, Recipe::Nvfp4).full ==
        DecoderActivation(a, t, false).full);
  // Weights: QKV 3h^2, proj h^2, fc1 2 h ffn (gated), fc2 h ffn = 16 h^2.
  const double weights = 16.0 * 1024 * 1024;
  for (auto [gpu, recipe, copy] :
       {std::tuple{"h100-sxm", Recipe::Fp8Tensorwise, 2.0},
        std::tuple{"b200", Recipe::Fp8Tensorwise, 1.0},
        std::tuple{"b200", Recipe::Mxfp8, 2 * 1.03125},
        std::tuple{"b200", Recipe::Nvfp4, 2 * 0.5625}}) {
    DYNAMIC_SECTION(gpu << " " << RecipeName(recipe)) {
      const Hardware h = StepHardware(gpu);
      t.low = {};
      const Bytes base = DeriveLayers(a, t, h)[1].layer.static_memory;
      t.low.recipe = recipe;
      const Bytes with = DeriveLayers(a, t, h)[1].layer.static_memory;
      CHECK(with - base == std::llround(weights * copy));
      // fp8_param_gather: the quantized primaries replace the bf16 weight.
      t.low.param_gather = true;
      t.distributed_optimizer = true;
      const Bytes base_do = [&] {
        Training b = t;
        b.low = {};
        return DeriveLayers(a, b, h)[1].layer.static_memory;
      }();
      CHECK(DeriveLayers(a, t, h)[1].layer.static_memory - base_do ==
            std::llround(weights * (copy - 2)));
      t.distributed_optimizer = false;
    }
  }
}

TEST_CASE("groups on a 72-GPU NVLink domain", "[precision][step]") {
  const Gpu& gb = *FindGpu("gb200-nvl72");
  // TP 8 x DP 9 = 72: the DP group (stride 8) stays in the rack.
  const GroupPlacement dp9 = PlaceGroup(9, 8, gb, 72);
  CHECK_FALSE(dp9.crosses_nodes);
  CHECK(dp9.link.bytes_per_s == 900e9);
  CHECK(GroupText("dp", dp9) == "dp 9 in an NVLink domain");
  // TP 8 x DP 16 = 128: ranks r, r + 8, ..., r + 120 leave 9 members in the
  // first rack and 7 in the second; NCCL's rings run through the 7 NICs.
  const GroupPlacement dp16 = PlaceGroup(16, 8, gb, 128);
  CHECK(dp16.crosses_nodes);
  CHECK(dp16.per_node == 7);
  CHECK(dp16.link.bytes_per_s == 7 * 50e9);
  CHECK(dp16.link.latency == gb.inter_latency);
  // TP 16 does not divide 72: the instance on ranks 64..79 straddles two
  // racks (8 and 8), so the group runs at the NICs' pace.
  const GroupPlacement tp16 = PlaceGroup(16, 1, gb, 144);
  CHECK(tp16.crosses_nodes);
  CHECK(tp16.per_node == 8);
  CHECK(tp16.link.bytes_per_s == 400e9);
  // TP 8 divides 72: every instance in a rack.
  CHECK_FALSE(PlaceGroup(8, 1, gb, 144).crosses_nodes);
  // A job of TP 8 x DP 9 x PP 2: pipeline neighbours 72 ranks apart sit in
  // two racks and talk over one NIC.
  Training t;
  t.tp = 8;
  t.dp = 9;
  t.pp = 2;
  const std::vector<Link> links = PipelineLinks(t, gb);
  CHECK(links[0].bandwidth == 50'000'000'000);
  // The same job on an 8-GPU node keeps DP on the NICs, one per node.
  const Gpu& h100 = *FindGpu("h100-sxm");
  const GroupPlacement hdp = PlaceGroup(9, 8, h100, 144);
  CHECK(hdp.crosses_nodes);
  CHECK(hdp.per_node == 1);
}

// An emission's text with its wrapped notes joined ("\n# ppb: " -> " ").
std::string Unwrapped(const std::string& text) {
  const std::string wrap = "\n# ppb: ";
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(wrap); at != std::string::npos; at = text.find(wrap, from)) {
    out.append(text, from, at - from);
    out += ' ';
    from = at + wrap.size();
  }
  out.append(text, from, std::string::npos);
  return out;
}

Result<Emission> EmitMegatron(const RunConfig& cfg) {
  Result<PreparedRun> run = Prepare(cfg);
  if (!run.ok()) return run.error();
  return Emit(Framework::Megatron, cfg, run->program);
}

std::string Job(const std::string& training, const std::string& hardware = "gpu: b200") {
  return "model:\n"
         "  name: tiny\n"
         "  architecture: {hidden_size: 1024, num_layers: 8, num_attention_heads: 16,\n"
         "                 num_key_value_heads: 8, ffn_hidden_size: 4096, vocab_size: 32000}\n"
         "training:\n"
         "  seq_length: 2048\n"
         "  global_batch_size: 8\n" +
         training +
         "hardware: {" + hardware + "}\n"
         "pipeline: {stages: 2}\n";
}

TEST_CASE("low-precision refusals at their line", "[precision]") {
  struct Bad {
    std::string yaml, message;
  };
  const Bad bad[] = {
      {Job("  fp8: {recipe: mxfp8}\n", "gpu: h100-sxm"),
       "job.yaml:8: training.fp8.recipe: must be a recipe the GPU runs: mxfp8 "
       "needs block-scaled (MX) tensor cores: Blackwell (SM100/103) or CDNA 4 "
       "(h100-sxm is Hopper (SM90)); got mxfp8"},
      {Job("  dtype: fp8\n"),
       "job.yaml:8: training.dtype: must be one of bf16, fp16, fp32 (the high-precision "
       "dtype; the linears' fp8 is training.fp8: {recipe: ...} or training.fp4: {recipe: "
       "nvfp4}); got fp8"},
      {Job("  fp8: {recipe: blockwise}\n"),
       "job.yaml:8: training.fp8.recipe: must be a recipe the GPU runs: "
       "fp8-blockwise is Hopper's recipe (TE emulates it with MXFP8 elsewhere: "
       "use mxfp8) (b200 is Blackwell (SM100/103)); got fp8-blockwise"},
      {Job("  fp4: {recipe: nvfp4}\n", "gpu: h200-sxm"),
       "job.yaml:8: training.fp4.recipe: must be a recipe the GPU runs: nvfp4 "
       "needs Blackwell's FP4 tensor cores (SM100/103, TE >= 2.7) (h200-sxm is "
       "Hopper (SM90)); got nvfp4"},
      {Job("  fp8: {recipe: tensorwise}\n", "gpu: a100-sxm4-80gb"),
       "job.yaml:8: training.fp8.recipe: must be a recipe the GPU runs: "
       "fp8-tensorwise needs FP8 tensor cores (SM89 or later) (a100-sxm4-80gb "
       "is Ampere (SM80)); got fp8-tensorwise"},
      {Job("  fp8: {recipe: tensorwise}\n  fp4: {recipe: nvfp4}\n"),
       "job.yaml:9: training.fp4: must not be given with training.fp8 "
       "(Megatron trains the linears in one low precision: --fp8-format or "
       "--fp4-format); got both"},
      {Job("  fp8: {format: e5m2}\n"),
       "job.yaml:8: training.fp8.format: must be one of e4m3, hybrid; got e5m2"},
      {Job("  fp8: {recipe: custom}\n"),
       "job.yaml:8: training.fp8.recipe: must be one of delayed, tensorwise, "
       "blockwise, mxfp8; got custom"},
      {Job("  fp4: {format: e4m3}\n"),
       "job.yaml:8: training.fp4.format: must be one of e2m1; got e4m3"},
      {Job("  fp8: {recipe: delayed}\n  first_last_layers_bf16: {start: 1, end: 1}\n"),
       "job.yaml:9: training.first_last_layers_bf16: must not be given with "
       "the delayed recipe (Megatron refuses --first-last-layers-bf16 with "
       "--fp8-recipe delayed); got it with delayed"},
      {Job("  first_last_layers_bf16: {start: 1}\n"),
       "job.yaml:8: training.first_last_layers_bf16: must be given with "
       "training.fp8 or training.fp4 (it keeps edge layers out of low "
       "precision); got it without either"},
      {Job("  fp8: {recipe: mxfp8}\n  first_last_layers_bf16: {start: 5, end: 4}\n"),
       "job.yaml:9: training.first_last_layers_bf16: must keep at most the "
       "model's 8 layers in bf16 (start + end); got 5 + 4"},
      {Job("  fp8: {recipe: mxfp8}\n  fp8_param_gather: true\n"),
       "job.yaml:9: training.fp8_param_gather: must be given with "
       "training.distributed_optimizer: true or an FSDP (Megatron gathers FP8 parameters "
       "in the distributed optimizer); got true without either"},
      {Job("  fp8: {recipe: tensorwise}\n", "peak_tflops: 989, memory: 80GiB"),
       "job.yaml:8: training.fp8: must be given with hardware.gpu (a preset "
       "with its FP8 and FP4 peaks: the step model prices low precision); got "
       "it with hardware.peak_tflops alone"},
      {Job("", "gpu: gb200"),
       "job.yaml:8: hardware.gpu: must be one of a100-sxm4-40gb, "
       "a100-sxm4-80gb, h100-sxm, h200-sxm, b200, b300, gb200-nvl72, "
       "gb300-nvl72, mi300x, mi355x; got gb200"},
      {Job("  tensor_parallel: 8\n", "gpu: gb200-nvl72, nvlink_domain: 6"),
       "job.yaml:8: training.tensor_parallel: must fit in an NVLink domain "
       "(hardware.nvlink_domain = 6; set training.tp_across_nodes: true to "
       "let its all-reduces cross the NICs); got 8"},
      {Job("", "gpu: gb200-nvl72, nvlink_domain: 5000"),
       "job.yaml:8: hardware.nvlink_domain: must be a positive integer, at most 1024 (GPUs "
       "that share NVLink); got 5000"},
      {Job("  fp8: {recipe: mxfp8}\n  first_last_layers_bf16: {start: 2147483647, end: "
           "2147483647}\n"),
       "job.yaml:9: training.first_last_layers_bf16: must keep at most the model's 8 layers "
       "in bf16 (start + end); got 2147483647 + 2147483647"},
  };
  for (const Bad& b : bad) {
    DYNAMIC_SECTION(b.message) {
      Result<RunConfig> r = ParseConfig(b.yaml, "job.yaml", {});
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().message == b.message);
    }
  }
}

TEST_CASE("a low-precision job loads, reports and emits", "[precision]") {
  Result<RunConfig> cfg = ParseConfig(
      Job("  data_parallel: 2\n  distributed_optimizer: true\n"
          "  fp8: {format: e4m3, recipe: mxfp8}\n  fp8_param_gather: true\n"
          "  first_last_layers_bf16: {start: 1, end: 2}\n",
          "gpu: gb200-nvl72"),
      "job.yaml", {});
  REQUIRE(cfg.ok());
  const Training& t = cfg->training;
  CHECK(t.low.recipe == Recipe::Mxfp8);
  CHECK_FALSE(t.low.hybrid);
  CHECK(t.low.bf16_start == 1);
  CHECK(t.low.bf16_end == 2);
  // The distributed optimizer gathers MXFP8 primaries: 1 + 1/32 bytes per
  // parameter against 4 bytes of gradient.
  CHECK(cfg->shape.tail.param_per_grad == Approx(1.03125 / 4));
  // decoder.0 and decoder.6-7 in bf16, decoder.1-5 in mxfp8.
  CHECK(cfg->derived[1].kernels.recipe == Recipe::None);
  CHECK(cfg->derived[2].kernels.recipe == Recipe::Mxfp8);
  CHECK(cfg->derived[6].kernels.recipe == Recipe::Mxfp8);
  CHECK(cfg->derived[7].kernels.recipe == Recipe::None);
  Result<Emission> e = EmitMegatron(*cfg);
  REQUIRE(e.ok());
  // Megatron's reader takes every flag written.
  CHECK(ParseMegatronArgs(e->text, cfg->layers).ok());
  for (const char* flag :
       {"--fp8-format e4m3\n", "--fp8-recipe mxfp8\n", "--fp8-param-gather\n",
        "--reuse-grad-buf-for-mxfp8-param-ag\n",
        "--first-last-layers-bf16\n", "--num-layers-at-start-in-bf16 1\n",
        "--num-layers-at-end-in-bf16 2\n"}) {
    CHECK(e->text.find(flag) != std::string::npos);
  }
  // Megatron's default recipe is delayed, the format hybrid.
  Result<RunConfig> d = ParseConfig(Job("  fp8: {}\n", "gpu: h100-sxm"), "job.yaml", {});
  REQUIRE(d.ok());
  CHECK(d->training.low.recipe == Recipe::Fp8Delayed);
  CHECK(d->training.low.hybrid);
  Result<Emission> de = EmitMegatron(*d);
  REQUIRE(de.ok());
  CHECK(de->text.find("--fp8-format hybrid\n--fp8-recipe delayed\n") != std::string::npos);
  // FP4.
  Result<RunConfig> f = ParseConfig(Job("  fp4: {format: e2m1, recipe: nvfp4}\n"), "job.yaml", {});
  REQUIRE(f.ok());
  Result<Emission> fe = EmitMegatron(*f);
  REQUIRE(fe.ok());
  CHECK(fe->text.find("--fp4-format e2m1\n--fp4-recipe nvfp4\n") != std::string::npos);
  // torchtitan main: the quantization converters, or what it cannot say.
  Result<RunConfig> tw = ParseConfig(
      Job("  fp8: {recipe: tensorwise}\n", "gpu: h100-sxm"), "job.yaml", {});
  REQUIRE(tw.ok());
  Result<PreparedRun> tw_run = Prepare(*tw);
  REQUIRE(tw_run.ok());
  Result<Emission> tt = Emit(Framework::Torchtitan, *tw, tw_run->program);
  REQUIRE(tt.ok());
  // main's Float8LinearConverter scales per row only (b5bcd76c); v0.2.2's
  // job config names its tensorwise converter.
  CHECK(Unwrapped(tt->text).find("cannot express fp8-tensorwise: torchtitan main's "
                                 "Float8LinearConverter scales per row only") !=
        std::string::npos);
  Result<Emission> tt022 = Emit(Framework::Torchtitan022, *tw, tw_run->program);
  REQUIRE(tt022.ok());
  CHECK(tt022->text.find("converters = [\"quantize.linear.float8\"]\n") != std::string::npos);
  Result<PreparedRun> d_run = Prepare(*d);
  REQUIRE(d_run.ok());
  Result<Emission> tt_delayed = Emit(Framework::Torchtitan, *d, d_run->program);
  REQUIRE(tt_delayed.ok());
  CHECK(Unwrapped(tt_delayed->text).find("cannot express fp8-delayed") != std::string::npos);
  Result<Emission> ds = Emit(Framework::DeepSpeed, *d, d_run->program);
  REQUIRE(ds.ok());
  CHECK(Unwrapped(ds->text).find("cannot express the linears' fp8-delayed") != std::string::npos);
  // On this small layer (h 1024, 2,048 tokens) NVFP4's GEMMs are faster
  // but its quantize kernels cost more than they save: the forward is
  // slower than BF16's (TE's gemm_profiling.rst: small GEMMs "may see zero
  // benefit -- or even a slowdown"). Weights grow, saved inputs shrink.
  Result<RunConfig> b = ParseConfig(Job(""), "job.yaml", {});
  REQUIRE(b.ok());
  const KernelTimes& fp4 = f->derived[2].times;
  Nanos bf16_gemms = 0;
  for (const Gemm& g : b->derived[2].kernels.gemms) bf16_gemms += GemmTime(g, b->hardware);
  CHECK(fp4.low_gemm_forward < bf16_gemms);
  CHECK(fp4.low_gemm_forward + fp4.quantize_forward > bf16_gemms);
  // Both forwards are bound by their launches on this small a layer (the
  // host issues each kernel in 10 us; docs/model.md "Costs per
  // micro-batch"): NVFP4 gains nothing.
  CHECK(b->derived[2].layer.forward == b->derived[2].times.host_forward);
  CHECK(f->derived[2].layer.forward >= b->derived[2].layer.forward);
  CHECK(f->derived[2].layer.static_memory > b->derived[2].layer.static_memory);
  CHECK(f->derived[2].layer.activation < b->derived[2].layer.activation);
}

}  // namespace
}  // namespace ppb
