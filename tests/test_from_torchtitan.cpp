// --from torchtitan (issue 47): the TOML reader (apps/input/toml_reader.h),
// torchtitan v0.2.2's flavours (torchtitan_models.h) and job config read
// as a ppb config (torchtitan_launch.h) with the split and recompute by
// torchtitan's rules (apps/commands/from_launch.h). torchtitan's own job
// configs (tests/data/torchtitan/, tag v0.2.2) simulate the same as the
// same runs written by hand; refusals name the line and the key.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "apps/commands/from_launch.h"
#include "apps/input/config.h"
#include "apps/input/python_config.h"
#include "apps/input/text_lines.h"
#include "apps/input/toml_reader.h"
#include "apps/input/torchtitan_models.h"
#include "apps/output/emit.h"
#include "core/cost_model.h"
#include "tests/launch_helpers.h"

namespace ppb {
namespace {

using test::H100;

std::string Refusal(const std::string& text, std::optional<int> gpus = std::nullopt) {
  Result<commands::LaunchConfig> r = test::TorchtitanToml(text, gpus);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("toml: every value form with its line") {
  const std::string text =
      "# a comment\n"
      "top = 1\n"
      "[a]\n"
      "s = \"x \\\"q\\\" \\u00e9 \\t\"  # trailing comment\n"
      "lit = 'C:\\path'\n"
      "n = -1_000\n"
      "h = 0xff\n"
      "f = 3e-4\n"
      "g = -1.5\n"
      "inf_ = +inf\n"
      "b = false\n"
      "arr = [\n"
      "  [\"x\", \"y\"],  # inner\n"
      "  [],\n"
      "]\n"
      "\"quoted key\".sub = 2\n"
      "inline = { k = 1, deep = { z = 'w' } }\n"
      "[b.\"c\".d]\n"
      "e = true\n";
  Result<TomlDocument> doc = ReadToml("t.toml", text);
  if (!doc.ok()) FAIL(doc.error().message);
  const auto& v = doc->values;
  CHECK(v.at("top").i == 1);
  CHECK(v.at("top").line == 2);
  CHECK(v.at("a.s").s == "x \"q\" \xc3\xa9 \t");
  CHECK(v.at("a.s").line == 4);
  CHECK(v.at("a.lit").s == "C:\\path");
  CHECK(v.at("a.n").i == -1000);
  CHECK(v.at("a.h").i == 255);
  CHECK(v.at("a.f").kind == TomlValue::Kind::Float);
  CHECK(v.at("a.f").f == 3e-4);
  CHECK(v.at("a.g").f == -1.5);
  CHECK(std::isinf(v.at("a.inf_").f));
  CHECK(v.at("a.b").kind == TomlValue::Kind::Bool);
  CHECK_FALSE(v.at("a.b").b);
  REQUIRE(v.at("a.arr").items.size() == 2);
  CHECK(v.at("a.arr").items[0].items[1].s == "y");
  CHECK(v.at("a.arr").items[1].items.empty());
  CHECK(v.at("a.arr").line == 12);
  CHECK(v.at("a.quoted key.sub").i == 2);
  CHECK(v.at("a.inline.k").i == 1);
  CHECK(v.at("a.inline.deep.z").s == "w");
  CHECK(v.at("b.c.d.e").b);
  CHECK(v.at("b.c.d.e").line == 19);
  CHECK(doc->tables.at("b.c.d") == 18);
  CHECK(DescribeToml(v.at("a.arr")) == "an array of 2");
}

TEST_CASE("toml: what TOML forbids and what is not read is refused at its line") {
  auto error = [](const std::string& text) {
    Result<TomlDocument> doc = ReadToml("t.toml", text);
    REQUIRE_FALSE(doc.ok());
    return doc.error().message;
  };
  CHECK(error("a = 1\na = 2\n") ==
        "t.toml:2: a: must be given once (TOML); it was also given on line 1");
  CHECK(error("[x]\nk = 1\n[x]\n") ==
        "t.toml:3: [x]: must be given once (TOML); it was also given on line 1");
  CHECK(error("a = 1\na.b = 2\n") == "t.toml:2: a.b: a is a value (line 1), not a table");
  CHECK(error("\n[[runs]]\n").rfind("t.toml:2: arrays of tables ([[...]]) are not read", 0) == 0);
  CHECK(error("s = \"\"\"\nx\n\"\"\"\n") ==
        "t.toml:1: s: multi-line strings are not read; write the value on one line");
  CHECK(error("d = 1979-05-27\n") ==
        "t.toml:1: d: expected a string, a number, true, false or an array (dates and times "
        "are not read); got '1979-05-27'");
  CHECK(error("n = 07\n") ==
        "t.toml:1: n: expected a string, a number, true, false or an array (a leading "
        "zero); got '07'");
  CHECK(error("n = 1__0\n") ==
        "t.toml:1: n: expected a string, a number, true, false or an array ('_' must sit "
        "between digits); got '1__0'");
  CHECK(error("s = \"a\\q\"\n") ==
        "t.toml:1: s: expected an escape (\\\" \\\\ \\b \\t \\n \\f \\r \\u \\U); got '\\q'");
  CHECK(error("s = \"open\nt = 1\n") ==
        "t.toml:1: s: expected \" to close the string; got the end of the line");
  CHECK(error("a = [1,\n2\n") ==
        "t.toml:3: a: expected ']' to close the array; got the end of the file");
  CHECK(error("a = 1 b\n") == "t.toml:1: expected the end of the line; got 'b'");
  CHECK(error("x = 99999999999999999999\n") ==
        "t.toml:1: x: expected a string, a number, true, false or an array (outside the "
        "64-bit integers); got '99999999999999999999'");
  CHECK(error(std::string(70, '[').insert(0, "a = ") + "\n") ==
        "t.toml:1: a: nests more than 64 deep");
}

TEST_CASE("torchtitan flavours: llama3's SwiGLU width by FeedForward's rule") {
  // int(2 * 4d / 3), times ffn_dim_multiplier, rounded up to multiple_of.
  CHECK(Llama3FfnHidden(4096, 1024, 1.3) == 14336);   // 10922 -> 14198 -> 14336
  CHECK(Llama3FfnHidden(8192, 4096, 1.3) == 28672);   // 21845 -> 28398 -> 28672
  CHECK(Llama3FfnHidden(16384, 4096, 1.2) == 53248);  // 43690 -> 52428 -> 53248
  CHECK(Llama3FfnHidden(256, 256, 0) == 768);         // debugmodel: 682 -> 768
  const TorchtitanFlavour* q = FindTorchtitanFlavour("qwen3", "32B");
  REQUIRE(q != nullptr);
  CHECK(FfnHidden(*q) == 25600);
  CHECK(q->qk_norm);
  CHECK(FindTorchtitanFlavour("llama3", "7B") == nullptr);
  CHECK(TorchtitanFlavours("llama3").size() == 8);
  CHECK(TorchtitanFlavours("llama3", true).size() == 6);
  // main's qwen3_configs: 8 dense flavours and 3 MoE ones.
  CHECK(TorchtitanFlavours("qwen3", true).size() == 11);
  CHECK(TorchtitanFlavours("qwen3").size() == 10);
  const TorchtitanFlavour* big = FindTorchtitanFlavour("qwen3", "235B-A22B", true);
  REQUIRE(big != nullptr);
  CHECK(big->experts == 128);
  CHECK(big->top_k == 8);
  CHECK(big->moe_hidden == 1536);
  CHECK(big->n_kv_heads == 4);
  const TorchtitanFlavour* q06 = FindTorchtitanFlavour("qwen3", "0.6B", true);
  REQUIRE(q06 != nullptr);
  CHECK(q06->tied);
  CHECK(q06->attention == "flex");
}

TEST_CASE("torchtitan v0.2.2's own job configs simulate as the same runs written by hand") {
  SECTION("llama3_8b.toml on 64 GPUs: FSDP2, op-level SAC") {
    CHECK(test::LaunchJson("torchtitan", test::TorchtitanData("llama3_8b.toml"), H100(64)) ==
          test::TorchtitanConfigJson("llama3_8b_64.yaml"));
  }
  SECTION("llama3_405b.toml on 512 GPUs: TP 8 with async TP, Float8, full AC") {
    CHECK(test::LaunchJson("torchtitan", test::TorchtitanData("llama3_405b.toml"), H100(512)) ==
          test::TorchtitanConfigJson("llama3_405b_512.yaml"));
  }
  SECTION("the pipeline defaults: the split rule, two stages a rank, layer SAC every 2") {
    CHECK(test::LaunchJson("torchtitan", test::TorchtitanData("llama3_8b_pp.toml"), H100()) ==
          test::TorchtitanConfigJson("llama3_8b_pp.yaml"));
  }
  SECTION("qwen3_32b.toml: the flavour's shape") {
    Result<commands::LaunchConfig> r =
        commands::ReadLaunchConfig("torchtitan", test::TorchtitanData("qwen3_32b.toml"),
                                   test::ReadAll(test::TorchtitanData("qwen3_32b.toml")), H100(64));
    if (!r.ok()) FAIL(r.error().message);
    for (const char* line :
         {"    hidden_size: 5120\n", "    num_layers: 64\n", "    num_attention_heads: 64\n",
          "    num_key_value_heads: 8\n", "    head_dim: 128\n", "    ffn_hidden_size: 25600\n",
          "    vocab_size: 151936\n", "    qk_norm: true\n", "  tensor_parallel: 1\n",
          "  data_parallel: 64\n"}) {
      CHECK(r->yaml.find(line) != std::string::npos);
    }
  }
}

TEST_CASE("torchtitan: what was assumed and ignored is said") {
  Result<commands::LaunchConfig> r = commands::ReadLaunchConfig(
      "torchtitan", test::TorchtitanData("llama3_405b.toml"),
      test::ReadAll(test::TorchtitanData("llama3_405b.toml")), H100(512));
  REQUIRE(r.ok());
  REQUIRE(r->notes.size() == 2);
  CHECK(r->notes[0] ==
        "model.converters: \"float8\" is torchtitan v0.1's name; v0.2.2 registers it as "
        "\"quantize.linear.float8\", and is read as that");
  CHECK(r->notes[1].rfind("ignored (ppb does not model them): checkpoint.async_mode ", 0) == 0);
  CHECK(r->notes[1].find(" job.dump_folder ") != std::string::npos);
  CHECK(r->notes[1].find(" optimizer.lr ") != std::string::npos);
  // Where each line came from.
  REQUIRE(r->origins.size() > 20);
  const std::string path = test::TorchtitanData("llama3_405b.toml");
  bool found = false;
  for (const std::string& o : r->origins) {
    found = found || o == path + ":41: parallelism.tensor_parallel_degree";
  }
  CHECK(found);
}

TEST_CASE("torchtitan: refusals name the line, the key, the rule and both values") {
  const std::string model = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n";
  CHECK(Refusal(model) ==
        "run.toml: the world size: must be given with --gpus N "
        "(parallelism.data_parallel_shard_degree is -1: it takes what the world leaves, and "
        "a job config does not say the world); got nothing");
  CHECK(Refusal(model + "[parallelism]\ndata_parallel_shard_degree = 4\ntensor_parallel_degree "
                        "= 2\n",
                16) ==
        "run.toml:5: Invalid parallel dims: dp_replicate(1) * dp_shard(4) * cp(1) * tp(2) * "
        "pp(1) != WORLD_SIZE(16) (torchtitan's ParallelDims): must be equal; got 8");
  CHECK(Refusal(model + "[parallelism]\ntensor_paralel_degree = 2\n", 8)
            .rfind("run.toml:5: parallelism.tensor_paralel_degree: must be a field of "
                   "torchtitan v0.2.2's [parallelism] (data_parallel_replicate_degree, ",
                   0) == 0);
  CHECK(Refusal("[model]\nflavor = \"7B\"\n", 8) ==
        "run.toml:2: model.flavor: must be a llama3 flavour of torchtitan v0.2.2 "
        "(debugmodel, debugmodel_flex_attn, debugmodel_varlen_attn, 8B, 8B_flex, 8B_varlen, "
        "70B, 405B); got \"7B\"");
  CHECK(Refusal("[model]\nname = \"flux\"\n", 8) ==
        "run.toml:2: model.name: must be a model whose flavours ppb knows (llama3, qwen3, "
        "deepseek_v3, gpt_oss, llama4; torchtitan's other models are not read yet); got "
        "\"flux\"");
  CHECK(Refusal(model + "[parallelism]\npipeline_parallel_degree = 2\n"
                        "pipeline_parallel_layers_per_stage = 6\n",
                8) ==
        "run.toml:6: parallelism.pipeline_parallel_layers_per_stage: Single stage schedule "
        "requires exactly 1 stage per rank, but got 3 stages per rank. Model has 32 layers "
        "with pipeline_parallel_layers_per_stage=6 (torchtitan's pipeline_llm)");
  CHECK(Refusal(model + "[activation_checkpoint]\nmode = \"memory_budget\"\n", 8) ==
        "run.toml:5: activation_checkpoint.mode: must be selective, full or none: "
        "memory_budget leaves the choice to torch.compile's min-cut partitioner, which ppb "
        "does not model; got the string \"memory_budget\"");
  CHECK(Refusal(model + "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = "
                        "\"every\"\n",
                8)
            .rfind("run.toml:6: activation_checkpoint.selective_ac_option: must be \"op\" or a "
                   "whole number",
                   0) == 0);
  CHECK(Refusal("[model]\nflavor = \"8B\"\nconverters = [\"quantize.linear.float8\"]\n"
                "[quantize.linear.float8]\nrecipe_name = \"blockwise\"\n",
                8) ==
        "run.toml:5: quantize.linear.float8.recipe_name: must be tensorwise, rowwise or "
        "rowwise_with_gw_hp (torchao's recipes); got the string \"blockwise\"");
  CHECK(Refusal(model + "[training]\nglobal_batch_size = 12\nlocal_batch_size = 2\n", 8) ==
        "run.toml:5: training.global_batch_size: must be a multiple of local_batch_size x the "
        "data-parallel degree (2 x 8 = 16; torchtitan's train.py); got 12");
  // A ppb loader error is placed at the key it was read from.
  CHECK(Refusal(model + "[parallelism]\ntensor_parallel_degree = 3\n", 9)
            .rfind("run.toml:5: parallelism.tensor_parallel_degree (read as ppb ", 0) == 0);
}

TEST_CASE("torchtitan: layer SAC on each rank's own blocks under the V placement") {
  // ZBVZeroBubble: 2 stages a rank, rank r holds stages r and 2p-1-r. The
  // split of 32 + 1 + 1 = 34 effective layers over 4 stages is 8 and 2
  // over: stage 0 = the embedding + blocks 0-7, stage 1 = blocks 8-16,
  // stage 2 = blocks 17-24, stage 3 = blocks 25-31 + the head. Rank 0 runs
  // stages 0 and 3: blocks 0-7 then 25-31, and every 3rd of them is 2, 5,
  // 25, 28, 31. Rank 1 runs stages 1 and 2: blocks 8-24, every 3rd 10, 13,
  // 16, 19, 22.
  Result<commands::LaunchConfig> r = test::TorchtitanToml(
      "[model]\nflavor = \"8B\"\n[training]\nlocal_batch_size = 4\n"
      "[parallelism]\npipeline_parallel_degree = 2\n"
      "pipeline_parallel_schedule = \"ZBVZeroBubble\"\n"
      "[activation_checkpoint]\nselective_ac_option = \"3\"\n",
      2);
  if (!r.ok()) FAIL(r.error().message);
  CHECK(r->yaml.find("  layers_per_chunk: [9, 9, 8, 8]\n") != std::string::npos);
  CHECK(r->yaml.find("    layers: {decoder.2: full, decoder.5: full, decoder.10: full, "
                     "decoder.13: full, decoder.16: full, decoder.19: full, decoder.22: full, "
                     "decoder.25: full, decoder.28: full, decoder.31: full}\n") !=
        std::string::npos);
}

TEST_CASE("torchtitan: qwen3's MoE flavours with expert parallelism") {
  // Qwen3-30B-A3B as its HuggingFace config.json gives it, on 16 H100s:
  // FSDP2 over all 16, 8-way expert parallelism out of dp_shard (experts
  // unsplit: ETP = TP = 1), 2 x 4096-token sequences a rank.
  auto hand = [](const std::string& rest) {
    const std::string text = fmt::format(
        "model: {{name: qwen3-30b-a3b, hf_config: {}/mindformers/qwen3-30b-a3b/config.json}}\n"
        "training: {{seq_length: 4096, micro_batch_size: 2, global_batch_size: 32, dtype: bf16, "
        "grad_dtype: fp32, tensor_parallel: 1, data_parallel: 16, fsdp: torch{}}}\n"
        "hardware: {{gpu: h100-sxm}}\n"
        "pipeline: {{stages: 1, schedule: 1f1b}}\n{}",
        PPB_TEST_DATA_DIR, rest, "");
    return text;
  };
  // v0.2.2's default AC (selective, layer SAC "2"): full recompute on
  // every second block (1, 3, ..., 47).
  std::string layers;
  for (int i = 1; i < 48; i += 2) layers += fmt::format("{}decoder.{}: full", i > 1 ? ", " : "", i);
  Result<RunConfig> a = ParseConfig(
      hand(", expert_parallel: 8") + "strategy:\n  recompute:\n    layers: {" + layers + "}\n",
      "hand.yaml", CliOverrides());
  if (!a.ok()) FAIL(a.error().message);
  Result<commands::LaunchConfig> toml = test::TorchtitanToml(
      "[model]\nname = \"qwen3\"\nflavor = \"30B-A3B\"\n[training]\n"
      "local_batch_size = 2\nseq_len = 4096\n[parallelism]\n"
      "expert_parallel_degree = 8\n",
      16);
  if (!toml.ok()) FAIL(toml.error().message);
  Result<RunConfig> t = ParseConfig(toml->yaml, "run.toml", CliOverrides());
  REQUIRE(t.ok());
  CHECK(t->architecture.experts == 128);
  CHECK(t->training.ep == 8);
  CHECK(test::SimJson(*t) == test::SimJson(*a));
  // main's qwen3_30b_a3b(): FSDP over every rank, EP 1, FullAC, flex
  // attention (simulated as causal, said so).
  Result<RunConfig> b =
      ParseConfig(hand("") + "strategy:\n  recompute: {full: true}\n", "hand.yaml", CliOverrides());
  if (!b.ok()) FAIL(b.error().message);
  const std::string registry = test::TorchtitanData("main/qwen3/config_registry.py:qwen3_30b_a3b");
  CHECK(test::LaunchJson("torchtitan", registry, H100(16)) == test::SimJson(*b));
  // main's qwen3_moe_deepep(): EP 4 with model_registry's
  // moe_comm_backend="deepep" (ppb's flex dispatcher on DeepEP).
  Result<commands::LaunchConfig> deepep = commands::ReadLaunchConfig(
      "torchtitan", test::TorchtitanData("main/qwen3/config_registry.py:qwen3_moe_deepep"),
      test::ReadAll(test::TorchtitanData("main/qwen3/config_registry.py")), H100(8));
  if (!deepep.ok()) FAIL(deepep.error().message);
  Result<RunConfig> d = ParseConfig(deepep->yaml, "registry.py", CliOverrides());
  REQUIRE(d.ok());
  CHECK(d->training.ep == 4);
  CHECK(d->architecture.experts == 64);
  CHECK(d->training.moe.dispatcher == Dispatcher::Flex);
  CHECK(d->training.moe.backend == FlexBackend::DeepEp);
  // ParallelDims' rules: ETP is 1 or TP; ep x etp divides dp_shard x cp x tp.
  CHECK(Refusal("[model]\nname = \"qwen3\"\nflavor = \"30B-A3B\"\n[parallelism]\n"
                "tensor_parallel_degree = 4\nexpert_parallel_degree = 2\n"
                "expert_tensor_parallel_degree = 2\n",
                16) ==
        "run.toml:7: parallelism.expert_tensor_parallel_degree: must be 1 or the TP degree (4) "
        "(torchtitan's ParallelDims); got the integer 2");
  CHECK(Refusal("[model]\nname = \"qwen3\"\nflavor = \"30B-A3B\"\n[parallelism]\n"
                "data_parallel_shard_degree = 2\nexpert_parallel_degree = 4\n",
                2) ==
        "run.toml:6: parallelism.expert_parallel_degree: ep x etp (4 x 1) must divide dp_shard x "
        "cp x tp (2 x 1 x 1; torchtitan's ParallelDims takes the expert ranks from them); got 4");
  // A dense flavour has no experts to spread.
  CHECK(Refusal("[model]\nname = \"qwen3\"\nflavor = \"8B\"\n[parallelism]\n"
                "expert_parallel_degree = 2\n",
                8) ==
        "run.toml:5: parallelism.expert_parallel_degree: must be 1 for qwen3 8B (a "
        "dense model: no experts); got the integer 2");
}

TEST_CASE("torchtitan: deepseek_v3's flavours (MLA, shared experts, dense first layers)") {
  // DeepSeek-V2-Lite's shape (deepseekv3_args "16B"): 27 layers, the first
  // dense (inter_dim 10944), then 64 routed experts of 1408 (6 a token) and
  // 2 shared (one FeedForward of 2 x 1408); MLA with no q LoRA. 64 H100s:
  // FSDP2 over all, 8-way expert parallelism, 4 x 4096-token sequences a
  // rank, op-level SAC read as ppb's selective recompute.
  Result<RunConfig> hand = ParseConfig(
      "model:\n  name: deepseek-v2-lite\n  architecture:\n    hidden_size: 2048\n"
      "    num_layers: 27\n    num_attention_heads: 16\n    ffn_hidden_size: 10944\n"
      "    vocab_size: 102400\n"
      "    moe: {num_experts: 64, top_k: 6, expert_ffn_hidden_size: 1408, "
      "shared_ffn_hidden_size: 2816, first_k_dense: 1}\n"
      "    mla: {q_lora_rank: 0, kv_lora_rank: 512, qk_nope_head_dim: 128, "
      "qk_rope_head_dim: 64, v_head_dim: 128}\n"
      "training: {seq_length: 4096, micro_batch_size: 4, global_batch_size: 256, dtype: bf16, "
      "grad_dtype: fp32, tensor_parallel: 1, data_parallel: 64, fsdp: torch, "
      "expert_parallel: 8}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 1, schedule: 1f1b}\n"
      "strategy:\n  recompute: {selective: true}\n",
      "hand.yaml", CliOverrides());
  if (!hand.ok()) FAIL(hand.error().message);
  const std::string want = test::SimJson(*hand);
  // v0.2.2's own train_configs/deepseek_v3_16b.toml, and main's
  // deepseek_v3_16b().
  CHECK(test::LaunchJson("torchtitan", test::TorchtitanData("deepseek_v3_16b.toml"), H100(64)) ==
        want);
  CHECK(
      test::LaunchJson("torchtitan",
                       test::TorchtitanData("main/deepseek_v3/config_registry.py:deepseek_v3_16b"),
                       H100(64)) == want);
  // The 671B: three dense layers, 256 experts (8 a token) and one shared.
  const TorchtitanFlavour* v3 = FindTorchtitanFlavour("deepseek_v3", "671B", true);
  REQUIRE(v3 != nullptr);
  CHECK(v3->dense_layers == 3);
  CHECK(v3->shared_experts == 1);
  CHECK(v3->q_lora_rank == 1536);
  // main's MTP decoder: model_registry("debugmodel", num_mtp_layers=1) is
  // one MTP block after layer 5 (mtp_layers.0, before the final norm), a
  // copy of the last block (MoE) with its own norms and eh_proj; the
  // embedding and head are shared.
  const std::string registry = test::TorchtitanData("main/deepseek_v3/config_registry.py");
  Result<commands::LaunchConfig> mtp = commands::ReadLaunchConfig(
      "torchtitan", registry + ":deepseek_v3_debugmodel_mtp", test::ReadAll(registry), H100(8));
  if (!mtp.ok()) FAIL(mtp.error().message);
  CHECK(mtp->yaml.find("    mtp_layers: 1\n") != std::string::npos);
  Result<RunConfig> with_mtp = ParseConfig(mtp->yaml, "mtp.yaml", CliOverrides());
  if (!with_mtp.ok()) FAIL(with_mtp.error().message);
  REQUIRE(with_mtp->layers.size() == 9);
  CHECK(with_mtp->layers[7].kind == LayerKind::Mtp);
  CHECK(with_mtp->architecture.IsMoeLayer(6));
  // Its own weights: the block, eh_proj (2 x 256 -> 256) and three norms
  // (enorm, hnorm, mtp_norm), as torchtitan's MTPTransformerBlock.
  const Architecture& dsa = with_mtp->architecture;
  CHECK(with_mtp->derived[7].params.total() == MtpLayerParams(dsa).total());
  CHECK(MtpLayerParams(dsa).total() ==
        DecoderLayerParams(dsa, 5).total() + 2 * 256 * 256 + 3 * 256);
  // mtp.py refuses pipeline and context parallelism with MTP.
  const std::string piped = test::ReadAll(registry) +
                            "\n\ndef ppb_piped() -> Trainer.Config:\n"
                            "    config = deepseek_v3_debugmodel_mtp()\n"
                            "    config.parallelism.pipeline_parallel_degree = 2\n"
                            "    config.training.disable_cuda_graphs = True\n"
                            "    return config\n";
  Result<commands::LaunchConfig> refused =
      commands::ReadLaunchConfig("torchtitan", registry + ":ppb_piped", piped, H100(8));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find(
            ": parallelism.pipeline_parallel_degree: must be 1 with model_spec.num_mtp_layers > "
            "0 (torchtitan's MTP decoder refuses pipeline and context parallelism, "
            "deepseek_v3/mtp.py); got the integer 2") != std::string::npos);
}

TEST_CASE("torchtitan: gpt_oss's flavours (sliding windows, sinks, biased experts)") {
  // main's gpt_oss_120b() on 64 H100s (FSDP2 over all, 8192-token
  // sequences, FullAC) is the run of OpenAI's own config.json for
  // GPT-OSS-120B (configs/hf/gpt-oss-120b.json, read by ppb's HuggingFace
  // reader: its layer_types, sliding_window 128, attention_bias, sinks and
  // biased router and experts) written by hand.
  const std::string run =
      "training: {seq_length: 8192, micro_batch_size: 1, global_batch_size: 64, dtype: bf16, "
      "grad_dtype: fp32, tensor_parallel: 1, data_parallel: 64, fsdp: torch}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 1, schedule: 1f1b}\n"
      "strategy:\n  recompute: {full: true}\n";
  Result<RunConfig> hf =
      ParseConfig("model:\n  name: gpt-oss-120b\n  hf_config: " + std::string(PPB_CONFIGS_DIR) +
                      "/hf/gpt-oss-120b.json\n" + run,
                  "hand.yaml", CliOverrides());
  if (!hf.ok()) FAIL(hf.error().message);
  const std::string want = test::SimJson(*hf);
  const std::string registry = test::TorchtitanData("main/gpt_oss/config_registry.py");
  CHECK(test::LaunchJson("torchtitan", registry + ":gpt_oss_120b", H100(64)) == want);
  // The same shape written inline: even layers slide over 128 keys.
  std::string types;
  for (int i = 0; i < 36; ++i) types += i % 2 == 0 ? "sliding_attention, " : "full_attention, ";
  types.resize(types.size() - 2);
  const std::string inline_arch =
      "model:\n  name: gpt-oss-120b\n  architecture:\n    hidden_size: 2880\n"
      "    num_layers: 36\n    num_attention_heads: 64\n    num_key_value_heads: 8\n"
      "    head_dim: 64\n    vocab_size: 201088\n    qkv_bias: true\n"
      "    attention_out_bias: true\n    attention_sinks: true\n"
      "    layer_types: [" +
      types +
      "]\n    sliding_window: 128\n"
      "    moe: {num_experts: 128, top_k: 4, expert_ffn_hidden_size: 2880, router_bias: true, "
      "expert_bias: true}\n";
  Result<RunConfig> hand = ParseConfig(inline_arch + run, "hand.yaml", CliOverrides());
  if (!hand.ok()) FAIL(hand.error().message);
  CHECK(test::SimJson(*hand) == want);
  // 116.83B parameters (OpenAI's model card: 116.8B): each layer's
  // attention (Q, K, V, O with biases, 64 sinks), router (128 x 2880 +
  // 128), 128 experts of 2 x 2 x 2880^2 + 2 x 2880 + 2880 weights and
  // biases, two RMSNorms; the embedding and head of 201088 x 2880; the
  // final norm.
  const std::int64_t h = 2880, attn = h * 4096 + 4096 + 2 * (h * 512 + 512) + 4096 * h + h + 64;
  const std::int64_t experts = 128 * (h * 2 * h + 2 * h + h * h + h), router = 128 * h + 128;
  const std::int64_t total = 36 * (attn + router + experts + 2 * h) + 2 * 201088 * h + h;
  CHECK(TotalParams(hand->architecture, false) == total);
  CHECK(TotalParams(hf->architecture, false) == total);
  CHECK(total == 116'829'156'672);
  // v0.2.2's own train_configs/debug_model.toml: GptOssModelArgs' defaults
  // under dim 256 and 4 layers (the vocabulary stays 201088), FlexAttention.
  Result<commands::LaunchConfig> debug = commands::ReadLaunchConfig(
      "torchtitan", test::TorchtitanData("gpt_oss_debug_model.toml"),
      test::ReadAll(test::TorchtitanData("gpt_oss_debug_model.toml")), H100(8));
  if (!debug.ok()) FAIL(debug.error().message);
  CHECK(debug->yaml.find("    hidden_size: 256\n") != std::string::npos);
  CHECK(debug->yaml.find("    vocab_size: 201088\n") != std::string::npos);
  CHECK(debug->yaml.find("    layer_types: [sliding_attention, full_attention, "
                         "sliding_attention, full_attention]\n") != std::string::npos);
  CHECK(debug->yaml.find("      num_experts: 8\n") != std::string::npos);
  // main's debug model: a 2048-token vocabulary; a helper's keyword
  // argument picks FlexAttention (gpt_oss_debugmodel_flex).
  Result<commands::LaunchConfig> flex = commands::ReadLaunchConfig(
      "torchtitan", registry + ":gpt_oss_debugmodel_flex", test::ReadAll(registry), H100(8));
  if (!flex.ok()) FAIL(flex.error().message);
  CHECK(flex->yaml.find("    vocab_size: 2048\n") != std::string::npos);
  CHECK(fmt::format("{}", fmt::join(flex->notes, "\n"))
            .find("attention flex with its "
                  "block-causal mask") != std::string::npos);
  // v0.2.2's gpt_oss runs neither pipeline nor context parallelism.
  const std::string v022 = "[model]\nname = \"gpt_oss\"\nflavor = \"20b\"\n[parallelism]\n";
  CHECK(Refusal(v022 + "pipeline_parallel_degree = 2\n", 8) ==
        "run.toml:5: parallelism.pipeline_parallel_degree: must be 1 for gpt_oss 20b in torchtitan "
        "v0.2.2 (its TrainSpec has no pipelining_fn: torchtitan refuses pipeline parallelism "
        "for it); got the integer 2");
  CHECK(Refusal(v022 + "context_parallel_degree = 2\n", 8) ==
        "run.toml:5: parallelism.context_parallel_degree: must be 1 for gpt_oss 20b in torchtitan "
        "v0.2.2 (GptOssModelArgs refuses context parallelism: \"CP support for gpt-oss model "
        "is still in progress\"); got the integer 2");
}

TEST_CASE("torchtitan: llama4's flavours (interleaved experts, a shared one, iRoPE)") {
  // v0.2.2's own train_configs/llama4_17bx16e.toml (Scout: 16 experts of
  // 8192 on every layer, top 1, one shared expert of 8192; TP 8 with the
  // experts TP-sharded, FSDP over the rest, full AC) holds the parameters
  // of Meta's config.json for Llama-4-Scout (configs/hf/llama4-scout.json).
  Result<commands::LaunchConfig> scout = commands::ReadLaunchConfig(
      "torchtitan", test::TorchtitanData("llama4_17bx16e.toml"),
      test::ReadAll(test::TorchtitanData("llama4_17bx16e.toml")), H100(64));
  if (!scout.ok()) FAIL(scout.error().message);
  Result<RunConfig> read = ParseConfig(scout->yaml, "read.yaml", CliOverrides());
  if (!read.ok()) FAIL(read.error().message);
  Result<RunConfig> hf =
      ParseConfig("model: {name: scout, hf_config: " + std::string(PPB_CONFIGS_DIR) +
                      "/hf/llama4-scout.json}\n"
                      "training: {seq_length: 8192, tensor_parallel: 8}\n"
                      "hardware: {gpu: h100-sxm}\n"
                      "pipeline: {stages: 1, microbatches: 1}\n",
                  "hf.yaml", CliOverrides());
  if (!hf.ok()) FAIL(hf.error().message);
  CHECK(TotalParams(read->architecture, false) == TotalParams(hf->architecture, false));
  // The expert width by auto_scale_hidden_dim: int(int(2 x 20480 / 3) x
  // 1.2) = 16383, / (top 1 + 1 shared) = 8191, up to a multiple of 2048.
  CHECK(Llama4MoeHidden(5120, 2048, 1.2, 2) == 8192);
  CHECK(read->architecture.expert_ffn == 8192);
  CHECK(read->architecture.shared_ffn == 8192);
  // iRoPE (17bx128e_irope, Maverick): NoPE on layer_id % 4 == 0 (full
  // attention), 8192-token blocks elsewhere; the experts on every 2nd
  // layer ((layer_id + 1) % 2 == 0), dense layers of 16384 between.
  Result<commands::LaunchConfig> maverick =
      test::TorchtitanToml("[model]\nname = \"llama4\"\nflavor = \"17bx128e_irope\"\n", 64);
  if (!maverick.ok()) FAIL(maverick.error().message);
  Result<RunConfig> m = ParseConfig(maverick->yaml, "m.yaml", CliOverrides());
  if (!m.ok()) FAIL(m.error().message);
  const Architecture& a = m->architecture;
  REQUIRE(a.blocks.size() == 48);
  CHECK(a.attention_chunk == 8192);
  CHECK(a.blocks[0].span == Span::Full);
  CHECK(a.blocks[1].span == Span::Chunked);
  CHECK(a.blocks[4].span == Span::Full);
  CHECK(a.blocks[47].span == Span::Chunked);
  CHECK_FALSE(a.IsMoeLayer(0));
  CHECK(a.IsMoeLayer(1));
  CHECK(a.ffn == 16384);
  CHECK(a.experts == 128);
  // The debug model: MoEArgs' 8 experts on layers 1, 3, 5; int(2 x 1024 /
  // 3) = 682 / 2 = 341, up to 512; dense layers of 768.
  Result<commands::LaunchConfig> debug =
      test::TorchtitanToml("[model]\nname = \"llama4\"\nflavor = \"debugmodel\"\n", 8);
  if (!debug.ok()) FAIL(debug.error().message);
  CHECK(debug->yaml.find("    ffn_hidden_size: 768\n") != std::string::npos);
  CHECK(debug->yaml.find("      expert_ffn_hidden_size: 512\n") != std::string::npos);
  CHECK(debug->yaml.find("      sparse_step: 2\n") != std::string::npos);
  // FlexAttention (the iRoPE flavours) refuses context parallelism.
  CHECK(Refusal("[model]\nname = \"llama4\"\nflavor = \"17bx16e_irope\"\n[parallelism]\n"
                "context_parallel_degree = 2\n",
                16) ==
        "run.toml:5: parallelism.context_parallel_degree: must be 1 for llama4 17bx16e_irope in "
        "torchtitan v0.2.2 (its FlexAttention: torchtitan's Context Parallel only supports SDPA "
        "attention); got the integer 2");
}

TEST_CASE("torchtitan: rowwise FP8 runs as ppb's blockwise and says so") {
  Result<commands::LaunchConfig> r = test::TorchtitanToml(
      "[model]\nflavor = \"8B\"\nconverters = [\"quantize.linear.float8\"]\n"
      "[quantize.linear.float8]\nrecipe_name = \"rowwise\"\n",
      8);
  if (!r.ok()) FAIL(r.error().message);
  CHECK(r->yaml.find("  fp8: {recipe: blockwise}\n") != std::string::npos);
  CHECK(r->notes[0] ==
        "quantize.linear.float8.recipe_name: torchao's rowwise FP8 scaling (a scale per row) is "
        "simulated as ppb's fp8-blockwise (a scale per 1x128 block), the nearest recipe ppb has");
}

}  // namespace ppb
