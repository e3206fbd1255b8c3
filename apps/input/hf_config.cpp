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

#define PPB_HF_ASSIGN(lhs, expr)          \
  do {                                    \
    auto r_ = (expr);                     \
    if (!r_.ok()) return r_.error();      \
    lhs = *r_;                            \
  } while (false)

const std::vector<std::string>& KnownTypes() {
  static const std::vector<std::string> kTypes = {
      "llama",     "mistral",     "qwen2",       "qwen3",       "mixtral",
      "qwen2_moe", "qwen3_moe",   "deepseek_v2", "deepseek_v3", "gpt2"};
  return kTypes;
}

Result<Architecture> ParseObject(const Fields& f) {
  Architecture a;
  std::string type;
  PPB_HF_ASSIGN(type, f.String("model_type", ""));
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
  const bool deepseek = type == "deepseek_v2" || type == "deepseek_v3";
  const bool qwen_moe = type == "qwen2_moe" || type == "qwen3_moe";

  std::int64_t v = 0;
  PPB_HF_ASSIGN(a.hidden, f.Alias({"hidden_size", "n_embd"}, 1));
  PPB_HF_ASSIGN(v, f.Alias({"num_hidden_layers", "n_layer"}, 1));
  a.layers = static_cast<int>(v);
  PPB_HF_ASSIGN(v, f.Alias({"num_attention_heads", "n_head"}, 1));
  a.heads = static_cast<int>(v);
  PPB_HF_ASSIGN(v, f.Int("num_key_value_heads", 1, a.heads));
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
  PPB_HF_ASSIGN(a.head_dim, f.Int("head_dim", 1, a.hidden / a.heads));
  PPB_HF_ASSIGN(a.vocab, f.Int("vocab_size", 1, std::nullopt));

  std::string act;
  PPB_HF_ASSIGN(act, f.String(gpt2 ? "activation_function" : "hidden_act",
                              gpt2 ? "gelu_new" : "silu"));
  a.gated_mlp = act == "silu" || act == "swish" || act == "swiglu";
  // PretrainedConfig defaults tie_word_embeddings to true; the Llama-style
  // config classes of these families default it to false.
  PPB_HF_ASSIGN(a.tied_embeddings, f.Bool("tie_word_embeddings", gpt2));

  if (gpt2) {
    // GPT-2: LayerNorm with biases, biased linears, learned positions,
    // n_inner null = 4h [HF configuration_gpt2.py].
    a.layernorm_with_bias = true;
    PPB_HF_ASSIGN(a.ffn, f.Int("n_inner", 1, 4 * a.hidden));
    PPB_HF_ASSIGN(a.learned_positions, f.Int("n_positions", 1, std::nullopt));
    return a;
  }
  // Qwen2(-MoE) always has Q/K/V biases; Llama/Mistral-style use
  // attention_bias.
  PPB_HF_ASSIGN(a.qkv_bias, f.Bool("attention_bias", type == "qwen2" ||
                                                         type == "qwen2_moe"));
  a.qk_norm = type == "qwen3" || type == "qwen3_moe";

  const bool needs_dense_ffn = type != "mixtral";
  if (needs_dense_ffn || f.Has("intermediate_size")) {
    PPB_HF_ASSIGN(a.ffn, f.Int("intermediate_size", 1, std::nullopt));
  }
  if (type == "mixtral") {
    PPB_HF_ASSIGN(v, f.Int("num_local_experts", 1, std::nullopt));
    a.experts = static_cast<int>(v);
    PPB_HF_ASSIGN(a.expert_ffn, f.Int("intermediate_size", 1, std::nullopt));
    a.ffn = a.expert_ffn;
  } else if (qwen_moe) {
    PPB_HF_ASSIGN(v, f.Int("num_experts", 1, std::nullopt));
    a.experts = static_cast<int>(v);
    PPB_HF_ASSIGN(a.expert_ffn, f.Int("moe_intermediate_size", 1, std::nullopt));
    PPB_HF_ASSIGN(a.shared_ffn, f.Int("shared_expert_intermediate_size", 0, 0));
    a.shared_expert_gate = a.shared_ffn > 0;
    PPB_HF_ASSIGN(v, f.Int("decoder_sparse_step", 1, 1));
    a.moe_layout.decoder_sparse_step = static_cast<int>(v);
    // mlp_only_layers (a list) is read by ParseHfConfig.
  } else if (deepseek) {
    PPB_HF_ASSIGN(v, f.Int("n_routed_experts", 1, std::nullopt));
    a.experts = static_cast<int>(v);
    PPB_HF_ASSIGN(a.expert_ffn, f.Int("moe_intermediate_size", 1, std::nullopt));
    std::int64_t shared = 0;
    PPB_HF_ASSIGN(shared, f.Int("n_shared_experts", 0, 0));
    a.shared_ffn = shared * a.expert_ffn;
    PPB_HF_ASSIGN(v, f.Int("first_k_dense_replace", 0, 0));
    a.moe_layout.first_k_dense = static_cast<int>(v);
    PPB_HF_ASSIGN(v, f.Int("moe_layer_freq", 1, 1));
    a.moe_layout.moe_layer_freq = static_cast<int>(v);
    PPB_HF_ASSIGN(a.q_lora_rank, f.Int("q_lora_rank", 0, 0));
    PPB_HF_ASSIGN(a.kv_lora_rank, f.Int("kv_lora_rank", 1, std::nullopt));
    PPB_HF_ASSIGN(a.qk_nope_head_dim, f.Int("qk_nope_head_dim", 1, std::nullopt));
    PPB_HF_ASSIGN(a.qk_rope_head_dim, f.Int("qk_rope_head_dim", 1, std::nullopt));
    PPB_HF_ASSIGN(a.v_head_dim, f.Int("v_head_dim", 1, std::nullopt));
    PPB_HF_ASSIGN(v, f.Int("num_nextn_predict_layers", 0, 0));
    a.mtp_layers = static_cast<int>(v);
    // DeepSeek-V3's noaux_tc routing adds e_score_correction_bias [HF].
    a.router_bias = type == "deepseek_v3";
    a.kv_heads = a.heads;  // MLA: every head has its own K and V
  }
  if (a.experts > 0) {
    PPB_HF_ASSIGN(v, f.Int("num_experts_per_tok", 1, std::nullopt));
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
