// The models trained in 2026 that are not plain transformers (issue 44):
// GPT-OSS, Nemotron-H and Nemotron 3, Qwen3-Next, Llama 4, GLM-4.5 and
// Kimi K2 from their public config.json (configs/hf/), their parameter
// totals from the HF modeling files' shapes written out by hand here, and
// each new layer kind's FLOPs and memory by hand (core/mixers.h).
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "apps/input/hf_config.h"
#include "core/cost_model.h"
#include "core/mixers.h"

namespace ppb {
namespace {

using I64 = std::int64_t;

Architecture Shipped(const std::string& name) {
  const std::string path = std::string(PPB_CONFIGS_DIR) + "/hf/" + name;
  Result<Architecture> a = LoadHfConfig(path);
  INFO(name);
  if (!a.ok()) FAIL(FormatHfError(name, a.error()));
  return *a;
}

double Rel(I64 x, double published) {
  return std::abs(static_cast<double>(x) / published - 1);
}

TEST_CASE("hybrid: GPT-OSS-120B, sinks, biases and alternating windows", "[cost]") {
  const Architecture a = Shipped("gpt-oss-120b.json");
  CHECK(a.experts == 128);
  CHECK(a.top_k == 4);
  CHECK(a.sliding_window == 128);
  CHECK(a.Block(0).span == Span::Sliding);
  CHECK(a.Block(1).span == Span::Full);
  CHECK(a.Block(35).span == Span::Full);
  // One layer by hand [HF modeling_gpt_oss.py]: q, k, v, o with biases,
  // 64 sinks, router 2880 x 128 + bias, 128 experts with gate_up
  // 2880 x 5760 (+5760 bias) and down 2880 x 2880 (+2880 bias), two norms.
  const I64 h = 2880;
  const I64 attention = h * 4096 + 4096 + 2 * (h * 512 + 512) + 4096 * h + h + 64;
  const I64 moe = h * 128 + 128 + 128 * (h * 5760 + 5760 + 2880 * h + h);
  CHECK(DecoderLayerParams(a, 0).total() == attention + moe + 2 * h);
  // The model card's 116.83B.
  const I64 total = 36 * (attention + moe + 2 * h) + 2 * 201088 * h + h;
  CHECK(total == 116'829'156'672);
  CHECK(TotalParams(a, false) == total);
}

TEST_CASE("hybrid: Nemotron-H-56B's Mamba-2, attention and MLP blocks", "[cost]") {
  const Architecture a = Shipped("nemotron-h-56b.json");
  CHECK(a.layers == 118);
  CHECK(a.Block(0).mixer == Mixer::Mamba2);
  CHECK_FALSE(a.HasMlp(0));
  CHECK(a.Block(1).mixer == Mixer::None);
  CHECK(a.HasMlp(1));
  CHECK(a.Block(7).mixer == Mixer::Attention);
  CHECK_FALSE(a.gated_mlp);  // relu2
  // [HF modeling_nemotron_h.py] Mamba-2 block: in_proj h x (2*16384 +
  // 2*8*256 + 256), conv1d (16384 + 4096) x 4 + bias, dt_bias, A_log, D,
  // gated norm 16384, out_proj 16384 x h, one norm h.
  const I64 h = 8192;
  const I64 mamba = h * (2 * 16384 + 2 * 8 * 256 + 256) + 20480 * 4 + 20480 +
                    3 * 256 + 16384 + 16384 * h + h;
  const I64 attention = 2 * h * 64 * 128 + 2 * h * 8 * 128 + h;
  const I64 mlp = 2 * h * 32768 + h;
  CHECK(DecoderLayerParams(a, 0).total() == mamba);
  CHECK(DecoderLayerParams(a, 7).total() == attention);
  CHECK(DecoderLayerParams(a, 1).total() == mlp);
  // 54 M, 10 *, 54 - blocks; untied 131072-row embedding and head.
  const I64 total = 54 * mamba + 10 * attention + 54 * mlp + 2 * 131072 * h + h;
  CHECK(TotalParams(a, false) == total);
  CHECK(Rel(total, 56e9) < 0.01);  // "Nemotron-H-56B"
}

TEST_CASE("hybrid: Nemotron 3 Nano's MoE blocks", "[cost]") {
  const Architecture a = Shipped("nemotron-3-nano-30b-a3b.json");
  CHECK(a.experts == 128);
  CHECK(a.top_k == 6);
  CHECK(a.IsMoeLayer(1));
  CHECK_FALSE(a.IsMoeLayer(0));
  const I64 h = 2688;
  const I64 mamba = h * (2 * 4096 + 2 * 8 * 128 + 64) + 6144 * 4 + 6144 + 3 * 64 +
                    4096 + 4096 * h + h;
  const I64 attention = 2 * h * 32 * 128 + 2 * h * 2 * 128 + h;
  // Router with its score-correction bias, 128 squared-ReLU experts (two
  // matrices), the shared expert of 3712.
  const I64 moe = h * 128 + 128 + 128 * 2 * h * 1856 + 2 * h * 3712 + h;
  CHECK(DecoderLayerParams(a, 1).total() == moe);
  const I64 total = 23 * mamba + 6 * attention + 23 * moe + 2 * 131072 * h + h;
  CHECK(TotalParams(a, false) == total);
  CHECK(Rel(total, 31.6e9) < 0.005);  // the model card's 31.6B
}

TEST_CASE("hybrid: Qwen3-Next's gated DeltaNet and gated attention", "[cost]") {
  const Architecture a = Shipped("qwen3-next-80b-a3b.json");
  CHECK(a.Block(0).mixer == Mixer::GatedDeltaNet);
  CHECK(a.Block(3).mixer == Mixer::Attention);  // every 4th
  CHECK(a.attention_out_gate);
  const I64 h = 2048;
  // q_proj emits queries and the gate (2 x 16 x 256), k and v 2 x 256,
  // o_proj, q_norm and k_norm.
  const I64 attention = h * 16 * 256 * 2 + 2 * h * 2 * 256 + 16 * 256 * h + 2 * 256;
  // in_proj_qkvz h x (2*2048 + 2*4096), in_proj_ba h x 64, conv1d 8192 x 4,
  // dt_bias and A_log 32 each, gated norm 128, out_proj 4096 x h.
  const I64 deltanet = h * 12288 + h * 64 + 8192 * 4 + 64 + 128 + 4096 * h;
  CHECK(MixerParams(a, Mixer::GatedDeltaNet) == deltanet);
  const I64 moe = h * 512 + 512 * 3 * h * 512 + 3 * h * 512 + h;
  const I64 total = 12 * (attention + 2 * h + moe) + 36 * (deltanet + 2 * h + moe) +
                    2 * 151936 * h + h;
  CHECK(TotalParams(a, false) == total);
  CHECK(Rel(total, 80e9) < 0.005);  // "80B in total"
}

TEST_CASE("hybrid: Llama 4 Scout, GLM-4.5 and Kimi K2", "[cost]") {
  const Architecture scout = Shipped("llama4-scout.json");
  CHECK(scout.attention_chunk == 8192);
  CHECK(scout.Block(0).span == Span::Chunked);
  CHECK(scout.Block(3).span == Span::Full);  // NoPE layers see every key
  CHECK(scout.IsMoeLayer(0));
  I64 h = 5120;
  // 16 routed experts and a shared one of 8192, router without bias; L2
  // qk norm has no weights.
  const I64 scout_total =
      48 * (2 * h * 40 * 128 + 2 * h * 8 * 128 + 2 * h + h * 16 +
            17 * 3 * h * 8192) +
      2 * 202048 * h + h;
  CHECK(TotalParams(scout, false) == scout_total);
  // The text model of "109B total" (the rest is the vision encoder).
  CHECK(Rel(scout_total, 109e9) < 0.015);

  const Architecture glm = Shipped("glm4.5.json");
  CHECK(glm.qk_norm);
  CHECK(glm.qkv_bias);
  CHECK_FALSE(glm.IsMoeLayer(2));
  CHECK(glm.IsMoeLayer(3));
  CHECK(glm.mtp_layers == 1);
  h = 5120;
  const I64 glm_attention =
      2 * h * 96 * 128 + 2 * h * 8 * 128 + 96 * 128 + 2 * 8 * 128 + 2 * 128 + 2 * h;
  const I64 glm_total = 92 * glm_attention + 3 * 3 * h * 12288 +
                        89 * (h * 160 + 160 + 161 * 3 * h * 1536) +
                        2 * 151552 * h + h;
  CHECK(TotalParams(glm, false) == glm_total);
  CHECK(Rel(glm_total, 355e9) < 0.01);  // "355 billion total parameters"

  const Architecture kimi = Shipped("kimi-k2.json");
  CHECK(kimi.mla());
  CHECK(kimi.experts == 384);
  h = 7168;
  const I64 mla = h * 1536 + 1536 * 64 * 192 + h * (512 + 64) + 512 * 64 * 256 +
                  64 * 128 * h + 1536 + 512 + 2 * h;
  const I64 kimi_total = 61 * mla + 3 * h * 18432 +
                         60 * (h * 384 + 384 + 385 * 3 * h * 2048) +
                         2 * 163840 * h + h;
  CHECK(TotalParams(kimi, false) == kimi_total);
  CHECK(Rel(kimi_total, 1.03e12) < 0.01);
}

Training Seq(I64 s) {
  Training t;
  t.seq = s;
  t.micro_batch = 1;
  t.flash_attention = true;
  return t;
}

TEST_CASE("hybrid: window and chunk FLOPs by hand", "[cost]") {
  const Architecture a = Shipped("gpt-oss-120b.json");
  const Training t = Seq(4096);
  // Sliding 128 of 4096: (128*4096 - 128^2/2) / (4096^2/2) of the pairs.
  const double share = (128.0 * 4096 - 128.0 * 128 / 2) / (4096.0 * 4096 / 2);
  CHECK(SpanShare(a, Span::Sliding, 4096) == Approx(share).epsilon(1e-12));
  const double full = 2.0 * 4096 * 4096 * 64 * (64 + 64);
  CHECK(DecoderLayerFlops(a, t, 1).attention == Approx(full).epsilon(1e-12));
  CHECK(DecoderLayerFlops(a, t, 0).attention == Approx(full * share).epsilon(1e-12));
  // Shorter than the window: every pair.
  CHECK(SpanShare(a, Span::Sliding, 100) == 1.0);

  const Architecture scout = Shipped("llama4-scout.json");
  // 16384 tokens in chunks of 8192: half the causal pairs; at 8192 all.
  CHECK(SpanShare(scout, Span::Chunked, 16384) == 0.5);
  CHECK(SpanShare(scout, Span::Chunked, 8192) == 1.0);
}

TEST_CASE("hybrid: Mamba-2 and DeltaNet scans and saved bytes by hand", "[cost]") {
  const Architecture n = Shipped("nemotron-h-56b.json");
  // [M2 §6] 2QNG + H(2QP + 4NP) + the conv's 2k(d_i + 2GN).
  const double scan = 2.0 * 128 * 256 * 8 + 256.0 * (2 * 128 * 64 + 4 * 256 * 64) +
                      2.0 * 4 * (16384 + 2 * 8 * 256);
  CHECK(ScanFlopsPerToken(n, Mixer::Mamba2) == scan);
  Training t = Seq(8192);
  const Flops f = DecoderLayerFlops(n, t, 0);
  CHECK(f.attention == Approx(scan * 8192).epsilon(1e-12));
  CHECK(f.matmul == Approx(2.0 * 8192 * (8192.0 * 37120 + 16384.0 * 8192)).epsilon(1e-12));
  // Saved per token (bf16): norm input and output 2h, in_proj's output
  // 37120, the conv's 20480, the scan's and the gated norm's 2 x 16384,
  // fp32 dt and dA_cumsum 2 x 4 x 256.
  const I64 per_token = 2 * 2 * 8192 + 2 * (37120 + 20480 + 2 * 16384) + 8 * 256;
  CHECK(LayerActivation(n, t, 0).none == 8192 * per_token);
  CHECK(LayerActivation(n, t, 0).full == 8192 * 2 * 8192);
  // TP 4: the split part over 4, the norm's 2h replicated (no SP).
  t.tp = 4;
  CHECK(LayerActivation(n, t, 0).none ==
        8192 * (2 * 2 * 8192) + 8192 * (per_token - 2 * 2 * 8192) / 4);

  const Architecture q = Shipped("qwen3-next-80b-a3b.json");
  // [GDN §3] per value head 2C(3 d_k + 2 d_v) + 6 d_k d_v, C = 64; conv
  // 2k(2K + V).
  const double gdn = 32.0 * (2 * 64 * (3 * 128 + 2 * 128) + 6 * 128 * 128) +
                     2.0 * 4 * (2 * 2048 + 4096);
  CHECK(ScanFlopsPerToken(q, Mixer::GatedDeltaNet) == gdn);
}

TEST_CASE("hybrid: tensor parallelism must split the mixer's heads", "[cost]") {
  const Architecture a = Shipped("nemotron-3-nano-30b-a3b.json");
  Training t = Seq(4096);
  Hardware h;
  h.peak_tflops = 989;
  t.tp = 16;  // 64 Mamba heads split, 8 groups do not
  const Status s = ValidateCostInputs(a, t, h);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().key == "training.tp");
  CHECK(s.error().message ==
        "must divide the Mamba-2 heads and groups (Megatron splits them over "
        "tensor parallelism; 8 here); got 16");
  t.tp = 2;
  CHECK(ValidateCostInputs(a, t, h).ok());
}

TEST_CASE("hybrid: config errors name the field", "[cost]") {
  Result<Architecture> bad = ParseHfConfig(R"({"model_type": "nemotron_h",
      "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
      "vocab_size": 100, "intermediate_size": 128, "mamba_num_heads": 4,
      "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 2,
      "hybrid_override_pattern": "M*"})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().key == "hybrid_override_pattern");
  CHECK(bad.error().message ==
        "must be 3 characters of M (Mamba-2), * (attention), - (MLP) and E "
        "(MoE), one per layer; got \"M*\"");
  Result<Architecture> types = ParseHfConfig(R"({"model_type": "gpt_oss",
      "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 100, "intermediate_size": 128, "num_local_experts": 4,
      "num_experts_per_tok": 2, "sliding_window": 16,
      "layer_types": ["sliding_attention", "local"]})");
  REQUIRE_FALSE(types.ok());
  CHECK(types.error().key == "layer_types");
  CHECK(types.error().message ==
        "must hold sliding_attention or full_attention per layer; got \"local\"");
}

}  // namespace
}  // namespace ppb
