// ppb-sim compare: every row agrees with a separate ppb-sim run of the same
// (edited) config, closed forms, --vary addressing and its errors, rejected
// combinations as rows, and the JSON / CSV formats.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "apps/commands/compare_run.h"
#include "apps/input/vary.h"
#include "apps/output/compare_output.h"
#include "tests/app_helpers.h"

namespace ppb {
namespace {

using nlohmann::json;
using test::Cli;
using test::CliRun;

std::string Config(const char* name) { return std::string(PPB_CONFIGS_DIR) + "/" + name; }

// Writes `text` to a file of this process's temporary directory (ctest runs
// test cases in parallel processes); returns its path.
std::string WriteTemp(const std::string& name, std::string_view text) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ppb_test_compare_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// 16 identical decoder layers (F 1 ms, B 2 ms), no communication cost,
// p = 4, m = 8: GPipe and 1F1B take (m + p - 1)(tf + tb) with tf + tb =
// 12 ms per rank, interleaved m(tf + tb) + (p - 1)(tf + tb) / v.
constexpr std::string_view kUniform = R"(model:
  name: uniform
  layers:
    - name: decoder
      repeat: 16
      forward: 1ms
      backward: 2ms
      static_memory: 1GiB
      activation: 100MiB
      output: 10MiB
cluster:
  devices: {memory: 80GiB}
pipeline:
  stages: 4
  microbatches: 8
)";

// Uniform layers with a slow link and a lopsided split for v = 1.
constexpr std::string_view kLinked = R"(model:
  name: linked
  layers:
    - {name: embedding, kind: embedding, forward: 0.5ms, backward: 1ms,
       static_memory: 1GiB, activation: 64MiB, output: 64MiB}
    - name: decoder
      repeat: 14
      forward: 1ms
      backward: 2ms
      static_memory: 2GiB
      activation: 1GiB
      output: 64MiB
      recompute:
        full: {activation: 64MiB, time: 1ms}
    - {name: head, kind: head, forward: 1ms, backward: 2ms, static_memory: 1GiB,
       activation: 128MiB, workspace: 512MiB, output: 0B}
cluster:
  devices: {memory: 40GiB}
  link: {latency: 5us, bandwidth: 10GB/s}
pipeline:
  stages: 4
  microbatches: 8
strategy:
  layers_per_chunk: [[5, 3, 3, 5]]
  recompute: {layers: {decoder.0: full}}
)";

// The three schedules these tests were written for (the default set has
// every registered one; see "compare's default set" below).
constexpr const char* kThree = "gpipe,1f1b,interleaved";

json CompareJson(std::vector<std::string> args) {
  args.insert(args.begin(), "compare");
  args.push_back("--format");
  args.push_back("json");
  const CliRun r = Cli(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return json::parse(r.out);
}

// `ppb-sim --config path --schedule S --virtual-stages V --microbatches M`.
CliRun Simulate(const std::string& path, const json& row) {
  return Cli({"--config", path, "--schedule", row["schedule"], "--virtual-stages",
              std::to_string(row["virtual_stages"].get<int>()), "--microbatches",
              std::to_string(row["microbatches"].get<int>()), "--stages",
              std::to_string(row["stages"].get<int>()), "--format", "json"});
}

// Checks that `row` equals the simulation of `path` (the config as the row's
// variant edits it), or that the separate run refuses what the row refused.
void CheckAgainstSimulate(const std::string& path, const json& row) {
  INFO(row.dump());
  const CliRun r = Simulate(path, row);
  if (row["split_fallback"] || row["recompute_fallback"]) {
    // The config's strategy does not apply: a separate run refuses it.
    CHECK(r.status == 2);
    CHECK(r.err.find("strategy.") != std::string::npos);
    return;
  }
  if (row["status"] == "rejected") {
    CHECK(r.status == 2);
    const std::string reason = row["reason"];
    // The separate run names the same key and reason (its prefix names the
    // file and line, or the flag).
    const std::string tail = reason.substr(reason.find(": ") + 2);
    CHECK(r.err.find(tail) != std::string::npos);
    return;
  }
  INFO(r.err);
  REQUIRE(r.status == 0);
  const json sim = json::parse(r.out);
  CHECK(row["iteration_time_ns"] == sim["iteration_time_ns"]);
  CHECK(row["max_peak_memory_bytes"] == sim["max_peak_memory_bytes"]);
  CHECK(row["outcome"] == sim["outcome"]);
  CHECK(row["bubble_fraction"] == sim["bubble_fraction"]);
  std::vector<int> oom;
  for (size_t d = 0; d < sim["devices"].size(); ++d) {
    if (sim["devices"][d]["oom"]) oom.push_back(static_cast<int>(d));
  }
  CHECK(row["oom_ranks"].get<std::vector<int>>() == oom);
  CHECK(row["oom"] == !oom.empty());
}

// `text` with the first occurrence of `from` replaced by `to`.
std::string Edit(std::string text, std::string_view from, std::string_view to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// Splits RFC 4180 CSV (CRLF line ends, quoted fields) into rows of fields.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
      ++i;
    } else {
      field += c;
    }
  }
  REQUIRE(rows.back().empty());
  REQUIRE(field.empty());
  rows.pop_back();
  return rows;
}

std::string CompareError(std::vector<std::string> args) {
  args.insert(args.begin(), "compare");
  const CliRun r = Cli(args);
  INFO(r.out);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  return r.err;
}

}  // namespace

TEST_CASE("compare agrees with separate ppb-sim runs", "[compare][cli]") {
  SECTION("the shipped example: every registered schedule (interleaved v = 2)") {
    const std::string path = Config("example.yaml");
    const json j = CompareJson({"--config", path});
    CHECK(j["schema"] == "ppb.compare/1");
    REQUIRE(j["rows"].size() == 10);
    CHECK(j["rows"][7]["schedule"] == "zb-1p");
    CHECK(j["rows"][8]["schedule"] == "zb-2p");
    CHECK(j["rows"][9]["schedule"] == "zb-v");
    CHECK(j["rows"][2]["virtual_stages"] == 2);
    CHECK(j["notes"][0].get<std::string>().find("v = 2") != std::string::npos);
    for (const json& row : j["rows"]) {
      CHECK(row["status"] == "ok");
      CheckAgainstSimulate(path, row);
    }
    // GPipe stashes every micro-batch: out of memory on every rank.
    CHECK(j["rows"][0]["oom_ranks"] == json::parse("[0, 1, 2, 3]"));
    CHECK(j["rows"][1]["oom"] == false);
  }
  SECTION("interleaved config: its layout applies to v = 2 only") {
    const std::string path = Config("interleaved.yaml");
    const json j = CompareJson({"--config", path, "--schedules", kThree, "--vary",
                                "pipeline.microbatches=6,8", "--vary", "pipeline.virtual_stages=2,4"});
    REQUIRE(j["rows"].size() == 12);
    for (const json& row : j["rows"]) CheckAgainstSimulate(path, row);
    // m = 6 is not a multiple of p = 4: refused by Megatron's rules.
    CHECK(j["rows"][2]["status"] == "rejected");
    CHECK(j["rows"][2]["reason"].get<std::string>().rfind(
              "pipeline.microbatches: must be a multiple of stages (4)", 0) == 0);
    // m = 8, v = 2: the config's own layout; v = 4: the even split.
    CHECK(j["rows"][8]["split"] == "config");
    CHECK(j["rows"][11]["split"] == "even");
    CHECK(j["rows"][11]["split_fallback"] == true);
    CHECK(j["rows"][11]["fallback_reason"].get<std::string>().rfind("strategy.layout:", 0) == 0);
  }
  SECTION("a config split for v = 1; recompute kept with the even split") {
    const std::string path = WriteTemp("linked.yaml", kLinked);
    const json j = CompareJson({"--config", path, "--schedules", kThree, "--virtual-stages", "2"});
    REQUIRE(j["rows"].size() == 3);
    for (const json& row : j["rows"]) CheckAgainstSimulate(path, row);
    CHECK(j["rows"][1]["split"] == "config");
    CHECK(j["rows"][1]["layers_per_stage"] == json::parse("[5, 3, 3, 5]"));
    CHECK(j["rows"][1]["recomputed_layers"] == 1);
    CHECK(j["rows"][2]["split"] == "even");
    CHECK(j["rows"][2]["split_fallback"] == true);
    CHECK(j["rows"][2]["recompute_fallback"] == false);
    CHECK(j["rows"][2]["config_recompute"] == true);
    CHECK(j["rows"][2]["recomputed_layers"] == 1);
    CHECK(
        j["notes"] ==
        json::parse(
            R"j(["gpipe and 1f1b run with v = 1 (pipeline.virtual_stages applies to interleaved only)"])j"));
  }
}

TEST_CASE("compare: closed forms with uniform layers and free links", "[compare]") {
  const std::string path = WriteTemp("uniform.yaml", kUniform);
  const json j = CompareJson(
      {"--config", path, "--schedules", kThree, "--vary", "pipeline.virtual_stages=2,4,8"});
  REQUIRE(j["rows"].size() == 9);
  constexpr long long kMs = 1'000'000;
  for (int k = 0; k < 3; ++k) {
    const json* rows = &j["rows"][3 * k];
    CHECK(rows[0]["schedule"] == "gpipe");
    CHECK(rows[0]["iteration_time_ns"] == (8 + 4 - 1) * 12 * kMs);
    CHECK(rows[1]["iteration_time_ns"] == (8 + 4 - 1) * 12 * kMs);
  }
  CHECK(j["rows"][2]["iteration_time_ns"] == 8 * 12 * kMs + 3 * 12 * kMs / 2);
  CHECK(j["rows"][5]["iteration_time_ns"] == 8 * 12 * kMs + 3 * 12 * kMs / 4);
  // v = 8 needs 32 chunks for 16 layers: a row with the reason.
  CHECK(j["rows"][8]["status"] == "rejected");
  CHECK(j["rows"][8]["reason"].get<std::string>().find("model.layers") == 0);
  CHECK(j["rows"][2]["speedup_vs_first_schedule"].get<double>() == Approx(132.0 / 114.0));
  CHECK(j["rows"][5]["speedup_vs_first_variant"].get<double>() == Approx(114.0 / 105.0));
  // An explicit v = 1 for interleaved is refused by its rule, as a row.
  const json v1 =
      CompareJson({"--config", path, "--schedules", "interleaved", "--virtual-stages", "1"});
  REQUIRE(v1["rows"].size() == 1);
  CHECK(v1["rows"][0]["reason"].get<std::string>().rfind("pipeline.virtual_stages: must be >= 2",
                                                         0) == 0);
}

TEST_CASE("compare: varying link bandwidth equals runs of edited configs", "[compare]") {
  const std::string path = WriteTemp("linked-bw.yaml", kLinked);
  const json j =
      CompareJson({"--config", path, "--schedules", "1f1b,interleaved", "--virtual-stages", "2",
                   "--vary", "cluster.link.bandwidth=1GB/s,x0.5,5GB/s,10GB/s,x4"});
  REQUIRE(j["rows"].size() == 10);
  const std::vector<std::string> written = {"1GB/s", "5GB/s", "5GB/s", "10GB/s", "40GB/s"};
  for (size_t k = 0; k < written.size(); ++k) {
    const std::string edited =
        WriteTemp("linked-bw-" + std::to_string(k) + ".yaml",
                  Edit(std::string(kLinked), "bandwidth: 10GB/s", "bandwidth: " + written[k]));
    for (int s = 0; s < 2; ++s) {
      CheckAgainstSimulate(edited, j["rows"][2 * k + s]);
    }
  }
  // x0.5 of 10GB/s is 5GB/s exactly.
  CHECK(j["rows"][2]["iteration_time_ns"] == j["rows"][4]["iteration_time_ns"]);
  // Slower links never help, and here they hurt.
  for (int s = 0; s < 2; ++s) {
    for (size_t k = 1; k < written.size(); ++k) {
      CHECK(j["rows"][2 * (k - 1) + s]["iteration_time_ns"].get<long long>() >=
            j["rows"][2 * k + s]["iteration_time_ns"].get<long long>());
    }
    CHECK(j["rows"][s]["iteration_time_ns"].get<long long>() >
          j["rows"][8 + s]["iteration_time_ns"].get<long long>());
  }
}

TEST_CASE("compare: layers addressed by group, name and index", "[compare]") {
  const std::string path = WriteTemp("uniform-layers.yaml", kUniform);
  // The whole group: every decoder twice as slow forward.
  {
    const json j = CompareJson(
        {"--config", path, "--schedules", "1f1b", "--vary", "model.layers.decoder.forward=x2"});
    const std::string edited =
        WriteTemp("uniform-f2.yaml", Edit(std::string(kUniform), "forward: 1ms", "forward: 2ms"));
    CheckAgainstSimulate(edited, j["rows"][0]);
    CHECK(j["rows"][0]["iteration_time_ns"] == (8 + 4 - 1) * 16'000'000LL);
  }
  // One layer of the group, by name and by index: the same edited config
  // with the group written out layer by layer.
  std::string layers;
  for (int k = 0; k < 16; ++k) {
    layers += "    - {name: decoder." + std::to_string(k) +
              ", forward: " + (k == 3 ? "5ms" : "1ms") +
              ", backward: 2ms, static_memory: 1GiB, activation: 100MiB, "
              "output: 10MiB}\n";
  }
  const std::string head = "model:\n  name: uniform\n  layers:\n";
  const std::string tail(kUniform.substr(kUniform.find("cluster:")));
  const std::string edited = WriteTemp("uniform-one.yaml", head + layers + tail);
  for (const char* key : {"model.layers.decoder.3.forward=5ms", "model.layers.3.forward=5ms",
                          "model.layers.decoder.3.forward=x5"}) {
    INFO(key);
    const json j = CompareJson({"--config", path, "--schedules", "gpipe,1f1b", "--vary", key});
    REQUIRE(j["rows"].size() == 2);
    for (const json& row : j["rows"]) CheckAgainstSimulate(edited, row);
  }
}

TEST_CASE("compare: several --vary axes give the cross product in order", "[compare]") {
  const std::string path = WriteTemp("uniform-cross.yaml", kUniform);
  const CompareRequest request{
      {"1f1b"},
      {*ParseVary("pipeline.microbatches=4,8"), *ParseVary("cluster.devices.memory=1GiB,80GiB")},
      {}};
  const Result<CompareTable> t = Compare(kUniform, path, request);
  REQUIRE(t.ok());
  REQUIRE(t->rows.size() == 4);
  const std::vector<std::vector<std::string>> expected = {
      {"4", "1GiB"}, {"4", "80GiB"}, {"8", "1GiB"}, {"8", "80GiB"}};
  CHECK(t->variants == expected);
  CHECK(t->rows[0].m == 4);
  CHECK(t->rows[2].m == 8);
  CHECK(t->rows[0].oom_ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(t->rows[1].oom_ranks.empty());
  CHECK(t->rows[0].iteration_time == t->rows[1].iteration_time);
  CHECK(t->rows[0].iteration_time == (4 + 4 - 1) * 12'000'000LL);
}

TEST_CASE("compare: bad --vary and --schedules input exits 2", "[compare]") {
  const std::string path = WriteTemp("linked-bad.yaml", kLinked);
  auto vary = [&](const std::string& arg) {
    return CompareError({"--config", path, "--vary", arg});
  };
  std::string e = vary("cluster.link.bandwith=1GB/s");
  CHECK(e.rfind("ppb-sim: --vary: cluster.link.bandwith: unknown key; "
                "expected one of pipeline.stages, ",
                0) == 0);
  CHECK(e.find("cluster.link.bandwidth") != std::string::npos);
  CHECK(e.find("model.layers.LAYER.FIELD") != std::string::npos);
  CHECK(vary("cluster.link.bandwidth=fast") ==
        "ppb-sim: --vary: cluster.link.bandwidth: expected a bandwidth like "
        "50GB/s or a factor like x2; got 'fast'\n");
  CHECK(vary("cluster.link.bandwidth=25GB/s,10ms")
            .find("expected a bandwidth like 50GB/s or a factor like x2; got '10ms'") !=
        std::string::npos);
  CHECK(vary("cluster.link.bandwidth=") ==
        "ppb-sim: --vary: cluster.link.bandwidth: expected a comma-separated "
        "list of values; got nothing\n");
  CHECK(vary("cluster.link.bandwidth=1GB/s,,2GB/s").find("an empty value") != std::string::npos);
  CHECK(vary("bandwidth").rfind("ppb-sim: --vary: expected KEY=V1,V2,...", 0) == 0);
  CHECK(vary("pipeline.schedule=gpipe")
            .rfind("ppb-sim: --vary: pipeline.schedule: expected a numeric key", 0) == 0);
  CHECK(vary("model.name=x").find("expected a numeric key") != std::string::npos);
  CHECK(vary("strategy.layers_per_chunk=1").find("expected a key outside strategy and search") !=
        std::string::npos);
  CHECK(vary("pipeline.microbatches=0").find("expected a positive integer") != std::string::npos);
  CHECK(vary("pipeline.microbatches=x0.3") ==
        "ppb-sim: --vary: pipeline.microbatches: expected a factor that gives "
        "an integer; got x0.3 of 8 = 2.4\n");
  CHECK(
      vary("cluster.link.bandwidth=x-1").find("expected a positive factor like x0.5; got 'x-1'") !=
      std::string::npos);
  CHECK(vary("model.layers.decoder.99.forward=1ms") ==
        "ppb-sim: --vary: model.layers.decoder.99.forward: expected a layer "
        "of decoder in decoder.0 .. decoder.13; got decoder.99\n");
  CHECK(vary("model.layers.decoder.workspace=1MiB").find("unknown key") != std::string::npos);
  // The list itself (found by tests/fuzz; it threw std::out_of_range).
  CHECK(vary("model.layers=2,4") ==
        "ppb-sim: --vary: model.layers: expected a numeric key (a number, "
        "duration, size or bandwidth); got a list\n");
  // A value of the right form that the loader refuses: its message, placed.
  CHECK(vary("cluster.link.bandwidth=0GB/s") ==
        "ppb-sim: --vary cluster.link.bandwidth=0GB/s: " + path +
            ":19: cluster.link.bandwidth: must be a positive bandwidth; got "
            "0GB/s\n");
  CHECK(vary("model.layers.decoder.activation=1MiB")
            .find("model.layers[1].recompute.full.activation: must be at most the "
                  "layer's activation (1MiB); got 64MiB") != std::string::npos);
  // Both a flag and a --vary of the same key; a key twice.
  CHECK(CompareError({"--config", path, "--microbatches", "4", "--vary", "pipeline.microbatches=8"})
            .find("expected it varied or set, not both") != std::string::npos);
  CHECK(
      CompareError({"--config", path, "--vary", "pipeline.stages=2", "--vary", "pipeline.stages=4"})
          .find("expected each key once") != std::string::npos);
  CHECK(CompareError({"--config", path, "--schedules", "custom"}) ==
        "ppb-sim: --schedules: expected a comma-separated list of gpipe, 1f1b, "
        "interleaved, looped-bfs, interleaved-zero-bubble, zbv-zero-bubble, "
        "dualpipev, zb-1p, zb-2p, zb-v; got 'custom'\n");
  CHECK(CompareError({"--config", path, "--schedules", "1f1b,"}).find("--schedules") !=
        std::string::npos);
  CHECK(CompareError({"--config", path, "--format", "xml"}) ==
        "ppb-sim: --format: expected text, json or csv; got 'xml'\n");
  CHECK(CompareError({"--config", path + ".missing"})
            .find(".missing: must be a readable config file; got ") != std::string::npos);
}

TEST_CASE("compare: text, json and csv formats", "[compare]") {
  const std::string path = WriteTemp("linked-fmt.yaml", kLinked);
  const std::vector<std::string> args = {"compare",
                                         "--config",
                                         path,
                                         "--schedules",
                                         kThree,
                                         "--vary",
                                         "pipeline.microbatches=6,8",
                                         "--vary",
                                         "cluster.link.latency=5us,x10"};
  auto run = [&](const char* format) {
    std::vector<std::string> a = args;
    a.push_back("--format");
    a.push_back(format);
    const CliRun r = Cli(a);
    INFO(r.err);
    REQUIRE(r.status == 0);
    // Same input, same bytes.
    CHECK(Cli(a).out == r.out);
    return r.out;
  };

  const json j = json::parse(run("json"));
  REQUIRE(j["rows"].size() == 12);
  CHECK(j["vary"][1]["values"] == json::parse(R"(["5us", "x10"])"));
  CHECK(j["rows"][0]["variant"] ==
        json::parse(R"({"pipeline.microbatches": "6", "cluster.link.latency": "5us"})"));
  // Interleaved with m = 6 (p = 4) is refused; the rows say why.
  CHECK(j["rows"][2]["status"] == "rejected");
  CHECK(j["rows"][2].count("iteration_time_ns") == 0);

  const auto csv = ParseCsv(run("csv"));
  REQUIRE(csv.size() == 1 + 12);
  CHECK(csv[0][0] == "pipeline.microbatches");
  CHECK(csv[0][1] == "cluster.link.latency");
  CHECK(csv[0][2] == "schedule");
  for (const auto& row : csv) CHECK(row.size() == csv[0].size());
  const auto col = [&](std::string_view name) {
    return std::find(csv[0].begin(), csv[0].end(), name) - csv[0].begin();
  };
  for (size_t i = 0; i < 12; ++i) {
    const json& r = j["rows"][i];
    const auto& c = csv[i + 1];
    CHECK(c[col("schedule")] == r["schedule"]);
    CHECK(c[col("status")] == r["status"]);
    if (r["status"] == "ok") {
      CHECK(c[col("iteration_time_ns")] == std::to_string(r["iteration_time_ns"].get<long long>()));
      CHECK(c[col("max_peak_memory_bytes")] ==
            std::to_string(r["max_peak_memory_bytes"].get<long long>()));
      CHECK(c[col("fallback_reason")] == r.value("fallback_reason", ""));
    } else {
      CHECK(c[col("reason")] == r["reason"]);
    }
  }
  // The fallback reason holds commas and quotes: quoted, round-tripped.
  CHECK(csv[3][col("fallback_reason")].find(',') != std::string::npos);

  const std::string text = run("text");
  CHECK(text.rfind("ppb-sim compare: linked | 3 schedules x 4 variants\n", 0) == 0);
  CHECK(text.find("rejected [") != std::string::npos);
  CHECK(text.find("interleaved runs with v = 2") != std::string::npos);
  CHECK(text.find("): pipeline.microbatches: must be a multiple") != std::string::npos);
  CHECK(text.find("even split (the config's recompute kept)") != std::string::npos);
}

TEST_CASE("compare's default set: every registered schedule, refusals as rows",
          "[compare]") {
  const std::string path = WriteTemp("uniform-zb.yaml", kUniform);
  const json j = CompareJson({"--config", path});
  std::vector<std::string> names;
  for (const json& row : j["rows"]) names.push_back(row["schedule"]);
  CHECK(names == std::vector<std::string>{"gpipe", "1f1b", "interleaved", "looped-bfs",
                                          "interleaved-zero-bubble", "zbv-zero-bubble",
                                          "dualpipev", "zb-1p", "zb-2p", "zb-v"});
  for (const json& row : j["rows"]) {
    INFO(row.dump());
    if (row["status"] == "ok") CheckAgainstSimulate(path, row);
  }
  // v = 2 for the V schedules; m = 8 = 2p: dualpipev runs.
  CHECK(j["rows"][5]["virtual_stages"] == 2);
  CHECK(j["rows"][6]["virtual_stages"] == 2);
  CHECK(j["rows"][6]["status"] == "ok");
  // m = 6 < 2p: dualpipev is refused with torch's rule, as a row.
  const json six = CompareJson({"--config", path, "--microbatches", "6"});
  CHECK(six["rows"][6]["status"] == "rejected");
  CHECK(six["rows"][6]["reason"].get<std::string>().find(
            "DualPipeV requires at least as many microbatches as stages") != std::string::npos);
  // torch's names are accepted.
  const json torch =
      CompareJson({"--config", path, "--schedules", "ScheduleZBVZeroBubble,LoopedBFS"});
  REQUIRE(torch["rows"].size() == 2);
  CHECK(torch["rows"][0]["schedule"] == "zbv-zero-bubble");
  CHECK(torch["rows"][1]["schedule"] == "looped-bfs");
}

}  // namespace ppb
