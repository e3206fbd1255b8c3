// ppb-sim sweep: grid errors, the sweep equal to separate runs point by
// point, shards merged equal to the whole, a killed run resumed equal to an
// uninterrupted one, a corrupt trailing line redone, merge's reports.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/commands/sweep_point.h"
#include "apps/input/grid_plan.h"
#include "apps/output/sweep_output.h"
#include "tests/app_helpers.h"

namespace ppb::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A fresh directory for one test.
fs::path TempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("ppb-sweep-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}


std::vector<std::string> SortedLines(const std::string& text) {
  std::vector<std::string> v = Lines(text);
  std::sort(v.begin(), v.end());
  return v;
}

// The tiny model (4 layers) with the memory on one line of its own, so
// that a test can write the config with another capacity.
std::string TinyConfig(const std::string& memory = "7GiB") {
  std::string text(kTinySearchConfig);
  const std::string from = "devices: {memory: 7GiB}";
  text.replace(text.find(from), from.size(), "devices: {memory: " + memory + "}");
  return text;
}

TEST_CASE("sweep: a bad grid is an error with file, line, key, expected and given", "[sweep]") {
  const fs::path dir = TempDir("bad");
  Write(dir / "base.yaml", TinyConfig());
  auto run = [&](const std::string& grid) {
    Write(dir / "grid.yaml", grid);
    return Cli({"sweep", "--config", (dir / "base.yaml").string(), "--grid",
                (dir / "grid.yaml").string()});
  };
  const std::string g = (dir / "grid.yaml").string();
  CliRun r = run("vary:\n  pipeline.stages: {a: 1}\n");
  CHECK(r.status == 2);
  CHECK(r.err == g + ":2: vary.pipeline.stages: expected a list of values (or one value); "
                     "got a map\n");
  r = run("vary:\n  cluster.devices.memory: [7GiB, fast]\n");
  CHECK(r.status == 2);
  CHECK(r.err == g + ":2: vary.cluster.devices.memory: expected a size like 80GiB or a factor "
                     "like x2; got 'fast'\n");
  r = run("vary:\n  pipeline.stages: [2, 0]\n");
  CHECK(r.status == 2);
  CHECK(r.err.rfind(g + ":2: vary.pipeline.stages: expected a positive integer", 0) == 0);
  r = run("vary:\n  cluster.devices.speed: [1, 2]\n");
  CHECK(r.status == 2);
  CHECK(r.err.rfind(g + ":2: vary.cluster.devices.speed: unknown key; expected one of", 0) == 0);
  r = run("vary:\n  pipeline.schedule: [1f1b, zigzag]\n");
  CHECK(r.status == 2);
  CHECK(r.err.rfind(g + ":2: vary.pipeline.schedule: expected one of gpipe", 0) == 0);
  CHECK(r.err.find("got 'zigzag'") != std::string::npos);
  r = run("vary:\n  pipeline.stages: [2]\nrun: optimize\n");
  CHECK(r.status == 2);
  CHECK(r.err == g + ":3: run: expected simulate, search or compare; got 'optimize'\n");
  r = run("vary:\n  pipeline.stages: [2]\ngroup_by: [model.name]\n");
  CHECK(r.status == 2);
  CHECK(r.err == g + ":3: group_by: expected keys of vary (pipeline.stages, run); got "
                     "'model.name'\n");
  r = run("vary:\n  pipeline.stages: [2]\nsearch: {node_limit: -3}\n");
  CHECK(r.status == 2);
  CHECK(r.err == g + ":3: search.node_limit: expected a positive integer; got '-3'\n");
  r = run("vary:\n  pipeline.stages: [2]\nsweep: 1\n");
  CHECK(r.status == 2);
  CHECK(r.err ==
        g + ":3: sweep: expected one of vary, run, search, compare, group_by; got 'sweep'\n");
  r = Cli({"sweep", "--config", (dir / "base.yaml").string(), "--grid", g, "--shard", "4/3"});
  CHECK(r.status == 2);
  CHECK(r.err == "ppb-sim: --shard: expected K/N with 1 <= K <= N (e.g. 2/8); got '4/3'\n");
}

// The grid of the point-by-point test: 3 x 2 x 2 x 2 = 24 points, p = 8
// refused (4 layers), 3GiB does not fit.
constexpr const char* kGrid = R"(vary:
  cluster.devices.memory: [7GiB, 3GiB]
  pipeline.stages: [1, 2, 8]
  pipeline.microbatches: [4, x2]
  pipeline.schedule: [gpipe, 1f1b]
group_by: [cluster.devices.memory]
)";

TEST_CASE("sweep: each point equals the separate simulate run", "[sweep]") {
  const fs::path dir = TempDir("points");
  Write(dir / "base.yaml", TinyConfig());
  Write(dir / "grid.yaml", kGrid);
  const CliRun r = Cli({"sweep", "--config", (dir / "base.yaml").string(), "--grid",
                        (dir / "grid.yaml").string(), "--threads", "2"});
  REQUIRE(r.status == 0);
  const std::vector<std::string> lines = Lines(r.out);
  REQUIRE(lines.size() == 24);
  int refused = 0, oom = 0, ok = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const json row = json::parse(lines[i]);
    CHECK(row["schema"] == "ppb.sweep/1");
    CHECK(row["point"] == static_cast<int>(i));  // stdout is in point order
    CHECK(row["points"] == 24);
    const json& v = row["values"];
    const std::string memory = v["cluster.devices.memory"];
    const std::string m = v["pipeline.microbatches"] == "x2" ? "8" : "4";
    Write(dir / "point.yaml", TinyConfig(memory));
    const CliRun single =
        Cli({"--config", (dir / "point.yaml").string(), "--stages", v["pipeline.stages"],
             "--microbatches", m, "--schedule", v["pipeline.schedule"], "--format", "json"});
    if (v["pipeline.stages"] == "8") {
      CHECK(single.status == 2);
      CHECK(row["status"] == "refused");
      CHECK(row["reason"].get<std::string>().find("stages") != std::string::npos);
      CHECK(row["iteration_time_ns"].is_null());
      ++refused;
      continue;
    }
    REQUIRE(single.status == 0);
    const json sim = json::parse(single.out);
    CHECK(row["iteration_time_ns"] == sim["iteration_time_ns"]);
    CHECK(row["bubble"] == sim["bubble_fraction"]);
    CHECK(row["peak_memory_bytes"] == sim["max_peak_memory_bytes"]);
    CHECK(row["fits"] == (sim["outcome"] == "ok"));
    CHECK(row["status"] == (sim["outcome"] == "ok" ? "ok" : "oom"));
    (sim["outcome"] == "ok" ? ok : oom) += 1;
  }
  CHECK(refused == 8);
  CHECK(ok > 0);
  CHECK(oom > 0);

  // The output is the same bytes with one worker.
  const CliRun one = Cli({"sweep", "--config", (dir / "base.yaml").string(), "--grid",
                          (dir / "grid.yaml").string(), "--threads", "1"});
  CHECK(one.out == r.out);

  // The summary: per memory, the fitting point with the shortest time.
  const CliRun csv = Cli({"sweep", "--config", (dir / "base.yaml").string(), "--grid",
                          (dir / "grid.yaml").string(), "--output", (dir / "all.jsonl").string(),
                          "--format", "csv"});
  REQUIRE(csv.status == 0);
  const std::vector<std::string> summary = Lines(csv.out);
  REQUIRE(summary.size() == 3);  // header + 2 groups
  for (const std::string memory : {"7GiB", "3GiB"}) {
    std::int64_t best_time = -1;
    int best_point = -1, fitting = 0;
    for (const std::string& line : lines) {
      const json row = json::parse(line);
      if (row["values"]["cluster.devices.memory"] != memory || !row["fits"]) continue;
      ++fitting;
      if (best_time < 0 || row["iteration_time_ns"].get<std::int64_t>() < best_time) {
        best_time = row["iteration_time_ns"];
        best_point = row["point"];
      }
    }
    const std::string& s = summary[memory == std::string("7GiB") ? 1 : 2];
    CHECK(s.rfind(memory + ",12," + std::to_string(fitting) + "," +
                      (best_point < 0 ? "none fits" : std::to_string(best_point)),
                  0) == 0);
  }
}

TEST_CASE("sweep: shards 1/3, 2/3, 3/3 merged equal the whole run, merge reports gaps", "[sweep]") {
  const fs::path dir = TempDir("shards");
  Write(dir / "base.yaml", TinyConfig());
  Write(dir / "grid.yaml", kGrid);
  auto sweep = [&](const std::string& out, const std::string& shard) {
    std::vector<std::string> args = {"sweep",
                                     "--config",
                                     (dir / "base.yaml").string(),
                                     "--grid",
                                     (dir / "grid.yaml").string(),
                                     "--output",
                                     (dir / out).string(),
                                     "--threads",
                                     "2"};
    if (!shard.empty()) args.insert(args.end(), {"--shard", shard});
    return Cli(args);
  };
  REQUIRE(sweep("whole.jsonl", "").status == 0);
  for (int k = 1; k <= 3; ++k) {
    REQUIRE(sweep("s" + std::to_string(k) + ".jsonl", std::to_string(k) + "/3").status == 0);
    // Shard k holds the points i with i mod 3 = k - 1.
    for (const std::string& line : Lines(Slurp(dir / ("s" + std::to_string(k) + ".jsonl")))) {
      CHECK(json::parse(line)["point"].get<int>() % 3 == k - 1);
    }
  }
  const CliRun merged =
      Cli({"sweep", "merge", (dir / "s3.jsonl").string(), (dir / "s1.jsonl").string(),
           (dir / "s2.jsonl").string(), "--output", (dir / "merged.jsonl").string()});
  REQUIRE(merged.status == 0);
  CHECK(merged.err.find("24 points of 24 written") != std::string::npos);
  CHECK(merged.err.find("0 duplicate(s), 0 missing") != std::string::npos);
  CHECK(SortedLines(Slurp(dir / "merged.jsonl")) == SortedLines(Slurp(dir / "whole.jsonl")));
  // Merged rows are in point order.
  const std::vector<std::string> rows = Lines(Slurp(dir / "merged.jsonl"));
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(json::parse(rows[i])["point"] == static_cast<int>(i));
  }

  // Shard 2 missing, shard 1 twice: points 1, 4, ..., 22 missing, 8 duplicates.
  const CliRun partial =
      Cli({"sweep", "merge", (dir / "s1.jsonl").string(), (dir / "s3.jsonl").string(),
           (dir / "s1.jsonl").string(), "--output", (dir / "partial.jsonl").string()});
  CHECK(partial.status == 2);
  CHECK(partial.err.find("16 points of 24 written") != std::string::npos);
  CHECK(partial.err.find("8 duplicate(s), 8 missing: points 1, 4, 7, 10, 13, 16, 19, 22") !=
        std::string::npos);
}

// Runs the ppb-sim binary with `args` in a child process; returns its pid.
pid_t Spawn(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    static std::string binary = PPB_SIM_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    // Quiet: the child's streams go nowhere.
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

TEST_CASE(
    "sweep: a run killed mid-way and resumed equals an uninterrupted one; a corrupt "
    "line is redone",
    "[sweep]") {
  const fs::path dir = TempDir("resume");
  fs::copy_file(fs::path(PPB_CONFIGS_DIR) / "example.yaml", dir / "base.yaml");
  // 3 x 40 x 5 = 600 simulations of the 34-layer example.
  std::string grid = "vary:\n  pipeline.stages: [1, 2, 4]\n  pipeline.microbatches: [";
  for (int m = 4; m < 44; ++m) grid += (m > 4 ? ", " : "") + std::to_string(m);
  grid += "]\n  cluster.link.bandwidth: [x0.25, x0.5, x1, x2, x4]\n";
  Write(dir / "grid.yaml", grid);
  const std::vector<std::string> base = {
      "sweep",     "--config", (dir / "base.yaml").string(), "--grid", (dir / "grid.yaml").string(),
      "--threads", "1"};
  auto with_output = [&](const std::string& file) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--output", (dir / file).string()});
    return args;
  };
  const pid_t pid = Spawn(with_output("killed.jsonl"));
  REQUIRE(pid > 0);
  // Kill it once a few rows are there.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  size_t seen = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    seen = Lines(Slurp(dir / "killed.jsonl")).size();
    if (seen >= 5) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(pid, SIGKILL);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  REQUIRE(WIFSIGNALED(wstatus));
  const size_t at_kill = Lines(Slurp(dir / "killed.jsonl")).size();
  REQUIRE(at_kill >= 5);
  REQUIRE(at_kill < 600);

  const CliRun resumed = Cli(with_output("killed.jsonl"));
  REQUIRE(resumed.status == 0);
  CHECK(resumed.err.find("sweep: 600/600 points done") != std::string::npos);
  const CliRun whole = Cli(with_output("whole.jsonl"));
  REQUIRE(whole.status == 0);
  CHECK(resumed.out == whole.out);  // the summary
  CHECK(SortedLines(Slurp(dir / "killed.jsonl")) == SortedLines(Slurp(dir / "whole.jsonl")));

  // Nothing left: a rerun adds no row.
  const std::string before = Slurp(dir / "whole.jsonl");
  const CliRun again = Cli(with_output("whole.jsonl"));
  CHECK(again.status == 0);
  CHECK(again.err.find("(600 from the results file)") != std::string::npos);
  CHECK(Slurp(dir / "whole.jsonl") == before);

  // A trailing line cut in half is detected, removed and its point redone.
  const std::string full = Slurp(dir / "whole.jsonl");
  const size_t last = full.rfind('\n', full.size() - 2) + 1;
  Write(dir / "whole.jsonl", full.substr(0, last + (full.size() - last) / 2));
  const CliRun redone = Cli(with_output("whole.jsonl"));
  REQUIRE(redone.status == 0);
  CHECK(redone.err.find("whole.jsonl:600: the last line is not a complete row") !=
        std::string::npos);
  CHECK(redone.err.find("(599 from the results file)") != std::string::npos);
  CHECK(Slurp(dir / "whole.jsonl") == full);

  // A bad line before the last is an error with its place, not dropped.
  std::string bad = full;
  bad.replace(bad.find('\n') + 1, 10, "not json!!");
  Write(dir / "whole.jsonl", bad);
  const CliRun refused = Cli(with_output("whole.jsonl"));
  CHECK(refused.status == 2);
  CHECK(refused.err.find("whole.jsonl:2: expected a ppb.sweep/1 row; got a bad line") !=
        std::string::npos);
}

TEST_CASE("sweep: search points equal separate searches", "[sweep]") {
  const fs::path dir = TempDir("search");
  Write(dir / "base.yaml", TinyConfig());
  Write(dir / "grid.yaml",
        "vary:\n  cluster.devices.memory: [7GiB, 5GiB, 2GiB]\nrun: search\n"
        "search: {node_limit: 100000, threads: 1}\n");
  const CliRun r = Cli(
      {"sweep", "--config", (dir / "base.yaml").string(), "--grid", (dir / "grid.yaml").string()});
  REQUIRE(r.status == 0);
  const std::vector<std::string> lines = Lines(r.out);
  REQUIRE(lines.size() == 3);
  for (const std::string& line : lines) {
    const json row = json::parse(line);
    CHECK(row["run"] == "search");
    CHECK(row["settings"] == "node_limit=100000 threads=1");
    Write(dir / "point.yaml", TinyConfig(row["values"]["cluster.devices.memory"]));
    const CliRun single = Cli({"search", "--config", (dir / "point.yaml").string(), "--node-limit",
                               "100000", "--threads", "1", "--format", "json"});
    REQUIRE(single.status == 0);
    const json s = json::parse(single.out);
    CHECK(row["fits"] == s["feasible"]);
    if (s["feasible"]) {
      CHECK(row["iteration_time_ns"] == s["best"]["iteration_time_ns"]);
      CHECK(row["peak_memory_bytes"] == s["best"]["max_peak_memory_bytes"]);
      CHECK(row["proof"] == (s["proved_optimal"] ? "proved optimal" : row["proof"]));
      CHECK(row["status"] == "ok");
    } else {
      CHECK(row["status"] == "no_fit");
    }
  }
  // 7GiB: the balanced split, 30 ms, proved optimal (test_search_cli.cpp).
  const json first = json::parse(lines[0]);
  CHECK(first["iteration_time_ns"] == 30'000'000);
  CHECK(first["proof"] == "proved optimal");
  CHECK(json::parse(lines[2])["status"] == "no_fit");
}

}  // namespace
}  // namespace ppb::test

namespace ppb::test {
namespace {

TEST_CASE(
    "sweep: model.hf_config and layers by name vary like edited configs; compare points "
    "take the fastest fitting schedule",
    "[sweep]") {
  const fs::path dir = TempDir("models");
  const std::string configs = PPB_CONFIGS_DIR;
  // model.hf_config: each model's point equals the config naming that file.
  Write(dir / "grid.yaml",
        "vary:\n  model.hf_config: [hf/llama3-8b.json, hf/llama2-7b.json]\n"
        "group_by: model.hf_config\n");
  const CliRun r = Cli(
      {"sweep", "--config", configs + "/llama3-8b.yaml", "--grid", (dir / "grid.yaml").string()});
  REQUIRE(r.status == 0);
  const std::vector<std::string> lines = Lines(r.out);
  REQUIRE(lines.size() == 2);
  for (const std::string& line : lines) {
    const json row = json::parse(line);
    std::string text = Slurp(configs + "/llama3-8b.yaml");
    const std::string from = "hf_config: hf/llama3-8b.json";
    text.replace(
        text.find(from), from.size(),
        "hf_config: " + configs + "/" + row["values"]["model.hf_config"].get<std::string>());
    Write(dir / "point.yaml", text);
    const CliRun single = Cli({"--config", (dir / "point.yaml").string(), "--format", "json"});
    REQUIRE(single.status == 0);
    const json sim = json::parse(single.out);
    CHECK(row["status"] == "ok");
    CHECK(row["iteration_time_ns"] == sim["iteration_time_ns"]);
    CHECK(row["peak_memory_bytes"] == sim["max_peak_memory_bytes"]);
  }
  CHECK(json::parse(lines[0])["iteration_time_ns"] != json::parse(lines[1])["iteration_time_ns"]);

  // A layer group by name: decoder forward x2 equals compare --vary's row.
  Write(dir / "layers.yaml",
        "vary:\n  model.layers.decoder.forward: [x1, x2]\n  pipeline.schedule: [1f1b]\n");
  const CliRun layers = Cli(
      {"sweep", "--config", configs + "/example.yaml", "--grid", (dir / "layers.yaml").string()});
  REQUIRE(layers.status == 0);
  const CliRun cmp = Cli({"compare", "--config", configs + "/example.yaml", "--schedules", "1f1b",
                          "--vary", "model.layers.decoder.forward=x1,x2", "--format", "json"});
  REQUIRE(cmp.status == 0);
  const json table = json::parse(cmp.out);
  const std::vector<std::string> layer_lines = Lines(layers.out);
  REQUIRE(layer_lines.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(json::parse(layer_lines[i])["iteration_time_ns"] ==
          table["rows"][i]["iteration_time_ns"]);
  }

  // run: compare — the fastest schedule that fits among compare's rows.
  Write(dir / "compare.yaml", "vary:\n  pipeline.microbatches: [8, 16]\nrun: compare\n");
  const CliRun c = Cli(
      {"sweep", "--config", configs + "/example.yaml", "--grid", (dir / "compare.yaml").string()});
  REQUIRE(c.status == 0);
  const std::vector<std::string> compare_lines = Lines(c.out);
  REQUIRE(compare_lines.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const json row = json::parse(compare_lines[i]);
    const CliRun single = Cli({"compare", "--config", configs + "/example.yaml", "--microbatches",
                               i == 0 ? "8" : "16", "--format", "json"});
    REQUIRE(single.status == 0);
    std::int64_t best = -1;
    const json single_table = json::parse(single.out);
    for (const json& rr : single_table["rows"]) {
      if (rr.value("outcome", std::string()) != "ok") continue;
      if (best < 0 || rr["iteration_time_ns"].get<std::int64_t>() < best) {
        best = rr["iteration_time_ns"];
      }
    }
    REQUIRE(best > 0);
    CHECK(row["iteration_time_ns"] == best);
    CHECK(row["fits"] == true);
  }
}

}  // namespace
}  // namespace ppb::test

namespace ppb::test {
namespace {

TEST_CASE("sweep: points in cross-product order, runs innermost, rows round-trip", "[sweep]") {
  Result<Grid> grid = ParseGrid(
      "vary:\n  pipeline.stages: [1, 2]\n  pipeline.microbatches: [4, 8, x3]\n"
      "run: [simulate, search]\n",
      "grid.yaml");
  REQUIRE(grid.ok());
  CHECK(grid->points() == 12);
  Result<SweepPlan> plan = PlanSweep(*grid, std::string(kTinySearchConfig), "run.yaml");
  REQUIRE(plan.ok());
  CHECK(plan->axes[1].ints == std::vector<int>{4, 8, 12});  // x3 of the base's m = 4
  std::vector<std::string> seen;
  for (std::int64_t i = 0; i < 12; ++i) {
    const SweepPoint p = PointAt(*plan, i);
    seen.push_back(p.values[0] + "/" + p.values[1] + "/" + std::to_string(p.run));
  }
  CHECK(seen == std::vector<std::string>{"1/4/0", "1/4/1", "1/8/0", "1/8/1", "1/x3/0", "1/x3/1",
                                         "2/4/0", "2/4/1", "2/8/0", "2/8/1", "2/x3/0", "2/x3/1"});
  const SweepRow row = EvaluatePoint(*plan, PointAt(*plan, 7));
  CHECK(row.run == "search");
  CHECK(row.values == std::vector<std::pair<std::string, std::string>>{
                          {"pipeline.stages", "2"}, {"pipeline.microbatches", "4"}});
  const std::string line = SweepLine(row);
  Result<SweepRow> back = ParseSweepLine(line.substr(0, line.size() - 1));
  REQUIRE(back.ok());
  CHECK(SweepLine(*back) == line);
  CHECK(SweepKey(*back) == SweepKey(row));
  CHECK_FALSE(ParseSweepLine(line.substr(0, line.size() / 2)).ok());
  CHECK(ContentHash("") == "fnv1a64:cbf29ce484222325");   // FNV-1a 64's offset basis
  CHECK(ContentHash("a") == "fnv1a64:af63dc4c8601ec8c");  // the published test vector
}

}  // namespace
}  // namespace ppb::test
