// Resource and time limits (docs/config.md, "Limits and exit codes"): a
// pipeline whose simulation would run more ops than --max-ops allows, or a
// model of more than 100000 layers from any source, is refused at load with
// the key, the estimate and the limit; a search past its deadline stops in
// every phase with what it has and says so. No test here measures time:
// deadlines are already past when the search starts.
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "app_helpers.h"
#include "apps/input/config.h"
#include "apps/input/hf_config.h"
#include "apps/input/search_problem.h"
#include "core/cost_model.h"
#include "search/search.h"

namespace ppb {
namespace {

using test::Cli;
using test::ParseError;

std::string Edited(std::string_view from, const std::string& to) {
  std::string text(test::kTinySearchConfig);
  text.replace(text.find(from), from.size(), to);
  return text;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("limits: a pipeline of too many ops is refused at load", "[config][limits]") {
  // 2 ranks x 1 chunk x 10^8 micro-batches x 3 op kinds = 6 * 10^8 ops.
  CHECK(ParseError(Edited("microbatches: 4", "microbatches: 100000000")) ==
        "run.yaml:16: pipeline.microbatches: must keep one simulation within "
        "2000000 ops (the limit; --max-ops N raises it): stages x "
        "virtual_stages x microbatches x 3 op kinds = 2 x 1 x 100000000 x 3 = "
        "600000000 ops, about 150.0 GB and 1200 s; got 100000000");
  // From the command line: the flag is named; refused before anything runs.
  const std::string cfg = "ppb_test_limits_tiny.yaml";
  std::ofstream(cfg) << test::kTinySearchConfig;
  for (const char* command : {"simulate", "search", "compare", "model"}) {
    INFO(command);
    const test::CliRun r = Cli({command, "--config", cfg, "--microbatches", "2147483647"});
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("--microbatches: must keep one simulation within 2000000 ops") !=
          std::string::npos);
    CHECK(r.err.find("2 x 1 x 2147483647 x 3 = 12884901882 ops") != std::string::npos);
  }
  // The override: the limit is the user's; exactly at it loads.
  CHECK(Cli({"simulate", "--config", cfg, "--max-ops", "23"}).err.find(
            "must keep one simulation within 23 ops") != std::string::npos);
  CHECK(Cli({"simulate", "--config", cfg, "--max-ops", "24"}).status == 0);
  CHECK(Cli({"simulate", "--config", cfg, "--max-ops", "0"}).err ==
        "ppb-sim: --max-ops: expected a positive integer (ops); got '0'\n");
  // A moderately large pipeline goes through with the override.
  CliOverrides big;
  big.microbatches = 400000;  // 2.4 * 10^6 ops
  CHECK(ParseError(std::string(test::kTinySearchConfig), big).find(
            "--microbatches: must keep one simulation within 2000000 ops") !=
        std::string::npos);
  big.max_ops = 2400000;
  CHECK(test::Parse(std::string(test::kTinySearchConfig), big).ok());
  std::remove(cfg.c_str());
}

TEST_CASE("limits: each chunk count the search may try is within the ops", "[config][limits]") {
  // v = 1 makes 1.8 * 10^6 ops, v = 2 makes 3.6 * 10^6.
  std::string text = Edited("microbatches: 4", "microbatches: 300000");
  CHECK(test::Parse(text).ok());
  text += "search: {schedules: [interleaved], virtual_stages: [1, 2]}\n";
  CHECK(ParseError(text) ==
        "run.yaml:17: search.virtual_stages: must keep one simulation within "
        "2000000 ops (the limit; --max-ops N raises it): stages x "
        "virtual_stages x microbatches x 3 op kinds = 2 x 2 x 300000 x 3 = "
        "3600000 ops, about 0.9 GB and 7 s; got 2");
  CliOverrides more;
  more.max_ops = 3600000;
  CHECK(test::Parse(text, more).ok());
}

TEST_CASE("limits: a model has at most 100000 layers from any source", "[config][limits]") {
  // SAPP: each entry is within the limit, their sum is not.
  const std::string json = "ppb_test_limits_sapp.json";
  {
    std::ofstream out(json);
    out << R"({"layers_description": [{"type": "HEAD", "name": "embed", "nb_layer": 1, "time": 1, "memory_parameter": 1})";
    for (int i = 0; i < 40; ++i) {
      out << R"(, {"type": "BODY", "name": "b)" << i
          << R"(", "time": 3, "nb_layer": 100000, "memory_parameter": 1, "memory_activation": 1})";
    }
    out << R"(, {"type": "TAIL", "name": "head", "nb_layer": 1, "time": 1, "memory_parameter": 1}]})";
  }
  const std::string sapp_cfg = "model: {sapp_layers: " + json +
                               ", sapp_units: {time: 1ms, memory: 1MiB}}\n"
                               "cluster: {devices: {memory: 80GiB}}\n"
                               "pipeline: {stages: 2, microbatches: 4}\n";
  const std::string message = ParseError(sapp_cfg);
  CHECK(message.find("run.yaml:1: model.sapp_layers: ") == 0);
  CHECK(message.find("layers_description[1].nb_layer: must keep the model at most 100000 "
                     "layers in all; got 100000 more after 1") != std::string::npos);
  std::remove(json.c_str());

  // HuggingFace config.json: num_hidden_layers within the integer bound
  // (2^20) but not within the model's.
  std::string hf = ReadAll(std::string(PPB_TEST_DATA_DIR) + "/hf/llama2-7b.json");
  const std::string key = "\"num_hidden_layers\": 32";
  REQUIRE(hf.find(key) != std::string::npos);
  hf.replace(hf.find(key), key.size(), "\"num_hidden_layers\": 1000000");
  const std::string hf_json = "ppb_test_limits_hf.json";
  std::ofstream(hf_json) << hf;
  const std::string hf_cfg = "model: {hf_config: " + hf_json +
                             "}\n"
                             "training: {seq_length: 4096}\n"
                             "hardware: {peak_tflops: 400}\n"
                             "cluster: {devices: {memory: 80GiB}}\n"
                             "pipeline: {stages: 2, microbatches: 4}\n";
  CHECK(ParseError(hf_cfg) ==
        "run.yaml:1: model.hf_config: " + hf_json +
            ": num_hidden_layers: must keep the model at most 100000 layers in all "
            "(with the embedding, the head and 0 MTP layers); got 1000000");
  hf.replace(hf.find("1000000"), 7, "1000000000");
  std::ofstream(hf_json) << hf;
  CHECK(ParseError(hf_cfg).find("num_hidden_layers") != std::string::npos);
  std::remove(hf_json.c_str());

  // model.architecture written inline.
  const std::string arch =
      "model:\n"
      "  architecture: {hidden_size: 64, num_layers: 99999, num_attention_heads: 4,\n"
      "                 ffn_hidden_size: 256, vocab_size: 1000}\n"
      "training: {seq_length: 128}\n"
      "hardware: {peak_tflops: 400}\n"
      "cluster: {devices: {memory: 80GiB}}\n"
      "pipeline: {stages: 2, microbatches: 4}\n";
  CHECK(ParseError(arch) ==
        "run.yaml:2: model.architecture.num_layers: must keep the model at most 100000 "
        "layers in all (with the embedding, the head and 0 MTP layers); got 99999");
}

TEST_CASE("limits: a model's shapes past 2^50 parameters are refused at load", "[config][limits]") {
  // The bound holds every model it is given, within 3 x its count.
  for (const char* name : {"deepseek-v3", "gpt3-175b", "llama3-8b", "mixtral-8x7b",
                           "qwen2-moe-small", "qwen3-moe-small", "qwen2.5-72b"}) {
    Result<Architecture> a =
        LoadHfConfig(std::string(PPB_TEST_DATA_DIR) + "/hf/" + name + ".json");
    REQUIRE(a.ok());
    const double total = static_cast<double>(TotalParams(*a, true));
    INFO(name);
    CHECK(ParamsUpperBound(*a) >= total);
    CHECK(ParamsUpperBound(*a) <= 3 * total);
  }
  // hidden_size near 2^31: 4h^2 alone passes int64.
  const std::string wide =
      "model:\n"
      "  architecture: {hidden_size: 2147483646, num_layers: 2, num_attention_heads: 2,\n"
      "                 ffn_hidden_size: 256, vocab_size: 1000}\n"
      "training: {seq_length: 128}\n"
      "hardware: {peak_tflops: 400}\n"
      "cluster: {devices: {memory: 80GiB}}\n"
      "pipeline: {stages: 2, microbatches: 4}\n";
  CHECK(ParseError(wide) ==
        "run.yaml:2: model.architecture: must describe at most 2^50 (about 1.1e15) "
        "parameters, so that ppb's counts stay within 64 bits; got shapes that may reach "
        "4.61e+19");
  // Three fields each within the HuggingFace reader's 2^20, whose product is
  // not: 2^20 experts of width 2^20 on a hidden size of 2^20.
  std::string hf = ReadAll(std::string(PPB_TEST_DATA_DIR) + "/hf/mixtral-8x7b.json");
  for (auto [key, value] : {std::pair<std::string, std::string>{"\"hidden_size\": 4096",
                                                                "\"hidden_size\": 1048576"},
                            {"\"intermediate_size\": 14336", "\"intermediate_size\": 1048576"},
                            {"\"num_local_experts\": 8", "\"num_local_experts\": 1048576"}}) {
    REQUIRE(hf.find(key) != std::string::npos);
    hf.replace(hf.find(key), key.size(), value);
  }
  const std::string hf_json = "ppb_test_limits_wide.json";
  std::ofstream(hf_json) << hf;
  const std::string message =
      ParseError("model: {hf_config: " + hf_json + "}\n"
                 "training: {seq_length: 4096}\n"
                 "hardware: {peak_tflops: 400}\n"
                 "cluster: {devices: {memory: 80GiB}}\n"
                 "pipeline: {stages: 2, microbatches: 4}\n");
  std::remove(hf_json.c_str());
  CHECK(message.rfind("run.yaml:1: model.hf_config: " + hf_json +
                          ": must describe at most 2^50 (about 1.1e15) parameters",
                      0) == 0);
}

// The tiny search model's problem, and options whose deadline has passed.
SearchProblem TinyProblem(const std::string& text) {
  Result<RunConfig> config = test::Parse(text);
  REQUIRE(config.ok());
  Result<SearchProblem> problem = BuildSearchProblem(*config);
  REQUIRE(problem.ok());
  return *problem;
}

SearchOptions Expired() {
  SearchOptions o;
  o.threads = 1;
  o.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  return o;
}

TEST_CASE("limits: a search past its deadline answers with what it has", "[search][limits]") {
  const SearchProblem problem = TinyProblem(std::string(test::kTinySearchConfig));
  // Without a limit the balanced split is proved optimal at 30 ms.
  SearchOptions free;
  free.threads = 1;
  const SearchResult full = *Search(problem, free);
  REQUIRE(full.proved_optimal);
  REQUIRE(full.best.makespan == 30'000'000);

  // Past the deadline from the start: the heuristics' first split is still
  // simulated (an answer), nothing is proved, and the reason is the limit.
  const SearchResult r = *Search(problem, Expired());
  CHECK(r.found);
  CHECK_FALSE(r.proved_optimal);
  CHECK(r.stop_reason == "time limit");
  CHECK(r.best.feasible);
  CHECK(r.best.makespan >= full.best.makespan);
  CHECK(r.lower_bound <= full.best.makespan);
  CHECK(r.nodes == 0);

  // The baselines past a deadline are listed, not simulated.
  // (A rule that does not apply still says why.)
  const auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const std::vector<Baseline> late = Baselines(problem, 0, past);
  const std::vector<Baseline> in_time = Baselines(problem, 0);
  REQUIRE(late.size() == in_time.size());
  int simulated = 0;
  for (size_t i = 0; i < late.size(); ++i) {
    INFO(late[i].name);
    CHECK_FALSE(late[i].applicable);
    simulated += in_time[i].applicable;
    CHECK(late[i].why_not == (in_time[i].applicable ? "not simulated: the time limit had passed"
                                                     : in_time[i].why_not));
  }
  CHECK(simulated >= 2);

  // One that would end past the deadline is not simulated either: an hour
  // left, a simulation said to take two; said to take nothing, all run.
  const auto hour = std::chrono::steady_clock::now() + std::chrono::hours(1);
  const std::vector<Baseline> too_long = Baselines(problem, 0, hour, 7200.0);
  const std::vector<Baseline> fits = Baselines(problem, 0, hour, 0.0);
  REQUIRE(too_long.size() == in_time.size());
  REQUIRE(fits.size() == in_time.size());
  for (size_t i = 0; i < in_time.size(); ++i) {
    INFO(in_time[i].name);
    CHECK(too_long[i].why_not == late[i].why_not);
    CHECK(fits[i].applicable == in_time[i].applicable);
    if (fits[i].applicable) CHECK(fits[i].candidate.makespan == in_time[i].candidate.makespan);
  }
  // The search times one simulation only under a deadline.
  CHECK(full.simulation_s == 0.0);
  CHECK(r.simulation_s > 0.0);
}

TEST_CASE("limits: nothing fits and the deadline has passed", "[search][limits]") {
  // 2 GiB per device holds no layer with its activations: nothing fits.
  const SearchProblem problem =
      TinyProblem(Edited("devices: {memory: 7GiB}", "devices: {memory: 2GiB}"));
  SearchOptions free;
  free.threads = 1;
  const SearchResult full = *Search(problem, free);
  REQUIRE_FALSE(full.found);
  REQUIRE(full.min_capacity_needed > 0);
  CHECK_FALSE(full.min_capacity_cut);

  // The least capacity is not searched past the deadline, and says so.
  const SearchResult r = *Search(problem, Expired());
  CHECK_FALSE(r.found);
  CHECK_FALSE(r.proved_infeasible);
  CHECK(r.min_capacity_cut);
  CHECK(r.min_capacity_needed == 0);
  CHECK(r.binding_device == -1);
}

TEST_CASE("limits: a directory given as a file is named as one", "[config][limits]") {
  // A directory opens as a stream that reads nothing: it used to read as
  // "an empty file" (--config) or a program of 0 ranks (--schedule-csv).
  const std::string dir = PPB_TEST_DATA_DIR;
  const Result<RunConfig> config = LoadConfig(dir, {});
  REQUIRE_FALSE(config.ok());
  CHECK(config.error().message ==
        dir + ": must be a readable config file; got " + std::strerror(EISDIR));
  CliOverrides csv;
  csv.schedule_csv = dir;
  const Result<RunConfig> parsed = test::Parse(std::string(test::kTinySearchConfig), csv);
  REQUIRE(parsed.ok());
  const Result<PreparedRun> run = Prepare(*parsed);
  REQUIRE_FALSE(run.ok());
  const std::string message = run.error().message;
  CHECK(message.find("must name a readable schedule CSV; got " + dir) != std::string::npos);
  CHECK(message.find(std::strerror(EISDIR)) != std::string::npos);
}

}  // namespace
}  // namespace ppb
