// HuggingFace config.json reading (apps/hf_config.h): each family's
// spelling, the totals of the reference models through the file, and
// errors that name the field.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "apps/input/hf_config.h"
#include "core/cost_model.h"

namespace ppb {
namespace {

std::string Hf(const std::string& name) {
  return std::string(PPB_TEST_DATA_DIR) + "/hf/" + name;
}

Architecture Load(const std::string& name) {
  Result<Architecture> a = LoadHfConfig(Hf(name));
  INFO(name);
  if (!a.ok()) FAIL(FormatHfError(name, a.error()));
  return *a;
}

TEST_CASE("hf: dense families give the exact published totals", "[cost]") {
  CHECK(TotalParams(Load("llama2-7b.json"), false) == 6'738'415'616);
  CHECK(TotalParams(Load("llama3-8b.json"), false) == 8'030'261'248);
  const Architecture q = Load("qwen2.5-72b.json");
  CHECK(q.qkv_bias);
  CHECK(q.kv_heads == 8);
  CHECK(TotalParams(q, false) == 72'706'203'648);
}

TEST_CASE("hf: GPT-2 names, Mixtral, DeepSeek-V3", "[cost]") {
  const Architecture g = Load("gpt3-175b.json");
  CHECK(g.tied_embeddings);
  CHECK(g.layernorm_with_bias);
  CHECK_FALSE(g.gated_mlp);
  CHECK(g.learned_positions == 2048);
  CHECK(std::abs(TotalParams(g, false) / 174.6e9 - 1) < 0.005);

  const Architecture m = Load("mixtral-8x7b.json");
  CHECK(m.experts == 8);
  CHECK(m.top_k == 2);
  CHECK(m.IsMoeLayer(0));
  CHECK(std::abs(TotalParams(m, false) / 46.70e9 - 1) < 0.005);

  const Architecture d = Load("deepseek-v3.json");
  CHECK(d.mla());
  CHECK(d.mtp_layers == 1);
  CHECK(d.shared_ffn == 2048);
  CHECK_FALSE(d.IsMoeLayer(2));
  CHECK(d.IsMoeLayer(3));
  CHECK(std::abs(TotalParams(d, false) / 671.0e9 - 1) < 0.005);
  CHECK(TotalParams(d, true) > TotalParams(d, false));
}

TEST_CASE("hf: Qwen MoE layouts, shared expert, qk norm", "[cost]") {
  const Architecture q2 = Load("qwen2-moe-small.json");
  CHECK(q2.experts == 8);
  CHECK(q2.shared_ffn == 128);
  CHECK(q2.shared_expert_gate);
  CHECK(q2.qkv_bias);
  CHECK_FALSE(q2.IsMoeLayer(0));
  CHECK(q2.IsMoeLayer(1));
  CHECK_FALSE(q2.IsMoeLayer(3));
  CHECK(q2.IsMoeLayer(5));
  // Layer 1 by hand: norms 2h, q/o 2*h*64, k/v 2*h*32, qkv bias 128,
  // router h*8, 8 experts 3*h*32, shared 3*h*128, shared gate h.
  const std::int64_t h = 64;
  CHECK(DecoderLayerParams(q2, 1).total() ==
        2 * h + 2 * h * 64 + 2 * h * 32 + 128 + h * 8 + 8 * 3 * h * 32 +
            3 * h * 128 + h);

  const Architecture q3 = Load("qwen3-moe-small.json");
  CHECK(q3.head_dim == 32);
  CHECK(q3.qk_norm);
  CHECK_FALSE(q3.qkv_bias);
  CHECK(q3.tied_embeddings);
  CHECK(q3.IsMoeLayer(0));
  CHECK(HeadParams(q3).total() == 0);
}

TEST_CASE("hf: text_config nesting", "[cost]") {
  const Architecture a = Load("multimodal-text-config.json");
  CHECK(a.hidden == 4096);
  CHECK(a.kv_heads == 32);  // absent: = heads
  CHECK(TotalParams(a, false) == 6'738'415'616);
}

TEST_CASE("hf: errors name the field", "[cost]") {
  struct Case {
    const char* file;
    const char* key;
    const char* says;
  };
  const Case cases[] = {
      {"bad-model-type.json", "model_type", "got mamba"},
      {"bad-kv-heads.json", "num_key_value_heads", "must divide"},
      {"bad-contradiction.json", "n_embd", "must equal hidden_size"},
      {"bad-missing.json", "num_local_experts", "must be given"},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    Result<Architecture> a = LoadHfConfig(Hf(c.file));
    REQUIRE_FALSE(a.ok());
    CHECK(a.error().key == c.key);
    CHECK(a.error().message.find(c.says) != std::string::npos);
    const std::string text = FormatHfError(c.file, a.error());
    CHECK(text.rfind(std::string(c.file) + ": " + c.key + ": ", 0) == 0);
  }
  Result<Architecture> nested =
      ParseHfConfig(R"({"text_config": {"model_type": "llama"}})");
  REQUIRE_FALSE(nested.ok());
  CHECK(nested.error().key == "text_config.hidden_size");
  CHECK_FALSE(ParseHfConfig("{not json").ok());
  // A number beyond double's range is an error, not an abort.
  Result<Architecture> huge = ParseHfConfig(R"({"hidden_size": 1e400})");
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message ==
        "must be valid JSON (a HuggingFace config.json); got an error "
        "([json.exception.out_of_range.406] number overflow parsing '1e400')");
  // Fields whose parameter counts would overflow are refused, with the key.
  std::ifstream in(Hf("llama3-8b.json"));
  const std::string llama((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = llama;
    text.replace(text.find(from), from.size(), to);
    return ParseHfConfig(text);
  };
  REQUIRE(with("\"vocab_size\": 128256", "\"vocab_size\": 128256").ok());
  Result<Architecture> vocab =
      with("\"vocab_size\": 128256", "\"vocab_size\": 1244444444448256");
  REQUIRE_FALSE(vocab.ok());
  CHECK(vocab.error().key == "vocab_size");
  CHECK(vocab.error().message ==
        "must be an integer of at most 1048576; got 1244444444448256");
  Result<Architecture> hidden = with("\"hidden_size\": 4096",
                                     "\"hidden_size\": 4000000000000000000");
  REQUIRE_FALSE(hidden.ok());
  CHECK(hidden.error().key == "hidden_size");
  CHECK(hidden.error().message ==
        "must be an integer of at most 1048576; got 4000000000000000000");
  CHECK(ParseHfConfig("[1]").error().message ==
        "must be a JSON object (a HuggingFace config.json); got [1]");
  CHECK_FALSE(LoadHfConfig(Hf("no-such.json")).ok());
}

}  // namespace
}  // namespace ppb
