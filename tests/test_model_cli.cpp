// model.hf_config with training and hardware in the run config, and
// `ppb-sim model` (apps/model_output.h).
#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/input/architecture_writer.h"
#include "apps/input/config.h"
#include "apps/input/hf_config.h"
#include "core/mixers.h"
#include "tests/app_helpers.h"

namespace ppb {
namespace {

using test::Cli;
using test::CliRun;

std::string Configs(const std::string& name) {
  return std::string(PPB_CONFIGS_DIR) + "/" + name;
}

// A run config next to tests/data/hf, written as a string.
std::string HfRun(const std::string& training_extra = "") {
  return "model: {name: l2, hf_config: hf/llama2-7b.json}\n"
         "training:\n"
         "  seq_length: 4096\n"
         "  tensor_parallel: 2\n" +
         training_extra +
         "hardware: {peak_tflops: 400, achievable_fraction: 0.5}\n"
         "cluster: {devices: {memory: 80GiB}}\n"
         "pipeline: {stages: 2, microbatches: 4}\n";
}

Result<RunConfig> ParseHf(const std::string& text) {
  return ParseConfig(text, std::string(PPB_TEST_DATA_DIR) + "/run.yaml", {});
}

TEST_CASE("config: model.hf_config derives the layers", "[cost]") {
  Result<RunConfig> c = ParseHf(HfRun());
  if (!c.ok()) FAIL(c.error().message);
  REQUIRE(c->layers.size() == 34);
  CHECK(c->layers.front().kind == LayerKind::Embedding);
  CHECK(c->layers.back().kind == LayerKind::Head);
  CHECK(c->derived.size() == 34);
  CHECK(c->strategy.layers_per_stage == std::vector<int>{17, 17});
  // 400 TFLOP/s x 0.5 over tp 2: the head's 2*s*b*h*V FLOPs.
  CHECK(c->layers.back().forward ==
        std::llround(2.0 * 4096 * 4096 * 32000 / 2 / 2e5));
}

TEST_CASE("config: hf_config errors name the key and the field", "[cost]") {
  Result<RunConfig> c = ParseHf(
      "model: {hf_config: hf/bad-kv-heads.json}\n"
      "training: {seq_length: 8}\nhardware: {peak_tflops: 1}\n"
      "cluster: {devices: {memory: 1GiB}}\npipeline: {stages: 1, microbatches: 1}\n");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("run.yaml:1: model.hf_config: ") !=
        std::string::npos);
  CHECK(c.error().message.find("bad-kv-heads.json: num_key_value_heads: ") !=
        std::string::npos);

  c = ParseHf(HfRun("  tensor_parallel_size: 2\n"));
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("training.tensor_parallel_size") !=
        std::string::npos);

  c = ParseHf("model: {hf_config: hf/llama2-7b.json}\n"
              "training:\n  seq_length: 8\n  tensor_parallel: 3\n"
              "hardware: {peak_tflops: 1}\n"
              "cluster: {devices: {memory: 1GiB}}\n"
              "pipeline: {stages: 1, microbatches: 1}\n");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("run.yaml:4: training.tensor_parallel: "
                               "must divide the heads (32); got 3") !=
        std::string::npos);

  c = ParseHf("model: {hf_config: hf/llama2-7b.json}\n"
              "training: {seq_length: 8}\n"
              "cluster: {devices: {memory: 1GiB}}\n"
              "pipeline: {stages: 1, microbatches: 1}\n");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("hardware: must be given") != std::string::npos);
}

TEST_CASE("ppb-sim model: text and json, simulate runs", "[cost][cli]") {
  const std::string run = Configs("llama3-8b.yaml");
  CliRun r = Cli({"model", "--config", run});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("decoder.31") != std::string::npos);
  CHECK(r.out.find("total: 8030261248 params") != std::string::npos);
  CHECK(r.out.find("[K22 Table 2, tp+sp]") != std::string::npos);

  r = Cli({"model", "--config", run, "--format", "json"});
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppb.model/1");
  CHECK(j["layers"].size() == 34);
  CHECK(j["totals"]["params"] == 8'030'261'248);
  CHECK(j["layers"][1]["activation_bytes"].contains("selective"));

  r = Cli({"--config", run});
  CHECK(r.status == 0);
  CHECK(r.out.find("every rank fits") != std::string::npos);

  r = Cli({"model", "--config", Configs("example.yaml")});
  CHECK(r.status == 2);
  CHECK(r.err.find("model.hf_config") != std::string::npos);
}


// The Llama-3-8B config.json (tests/data/hf/llama3-8b.json) written inline.
const char kLlama3Inline[] =
    "model:\n"
    "  name: l3\n"
    "  architecture:\n"
    "    hidden_size: 4096\n"
    "    num_layers: 32\n"
    "    num_attention_heads: 32\n"
    "    num_key_value_heads: 8\n"
    "    ffn_hidden_size: 14336\n"
    "    vocab_size: 128256\n"
    "    tie_embeddings: false\n"
    "    gated_mlp: true\n"
    "    qkv_bias: false\n"
    "    norm: rmsnorm\n";

const char kLlama3Rest[] =
    "training:\n"
    "  seq_length: 8192\n"
    "  tensor_parallel: 2\n"
    "  sequence_parallel: true\n"
    "  data_parallel: 8\n"
    "  distributed_optimizer: true\n"
    "hardware: {peak_tflops: 989, achievable_fraction: 0.45}\n"
    "cluster: {devices: {memory: 80GiB}}\n"
    "pipeline: {stages: 4, microbatches: 8}\n";

void CheckSameLayers(const RunConfig& a, const RunConfig& b) {
  REQUIRE(a.layers.size() == b.layers.size());
  REQUIRE(a.derived.size() == b.derived.size());
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const Layer& x = a.layers[i];
    const Layer& y = b.layers[i];
    INFO(x.name);
    CHECK(x.name == y.name);
    CHECK(x.kind == y.kind);
    CHECK(x.forward == y.forward);
    CHECK(x.backward_input == y.backward_input);
    CHECK(x.backward_weight == y.backward_weight);
    CHECK(x.split_backward == y.split_backward);
    CHECK(x.static_memory == y.static_memory);
    CHECK(x.activation == y.activation);
    CHECK(x.workspace == y.workspace);
    CHECK(x.output_bytes == y.output_bytes);
    REQUIRE(x.recompute.size() == y.recompute.size());
    for (size_t k = 0; k < x.recompute.size(); ++k) {
      CHECK(x.recompute[k].name == y.recompute[k].name);
      CHECK(x.recompute[k].retained_activation ==
            y.recompute[k].retained_activation);
      CHECK(x.recompute[k].extra_time == y.recompute[k].extra_time);
    }
    CHECK(a.derived[i].params.total() == b.derived[i].params.total());
    CHECK(a.derived[i].provenance == b.derived[i].provenance);
  }
}

TEST_CASE("config: an inline architecture equals the same config.json",
          "[cost]") {
  Result<RunConfig> inl = ParseHf(std::string(kLlama3Inline) + kLlama3Rest);
  if (!inl.ok()) FAIL(inl.error().message);
  Result<RunConfig> hf = ParseHf(
      "model: {name: l3, hf_config: hf/llama3-8b.json}\n" +
      std::string(kLlama3Rest));
  if (!hf.ok()) FAIL(hf.error().message);
  CHECK(inl->hf_config.empty());
  REQUIRE(inl->layers.size() == 34);
  CheckSameLayers(*inl, *hf);
  std::int64_t total = 0;
  for (const DerivedLayer& d : inl->derived) total += d.params.total();
  CHECK(total == 8'030'261'248);

  // Defaults: num_key_value_heads = heads, gated_mlp, rmsnorm, untied.
  Result<RunConfig> mha = ParseHf(
      "model:\n  architecture: {hidden_size: 4096, num_layers: 32, "
      "num_attention_heads: 32, ffn_hidden_size: 11008, vocab_size: 32000}\n" +
      std::string(kLlama3Rest));
  if (!mha.ok()) FAIL(mha.error().message);
  total = 0;
  for (const DerivedLayer& d : mha->derived) total += d.params.total();
  CHECK(total == 6'738'415'616);  // Llama-2-7B
}

TEST_CASE("config: inline MoE, MLA and MTP match their config.json",
          "[cost]") {
  const std::string rest =
      "training: {seq_length: 4096, tensor_parallel: 2, "
      "expert_parallel: 8}\n"
      "hardware: {peak_tflops: 989}\n"
      "cluster: {devices: {memory: 141GiB}}\n"
      "pipeline: {stages: 4, microbatches: 8}\n";
  Result<RunConfig> inl = ParseHf(
      "model:\n"
      "  architecture:\n"
      "    hidden_size: 7168\n"
      "    num_layers: 61\n"
      "    num_attention_heads: 128\n"
      "    ffn_hidden_size: 18432\n"
      "    vocab_size: 129280\n"
      "    moe: {num_experts: 256, top_k: 8, expert_ffn_hidden_size: 2048,\n"
      "          shared_ffn_hidden_size: 2048, first_k_dense: 3,\n"
      "          router_bias: true}\n"
      "    mla: {q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128,\n"
      "          qk_rope_head_dim: 64, v_head_dim: 128}\n"
      "    mtp_layers: 1\n" +
      rest);
  if (!inl.ok()) FAIL(inl.error().message);
  Result<RunConfig> hf =
      ParseHf("model: {hf_config: hf/deepseek-v3.json}\n" + rest);
  if (!hf.ok()) FAIL(hf.error().message);
  CheckSameLayers(*inl, *hf);
  CHECK(inl->layers[4].kind == LayerKind::Moe);
  CHECK(inl->layers[3].kind == LayerKind::Decoder);
}

// One layer_types list: full attention every `every`-th layer (1-based;
// with `even`, on the odd 0-based ones), `other` on the rest.
std::string LayerTypes(int layers, const std::string& other, int every,
                       bool even = false) {
  std::string out = "[";
  for (int i = 0; i < layers; ++i) {
    const bool full =
        even ? i % 2 == 1 : (every > 0 && (i + 1) % every == 0);
    out += std::string(i > 0 ? ", " : "") + (full ? "full_attention" : other);
  }
  return out + "]";
}

TEST_CASE("config: inline windowed and chunked layers match their config.json",
          "[cost]") {
  const std::string rest =
      "training: {seq_length: 16384, tensor_parallel: 1, data_parallel: 8,\n"
      "           expert_parallel: 8}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 4, microbatches: 8}\n";
  // GPT-OSS-120B: the even layers slide over 128 keys (layer_types), sinks
  // and biases.
  Result<RunConfig> oss = ParseHf(
      "model:\n  architecture:\n    hidden_size: 2880\n    num_layers: 36\n"
      "    num_attention_heads: 64\n    num_key_value_heads: 8\n"
      "    head_dim: 64\n    vocab_size: 201088\n    qkv_bias: true\n"
      "    attention_out_bias: true\n    attention_sinks: true\n"
      "    layer_types: " +
      LayerTypes(36, "sliding_attention", 0, true) +
      "\n    sliding_window: 128\n"
      "    moe: {num_experts: 128, top_k: 4, expert_ffn_hidden_size: 2880,\n"
      "          router_bias: true, expert_bias: true}\n" +
      rest);
  if (!oss.ok()) FAIL(oss.error().message);
  Result<RunConfig> oss_hf = ParseHf(
      "model: {hf_config: " + Configs("hf/gpt-oss-120b.json") + "}\n" + rest);
  if (!oss_hf.ok()) FAIL(oss_hf.error().message);
  CheckSameLayers(*oss, *oss_hf);
  // At 16,384 tokens a sliding layer's attention core is a small share of
  // a full one's: (w s - w^2 / 2) / (s^2 / 2) with w = 128.
  REQUIRE(oss->architecture.blocks.size() == 36);
  CHECK(oss->architecture.blocks[0].span == Span::Sliding);
  CHECK(oss->architecture.blocks[1].span == Span::Full);
  CHECK(SpanShare(oss->architecture, Span::Sliding, 16384) ==
        Approx((128.0 * 16384 - 128.0 * 128 / 2) / (16384.0 * 16384 / 2)));
  // Llama 4 Scout: chunked attention of 8192 tokens but on every 4th layer
  // (no_rope_layers), one shared expert beside 16 routed ones.
  Result<RunConfig> scout = ParseHf(
      "model:\n  architecture:\n    hidden_size: 5120\n    num_layers: 48\n"
      "    num_attention_heads: 40\n    num_key_value_heads: 8\n"
      "    head_dim: 128\n    ffn_hidden_size: 16384\n"
      "    vocab_size: 202048\n    layer_types: " +
      LayerTypes(48, "chunked_attention", 4) +
      "\n    attention_chunk_size: 8192\n"
      "    moe: {num_experts: 16, top_k: 1, expert_ffn_hidden_size: 8192,\n"
      "          shared_ffn_hidden_size: 8192}\n" +
      rest);
  if (!scout.ok()) FAIL(scout.error().message);
  Result<RunConfig> scout_hf = ParseHf(
      "model: {hf_config: " + Configs("hf/llama4-scout.json") + "}\n" + rest);
  if (!scout_hf.ok()) FAIL(scout_hf.error().message);
  CheckSameLayers(*scout, *scout_hf);
  CHECK(scout->architecture.blocks[3].span == Span::Full);
  CHECK(scout->architecture.blocks[4].span == Span::Chunked);
}

TEST_CASE("config: an inline hybrid layer pattern matches Nemotron-H's config.json",
          "[cost]") {
  const std::string rest =
      "training: {seq_length: 8192, tensor_parallel: 8, data_parallel: 8}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 2, microbatches: 8}\n";
  // Nemotron-H-56B: Megatron's hybrid pattern is the config.json's
  // hybrid_override_pattern; 256 Mamba heads of 64, a 256-wide state.
  const std::string h56 =
      "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-"
      "M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";
  Result<RunConfig> inl = ParseHf(
      "model:\n  architecture:\n    hidden_size: 8192\n    num_layers: 118\n"
      "    num_attention_heads: 64\n    num_key_value_heads: 8\n    head_dim: 128\n"
      "    ffn_hidden_size: 32768\n    vocab_size: 131072\n    gated_mlp: false\n"
      "    hybrid_layer_pattern: \"" + h56 + "\"\n"
      "    mamba: {num_heads: 256, state_dim: 256}\n" + rest);
  if (!inl.ok()) FAIL(inl.error().message);
  Result<RunConfig> hf = ParseHf(
      "model: {hf_config: " + Configs("hf/nemotron-h-56b.json") + "}\n" + rest);
  if (!hf.ok()) FAIL(hf.error().message);
  CheckSameLayers(*inl, *hf);
  CHECK(inl->architecture.mamba == hf->architecture.mamba);
  CHECK(inl->architecture.blocks == hf->architecture.blocks);
  // Nemotron 3 Nano: E blocks of routed experts; Megatron's default Mamba
  // heads (2 x 2688 / 64 = 84) are not the model's 64, so they are given.
  const std::string nano = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
  const std::string nano_rest =
      "training: {seq_length: 8192, tensor_parallel: 2, data_parallel: 8,\n"
      "           expert_parallel: 8}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 2, microbatches: 8}\n";
  Result<RunConfig> moe = ParseHf(
      "model:\n  architecture:\n    hidden_size: 2688\n    num_layers: 52\n"
      "    num_attention_heads: 32\n    num_key_value_heads: 2\n    head_dim: 128\n"
      "    vocab_size: 131072\n    gated_mlp: false\n"
      "    hybrid_layer_pattern: " + nano + "\n"
      "    mamba: {num_heads: 64}\n"
      "    moe: {num_experts: 128, top_k: 6, expert_ffn_hidden_size: 1856,\n"
      "          shared_ffn_hidden_size: 3712, router_bias: true}\n" + nano_rest);
  if (!moe.ok()) FAIL(moe.error().message);
  Result<RunConfig> moe_hf = ParseHf(
      "model: {hf_config: " + Configs("hf/nemotron-3-nano-30b-a3b.json") + "}\n" + nano_rest);
  if (!moe_hf.ok()) FAIL(moe_hf.error().message);
  CheckSameLayers(*moe, *moe_hf);
  CHECK(moe->architecture.mamba == moe_hf->architecture.mamba);
  CHECK(moe->architecture.blocks[1].mlp == MlpKind::Moe);
  CHECK(moe->architecture.blocks[5].mixer == Mixer::Attention);
  // Megatron's defaults (TransformerConfig): 2 x 1024 / 64 = 32 heads of
  // 64, a 128-wide state, 8 groups; MambaMixer's 4-wide convolution.
  Result<RunConfig> small = ParseHf(
      "model:\n  architecture:\n    hidden_size: 1024\n    num_layers: 4\n"
      "    num_attention_heads: 16\n    ffn_hidden_size: 4096\n    vocab_size: 32000\n"
      "    hybrid_layer_pattern: M*M-\n" + rest);
  if (!small.ok()) FAIL(small.error().message);
  const Mamba2Shape& m = small->architecture.mamba;
  CHECK(m.heads == 32);
  CHECK(m.head_dim == 64);
  CHECK(m.state == 128);
  CHECK(m.groups == 8);
  CHECK(m.conv == 4);
  CHECK(m.chunk == 128);
}

TEST_CASE("config: G layers are Megatron's gated DeltaNet blocks, counted by hand", "[cost]") {
  const std::string rest =
      "training: {seq_length: 1024, tensor_parallel: 2, data_parallel: 2}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 1, microbatches: 1}\n";
  Result<RunConfig> c = ParseHf(
      "model:\n  architecture:\n    hidden_size: 256\n    num_layers: 4\n"
      "    num_attention_heads: 4\n    ffn_hidden_size: 512\n    vocab_size: 1000\n"
      "    hybrid_layer_pattern: G*G-\n"
      "    deltanet: {key_heads: 2, value_heads: 4, key_dim: 32, value_dim: 32}\n" + rest);
  if (!c.ok()) FAIL(c.error().message);
  const Architecture& a = c->architecture;
  CHECK(a.Block(0).mixer == Mixer::GatedDeltaNet);
  CHECK(a.Block(0).mlp == MlpKind::None);
  CHECK(a.deltanet.conv == 4);   // Megatron's linear_conv_kernel_dim
  CHECK(a.deltanet.chunk == 64);  // fla's chunk
  // q and k 2 x 32, v and z 4 x 32 wide: in_proj 256 x (64 + 64 + 128 +
  // 128) and beta, alpha 256 x 4 each, out_proj 128 x 256; the conv over
  // q, k, v (256 channels x 4); A_log and dt_bias (4 each), the output
  // norm's 32; the block's RMSNorm 256.
  const std::int64_t in_proj = 256 * 384 + 256 * 8, out_proj = 128 * 256;
  CHECK(DecoderLayerParams(a, 0).total() == in_proj + out_proj + 256 * 4 + 8 + 32 + 256);
  CHECK(DecoderLayerParams(a, 0).total() == DecoderLayerParams(a, 2).total());
  // Megatron's defaults: 16 key and 32 value heads of 128.
  Result<RunConfig> d = ParseHf(
      "model:\n  architecture:\n    hidden_size: 256\n    num_layers: 2\n"
      "    num_attention_heads: 4\n    ffn_hidden_size: 512\n    vocab_size: 1000\n"
      "    hybrid_layer_pattern: G-\n" + rest);
  if (!d.ok()) FAIL(d.error().message);
  CHECK(d->architecture.deltanet.key_heads == 16);
  CHECK(d->architecture.deltanet.value_heads == 32);
  CHECK(d->architecture.deltanet.key_dim == 128);
  CHECK(d->architecture.deltanet.value_dim == 128);
  // TP x CP must divide both head counts, as Megatron asserts (TP alone is
  // checked with every model's mixers).
  Result<RunConfig> tp = ParseHf(
      "model:\n  architecture:\n    hidden_size: 256\n    num_layers: 2\n"
      "    num_attention_heads: 4\n    ffn_hidden_size: 512\n    vocab_size: 1000\n"
      "    hybrid_layer_pattern: G-\n    deltanet: {key_heads: 2, value_heads: 4}\n"
      "training: {seq_length: 1024, tensor_parallel: 2, context_parallel: 2, "
      "data_parallel: 1}\n"
      "hardware: {gpu: h100-sxm}\npipeline: {stages: 1, microbatches: 1}\n");
  REQUIRE_FALSE(tp.ok());
  CHECK_THAT(tp.error().message,
             Catch::Contains("training.tensor_parallel: x context_parallel must divide the gated "
                             "DeltaNet's key heads (2) and value heads (4), as Megatron asserts; "
                             "got 2 x 2"));
  // The architecture writes back as the same layers.
  ConfigWriter o;
  o.Line(0, "model:");
  REQUIRE(WriteArchitecture(o, a, [](std::string_view) { return std::string(); }).ok());
  Result<RunConfig> back = ParseHf(o.yaml_ + rest);
  if (!back.ok()) FAIL(back.error().message);
  CHECK(SameLayers(back->architecture, a));
}

TEST_CASE("config: + layers are Megatron's MLA blocks and the output gate widens QKV", "[cost]") {
  const std::string rest =
      "training: {seq_length: 1024, tensor_parallel: 2, data_parallel: 2}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 1, microbatches: 1}\n";
  const std::string mla =
      "    mla: {q_lora_rank: 64, kv_lora_rank: 32, qk_nope_head_dim: 16,\n"
      "          qk_rope_head_dim: 8, v_head_dim: 16}\n";
  auto load = [&](const std::string& arch) {
    return ParseHf("model:\n  architecture:\n    hidden_size: 256\n"
                   "    num_attention_heads: 4\n    ffn_hidden_size: 512\n"
                   "    vocab_size: 1000\n" + arch + rest);
  };
  // A + block and a - block hold what one MLA transformer layer holds: the
  // attention with its norm, the MLP with its own (Megatron's hybrid
  // blocks each open with a norm).
  Result<RunConfig> hybrid = load("    num_layers: 2\n    hybrid_layer_pattern: +-\n" + mla);
  if (!hybrid.ok()) FAIL(hybrid.error().message);
  Result<RunConfig> plain = load("    num_layers: 1\n" + mla);
  if (!plain.ok()) FAIL(plain.error().message);
  const Architecture& h = hybrid->architecture;
  CHECK(h.Block(0).mixer == Mixer::Attention);
  CHECK_FALSE(h.HasMlp(0));
  CHECK(HybridSymbol(h, 0) == '+');
  CHECK(HybridSymbol(h, 1) == '-');
  // q_down 256 x 64 and its norm 64, q_up 64 x 4 x 24, kv_down 256 x (32 +
  // 8) and its norm 32, kv_up 32 x 4 x (16 + 16), proj 4 x 16 x 256; the
  // block's norm 256.
  const std::int64_t attention =
      256 * 64 + 64 + 64 * 4 * 24 + 256 * 40 + 32 + 32 * 4 * 32 + 4 * 16 * 256 + 256;
  CHECK(DecoderLayerParams(h, 0).total() == attention);
  CHECK(DecoderLayerParams(h, 0).total() + DecoderLayerParams(h, 1).total() ==
        DecoderLayerParams(plain->architecture, 0).total());
  // The gate: linear_qkv also gives heads x head_dim (4 x 64) per token.
  Result<RunConfig> gated = load("    num_layers: 1\n    attention_output_gate: true\n");
  if (!gated.ok()) FAIL(gated.error().message);
  Result<RunConfig> ungated = load("    num_layers: 1\n");
  if (!ungated.ok()) FAIL(ungated.error().message);
  CHECK(DecoderLayerParams(gated->architecture, 0).total() -
            DecoderLayerParams(ungated->architecture, 0).total() ==
        256 * 4 * 64);
  // Both write back as the same layers.
  for (const Architecture* a : {&h, static_cast<const Architecture*>(&gated->architecture)}) {
    ConfigWriter o;
    o.Line(0, "model:");
    REQUIRE(WriteArchitecture(o, *a, [](std::string_view) { return std::string(); }).ok());
    INFO(o.yaml_);
    Result<RunConfig> back = ParseHf(o.yaml_ + rest);
    if (!back.ok()) FAIL(back.error().message);
    CHECK(SameLayers(back->architecture, *a));
  }
  auto error = [&](const std::string& arch) {
    Result<RunConfig> c = load(arch);
    REQUIRE_FALSE(c.ok());
    return c.error().message;
  };
  CHECK_THAT(error("    num_layers: 2\n    hybrid_layer_pattern: \"*+\"\n" + mla),
             Catch::Contains("run.yaml:8: model.architecture.hybrid_layer_pattern: must not hold "
                             "both * (attention) and + (MLA) layers"));
  CHECK_THAT(error("    num_layers: 2\n    hybrid_layer_pattern: +-\n"),
             Catch::Contains("run.yaml:8: model.architecture.hybrid_layer_pattern: has MLA "
                             "layers (+), which need model.architecture.mla"));
  CHECK_THAT(error("    num_layers: 2\n    hybrid_layer_pattern: \"*-\"\n" + mla),
             Catch::Contains("run.yaml:8: model.architecture.hybrid_layer_pattern: must write "
                             "the attention layers of a model with model.architecture.mla as +"));
  CHECK_THAT(error("    num_layers: 1\n    attention_output_gate: true\n" + mla),
             Catch::Contains("run.yaml:8: model.architecture.attention_output_gate: must not be "
                             "true with model.architecture.mla"));
}

TEST_CASE("config: every shipped config.json written as model.architecture reads back the same",
          "[cost]") {
  // WriteArchitecture (apps/input/architecture_writer.h), which the
  // torchtitan and MindFormers readers write their model with: every
  // shipped HuggingFace model, parsed back, is the same model layer by
  // layer; only Qwen3-Next (DeltaNet and an output gate) has no such form.
  const std::string rest =
      "training: {seq_length: 4096}\n"
      "hardware: {peak_tflops: 400}\n"
      "cluster: {devices: {memory: 80GiB}}\n"
      "pipeline: {stages: 1, microbatches: 1}\n";
  int written = 0;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(Configs("hf"))) {
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& path : files) {
    INFO(path);
    Result<Architecture> a = LoadHfConfig(path);
    REQUIRE(a.ok());
    ConfigWriter o;
    o.Line(0, "model:");
    Status st = WriteArchitecture(o, *a, [](std::string_view) { return std::string(); });
    REQUIRE(st.ok());
    INFO(o.yaml_);
    Result<RunConfig> back = ParseHf(o.yaml_ + rest);
    if (!back.ok()) FAIL(back.error().message);
    CHECK(SameLayers(back->architecture, *a));
    ++written;
  }
  CHECK(written == 17);  // every shipped one
}

TEST_CASE("config: inline architecture errors name file:line:key",
          "[cost]") {
  auto error = [](const std::string& arch) {
    Result<RunConfig> c = ParseHf("model:\n  architecture:\n" + arch +
                                  std::string(kLlama3Rest));
    REQUIRE_FALSE(c.ok());
    return c.error().message;
  };
  CHECK_THAT(error("    hidden_size: 64\n    num_layers: 2\n"
                   "    num_attention_heads: 4\n    ffn_hidden_size: 128\n"),
             Catch::Contains("run.yaml:2: model.architecture.vocab_size: must "
                             "be given (a positive integer); got nothing"));
  CHECK_THAT(error("    hidden_size: 64\n    num_layers: 2\n"
                   "    num_attention_heads: 4\n    num_key_value_heads: 3\n"
                   "    ffn_hidden_size: 128\n    vocab_size: 10\n"),
             Catch::Contains("run.yaml:6: model.architecture."
                             "num_key_value_heads: must divide "
                             "num_attention_heads (4); got 3"));
  CHECK_THAT(error("    hidden_size: 64\n    num_layers: 2\n"
                   "    num_attention_heads: 4\n    vocab_size: 10\n"),
             Catch::Contains("model.architecture.ffn_hidden_size: must be "
                             "positive (the model has dense layers)"));
  CHECK_THAT(error("    hidden_size: 64\n    num_layers: 2\n"
                   "    num_attention_heads: 4\n    vocab_size: 10\n"
                   "    ffn_hidden_size: 128\n    norm: batchnorm\n"),
             Catch::Contains("run.yaml:8: model.architecture.norm: must be "
                             "one of rmsnorm, layernorm; got batchnorm"));
  CHECK_THAT(error("    hidden_size: 64\n    num_layers: 2\n"
                   "    num_attention_heads: 4\n    vocab_size: 10\n"
                   "    ffn_hiden_size: 128\n"),
             Catch::Contains("run.yaml:7: model.architecture.ffn_hiden_size: "
                             "unknown key"));
  CHECK_THAT(error("    hidden_size: 64\n    num_layers: 2\n"
                   "    num_attention_heads: 4\n    vocab_size: 10\n"
                   "    moe: {num_experts: 4, top_k: 5, "
                   "expert_ffn_hidden_size: 8}\n"),
             Catch::Contains("run.yaml:7: model.architecture.moe.top_k: must "
                             "be at most moe.num_experts (4); got 5"));
  const std::string two = "    hidden_size: 64\n    num_layers: 2\n"
                          "    num_attention_heads: 4\n    vocab_size: 10\n"
                          "    ffn_hidden_size: 128\n";
  CHECK_THAT(error(two + "    layer_types: [full_attention]\n"),
             Catch::Contains("run.yaml:8: model.architecture.layer_types: must "
                             "have one entry per decoder layer (num_layers: "
                             "2); got 1"));
  CHECK_THAT(
      error(two + "    layer_types: [full_attention, mamba]\n"),
      Catch::Contains("run.yaml:8: model.architecture.layer_types[1]: must be "
                      "one of full_attention, sliding_attention, "
                      "chunked_attention, linear_attention; got mamba"));
  CHECK_THAT(
      error(two + "    layer_types: [full_attention, full_attention]\n"
                  "    deltanet: {key_heads: 2}\n"),
      Catch::Contains("run.yaml:9: model.architecture.deltanet: must be given only with a "
                      "hybrid_layer_pattern holding G (gated DeltaNet) layers or a "
                      "layer_types entry linear_attention; got no linear_attention in "
                      "layer_types"));
  CHECK_THAT(
      error(two + "    layer_types: [linear_attention, full_attention]\n"
                  "    deltanet: {key_heads: 4, value_heads: 6}\n"),
      Catch::Contains("run.yaml:9: model.architecture.deltanet.value_heads: must be a "
                      "multiple of key_heads (4, Megatron's assert); got 6"));
  CHECK_THAT(
      error(two + "    layer_types: [sliding_attention, full_attention]\n"),
      Catch::Contains("run.yaml:2: model.architecture.sliding_window: must be "
                      "given (a positive integer) when a layer_types entry is "
                      "sliding_attention; got nothing"));
  CHECK_THAT(error(two + "    sliding_window: 128\n"),
             Catch::Contains("run.yaml:8: model.architecture.sliding_window: "
                             "must be given only with a layer_types entry "
                             "sliding_attention (no layer uses it); got 128"));
  CHECK_THAT(error(two + "    layer_types: [chunked_attention, full_attention]\n"
                         "    attention_chunk_size: 0\n"),
             Catch::Contains("run.yaml:9: model.architecture."
                             "attention_chunk_size: must be a positive "
                             "integer; got 0"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: M*G\n"),
             Catch::Contains("run.yaml:8: model.architecture.hybrid_layer_pattern: must "
                             "have one symbol per decoder layer (num_layers: 2); got 3"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: M|*\n"),
             Catch::Contains("run.yaml:8: model.architecture.hybrid_layer_pattern: must "
                             "have one symbol per decoder layer"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: MD\n"),
             Catch::Contains("must hold only M (Mamba-2), G (gated DeltaNet), * (attention), "
                             "+ (MLA), - (MLP) and E (MoE), one per layer (ppb does not model "
                             "Megatron's D, DeepSeek's sparse attention"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: \"*-\"\n    deltanet: {key_heads: 2}\n"),
             Catch::Contains("run.yaml:9: model.architecture.deltanet: must be given only with "
                             "a hybrid_layer_pattern holding G (gated DeltaNet) layers"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: G-\n"
                         "    deltanet: {key_heads: 4, value_heads: 6}\n"),
             Catch::Contains("run.yaml:9: model.architecture.deltanet.value_heads: must be a "
                             "multiple of key_heads (4, Megatron's assert); got 6"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: ME\n"),
             Catch::Contains("run.yaml:8: model.architecture.hybrid_layer_pattern: has MoE "
                             "layers (E), which need model.architecture.moe; got none"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: \"*-\"\n    mamba: {state_dim: 64}\n"),
             Catch::Contains("run.yaml:9: model.architecture.mamba: must be given only with "
                             "a hybrid_layer_pattern holding M (Mamba) layers"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: M-\n    mamba: {num_groups: 3}\n"),
             Catch::Contains("run.yaml:9: model.architecture.mamba.num_groups: must divide "
                             "the Mamba heads (2, Megatron's assert); got 3"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: M-\n    mamba: {head_dim: 48}\n"),
             Catch::Contains("model.architecture.mamba.head_dim: must divide 2 x hidden_size "
                             "(128, Megatron's d_inner when num_heads is not given); got 48"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: E-\n"
                         "    moe: {num_experts: 4, top_k: 1, expert_ffn_hidden_size: 8,\n"
                         "          first_k_dense: 1}\n"),
             Catch::Contains("run.yaml:10: model.architecture.moe.first_k_dense: must not be "
                             "given with hybrid_layer_pattern (its E and - layers say which "
                             "layers are MoE); got 1"));
  CHECK_THAT(error(two + "    hybrid_layer_pattern: M*\n"
                         "    layer_types: [full_attention, full_attention]\n"),
             Catch::Contains("run.yaml:9: model.architecture.layer_types: must not be given "
                             "with hybrid_layer_pattern"));
  CHECK_THAT(error("    hidden_size: 64\n    num_layers: 2\n"
                   "    num_attention_heads: 4\n    vocab_size: 10\n"
                   "    hybrid_layer_pattern: M-\n    mamba: {num_groups: 2}\n"),
             Catch::Contains("model.architecture.ffn_hidden_size: must be "
                             "positive (the model has dense layers)"));
  Result<RunConfig> both = ParseHf(
      "model:\n  hf_config: hf/llama3-8b.json\n  architecture: {}\n" +
      std::string(kLlama3Rest));
  REQUIRE_FALSE(both.ok());
  CHECK_THAT(both.error().message,
             Catch::Contains("run.yaml:3: model.architecture: must not be "
                             "given with model.hf_config"));
}

TEST_CASE("config: training.optimizer sets the static memory", "[cost]") {
  Result<RunConfig> adam = ParseHf(HfRun("  optimizer: adam\n"));
  Result<RunConfig> dflt = ParseHf(HfRun());
  Result<RunConfig> sgd = ParseHf(HfRun("  optimizer: sgd\n"));
  if (!adam.ok()) FAIL(adam.error().message);
  if (!dflt.ok()) FAIL(dflt.error().message);
  if (!sgd.ok()) FAIL(sgd.error().message);
  for (size_t i = 0; i < adam->layers.size(); ++i) {
    INFO(adam->layers[i].name);
    // tp 2, no distributed optimizer: 18 vs 14 bytes per parameter.
    const double per_rank =
        static_cast<double>(adam->derived[i].params.total()) / 2;
    CHECK(dflt->layers[i].static_memory == adam->layers[i].static_memory);
    CHECK(adam->layers[i].static_memory == std::llround(per_rank * 18));
    CHECK(sgd->layers[i].static_memory == std::llround(per_rank * 14));
    CHECK(adam->layers[i].static_memory - sgd->layers[i].static_memory ==
          std::llround(per_rank * 18) - std::llround(per_rank * 14));
  }
  Result<RunConfig> bad = ParseHf(HfRun("  optimizer: lion\n"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message,
             Catch::Contains("run.yaml:5: training.optimizer: must be one of "
                             "adam, adamw, sgd; got lion"));
}

TEST_CASE("config: hardware.memory and hardware.link default the cluster",
          "[cost]") {
  const std::string head =
      "model: {hf_config: hf/llama2-7b.json}\n"
      "training: {seq_length: 4096, tensor_parallel: 2}\n"
      "hardware:\n"
      "  peak_tflops: 400\n"
      "  memory: 96GiB\n"
      "  link: {latency: 5us, bandwidth: 25GB/s}\n"
      "pipeline: {stages: 2, microbatches: 4}\n";
  // No cluster at all: both from hardware.
  Result<RunConfig> c = ParseHf(head);
  if (!c.ok()) FAIL(c.error().message);
  REQUIRE(c->cluster.devices.size() == 2);
  REQUIRE(c->cluster.links.size() == 2);
  for (int r = 0; r < 2; ++r) {
    CHECK(c->cluster.devices[r].memory_capacity == 96LL << 30);
    CHECK(c->cluster.links[r].latency == 5000);
    CHECK(c->cluster.links[r].bandwidth == 25'000'000'000LL);
  }
  // A cluster without memory or link: still the hardware defaults.
  c = ParseHf(head + "cluster: {devices: {speed: 1}}\n");
  if (!c.ok()) FAIL(c.error().message);
  CHECK(c->cluster.devices[1].memory_capacity == 96LL << 30);
  CHECK(c->cluster.links[1].bandwidth == 25'000'000'000LL);
  // The cluster keys, when given, win.
  c = ParseHf(head +
              "cluster:\n  devices: {memory: 80GiB}\n"
              "  link: {bandwidth: 50GB/s}\n");
  if (!c.ok()) FAIL(c.error().message);
  for (int r = 0; r < 2; ++r) {
    CHECK(c->cluster.devices[r].memory_capacity == 80LL << 30);
    CHECK(c->cluster.links[r].latency == 0);
    CHECK(c->cluster.links[r].bandwidth == 50'000'000'000LL);
  }
  // A devices list: items without memory take hardware.memory.
  c = ParseHf(head + "cluster:\n  devices: [{memory: 40GiB}, {speed: 2}]\n");
  if (!c.ok()) FAIL(c.error().message);
  CHECK(c->cluster.devices[0].memory_capacity == 40LL << 30);
  CHECK(c->cluster.devices[1].memory_capacity == 96LL << 30);
  // Without hardware.memory the cluster is still required.
  c = ParseHf("model: {hf_config: hf/llama2-7b.json}\n"
              "training: {seq_length: 4096}\n"
              "hardware: {peak_tflops: 400}\n"
              "pipeline: {stages: 2, microbatches: 4}\n");
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.error().message, Catch::Contains("cluster: must be given"));
  c = ParseHf("model: {hf_config: hf/llama2-7b.json}\n"
              "training: {seq_length: 4096}\n"
              "hardware: {peak_tflops: 400, link: {latency: 1us}}\n"
              "cluster: {devices: {memory: 1GiB}}\n"
              "pipeline: {stages: 2, microbatches: 4}\n");
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.error().message,
             Catch::Contains("run.yaml:3: hardware.link.bandwidth: must be "
                             "given"));
}

TEST_CASE("ppb-sim model: golden Llama-3-8B json and text", "[cost][cli]") {
  const std::string run = Configs("llama3-8b.yaml");
  CliRun r = Cli({"model", "--config", run, "--format", "json"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppb.model/1");
  CHECK(j["model"] == "llama3-8b");
  CHECK(j["architecture"] == "hf_config");
  CHECK(j["totals"]["params"] == 8'030'261'248);
  for (const char* k : {"params", "forward_flops", "forward_ns", "backward_ns",
                        "static_memory_bytes", "activation_bytes"}) {
    INFO(k);
    CHECK(j["totals"].contains(k));
  }
  const nlohmann::json& layers = j["layers"];
  REQUIRE(layers.size() == 34);
  std::int64_t sum = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const nlohmann::json& l = layers[i];
    INFO(i);
    for (const char* k :
         {"name", "kind", "params", "expert_params", "forward_flops",
          "forward_ns", "backward_input_ns", "backward_weight_ns",
          "static_memory_bytes", "activation_bytes", "workspace_bytes",
          "send_bytes", "provenance"}) {
      INFO(k);
      CHECK(l.contains(k));
    }
    for (const char* mode : {"none", "selective", "full"}) {
      CHECK(l["activation_bytes"].contains(mode));
    }
    sum += l["params"].get<std::int64_t>();
  }
  CHECK(sum == 8'030'261'248);
  CHECK(layers[0]["name"] == "embedding");
  CHECK(layers[0]["kind"] == "embedding");
  CHECK(layers[0]["params"] == 128256LL * 4096);
  CHECK(layers[1]["name"] == "decoder.0");
  CHECK(layers[1]["kind"] == "decoder");
  // 2 norms + q, o (h x h) + k, v (h x 1024) + gate, up, down (h x 14336).
  CHECK(layers[1]["params"] == 2LL * 4096 + 2LL * 4096 * 4096 +
                                   2LL * 4096 * 1024 + 3LL * 4096 * 14336);
  CHECK(layers[32]["name"] == "decoder.31");
  CHECK(layers[33]["name"] == "head");
  CHECK(layers[33]["kind"] == "head");
  CHECK(layers[33]["params"] == 4096LL + 128256LL * 4096);
  // tp 2 + sp: the sent hidden state is e*s*b*h / t.
  CHECK(layers[1]["send_bytes"] == 2LL * 8192 * 4096 / 2);

  r = Cli({"model", "--config", run});
  REQUIRE(r.status == 0);
  CHECK(r.out.rfind("model llama3-8b from ", 0) == 0);
  CHECK(r.out.find(": 34 layers\n") != std::string::npos);
  CHECK(r.out.find("\ntotal: 8030261248 params (main model), ") != std::string::npos);
  CHECK(r.out.find(" all layers on one rank\n") != std::string::npos);
}

}  // namespace
}  // namespace ppb
