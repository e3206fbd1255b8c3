// model.hf_config with training and hardware in the run config, and
// `ppb-sim model` (apps/model_output.h).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/config.h"
#include "tests/app_helpers.h"

namespace ppb {
namespace {

using test::Cli;
using test::CliRun;

std::string Configs(const std::string& name) {
  return std::string(PPB_CONFIGS_DIR) + "/" + name;
}

// A run config next to tests/data/hf, written as a string.
std::string HfRun(const std::string& training_extra = "") {
  return "model: {name: l2, hf_config: hf/llama2-7b.json}\n"
         "training:\n"
         "  seq_length: 4096\n"
         "  tensor_parallel: 2\n" +
         training_extra +
         "hardware: {peak_tflops: 400, achievable_fraction: 0.5}\n"
         "cluster: {devices: {memory: 80GiB}}\n"
         "pipeline: {stages: 2, microbatches: 4}\n";
}

Result<RunConfig> ParseHf(const std::string& text) {
  return ParseConfig(text, std::string(PPB_TEST_DATA_DIR) + "/run.yaml", {});
}

TEST_CASE("config: model.hf_config derives the layers", "[cost]") {
  Result<RunConfig> c = ParseHf(HfRun());
  if (!c.ok()) FAIL(c.error().message);
  REQUIRE(c->layers.size() == 34);
  CHECK(c->layers.front().kind == LayerKind::Embedding);
  CHECK(c->layers.back().kind == LayerKind::Head);
  CHECK(c->derived.size() == 34);
  CHECK(c->strategy.layers_per_stage == std::vector<int>{17, 17});
  // 400 TFLOP/s x 0.5 over tp 2: the head's 2*s*b*h*V FLOPs.
  CHECK(c->layers.back().forward ==
        std::llround(2.0 * 4096 * 4096 * 32000 / 2 / 2e5));
}

TEST_CASE("config: hf_config errors name the key and the field", "[cost]") {
  Result<RunConfig> c = ParseHf(
      "model: {hf_config: hf/bad-kv-heads.json}\n"
      "training: {seq_length: 8}\nhardware: {peak_tflops: 1}\n"
      "cluster: {devices: {memory: 1GiB}}\npipeline: {stages: 1, microbatches: 1}\n");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("run.yaml:1: model.hf_config: ") !=
        std::string::npos);
  CHECK(c.error().message.find("bad-kv-heads.json: num_key_value_heads: ") !=
        std::string::npos);

  c = ParseHf(HfRun("  tensor_parallel_size: 2\n"));
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("training.tensor_parallel_size") !=
        std::string::npos);

  c = ParseHf("model: {hf_config: hf/llama2-7b.json}\n"
              "training:\n  seq_length: 8\n  tensor_parallel: 3\n"
              "hardware: {peak_tflops: 1}\n"
              "cluster: {devices: {memory: 1GiB}}\n"
              "pipeline: {stages: 1, microbatches: 1}\n");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("run.yaml:4: training.tensor_parallel: "
                               "must divide the heads (32); got 3") !=
        std::string::npos);

  c = ParseHf("model: {hf_config: hf/llama2-7b.json}\n"
              "training: {seq_length: 8}\n"
              "cluster: {devices: {memory: 1GiB}}\n"
              "pipeline: {stages: 1, microbatches: 1}\n");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("hardware: must be given") != std::string::npos);
}

TEST_CASE("ppb-sim model: text and json; simulate runs", "[cost][cli]") {
  const std::string run = Configs("llama3-8b.yaml");
  CliRun r = Cli({"model", "--config", run});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("decoder.31") != std::string::npos);
  CHECK(r.out.find("total: 8030261248 params") != std::string::npos);
  CHECK(r.out.find("[K22 Table 2, tp+sp]") != std::string::npos);

  r = Cli({"model", "--config", run, "--format", "json"});
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppb.model/1");
  CHECK(j["layers"].size() == 34);
  CHECK(j["totals"]["params"] == 8'030'261'248);
  CHECK(j["layers"][1]["activation_bytes"].contains("selective"));

  r = Cli({"--config", run});
  CHECK(r.status == 0);
  CHECK(r.out.find("every rank fits") != std::string::npos);

  r = Cli({"model", "--config", Configs("example.yaml")});
  CHECK(r.status == 2);
  CHECK(r.err.find("model.hf_config") != std::string::npos);
}

}  // namespace
}  // namespace ppb
