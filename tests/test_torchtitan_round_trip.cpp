// --emit torchtitan then --from torchtitan (issue 47): what ppb writes in
// torchtitan's two forms (v0.2.2's TOML job config, main's Python
// Trainer.Config assignments) reads back as the same run; every v0.2.2
// flavour is the architecture the emit matches a model against.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/commands/from_launch.h"
#include "apps/input/config.h"
#include "apps/input/text_lines.h"
#include "apps/input/torchtitan_models.h"
#include "apps/output/emit.h"
#include "core/architecture.h"
#include "tests/launch_helpers.h"

namespace ppb {
namespace {

// --emit torchtitan-0.2.2, then --from torchtitan (test::EmitReadBack).
std::pair<std::string, std::string> RoundTrip(const RunConfig& c, const std::string& machine,
                                              std::string& why) {
  return test::EmitReadBack(c, Framework::Torchtitan022, "torchtitan", "emitted.toml", machine,
                            {"cannot express", "no torchtitan v0.2.2 flavour"}, why);
}

}  // namespace

TEST_CASE("from torchtitan: what --emit torchtitan-0.2.2 writes reads back as the same run") {
  // Every shipped config torchtitan v0.2.2 can run (a llama3 or qwen3
  // flavour, FSDP2 or plain data parallelism, no recompute or full on
  // every block), each skipped config with its reason.
  std::vector<std::string> skipped;
  const int shipped = test::ShippedRoundTrips(RoundTrip, skipped);
  INFO(fmt::format("skipped: {}", fmt::join(skipped, "; ")));
  // configs/llama3-70b-fsdp.yaml; the guide's runs selective recompute,
  // which torchtitan's one-mode policies do not express as ppb simulates it.
  CHECK(shipped >= 1);
  // Llama-3-8B as torchtitan runs it, over torchtitan's schedules, pipeline
  // shapes, TP, HSDP and recompute.
  int grid = 0;
  for (const char* schedule : {"1f1b", "gpipe", "interleaved", "zbv-zero-bubble"}) {
    for (int tp : {1, 2}) {
      for (const char* recompute : {"", "  recompute: {full: true}\n"}) {
        const bool v_shape =
            std::string(schedule) == "interleaved" || std::string(schedule) == "zbv-zero-bubble";
        const std::string text = fmt::format(
            "model: {{name: llama3-8b, hf_config: {}/hf/llama3-8b.json}}\n"
            "training: {{seq_length: 4096, micro_batch_size: 1, global_batch_size: 32, "
            "dtype: bf16, grad_dtype: fp32, tensor_parallel: {}, sequence_parallel: {}, "
            "data_parallel: 4, fsdp: torch, data_parallel_shard: 2}}\n"
            "hardware: {{gpu: h100-sxm}}\n"
            "pipeline: {{stages: 2, schedule: {}{}}}\n"
            "strategy:\n  layers_per_chunk: {}\n{}",
            PPB_TEST_DATA_DIR, tp, tp > 1 ? "true" : "false", schedule,
            v_shape ? ", virtual_stages: 2" : "", v_shape ? "[9, 9, 8, 8]" : "[17, 17]", recompute);
        Result<RunConfig> c = ParseConfig(text, "grid.yaml", CliOverrides());
        if (!c.ok()) FAIL(c.error().message);
        std::string why;
        const auto [back, original] = RoundTrip(*c, "hardware: {gpu: h100-sxm}\n", why);
        INFO(text << "\n" << why);
        REQUIRE_FALSE(back.empty());
        CHECK(back == original);
        ++grid;
      }
    }
  }
  CHECK(grid == 16);
}

TEST_CASE("from torchtitan: every v0.2.2 flavour is the architecture --emit matches") {
  // FlavourArchitecture (what --emit torchtitan-0.2.2 names a flavour for)
  // builds the same model as the ppb config --from torchtitan writes for
  // the flavour, for every flavour of every model.
  int flavours = 0;
  for (const std::string& model : TorchtitanModels()) {
    for (const std::string& name : TorchtitanFlavours(model)) {
      Result<commands::LaunchConfig> r = test::TorchtitanToml(
          fmt::format("[model]\nname = \"{}\"\nflavor = \"{}\"\n", model, name), 8);
      INFO(model << " " << name);
      if (!r.ok()) FAIL(r.error().message);
      Result<RunConfig> c = ParseConfig(r->yaml, "read.yaml", CliOverrides());
      if (!c.ok()) FAIL(c.error().message);
      CHECK(SameLayers(FlavourArchitecture(*FindTorchtitanFlavour(model, name)), c->architecture));
      ++flavours;
    }
  }
  CHECK(flavours == 32);
}

TEST_CASE("from torchtitan: MoE flavours emitted by name read back as the same run") {
  // GPT-OSS-20B from OpenAI's shape written inline (its config.json is the
  // 120B's with 24 layers and 32 experts) on 16 H100s: FSDP2 over all,
  // experts 8-way parallel, full AC. --emit torchtitan-0.2.2 names
  // gpt_oss 20b (FlavourArchitecture); the read-back simulates the same.
  std::string types;
  for (int i = 0; i < 24; ++i) types += i % 2 == 0 ? "sliding_attention, " : "full_attention, ";
  types.resize(types.size() - 2);
  const std::string oss =
      "model:\n  name: gpt-oss-20b\n  architecture:\n    hidden_size: 2880\n"
      "    num_layers: 24\n    num_attention_heads: 64\n    num_key_value_heads: 8\n"
      "    head_dim: 64\n    vocab_size: 201088\n    qkv_bias: true\n"
      "    attention_out_bias: true\n    attention_sinks: true\n"
      "    layer_types: [" +
      types +
      "]\n    sliding_window: 128\n"
      "    moe: {num_experts: 32, top_k: 4, expert_ffn_hidden_size: 2880, router_bias: true, "
      "expert_bias: true}\n"
      "training: {seq_length: 8192, micro_batch_size: 1, global_batch_size: 32, dtype: bf16, "
      "grad_dtype: fp32, tensor_parallel: 1, data_parallel: 16, fsdp: torch, "
      "expert_parallel: 8}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 1, schedule: 1f1b}\n"
      "strategy:\n  recompute: {full: true}\n";
  const std::string machine = "hardware: {gpu: h100-sxm}\n";
  // The config of `text`, its --emit torchtitan-0.2.2 text, and (with
  // `back`) the check that the text reads back as the same simulation.
  auto emit = [&](const std::string& text, bool back) {
    Result<RunConfig> c = ParseConfig(text, "run.yaml", CliOverrides());
    if (!c.ok()) FAIL(c.error().message);
    Result<PreparedRun> run = Prepare(*c);
    REQUIRE(run.ok());
    Result<Emission> e = Emit(Framework::Torchtitan022, *c, run->program);
    if (!e.ok()) FAIL(e.error().message);
    if (back) {
      std::string why;
      const auto [read, want] = RoundTrip(*c, machine, why);
      INFO(e->text << "\n" << why);
      REQUIRE_FALSE(read.empty());
      CHECK(read == want);
    }
    return e->text;
  };
  const std::string e = emit(oss, true);
  CHECK(e.find("name = \"gpt_oss\"\nflavor = \"20b\"") != std::string::npos);
  CHECK(e.find("expert_parallel_degree = 8") != std::string::npos);
  // Qwen3-30B-A3B from its config.json is v0.2.2's qwen3 30B-A3B; DeepEP
  // and the forced balance (debug.moe_force_load_balance) come back too.
  const std::string q = emit(
      "model: {name: qwen3-30b-a3b, hf_config: " + std::string(PPB_CONFIGS_DIR) +
          "/hf/qwen3-30b-a3b.json}\n"
          "training: {seq_length: 4096, micro_batch_size: 2, global_batch_size: 64, "
          "dtype: bf16, grad_dtype: fp32, tensor_parallel: 1, data_parallel: 16, fsdp: torch, "
          "expert_parallel: 8, moe: {dispatcher: flex, backend: deepep, force_balance: true}}\n"
          "hardware: {gpu: h100-sxm}\npipeline: {stages: 1, schedule: 1f1b}\n",
      true);
  CHECK(q.find("name = \"qwen3\"\nflavor = \"30B-A3B\"") != std::string::npos);
  CHECK(q.find("moe_force_load_balance = true") != std::string::npos);
  // Llama-4-Scout from Meta's config.json: its chunked layers are HF's
  // (NoPE on every 4th, 1-based), not torchtitan's iRoPE (layer_id % 4 ==
  // 0), so no flavour builds it and the emit says so.
  const std::string scout = emit(
      "model: {name: scout, hf_config: " + std::string(PPB_CONFIGS_DIR) +
          "/hf/llama4-scout.json}\n"
          "training: {seq_length: 8192, micro_batch_size: 1, global_batch_size: 16, "
          "tensor_parallel: 8, sequence_parallel: true, data_parallel: 2, fsdp: torch}\n"
          "hardware: {gpu: h100-sxm}\npipeline: {stages: 1, schedule: 1f1b}\n",
      false);
  CHECK(scout.find("no torchtitan v0.2.2 flavour has this model's shape") != std::string::npos);
  // gpt_oss under pipeline parallelism: v0.2.2 has no pipelining_fn.
  std::string piped = oss;
  piped.replace(piped.find("data_parallel: 16"), 17, "data_parallel: 8");
  piped.replace(piped.find("stages: 1"), 9, "stages: 2");
  CHECK(emit(piped, false).find("cannot express pipeline parallelism for gpt_oss 20b in "
                                "torchtitan") != std::string::npos);
}

}  // namespace ppb

namespace ppb {
namespace {

// --emit torchtitan (main's Python form: assignments to the Trainer.Config
// a config function returns), set on llama3_8b() of main's registry in a
// function of its own, then --from torchtitan (test::EmitReadBack).
std::pair<std::string, std::string> MainRoundTrip(const RunConfig& c, std::string& why) {
  auto wrap = [](const std::string& text) {
    std::string registry = test::ReadAll(test::TorchtitanData("main/llama3/config_registry.py"));
    registry += "\n\ndef ppb_run() -> Trainer.Config:\n    config = llama3_8b()\n";
    ForEachLine(text, [&](std::string_view line, int) {
      if (line.rfind("#", 0) != 0) registry += "    " + std::string(line) + "\n";
      return true;
    });
    return registry + "    return config\n";
  };
  return test::EmitReadBack(c, Framework::Torchtitan, "torchtitan",
                            "models/llama3/config_registry.py:ppb_run",
                            "hardware: {gpu: h100-sxm}\n", {"cannot express"}, why, wrap);
}

}  // namespace

TEST_CASE("from torchtitan: what --emit torchtitan writes on main's llama3_8b() reads back") {
  // Llama-3-8B over torchtitan's schedules, pipeline shapes, TP and
  // recompute, with FSDP2 and HSDP.
  int grid = 0;
  for (const char* schedule : {"1f1b", "gpipe", "interleaved", "zbv-zero-bubble"}) {
    for (int tp : {1, 2}) {
      for (const char* recompute : {"", "  recompute: {full: true}\n"}) {
        for (int shard : {4, 2}) {
          const bool v_shape =
              std::string(schedule) == "interleaved" || std::string(schedule) == "zbv-zero-bubble";
          const std::string text = fmt::format(
              "model: {{name: llama3-8b, hf_config: {}/hf/llama3-8b.json}}\n"
              "training: {{seq_length: 8192, micro_batch_size: 1, global_batch_size: 32, "
              "dtype: bf16, grad_dtype: fp32, tensor_parallel: {}, sequence_parallel: {}, "
              "data_parallel: 4, fsdp: torch, data_parallel_shard: {}}}\n"
              "hardware: {{gpu: h100-sxm}}\n"
              "pipeline: {{stages: 2, schedule: {}{}}}\n"
              "strategy:\n  layers_per_chunk: {}\n{}",
              PPB_TEST_DATA_DIR, tp, tp > 1 ? "true" : "false", shard, schedule,
              v_shape ? ", virtual_stages: 2" : "", v_shape ? "[9, 9, 8, 8]" : "[17, 17]",
              recompute);
          Result<RunConfig> c = ParseConfig(text, "grid.yaml", CliOverrides());
          if (!c.ok()) FAIL(c.error().message);
          std::string why;
          const auto [back, original] = MainRoundTrip(*c, why);
          INFO(text << "\n" << why);
          REQUIRE_FALSE(back.empty());
          CHECK(back == original);
          ++grid;
        }
      }
    }
  }
  CHECK(grid == 32);
}

}  // namespace ppb
