// The flavour tables of apps/input/torchtitan_models.h, copied as figures
// from torchtitan v0.2.2 (models/llama3/__init__.py llama3_args,
// models/qwen3/__init__.py qwen3_args, dense and MoE) and main at b5bcd76c
// (models/llama3/__init__.py _debugmodel ... _405b, models/qwen3/
// __init__.py _debugmodel ... _32b, _debugmodel_moe, _30b_a3b, _235b_a22b;
// deepseek_v3: v0.2.2's deepseekv3_args, main's _debugmodel ... _671b;
// gpt_oss: v0.2.2's gptoss_configs over GptOssModelArgs' defaults, main's
// models/gpt_oss/__init__.py _debugmodel, _20b, _120b; llama4: v0.2.2's
// llama4_args).
#include "apps/input/torchtitan_models.h"

#include <cmath>
#include <iterator>

namespace ppb {
namespace {

TorchtitanFlavour Llama(std::string_view flavor, std::int64_t dim, std::int64_t layers,
                        std::int64_t heads, std::int64_t kv, std::int64_t multiple_of,
                        double multiplier, std::string_view attention = "sdpa",
                        std::int64_t vocab = 128256) {
  TorchtitanFlavour f;
  f.model = "llama3";
  f.flavor = flavor;
  f.dim = dim;
  f.n_layers = layers;
  f.n_heads = heads;
  f.n_kv_heads = kv;
  f.vocab_size = vocab;
  f.multiple_of = multiple_of;
  f.ffn_dim_multiplier = multiplier;
  f.attention = attention;
  return f;
}

TorchtitanFlavour Qwen(std::string_view flavor, std::int64_t vocab, std::int64_t dim,
                       std::int64_t layers, std::int64_t heads, std::int64_t hidden, bool tied) {
  TorchtitanFlavour f;
  f.model = "qwen3";
  f.flavor = flavor;
  f.dim = dim;
  f.n_layers = layers;
  f.n_heads = heads;
  f.n_kv_heads = 8;
  f.vocab_size = vocab;
  f.head_dim = 128;
  f.ffn_hidden = hidden;
  f.qk_norm = true;
  f.tied = tied;
  return f;
}

// qwen3's MoE flavours: every layer's MLP routed (moe_enabled, no shared
// experts), `kv` KV heads.
TorchtitanFlavour Moe(TorchtitanFlavour f, std::int64_t kv, std::int64_t experts,
                      std::int64_t top_k, std::int64_t moe_hidden) {
  f.n_kv_heads = kv;
  f.experts = experts;
  f.top_k = top_k;
  f.moe_hidden = moe_hidden;
  return f;
}

// deepseek_v3: MLA (q_lora_rank, kv_lora_rank 512, 128 + 64 QK head
// dims, 128 V), `dense` dense layers of `inter` then routed experts.
TorchtitanFlavour DeepSeek(std::string_view flavor, std::int64_t vocab, std::int64_t dim,
                           std::int64_t inter, std::int64_t moe_inter, std::int64_t layers,
                           std::int64_t dense, std::int64_t heads, std::int64_t experts,
                           std::int64_t shared, std::int64_t top_k, std::int64_t q_lora,
                           std::string_view attention) {
  TorchtitanFlavour f;
  f.model = "deepseek_v3";
  f.flavor = flavor;
  f.dim = dim;
  f.n_layers = layers;
  f.n_heads = heads;
  f.vocab_size = vocab;
  f.ffn_hidden = inter;
  f.experts = experts;
  f.top_k = top_k;
  f.moe_hidden = moe_inter;
  f.shared_experts = shared;
  f.dense_layers = dense;
  f.q_lora_rank = q_lora;
  f.kv_lora_rank = 512;
  f.qk_nope_head_dim = 128;
  f.qk_rope_head_dim = 64;
  f.v_head_dim = 128;
  f.attention = attention;
  return f;
}

// gpt_oss (GptOssModelArgs' defaults, which main's flavours write out):
// dim 2880 unless given, 64 heads of 64, 8 KV heads, every layer's MLP
// routed to `experts` experts of 2880 (top 4, no shared ones), 128-key
// sliding windows on the even layers, GPT-OSS's biases and sinks; v0.2.2
// runs FlexAttention only (attn_type "flex"), main varlen by default.
TorchtitanFlavour GptOss(std::string_view flavor, std::int64_t vocab, std::int64_t dim,
                         std::int64_t layers, std::int64_t experts, std::string_view attention) {
  TorchtitanFlavour f;
  f.model = "gpt_oss";
  f.flavor = flavor;
  f.dim = dim;
  f.n_layers = layers;
  f.n_heads = 64;
  f.n_kv_heads = 8;
  f.head_dim = 64;
  f.vocab_size = vocab;
  f.experts = experts;
  f.top_k = 4;
  f.moe_hidden = 2880;
  f.sliding_window = 128;
  f.gpt_oss = true;
  f.attention = attention;
  return f;
}

// llama4 (TransformerModelArgs' defaults: vocab 202048, multiple_of 256,
// no multiplier, interleave_moe_layer_step 2; MoEArgs' defaults: 8
// experts, top 1, one shared expert of the experts' width): `step` the MoE
// interleave, `nope` every_n_layers_nope (0: None) with blocks of `chunk`.
TorchtitanFlavour Llama4(std::string_view flavor, std::int64_t dim, std::int64_t layers,
                         std::int64_t heads, std::int64_t kv, std::int64_t vocab,
                         std::int64_t multiple_of, double multiplier, std::int64_t experts,
                         std::int64_t step, std::int64_t nope, std::int64_t chunk) {
  TorchtitanFlavour f;
  f.model = "llama4";
  f.flavor = flavor;
  f.dim = dim;
  f.n_layers = layers;
  f.n_heads = heads;
  f.n_kv_heads = kv;
  f.vocab_size = vocab;
  f.multiple_of = multiple_of;
  f.ffn_dim_multiplier = multiplier;
  f.experts = experts;
  f.top_k = 1;
  f.shared_experts = 1;
  f.moe_hidden = Llama4MoeHidden(dim, multiple_of, multiplier, f.top_k + f.shared_experts);
  f.moe_step = step;
  f.nope_every = nope;
  f.chunk = nope > 0 ? chunk : 0;
  // The iRoPE flavours run FlexAttention with a block-causal mask.
  f.attention = nope > 0 ? "flex" : "sdpa";
  return f;
}

TorchtitanFlavour Main(TorchtitanFlavour f) {
  f.main = true;
  return f;
}
TorchtitanFlavour Flex(TorchtitanFlavour f) {
  f.attention = "flex";
  return f;
}
TorchtitanFlavour Tied(TorchtitanFlavour f) {
  f.tied = true;
  return f;
}

const std::vector<TorchtitanFlavour>& Table() {
  static const std::vector<TorchtitanFlavour> table = {
      // llama3_args: debugmodel's vocabulary is 2048; the 8B, 70B and 405B
      // use GQA with 8 KV heads.
      Llama("debugmodel", 256, 6, 16, 0, 256, 0, "sdpa", 2048),
      Llama("debugmodel_flex_attn", 256, 6, 16, 0, 256, 0, "flex", 2048),
      Llama("debugmodel_varlen_attn", 256, 6, 16, 0, 256, 0, "varlen", 2048),
      Llama("8B", 4096, 32, 32, 8, 1024, 1.3),
      Llama("8B_flex", 4096, 32, 32, 8, 1024, 1.3, "flex"),
      Llama("8B_varlen", 4096, 32, 32, 8, 1024, 1.3, "varlen"),
      Llama("70B", 8192, 80, 64, 8, 4096, 1.3),
      Llama("405B", 16384, 126, 128, 8, 4096, 1.2),
      // qwen3_args (dense): head_dim 128, 8 KV heads, QK norm.
      Qwen("debugmodel", 2048, 256, 8, 16, 3072, true),
      Qwen("0.6B", 151936, 1024, 28, 16, 3072, true),
      Qwen("1.7B", 151936, 2048, 28, 16, 6144, true),
      Qwen("4B", 151936, 2560, 36, 32, 9728, true),
      Qwen("8B", 151936, 4096, 36, 32, 12288, false),
      Qwen("14B", 151936, 5120, 40, 40, 17408, false),
      Qwen("32B", 151936, 5120, 64, 64, 25600, false),
      // qwen3_args (MoE): MoEArgs num_experts, top_k, moe_inter_dim; the
      // dense hidden_dim is given but no layer uses it.
      Moe(Qwen("debugmodel_moe", 2048, 256, 8, 16, 3072, false), 8, 64, 8, 768),
      Moe(Qwen("30B-A3B", 151936, 2048, 48, 32, 6144, false), 4, 128, 8, 768),
      Moe(Qwen("235B-A22B", 151936, 4096, 94, 64, 12288, false), 4, 128, 8, 1536),
      // deepseekv3_args: DeepSeek-V2-Lite's 16B, V2's 236B, V3's 671B.
      DeepSeek("debugmodel", 2048, 256, 1024, 256, 6, 1, 16, 8, 2, 3, 0, "sdpa"),
      DeepSeek("debugmodel_flex_attn", 2048, 256, 1024, 256, 6, 1, 16, 8, 2, 3, 0, "flex"),
      DeepSeek("16B", 102400, 2048, 10944, 1408, 27, 1, 16, 64, 2, 6, 0, "flex"),
      DeepSeek("236B", 102400, 5120, 12288, 1536, 60, 1, 128, 160, 2, 6, 1536, "flex"),
      DeepSeek("671B", 129280, 7168, 18432, 2048, 61, 3, 128, 256, 1, 8, 1536, "flex"),
      // gptoss_configs: the debug model keeps the default vocabulary.
      GptOss("debugmodel", 201088, 256, 4, 8, "flex"),
      GptOss("20b", 201088, 2880, 24, 32, "flex"),
      GptOss("120b", 201088, 2880, 36, 128, "flex"),
      // llama4_args: Scout (17bx16e, every layer routed) and Maverick
      // (17bx128e, every 2nd), each also with iRoPE (NoPE every 4th layer,
      // 8192-token blocks; the debug model's 256).
      Llama4("debugmodel", 256, 6, 16, 0, 2048, 256, 0, 8, 2, 0, 0),
      Llama4("17bx16e", 5120, 48, 40, 8, 202048, 2048, 1.2, 16, 1, 0, 0),
      Llama4("17bx128e", 5120, 48, 40, 8, 202048, 2048, 1.2, 128, 2, 0, 0),
      Llama4("debugmodel_irope", 256, 6, 16, 0, 2048, 256, 0, 8, 2, 4, 256),
      Llama4("17bx16e_irope", 5120, 48, 40, 8, 202048, 2048, 1.2, 16, 1, 4, 8192),
      Llama4("17bx128e_irope", 5120, 48, 40, 8, 202048, 2048, 1.2, 128, 2, 4, 8192),
      // main's llama3_configs: flex attention by default; 1B and 3B tie
      // the embedding and the LM head.
      Main(Llama("debugmodel", 256, 6, 16, 0, 256, 0, "flex", 2048)),
      Main(Tied(Llama("1B", 2048, 16, 32, 8, 1024, 1.5, "flex"))),
      Main(Tied(Llama("3B", 3072, 28, 24, 8, 1024, 1.0, "flex"))),
      Main(Llama("8B", 4096, 32, 32, 8, 1024, 1.3, "flex")),
      Main(Llama("70B", 8192, 80, 64, 8, 4096, 1.3, "flex")),
      Main(Llama("405B", 16384, 126, 128, 8, 4096, 1.2, "flex")),
      // main's qwen3_configs, its dense flavours: v0.2.2's shapes, flex
      // attention by default.
      Main(Flex(Qwen("debugmodel", 2048, 256, 8, 16, 3072, true))),
      Main(Flex(Qwen("debugmodel_non_fused_qkv", 2048, 256, 8, 16, 3072, true))),
      Main(Flex(Qwen("0.6B", 151936, 1024, 28, 16, 3072, true))),
      Main(Flex(Qwen("1.7B", 151936, 2048, 28, 16, 6144, true))),
      Main(Flex(Qwen("4B", 151936, 2560, 36, 32, 9728, true))),
      Main(Flex(Qwen("8B", 151936, 4096, 36, 32, 12288, false))),
      Main(Flex(Qwen("14B", 151936, 5120, 40, 40, 17408, false))),
      Main(Flex(Qwen("32B", 151936, 5120, 64, 64, 25600, false))),
      // main's MoE flavours (_build_qwen3_moe_layers): no dense width.
      Main(Flex(Moe(Qwen("debugmodel_moe", 2048, 256, 8, 16, 0, false), 8, 64, 8, 768))),
      Main(Flex(Moe(Qwen("30B-A3B", 151936, 2048, 48, 32, 0, false), 4, 128, 8, 768))),
      Main(Flex(Moe(Qwen("235B-A22B", 151936, 4096, 94, 64, 0, false), 4, 128, 8, 1536))),
      // main's deepseekv3_configs: v0.2.2's shapes, flex attention by
      // default (model_registry's attn_backend).
      Main(DeepSeek("debugmodel", 2048, 256, 1024, 256, 6, 1, 16, 8, 2, 3, 0, "flex")),
      Main(DeepSeek("16B", 102400, 2048, 10944, 1408, 27, 1, 16, 64, 2, 6, 0, "flex")),
      Main(DeepSeek("236B", 102400, 5120, 12288, 1536, 60, 1, 128, 160, 2, 6, 1536, "flex")),
      Main(DeepSeek("671B", 129280, 7168, 18432, 2048, 61, 3, 128, 256, 1, 8, 1536, "flex")),
      // main's gptoss_configs: varlen attention by default (model_registry's
      // attn_backend); the debug model's vocabulary is 2048.
      Main(GptOss("debugmodel", 2048, 256, 4, 8, "varlen")),
      Main(GptOss("20b", 201088, 2880, 24, 32, "varlen")),
      Main(GptOss("120b", 201088, 2880, 36, 128, "varlen")),
  };
  return table;
}

}  // namespace

std::int64_t Llama3FfnHidden(std::int64_t dim, std::int64_t multiple_of, double multiplier) {
  // Python's int() truncates toward zero; every value here is positive.
  std::int64_t hidden = (2 * 4 * dim) / 3;
  if (multiplier > 0) {
    hidden = static_cast<std::int64_t>(std::floor(multiplier * static_cast<double>(hidden)));
  }
  return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
}

std::int64_t Llama4MoeHidden(std::int64_t dim, std::int64_t multiple_of, double multiplier,
                             std::int64_t experts_a_token) {
  std::int64_t hidden = (2 * 4 * dim) / 3;
  if (multiplier > 0) {
    hidden = static_cast<std::int64_t>(std::floor(multiplier * static_cast<double>(hidden)));
  }
  hidden /= experts_a_token;
  return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
}

std::int64_t FfnHidden(const TorchtitanFlavour& f) {
  return f.ffn_hidden > 0 ? f.ffn_hidden
                          : Llama3FfnHidden(f.dim, f.multiple_of, f.ffn_dim_multiplier);
}

Architecture FlavourArchitecture(const TorchtitanFlavour& f) {
  Architecture a;
  a.hidden = f.dim;
  a.layers = static_cast<int>(f.n_layers);
  a.heads = static_cast<int>(f.n_heads);
  a.kv_heads = static_cast<int>(f.kv_lora_rank > 0 || f.n_kv_heads == 0 ? f.n_heads : f.n_kv_heads);
  a.head_dim = f.head_dim > 0 && f.kv_lora_rank == 0 ? f.head_dim : f.dim / f.n_heads;
  if (f.experts == 0 || f.ffn_hidden > 0 || f.moe_step > 1) a.ffn = FfnHidden(f);
  a.vocab = f.vocab_size;
  a.tied_embeddings = f.tied;
  a.gated_mlp = true;
  a.qk_norm = f.qk_norm;
  if (f.sliding_window > 0) {
    a.blocks.assign(static_cast<size_t>(f.n_layers), LayerBlock{});
    for (size_t i = 0; i < a.blocks.size(); ++i) {
      if (i % 2 == 0) a.blocks[i].span = Span::Sliding;
    }
    a.sliding_window = f.sliding_window;
  }
  if (f.nope_every > 0) {
    a.blocks.assign(static_cast<size_t>(f.n_layers), LayerBlock{});
    for (size_t i = 0; i < a.blocks.size(); ++i) {
      if (static_cast<std::int64_t>(i) % f.nope_every != 0) a.blocks[i].span = Span::Chunked;
    }
    a.attention_chunk = f.chunk;
  }
  if (f.gpt_oss) {
    a.qkv_bias = true;
    a.out_bias = true;
    a.attention_sinks = true;
  }
  if (f.experts > 0) {
    a.experts = static_cast<int>(f.experts);
    a.top_k = static_cast<int>(f.top_k);
    a.expert_ffn = f.moe_hidden;
    a.shared_ffn = f.moe_hidden * f.shared_experts;
    a.moe_layout.first_k_dense = static_cast<int>(f.dense_layers);
    a.moe_layout.decoder_sparse_step = static_cast<int>(f.moe_step);
    a.router_bias = f.gpt_oss;
    a.expert_bias = f.gpt_oss;
  }
  if (f.kv_lora_rank > 0) {
    a.q_lora_rank = f.q_lora_rank;
    a.kv_lora_rank = f.kv_lora_rank;
    a.qk_nope_head_dim = f.qk_nope_head_dim;
    a.qk_rope_head_dim = f.qk_rope_head_dim;
    a.v_head_dim = f.v_head_dim;
  }
  return a;
}

std::string V022PipelineRefusal(const TorchtitanFlavour& f) {
  if (f.main || !f.gpt_oss) return "";
  return "its TrainSpec has no pipelining_fn: torchtitan refuses pipeline parallelism for it";
}

std::string V022ContextRefusal(const TorchtitanFlavour& f) {
  if (f.main) return "";
  if (f.gpt_oss) {
    return "GptOssModelArgs refuses context parallelism: \"CP support for gpt-oss model is "
           "still in progress\"";
  }
  if (f.model == "llama4" && f.attention != "sdpa") {
    return "its FlexAttention: torchtitan's Context Parallel only supports SDPA attention";
  }
  return "";
}

const TorchtitanFlavour* FindTorchtitanFlavour(std::string_view model, std::string_view flavor,
                                               bool main) {
  for (const TorchtitanFlavour& f : Table()) {
    if (f.model == model && f.flavor == flavor && f.main == main) return &f;
  }
  return nullptr;
}

std::vector<std::string> TorchtitanModels(bool main) {
  // main has no llama4 folder (b5bcd76c).
  if (main) return {"llama3", "qwen3", "deepseek_v3", "gpt_oss"};
  return {"llama3", "qwen3", "deepseek_v3", "gpt_oss", "llama4"};
}

std::vector<std::string> TorchtitanFlavours(std::string_view model, bool main) {
  std::vector<std::string> out;
  for (const TorchtitanFlavour& f : Table()) {
    if (f.model == model && f.main == main) out.emplace_back(f.flavor);
  }
  return out;
}

}  // namespace ppb
