// Split backward memory (activation_after_input_grad), V placement and the
// overlapped F+B op: the engine's accounting checked by hand, the loader's
// key and errors, the cost model's M_W [Q24 Table 1], and the peak
// activations per rank of formulas.md §1.3 / §2.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "apps/input/config.h"
#include "core/cost_model.h"
#include "core/engine.h"
#include "core/lower.h"
#include "core/validate.h"
#include "schedules/schedule.h"
#include "tests/cost_models.h"

namespace ppb {
namespace {

Op MakeOp(OpKind kind, int stage, int mb, bool paired = false) {
  return Op{kind, StageId(stage), MicrobatchId(mb), paired};
}

TEST_CASE("split backward frees its release at the end of I, the rest at W",
          "[engine][memory]") {
  PipelineSpec spec = PipelineSpec::Uniform(1, 1, 2, 10, 20);
  StageCost& c = spec.stages[0];
  c.backward_weight = 5;
  c.activation = 100;
  c.input_grad_release = 60;
  Program program;
  program.ops = {{MakeOp(OpKind::F, 0, 0), MakeOp(OpKind::F, 0, 1),
                  MakeOp(OpKind::I, 0, 0), MakeOp(OpKind::I, 0, 1),
                  MakeOp(OpKind::W, 0, 0), MakeOp(OpKind::W, 0, 1)}};
  REQUIRE(ValidateProgram(spec, program).ok());
  Engine engine;
  const SimResult r = engine.Run(spec, program, {true, true});
  REQUIRE(r.outcome == Outcome::Ok);
  // Samples: the start, then each op's start and end: F F I I W W.
  std::vector<Bytes> ends;
  for (size_t k = 2; k < r.memory[0].size(); k += 2) {
    ends.push_back(r.memory[0][k].bytes);
  }
  CHECK(ends == std::vector<Bytes>{100, 200, 140, 80, 40, 0});
  CHECK(r.devices[0].peak_memory == 200);
  CHECK(r.makespan == 2 * (10 + 20 + 5));

  // Release 0 (the default): nothing before W.
  c.input_grad_release = 0;
  const SimResult all = engine.Run(spec, program, {true, true});
  CHECK(all.memory[0][8].bytes == 200);
  CHECK(all.memory[0][10].bytes == 100);
}

Layer SplitLayer(Bytes activation, std::optional<Bytes> held) {
  Layer l;
  l.forward = 1000;
  l.backward_input = 1000;
  l.backward_weight = 1000;
  l.split_backward = true;
  l.activation = activation;
  l.activation_after_input_grad = held;
  l.recompute = {RecomputeOption{"full", 20, 1000}};
  return l;
}

Cluster OneDevice(int p) {
  Cluster c;
  c.devices.assign(static_cast<size_t>(p), Device{1 << 30, 1.0});
  c.links.assign(static_cast<size_t>(p), Link{});
  return c;
}

TEST_CASE("Lower sums each layer's release, recompute holds its stash",
          "[lower][memory]") {
  const std::vector<Layer> layers = {SplitLayer(100, 30),
                                     SplitLayer(100, std::nullopt),
                                     SplitLayer(100, 30)};
  Strategy s;
  s.layers_per_stage = {3};
  s.recompute = {0, 0, 1};  // the third layer recomputed: stash 20
  const Result<PipelineSpec> spec =
      Lower(layers, OneDevice(1), PipelineShape{1, 1, 1}, s);
  REQUIRE(spec.ok());
  CHECK(spec->stages[0].activation == 100 + 100 + 20);
  // 100 - 30, nothing for the unset one, 20 - min(30, 20).
  CHECK(spec->stages[0].input_grad_release == 70);
  CHECK(spec->placement == StagePlacement::Loop);
}

TEST_CASE("Lower places V stages and refuses V with v != 2", "[lower]") {
  const std::vector<Layer> layers(8, SplitLayer(100, 50));
  Strategy s;
  s.layers_per_stage.assign(8, 1);
  s.recompute.assign(8, 0);
  PipelineShape shape{4, 2, 8};
  shape.placement = StagePlacement::V;
  const Result<PipelineSpec> spec = Lower(layers, OneDevice(4), shape, s);
  REQUIRE(spec.ok());
  std::vector<int> devices;
  for (DeviceId d : spec->stage_device) devices.push_back(d.value);
  CHECK(devices == std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0});
  CHECK(StageOf(StagePlacement::V, 4, 1, 0) == 7);
  CHECK(StageOf(StagePlacement::V, 4, 0, 2) == 2);
  CHECK(StageOf(StagePlacement::Loop, 4, 1, 0) == 4);

  Strategy s3;
  s3.layers_per_stage.assign(12, 1);
  s3.recompute.assign(12, 0);
  shape.v = 3;
  const std::vector<Layer> twelve(12, SplitLayer(100, 50));
  const Result<PipelineSpec> bad = Lower(twelve, OneDevice(4), shape, s3);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().key == "pipeline.virtual_stages");
  CHECK(bad.error().message ==
        "must be 2 for the V placement (rank r holds stages r and 2p-1-r); "
        "got 3");
}

// The [K22] shape of test_cost_model.cpp: a = kv = 4, h = 16, ffn = 4h,
// non-gated, 2-byte activations; s = 8, b = 2: sbh = 256.
TEST_CASE("the cost model's W stash is [Q24 Table 1]'s M_W = 32sbh",
          "[cost][memory]") {
  Architecture a = test::Dense(16, 2, 4, 4, 64, 100);
  a.gated_mlp = false;
  Training t;
  t.seq = 8;
  t.micro_batch = 2;
  const std::int64_t sbh = 256;
  CHECK(DecoderWeightGradStash(a, t, false) == 32 * sbh);
  // Tensor parallel t = 2: LayerNorm outputs and the projection / fc2
  // output gradients (8sbh) stay whole, the rest (24sbh) is split.
  t.tp = 2;
  CHECK(DecoderWeightGradStash(a, t, false) == 8 * sbh + 24 * sbh / 2);
  // With sequence parallelism everything is split.
  t.sp = true;
  CHECK(DecoderWeightGradStash(a, t, false) == 32 * sbh / 2);
  // Gated MLP: fc1's output gradient is twice as wide (+ e sb ffn = 8sbh).
  a.gated_mlp = true;
  t.tp = 1;
  t.sp = false;
  CHECK(DecoderWeightGradStash(a, t, false) == 40 * sbh);
  // Never more than the activation.
  CHECK(DecoderWeightGradStash(a, t, false) <=
        DecoderActivation(a, t, false).none);
}

// formulas.md §1.3 / §2: with W as the release, ZB-H1 holds p stage
// activations on every rank (1F1B's rank-0 amount) and ZB-V 2p half-stage
// chunks; releasing part at I lowers every rank's peak.
TEST_CASE("peak activations per rank of ZB-H1 and ZB-V", "[schedules][memory]") {
  const Bytes act = 1000;
  for (int p : {2, 3, 4, 6}) {
    for (int m : {2 * p, 3 * p}) {
      INFO("p=" << p << " m=" << m);
      {
        PipelineSpec spec = PipelineSpec::Uniform(p, 1, m, 1, 1);
        for (StageCost& c : spec.stages) {
          c.backward_weight = 1;
          c.activation = act;
        }
        const Result<Program> program =
            GenerateInterleavedZeroBubble(spec, {});
        REQUIRE(program.ok());
        Engine engine;
        const SimResult r = engine.Run(spec, *program, {false, false});
        for (const DeviceStats& d : r.devices) CHECK(d.peak_memory == p * act);
        // Releasing R at I: rank r keeps r I's whose W has not run, so its
        // peak (during its p-th forward in flight) is p act - r R.
        const Bytes release = 400;
        for (StageCost& c : spec.stages) c.input_grad_release = release;
        const SimResult held = engine.Run(spec, *program, {false, false});
        for (int d = 0; d < p; ++d) {
          CHECK(held.devices[static_cast<size_t>(d)].peak_memory ==
                p * act - d * release);
        }
        for (StageCost& c : spec.stages) c.input_grad_release = 0;
        // 1F1B: rank r holds p - r.
        const Result<Program> one = Generate1F1B(spec, {});
        REQUIRE(one.ok());
        const SimResult r1 = engine.Run(spec, *one, {false, false});
        for (int d = 0; d < p; ++d) {
          CHECK(r1.devices[static_cast<size_t>(d)].peak_memory == (p - d) * act);
        }
      }
      {
        PipelineSpec spec = PipelineSpec::Uniform(p, 2, m, 1, 1);
        spec.placement = StagePlacement::V;
        spec.stage_device = StagePlacementDevices(StagePlacement::V, p, 2);
        for (StageCost& c : spec.stages) {
          c.backward_weight = 1;
          c.activation = act / 2;  // a chunk is half a stage
        }
        const Result<Program> program = GenerateZBVZeroBubble(spec, {});
        REQUIRE(program.ok());
        Engine engine;
        const SimResult r = engine.Run(spec, *program, {false, false});
        for (const DeviceStats& d : r.devices) CHECK(d.peak_memory == p * act);
        // Releasing part at I changes no rank's peak: it comes at the end
        // of the warm-up, 2p forwards before the first I.
        for (StageCost& c : spec.stages) c.input_grad_release = act / 4;
        const SimResult half = engine.Run(spec, *program, {false, false});
        for (const DeviceStats& d : half.devices) {
          CHECK(d.peak_memory == p * act);
        }
      }
    }
  }
}

TEST_CASE("an overlapped F+B starts when both halves are ready and saves "
          "fb_overlap of the shorter",
          "[engine]") {
  // Two ranks, stages 0 and 1, F = 10, B = 20. Rank 0: F0, F1, (F2 + B0),
  // B1, B2; rank 1: F0 B0 F1 B1 F2 B2.
  for (const std::int64_t ppm : {0, 500'000, 1'000'000}) {
    PipelineSpec spec = PipelineSpec::Uniform(2, 1, 3, 10, 20);
    spec.fb_overlap_ppm = ppm;
    Program program;
    program.ops = {{MakeOp(OpKind::F, 0, 0), MakeOp(OpKind::F, 0, 1),
                    MakeOp(OpKind::F, 0, 2, true), MakeOp(OpKind::B, 0, 0),
                    MakeOp(OpKind::B, 0, 1), MakeOp(OpKind::B, 0, 2)},
                   {MakeOp(OpKind::F, 1, 0), MakeOp(OpKind::B, 1, 0),
                    MakeOp(OpKind::F, 1, 1), MakeOp(OpKind::B, 1, 1),
                    MakeOp(OpKind::F, 1, 2), MakeOp(OpKind::B, 1, 2)}};
    REQUIRE(ValidateProgram(spec, program).ok());
    Engine engine;
    const SimResult r = engine.Run(spec, program);
    REQUIRE(r.outcome == Outcome::Ok);
    INFO("ppm " << ppm);
    // B1.0 ends at 10 + 10 + 20 = 40 (rank 1: F0 [10, 20], B0 [20, 40]):
    // rank 0 is free at 20 but the pair waits for the gradient until 40.
    CHECK(r.timings[0][2].start == 40);
    const Nanos save = 10 * ppm / 1'000'000;  // of min(10, 20)
    // The F takes its share (10 of 30) of the saving, the B the rest.
    CHECK(r.timings[0][2].end - r.timings[0][2].start == 10 - save / 3);
    CHECK(r.timings[0][3].start == r.timings[0][2].end);
    CHECK(r.timings[0][3].end == 40 + 30 - save);
  }
  // A pair must be an F and then a backward.
  PipelineSpec spec = PipelineSpec::Uniform(1, 1, 1, 10, 20);
  Program bad;
  bad.ops = {{MakeOp(OpKind::F, 0, 0, true)}};
  bad.ops[0].push_back(MakeOp(OpKind::B, 0, 0));
  CHECK(ValidateProgram(spec, bad).ok());  // F0 paired with its own B
  bad.ops = {{MakeOp(OpKind::F, 0, 0), MakeOp(OpKind::B, 0, 0, true)}};
  const Status s = ValidateProgram(spec, bad);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message ==
        "rank 0 overlaps 0B0 with the next op; expected an F followed by a B "
        "or I");
}

std::string SplitConfig(const std::string& held, const std::string& extra) {
  // Appends, not operator+ chains: GCC 12 warns (-Wrestrict) on those.
  std::string text = R"(model:
  layers:
    - name: decoder
      repeat: 4
      forward: 1ms
      backward_input: 1ms
      backward_weight: 1ms
      activation: 1GiB
)";
  text += held;
  text += R"(      output: 16MiB
cluster:
  devices: {memory: 80GiB}
  link: {latency: 10us, bandwidth: 50GB/s}
pipeline:
  stages: 2
  microbatches: 4
)";
  text += extra;
  return text;
}

TEST_CASE("activation_after_input_grad and fb_overlap in the config",
          "[config][memory]") {
  Result<RunConfig> c = ParseConfig(
      SplitConfig("      activation_after_input_grad: 256MiB\n",
                  "  fb_overlap: 0.25\n  schedule: ScheduleInterleavedZeroBubble\n"),
      "run.yaml", {});
  REQUIRE(c.ok());
  CHECK(c->layers[0].activation_after_input_grad == Bytes{256} << 20);
  CHECK(c->shape.fb_overlap_ppm == 250'000);
  CHECK(c->schedule == "interleaved-zero-bubble");
  Result<PreparedRun> run = Prepare(*c);
  REQUIRE(run.ok());
  CHECK(run->spec.stages[0].input_grad_release == 2 * (Bytes{768} << 20));

  c = ParseConfig(SplitConfig("", ""), "run.yaml", {});
  REQUIRE(c.ok());
  CHECK_FALSE(c->layers[0].activation_after_input_grad.has_value());

  c = ParseConfig(
      SplitConfig("      activation_after_input_grad: 2GiB\n", ""),
      "run.yaml", {});
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message ==
        "run.yaml:9: model.layers[0].activation_after_input_grad: must be at "
        "most the layer's activation (1GiB), the part of it still held between "
        "I and W; got 2GiB");

  c = ParseConfig(SplitConfig("", "  fb_overlap: 1.5\n"), "run.yaml", {});
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message ==
        "run.yaml:16: pipeline.fb_overlap: must be a share in [0, 1]; got 1.5");
}

TEST_CASE("zbv-zero-bubble runs on the V placement from a config",
          "[config][schedules]") {
  Result<RunConfig> c = ParseConfig(
      SplitConfig("", "  virtual_stages: 2\n  schedule: zbv-zero-bubble\n"),
      "run.yaml", {});
  REQUIRE(c.ok());
  Result<PreparedRun> run = Prepare(*c);
  REQUIRE(run.ok());
  CHECK(run->spec.placement == StagePlacement::V);
  std::vector<int> devices;
  for (DeviceId d : run->spec.stage_device) devices.push_back(d.value);
  CHECK(devices == std::vector<int>{0, 1, 1, 0});

  c = ParseConfig(SplitConfig("", "  schedule: dualpipev\n"), "run.yaml", {});
  REQUIRE(c.ok());
  const Result<PreparedRun> refused = Prepare(*c);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().key == "pipeline.virtual_stages");
  CHECK(refused.error().message.find(
            "ZBV requires exactly 2 stages per rank, but got 1.") !=
        std::string::npos);
}

}  // namespace
}  // namespace ppb
