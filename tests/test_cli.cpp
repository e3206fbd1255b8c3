// Golden ppb-sim runs on the shipped configs, in process (RunCli with string
// streams), and the CLI's handling of bad input, of outputs that cannot be
// written and of names that are not UTF-8.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "tests/app_helpers.h"

namespace ppb {
namespace {

using test::Cli;
using test::CliRun;
using test::Slurp;

std::string Config(const char* name) {
  return std::string(PPB_CONFIGS_DIR) + "/" + name;
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
  // A custom schedule's communication defaults to overlapped, 1f1b's to
  // blocking (Megatron's rule): both runs name it, so that only the order
  // differs in where it comes from.
  const std::string blocking = "ppb_test_blocking.yaml";
  {
    std::ofstream f(blocking);
    f << Slurp(Config("example.yaml")) << "  communication: blocking\n";
  }
  const CliRun a = Cli({"--config", blocking, "--format", "json",
                        "--dump-schedule", csv});
  REQUIRE(a.status == 0);
  const std::string dumped = Slurp(csv);
  CHECK(dumped.rfind("0F0,0F1,0F2,0F3,0B0,", 0) == 0);  // rank 0 warms up p-1
  const CliRun b = Cli({"--config", blocking, "--format", "json",
                        "--schedule-csv", csv});
  INFO(b.err);
  REQUIRE(b.status == 0);
  const auto ja = nlohmann::json::parse(a.out);
  const auto jb = nlohmann::json::parse(b.out);
  CHECK(ja["iteration_time_ns"] == jb["iteration_time_ns"]);
  CHECK(ja["devices"] == jb["devices"]);
  std::remove(csv.c_str());
  // Determinism: the same input gives the same bytes.
  CHECK(Cli({"--config", blocking, "--format", "json"}).out ==
        Cli({"--config", blocking, "--format", "json"}).out);
  std::remove(blocking.c_str());
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

// ---- write failures and names that are not UTF-8 ---------------------------

namespace {

// Writes `text` to `path` (in the working directory) and returns the path.
std::string WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace

TEST_CASE("write failures exit 1 with the path and the system's reason",
          "[cli][errors]") {
  if (!std::ifstream("/dev/full")) return;  // Linux only
  const std::string full = "/dev/full";
  const std::string enospc =
      "ppb-sim: cannot write /dev/full: No space left on device\n";
  const std::string example = Config("example.yaml");
  const std::vector<std::vector<std::string>> runs = {
      {"--config", example, "--dump-schedule", full},
      {"--config", example, "--emit", "megatron", "--emit-file", full},
      {"--config", example, "--trace", full},
      {"--config", example, "--svg", full},
      {"--config", example, "--report", full},
  };
  for (const auto& args : runs) {
    INFO(args[2]);
    const CliRun r = Cli(args);
    CHECK(r.status == 1);
    CHECK(r.err == enospc);
  }
  const CliRun cal =
      Cli({"calibrate", "--measurements",
           std::string(PPB_TEST_DATA_DIR) + "/sapp/hp_init_demo.yaml",
           "--memory-unit", "1MiB", "--time-unit", "1ms", "--no-constant",
           "--output", full});
  CHECK(cal.status == 1);
  CHECK(cal.err == enospc);
}

TEST_CASE("an output's missing folder is made and said", "[cli]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "ppb_test_mkdir";
  fs::remove_all(dir);
  const std::string html = (dir / "out" / "report.html").string();
  const CliRun r = Cli({"--config", Config("example.yaml"), "--report", html});
  CHECK(r.status == 0);
  CHECK(fs::exists(html));
  CHECK(r.err == "ppb-sim: created the folder " + (dir / "out").string() + " for " + html + "\n");
  // A file where the folder should be: exit 1, the path and why.
  fs::create_directories(dir);
  std::ofstream(dir / "file") << "x";
  const std::string blocked = (dir / "file" / "report.html").string();
  const CliRun b = Cli({"--config", Config("example.yaml"), "--report", blocked});
  CHECK(b.status == 1);
  CHECK(b.err.rfind("ppb-sim: cannot write " + blocked + ": cannot create the folder " +
                        (dir / "file").string() + ": ",
                    0) == 0);
  fs::remove_all(dir);
}

namespace {

// A stream buffer that refuses every byte, as standard output on a full
// device does.
class RefusingBuf : public std::streambuf {
 protected:
  int overflow(int) override { return traits_type::eof(); }
  std::streamsize xsputn(const char*, std::streamsize) override { return 0; }
};

}  // namespace

TEST_CASE("standard output that cannot be written is exit 1", "[cli][errors]") {
  const std::string config = Config("example.yaml");
  const char* argv[] = {"ppb-sim", "--config", config.c_str()};
  RefusingBuf buf;
  std::ostream out(&buf);
  std::ostringstream err;
  CHECK(RunCli(3, argv, out, err) == 1);
  CHECK(err.str().rfind("ppb-sim: cannot write standard output: ", 0) == 0);
}

TEST_CASE("names that are not UTF-8 reach every JSON report as U+FFFD",
          "[cli]") {
  const std::string bad = "bad\xff\xfe-name";
  const std::string replaced = "bad\xef\xbf\xbd\xef\xbf\xbd-name";
  std::string tiny(test::kTinySearchConfig);
  tiny.replace(tiny.find("tiny-4l"), 7, bad);
  const std::string config = WriteText("ppb_test_utf8.yaml", tiny);
  const std::string cands = WriteText(
      "ppb_test_utf8_cands.yaml",
      "candidates:\n  - {name: " + bad + ", layers_per_chunk: [[2, 2]]}\n");
  std::vector<std::vector<std::string>> runs = {
      {"simulate", "--config", config},
      {"search", "--config", config, "--threads", "1", "--time-limit", "20"},
      {"compare", "--config", config},
      {"rank", "--config", config, "--candidates", cands},
  };
  // model needs layers derived from a config.json.
  std::string hf = Slurp(Config("llama3-8b.yaml"));
  hf.replace(hf.find("name: llama3-8b") + 6, 9, bad);
  hf.replace(hf.find("hf_config: hf/") + 11, 3,
             std::string(PPB_CONFIGS_DIR) + "/hf/");
  const std::string hf_config = WriteText("ppb_test_utf8_hf.yaml", hf);
  runs.push_back({"model", "--config", hf_config});
  runs.push_back({"simulate", "--config", hf_config, "--emit", "megatron"});
  for (std::vector<std::string> args : runs) {
    INFO(args[0]);
    args.insert(args.end(), {"--format", "json"});
    const CliRun r = Cli(args);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK_NOTHROW(nlohmann::json::parse(r.out));
    CHECK(r.out.find(replaced) != std::string::npos);
  }
  // Exact memory of 1 GiB static and 1 GiB activation per layer (1F1B).
  const std::string runs_yaml = WriteText("ppb_test_utf8_runs.yaml", R"(runs:
  - name: )" + bad + R"(
    stages: 4
    microbatches: 8
    layers: [5, 6, 6, 5]
    memory: [25GiB, 24GiB, 18GiB, 10GiB]
  - name: b
    stages: 4
    microbatches: 8
    layers: [6, 5, 5, 6]
    memory: [30GiB, 20GiB, 15GiB, 12GiB]
)");
  const CliRun cal =
      Cli({"calibrate", "--measurements", runs_yaml, "--format", "json"});
  INFO(cal.err);
  CHECK(cal.status == 0);
  CHECK_NOTHROW(nlohmann::json::parse(cal.out));
  CHECK(cal.out.find(replaced) != std::string::npos);
  for (const std::string& f : {config, cands, hf_config, runs_yaml}) {
    std::remove(f.c_str());
  }
}

}  // namespace ppb

namespace ppb {

TEST_CASE("docs/config.md shows the config format file verbatim", "[cli][docs]") {
  const std::string format = Slurp(std::string(PPB_CONFIGS_DIR) + "/README-format.yaml");
  const std::string doc = Slurp(std::string(PPB_CONFIGS_DIR) + "/../docs/config.md");
  REQUIRE_FALSE(format.empty());
  CHECK(doc.find("```yaml\n" + format) != std::string::npos);
}

// A snapshot's stdout: between its "### stdout" and "### stderr" lines.
static std::string SnapshotStdout(const std::string& name) {
  const std::string snap = Slurp(std::string(PPB_TEST_DATA_DIR) + "/snapshots/" + name);
  const size_t a = snap.find("### stdout\n");
  const size_t b = snap.find("### stderr\n");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  return snap.substr(a + 11, b - a - 11);
}

TEST_CASE("the README's worked example is what simulate prints", "[cli][docs]") {
  // ppb-sim's stdout on configs/example.yaml, shown in a README text block.
  const std::string readme = Slurp(std::string(PPB_CONFIGS_DIR) + "/../README.md");
  const std::string out = SnapshotStdout("simulate-example.txt");
  REQUIRE(out.find("iteration time    1394.453 ms") != std::string::npos);
  CHECK(readme.find("```text\n" + out + "```") != std::string::npos);
}

TEST_CASE("the README's first run is what scripts/ppb.sh run prints", "[cli][docs]") {
  // scripts/ppb.sh run simulates configs/llama3-8b.yaml; the README shows its
  // stdout (the snapshot simulate-llama3-8b.txt) in full, first.
  const std::string readme = Slurp(std::string(PPB_CONFIGS_DIR) + "/../README.md");
  const std::string script = Slurp(std::string(PPB_CONFIGS_DIR) + "/../scripts/ppb.sh");
  CHECK(script.find("apps/ppb-sim --config configs/llama3-8b.yaml") != std::string::npos);
  const std::string out = SnapshotStdout("simulate-llama3-8b.txt");
  REQUIRE(out.find("tokens            406436 tokens/s") != std::string::npos);
  const size_t at = readme.find("```text\n" + out + "```");
  CHECK(at != std::string::npos);
  CHECK(at < readme.find("```text\n" + SnapshotStdout("simulate-example.txt")));
}

TEST_CASE("a search with a time limit searches the frameworks first and answers the same",
          "[cli][search]") {
  // Under a time limit (target any, one process) each framework's deployable
  // search comes before the recommendation's, which then gets all the time
  // left. On a problem every search proves, the answers are those of the
  // search without a limit (which searches the frameworks after, and only
  // where the recommendation is not deployable): here three of the four.
  const std::string config = std::string(PPB_CONFIGS_DIR) + "/tight-memory.yaml";
  auto run = [&](const char* limit) {
    const test::CliRun r = Cli({"search", "--config", config, "--time-limit", limit,
                                "--threads", "1", "--format", "json"});
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out);
  };
  nlohmann::json none = run("0"), timed = run("60");
  REQUIRE(timed.contains("frameworks_search_s"));
  CHECK(timed["frameworks_search_s"].get<double>() > 0);
  CHECK_FALSE(none.contains("frameworks_search_s"));
  int searched_apart = 0;
  for (const auto& [name, d] : none["deployable"].items()) {
    INFO(name);
    searched_apart += d["is_recommendation"].get<bool>() ? 0 : 1;
    CHECK(d["proved"].get<bool>());
  }
  CHECK(searched_apart == 3);
  // Everything but the clock's figures is the same.
  for (nlohmann::json* j : {&none, &timed}) {
    j->erase("frameworks_search_s");
    j->erase("solve_time_s");
    j->erase("time_limit_s");
    j->erase("anytime");
    j->erase("bound_time_s");
  }
  CHECK(none.dump(1) == timed.dump(1));
}

}  // namespace ppb
