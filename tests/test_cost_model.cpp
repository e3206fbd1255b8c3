// The symbolic cost model (core/cost_model.h): parameter totals against the
// published ones (conventions.md), activation memory against the closed
// forms of formulas.md §3 [K22 Table 2] computed by hand, FLOPs against
// [Q24 Table 1], and the derived layer list.
#include <catch2/catch.hpp>
#include <cstdint>

#include "core/cost_model.h"
#include "tests/cost_models.h"

namespace ppb {
namespace {

using test::Dense;

TEST_CASE("parameter totals equal the published exact ones", "[cost]") {
  CHECK(TotalParams(test::Qwen25_72B(), false) == 72'706'203'648);
  CHECK(TotalParams(test::Llama2_7B(), false) == 6'738'415'616);
  CHECK(TotalParams(test::Llama3_8B(), false) == 8'030'261'248);
}

TEST_CASE("parameter totals within 0.5% of the published ones", "[cost]") {
  struct Case {
    const char* name;
    Architecture arch;
    double published;
  };
  const Case cases[] = {
      {"Llama-2-70B", test::Llama2_70B(), 68.98e9},
      {"Llama-3-70B", test::Llama3_70B(), 70.55e9},
      {"Llama-3.1-405B", test::Llama31_405B(), 405.85e9},
      {"GPT-3 175B", test::Gpt3_175B(), 174.6e9},
      {"Mixtral-8x7B", test::Mixtral_8x7B(), 46.70e9},
      {"DeepSeek-V3", test::DeepSeekV3(), 671.0e9},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const double total = static_cast<double>(TotalParams(c.arch, false));
    CHECK(std::abs(total - c.published) / c.published < 0.005);
  }
}

TEST_CASE("MoE layouts: dense-first, moe_layer_freq, Qwen sparse step",
          "[cost]") {
  Architecture a = test::DeepSeekV3();
  CHECK_FALSE(a.IsMoeLayer(2));
  CHECK(a.IsMoeLayer(3));
  // Dense and MoE layers: similar per-token compute, ~20x the parameters
  // (conventions.md "Imbalance facts").
  const double ratio =
      static_cast<double>(DecoderLayerParams(a, 3).total()) /
      static_cast<double>(DecoderLayerParams(a, 0).total());
  CHECK(ratio > 15);
  CHECK(ratio < 25);
  Training t;
  t.seq = 4096;
  const double flops_ratio = DecoderLayerFlops(a, t, 3).matmul /
                             DecoderLayerFlops(a, t, 0).matmul;
  CHECK(flops_ratio == Approx(1.0).epsilon(0.1));
  // MTP layer: an MoE layer plus eh_proj and three norms.
  CHECK(MtpLayerParams(a).total() ==
        DecoderLayerParams(a, 3).total() + 2 * 7168 * 7168 + 3 * 7168);

  Architecture q = Dense(64, 6, 4, 4, 256, 100);
  q.experts = 4;
  q.top_k = 2;
  q.expert_ffn = 32;
  q.moe_layout.decoder_sparse_step = 2;
  q.moe_layout.mlp_only_layers = {3};
  // (i + 1) % 2 == 0 and not 3: layers 1 and 5.
  CHECK_FALSE(q.IsMoeLayer(0));
  CHECK(q.IsMoeLayer(1));
  CHECK_FALSE(q.IsMoeLayer(3));
  CHECK(q.IsMoeLayer(5));
  Architecture f = q;
  f.moe_layout = {};
  f.moe_layout.first_k_dense = 1;
  f.moe_layout.moe_layer_freq = 2;
  CHECK_FALSE(f.IsMoeLayer(0));
  CHECK_FALSE(f.IsMoeLayer(1));
  CHECK(f.IsMoeLayer(2));
  CHECK_FALSE(f.IsMoeLayer(3));
}

// The [K22] shape: a = kv, a·d = h, ffn = 4h, non-gated MLP, 2-byte
// activations. s = 8, b = 2, h = 16, a = 4: sbh = 256, as²b = 512.
Architecture K22Shape() {
  Architecture a = Dense(16, 2, 4, 4, 64, 100);
  a.gated_mlp = false;
  return a;
}

Training Small(int tp, bool sp) {
  Training t;
  t.seq = 8;
  t.micro_batch = 2;
  t.tp = tp;
  t.sp = sp;
  return t;
}

TEST_CASE("activation memory equals formulas.md §3 by hand", "[cost]") {
  const Architecture a = K22Shape();
  const std::int64_t sbh = 256;
  const std::int64_t as2b = 512;
  SECTION("no parallelism: sbh(34 + 5as/h); selective 34sbh; full 2sbh") {
    const Activation x = DecoderActivation(a, Small(1, false), false);
    CHECK(x.none == 34 * sbh + 5 * as2b);  // 11264
    CHECK(x.none == 11264);
    CHECK(x.selective == 34 * sbh);
    CHECK(x.full == 2 * sbh);
  }
  SECTION("tensor parallel t=2: sbh(10 + 24/t + 5as/(ht))") {
    const Activation x = DecoderActivation(a, Small(2, false), false);
    CHECK(x.none == 10 * sbh + 24 * sbh / 2 + 5 * as2b / 2);  // 6912
    CHECK(x.none == 6912);
    CHECK(x.selective == 10 * sbh + 24 * sbh / 2);  // 5632
    CHECK(x.full == 2 * sbh);
  }
  SECTION("tensor + sequence parallel t=2: (sbh/t)(34 + 5as/h)") {
    const Activation x = DecoderActivation(a, Small(2, true), false);
    CHECK(x.none == (34 * sbh + 5 * as2b) / 2);  // 5632
    CHECK(x.selective == 34 * sbh / 2);          // 4352
    CHECK(x.full == 2 * sbh / 2);  // the sequence-parallel input shard
  }
  SECTION("t=4 with and without sp") {
    const Activation tp = DecoderActivation(a, Small(4, false), false);
    CHECK(tp.none == 10 * sbh + 24 * sbh / 4 + 5 * as2b / 4);
    CHECK(tp.selective == 10 * sbh + 24 * sbh / 4);
    const Activation sp = DecoderActivation(a, Small(4, true), false);
    CHECK(sp.none == (34 * sbh + 5 * as2b) / 4);
    CHECK(sp.selective == 34 * sbh / 4);
    CHECK(sp.full == 2 * sbh / 4);
  }
  SECTION("general FFN width: sbh(18 + 4 ffn/h) without the core") {
    Architecture w = a;
    w.ffn = 48;  // 3h
    const Activation x = DecoderActivation(w, Small(1, false), false);
    CHECK(x.selective == sbh * (18 + 4 * 48 / 16));
  }
}

TEST_CASE("FLOPs split as [Q24 Table 1]: F, B = I, W", "[cost]") {
  const Architecture a = K22Shape();
  const Training t = Small(1, false);
  const double s = 8, b = 2, h = 16;
  const Flops f = DecoderLayerFlops(a, t, 0);
  CHECK(f.forward() == Approx(s * b * h * (24 * h + 4 * s)));
  CHECK(f.backward_input() == Approx(s * b * h * (24 * h + 8 * s)));
  CHECK(f.backward_weight() == Approx(24 * s * b * h * h));
  CHECK(f.backward_input() + f.backward_weight() ==
        Approx(2 * f.forward()));
}

TEST_CASE("bytes per parameter follow Megatron's estimator", "[cost]") {
  CHECK(BytesPerParam(false, 8) == 18.0);
  CHECK(BytesPerParam(true, 1) == 18.0);
  CHECK(BytesPerParam(true, 4) == 9.0);
  // Adam keeps 12 B of fp32 state (ZeRO §3.1 K = 12), SGD with momentum 8.
  CHECK(OptimizerStateBytes(Optimizer::Adam) == 12);
  CHECK(OptimizerStateBytes(Optimizer::Sgd) == 8);
  CHECK(BytesPerParam(Optimizer::Adam, false, 8) == 18.0);
  CHECK(BytesPerParam(Optimizer::Sgd, false, 8) == 14.0);
  CHECK(BytesPerParam(Optimizer::Sgd, true, 4) == 8.0);
  CHECK(BytesPerParam(Optimizer::Adam, true, 4) == 9.0);
}

TEST_CASE("optimizer: SGD with momentum needs 4 fewer bytes per param",
          "[cost]") {
  const Architecture a = test::Llama3_8B();
  Training t;
  t.seq = 1024;
  t.tp = 2;
  Hardware hw;
  hw.peak_tflops = 1000;
  REQUIRE(ValidateCostInputs(a, t, hw).ok());
  const std::vector<DerivedLayer> adam = DeriveLayers(a, t, hw);
  t.optimizer = Optimizer::Sgd;
  const std::vector<DerivedLayer> sgd = DeriveLayers(a, t, hw);
  REQUIRE(adam.size() == sgd.size());
  for (size_t i = 0; i < adam.size(); ++i) {
    INFO(adam[i].layer.name);
    const double per_rank = static_cast<double>(adam[i].params.total()) / 2;
    CHECK(adam[i].layer.static_memory == std::llround(per_rank * 18));
    CHECK(sgd[i].layer.static_memory == std::llround(per_rank * 14));
    CHECK(sgd[i].layer.forward == adam[i].layer.forward);
    CHECK(sgd[i].layer.activation == adam[i].layer.activation);
  }
  CHECK(sgd[1].provenance.find("SGD momentum 8") != std::string::npos);
  // Distributed over dp 4: 6 + 8/4 = 8 B/param.
  t.dp = 4;
  t.distributed_optimizer = true;
  const std::vector<DerivedLayer> sharded = DeriveLayers(a, t, hw);
  CHECK(sharded[1].layer.static_memory ==
        std::llround(static_cast<double>(sharded[1].params.total()) / 2 * 8));
}

TEST_CASE("DeriveLayers: order, kinds, times, memory, provenance",
          "[cost]") {
  const Architecture a = test::Llama3_8B();
  Training t;
  t.seq = 4096;
  t.micro_batch = 1;
  t.tp = 2;
  t.sp = true;
  t.dp = 4;
  t.distributed_optimizer = true;
  Hardware hw;
  hw.peak_tflops = 1000;
  hw.achievable_fraction = 0.5;
  REQUIRE(ValidateCostInputs(a, t, hw).ok());
  const std::vector<DerivedLayer> d = DeriveLayers(a, t, hw);
  REQUIRE(d.size() == 34);
  CHECK(d.front().layer.kind == LayerKind::Embedding);
  CHECK(d.front().layer.name == "embedding");
  CHECK(d[1].layer.name == "decoder.0");
  CHECK(d[1].layer.kind == LayerKind::Decoder);
  CHECK(d.back().layer.kind == LayerKind::Head);

  const DerivedLayer& dec = d[1];
  // 2*weights*tokens + core, / (tp * 500 TFLOP/s).
  const double weights = 2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 +
                         3.0 * 4096 * 14336;
  const double fwd = 2 * weights * 4096 + 2.0 * 4096 * 4096 * 32 * 256;
  CHECK(dec.layer.forward == std::llround(fwd / 2 / 5e5));
  CHECK(dec.layer.backward_input + dec.layer.backward_weight ==
        Approx(2 * dec.layer.forward).margin(2));
  // Static: params / tp x (6 + 12/4) bytes.
  CHECK(dec.layer.static_memory ==
        std::llround(static_cast<double>(dec.params.total()) / 2 * 9));
  CHECK(dec.layer.output_bytes == 2 * 4096 * 4096 / 2);
  REQUIRE(dec.layer.recompute.size() == 2);
  CHECK(dec.layer.recompute[0].name == "selective");
  CHECK(dec.layer.recompute[1].name == "full");
  CHECK(dec.layer.recompute[1].retained_activation == 2 * 4096 * 4096 / 2);
  CHECK(dec.layer.recompute[1].extra_time == dec.layer.forward);
  CHECK(dec.provenance.find("[N21 §5.1]") != std::string::npos);
  CHECK(dec.provenance.find("[K22 Table 2, tp+sp]") != std::string::npos);

  // The head: fp32 logits 4*s*b*V/tp (~2 GiB at tp 1, conventions.md);
  // it costs ~2.4 decoder layers on Llama-3-8B.
  const DerivedLayer& head = d.back();
  CHECK(head.layer.workspace == 4LL * 4096 * 128256 / 2);
  CHECK(head.layer.output_bytes == 0);
  const double head_ratio = static_cast<double>(head.layer.forward) /
                            static_cast<double>(dec.layer.forward);
  CHECK(head_ratio > 2.0);
  CHECK(head_ratio < 2.6);

  std::int64_t params = 0;
  for (const DerivedLayer& x : d) params += x.params.total();
  CHECK(params == 8'030'261'248);
}

TEST_CASE("DeriveLayers: MoE and MTP layers of DeepSeek-V3", "[cost]") {
  const Architecture a = test::DeepSeekV3();
  Training t;
  t.seq = 4096;
  t.tp = 2;
  t.ep = 8;
  t.dp = 8;
  Hardware hw;
  hw.peak_tflops = 989;
  hw.achievable_fraction = 0.4;
  REQUIRE(ValidateCostInputs(a, t, hw).ok());
  const std::vector<DerivedLayer> d = DeriveLayers(a, t, hw);
  REQUIRE(d.size() == 1 + 61 + 1 + 1);
  CHECK(d[3].layer.kind == LayerKind::Decoder);
  CHECK(d[4].layer.kind == LayerKind::Moe);
  CHECK(d[62].layer.kind == LayerKind::Mtp);
  // Experts are spread over tp * ep.
  const DerivedLayer& moe = d[4];
  CHECK(moe.layer.static_memory ==
        std::llround(static_cast<double>(moe.params.dense) / 2 * 18 +
                     static_cast<double>(moe.params.expert) / 16 * 18));
}

TEST_CASE("ValidateCostInputs names the field", "[cost]") {
  Architecture a = test::Llama3_8B();
  Training t;
  t.seq = 4096;
  Hardware hw;
  hw.peak_tflops = 100;
  t.tp = 3;
  Status s = ValidateCostInputs(a, t, hw);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().key == "training.tp");
  t.tp = 1;
  a.kv_heads = 5;
  s = ValidateCostInputs(a, t, hw);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().key == "architecture.kv_heads");
  a.kv_heads = 8;
  hw.peak_tflops = 0;
  s = ValidateCostInputs(a, t, hw);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().key == "hardware.peak_tflops");
}

}  // namespace
}  // namespace ppb
