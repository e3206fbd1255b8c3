// Bytes per parameter by precision, the tied-embedding copy on the last
// stage and the published parameter totals (core/cost_model.h), checked
// against Megatron-LM's theoretical_memory_usage.py and the models'
// published totals; and the config keys and report lines that carry them.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/input/config.h"
#include "core/cost_model.h"
#include "tests/app_helpers.h"
#include "tests/cost_models.h"

namespace ppb {
namespace {

using I64 = std::int64_t;

std::string Configs(const std::string& name) {
  return std::string(PPB_CONFIGS_DIR) + "/" + name;
}

Hardware Hw() {
  Hardware h;
  h.peak_tflops = 1000;
  return h;
}

// Megatron-LM megatron/training/theoretical_memory_usage.py
// (compute_weight_and_optimizer_memory), written out: the parameters of
// the transformer layers of a model without linear biases, where each
// layer counts two LayerNorms (weight and bias, 2 / h) and the final
// LayerNorm is spread over the layers (1 / (L h)).
double MegatronTransformerParams(const Architecture& a) {
  const double h = static_cast<double>(a.hidden);
  const double l = a.layers;
  const double query_ratio =
      static_cast<double>(a.heads * a.head_dim) / h;  // kv_channels * a / h
  const double gated = a.gated_mlp ? 3.0 / 2.0 : 1.0;
  return 2 * l * h * h *
         ((1 + static_cast<double>(a.kv_heads) / a.heads) * query_ratio +
          static_cast<double>(a.ffn) / h * gated + 2 / h + 1 / (l * h));
}
// Its bytes per parameter: 18, or 6 + 12 / (dp * cp) with the distributed
// optimizer.
double MegatronBytesPerParam(const Training& t) {
  return t.distributed_optimizer ? 6 + 12.0 / (t.dp * t.cp) : 18;
}

TEST_CASE("bytes per parameter by dtype and gradient dtype", "[cost]") {
  // Megatron's defaults (arguments.py): bf16 -> fp32 gradients, fp16 ->
  // fp16 gradients, fp32 -> fp32.
  CHECK(DefaultGradDtype(Dtype::Bf16) == Dtype::Fp32);
  CHECK(DefaultGradDtype(Dtype::Fp16) == Dtype::Fp16);
  CHECK(DefaultGradDtype(Dtype::Fp32) == Dtype::Fp32);
  struct Case {
    Dtype w, g;
    Optimizer o;
    int weight, grad, k;
  };
  for (const Case& c : {
           // bf16 + fp32 grads + Adam: Megatron's 18 = 2 + 4 + 12.
           Case{Dtype::Bf16, Dtype::Fp32, Optimizer::Adam, 2, 4, 12},
           Case{Dtype::Bf16, Dtype::Bf16, Optimizer::Adam, 2, 2, 12},
           Case{Dtype::Fp16, Dtype::Fp16, Optimizer::Adam, 2, 2, 12},
           Case{Dtype::Fp16, Dtype::Fp32, Optimizer::Adam, 2, 4, 12},
           // fp32 training: no master copy, Adam m + v only.
           Case{Dtype::Fp32, Dtype::Fp32, Optimizer::Adam, 4, 4, 8},
           Case{Dtype::Bf16, Dtype::Fp32, Optimizer::Sgd, 2, 4, 8},
           Case{Dtype::Fp32, Dtype::Fp32, Optimizer::Sgd, 4, 4, 4}}) {
    INFO(DtypeName(c.w) << " " << DtypeName(c.g));
    const ParamStateBytes b = StateBytes(c.w, c.g, c.o);
    CHECK(b.weight == c.weight);
    CHECK(b.gradient == c.grad);
    CHECK(b.optimizer == c.k);
    CHECK(b.PerParam(false, 8) == c.weight + c.grad + c.k);
    CHECK(b.PerParam(true, 4) == c.weight + c.grad + c.k / 4.0);
  }
  // theoretical_memory_usage.py: 18, and 6 + 12 / d.
  const ParamStateBytes megatron = StateBytes(Dtype::Bf16, Dtype::Fp32, Optimizer::Adam);
  CHECK(megatron.PerParam(false, 16) == 18.0);
  CHECK(megatron.PerParam(true, 16) == 6.0 + 12.0 / 16);
  // Formats Megatron does not train with.
  CHECK(ValidateGradDtype(Dtype::Fp32, Dtype::Bf16).error().message ==
        "must be fp32 with dtype fp32; got bf16");
  CHECK(ValidateGradDtype(Dtype::Bf16, Dtype::Fp16).error().message ==
        "must be fp32 or bf16 with dtype bf16; got fp16");
  CHECK(ValidateGradDtype(Dtype::Fp16, Dtype::Fp16).ok());
}

TEST_CASE("weights + optimizer memory equals Megatron's theoretical formula",
          "[cost]") {
  // The most loaded shard of theoretical_memory_usage.py (pp > 1): the
  // embedding and L/p transformer layers, / t, x bytes per parameter. Its
  // formula counts LayerNorm biases RMSNorm models lack, (2L + 1) h
  // parameters in the total; the rest is exact.
  for (const Architecture& a :
       {test::Llama2_7B(), test::Llama2_70B(), test::Llama3_8B(),
        test::Llama3_70B(), test::Llama31_405B()}) {
    INFO(a.hidden << " x " << a.layers);
    const double megatron_total =
        MegatronTransformerParams(a) + 2.0 * a.vocab * a.hidden;  // untied
    CHECK(megatron_total - static_cast<double>(TotalParams(a, false)) ==
          Approx((2.0 * a.layers + 1) * a.hidden));
    Training t;
    t.seq = 4096;
    t.tp = 8;
    t.dp = 4;
    t.pp = 2;
    for (bool distributed : {false, true}) {
      t.distributed_optimizer = distributed;
      const std::vector<DerivedLayer> d = DeriveLayers(a, t, Hw());
      double first = 0;  // embedding + L/p decoders
      for (int i = 0; i <= a.layers / t.pp; ++i) {
        first += static_cast<double>(d[i].layer.static_memory);
      }
      const double megatron =
          (MegatronTransformerParams(a) / t.pp +
           static_cast<double>(a.vocab * a.hidden)) /
          t.tp * MegatronBytesPerParam(t);
      // Per layer 4h of LayerNorms instead of 2h, and the final LayerNorm's
      // 2h spread over the layers: 2 (L + 1) h over p stages.
      const double norm_biases =
          2.0 * (a.layers + 1) * a.hidden / t.pp / t.tp * MegatronBytesPerParam(t);
      CHECK(megatron - first == Approx(norm_biases).margin(a.layers));
    }
  }
}

TEST_CASE("tied embeddings: the last stage holds a copy when p > 1",
          "[cost]") {
  const Architecture a = test::Gpt3_175B();  // tied, V = 50257, h = 12288
  Training t;
  t.seq = 2048;
  t.tp = 8;
  t.dp = 16;
  t.distributed_optimizer = true;
  t.pp = 1;
  const std::vector<DerivedLayer> one = DeriveLayers(a, t, Hw());
  t.pp = 8;
  const std::vector<DerivedLayer> eight = DeriveLayers(a, t, Hw());
  const DerivedLayer& h1 = one.back();
  const DerivedLayer& h8 = eight.back();
  REQUIRE(h8.layer.kind == LayerKind::Head);
  CHECK(h1.tied_copy_params == 0);
  CHECK(h8.tied_copy_params == 50257LL * 12288);
  // The copy is not a parameter of the model: params and totals unchanged.
  CHECK(h8.params.total() == h1.params.total());
  CHECK(h8.params.total() == 2 * 12288);  // final LayerNorm weight + bias
  // V h / t at (6 + 12/16) B: 77,194,752 x 6.75 = 521,064,576 B (~0.5 GB).
  CHECK(h8.layer.static_memory - h1.layer.static_memory == 521'064'576);
  CHECK(h8.provenance.find("tied-embedding copy V*h 617558016 [MLM]") !=
        std::string::npos);
  // Untied: no copy, whatever p.
  const std::vector<DerivedLayer> untied = DeriveLayers(test::Llama3_8B(), t, Hw());
  CHECK(untied.back().tied_copy_params == 0);
  CHECK(untied.back().params.total() == 4096 + 128256LL * 4096);
}

TEST_CASE("DeepSeek-V3: main model and MTP module as published", "[cost]") {
  const Architecture a = test::DeepSeekV3();
  // "671B": the main model, exactly.
  CHECK(TotalParams(a, false) == 671'026'419'200);
  // "685B total, including 671B of the main model and 14B of the MTP
  // module": the module with its own embedding and head.
  const I64 vh = 129280LL * 7168;
  CHECK(MtpModuleParams(a) == MtpLayerParams(a).total() + 2 * vh);
  CHECK(TotalParams(a, true) == TotalParams(a, false) + MtpModuleParams(a));
  CHECK(std::abs(static_cast<double>(TotalParams(a, true)) / 685e9 - 1) < 0.001);
  CHECK(std::abs(static_cast<double>(MtpModuleParams(a)) / 14e9 - 1) < 0.05);
  Architecture no_mtp = a;
  no_mtp.mtp_layers = 0;
  CHECK(MtpModuleParams(no_mtp) == 0);
}

// Published parameter counts of the shipped configs: the safetensors totals
// of the HuggingFace checkpoints, DeepSeek-V3's "671B" main model and
// GPT-3's 175.0B (Brown et al. 2020, Table 2.1).
TEST_CASE("shipped configs: main-model totals equal the published ones",
          "[cost][cli]") {
  struct Case {
    const char* config;
    I64 published;
    double tolerance;  // relative; 0: exact
  };
  for (const Case& c : {Case{"llama2-7b.yaml", 6'738'415'616, 0},
                        Case{"llama2-70b.yaml", 68'976'648'192, 0},
                        Case{"llama3-8b.yaml", 8'030'261'248, 0},
                        Case{"llama3-70b.yaml", 70'553'706'496, 0},
                        Case{"llama3.1-405b.yaml", 405'853'388'800, 0},
                        Case{"qwen2.5-72b.yaml", 72'706'203'648, 0},
                        Case{"mixtral-8x7b.yaml", 46'702'792'704, 0},
                        Case{"deepseek-v3.yaml", 671'026'419'200, 0},
                        Case{"gpt3-175b.yaml", 175'000'000'000, 0.005}}) {
    INFO(c.config);
    Result<RunConfig> cfg = LoadConfig(Configs(c.config), {});
    REQUIRE(cfg.ok());
    const I64 total = TotalParams(cfg->architecture, false);
    if (c.tolerance == 0) {
      CHECK(total == c.published);
    } else {
      CHECK(std::abs(static_cast<double>(total) / c.published - 1) < c.tolerance);
    }
    // The JSON report's total is the same number.
    test::CliRun j = test::Cli({"model", "--config", Configs(c.config), "--format", "json"});
    REQUIRE(j.status == 0);
    const nlohmann::json doc = nlohmann::json::parse(j.out);
    CHECK(doc["totals"]["params"].get<I64>() == total);
    CHECK(doc["precision"]["dtype"] == "bf16");
    CHECK(doc["precision"]["grad_dtype"] == "fp32");
  }
}

TEST_CASE("ppb-sim model names the totals' conventions", "[cost][cli]") {
  test::CliRun ds = test::Cli({"model", "--config", Configs("deepseek-v3.yaml")});
  REQUIRE(ds.status == 0);
  CHECK(ds.out.find("total: 671026419200 params (main model)") != std::string::npos);
  const std::string module = std::to_string(MtpModuleParams(test::DeepSeekV3()));
  const std::string with = std::to_string(TotalParams(test::DeepSeekV3(), true));
  CHECK(ds.out.find("the MTP module is " + module +
                    " params (with its own embedding and head), main model + "
                    "MTP module " + with + " params") != std::string::npos);
  CHECK(ds.out.find("precision: bf16 weights 2 B, fp32 gradients 4 B "
                    "(Megatron's default for bf16), Adam state 12 B") !=
        std::string::npos);
  test::CliRun gpt = test::Cli({"model", "--config", Configs("gpt3-175b.yaml")});
  REQUIRE(gpt.status == 0);
  CHECK(gpt.out.find("tied embeddings: with p = 8 > 1 the last stage (head) "
                     "also holds a copy of the word embeddings, 617558016 "
                     "params") != std::string::npos);
  // --stages 1: no copy.
  test::CliRun gpt1 = test::Cli({"model", "--config", Configs("gpt3-175b.yaml"),
                                 "--stages", "1"});
  REQUIRE(gpt1.status == 0);
  CHECK(gpt1.out.find("tied embeddings:") == std::string::npos);
}

// A derived config whose training section ends the text (line 9 onward).
std::string Run(const std::string& training) {
  return "model: {name: l2, hf_config: hf/llama2-7b.json}\n"
         "hardware: {peak_tflops: 400}\n"
         "cluster: {devices: {memory: 80GiB}}\n"
         "pipeline: {stages: 2, microbatches: 4}\n"
         "training:\n"
         "  seq_length: 4096\n"
         "  tensor_parallel: 2\n" +
         training;
}

Result<RunConfig> ParseRun(const std::string& text) {
  return ParseConfig(text, std::string(PPB_TEST_DATA_DIR) + "/run.yaml", {});
}

TEST_CASE("config: training.dtype and grad_dtype set the bytes", "[cost]") {
  Result<RunConfig> fp16 = ParseRun(Run("  dtype: fp16\n"));
  REQUIRE(fp16.ok());
  CHECK(fp16->training.dtype == Dtype::Fp16);
  CHECK(fp16->training.grad_dtype == Dtype::Fp16);  // Megatron's default
  CHECK(fp16->training.pp == 2);
  // decoder.0: 202,383,360 params / 2 at 2 + 2 + 12 = 16 B.
  const DerivedLayer& d16 = fp16->derived[1];
  CHECK(d16.layer.static_memory == d16.params.total() / 2 * 16);
  CHECK(d16.provenance.find("x 16 B/param (fp16 weight 2 + fp16 grad 2 + Adam 12: "
                            "fp32 master 4 + m, v 8)") != std::string::npos);
  Result<RunConfig> fp16_32 = ParseRun(Run("  dtype: fp16\n  grad_dtype: fp32\n"));
  REQUIRE(fp16_32.ok());
  CHECK(fp16_32->derived[1].layer.static_memory == d16.params.total() / 2 * 18);
  Result<RunConfig> fp32 = ParseRun(Run("  dtype: fp32\n"));
  REQUIRE(fp32.ok());
  CHECK(fp32->derived[1].layer.static_memory == d16.params.total() / 2 * 16);
  CHECK(fp32->training.activation_bytes == 4);
  CHECK(fp32->derived[1].provenance.find("(fp32 weight 4 + fp32 grad 4 + Adam 8: m, v 8)") !=
        std::string::npos);
  // Bad values: file, line, key, expected, given.
  const std::string file = std::string(PPB_TEST_DATA_DIR) + "/run.yaml";
  Result<RunConfig> bad = ParseRun(Run("  dtype: fp32\n  grad_dtype: bf16\n"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == file + ":9: training.grad_dtype: must be fp32 with dtype fp32; got bf16");
  Result<RunConfig> odd = ParseRun(Run("  grad_dtype: fp8\n"));
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.error().message.rfind(file + ":8: training.grad_dtype: must be one of bf16, fp16, fp32", 0) == 0);
  CHECK(odd.error().message.find("fp8") != std::string::npos);
  test::CliRun cli = test::Cli({"model", "--config", Configs("llama3-8b.yaml")});
  REQUIRE(cli.status == 0);
}

}  // namespace
}  // namespace ppb
