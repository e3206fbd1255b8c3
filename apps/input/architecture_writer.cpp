// WriteArchitecture (apps/input/architecture_writer.h).
#include "apps/input/architecture_writer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace ppb {
namespace {

const char* Bool(bool b) { return b ? "true" : "false"; }

// layer_types when every layer is an attention layer or a gated DeltaNet
// with its MLP (GPT-OSS, Llama 4, Qwen3-Next); the hybrid pattern when
// every layer is one of Megatron's hybrid blocks (Nemotron-H); else what
// cannot be written.
struct Layers {
  std::vector<std::string> types;  // layer_types, or empty
  std::string pattern;             // hybrid_layer_pattern, or empty
  std::string unwritable;
};

Layers Classify(const Architecture& a) {
  Layers out;
  if (a.blocks.empty()) return out;
  // A layer with its MLP: attention of any span, or a gated DeltaNet
  // (linear_attention) over the full sequence.
  bool transformer = true, hybrid = true, plain = true;
  for (int i = 0; i < a.layers; ++i) {
    const LayerBlock b = a.Block(i);
    const bool attention = b.mixer == Mixer::Attention;
    const bool delta = b.mixer == Mixer::GatedDeltaNet && b.span == Span::Full;
    transformer = transformer && (attention || delta) && b.mlp == MlpKind::Auto;
    plain = plain && attention && b.span == Span::Full;
    hybrid = hybrid && HybridSymbol(a, i) != 0;
  }
  if (transformer) {
    if (plain) return out;  // every layer as the default
    for (int i = 0; i < a.layers; ++i) {
      const LayerBlock b = a.Block(i);
      out.types.emplace_back(b.mixer == Mixer::GatedDeltaNet ? "linear_attention"
                             : b.span == Span::Sliding       ? "sliding_attention"
                             : b.span == Span::Chunked       ? "chunked_attention"
                                                             : "full_attention");
    }
  } else if (hybrid) {
    for (int i = 0; i < a.layers; ++i) out.pattern += HybridSymbol(a, i);
  } else {
    out.unwritable = "layers other than a mixer with its MLP (layer_types) or Megatron's "
                     "hybrid blocks (hybrid_layer_pattern): a Mamba mixer beside an MLP";
  }
  return out;
}

}  // namespace

Status WriteArchitecture(ConfigWriter& o, const Architecture& a,
                         const std::function<std::string(std::string_view key)>& origin) {
  const Layers layers = Classify(a);
  std::string unwritable = layers.unwritable;
  auto also = [&](const char* what) {
    unwritable += (unwritable.empty() ? "" : "; ") + std::string(what);
  };
  if (a.HasMixer(Mixer::Mamba2) && (!a.mamba.conv_bias || a.mamba.proj_bias)) {
    also("Mamba biases other than a biased convolution and unbiased projections");
  }
  if (!unwritable.empty()) {
    return Error{"", "must be a model ppb's model.architecture keys can write; got " +
                         unwritable};
  }
  auto key = [&](int indent, std::string_view k, const auto& value, std::string_view full) {
    o.Key(indent, std::string(k), value, origin(full));
  };
  o.Line(2, "architecture:");
  key(4, "hidden_size", a.hidden, "hidden_size");
  key(4, "num_layers", a.layers, "num_layers");
  key(4, "num_attention_heads", a.heads, "num_attention_heads");
  if (!a.mla()) {
    key(4, "num_key_value_heads", a.kv_heads, "num_key_value_heads");
    key(4, "head_dim", a.head_dim, "head_dim");
  }
  if (a.ffn > 0) key(4, "ffn_hidden_size", a.ffn, "ffn_hidden_size");
  key(4, "vocab_size", a.vocab, "vocab_size");
  key(4, "tie_embeddings", Bool(a.tied_embeddings), "tie_embeddings");
  key(4, "gated_mlp", Bool(a.gated_mlp), "gated_mlp");
  if (a.qkv_bias) key(4, "qkv_bias", "true", "qkv_bias");
  if (a.qk_norm) key(4, "qk_norm", "true", "qk_norm");
  key(4, "norm", a.layernorm_with_bias ? "layernorm" : "rmsnorm", "norm");
  if (a.learned_positions > 0) {
    key(4, "learned_positions", a.learned_positions, "learned_positions");
  }
  if (!layers.types.empty()) {
    key(4, "layer_types", fmt::format("[{}]", fmt::join(layers.types, ", ")), "layer_types");
    const auto uses = [&](const char* type) {
      return std::find(layers.types.begin(), layers.types.end(), type) != layers.types.end();
    };
    if (uses("sliding_attention")) key(4, "sliding_window", a.sliding_window, "sliding_window");
    if (uses("chunked_attention")) {
      key(4, "attention_chunk_size", a.attention_chunk, "attention_chunk_size");
    }
  }
  if (a.attention_sinks) key(4, "attention_sinks", "true", "attention_sinks");
  if (a.out_bias) key(4, "attention_out_bias", "true", "attention_out_bias");
  if (a.attention_out_gate) key(4, "attention_output_gate", "true", "attention_output_gate");
  if (!layers.pattern.empty()) {
    o.Text(4, "hybrid_layer_pattern", layers.pattern, origin("hybrid_layer_pattern"));
  }
  // A mixer's shape block, its keys under model.architecture.NAME, when a
  // layer has the mixer (the pattern's M and G layers, layer_types'
  // linear_attention ones).
  using Field = std::pair<const char*, std::int64_t>;
  auto block = [&](Mixer m, const char* name, std::initializer_list<Field> fields) {
    if (!a.HasMixer(m)) return;
    o.Line(4, std::string(name) + ":");
    for (const auto& [k, v] : fields) key(6, k, v, std::string(name) + "." + k);
  };
  const Mamba2Shape& m = a.mamba;
  block(Mixer::Mamba2, "mamba",
        {{"num_heads", m.heads}, {"head_dim", m.head_dim}, {"state_dim", m.state},
         {"num_groups", m.groups}, {"conv_kernel", m.conv}, {"chunk_size", m.chunk}});
  const DeltaNetShape& d = a.deltanet;
  block(Mixer::GatedDeltaNet, "deltanet",
        {{"key_heads", d.key_heads}, {"value_heads", d.value_heads}, {"key_dim", d.key_dim},
         {"value_dim", d.value_dim}, {"conv_kernel", d.conv}, {"chunk_size", d.chunk}});
  if (a.experts > 0) {
    o.Line(4, "moe:");
    key(6, "num_experts", a.experts, "moe.num_experts");
    key(6, "top_k", a.top_k, "moe.top_k");
    key(6, "expert_ffn_hidden_size", a.expert_ffn, "moe.expert_ffn_hidden_size");
    if (a.shared_ffn > 0) {
      key(6, "shared_ffn_hidden_size", a.shared_ffn, "moe.shared_ffn_hidden_size");
    }
    if (a.shared_expert_gate) key(6, "shared_expert_gate", "true", "moe.shared_expert_gate");
    if (a.router_bias) key(6, "router_bias", "true", "moe.router_bias");
    if (a.expert_bias) key(6, "expert_bias", "true", "moe.expert_bias");
    if (a.moe_latent > 0) key(6, "latent_size", a.moe_latent, "moe.latent_size");
    const MoeLayout& l = a.moe_layout;
    if (l.first_k_dense > 0) key(6, "first_k_dense", l.first_k_dense, "moe.first_k_dense");
    if (l.moe_layer_freq != 1) key(6, "layer_freq", l.moe_layer_freq, "moe.layer_freq");
    if (l.decoder_sparse_step != 1) {
      key(6, "sparse_step", l.decoder_sparse_step, "moe.sparse_step");
    }
    if (!l.mlp_only_layers.empty()) {
      key(6, "dense_layers", fmt::format("[{}]", fmt::join(l.mlp_only_layers, ", ")),
          "moe.dense_layers");
    }
  }
  if (a.mla()) {
    o.Line(4, "mla:");
    key(6, "q_lora_rank", a.q_lora_rank, "mla.q_lora_rank");
    key(6, "kv_lora_rank", a.kv_lora_rank, "mla.kv_lora_rank");
    key(6, "qk_nope_head_dim", a.qk_nope_head_dim, "mla.qk_nope_head_dim");
    key(6, "qk_rope_head_dim", a.qk_rope_head_dim, "mla.qk_rope_head_dim");
    key(6, "v_head_dim", a.v_head_dim, "mla.v_head_dim");
  }
  if (a.mtp_layers > 0) key(4, "mtp_layers", a.mtp_layers, "mtp_layers");
  return Status();
}

}  // namespace ppb
