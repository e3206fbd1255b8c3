// MindFormersModelFields (apps/output/emit_mindformers_model.h).
#include "apps/output/emit_mindformers_model.h"

#include <nlohmann/json.hpp>

#include "apps/input/hf_config.h"

namespace ppb::emit_detail {

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
  if (!back.ok() || !SameLayers(*back, a)) {
    why = std::string(
              "the model's shape is not written: no MindFormers family ppb writes "
              "(llama, qwen3, qwen3_moe) has it (") +
          (a.mla()              ? "multi-latent attention"
           : a.moe_latent > 0   ? "a latent MoE"
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
