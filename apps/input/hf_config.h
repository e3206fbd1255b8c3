// Reads a HuggingFace `config.json` into an Architecture (core/architecture.h).
//
// Families (by `model_type`; a multimodal config's language model is read
// from its `text_config`):
//   llama, mistral, qwen2, qwen3     dense, GQA (num_key_value_heads), qkv
//                                    bias for qwen2 (and attention_bias)
//   mixtral                          num_local_experts, intermediate_size
//   qwen2_moe, qwen3_moe             num_experts, moe_intermediate_size,
//                                    shared_expert_intermediate_size,
//                                    decoder_sparse_step, mlp_only_layers
//   deepseek_v2, deepseek_v3         MLA ranks and head dims,
//                                    n_routed_experts, n_shared_experts,
//                                    first_k_dense_replace, moe_layer_freq,
//                                    num_nextn_predict_layers
//   gpt2 (and GPT-2 style names)     n_embd, n_layer, n_head, n_inner,
//                                    n_positions; LayerNorm, biases, tied
// Errors: Error::key is the JSON field ("num_attention_heads",
// "text_config.hidden_size"), the message says what was expected and what
// was given; the file name is the caller's to add (FormatHfError).
#pragma once

#include <string>
#include <string_view>

#include "core/architecture.h"
#include "core/result.h"

namespace ppb {

Result<Architecture> ParseHfConfig(std::string_view json_text);
// Reads `path`; an unreadable file is an error with key "" naming it.
Result<Architecture> LoadHfConfig(const std::string& path);

// "config.json: num_attention_heads: must be given ...; got nothing".
std::string FormatHfError(std::string_view file, const Error& error);

}  // namespace ppb
