// MindFormersModelFields (apps/output/emit_mindformers_model.h).
#include "apps/output/emit_mindformers_model.h"

#include <nlohmann/json.hpp>

#include "apps/input/hf_config.h"

namespace ppb::emit_detail {
namespace {

// Whether two architectures derive the same layers (the fields the cost
// model reads).
bool SameShape(const Architecture& a, const Architecture& b) {
  const MoeLayout& x = a.moe_layout;
  const MoeLayout& y = b.moe_layout;
  return a.hidden == b.hidden && a.layers == b.layers && a.heads == b.heads &&
         a.kv_heads == b.kv_heads && a.head_dim == b.head_dim && a.ffn == b.ffn &&
         a.vocab == b.vocab && a.tied_embeddings == b.tied_embeddings &&
         a.gated_mlp == b.gated_mlp && a.qkv_bias == b.qkv_bias && a.qk_norm == b.qk_norm &&
         a.layernorm_with_bias == b.layernorm_with_bias &&
         a.learned_positions == b.learned_positions && a.experts == b.experts &&
         a.top_k == b.top_k && a.expert_ffn == b.expert_ffn && a.shared_ffn == b.shared_ffn &&
         a.shared_expert_gate == b.shared_expert_gate && a.router_bias == b.router_bias &&
         x.first_k_dense == y.first_k_dense && x.moe_layer_freq == y.moe_layer_freq &&
         x.decoder_sparse_step == y.decoder_sparse_step && x.mlp_only_layers == y.mlp_only_layers &&
         a.q_lora_rank == b.q_lora_rank && a.kv_lora_rank == b.kv_lora_rank &&
         a.qk_nope_head_dim == b.qk_nope_head_dim && a.qk_rope_head_dim == b.qk_rope_head_dim &&
         a.v_head_dim == b.v_head_dim && a.mtp_layers == b.mtp_layers && a.blocks == b.blocks &&
         a.sliding_window == b.sliding_window && a.attention_chunk == b.attention_chunk &&
         a.attention_sinks == b.attention_sinks && a.attention_out_gate == b.attention_out_gate &&
         a.out_bias == b.out_bias && a.expert_bias == b.expert_bias;
}

}  // namespace

std::optional<std::vector<std::pair<std::string, std::string>>> MindFormersModelFields(
    const Architecture& a, std::string& why) {
  // The family whose config class gives this shape: Qwen3-MoE for routed
  // experts (qk norm on), Qwen3 for qk norm, else Llama; HF's
  // configuration_*.py defaults the rest.
  const char* type = a.experts > 0 ? "qwen3_moe" : a.qk_norm ? "qwen3" : "llama";
  std::vector<std::pair<std::string, std::string>> out;
  nlohmann::json j = nlohmann::json::object();
  auto put = [&](const std::string& key, const nlohmann::json& value) {
    j[key] = value;
    out.emplace_back(key,
                     value.is_boolean() ? (value.get<bool>() ? "True" : "False") : value.dump());
  };
  put("model_type", type);
  put("hidden_size", a.hidden);
  put("num_layers", a.layers);
  put("num_attention_heads", a.heads);
  put("num_key_value_heads", a.kv_heads);
  put("head_dim", a.head_dim);
  put("intermediate_size", a.ffn);
  put("vocab_size", a.vocab);
  put("tie_word_embeddings", a.tied_embeddings);
  put("attention_bias", a.qkv_bias);
  put("hidden_act", a.gated_mlp ? "silu" : "gelu");
  if (a.experts > 0) {
    put("num_experts", a.experts);
    put("num_experts_per_tok", a.top_k);
    put("moe_intermediate_size", a.expert_ffn);
    if (a.moe_layout.decoder_sparse_step != 1) {
      put("decoder_sparse_step", a.moe_layout.decoder_sparse_step);
    }
    if (!a.moe_layout.mlp_only_layers.empty()) {
      put("mlp_only_layers", a.moe_layout.mlp_only_layers);
    }
  }
  // hf_config.h reads num_hidden_layers (MindFormers' alias num_layers).
  nlohmann::json check = j;
  check["num_hidden_layers"] = a.layers;
  check.erase("num_layers");
  Result<Architecture> back = ParseHfConfig(check.dump());
  if (!back.ok() || !SameShape(*back, a)) {
    why = std::string(
              "the model's shape is not written: no MindFormers family ppb writes "
              "(llama, qwen3, qwen3_moe) has it (") +
          (a.mla() ? "multi-latent attention"
           : a.experts > 0 && (a.shared_ffn > 0 || a.moe_layout.first_k_dense > 0 || a.router_bias)
               ? "shared experts, dense first layers or a router bias"
           : !a.blocks.empty() ? "hybrid or windowed layers"
                               : "LayerNorm, biases or learned positions") +
          "); set model.model_config by hand";
    return std::nullopt;
  }
  return out;
}

}  // namespace ppb::emit_detail
