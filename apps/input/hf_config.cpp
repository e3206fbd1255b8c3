// HuggingFace config.json reader (apps/input/hf_config.h).
#include "apps/input/hf_config.h"

#include <fstream>
#include <initializer_list>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/input/json_text.h"
#include "apps/input/status_macros.h"

namespace ppb {
namespace {

using nlohmann::json;

// Largest integer field (sizes, counts): 2^20, far above every published
// model (vocab_size 256000, hidden_size 16384), so that a product of two
// fields (vocab_size x hidden_size, hidden_size x intermediate_size) stays
// within 2^40 and the parameter and byte counts derived from them within
// int64; vocab_size 1244444444448256 is refused here, not a negative size.
constexpr std::int64_t kMaxField = std::int64_t{1} << 20;

// Reads fields of one JSON object, remembering the key prefix
// ("text_config.") for errors.
class Fields {
 public:
  Fields(const json& obj, std::string prefix)
      : obj_(obj), prefix_(std::move(prefix)) {}

  bool Has(const char* key) const {
    auto it = obj_.find(key);
    return it != obj_.end() && !it->is_null();
  }

  Error Fail(const std::string& key, const std::string& message) const {
    return Error{prefix_ + key, message};
  }

  // An integer >= `min` and at most kMaxField; absent or null: `fallback`
  // when given, else an error.
  Result<std::int64_t> Int(const char* key, std::int64_t min,
                           std::optional<std::int64_t> fallback) const {
    if (!Has(key)) {
      if (fallback) return *fallback;
      return Fail(key, "must be given (an integer >= " + std::to_string(min) +
                           "); got nothing");
    }
    const json& v = obj_.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < min) {
      return Fail(key, "must be an integer >= " + std::to_string(min) +
                           "; got " + JsonGiven(v));
    }
    if (v.get<std::int64_t>() > kMaxField) {
      return Fail(key, "must be an integer of at most " +
                           std::to_string(kMaxField) + "; got " + JsonGiven(v));
    }
    return v.get<std::int64_t>();
  }

  Result<bool> Bool(const char* key, bool fallback) const {
    if (!Has(key)) return fallback;
    const json& v = obj_.at(key);
    if (!v.is_boolean()) return Fail(key, "must be true or false; got " + JsonGiven(v));
    return v.get<bool>();
  }

  Result<std::string> String(const char* key, std::string fallback) const {
    if (!Has(key)) return fallback;
    const json& v = obj_.at(key);
    if (!v.is_string()) return Fail(key, "must be a string; got " + JsonGiven(v));
    return v.get<std::string>();
  }

  // The first of `keys` present (all present ones must agree).
  Result<std::int64_t> Alias(std::initializer_list<const char*> keys,
                             std::int64_t min) const {
    const char* found = nullptr;
    std::int64_t value = 0;
    for (const char* k : keys) {
      if (!Has(k)) continue;
      Result<std::int64_t> v = Int(k, min, std::nullopt);
      if (!v.ok()) return v.error();
      if (found != nullptr && *v != value) {
        return Fail(k, std::string("must equal ") + found + " (" +
                           std::to_string(value) + ") when both are given; got " +
                           std::to_string(*v));
      }
      found = k;
      value = *v;
    }
    if (found == nullptr) {
      return Fail(*keys.begin(), "must be given (an integer >= " +
                                     std::to_string(min) + "); got nothing");
    }
    return value;
  }

 private:
  const json& obj_;
  std::string prefix_;
};


const std::vector<std::string>& KnownTypes() {
  static const std::vector<std::string> kTypes = {
      "llama",     "mistral",     "qwen2",       "qwen3",       "mixtral",
      "qwen2_moe", "qwen3_moe",   "deepseek_v2", "deepseek_v3", "kimi_k2",
      "gpt2",      "gpt_oss",     "nemotron_h",  "qwen3_next",  "llama4",
      "llama4_text", "glm4_moe"};
  return kTypes;
}

// DeepSeek's MoE fields, as DeepSeek-V2/V3, Kimi K2 and GLM-4.5 name them:
// n_routed_experts of moe_intermediate_size, n_shared_experts of the same
// width, the first first_k_dense_replace layers dense.
Status ReadRoutedExperts(const Fields& f, Architecture& a) {
  std::int64_t v = 0;
  PPB_ASSIGN_OR_RETURN(v, f.Int("n_routed_experts", 1, std::nullopt));
  a.experts = static_cast<int>(v);
  PPB_ASSIGN_OR_RETURN(a.expert_ffn, f.Int("moe_intermediate_size", 1, std::nullopt));
  PPB_ASSIGN_OR_RETURN(v, f.Int("n_shared_experts", 0, 0));
  a.shared_ffn = v * a.expert_ffn;
  PPB_ASSIGN_OR_RETURN(v, f.Int("first_k_dense_replace", 0, 0));
  a.moe_layout.first_k_dense = static_cast<int>(v);
  return Status();
}

Result<Architecture> ParseObject(const Fields& f) {
  Architecture a;
  std::string type;
  PPB_ASSIGN_OR_RETURN(type, f.String("model_type", ""));
  if (type.empty() && f.Has("n_embd")) type = "gpt2";  // GPT-2 style names
  bool known = false;
  std::string list;
  for (const std::string& k : KnownTypes()) {
    known |= k == type;
    list += (list.empty() ? "" : ", ") + k;
  }
  if (!known) {
    return f.Fail("model_type", "must be one of " + list + "; got " +
                                    (type.empty() ? "nothing" : type));
  }
  const bool gpt2 = type == "gpt2";
  // Kimi K2 is DeepSeek-V3's architecture (its config.json names
  // DeepseekV3ForCausalLM).
  const bool deepseek =
      type == "deepseek_v2" || type == "deepseek_v3" || type == "kimi_k2";
  const bool qwen_next = type == "qwen3_next";
  const bool qwen_moe = type == "qwen2_moe" || type == "qwen3_moe" || qwen_next;
  const bool gpt_oss = type == "gpt_oss";
  const bool nemotron = type == "nemotron_h";
  const bool llama4 = type == "llama4" || type == "llama4_text";
  const bool glm = type == "glm4_moe";

  std::int64_t v = 0;
  PPB_ASSIGN_OR_RETURN(a.hidden, f.Alias({"hidden_size", "n_embd"}, 1));
  PPB_ASSIGN_OR_RETURN(v, f.Alias({"num_hidden_layers", "n_layer"}, 1));
  a.layers = static_cast<int>(v);
  PPB_ASSIGN_OR_RETURN(v, f.Alias({"num_attention_heads", "n_head"}, 1));
  a.heads = static_cast<int>(v);
  PPB_ASSIGN_OR_RETURN(v, f.Int("num_key_value_heads", 1, a.heads));
  a.kv_heads = static_cast<int>(v);
  if (a.heads % a.kv_heads != 0) {
    return f.Fail("num_key_value_heads",
                  "must divide num_attention_heads (" +
                      std::to_string(a.heads) + "); got " +
                      std::to_string(a.kv_heads));
  }
  if (!f.Has("head_dim") && !deepseek && a.hidden % a.heads != 0) {
    return f.Fail("num_attention_heads",
                  "must divide hidden_size (" + std::to_string(a.hidden) +
                      ") when head_dim is not given; got " +
                      std::to_string(a.heads));
  }
  PPB_ASSIGN_OR_RETURN(a.head_dim, f.Int("head_dim", 1, a.hidden / a.heads));
  PPB_ASSIGN_OR_RETURN(a.vocab, f.Int("vocab_size", 1, std::nullopt));

  std::string act;
  // Nemotron-H names its MLP's activation mlp_hidden_act (relu2: squared
  // ReLU, two matrices) [HF configuration_nemotron_h.py].
  PPB_ASSIGN_OR_RETURN(act, f.String(gpt2       ? "activation_function"
                              : nemotron ? "mlp_hidden_act"
                                         : "hidden_act",
                              gpt2 ? "gelu_new" : nemotron ? "relu2" : "silu"));
  a.gated_mlp = act == "silu" || act == "swish" || act == "swiglu";
  // PretrainedConfig defaults tie_word_embeddings to true; the Llama-style
  // config classes of these families default it to false.
  PPB_ASSIGN_OR_RETURN(a.tied_embeddings, f.Bool("tie_word_embeddings", gpt2));

  if (gpt2) {
    // GPT-2: LayerNorm with biases, biased linears, learned positions,
    // n_inner null = 4h [HF configuration_gpt2.py].
    a.layernorm_with_bias = true;
    PPB_ASSIGN_OR_RETURN(a.ffn, f.Int("n_inner", 1, 4 * a.hidden));
    PPB_ASSIGN_OR_RETURN(a.learned_positions, f.Int("n_positions", 1, std::nullopt));
    return a;
  }
  // Qwen2(-MoE) always has Q/K/V biases; Llama/Mistral-style use
  // attention_bias.
  PPB_ASSIGN_OR_RETURN(a.qkv_bias, f.Bool("attention_bias", type == "qwen2" ||
                                                         type == "qwen2_moe"));
  a.qk_norm = type == "qwen3" || type == "qwen3_moe" || qwen_next;
  if (glm) {
    // GLM-4.5: biases on Q, K, V only; q_norm and k_norm with use_qk_norm
    // [HF modeling_glm4_moe.py].
    PPB_ASSIGN_OR_RETURN(a.qk_norm, f.Bool("use_qk_norm", false));
  }
  if (gpt_oss) {
    // GPT-OSS: attention_bias on q, k, v and o; a sink logit per head; a
    // biased router and biased experts [HF modeling_gpt_oss.py].
    a.out_bias = a.qkv_bias;
    a.attention_sinks = true;
    a.router_bias = true;
    a.expert_bias = true;
  }
  a.attention_out_gate = qwen_next;  // [HF modeling_qwen3_next.py]

  if (gpt_oss) {
    PPB_ASSIGN_OR_RETURN(v, f.Int("num_local_experts", 1, std::nullopt));
    a.experts = static_cast<int>(v);
    PPB_ASSIGN_OR_RETURN(a.expert_ffn, f.Int("intermediate_size", 1, std::nullopt));
    a.ffn = a.expert_ffn;
  } else if (nemotron) {
    PPB_ASSIGN_OR_RETURN(a.ffn, f.Int("intermediate_size", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.mamba.heads, f.Int("mamba_num_heads", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.mamba.head_dim, f.Int("mamba_head_dim", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.mamba.state, f.Int("ssm_state_size", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.mamba.groups, f.Int("n_groups", 1, 8));
    PPB_ASSIGN_OR_RETURN(a.mamba.conv, f.Int("conv_kernel", 1, 4));
    PPB_ASSIGN_OR_RETURN(a.mamba.chunk, f.Int("chunk_size", 1, 128));
    PPB_ASSIGN_OR_RETURN(a.mamba.conv_bias, f.Bool("use_conv_bias", true));
    PPB_ASSIGN_OR_RETURN(a.mamba.proj_bias, f.Bool("use_bias", false));
    if (a.mamba.heads % a.mamba.groups != 0) {
      return f.Fail("n_groups", "must divide mamba_num_heads (" +
                                    std::to_string(a.mamba.heads) + "); got " +
                                    std::to_string(a.mamba.groups));
    }
    if (f.Has("n_routed_experts")) {
      // Nemotron 3's "E" blocks: routed squared-ReLU experts, a shared
      // expert and DeepSeek-V3's score-correction bias.
      PPB_ASSIGN_OR_RETURN(v, f.Int("n_routed_experts", 1, std::nullopt));
      a.experts = static_cast<int>(v);
      PPB_ASSIGN_OR_RETURN(a.expert_ffn, f.Int("moe_intermediate_size", 1, std::nullopt));
      PPB_ASSIGN_OR_RETURN(a.shared_ffn, f.Int("moe_shared_expert_intermediate_size", 0, 0));
      a.router_bias = true;
    }
  } else if (llama4) {
    // Llama 4: routed experts and one shared expert of intermediate_size,
    // dense layers of intermediate_size_mlp [HF modeling_llama4.py].
    PPB_ASSIGN_OR_RETURN(v, f.Int("num_local_experts", 1, std::nullopt));
    a.experts = static_cast<int>(v);
    PPB_ASSIGN_OR_RETURN(a.expert_ffn, f.Int("intermediate_size", 1, std::nullopt));
    a.shared_ffn = a.expert_ffn;
    PPB_ASSIGN_OR_RETURN(a.ffn, f.Int("intermediate_size_mlp", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(v, f.Int("interleave_moe_layer_step", 1, 1));
    a.moe_layout.decoder_sparse_step = static_cast<int>(v);
    PPB_ASSIGN_OR_RETURN(a.attention_chunk, f.Int("attention_chunk_size", 0, 0));
  } else if (glm) {
    PPB_ASSIGN_OR_RETURN(a.ffn, f.Int("intermediate_size", 1, std::nullopt));
    if (Status st = ReadRoutedExperts(f, a); !st.ok()) return st.error();
    PPB_ASSIGN_OR_RETURN(v, f.Int("num_nextn_predict_layers", 0, 0));
    a.mtp_layers = static_cast<int>(v);
    a.router_bias = true;  // e_score_correction_bias [HF]
  }

  const bool needs_dense_ffn = type != "mixtral" && !gpt_oss && !llama4 && !glm;
  if (needs_dense_ffn || f.Has("intermediate_size")) {
    PPB_ASSIGN_OR_RETURN(a.ffn, f.Int("intermediate_size", 1, std::nullopt));
  }
  if (type == "mixtral") {
    PPB_ASSIGN_OR_RETURN(v, f.Int("num_local_experts", 1, std::nullopt));
    a.experts = static_cast<int>(v);
    PPB_ASSIGN_OR_RETURN(a.expert_ffn, f.Int("intermediate_size", 1, std::nullopt));
    a.ffn = a.expert_ffn;
  } else if (qwen_moe) {
    PPB_ASSIGN_OR_RETURN(v, f.Int("num_experts", 1, std::nullopt));
    a.experts = static_cast<int>(v);
    PPB_ASSIGN_OR_RETURN(a.expert_ffn, f.Int("moe_intermediate_size", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.shared_ffn, f.Int("shared_expert_intermediate_size", 0, 0));
    a.shared_expert_gate = a.shared_ffn > 0;
    PPB_ASSIGN_OR_RETURN(v, f.Int("decoder_sparse_step", 1, 1));
    a.moe_layout.decoder_sparse_step = static_cast<int>(v);
    // mlp_only_layers (a list) is read by ParseHfConfig.
  } else if (deepseek) {
    if (Status st = ReadRoutedExperts(f, a); !st.ok()) return st.error();
    PPB_ASSIGN_OR_RETURN(v, f.Int("moe_layer_freq", 1, 1));
    a.moe_layout.moe_layer_freq = static_cast<int>(v);
    PPB_ASSIGN_OR_RETURN(a.q_lora_rank, f.Int("q_lora_rank", 0, 0));
    PPB_ASSIGN_OR_RETURN(a.kv_lora_rank, f.Int("kv_lora_rank", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.qk_nope_head_dim, f.Int("qk_nope_head_dim", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.qk_rope_head_dim, f.Int("qk_rope_head_dim", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.v_head_dim, f.Int("v_head_dim", 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(v, f.Int("num_nextn_predict_layers", 0, 0));
    a.mtp_layers = static_cast<int>(v);
    // DeepSeek-V3's noaux_tc routing adds e_score_correction_bias [HF].
    a.router_bias = type == "deepseek_v3" || type == "kimi_k2";
    a.kv_heads = a.heads;  // MLA: every head has its own K and V
  }
  if (a.experts > 0) {
    PPB_ASSIGN_OR_RETURN(v, f.Int("num_experts_per_tok", 1, std::nullopt));
    if (v > a.experts) {
      return f.Fail("num_experts_per_tok",
                    "must be at most the experts (" +
                        std::to_string(a.experts) + "); got " +
                        std::to_string(v));
    }
    a.top_k = static_cast<int>(v);
  }
  return a;
}

// A list of `layers` strings, each one of `names` (their index in `names`
// returned per layer); absent or null: empty.
Result<std::vector<int>> NamedList(const json& obj, const std::string& prefix,
                                   const char* key, int layers,
                                   std::initializer_list<const char*> names) {
  std::vector<int> out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  std::string expected;
  for (const char* n : names) expected += (expected.empty() ? "" : " or ") + std::string(n);
  if (!it->is_array() || static_cast<int>(it->size()) != layers) {
    return Error{prefix + key, "must be a list of " + std::to_string(layers) +
                                   " entries (one per layer: " + expected +
                                   "); got " + JsonGiven(*it)};
  }
  for (const json& x : *it) {
    int found = -1, i = 0;
    for (const char* n : names) {
      if (x.is_string() && x.get<std::string>() == n) found = i;
      if (x.is_number_integer() && std::to_string(x.get<std::int64_t>()) == n) found = i;
      ++i;
    }
    if (found < 0) {
      return Error{prefix + key, "must hold " + expected + " per layer; got " + JsonGiven(x)};
    }
    out.push_back(found);
  }
  return out;
}

// The layer blocks of the hybrid and windowed families
// (core/architecture.h LayerBlock), from each one's config fields
// [HF configuration_gpt_oss.py, configuration_qwen3_next.py,
// configuration_nemotron_h.py, configuration_llama4.py].
Status ParseBlocks(const json& obj, const std::string& prefix,
                   const std::string& type, Architecture& a) {
  const Fields f(obj, prefix);
  const int L = a.layers;
  if (type == "gpt_oss") {
    PPB_ASSIGN_OR_RETURN(a.sliding_window, f.Int("sliding_window", 1, std::nullopt));
    Result<std::vector<int>> kinds = NamedList(
        obj, prefix, "layer_types", L, {"sliding_attention", "full_attention"});
    if (!kinds.ok()) return kinds.error();
    a.blocks.assign(L, LayerBlock{});
    for (int i = 0; i < L; ++i) {
      // Without layer_types: even layers sliding, odd full (the config's
      // default).
      const bool sliding = kinds->empty() ? i % 2 == 0 : (*kinds)[i] == 0;
      a.blocks[i].span = sliding ? Span::Sliding : Span::Full;
    }
  } else if (type == "qwen3_next") {
    std::int64_t interval = 4;
    PPB_ASSIGN_OR_RETURN(interval, f.Int("full_attention_interval", 1, 4));
    Result<std::vector<int>> kinds = NamedList(
        obj, prefix, "layer_types", L, {"linear_attention", "full_attention"});
    if (!kinds.ok()) return kinds.error();
    PPB_ASSIGN_OR_RETURN(a.deltanet.key_heads, f.Int("linear_num_key_heads", 1, 16));
    PPB_ASSIGN_OR_RETURN(a.deltanet.value_heads, f.Int("linear_num_value_heads", 1, 32));
    PPB_ASSIGN_OR_RETURN(a.deltanet.key_dim, f.Int("linear_key_head_dim", 1, 128));
    PPB_ASSIGN_OR_RETURN(a.deltanet.value_dim, f.Int("linear_value_head_dim", 1, 128));
    PPB_ASSIGN_OR_RETURN(a.deltanet.conv, f.Int("linear_conv_kernel_dim", 1, 4));
    a.blocks.assign(L, LayerBlock{});
    for (int i = 0; i < L; ++i) {
      const bool linear = kinds->empty() ? (i + 1) % interval != 0 : (*kinds)[i] == 0;
      if (linear) a.blocks[i].mixer = Mixer::GatedDeltaNet;
    }
  } else if (type == "nemotron_h") {
    std::string pattern;
    PPB_ASSIGN_OR_RETURN(pattern, f.String("hybrid_override_pattern", ""));
    if (static_cast<int>(pattern.size()) != L ||
        pattern.find_first_not_of("M*-E") != std::string::npos) {
      return f.Fail("hybrid_override_pattern",
                    "must be " + std::to_string(L) +
                        " characters of M (Mamba-2), * (attention), - (MLP) "
                        "and E (MoE), one per layer; got \"" + pattern + "\"");
    }
    a.blocks.assign(L, LayerBlock{});
    for (int i = 0; i < L; ++i) {
      LayerBlock& b = a.blocks[i];
      switch (pattern[i]) {
        case 'M': b = {Mixer::Mamba2, Span::Full, MlpKind::None}; break;
        case '*': b = {Mixer::Attention, Span::Full, MlpKind::None}; break;
        case '-': b = {Mixer::None, Span::Full, MlpKind::Dense}; break;
        default: b = {Mixer::None, Span::Full, MlpKind::Moe}; break;
      }
      if (pattern[i] == 'E' && a.experts == 0) {
        return f.Fail("hybrid_override_pattern",
                      "has MoE blocks (E), which need n_routed_experts; got none");
      }
    }
  } else if ((type == "llama4" || type == "llama4_text") && a.attention_chunk > 0) {
    // Chunked attention on the RoPE layers; the NoPE layers (no_rope_layers
    // 0, every no_rope_layer_interval-th by default) see every key.
    std::int64_t interval = 4;
    PPB_ASSIGN_OR_RETURN(interval, f.Int("no_rope_layer_interval", 1, 4));
    Result<std::vector<int>> rope = NamedList(obj, prefix, "no_rope_layers", L, {"0", "1"});
    if (!rope.ok()) return rope.error();
    a.blocks.assign(L, LayerBlock{});
    for (int i = 0; i < L; ++i) {
      const bool uses_rope = rope->empty() ? (i + 1) % interval != 0 : (*rope)[i] == 1;
      if (uses_rope) a.blocks[i].span = Span::Chunked;
    }
  }
  return Status();
}

// The architecture of config.json's text; may throw nlohmann's exceptions
// (they stop at ParseHfConfig).
Result<Architecture> ParseRoot(std::string_view json_text) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond double (1e400).
    return Error{"", "must be valid JSON (a HuggingFace config.json); got "
                     "an error (" + std::string(e.what()) + ")"};
  }
  if (!root.is_object()) {
    return Error{"", "must be a JSON object (a HuggingFace config.json); got " +
                         JsonGiven(root)};
  }
  const json* obj = &root;
  std::string prefix;
  if (auto it = root.find("text_config");
      it != root.end() && !it->is_null()) {
    if (!it->is_object()) {
      return Error{"text_config", "must be an object; got " + JsonGiven(*it)};
    }
    obj = &*it;
    prefix = "text_config.";
  }
  Result<Architecture> a = ParseObject(Fields(*obj, prefix));
  if (!a.ok()) return a;
  if (auto it = obj->find("mlp_only_layers");
      it != obj->end() && !it->is_null()) {
    if (!it->is_array()) {
      return Error{prefix + "mlp_only_layers",
                   "must be a list of layer indices; got " + JsonGiven(*it)};
    }
    for (const json& x : *it) {
      if (!x.is_number_integer() || x.get<std::int64_t>() < 0 ||
          x.get<std::int64_t>() >= a->layers) {
        return Error{prefix + "mlp_only_layers",
                     "must hold layer indices in 0.." +
                         std::to_string(a->layers - 1) + "; got " + JsonGiven(x)};
      }
      a->moe_layout.mlp_only_layers.push_back(x.get<int>());
    }
  }
  const std::string type = obj->value("model_type", std::string());
  if (Status st = ParseBlocks(*obj, prefix, type, *a); !st.ok()) return st.error();
  return a;
}

}  // namespace

Result<Architecture> ParseHfConfig(std::string_view json_text) {
  try {
    return ParseRoot(json_text);
  } catch (const json::exception& e) {
    return Error{"", "must be a readable HuggingFace config.json; got an "
                     "error (" + std::string(e.what()) + ")"};
  }
}

Result<Architecture> LoadHfConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"", "cannot be read"};
  std::ostringstream text;
  text << in.rdbuf();
  return ParseHfConfig(text.str());
}

std::string FormatHfError(std::string_view file, const Error& error) {
  std::string s(file);
  s += ": ";
  if (!error.key.empty()) s += error.key + ": ";
  return s + error.message;
}

}  // namespace ppb
