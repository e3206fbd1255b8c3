// Golden ppb-sim runs on the shipped configs, in process (RunCli with string
// streams), and the CLI's handling of bad input.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/app_helpers.h"

namespace ppb {
namespace {

using test::Cli;
using test::CliRun;

std::string Config(const char* name) {
  return std::string(PPB_CONFIGS_DIR) + "/" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("golden: custom 2-rank 1F1B CSV with communication", "[cli][golden]") {
  // 8 identical layers (F 1 ms, B 2 ms), 4 per rank: a stage takes F 4 ms,
  // B 8 ms. Each message: 5 us latency + 16 MiB at 100 GB/s = 167.773 us
  // (rounded up to the ns), d = 172,773 ns in all. By hand (see the 1F1B
  // order in configs/custom-p2.csv) rank 0's last B ends at 60 ms + 4d.
  const CliRun r = Cli({"--config", Config("custom.yaml"), "--format", "json"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "ppb.sim/1");
  CHECK(j["iteration_time_ns"] == 60'000'000 + 4 * 172'773);
  CHECK(j["iteration_time_ms"].get<double>() == Approx(60.691092));
  REQUIRE(j["devices"].size() == 2);
  // Rank 0 holds 2 micro-batches of 4 x 256 MiB on top of 4 GiB of weights.
  CHECK(j["devices"][0]["peak_memory_bytes"] == 6LL << 30);
  CHECK(j["devices"][0]["memory_capacity_bytes"] == 16LL << 30);
  CHECK(j["devices"][1]["peak_memory_bytes"] == 5LL << 30);
  CHECK(j["devices"][0]["busy_ms"].get<double>() == Approx(48.0));
  CHECK(j["devices"][0]["first_start_ms"].get<double>() == 0.0);
  CHECK(j["layers_per_chunk"] == nlohmann::json::parse("[[4,4]]"));
  CHECK(j["outcome"] == "ok");
}

TEST_CASE("golden: the example runs and its schedule round-trips through CSV",
          "[cli][golden]") {
  const CliRun text = Cli({"--config", Config("example.yaml")});
  INFO(text.err);
  REQUIRE(text.status == 0);
  CHECK(text.out.find("iteration time") != std::string::npos);
  CHECK(text.out.find("ok: every rank fits in memory") != std::string::npos);

  const std::string csv = "ppb_test_dump.csv";
  const CliRun a = Cli({"--config", Config("example.yaml"), "--format", "json",
                        "--dump-schedule", csv});
  REQUIRE(a.status == 0);
  const std::string dumped = Slurp(csv);
  CHECK(dumped.rfind("0F0,0F1,0F2,0F3,0B0,", 0) == 0);  // rank 0 warms up p-1
  const CliRun b = Cli({"--config", Config("example.yaml"), "--format", "json",
                        "--schedule-csv", csv});
  INFO(b.err);
  REQUIRE(b.status == 0);
  const auto ja = nlohmann::json::parse(a.out);
  const auto jb = nlohmann::json::parse(b.out);
  CHECK(ja["iteration_time_ns"] == jb["iteration_time_ns"]);
  CHECK(ja["devices"] == jb["devices"]);
  std::remove(csv.c_str());
  // Determinism: the same input gives the same bytes.
  CHECK(Cli({"--config", Config("example.yaml"), "--format", "json"}).out == a.out);
}

TEST_CASE("golden: every shipped config simulates", "[cli][golden]") {
  for (const char* name : {"example.yaml", "interleaved.yaml", "tight-memory.yaml",
                           "heterogeneous.yaml", "custom.yaml"}) {
    const CliRun r = Cli({"--config", Config(name), "--format", "json"});
    INFO(name << ": " << r.err);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["outcome"] == "ok");
    CHECK(j["iteration_time_ms"].get<double>() > 0);
  }
}

TEST_CASE("tight memory: no recompute is out of memory on rank 0", "[cli][golden]") {
  // The even split [9, 8, 8, 9] without recompute: rank 0 holds 26 GiB of
  // static memory and 4 micro-batches x (32 MiB + 8 x 544 MiB) of activations.
  const std::string plain = "ppb_test_plain.yaml";
  {
    std::string y = Slurp(Config("tight-memory.yaml"));
    y = y.substr(0, y.find("strategy:"));
    std::ofstream(plain) << y;
  }
  const CliRun r = Cli({"--config", plain, "--format", "json"});
  std::remove(plain.c_str());
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["outcome"] == "out_of_memory");
  CHECK(j["devices"][0]["oom"] == true);
  CHECK(j["devices"][0]["peak_memory_bytes"] ==
        (26LL << 30) + 4 * ((32LL << 20) + 8 * (544LL << 20)));
  CHECK(j["devices"][2]["oom"] == false);
}

TEST_CASE("trace and critical path", "[cli]") {
  const std::string trace = "ppb_test_trace.json";
  const CliRun r = Cli({"--config", Config("custom.yaml"), "--trace", trace,
                        "--critical-path"});
  REQUIRE(r.status == 0);
  CHECK(r.out.find("critical path") != std::string::npos);
  const auto t = nlohmann::json::parse(Slurp(trace));
  std::remove(trace.c_str());
  int ops = 0, sends = 0, counters = 0, names = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] == 0) ++ops;
    if (e["ph"] == "X" && e["tid"] == 1) ++sends;
    if (e["ph"] == "C") ++counters;
    if (e["ph"] == "M" && e["name"] == "process_name") ++names;
  }
  CHECK(ops == 16);         // 2 ranks x 4 micro-batches x (F + B)
  CHECK(sends == 8);        // 4 activations + 4 gradients
  CHECK(counters == 2 + 2 * 16);  // one initial sample per rank, two per op
  CHECK(names == 2);
}

TEST_CASE("bad command lines exit with status 2 and say why", "[cli][errors]") {
  CliRun r = Cli({"--config", Config("example.yaml"), "--stages", "abc"});
  CHECK(r.status == 2);
  CHECK(r.err == "ppb-sim: --stages: expected a positive integer; got 'abc'\n");
  r = Cli({"--config", Config("example.yaml"), "--format", "xml"});
  CHECK(r.status == 2);
  CHECK(r.err == "ppb-sim: --format: expected text or json; got 'xml'\n");
  r = Cli({"frobnicate"});
  CHECK(r.status == 2);
  CHECK(r.err.rfind("ppb-sim: unknown command 'frobnicate'", 0) == 0);
  r = Cli({});
  CHECK(r.status == 2);
  CHECK(r.err.rfind("ppb-sim: --config: required", 0) == 0);
  r = Cli({"--config", "does-not-exist.yaml"});
  CHECK(r.status == 2);
  CHECK(r.err.find("does-not-exist.yaml") != std::string::npos);
  CHECK(r.out.empty());
}

}  // namespace ppb

namespace ppb {

TEST_CASE("docs/config.md shows the config format file verbatim", "[cli][docs]") {
  const std::string format = Slurp(std::string(PPB_CONFIGS_DIR) + "/README-format.yaml");
  const std::string doc = Slurp(std::string(PPB_CONFIGS_DIR) + "/../docs/config.md");
  REQUIRE_FALSE(format.empty());
  CHECK(doc.find("```yaml\n" + format) != std::string::npos);
}

TEST_CASE("the README's worked example is what simulate prints", "[cli][docs]") {
  // The snapshot holds ppb-sim's stdout on configs/example.yaml between its
  // "### stdout" and "### stderr" lines; the README shows it in its first
  // text block.
  const std::string snap = Slurp(std::string(PPB_TEST_DATA_DIR) + "/snapshots/simulate-example.txt");
  const std::string readme = Slurp(std::string(PPB_CONFIGS_DIR) + "/../README.md");
  const size_t a = snap.find("### stdout\n");
  const size_t b = snap.find("### stderr\n");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  const std::string out = snap.substr(a + 11, b - a - 11);
  REQUIRE(out.find("iteration time    1384.237 ms") != std::string::npos);
  CHECK(readme.find("```text\n" + out + "```") != std::string::npos);
}

}  // namespace ppb
