// The user-facing side of the search: the config's `search:` block, the
// problem built from it (apps/input/search_problem.h), candidates files, and the
// `ppb-sim search` / `ppb-sim rank` commands run in process.
//
// The tiny model (kTiny): 4 identical layers (F 1 ms, B 2 ms, 1 GiB static,
// 1 GiB activation; full recompute keeps 128 MiB for 1 ms more) on 2 ranks
// of 7 GiB, 4 micro-batches, 1F1B, free links. By hand:
//   [2, 2]           (m + p - 1)(tf + tb) = 5 * 6 ms = 30 ms; rank 0 holds
//                    2 micro-batches * 2 GiB + 2 GiB static = 6 GiB: fits.
//   [1, 3]           rank 1 is busy 4 * 9 ms after rank 0's first F (1 ms)
//                    and before its last B (2 ms): 39 ms; fits.
//   [2, 2] all full  5 * (2 + 4 + 2) ms = 40 ms; fits.
//   [3, 1]           rank 0 is busy 4 * 9 ms without a gap: 36 ms, but it
//                    holds 2 * 3 GiB + 3 GiB = 9 GiB > 7 GiB: out of memory.
// So a ranking is [2,2], [1,3], [2,2] full, and [3,1] last (it does not fit),
// and no strategy beats 30 ms.
#include <catch2/catch.hpp>
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/candidates.h"
#include "apps/input/config.h"
#include "apps/input/search_problem.h"
#include "tests/app_helpers.h"

namespace ppb {
namespace {

// Line numbers matter: the search block, when appended, starts on line 17.
constexpr std::string_view kTiny = test::kTinySearchConfig;

// kTiny followed by `more` (starting on line 17).
std::string Tiny(std::string_view more = "") {
  return std::string(kTiny) + std::string(more);
}

using test::Cli;
using test::CliRun;
using test::Parse;
using test::ParseError;

// The error of BuildSearchProblem on `text` (which must parse).
std::string BuildError(const std::string& text) {
  Result<RunConfig> r = Parse(text);
  if (!r.ok()) FAIL("the config did not parse: " << r.error().message);
  Result<SearchProblem> problem = BuildSearchProblem(*r);
  if (problem.ok()) FAIL("expected an error from BuildSearchProblem");
  return problem.error().message;
}

std::string CandidatesError(const std::string& text) {
  Result<RunConfig> config = Parse(Tiny());
  REQUIRE(config.ok());
  auto r = ParseCandidates(text, "cands.yaml", *config);
  if (r.ok()) FAIL("expected an error, but the candidates parsed:\n" << text);
  return r.error().message;
}

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.rfind(prefix, 0) == 0;
}

void CheckPrefix(const std::string& message, std::string_view prefix) {
  INFO(message);
  CHECK(StartsWith(message, prefix));
}

// Writes `text` to a file of this test's temporary directory; returns its
// path.
std::string WriteTemp(const std::string& name, std::string_view text) {
  // One directory per process: ctest runs test cases in parallel processes
  // that write files of the same names.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ppb_test_search_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

constexpr std::string_view kCandidates = R"(candidates:
  - {name: lopsided-3-1, layers_per_chunk: [[3, 1]]}
  - {name: balanced-full, recompute: {full: true}}
  - {name: lopsided-1-3, layers_per_chunk: [[1, 3]]}
  - {name: balanced, layers_per_chunk: [[2, 2]]}
)";

}  // namespace

// ---- the search block
// --------------------------------------------------------

TEST_CASE("search block: values, defaults and CLI overrides", "[search-cli]") {
  const std::string text = Tiny(R"(search:
  schedules: [1f1b, Interleaved1F1B]
  virtual_stages: [1, 2]
  microbatch_groups: [2, 4]
  time_limit: 1.5s
  node_limit: 1000
  seed: 7
  threads: 3
  top: 2
)");
  Result<RunConfig> r = Parse(text);
  REQUIRE(r.ok());
  const SearchSettings& s = r->search;
  CHECK(s.schedules == std::vector<std::string>{"1f1b", "interleaved"});
  CHECK(s.virtual_stages == std::vector<int>{1, 2});
  CHECK(s.microbatch_groups == std::vector<int>{2, 4});
  CHECK(s.time_limit == 1'500'000'000);
  CHECK(s.node_limit == 1000);
  CHECK(s.seed == 7);
  CHECK(s.threads == 3);
  CHECK(s.top == 2);
  const SearchOptions o = MakeSearchOptions(s);
  CHECK(o.time_limit_s == 1.5);
  CHECK(o.node_limit == 1000);
  CHECK(o.seed == 7);
  CHECK(o.threads == 3);
  CHECK(o.top_k == 2);

  Result<RunConfig> d = Parse(Tiny());
  REQUIRE(d.ok());
  CHECK(d->search.schedules.empty());
  CHECK(d->search.time_limit == 60'000'000'000);
  CHECK(d->search.node_limit == 0);
  CHECK(d->search.seed == 1);
  CHECK(d->search.top == 5);
  CHECK(MakeSearchOptions(d->search).threads >= 1);

  CliOverrides cli;
  cli.schedules = std::vector<std::string>{"gpipe"};
  cli.virtual_stages_list = std::vector<int>{1};
  cli.time_limit = 0;
  cli.seed = 9;
  cli.top = 1;
  Result<RunConfig> o2 = Parse(text, cli);
  REQUIRE(o2.ok());
  CHECK(o2->search.schedules == std::vector<std::string>{"gpipe"});
  CHECK(o2->search.virtual_stages == std::vector<int>{1});
  CHECK(o2->search.microbatch_groups == std::vector<int>{2, 4});  // file's
  CHECK(o2->search.time_limit == 0);
  CHECK(o2->search.seed == 9);
  CHECK(o2->search.top == 1);
  CHECK(MakeSearchOptions(o2->search).time_limit_s == 0);
}

TEST_CASE("search block: errors name file, line and key", "[search-cli]") {
  struct Case {
    std::string block;  // from line 17
    std::string prefix;
  };
  const std::vector<Case> cases = {
      {"search: [1]\n",
       "run.yaml:17: search: must be a map with keys schedules, "
       "virtual_stages, microbatch_groups, time_limit, node_limit, seed, "
       "threads, top, device_order, target, memory_headroom; got a list of 1"},
      {"search:\n  bogus: 1\n",
       "run.yaml:18: search.bogus: unknown key; expected one of schedules,"},
      {"search:\n  schedules: [1f1b, custom]\n",
       "run.yaml:18: search.schedules[1]: must be one of gpipe, 1f1b, "
       "interleaved, looped-bfs, interleaved-zero-bubble, zbv-zero-bubble, "
       "dualpipev, zb-1p, zb-2p, zb-v (a custom schedule fixes the op order of one split); got "
       "custom"},
      {"search:\n  schedules: [1f1b, 1F1B]\n",
       "run.yaml:18: search.schedules[1]: must name each schedule once; got "
       "1f1b again"},
      {"search:\n  schedules: []\n",
       "run.yaml:18: search.schedules: must list at least one schedule; got "
       "an empty list"},
      {"search:\n  virtual_stages: [2, 0]\n",
       "run.yaml:18: search.virtual_stages[1]: must be a positive integer up "
       "to 50000"},
      {"search:\n  virtual_stages: [2, 2]\n",
       "run.yaml:18: search.virtual_stages[1]: must list each value once; got "
       "2 again"},
      {"search:\n  microbatch_groups: 4\n",
       "run.yaml:18: search.microbatch_groups: must be a list of positive "
       "integers; got 4"},
      {"search:\n  time_limit: 60\n",
       "run.yaml:18: search.time_limit: must be a duration with a unit"},
      {"search:\n  node_limit: 0\n",
       "run.yaml:18: search.node_limit: must be a positive integer; got 0"},
      {"search:\n  seed: -1\n",
       "run.yaml:18: search.seed: must be a non-negative integer; got -1"},
      {"search:\n  threads: 0\n",
       "run.yaml:18: search.threads: must be a positive integer; got 0"},
      {"search:\n  top: many\n",
       "run.yaml:18: search.top: must be a positive integer; got many"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.prefix) {
      CheckPrefix(ParseError(Tiny(c.block)), c.prefix);
    }
  }

  CliOverrides cli;
  cli.schedules = std::vector<std::string>{"zb1p"};
  CheckPrefix(ParseError(Tiny(), cli),
              "run.yaml: --schedules: must be one of gpipe, 1f1b, interleaved");
}

TEST_CASE("search problem: the choices make sense", "[search-cli]") {
  SECTION("no lists: the pipeline's own choice") {
    Result<RunConfig> r = Parse(Tiny());
    REQUIRE(r.ok());
    Result<SearchProblem> problem = BuildSearchProblem(*r);
    REQUIRE(problem.ok());
    REQUIRE(problem->choices.size() == 1);
    CHECK(problem->choices[0].schedule == "1f1b");
    CHECK(problem->choices[0].v == 1);
    CHECK(problem->p == 2);
    CHECK(problem->m == 4);
    CHECK(problem->layers.size() == 4);
  }
  SECTION("schedules x v x g, 1f1b only with v = 1") {
    Result<RunConfig> r = Parse(Tiny(R"(search:
  schedules: [1f1b, interleaved]
  virtual_stages: [1, 2]
  microbatch_groups: [2, 4]
)"));
    REQUIRE(r.ok());
    Result<SearchProblem> problem = BuildSearchProblem(*r);
    REQUIRE(problem.ok());
    std::vector<std::string> names;
    for (const ScheduleChoice& c : problem->choices) {
      names.push_back(DescribeChoice(*problem, c));
    }
    CHECK(names == std::vector<std::string>{"1f1b", "interleaved v=2 g=2",
                                            "interleaved v=2 g=4"});
    CHECK(problem->choices[1].params.group == 2);
    CHECK(problem->choices[0].params.group == 0);
  }
  SECTION("errors") {
    CheckPrefix(BuildError(Tiny("search:\n  schedules: [1f1b]\n"
                                "  virtual_stages: [2]\n")),
                "run.yaml:19: search.virtual_stages: must list only values a listed "
                "schedule runs (1f1b runs v = 1); got 2");
    CheckPrefix(BuildError(Tiny("search:\n  schedules: [interleaved]\n"
                                "  virtual_stages: [1, 2]\n")),
                "run.yaml:19: search.virtual_stages: must list only values a listed "
                "schedule runs (interleaved runs v >= 2); got 1");
    CheckPrefix(BuildError(Tiny("search:\n  schedules: [interleaved]\n")),
                "run.yaml:14: pipeline.virtual_stages: must give interleaved "
                "a v >= 2");
    CheckPrefix(BuildError(Tiny("search:\n  schedules: [1f1b]\n"
                                "  microbatch_groups: [2]\n")),
                "run.yaml:19: search.microbatch_groups: must only be given "
                "when interleaved is searched; got 2");
    CheckPrefix(BuildError(Tiny("search:\n  schedules: [interleaved]\n"
                                "  virtual_stages: [2]\n"
                                "  microbatch_groups: [1]\n")),
                "run.yaml:20: search.microbatch_groups: interleaved v=2 g=1: "
                "must be in [stages (2), microbatches (4)]");
    CheckPrefix(BuildError(Tiny("search:\n  schedules: [interleaved]\n"
                                "  virtual_stages: [4]\n")),
                "run.yaml:19: search.virtual_stages: must leave every chunk a "
                "layer: 2 x 4 chunks for 4 layers");
    CheckPrefix(BuildError(Tiny("  schedule: custom\n  schedule_csv: s.csv\n")),
                "run.yaml:17: pipeline.schedule: must be a registered "
                "schedule to search");
  }
}

// ---- candidates files
// ----------------------------------------------------------

TEST_CASE("candidates: strategies and pipeline choices", "[search-cli]") {
  Result<RunConfig> config = Parse(Tiny());
  REQUIRE(config.ok());
  auto r = ParseCandidates(R"(candidates:
  - {name: even}
  - layers_per_chunk: [[1, 3]]
    recompute: {full: [1, 0]}
  - {name: v2, schedule: interleaved, virtual_stages: 2, layout: "t|t|t|t"}
)",
                           "cands.yaml", *config);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].name == "even");
  CHECK((*r)[0].strategy.layers_per_stage == std::vector<int>{2, 2});
  CHECK((*r)[0].schedule == "1f1b");
  CHECK((*r)[1].name == "candidate 2");
  CHECK((*r)[1].line == 3);
  CHECK((*r)[1].strategy.layers_per_stage == std::vector<int>{1, 3});
  CHECK((*r)[1].strategy.recompute == std::vector<std::uint8_t>{1, 0, 0, 0});
  CHECK((*r)[2].schedule == "interleaved");
  CHECK((*r)[2].v == 2);
  CHECK((*r)[2].strategy.layers_per_stage == std::vector<int>{1, 1, 1, 1});

  const RankProblem rank = BuildRankProblem(*config, *r);
  CHECK(rank.problem.choices.size() == 2);
  CHECK(rank.choice_of == std::vector<int>{0, 0, 1});
}

TEST_CASE("candidates: errors name the candidates file", "[search-cli]") {
  CheckPrefix(CandidatesError("candidates:\n  - {name: a, layers_per_chunk: "
                              "[[3, 2]]}\n"),
              "cands.yaml:2: candidates[0].layers_per_chunk: must add up to "
              "the model's 4 layers (after repeat); got 5");
  CheckPrefix(CandidatesError("candidates:\n  - {name: a, bogus: 1}\n"),
              "cands.yaml:2: candidates[0].bogus: unknown key; expected one "
              "of name, schedule,");
  CheckPrefix(CandidatesError("candidates:\n  - {name: a}\n  - {name: a}\n"),
              "cands.yaml:3: candidates[1].name: must be unique; got a, also "
              "the name of candidates[0]");
  CheckPrefix(CandidatesError("candidates:\n  - {name: a, schedule: zb}\n"),
              "cands.yaml:2: candidates[0].schedule: must be one of gpipe, "
              "1f1b, interleaved, looped-bfs, interleaved-zero-bubble, "
              "zbv-zero-bubble, dualpipev, zb-1p, zb-2p, zb-v; got zb");
  CheckPrefix(CandidatesError("candidates:\n  - {name: a, schedule: "
                              "interleaved}\n"),
              "cands.yaml:2: candidates[0].schedule: schedule interleaved "
              "with v = 1: must be >= 2 for interleaved");
  CheckPrefix(CandidatesError("candidates:\n  - {name: a, recompute: {full: "
                              "[3, 0]}}\n"),
              "cands.yaml:2: candidates[0].recompute.full[0]: must be at most "
              "the 2 layers of stage 0");
  CheckPrefix(CandidatesError("candidates:\n  - {name: a, layers_per_chunk: "
                              "[[4, 0]]}\n"),
              "cands.yaml:2: candidates[0].layers_per_chunk[0][1]: must be "
              "positive (chunk 0 of rank 1 would be empty; set "
              "candidates[0].allow_empty_chunks to allow it); got 0");
  CheckPrefix(CandidatesError("candidates: []\n"),
              "cands.yaml:1: candidates: must be a non-empty list of "
              "strategies; got an empty list");
  CheckPrefix(CandidatesError("strategies: []\n"),
              "cands.yaml:1: strategies: unknown key; expected one of "
              "candidates");
  CheckPrefix(CandidatesError(""), "cands.yaml: must be a map with candidates");
}

// ---- ppb-sim rank and search
// ----------------------------------------------------

TEST_CASE("rank: ordered by time, the split that does not fit last",
          "[search-cli]") {
  const std::string config = WriteTemp("tiny.yaml", Tiny());
  const std::string cands = WriteTemp("cands.yaml", kCandidates);

  const CliRun json = Cli(
      {"rank", "--config", config, "--candidates", cands, "--format", "json"});
  INFO(json.err);
  REQUIRE(json.status == 0);
  CHECK(json.err.empty());
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["schema"] == "ppb.rank/1");
  const auto& c = j["candidates"];
  REQUIRE(c.size() == 4);
  CHECK(c[0]["name"] == "balanced");
  CHECK(c[0]["iteration_time_ms"].get<double>() == Approx(30.0));
  CHECK(c[0]["layers_per_chunk"] == nlohmann::json::parse("[[2,2]]"));
  CHECK(c[0]["layout"] == "t*2|t*2");
  CHECK(c[0]["devices"][0]["peak_memory_bytes"] == 6LL << 30);
  CHECK(c[1]["name"] == "lopsided-1-3");
  CHECK(c[1]["iteration_time_ms"].get<double>() == Approx(39.0));
  CHECK(c[2]["name"] == "balanced-full");
  CHECK(c[2]["iteration_time_ms"].get<double>() == Approx(40.0));
  CHECK(c[2]["recompute"]["per_stage"]["full"] ==
        nlohmann::json::parse("[[2,2]]"));
  CHECK(c[2]["recompute"]["per_layer"] ==
        nlohmann::json::parse(R"(["full","full","full","full"])"));
  CHECK(c[3]["name"] == "lopsided-3-1");
  CHECK(c[3]["iteration_time_ms"].get<double>() == Approx(36.0));
  CHECK(c[3]["feasible"] == false);
  CHECK(c[3]["oom_ranks"] == nlohmann::json::parse("[0]"));
  CHECK(c[3]["devices"][0]["peak_memory_bytes"] == 9LL << 30);
  for (int i = 0; i < 4; ++i) CHECK(c[i]["rank"] == i + 1);

  const CliRun text = Cli({"rank", "--config", config, "--candidates", cands});
  REQUIRE(text.status == 0);
  const size_t a = text.out.find("balanced ");
  const size_t b = text.out.find("lopsided-1-3");
  const size_t d = text.out.find("lopsided-3-1");
  CHECK(a < b);
  CHECK(b < d);
  CHECK(text.out.find("OOM on rank 0") > d);
  CHECK(text.out.find("OOM on rank 0") != std::string::npos);
}

TEST_CASE("search: JSON report", "[search-cli]") {
  const std::string config = WriteTemp("tiny.yaml", Tiny());
  const CliRun r =
      Cli({"search", "--config", config, "--format", "json", "--seed", "7",
           "--top", "3", "--threads", "2", "--time-limit", "20"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());  // no progress unless asked (not a terminal)
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppb.search/1");
  CHECK(j["seed"] == 7);
  CHECK(j["feasible"] == true);
  for (const char* key :
       {"best", "top", "proved_optimal", "lower_bound_ms", "gap", "stop_reason",
        "nodes", "evaluations", "solve_time_s", "baselines", "choices"}) {
    INFO(key);
    CHECK(j.contains(key));
  }
  const auto& best = j["best"];
  for (const char* key :
       {"schedule", "virtual_stages", "microbatch_group", "iteration_time_ms",
        "bubble_fraction", "layers_per_chunk", "layout", "recompute",
        "devices"}) {
    INFO(key);
    CHECK(best.contains(key));
  }
  CHECK(best["schedule"] == "1f1b");
  CHECK(best["recompute"].contains("per_stage"));
  CHECK(best["recompute"]["per_layer"].size() == 4);
  // No split of kTiny beats the balanced one (see the top of this file).
  CHECK(best["iteration_time_ms"].get<double>() == Approx(30.0));
  CHECK(best["layers_per_chunk"] == nlohmann::json::parse("[[2,2]]"));
  REQUIRE(best["devices"].size() == 2);
  for (const char* key : {"rank", "peak_memory_bytes", "memory_capacity_bytes",
                          "busy_ms", "idle_ms"}) {
    INFO(key);
    CHECK(best["devices"][0].contains(key));
  }
  CHECK(best["devices"][0]["memory_capacity_bytes"] == 7LL << 30);
  CHECK(j["top"].size() >= 1);
  CHECK(j["top"].size() <= 3);
  CHECK(j["top"][0] == best);
  CHECK(j["lower_bound_ms"].get<double>() <=
        best["iteration_time_ms"].get<double>() + 1e-9);
  REQUIRE(j["baselines"].size() >= 1);
  for (const auto& b : j["baselines"]) {
    for (const char* key :
         {"name", "applicable", "why_not", "iteration_time_ms",
          "max_peak_memory_bytes", "feasible", "speedup"}) {
      INFO(key);
      CHECK(b.contains(key));
    }
  }
  const auto& even = j["baselines"][0];
  if (even["applicable"] == true && even["feasible"] == true) {
    CHECK(even["speedup"].get<double>() ==
          Approx(even["iteration_time_ms"].get<double>() / 30.0));
  }
  for (const auto& b : j["baselines"]) {
    if (b["applicable"] == true && b["feasible"] == false) CHECK(b["speedup"].is_null());
  }

  const CliRun text =
      Cli({"search", "--config", config, "--seed", "7", "--time-limit", "20s"});
  REQUIRE(text.status == 0);
  CHECK(text.out.find("recommended: schedule 1f1b, v=1, g=-") !=
        std::string::npos);
  CHECK(text.out.find("seed 7") != std::string::npos);
  CHECK(text.out.find("baselines") != std::string::npos);
  const bool proved = text.out.find("PROVED OPTIMAL") != std::string::npos;
  const bool stopped = text.out.find("stopped at ") != std::string::npos;
  CHECK(proved != stopped);
}

TEST_CASE("search with zb-1p: one order per choice, reported as searched",
          "[search-cli][zb]") {
  const std::string config = WriteTemp("tiny-zb.yaml", Tiny());
  const CliRun r = Cli({"search", "--config", config, "--format", "json",
                        "--schedules", "1f1b,zb-1p", "--threads", "1"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["feasible"] == true);
  // The top list is sorted by the times it reports (they are the search's).
  for (size_t k = 1; k < j["top"].size(); ++k) {
    CHECK(j["top"][k - 1]["iteration_time_ms"].get<double>() <=
          j["top"][k]["iteration_time_ms"].get<double>());
  }
  // A byte limit depends on the split: refused by the search (exit 2).
  const std::string bytes =
      WriteTemp("tiny-zb-bytes.yaml", Tiny("  activation_limit: 3GiB\n"));
  const CliRun e = Cli({"search", "--config", bytes, "--schedules", "zb-1p"});
  CHECK(e.status == 2);
  CHECK(e.err.find("pipeline.activation_limit: must be kp") !=
        std::string::npos);
}

TEST_CASE("search: nothing fits is an answer", "[search-cli]") {
  // Same model on 2 GiB devices: every split holds 2 GiB of static memory on
  // some rank, plus activations.
  std::string text = Tiny("search:\n  time_limit: 20s\n");
  text.replace(text.find("memory: 7GiB"), 12, "memory: 2GiB");
  const std::string small = WriteTemp("tiny-2gib.yaml", text);
  const CliRun r = Cli({"search", "--config", small, "--format", "json"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["feasible"] == false);
  CHECK(j["best"].is_null());
  CHECK(j["min_capacity_needed_bytes"].get<long long>() > (2LL << 30));
  CHECK(j.contains("binding_device"));
  const CliRun t = Cli({"search", "--config", small});
  REQUIRE(t.status == 0);
  CHECK(t.out.find("no strategy fits in memory") != std::string::npos);
}

TEST_CASE("search and rank: bad command lines exit with status 2",
          "[search-cli]") {
  const std::string config = WriteTemp("tiny.yaml", Tiny());
  struct Case {
    std::vector<std::string> args;
    std::string err;  // exact start of stderr
  };
  const std::vector<Case> cases = {
      {{"search", "--config", config, "--time-limit", "soon"},
       "ppb-sim: --time-limit: expected a duration (30s, 500ms) or seconds "
       "(30); got 'soon'"},
      {{"search", "--config", config, "--threads", "0"},
       "ppb-sim: --threads: expected a positive integer; got '0'"},
      {{"search", "--config", config, "--node-limit", "-5"},
       "ppb-sim: --node-limit: expected a positive integer; got '-5'"},
      {{"search", "--config", config, "--seed", "x"},
       "ppb-sim: --seed: expected a non-negative integer; got 'x'"},
      {{"search", "--config", config, "--top", "two"},
       "ppb-sim: --top: expected a positive integer; got 'two'"},
      {{"search", "--config", config, "--virtual-stages-list", "1,,2"},
       "ppb-sim: --virtual-stages-list: expected a comma-separated list of "
       "positive integers; got '1,,2'"},
      {{"search", "--config", config, "--schedules", "1f1b,zb"},
       config + ": --schedules: must be one of gpipe, 1f1b, interleaved"},
      {{"search", "--config", config, "--schedules", "1f1b",
        "--virtual-stages-list", "2"},
       config + ": --virtual-stages-list: must list only values a listed schedule runs "
                "(1f1b runs v = 1); got 2"},
      {{"search", "--config", config, "--trace", "t.json"},
       "ppb-sim: unrecognised option '--trace'"},
      {{"search", "--config", config, "--format", "yaml"},
       "ppb-sim: --format: expected text or json; got 'yaml'"},
      {{"rank", "--config", config}, "ppb-sim: --candidates: required"},
      {{"rank", "--config", config, "--candidates", "does-not-exist.yaml"},
       "does-not-exist.yaml: must be a readable candidates file"},
      {{"search"}, "ppb-sim: --config: required"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.err) {
      const CliRun r = Cli(c.args);
      INFO(r.err);
      CHECK(r.status == 2);
      CHECK(StartsWith(r.err, c.err));
      CHECK(r.out.empty());
    }
  }
  const std::string bad = WriteTemp(
      "bad-cands.yaml", "candidates:\n  - {name: x, layout: \"t|t|t\"}\n");
  const CliRun r = Cli({"rank", "--config", config, "--candidates", bad});
  CHECK(r.status == 2);
  CheckPrefix(r.err, bad + ":2: candidates[0].layout: ");
}

// The search gives a stage's identical layers their modes in MindFormers'
// list order (full before selective) whatever order the model lists them
// in, so the answer is MindFormers' first-N lists. By hand: 8 decoders of 1
// GiB activation on 2 ranks of 5 GiB; the proven best keeps 2 full (64
// MiB) and 2 selective (512 MiB) on rank 0, listed selective first in the
// model; listed in that order they would not be first-N lists.
TEST_CASE("search: recompute modes in MindFormers' list order", "[search-cli]") {
  const std::string path =
      (std::filesystem::temp_directory_path() / "ppb-test-mode-order.yaml").string();
  {
    std::ofstream out(path);
    out << "model:\n"
           "  name: order\n"
           "  layers:\n"
           "    - {name: embedding, kind: embedding, forward: 1ms, backward: 2ms}\n"
           "    - name: decoder\n"
           "      repeat: 8\n"
           "      forward: 1ms\n"
           "      backward: 2ms\n"
           "      static_memory: 256MiB\n"
           "      activation: 1GiB\n"
           "      recompute:\n"
           "        selective: {activation: 512MiB, time: 0.2ms}\n"
           "        full: {activation: 64MiB, time: 1ms}\n"
           "    - {name: head, kind: head, forward: 1ms, backward: 2ms}\n"
           "cluster:\n"
           "  devices: {memory: 5GiB}\n"
           "pipeline:\n"
           "  stages: 2\n"
           "  microbatches: 4\n";
  }
  const CliRun r = Cli({"search", "--config", path, "--threads", "1", "--format", "json", "--emit",
                        "mindformers"});
  std::remove(path.c_str());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["proved_optimal"] == true);
  const auto& per_layer = j["best"]["recompute"]["per_layer"];
  const std::vector<std::string> stage0 = {per_layer[1], per_layer[2], per_layer[3], per_layer[4]};
  CHECK(stage0 == std::vector<std::string>{"full", "full", "selective", "selective"});
  CHECK(j["emit"]["mindformers"]["recompute_expressed"] == true);
  CHECK_THAT(j["emit"]["mindformers"]["text"].get<std::string>(),
             Catch::Contains("  recompute: [2, 0]\n  select_recompute: [4, 0]\n"));
}

}  // namespace ppb
