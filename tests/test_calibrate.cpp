// Calibration (core/calibrate.h, apps/calibrate.h) and SAPP inputs
// (apps/sapp.h).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "app_helpers.h"
#include "apps/input/config.h"
#include "apps/input/measurements.h"
#include "apps/input/sapp.h"
#include "apps/output/calibration.h"
#include "core/calibrate.h"

namespace ppb {
namespace {

constexpr double kMiB = 1048576.0;

// Known coefficients of the memory model (bytes).
struct Truth {
  double s = 2000 * kMiB, c = 900 * kMiB, f = 6000 * kMiB, t = 3000 * kMiB;
  std::vector<double> act = {800 * kMiB, 30 * kMiB, 500 * kMiB};  // none, full, selective
  double layer_time = 3e6, first_time = 1e6, last_time = 2e6;
};

// One stage of a synthetic run, measured by the model itself.
StageMeasurement Stage(const Truth& tr, int s, int p, int m, int layers,
                       int full, int sel) {
  StageMeasurement st;
  st.label = "s" + std::to_string(s);
  st.stage = s;
  st.stages = p;
  st.layers = layers;
  st.per_mode = {layers - full - sel, full, sel};
  st.inflight = std::min(m, p - s);
  double mem = tr.c + tr.s * layers + (s == 0 ? tr.f : 0) + (s == p - 1 ? tr.t : 0);
  for (int i = 0; i < 3; ++i) mem += tr.act[i] * st.per_mode[i] * st.inflight;
  st.memory = mem;
  st.time = tr.layer_time * layers + (s == 0 ? tr.first_time : 0) +
            (s == p - 1 ? tr.last_time : 0);
  return st;
}

CalibrationProblem Synthetic(const Truth& tr) {
  CalibrationProblem pb;
  pb.modes = {"none", "full", "selective"};
  // Run A: p = 4, m = 8, layers 5 6 6 5, full [2, 1, 0, 0], selective 0.
  const int la[] = {5, 6, 6, 5}, fa[] = {2, 1, 0, 0};
  for (int s = 0; s < 4; ++s) pb.stages.push_back(Stage(tr, s, 4, 8, la[s], fa[s], 0));
  // Run B: p = 4, m = 3, layers 6 5 5 6, selective [1, 3, 2, 0].
  const int lb[] = {6, 5, 5, 6}, sb[] = {1, 3, 2, 0};
  for (int s = 0; s < 4; ++s) pb.stages.push_back(Stage(tr, s, 4, 3, lb[s], 0, sb[s]));
  return pb;
}

TEST_CASE("calibration recovers the coefficients of the model exactly",
          "[calibrate]") {
  const Truth tr;
  Result<CalibrationResult> fit = Calibrate(Synthetic(tr));
  REQUIRE(fit.ok());
  const double tol = 1e-3;  // bytes / ns
  CHECK(fit->static_per_layer == Approx(tr.s).margin(tol));
  CHECK(fit->constant == Approx(tr.c).margin(tol));
  CHECK(fit->first_extra == Approx(tr.f).margin(tol));
  CHECK(fit->last_extra == Approx(tr.t).margin(tol));
  for (int i = 0; i < 3; ++i) CHECK(fit->activation[i] == Approx(tr.act[i]).margin(tol));
  REQUIRE(fit->has_time);
  CHECK(fit->layer_time == Approx(tr.layer_time).margin(tol));
  CHECK(fit->first_time == Approx(tr.first_time).margin(tol));
  CHECK(fit->last_time == Approx(tr.last_time).margin(tol));
  for (double r : fit->memory_residuals) CHECK(std::abs(r) < 1e-3);
  CHECK(fit->memory_condition > 1);
  CHECK(std::isfinite(fit->memory_condition));
}

TEST_CASE("calibration recovers the coefficients within tolerance with noise",
          "[calibrate]") {
  const Truth tr;
  CalibrationProblem pb = Synthetic(tr);
  // Four more runs so that noise averages out.
  const Truth copy = tr;
  for (int extra = 0; extra < 4; ++extra) {
    CalibrationProblem more = Synthetic(copy);
    pb.stages.insert(pb.stages.end(), more.stages.begin(), more.stages.end());
  }
  std::mt19937_64 rng(Catch::rngSeed() + 7);
  std::normal_distribution<double> noise(0.0, 1e-4);  // 0.01% of each value
  for (StageMeasurement& s : pb.stages) {
    *s.memory *= 1 + noise(rng);
    *s.time *= 1 + noise(rng);
  }
  Result<CalibrationResult> fit = Calibrate(pb);
  REQUIRE(fit.ok());
  CHECK(fit->static_per_layer == Approx(tr.s).epsilon(0.05));
  CHECK(fit->activation[0] == Approx(tr.act[0]).epsilon(0.05));
  CHECK(fit->activation[2] == Approx(tr.act[2]).epsilon(0.05));
  CHECK(fit->first_extra == Approx(tr.f).epsilon(0.05));
  CHECK(fit->last_extra == Approx(tr.t).epsilon(0.05));
  CHECK(fit->layer_time == Approx(tr.layer_time).epsilon(0.01));
  for (double r : fit->memory_residuals) CHECK(std::abs(r) < 0.01 * 80e9);
}

TEST_CASE("calibration refuses a negative fit", "[calibrate]") {
  Truth tr;
  tr.s = -100 * kMiB;  // more layers, less memory: non-physical
  Result<CalibrationResult> fit = Calibrate(Synthetic(tr));
  REQUIRE_FALSE(fit.ok());
  CHECK(fit.error().message ==
        "non-physical fit: static memory per layer = -100 MiB (negative); the "
        "measurements contradict the memory model (check the layouts, "
        "recompute lists and micro-batches of the runs)");
}

TEST_CASE("calibration refuses under-determined systems and names the run to add",
          "[calibrate]") {
  const Truth tr;
  SECTION("the same layers on every middle stage: the constant") {
    CalibrationProblem pb;
    pb.modes = {"none"};
    for (int s = 0; s < 4; ++s) pb.stages.push_back(Stage(tr, s, 4, 8, 5, 0, 0));
    pb.modes = {"none", "full", "selective"};
    Result<CalibrationResult> fit = Calibrate(pb);
    REQUIRE_FALSE(fit.ok());
    CHECK(fit.error().message ==
          "under-determined memory fit (4 measurements, 5 unknowns): the "
          "per-stage constant is not determined by the measurements; add a "
          "run whose middle stages hold different numbers of layers (an "
          "offset), or set constant: false");
  }
  SECTION("selective counts proportional to the others") {
    CalibrationProblem pb;
    pb.modes = {"none", "full", "selective"};
    pb.fit_constant = false;
    // Every stage: 4 layers, 2 of them selective: none and selective move
    // together.
    for (int s = 0; s < 4; ++s) pb.stages.push_back(Stage(tr, s, 4, 8, 4, 0, 2));
    Result<CalibrationResult> fit = Calibrate(pb);
    REQUIRE_FALSE(fit.ok());
    CHECK(fit.error().message ==
          "under-determined memory fit (4 measurements, 5 unknowns): the "
          "activation per layer with recompute 'selective' is not determined "
          "by the measurements; add a run with a different number of "
          "'selective'-recompute layers on some stage (or the same layers on "
          "a stage with a different number of micro-batches in flight)");
  }
  SECTION("no measurement of the last stage") {
    CalibrationProblem pb = Synthetic(tr);
    pb.stages.erase(pb.stages.begin() + 7);
    pb.stages.erase(pb.stages.begin() + 3);
    Result<CalibrationResult> fit = Calibrate(pb);
    REQUIRE_FALSE(fit.ok());
    CHECK(fit.error().message.find("the extra memory of the last stage is not "
                                   "determined by the measurements; add a "
                                   "measurement of the last stage in some run") !=
          std::string::npos);
  }
}

const std::string kData = PPB_TEST_DATA_DIR;

TEST_CASE("calibrate reads ppb runs.yaml and writes a loadable model",
          "[calibrate]") {
  const std::string runs = R"(modes: [full]
runs:
  - name: a
    stages: 4
    microbatches: 8
    layers: [5, 6, 6, 5]
    recompute: {full: [2, 1, 0, 0]}
    memory: [60GiB, 50GiB, 40GiB, 20GiB]
    time: [17ms, 18ms, 18ms, 17ms]
  - name: b
    stages: 4
    microbatches: 8
    num_layers: 22
    offset: [1, 0, 0, 1]
    memory: {0: 70GiB, 1: 52GiB, 3: 21GiB}
)";
  Result<Measurements> m = ParseMeasurements(runs, "runs.yaml", {});
  REQUIRE(m.ok());
  CHECK(m->problem.stages.size() == 7);
  CHECK(m->decoder_layers == 22);
  CHECK(m->problem.stages[0].per_mode == std::vector<int>{3, 2});
  CHECK(m->problem.stages[0].inflight == 4);
  // Errors name the file, line and key.
  Result<Measurements> bad = ParseMeasurements(
      "runs:\n  - {stages: 2, layers: [1, 1], memory: [1GiB, 2]}\n", "runs.yaml", {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.rfind("runs.yaml:2: runs[0].memory[1]: ", 0) == 0);
  // A count past 100000 is refused before anything is sized by it (the
  // fuzzer's pipeline_num of 675 million asked for 2.7 GB).
  Result<Measurements> huge = ParseMeasurements(
      "pipeline_config: {pipeline_num: 675759908, num_layer: 8}\n"
      "memory_usage: {head_memory: 1}\n",
      "mem.yaml", {});
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message ==
        "mem.yaml:1: pipeline_config.pipeline_num: must be an integer in 1 .. "
        "100000; got 675759908");
  Result<Measurements> many = ParseMeasurements(
      "runs:\n  - {stages: 2, num_layers: 4, offset: [100001, -100001], memory: [1GiB, 2GiB]}\n",
      "runs.yaml", {});
  REQUIRE_FALSE(many.ok());
  CHECK(many.error().message.rfind("runs.yaml:2: runs[0].offset[0]: must be an integer in "
                                   "-100000 .. 100000; got 100001", 0) == 0);
}

TEST_CASE("SAPP's dry-run memory YAML loads and fits", "[calibrate]") {
  Result<Measurements> need_unit =
      LoadMeasurements(kData + "/sapp/mf_mem.yaml", {});
  REQUIRE_FALSE(need_unit.ok());
  CHECK(need_unit.error().message ==
        kData + "/sapp/mf_mem.yaml:17: memory_usage.head_memory: is a SAPP "
                "number without a unit; give --memory-unit (e.g. 1MiB)");
  for (const char* f : {"mf_mem.yaml", "hp_init_demo.yaml"}) {
    Result<Measurements> m =
        LoadMeasurements(kData + "/sapp/" + f, {1000000, 1048576, std::nullopt});
    REQUIRE(m.ok());
    CHECK(m->sapp);
    CHECK(m->problem.stages.size() == 8);
    CHECK(m->problem.fit_constant);  // 6 body stages, 4 types in use
    // With the constant SAPP's demo numbers fit a negative constant, which
    // SAPP accepts and plans with: the decomposition SAPP's ComputeMemory
    // gives for this file (P=2141, A_none=852, A_slct=767, A_comm=535,
    // A_both=511, C=-1896, H=4245, T=1203 MB: the numbers of its ST test and
    // of hyper-parallel's layers/demo.json, our tests/data/sapp/hp_demo.json).
    CHECK(m->problem.allow_negative_constant);
    Result<CalibrationResult> with_c = Calibrate(m->problem);
    REQUIRE(with_c.ok());
    // SAPP writes whole MB, truncated; its H and T are backed out of the
    // first and last stage's own measurement, so they hold the constant.
    auto mb = [](double bytes) { return static_cast<long>(bytes / kMiB); };
    CHECK(with_c->constant / kMiB == Approx(-1896.75).margin(0.005));
    CHECK(mb(with_c->constant) == -1896);
    CHECK(mb(with_c->static_per_layer) == 2141);
    CHECK(mb(with_c->first_extra + with_c->constant) == 4245);
    CHECK(mb(with_c->last_extra + with_c->constant) == 1203);
    REQUIRE(with_c->activation.size() == m->problem.modes.size());
    std::map<std::string, long> act;
    for (size_t i = 0; i < m->problem.modes.size(); ++i) {
      act[m->problem.modes[i]] = mb(with_c->activation[i]);
    }
    CHECK(act["none"] == 852);
    CHECK(act["selective"] == 767);
    CHECK(act["select_comm"] == 535);
    CHECK(act["both_comm_select"] == 511);
    // A ppb measurements file refuses the same negative constant.
    CalibrationProblem strict = m->problem;
    strict.allow_negative_constant = false;
    Result<CalibrationResult> refused = Calibrate(strict);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.rfind("non-physical fit: per-stage constant = -1896.75 MiB", 0) == 0);
    m->problem.fit_constant = false;
    Result<CalibrationResult> fit = Calibrate(m->problem);
    REQUIRE(fit.ok());
    CHECK(fit->static_per_layer / kMiB == Approx(1860.788).epsilon(1e-5));
    CHECK(fit->activation[0] / kMiB == Approx(859.910).epsilon(1e-5));
    CHECK(fit->first_extra / kMiB == Approx(6382.495).epsilon(1e-5));
  }
  // hp_init_demo has time_config: the CLI writes a model ppb-sim accepts.
  const std::string out = "calibrated-sapp.yaml";
  test::CliRun r = test::Cli({"calibrate", "--measurements", kData + "/sapp/hp_init_demo.yaml",
                              "--memory-unit", "1MiB", "--time-unit", "1ms",
                              "--no-constant", "--output", out});
  REQUIRE(r.status == 0);
  CHECK(r.out.find("condition number") != std::string::npos);
  std::ifstream in(out);
  std::string model((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(out.c_str());
  Result<RunConfig> cfg = test::Parse(model +
                                      "cluster: {devices: {memory: 80GiB}}\n"
                                      "pipeline: {stages: 16, microbatches: 32}\n"
                                      "strategy: {recompute: {selective: true}}\n");
  REQUIRE(cfg.ok());
  CHECK(cfg->layers.size() == 98);
  CHECK(cfg->layers[1].recompute.size() == 3);
  // JSON report.
  test::CliRun j = test::Cli({"calibrate", "--measurements", kData + "/sapp/mf_mem.yaml",
                              "--memory-unit", "1MiB", "--no-constant", "--format", "json"});
  REQUIRE(j.status == 0);
  CHECK(j.out.find("\"schema\": \"ppb.calibrate/1\"") != std::string::npos);
  // Without --no-constant: accepted as SAPP does, with a warning that says
  // what the negative constant means.
  test::CliRun negative = test::Cli({"calibrate", "--measurements", kData + "/sapp/mf_mem.yaml",
                                     "--memory-unit", "1MiB"});
  CHECK(negative.status == 0);
  CHECK(negative.err.rfind("ppb-sim calibrate: warning: per-stage constant -1896.750 MiB is "
                           "negative; accepted as SAPP does", 0) == 0);
  CHECK(negative.out.find("  warning: per-stage constant -1896.750 MiB is negative") !=
        std::string::npos);
  CHECK(negative.out.find("It is not memory a stage frees") != std::string::npos);
}

TEST_CASE("SAPP layer JSON: a number beyond double is an error, not an abort",
          "[calibrate]") {
  Result<std::vector<Layer>> r = ParseSappLayers(
      R"({"layers_description": [], "x": 1e400})", "layers.json", {1, 1, std::nullopt});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "layers.json: must be valid JSON; got an error "
        "([json.exception.out_of_range.406] number overflow parsing '1e400')");
  // Values beyond the config's bounds, in SAPP units.
  Result<std::vector<Layer>> slow = ParseSappLayers(
      R"({"layers_description": [{"name": "b", "type": "BODY", "nb_layer": 1,
          "time": 1e300, "memory_parameter": 1}]})",
      "layers.json", {1000000, 1048576, std::nullopt});
  REQUIRE_FALSE(slow.ok());
  CHECK(slow.error().message ==
        "layers.json:2: layers_description[0].time: must be at most 1000s "
        "(1000000.0 time units); got 1e+300");
  // Through the config and the CLI: exit 2 with the file.
  const std::string json = "ppb_test_sapp_huge.json";
  std::ofstream(json) << R"({"layers_description": [], "x": 1e400})";
  const std::string cfg = "ppb_test_sapp_huge.yaml";
  std::ofstream(cfg) << "model: {sapp_layers: " << json
                     << ", sapp_units: {time: 1ms, memory: 1MiB}}\n"
                        "cluster: {devices: {memory: 80GiB}}\n"
                        "pipeline: {stages: 2, microbatches: 4}\n";
  const test::CliRun cli = test::Cli({"--config", cfg});
  CHECK(cli.status == 2);
  CHECK(cli.err.find("number overflow parsing '1e400'") != std::string::npos);
  CHECK(cli.out.empty());
  std::remove(json.c_str());
  std::remove(cfg.c_str());
}

TEST_CASE("SAPP layer JSON examples load and simulate", "[calibrate]") {
  for (const char* f : {"hp_demo.json", "hp_llama2_70b.json", "mf_sim_vpp3.json",
                        "mf_test_vpp1.json"}) {
    INFO(f);
    Result<std::vector<Layer>> layers =
        LoadSappLayers(kData + "/sapp/" + f, {1000000, 1048576, std::nullopt});
    REQUIRE(layers.ok());
    CHECK(layers->front().kind == LayerKind::Embedding);
    CHECK(layers->back().kind == LayerKind::Head);
    CHECK((*layers)[1].kind == LayerKind::Decoder);
    CHECK(std::abs((*layers)[1].backward() - 2 * (*layers)[1].forward) <= 1);
    const std::string cfg_text = std::string("model: {sapp_layers: ") + f +
                                 ", sapp_units: {time: 1ms, memory: 1MiB}}\n"
                                 "cluster: {devices: {memory: 200GiB}}\n"
                                 "pipeline: {stages: 8, microbatches: 16}\n";
    Result<RunConfig> cfg = ParseConfig(cfg_text, kData + "/sapp/run.yaml", {});
    REQUIRE(cfg.ok());
    Result<PreparedRun> run = Prepare(*cfg);
    REQUIRE(run.ok());
  }
  Result<std::vector<Layer>> demo =
      LoadSappLayers(kData + "/sapp/hp_demo.json", {1000000, 1048576, std::nullopt});
  REQUIRE(demo.ok());
  REQUIRE(demo->size() == 98);
  const Layer& body = (*demo)[1];
  CHECK(body.name == "BODY.0");
  // MindFormers r1.5.0: time 90 is the forward, backward 2 x 90.
  CHECK(body.forward == 90000000);
  CHECK(body.backward_input == 180000000);
  CHECK(body.static_memory == 2141LL * 1048576);
  CHECK(body.activation == 852LL * 1048576);
  REQUIRE(body.recompute.size() == 3);
  CHECK(body.recompute[0].name == "selective");
  CHECK(body.recompute[0].retained_activation == 767LL * 1048576);
  CHECK(body.recompute[0].extra_time == 7200000);  // 0.04 x 180 ms
  // Units are required.
  const std::string no_units =
      "model: {sapp_layers: hp_demo.json}\ncluster: {devices: {memory: 80GiB}}\n"
      "pipeline: {stages: 4, microbatches: 8}\n";
  Result<RunConfig> bad = ParseConfig(no_units, kData + "/sapp/run.yaml", {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("model.sapp_units: must be given (SAPP numbers carry no unit)") !=
        std::string::npos);
  // A field error names the file and the field.
  Result<std::vector<Layer>> broken = ParseSappLayers(
      R"({"layers_description": [{"name": "b", "type": "BODY", "nb_layer": 1,
          "time": 1, "memory_parameter": 1,
          "memory_activation": 2, "memory_select_rec": 3}]})",
      "x.json", {1000000, 1048576, std::nullopt});
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message ==
        "x.json:3: layers_description[0].memory_select_rec: must be <= "
        "memory_activation (2): a recompute mode keeps less; got 3");
}

TEST_CASE("configs/sapp-demo.yaml simulates and searches", "[calibrate]") {
  const std::string cfg = std::string(PPB_CONFIGS_DIR) + "/sapp-demo.yaml";
  test::CliRun sim = test::Cli({"--config", cfg});
  CHECK(sim.status == 0);
  CHECK(sim.out.find("98 layers") != std::string::npos);
  test::CliRun search = test::Cli({"search", "--config", cfg, "--node-limit", "200",
                                   "--threads", "1", "--time-limit", "5s"});
  CHECK(search.status == 0);
  CHECK(search.out.find("recommended") != std::string::npos);
}

}  // namespace
}  // namespace ppb
