// ReadModelDict, ReadModel and WriteArchitecture
// (apps/input/mindformers_model.h).
#include "apps/input/mindformers_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string_view>
#include <utility>

#include "apps/input/architecture_writer.h"
#include "apps/input/config.h"
#include "apps/input/hf_config.h"

namespace ppb::mindformers_detail {
namespace {

// MindFormers' aliases of the model fields ppb reads (COMMON_CONFIG_MAPPING
// of parallel_core/transformer_config_utils.py), each group under the
// HuggingFace name hf_config.h reads. The experts' count is
// "num_moe_experts" until the family names it.
const std::vector<std::pair<std::string, std::vector<std::string>>>& Aliases() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
      {"num_hidden_layers", {"num_layers", "num_hidden_layers", "n_layer"}},
      {"num_attention_heads", {"num_heads", "num_attention_heads", "n_head"}},
      {"num_key_value_heads", {"n_kv_heads", "num_key_value_heads", "num_query_groups"}},
      {"intermediate_size", {"intermediate_size", "ffn_hidden_size"}},
      {"head_dim", {"head_dim", "kv_channels"}},
      {"attention_bias", {"qkv_has_bias", "attention_bias", "add_qkv_bias"}},
      {"num_moe_experts", {"expert_num", "n_routed_experts", "num_experts", "num_moe_experts"}},
      {"num_experts_per_tok", {"num_experts_chosen", "num_experts_per_tok", "moe_router_topk"}},
      {"moe_intermediate_size", {"moe_intermediate_size", "moe_ffn_hidden_size"}},
      {"num_nextn_predict_layers", {"mtp_depth", "num_nextn_predict_layers", "mtp_num_layers"}},
      {"qk_nope_head_dim", {"qk_nope_head_dim", "qk_head_dim"}},
      {"qk_rope_head_dim", {"qk_rope_head_dim", "qk_pos_emb_head_dim"}},
      {"n_shared_experts", {"n_shared_experts", "shared_expert_num"}},
      {"hidden_size", {"hidden_size"}},
      {"vocab_size", {"vocab_size"}},
      {"tie_word_embeddings", {"tie_word_embeddings"}},
      {"untie_embeddings_and_output_weights", {"untie_embeddings_and_output_weights"}},
      {"hidden_act", {"hidden_act"}},
      {"q_lora_rank", {"q_lora_rank"}},
      {"kv_lora_rank", {"kv_lora_rank"}},
      {"v_head_dim", {"v_head_dim"}},
      {"first_k_dense_replace", {"first_k_dense_replace"}},
      {"moe_layer_freq", {"moe_layer_freq"}},
      {"moe_shared_expert_intermediate_size", {"moe_shared_expert_intermediate_size"}},
      {"shared_expert_intermediate_size", {"shared_expert_intermediate_size"}},
      {"decoder_sparse_step", {"decoder_sparse_step"}},
      {"mlp_only_layers", {"mlp_only_layers"}},
      {"model_type", {"model_type"}},
      {"multiple_of", {"multiple_of"}},
      {"ffn_dim_multiplier", {"ffn_dim_multiplier"}},
  };
  return table;
}

// A YAML value as JSON (ints, floats, bools, None, strings, lists).
nlohmann::json ToJson(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return nullptr;
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const YAML::Node& x : n) a.push_back(ToJson(x));
    return a;
  }
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) o[kv.first.Scalar()] = ToJson(kv.second);
    return o;
  }
  if (const std::optional<std::int64_t> i = Doc::AsInt(n)) return *i;
  if (const std::optional<bool> b = Doc::AsBool(n)) return *b;
  const std::string& s = n.Scalar();
  if (s == "None" || s == "null" || s == "~") return nullptr;
  try {
    size_t used = 0;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

}  // namespace

ModelDict ReadModelDict(Doc& doc, std::vector<std::string>& notes) {
  ModelDict d;
  const std::string mc = "model.model_config";
  const YAML::Node model = doc.Get(mc);
  if (!model.IsMap()) {
    doc.Wrong(mc, "a map of the model's fields (MindFormers' model.model_config)");
  }
  // The mcore form: pretrained_model_dir's config.json first.
  const std::string dir = doc.Str("pretrained_model_dir", "");
  if (!dir.empty()) {
    std::filesystem::path json = std::filesystem::path(dir) / "config.json";
    if (json.is_relative()) json = std::filesystem::path(doc.path()).parent_path() / json;
    std::string text;
    if (ReadTextFile(json.string(), text)) {
      try {
        d.hf = nlohmann::json::parse(text);
      } catch (const nlohmann::json::exception& e) {
        Fail(
            fmt::format("{}: pretrained_model_dir: must hold a HuggingFace config.json; got {} "
                        "that is not JSON ({})",
                        doc.Line("pretrained_model_dir"), json.string(), e.what()));
      }
      if (!d.hf.is_object()) {
        Fail(
            fmt::format("{}: pretrained_model_dir: must hold a HuggingFace config.json (an "
                        "object); got {}",
                        doc.Line("pretrained_model_dir"), json.string()));
      }
      for (auto it = d.hf.begin(); it != d.hf.end(); ++it) d.origin[it.key()] = json.string();
    } else {
      d.unread_dir = json.string();
      notes.push_back(fmt::format(
          "pretrained_model_dir: {} not read (no readable config.json, looked for relative to "
          "the YAML's folder); the shape comes from model.model_config alone",
          dir));
    }
  }
  std::map<std::string, std::string> by_alias;
  for (const auto& [hf, names] : Aliases()) {
    for (const std::string& n : names) by_alias[n] = hf;
  }
  std::map<std::string, std::string> given;  // HF field -> the model_config key
  for (const auto& kv : model) {
    const std::string key = kv.first.Scalar();
    const auto it = by_alias.find(key);
    if (it == by_alias.end()) {
      if (key != "seq_length" && key != "offset" && key != "pp_interleave_num" &&
          key != "compute_dtype" && key != "type" && key != "expert_model_parallel" &&
          key != "expert_tensor_parallel_size") {
        d.ignored.push_back(mc + "." + key);
      }
      continue;
    }
    const std::string full = mc + "." + key;
    doc.MarkRead(full);
    if (const auto g = given.find(it->second); g != given.end()) {
      Fail(
          fmt::format("{}: {}: must be given once (MindFormers maps {} and {} to one field, "
                      "and refuses both: 'Multiple Config'); got both",
                      doc.Line(full), full, g->second, key));
    }
    given[it->second] = key;
    d.hf[it->second] = ToJson(kv.second);
    d.origin[it->second] = fmt::format("{}: {}", doc.Line(full), full);
  }
  // MindFormers' untie_embeddings_and_output_weights is HF's tie, negated.
  if (d.hf.contains("untie_embeddings_and_output_weights")) {
    const nlohmann::json u = d.hf["untie_embeddings_and_output_weights"];
    if (!u.is_boolean()) {
      doc.Wrong(mc + "." + given["untie_embeddings_and_output_weights"], "a bool");
    }
    if (given.count("tie_word_embeddings") != 0 &&
        (!d.hf["tie_word_embeddings"].is_boolean() ||
         d.hf["tie_word_embeddings"].get<bool>() == u.get<bool>())) {
      Fail(
          fmt::format("{}: {}.untie_embeddings_and_output_weights: must be the negation of "
                      "tie_word_embeddings ({}) when both are given; got {}",
                      doc.Line(mc + ".untie_embeddings_and_output_weights"), mc,
                      d.hf["tie_word_embeddings"].dump(-1, ' ', false,
                                                       nlohmann::json::error_handler_t::replace),
                      u.dump()));
    }
    d.hf["tie_word_embeddings"] = !u.get<bool>();
    d.origin["tie_word_embeddings"] = d.origin["untie_embeddings_and_output_weights"];
    d.hf.erase("untie_embeddings_and_output_weights");
  }
  return d;
}

namespace {

// The model_type of the legacy form, by its config class; the experts of
// its top-level moe_config.
// A model_config key of the legacy classes that the alias table does not
// hold, read (and so no longer listed as ignored).
YAML::Node TakeKey(Doc& doc, ModelDict& d, const std::string& key) {
  const std::string full = "model.model_config." + key;
  d.ignored.erase(std::remove(d.ignored.begin(), d.ignored.end(), full), d.ignored.end());
  return doc.Get(full);
}

// ChatGLM2Config (models/glm2/glm2_config.py; GLM-4's legacy form) as a
// Llama-style HuggingFace config: its defaults (28 layers of 4096, FFN
// 13696, 32 heads of kv_channels 128, padded_vocab_size 65024, Q/K/V
// biases), multi_query_attention's multi_query_group_num KV heads (2),
// SwiGLU, RMSNorm, an untied output layer.
void GlmModel(Doc& doc, ModelDict& d, const std::string& where) {
  d.hf["model_type"] = "llama";
  d.origin["model_type"] = where;
  auto fallback = [&](const char* key, const nlohmann::json& value) {
    if (!d.hf.contains(key)) {
      d.hf[key] = value;
      d.origin[key] = where + " (ChatGLM2Config's default)";
    }
  };
  fallback("num_hidden_layers", 28);
  fallback("hidden_size", 4096);
  fallback("intermediate_size", 13696);
  fallback("head_dim", 128);
  fallback("num_attention_heads", 32);
  fallback("attention_bias", true);
  fallback("tie_word_embeddings", false);
  const std::string mc = "model.model_config.";
  if (const YAML::Node v = TakeKey(doc, d, "padded_vocab_size"); v.IsDefined()) {
    if (d.hf.contains("vocab_size")) {
      Fail(
          fmt::format("{}: {}padded_vocab_size: must not be given with vocab_size (one "
                      "field); got both",
                      doc.Line(mc + "padded_vocab_size"), mc));
    }
    d.hf["vocab_size"] = ToJson(v);
    d.origin["vocab_size"] = doc.Line(mc + "padded_vocab_size") + ": " + mc + "padded_vocab_size";
  }
  fallback("vocab_size", 65024);
  auto flag = [&](const char* key, bool def) {
    const YAML::Node v = TakeKey(doc, d, key);
    if (!v.IsDefined() || v.IsNull()) return def;
    const std::optional<bool> b = Doc::AsBool(v);
    if (!b) doc.Wrong(mc + key, "a bool (True or False)");
    return *b;
  };
  if (!flag("rmsnorm", true)) {
    doc.Wrong(mc + "rmsnorm", "True (ppb reads GLM with RMSNorm; LayerNorm GLM is not read)");
  }
  if (flag("add_bias_linear", false)) {
    doc.Wrong(mc + "add_bias_linear",
              "False (ppb reads GLM's biases on Q, K and V only, add_qkv_bias)");
  }
  const bool mqa = flag("multi_query_attention", true);
  const YAML::Node groups = TakeKey(doc, d, "multi_query_group_num");
  if (!d.hf.contains("num_key_value_heads")) {
    if (!mqa) {
      d.hf["num_key_value_heads"] = d.hf["num_attention_heads"];
      d.origin["num_key_value_heads"] =
          doc.Line(mc + "multi_query_attention") + ": " + mc + "multi_query_attention";
    } else if (groups.IsDefined()) {
      d.hf["num_key_value_heads"] = ToJson(groups);
      d.origin["num_key_value_heads"] =
          doc.Line(mc + "multi_query_group_num") + ": " + mc + "multi_query_group_num";
    } else {
      fallback("num_key_value_heads", 2);
    }
  }
}

void LegacyModel(Doc& doc, ModelDict& d) {
  const std::string type_key = "model.model_config.type";
  const std::string type = doc.Str(type_key, "");
  if (type == "ChatGLM2Config") {
    GlmModel(doc, d, doc.Line(type_key) + ": " + type_key);
    return;
  }
  const bool experts = doc.Has("moe_config.expert_num") &&
                       Doc::AsInt(doc.Get("moe_config.expert_num")).value_or(1) > 1;
  if (type != "LlamaConfig" && !d.unread_dir.empty()) {
    Fail(fmt::format(
        "{}: pretrained_model_dir: must be a folder holding the model's "
        "HuggingFace config.json (model.model_config names no model_type); got "
        "'{}' (no readable {})",
        doc.Line("pretrained_model_dir"), doc.Str("pretrained_model_dir", ""), d.unread_dir));
  }
  if (type != "LlamaConfig") {
    Fail(
        fmt::format("{}: model.model_config.model_type: must be given (the mcore form: "
                    "llama, qwen2, qwen3, qwen3_moe, deepseek_v3, ..., in model_config or "
                    "pretrained_model_dir's config.json), or model_config.type must be "
                    "LlamaConfig or ChatGLM2Config (the legacy forms ppb reads); got {}",
                    doc.Line(type.empty() ? "model.model_config" : type_key),
                    type.empty() ? "neither" : "type '" + type + "'"));
  }
  d.hf["model_type"] = experts ? "mixtral" : "llama";
  d.origin["model_type"] = doc.Line(type_key) + ": " + type_key;
  if (experts) {
    for (const auto& [key, hf] : {std::pair{"expert_num", "num_moe_experts"},
                                  std::pair{"num_experts_chosen", "num_experts_per_tok"}}) {
      const std::string full = std::string("moe_config.") + key;
      if (!doc.Has(full)) continue;
      if (d.hf.contains(hf)) {
        Fail(fmt::format("{}: {}: must be given once; got it in model_config too", doc.Line(full),
                         full));
      }
      d.hf[hf] = ToJson(doc.Get(full));
      d.origin[hf] = doc.Line(full) + ": " + full;
    }
    // LlamaConfig's MoE defaults (mindformers/modules/transformer/moe.py
    // MoEConfig: num_experts_chosen=1).
    if (!d.hf.contains("num_experts_per_tok")) d.hf["num_experts_per_tok"] = 1;
  }
  // LlamaConfig's FFN width when intermediate_size is not given:
  // LlamaFeedForward's own rule (models/llama/llama_layer.py) on
  // hidden_dim = 4h: int((ffn_dim_multiplier + 0.01) x 4h) when a
  // multiplier is given, then int(2 x that / 3), rounded up to multiple_of
  // (256 by default). Llama-3.1-70B (1.3, 256): 28,672.
  if (!d.hf.contains("intermediate_size") && d.hf.contains("hidden_size") &&
      d.hf["hidden_size"].is_number_integer() && d.hf["hidden_size"].get<std::int64_t>() > 0 &&
      d.hf["hidden_size"].get<std::int64_t>() <= kMaxInt) {
    std::int64_t multiple = 256;
    if (d.hf.contains("multiple_of")) {
      if (!d.hf["multiple_of"].is_number_integer() || d.hf["multiple_of"].get<std::int64_t>() < 1 ||
          d.hf["multiple_of"].get<std::int64_t>() > kMaxInt) {
        doc.Wrong("model.model_config.multiple_of",
                  fmt::format("a positive integer (at most {})", kMaxInt));
      }
      multiple = d.hf["multiple_of"].get<std::int64_t>();
    }
    std::int64_t width = 4 * d.hf["hidden_size"].get<std::int64_t>();
    if (d.hf.contains("ffn_dim_multiplier") && !d.hf["ffn_dim_multiplier"].is_null()) {
      if (!d.hf["ffn_dim_multiplier"].is_number() ||
          !(d.hf["ffn_dim_multiplier"].get<double>() > 0) ||
          d.hf["ffn_dim_multiplier"].get<double>() > 1000) {
        doc.Wrong("model.model_config.ffn_dim_multiplier",
                  "a positive number (at most 1000) or None");
      }
      width = static_cast<std::int64_t>((d.hf["ffn_dim_multiplier"].get<double>() + 0.01) *
                                        static_cast<double>(width));
    }
    width = 2 * width / 3;
    d.hf["intermediate_size"] = multiple * ((width + multiple - 1) / multiple);
    d.origin["intermediate_size"] = d.origin.count("multiple_of") != 0
                                        ? d.origin["multiple_of"]
                                        : "LlamaConfig's FeedForward rule";
  }
}

}  // namespace

void WriteArchitecture(ConfigWriter& o, const Architecture& a,
                       const std::map<std::string, std::string>& origin, const std::string& where) {
  if (!a.blocks.empty() || a.sliding_window > 0 || a.attention_chunk > 0 || a.attention_sinks ||
      a.attention_out_gate || a.out_bias || a.expert_bias) {
    Fail(where +
         ": the model: must be a transformer of full-attention layers (ppb reads MindFormers' "
         "llama, qwen, mixtral and deepseek models); got hybrid, windowed or biased layers");
  }
  // Each ppb key's HuggingFace names, the first given placing its line.
  static const std::map<std::string_view, std::vector<const char*>> kNames = {
      {"hidden_size", {"hidden_size"}},
      {"num_layers", {"num_hidden_layers"}},
      {"num_attention_heads", {"num_attention_heads"}},
      {"num_key_value_heads", {"num_key_value_heads", "num_attention_heads"}},
      {"head_dim", {"head_dim", "hidden_size"}},
      {"ffn_hidden_size", {"intermediate_size"}},
      {"vocab_size", {"vocab_size"}},
      {"tie_embeddings", {"tie_word_embeddings", "model_type"}},
      {"gated_mlp", {"hidden_act", "model_type"}},
      {"qkv_bias", {"attention_bias", "model_type"}},
      {"mtp_layers", {"num_nextn_predict_layers"}},
      {"moe.num_experts", {"num_local_experts", "n_routed_experts", "num_experts"}},
      {"moe.top_k", {"num_experts_per_tok"}},
      {"moe.expert_ffn_hidden_size", {"moe_intermediate_size", "intermediate_size"}},
      {"moe.shared_ffn_hidden_size",
       {"n_shared_experts", "shared_expert_intermediate_size",
        "moe_shared_expert_intermediate_size"}},
      {"moe.first_k_dense", {"first_k_dense_replace"}},
      {"moe.layer_freq", {"moe_layer_freq"}},
      {"moe.sparse_step", {"decoder_sparse_step"}},
      {"moe.dense_layers", {"mlp_only_layers"}},
      {"mla.q_lora_rank", {"q_lora_rank"}},
      {"mla.kv_lora_rank", {"kv_lora_rank"}},
      {"mla.qk_nope_head_dim", {"qk_nope_head_dim"}},
      {"mla.qk_rope_head_dim", {"qk_rope_head_dim"}},
      {"mla.v_head_dim", {"v_head_dim"}}};
  auto at = [&](std::string_view key) -> std::string {
    const auto names = kNames.find(key);
    for (const char* k : names != kNames.end() ? names->second
                                               : std::vector<const char*>{"model_type"}) {
      if (const auto it = origin.find(k); it != origin.end()) return it->second;
    }
    return where;
  };
  if (Status st = ppb::WriteArchitecture(o, a, at); !st.ok()) {
    Fail(where + ": the model: " + st.error().message);
  }
}

// The model: its dict, its family's names, and the Architecture.
Architecture ReadModel(Doc& doc, ModelDict& d) {
  if (!d.hf.contains("model_type")) LegacyModel(doc, d);
  if (!d.hf["model_type"].is_string()) doc.Wrong("model.model_config.model_type", "a string");
  const std::string type = d.hf["model_type"].get<std::string>();
  // The experts' count under the family's own name.
  if (d.hf.contains("num_moe_experts")) {
    const char* name = type == "mixtral"                                ? "num_local_experts"
                       : type == "deepseek_v2" || type == "deepseek_v3" ? "n_routed_experts"
                                                                        : "num_experts";
    d.hf[name] = d.hf["num_moe_experts"];
    d.origin[name] = d.origin["num_moe_experts"];
    d.hf.erase("num_moe_experts");
  }
  // Strings that are not UTF-8 are replaced, not thrown on (the YAML may
  // hold any bytes).
  Result<Architecture> a =
      ParseHfConfig(d.hf.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!a.ok()) {
    const Error& e = a.error();
    std::string key = e.key;
    if (const size_t dot = key.find('.'); dot != std::string::npos) key = key.substr(dot + 1);
    const auto it = d.origin.find(key);
    const std::string where = it != d.origin.end() ? it->second : doc.Line("model.model_config");
    Fail(fmt::format("{} (read as the HuggingFace {} config's {}): {}", where, type,
                     e.key.empty() ? std::string("fields") : e.key, e.message));
  }
  return *a;
}

}  // namespace ppb::mindformers_detail
