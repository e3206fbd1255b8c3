// Ranking with its uncertainty (issue 45, apps/input/uncertainty.h): the
// seeded draws, the summary's bands, shares, robust choice and flips on
// hand-made samples, the drawn machine written into a config, and the
// flags' refusals on compare and rank.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/input/uncertainty.h"
#include "tests/app_helpers.h"

namespace ppb {

TEST_CASE("uncertainty: the spread's syntax", "[uncertainty]") {
  CHECK(*ParseSpread("10%", "--uncertainty") == Approx(0.1));
  CHECK(*ParseSpread("0.25", "--uncertainty") == Approx(0.25));
  CHECK(*ParseSpread("50%", "--uncertainty") == Approx(0.5));
  for (const char* bad : {"0", "60%", "-0.1", "abc", "", "10%%"}) {
    Result<double> r = ParseSpread(bad, "--uncertainty");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          std::string("--uncertainty: expected the coefficients' spread, a share in (0, 0.5] "
                      "like 10% or 0.1; got '") +
              bad + "'");
  }
}

TEST_CASE("uncertainty: draws are seeded, bounded and centred", "[uncertainty]") {
  UncertaintyRequest q;
  q.spread = 0.1;
  q.samples = 256;
  q.seed = 7;
  const std::vector<DrawnMachine> a = DrawMachines(q);
  const std::vector<DrawnMachine> b = DrawMachines(q);
  REQUIRE(a.size() == 256);
  const size_t n = AllStepCoefficients().size();
  double sum = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    REQUIRE(a[k].factor.size() == n);
    CHECK(a[k].factor == b[k].factor);
    for (double f : a[k].factor) {
      CHECK(f >= 0.9);
      CHECK(f < 1.1);
      sum += f;
    }
  }
  // The mean of 2,816 uniform draws on [0.9, 1.1): sd 0.0011.
  CHECK(sum / static_cast<double>(256 * n) == Approx(1.0).margin(0.005));
  q.seed = 8;
  CHECK(DrawMachines(q)[0].factor != a[0].factor);
}

TEST_CASE("uncertainty: bands, shares, the robust choice and flips by hand", "[uncertainty]") {
  UncertaintyRequest q;
  q.spread = 0.1;
  q.samples = 10;
  // A is nominally faster (100 against 101) but B wins 6 of 10 machines;
  // C is out of memory (no time); D is always slowest.
  std::vector<std::vector<Nanos>> t;
  for (int k = 0; k < 10; ++k) {
    const Nanos a = 100 + k;             // 100 .. 109
    const Nanos b = k < 6 ? a - 1 : a + 1;  // beats A on machines 0..5
    t.push_back({a, b, 0, 200 + k});
  }
  UncertaintySummary s = Summarize(q, {"A", "B", "C", "D"}, {100, 101, 0, 200}, t);
  REQUIRE(s.rows.size() == 4);
  CHECK(s.rows[0].p_fastest == Approx(0.4));
  CHECK(s.rows[1].p_fastest == Approx(0.6));
  CHECK(s.rows[3].p_fastest == 0);
  CHECK_FALSE(s.rows[2].ranked);
  CHECK(s.rows[2].p_fastest == 0);
  // Nearest-rank quantiles of A's 100 .. 109: p10 the 1st, median the
  // 5th, p90 the 9th.
  CHECK(s.rows[0].p10 == 100);
  CHECK(s.rows[0].p50 == 104);
  CHECK(s.rows[0].p90 == 108);
  CHECK(s.nominal_best == 0);
  CHECK(s.robust == 1);
  REQUIRE(s.flips.size() == 1);
  CHECK(s.flips[0].faster == 0);
  CHECK(s.flips[0].slower == 1);
  CHECK(s.flips[0].share == Approx(0.6));
  // A tie shares the machine; a pair reversed on under a tenth is no flip.
  t = {{100, 100, 0, 200}, {100, 101, 0, 200}, {100, 101, 0, 200}};
  s = Summarize(q, {"A", "B", "C", "D"}, {100, 101, 0, 200}, t);
  CHECK(s.rows[0].p_fastest == Approx(2.5 / 3));
  CHECK(s.rows[1].p_fastest == Approx(0.5 / 3));
  CHECK(s.robust == 0);
  CHECK(s.flips.empty());
}

TEST_CASE("uncertainty: a drawn machine in the config's hardware block", "[uncertainty]") {
  const std::string text = test::Slurp(std::string(PPB_TEST_DATA_DIR) + "/bloom/pp12-mbs1.yaml");
  Result<RunConfig> c = test::Parse(text);
  REQUIRE(c.ok());
  YAML::Node doc = YAML::Load(text);
  DrawnMachine m;
  m.factor.assign(AllStepCoefficients().size(), 1.1);
  m.factor[0] = 1.5;  // matmul_efficiency 0.7 x 1.5: held at 1
  ApplyMachine(doc, c->hardware, m);
  YAML::Emitter e;
  e << doc;
  Result<RunConfig> drawn = test::Parse(e.c_str());
  REQUIRE(drawn.ok());
  const ComputeEfficiency& x = drawn->hardware.gpu.compute;
  CHECK(x.matmul == 1.0);
  CHECK(x.attention == Approx(c->hardware.gpu.compute.attention * 1.1).epsilon(1e-5));
  CHECK(drawn->hardware.gpu.nic_bytes_per_s == Approx(6.25e9 * 1.1).epsilon(1e-9));
  CHECK(x.microbatch_overhead == 220000);
  CHECK(x.launch_overhead == 11000);
  CHECK(x.layer_overhead == 0);  // 0 stays 0
}

TEST_CASE("uncertainty: two layouts whose order flips inside the range", "[uncertainty][cli]") {
  // BLOOM's PP 12 job with the coefficients calibrate fits to its runs
  // (tests/data/bloom, docs/benchmarks.md): micro-batch 8 is nominally
  // 0.3 % faster than micro-batch 2; the two trade the pipeline's fill
  // against the host's per-micro-batch work, so +-30 % on the coefficients
  // reverses them on most machines, and the robust choice is the other.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "ppb_test_flip";
  fs::create_directories(dir);
  std::string text = test::Slurp(std::string(PPB_TEST_DATA_DIR) + "/bloom/pp12-mbs4.yaml");
  const std::string key = "hardware: {gpu: a100-sxm4-80gb,";
  text.replace(text.find(key), key.size(),
               key + " layer_overhead: 3050.3us, microbatch_overhead: 187.1us, "
                     "matmul_efficiency: 0.6978,");
  std::ofstream(dir / "job.yaml") << text;
  const test::CliRun r =
      test::Cli({"compare", "--config", (dir / "job.yaml").string(), "--schedules", "1f1b",
                 "--vary", "training.micro_batch_size=2,8", "--uncertainty", "30%",
                 "--format", "json"});
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out)["uncertainty"];
  REQUIRE(j["candidates"].size() == 2);
  const nlohmann::json& mbs2 = j["candidates"][0];
  const nlohmann::json& mbs8 = j["candidates"][1];
  CHECK(mbs8["nominal_ns"].get<Nanos>() < mbs2["nominal_ns"].get<Nanos>());
  // Each is the fastest on some machines, and the shares add up to 1.
  CHECK(mbs2["p_fastest"].get<double>() > 0.5);
  CHECK(mbs8["p_fastest"].get<double>() > 0.2);
  CHECK(mbs2["p_fastest"].get<double>() + mbs8["p_fastest"].get<double>() == Approx(1.0));
  // Their bands overlap: p10 below the other's median both ways.
  CHECK(mbs2["p10_ns"].get<Nanos>() < mbs8["median_ns"].get<Nanos>());
  CHECK(mbs8["p10_ns"].get<Nanos>() < mbs2["median_ns"].get<Nanos>());
  CHECK(j["nominal_best"] == "1f1b training.micro_batch_size=8");
  CHECK(j["robust_choice"] == "1f1b training.micro_batch_size=2");
  REQUIRE(j["flips"].size() == 1);
  CHECK(j["flips"][0]["faster"] == "1f1b training.micro_batch_size=8");
  CHECK(j["flips"][0]["reversed_share"].get<double>() == mbs2["p_fastest"].get<double>());
  // At +-1 % the nominal order holds on every machine.
  const test::CliRun tight =
      test::Cli({"compare", "--config", (dir / "job.yaml").string(), "--schedules", "1f1b",
                 "--vary", "training.micro_batch_size=2,8", "--uncertainty", "1%",
                 "--format", "json"});
  REQUIRE(tight.status == 0);
  const nlohmann::json t = nlohmann::json::parse(tight.out)["uncertainty"];
  CHECK(t["candidates"][1]["p_fastest"].get<double>() == 1.0);
  CHECK(t["flips"].empty());
  fs::remove_all(dir);
}

TEST_CASE("uncertainty: the flags' refusals", "[uncertainty][cli]") {
  const std::string example = std::string(PPB_CONFIGS_DIR) + "/example.yaml";
  const std::string cands = std::string(PPB_TEST_DATA_DIR) + "/snapshots/inputs/candidates.yaml";
  const std::string no_gpu =
      "ppb-sim: --uncertainty: needs hardware.gpu (it draws the step model's coefficients); "
      "got a config without it\n";
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const Case cases[] = {
      {{"rank", "--candidates", cands, "--uncertainty", "10%"}, no_gpu},
      {{"search", "--node-limit", "10", "--uncertainty", "0.1"}, no_gpu},
      {{"compare", "--uncertainty", "10%"}, no_gpu},
      {{"compare", "--uncertainty-seed", "3"},
       "ppb-sim: --uncertainty-seed: needs --uncertainty SPREAD; got it alone\n"},
      {{"compare", "--uncertainty", "10%", "--format", "csv"},
       "ppb-sim: --uncertainty: needs --format text or json (the CSV holds one row per "
       "candidate); got csv\n"},
      {{"compare", "--uncertainty", "5%", "--uncertainty-samples", "1"},
       "ppb-sim: --uncertainty-samples: expected an integer from 2 to 4096; got '1'\n"},
      {{"compare", "--uncertainty", "5%", "--uncertainty-samples", "5000"},
       "ppb-sim: --uncertainty-samples: expected an integer from 2 to 4096; got '5000'\n"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.begin() + 1, {"--config", example});
    INFO(args[0] << " " << args.back());
    const test::CliRun r = test::Cli(args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err == c.err);
  }
}

}  // namespace ppb
