// Framework output (--emit, apps/emit.h): golden texts checked by hand
// against the frameworks' rules (../shared/reference/conventions.md), round
// trips through the readers, and refusals.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app_helpers.h"
#include "apps/output/emit.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

// The tiny model of the emit tests (test::TinyEmitModel).
std::string Model(int decoders = 8, int mtp = 0) { return test::TinyEmitModel(decoders, mtp); }

RunConfig Load(const std::string& text) {
  Result<RunConfig> c = test::Parse(text);
  if (!c.ok()) FAIL(c.error().message);
  return *c;
}

Program ProgramOf(const RunConfig& config) {
  Result<PreparedRun> run = Prepare(config);
  if (!run.ok()) FAIL(run.error().message);
  return run->program;
}

Result<Emission> EmitFor(Framework f, const RunConfig& config) {
  return Emit(f, config, ProgramOf(config));
}

std::string EmitText(Framework f, const RunConfig& config) {
  Result<Emission> e = EmitFor(f, config);
  if (!e.ok()) FAIL(e.error().message);
  return e->text;
}

std::string Refusal(Framework f, const RunConfig& config) {
  Result<Emission> e = EmitFor(f, config);
  if (e.ok()) FAIL("expected a refusal, got:\n" << e->text);
  return e.error().message;
}

// Emits, reads back with the framework's reader, and checks the shape, the
// split and (where the form expresses it) the recompute.
void CheckRoundTrip(Framework f, const RunConfig& config) {
  INFO(FrameworkName(f));
  Result<Emission> e = EmitFor(f, config);
  if (!e.ok()) FAIL(e.error().message);
  INFO(e->text);
  Result<EmittedPlan> back = ParseEmission(f, e->text, config.layers);
  if (!back.ok()) FAIL(back.error().message);
  CHECK(back->p == config.shape.p);
  CHECK(back->v == config.shape.v);
  if (back->m != 0) CHECK(back->m == config.shape.m);
  CHECK(back->strategy.layers_per_stage == config.strategy.layers_per_stage);
  if (e->recompute_expressed) {
    CHECK(back->strategy.recompute == config.strategy.recompute);
  } else {
    CHECK(e->text.find("# ppb: ") != std::string::npos);
  }
}

constexpr Framework kAll[] = {Framework::Megatron, Framework::MindFormers, Framework::Torchtitan,
                              Framework::Torchtitan022, Framework::DeepSpeed};

std::string ParseError(Framework f, const std::string& text, const std::vector<Layer>& layers) {
  Result<EmittedPlan> r = ParseEmission(f, text, layers);
  if (r.ok()) FAIL("expected an error reading:\n" << text);
  return r.error().message;
}

}  // namespace

TEST_CASE("emit names: comma lists, any case, repeats dropped, bad names") {
  auto fs = ParseFrameworks("--emit", "Megatron,deepspeed,megatron");
  REQUIRE(fs.ok());
  CHECK(*fs == std::vector<Framework>{Framework::Megatron, Framework::DeepSpeed});
  auto bad = ParseFrameworks("--emit", "megatron,nemo");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().key == "--emit");
  CHECK_THAT(bad.error().message, Catch::Contains("got 'megatron,nemo'"));
}

// Uneven v = 1 split with the first N layers of each stage recomputed:
// Megatron's layout and block recompute, and the uneven first/last form.
// By hand: stages hold E+1, 3, 3, 1+L layers; decoders per rank 1, 3, 3, 1,
// so --decoder-first/last 1 leave (8-2)/2 = 3 per middle rank; full on the
// first 1, 2, 2, 1 decoder layers = min(2, decoders of the stage) = block 2.
TEST_CASE("emit golden: Megatron-LM, uneven split, block recompute") {
  const RunConfig config = Load(Model() +
                                "pipeline: {stages: 4, microbatches: 8}\n"
                                "strategy:\n"
                                "  layers_per_chunk: [[2, 3, 3, 2]]\n"
                                "  recompute: {full: [1, 2, 2, 1]}\n");
  CHECK(EmitText(Framework::Megatron, config) ==
        "# ppb: Megatron-LM arguments for tiny: schedule 1f1b, p=4, v=1, m=8\n"
        "--pipeline-model-parallel-size 4\n"
        "--pipeline-model-parallel-layout \"Et|t*3|t*3|tL\"\n"
        "--recompute-granularity full\n"
        "--recompute-method block\n"
        "--recompute-num-layers 2\n"
        "# ppb: the layout's 4 stages (| in the order stage = chunk * p + "
        "rank) set v =\n"
        "# ppb: 1; Megatron-LM refuses --num-virtual-stages-per-pipeline-rank "
        "with a\n"
        "# ppb: layout. It needs the model's --num-layers 8, m = 8 "
        "micro-batches =\n"
        "# ppb: --global-batch-size / (--micro-batch-size x data parallel "
        "size)\n"
        "# ppb: equivalent without the layout (give one form, not both):\n"
        "#   --decoder-first-pipeline-num-layers 1\n"
        "#   --decoder-last-pipeline-num-layers 1\n");
  CheckRoundTrip(Framework::Megatron, config);

  // The equivalent form, uncommented, reads back as the same split.
  const std::string uneven =
      "--pipeline-model-parallel-size 4\n"
      "--decoder-first-pipeline-num-layers 1\n"
      "--decoder-last-pipeline-num-layers 1\n"
      "--recompute-granularity full\n"
      "--recompute-method block\n"
      "--recompute-num-layers 2\n";
  auto back = ParseMegatronArgs(uneven, config.layers);
  REQUIRE(back.ok());
  CHECK(back->strategy.layers_per_stage == config.strategy.layers_per_stage);
  CHECK(back->strategy.recompute == config.strategy.recompute);
}

// Interleaved v = 2 with full + selective recompute per stage. By hand: 8
// decoder layers over 8 stages, base 1; stages hold E+0, 1, 2, 1 | 1, 1, 2,
// 0+L decoders: offset [[-1, 0, 1, 0], [0, 0, 1, -1]] (sum 0 = 8 mod 8).
// recompute (full) first [0,1,1,0 | 1,0,1,0]; selective follows full on
// stage 2 (2 = full 1 + selective 1) and stage 5 (1).
TEST_CASE("emit golden: MindFormers, interleaved v=2, recompute lists") {
  const RunConfig config =
      Load(Model() +
           "pipeline: {stages: 4, virtual_stages: 2, microbatches: 8, schedule: "
           "interleaved}\n"
           "strategy:\n"
           "  layers_per_chunk: [[1, 1, 2, 1], [1, 1, 2, 1]]\n"
           "  allow_empty_chunks: false\n"
           "  recompute:\n"
           "    full: [[0, 1, 1, 0], [1, 0, 1, 0]]\n"
           "    selective: [[0, 1, 2, 0], [1, 1, 1, 0]]\n");
  CHECK(EmitText(Framework::MindFormers, config) ==
        "# ppb: MindFormers settings for tiny: schedule interleaved, p=4, "
        "v=2, m=8, g=4\n"
        "parallel:\n"
        "  pipeline_config:\n"
        "    pipeline_interleave: true\n"
        "    pipeline_scheduler: '1f1b'\n"
        "parallel_config:\n"
        "  pipeline_stage: 4\n"
        "  micro_batch_num: 8\n"
        "model:\n"
        "  model_config:\n"
        "    num_layers: 8\n"
        "    pp_interleave_num: 2\n"
        "    offset: [[-1, 0, 1, 0], [0, 0, 1, -1]]\n"
        "recompute_config:\n"
        "  recompute: [[0, 1, 1, 0], [1, 0, 1, 0]]\n"
        "  select_recompute: [[0, 1, 2, 0], [1, 1, 1, 0]]\n"
        "  select_comm_recompute: false\n"
        "# ppb: stage layers = num_layers // (p*v) + offset = 1 + offset "
        "(sum(offset) =\n"
        "# ppb: num_layers mod p*v = 0); num_layers counts decoder layers "
        "only, the\n"
        "# ppb: embedding stays on stage 0, the last stage also holds the "
        "head\n");
  for (Framework f : {Framework::Megatron, Framework::MindFormers, Framework::Torchtitan,
                      Framework::Torchtitan022}) {
    CheckRoundTrip(f, config);
  }
}

// torchtitan and DeepSpeed for the even split with full recompute on every
// decoder layer: one stage per rank, module names in model order, AC "full";
// DeepSpeed parts are the prefix sums 0, 3, 5, 7, 10 and interval 1.
TEST_CASE("emit golden: torchtitan and DeepSpeed, full recompute") {
  const RunConfig config = Load(Model() +
                                "pipeline: {stages: 4, microbatches: 8}\n"
                                "strategy:\n"
                                "  layers_per_chunk: [[3, 2, 2, 3]]\n"
                                "  recompute: {full: true}\n");
  // torchtitan main: Trainer.Config fields, the head is lm_head, the AC
  // policy object FullAC.Config() (imported; its default is SelectiveAC),
  // the micro-batches in num_pp_microbatches and CUDA graphs off under PP.
  CHECK(EmitText(Framework::Torchtitan, config) ==
        "# ppb: torchtitan main at b5bcd76c (2026-08-21; Python Trainer.Config) for\n"
        "# ppb: tiny: schedule 1f1b, p=4, v=1, m=8\n"
        "# ppb: set on the Trainer.Config your --module/--config function returns\n"
        "from torchtitan.distributed.activation_checkpoint import FullAC\n"
        "config.parallelism.pipeline_parallel_degree = 4\n"
        "config.parallelism.pipeline_parallel_schedule = \"1F1B\"\n"
        "config.parallelism.module_fqns_per_model_part = [\n"
        "  [\"tok_embeddings\", \"layers.0\", \"layers.1\"],\n"
        "  [\"layers.2\", \"layers.3\"],\n"
        "  [\"layers.4\", \"layers.5\"],\n"
        "  [\"layers.6\", \"layers.7\", \"norm\", \"lm_head\"],\n"
        "]\n"
        "config.parallelism.num_pp_microbatches = 8\n"
        "config.training.disable_cuda_graphs = True\n"
        "config.activation_checkpoint = FullAC.Config()\n"
        "# ppb: stage s = chunk * p + rank (torchtitan's loop style), 1 stage(s) per\n"
        "# ppb: rank\n"
        "# ppb: set training.num_tokens_per_microbatch_per_dp_rank to the tokens of one\n"
        "# ppb: micro-batch (micro-batch size x sequence length) and\n"
        "# ppb: training.max_context_length to the sequence length; the config gives no\n"
        "# ppb: training.seq_length\n");
  // torchtitan v0.2.2: the TOML job config, the head is output.
  CHECK(EmitText(Framework::Torchtitan022, config) ==
        "# ppb: torchtitan v0.2.2 (TOML job config) for tiny: schedule 1f1b, "
        "p=4, v=1,\n"
        "# ppb: m=8\n"
        "[parallelism]\n"
        "pipeline_parallel_degree = 4\n"
        "pipeline_parallel_schedule = \"1F1B\"\n"
        "module_fqns_per_model_part = [\n"
        "  [\"tok_embeddings\", \"layers.0\", \"layers.1\"],\n"
        "  [\"layers.2\", \"layers.3\"],\n"
        "  [\"layers.4\", \"layers.5\"],\n"
        "  [\"layers.6\", \"layers.7\", \"norm\", \"output\"],\n"
        "]\n"
        "\n"
        "[activation_checkpoint]\n"
        "mode = \"full\"\n"
        "# ppb: stage s = chunk * p + rank (torchtitan's loop style), 1 "
        "stage(s) per\n"
        "# ppb: rank; m = 8 micro-batches: set training.local_batch_size = 8 "
        "x\n"
        "# ppb: parallelism.pipeline_parallel_microbatch_size\n");
  CHECK(EmitText(Framework::DeepSpeed, config) ==
        "# ppb: DeepSpeed PipelineModule settings for tiny: schedule 1f1b, "
        "p=4, v=1, m=8\n"
        "num_stages = 4\n"
        "parts = [0, 3, 5, 7, 10]\n"
        "activation_checkpoint_interval = 1\n"
        "gradient_accumulation_steps = 8\n"
        "# ppb: stage s holds layers[parts[s]:parts[s+1]] of the "
        "PipelineModule's layer\n"
        "# ppb: list, one entry per ppb layer in order (embedding first, head "
        "last);\n"
        "# ppb: partition_method 'parameters', 'uniform' and 'type:<regex>' "
        "compute\n"
        "# ppb: their own boundaries, so set PipelineModule.parts to these;\n"
        "# ppb: gradient_accumulation_steps (DeepSpeed config) = micro-batches "
        "per step\n"
        "# ppb: at interval 1 DeepSpeed checkpoints every layer with "
        "parameters;\n"
        "# ppb: PipelineModule's checkpointable_layers (class names) keeps it "
        "to the\n"
        "# ppb: layers ppb recomputes (those offering full)\n");
  for (Framework f : kAll) CheckRoundTrip(f, config);
  // Megatron: every decoder layer full = uniform with one layer per unit.
  CHECK_THAT(EmitText(Framework::Megatron, config), Catch::Contains("--recompute-method uniform\n"
                                                                    "--recompute-num-layers 1\n"));
}

TEST_CASE("emit round trips: uneven, v=2, v=4, own stages, MTP, selective") {
  SECTION("uneven v=1, selective on the first layers (a note for Megatron)") {
    const RunConfig config = Load(Model() +
                                  "pipeline: {stages: 4, microbatches: 8}\n"
                                  "strategy:\n"
                                  "  layers_per_chunk: [[4, 2, 2, 2]]\n"
                                  "  recompute: {selective: [2, 1, 0, 0]}\n");
    for (Framework f : kAll) CheckRoundTrip(f, config);
    auto e = EmitFor(Framework::Megatron, config);
    REQUIRE(e.ok());
    CHECK_FALSE(e->recompute_expressed);
    CHECK_THAT(e->text, Catch::Contains("# ppb: no recompute flags"));
    CHECK(e->text.find("--recompute-granularity") == std::string::npos);
    // MindFormers expresses it.
    auto mf = EmitFor(Framework::MindFormers, config);
    REQUIRE(mf.ok());
    CHECK(mf->recompute_expressed);
    CHECK_THAT(mf->text, Catch::Contains("offset: [1, 0, 0, -1]"));
    CHECK_THAT(mf->text, Catch::Contains("select_recompute: [2, 1, 0, 0]"));
  }
  SECTION("interleaved v=4, every decoder selective") {
    const RunConfig config = Load(Model(16) +
                                  "pipeline: {stages: 2, virtual_stages: 4, microbatches: 4, "
                                  "schedule: interleaved}\n"
                                  "strategy:\n"
                                  "  layers_per_chunk: [[3, 2], [2, 2], [2, 2], [2, 3]]\n"
                                  "  recompute: {selective: true}\n");
    for (Framework f : {Framework::Megatron, Framework::MindFormers, Framework::Torchtitan,
                        Framework::Torchtitan022}) {
      CheckRoundTrip(f, config);
    }
    const std::string megatron = EmitText(Framework::Megatron, config);
    CHECK_THAT(megatron, Catch::Contains("--recompute-granularity selective\n"));
    // Two decoders per chunk everywhere: the default even split with v = 4.
    CHECK_THAT(megatron, Catch::Contains("#   --num-virtual-stages-per-pipeline-rank 4"));
    CHECK_THAT(Refusal(Framework::DeepSpeed, config), Catch::Contains("one stage per rank"));
  }
  SECTION("embedding and head on their own stages") {
    const RunConfig config = Load(Model() +
                                  "pipeline: {stages: 4, microbatches: 8}\n"
                                  "strategy: {layers_per_chunk: [[1, 4, 4, "
                                  "1]]}\n");
    for (Framework f : kAll) CheckRoundTrip(f, config);
    CHECK_THAT(EmitText(Framework::Megatron, config), Catch::Contains("\"E|t*4|t*4|L\""));
    CHECK_THAT(EmitText(Framework::MindFormers, config), Catch::Contains("offset: [-2, 2, 2, -2]"));
    CHECK_THAT(EmitText(Framework::Torchtitan, config),
               Catch::Contains("  [\"tok_embeddings\"],\n") &&
                   Catch::Contains("  [\"norm\", \"lm_head\"],\n"));
    CHECK_THAT(EmitText(Framework::Torchtitan022, config),
               Catch::Contains("  [\"norm\", \"output\"],\n"));
    // Megatron's first/last form cannot leave a rank without decoders.
    CHECK_THAT(EmitText(Framework::Megatron, config), Catch::Contains("no --decoder-first/last"));
  }
  SECTION("MTP layers on the last stage, v=2") {
    const RunConfig config = Load(Model(8, 1) +
                                  "pipeline: {stages: 2, virtual_stages: 2, microbatches: 4, "
                                  "schedule: interleaved}\n"
                                  "strategy:\n"
                                  "  layout: \"Et*2|t*2|t*2|t*2,m,L\"\n"
                                  "  recompute: {full: [[1, 1], [1, 1]]}\n");
    for (Framework f : {Framework::Megatron, Framework::MindFormers}) {
      CheckRoundTrip(f, config);
    }
    const std::string megatron = EmitText(Framework::Megatron, config);
    CHECK_THAT(megatron, Catch::Contains("\"Et*2|t*2|t*2|t*2mL\""));
    CHECK_THAT(megatron, Catch::Contains("--mtp-num-layers 1"));
    CHECK_THAT(megatron, Catch::Contains("--recompute-method block"));
    CHECK_THAT(Refusal(Framework::Torchtitan, config),
               Catch::Contains("MTP does not support pipeline parallelism yet."));
  }
  // MultiTokenPredictionLayer (Megatron-LM 00611e6e) checkpoints the MTP
  // layer under --recompute-granularity full with method uniform and skips
  // it under block: every layer full including mtp.0 is uniform, every
  // decoder full without mtp.0 is block N (N = the most decoders of a
  // stage, 5 - 1 = 4 and 6 - 2 = 4).
  SECTION("MTP recompute: Megatron's uniform covers the MTP layer, block does not") {
    const RunConfig all = Load(Model(8, 1) +
                               "pipeline: {stages: 2, microbatches: 4}\n"
                               "strategy:\n"
                               "  layers_per_chunk: [[5, 6]]\n"
                               "  recompute: {full: true}\n");
    REQUIRE(all.strategy.recompute[9] != 0);  // mtp.0 full
    const std::string uniform = EmitText(Framework::Megatron, all);
    CHECK_THAT(uniform, Catch::Contains("--recompute-granularity full\n"
                                        "--recompute-method uniform\n"
                                        "--recompute-num-layers 1\n"));
    CheckRoundTrip(Framework::Megatron, all);
    RunConfig decoders_only = all;
    decoders_only.strategy.recompute[9] = 0;
    const std::string block = EmitText(Framework::Megatron, decoders_only);
    CHECK_THAT(block, Catch::Contains("--recompute-method block\n"
                                      "--recompute-num-layers 4\n"));
    CheckRoundTrip(Framework::Megatron, decoders_only);
    // mtp.0 alone: no flag reaches it without the decoders.
    RunConfig mtp_only = all;
    mtp_only.strategy.recompute.assign(all.layers.size(), 0);
    mtp_only.strategy.recompute[9] = all.strategy.recompute[9];
    auto e = EmitFor(Framework::Megatron, mtp_only);
    REQUIRE(e.ok());
    CHECK_FALSE(e->recompute_expressed);
  }
  SECTION("MTP recompute: Megatron notes, MindFormers notes") {
    const RunConfig config = Load(Model(8, 1) +
                                  "pipeline: {stages: 2, microbatches: 4}\n"
                                  "strategy:\n"
                                  "  layers_per_chunk: [[5, 6]]\n"
                                  "  recompute: {layers: {mtp.0: full}}\n");
    for (Framework f : {Framework::Megatron, Framework::MindFormers, Framework::DeepSpeed}) {
      CheckRoundTrip(f, config);
      auto e = EmitFor(f, config);
      REQUIRE(e.ok());
      CHECK_FALSE(e->recompute_expressed);
    }
  }
}

// SAPP's mode names map to MindFormers' three lists: full first, then the
// layers in both select lists, then those in one (by hand: stage 0 holds
// decoder.0 full, decoder.1 both, decoder.2 select_comm; stage 1 decoder.3
// select_comm: recompute [1,0,0,0], select [2,0,0,0], comm [3,1,0,0]).
TEST_CASE("emit MindFormers: select and select_comm lists") {
  const RunConfig config = Load(
      "model:\n"
      "  layers:\n"
      "    - {name: embedding, kind: embedding, forward: 1ms, backward: 2ms}\n"
      "    - name: decoder\n"
      "      repeat: 8\n"
      "      forward: 1ms\n"
      "      backward: 2ms\n"
      "      recompute:\n"
      "        full: {activation: 0B, time: 1ms}\n"
      "        selective: {activation: 0B, time: 0.1ms}\n"
      "        select_comm: {activation: 0B, time: 0.1ms}\n"
      "        both_comm_select: {activation: 0B, time: 0.2ms}\n"
      "    - {name: head, kind: head, forward: 1ms, backward: 2ms}\n"
      "cluster: {devices: {memory: 80GiB}}\n"
      "pipeline: {stages: 4, microbatches: 8}\n"
      "strategy:\n"
      "  layers_per_chunk: [[4, 2, 2, 2]]\n"
      "  recompute: {full: [1, 0, 0, 0], both_comm_select: [2, 0, 0, 0], "
      "select_comm: [3, 1, 0, 0]}\n");
  const std::string text = EmitText(Framework::MindFormers, config);
  CHECK_THAT(text, Catch::Contains("  recompute: [1, 0, 0, 0]\n"
                                   "  select_recompute: [2, 0, 0, 0]\n"
                                   "  select_comm_recompute: [3, 1, 0, 0]\n"));
  CheckRoundTrip(Framework::MindFormers, config);
  // Megatron cannot express mixed modes: a note, no flags.
  auto megatron = EmitFor(Framework::Megatron, config);
  REQUIRE(megatron.ok());
  CHECK_FALSE(megatron->recompute_expressed);
}

TEST_CASE("emit refusals name the framework rule") {
  SECTION("empty stages") {
    const RunConfig config = Load(Model() +
                                  "pipeline: {stages: 4, microbatches: 8}\n"
                                  "strategy:\n"
                                  "  allow_empty_chunks: true\n"
                                  "  layers_per_chunk: [[5, 0, 2, 3]]\n");
    // Megatron's layout allows empty middle stages (conventions.md).
    CheckRoundTrip(Framework::Megatron, config);
    CHECK_THAT(EmitText(Framework::Megatron, config), Catch::Contains("\"Et*4||t*2|t*2L\""));
    for (Framework f : {Framework::MindFormers, Framework::Torchtitan, Framework::DeepSpeed}) {
      CHECK_THAT(Refusal(f, config), Catch::Contains("stage 1 (chunk 0, rank 1)"));
    }
    const RunConfig first_empty = Load(Model() +
                                       "pipeline: {stages: 4, microbatches: 8}\n"
                                       "strategy:\n"
                                       "  allow_empty_chunks: true\n"
                                       "  layers_per_chunk: [[0, 5, 2, 3]]\n");
    CHECK_THAT(Refusal(Framework::Megatron, first_empty), Catch::Contains("first symbol E"));
  }
  SECTION("MTP outside a rank's last chunk") {
    // 11 layers: E, decoder.0-7, mtp.0, head; mtp.0 on stage 1 = chunk 0.
    const RunConfig bad = Load(Model(8, 1) +
                               "pipeline: {stages: 2, virtual_stages: 2, microbatches: 4, "
                               "schedule: interleaved}\n"
                               "strategy: {allow_empty_chunks: true, layers_per_chunk: [[5, 5], "
                               "[0, 1]]}\n");
    CHECK_THAT(Refusal(Framework::Megatron, bad),
               Catch::Contains("needs MTP layers in a rank's last chunk "
                               "(Megatron-LM layout rule); got mtp.0 in stage "
                               "1 (chunk 0, rank 1)"));
    // MindFormers keeps MTP with the head on the last stage.
    const RunConfig v1 = Load(Model(8, 1) +
                              "pipeline: {stages: 2, microbatches: 4}\n"
                              "strategy: {layers_per_chunk: [[10, 1]]}\n");
    CheckRoundTrip(Framework::Megatron, v1);
    CHECK_THAT(Refusal(Framework::MindFormers, v1),
               Catch::Contains("head and MTP layers on the last"));
  }
  SECTION("models without one embedding first and one head last") {
    const RunConfig config = Load(
        "model:\n"
        "  layers:\n"
        "    - {name: block, repeat: 4, forward: 1ms, backward: 2ms}\n"
        "cluster: {devices: {memory: 8GiB}}\n"
        "pipeline: {stages: 2, microbatches: 2}\n");
    CHECK_THAT(Refusal(Framework::Megatron, config),
               Catch::Contains("first layer to be its embedding"));
    CHECK_THAT(Refusal(Framework::Torchtitan, config),
               Catch::Contains("first layer to be its embedding"));
    // DeepSpeed takes any layer list.
    CheckRoundTrip(Framework::DeepSpeed, config);
  }
}

TEST_CASE("emit readers apply the frameworks' rules") {
  const RunConfig config = Load(Model() + "pipeline: {stages: 4, microbatches: 8}\n");
  const std::vector<Layer>& layers = config.layers;
  SECTION("MindFormers: sum(offset) = num_layers mod p*v") {
    const std::string text =
        "parallel_config: {pipeline_stage: 4, micro_batch_num: 8}\n"
        "model: {model_config: {num_layers: 8, offset: [1, 0, 0, 0]}}\n";
    CHECK_THAT(ParseError(Framework::MindFormers, text, layers),
               Catch::Contains("must add up to num_layers mod p*v = 8 mod 4 = "
                               "0 (MindFormers); got 1"));
    const std::string wrong_l =
        "parallel_config: {pipeline_stage: 4}\n"
        "model: {model_config: {num_layers: 10, offset: 0}}\n";
    CHECK_THAT(ParseError(Framework::MindFormers, wrong_l, layers),
               Catch::Contains("8 decoder layers"));
    const std::string ok =
        "parallel_config: {pipeline_stage: 4}\n"
        "model: {model_config: {num_layers: 8, offset: [1, 0, 0, -1]}}\n"
        "recompute_config: {recompute: [1, 0, 0, 0], select_recompute: [3, "
        "0, 0, 0]}\n";
    auto plan = ParseMindFormersYaml(ok, layers);
    REQUIRE(plan.ok());
    CHECK(plan->strategy.layers_per_stage == std::vector<int>{4, 2, 2, 2});
    // Stage 0: decoder.0 full (option 1), decoder.1-2 selective (option 2).
    std::vector<std::uint8_t> want(layers.size(), 0);
    want[1] = 1;
    want[2] = want[3] = 2;
    CHECK(plan->strategy.recompute == want);
  }
  SECTION("MindFormers: a mode the layers do not offer") {
    const std::string both =
        "parallel_config: {pipeline_stage: 4}\n"
        "model: {model_config: {num_layers: 8}}\n"
        "recompute_config: {select_recompute: [2, 0, 0, 0], "
        "select_comm_recompute: [1, 0, 0, 0]}\n";
    CHECK_THAT(ParseError(Framework::MindFormers, both, layers),
               Catch::Contains("offers no recompute mode both_comm_select"));
  }
  SECTION("Megatron: layout stages, uneven divisibility, exclusive flags") {
    CHECK_THAT(ParseError(Framework::Megatron,
                          "--pipeline-model-parallel-size 4\n"
                          "--pipeline-model-parallel-layout \"Et*4|t*4L\"\n",
                          layers),
               Catch::Contains("must be divisible by "
                               "--pipeline-model-parallel-size 4"));
    CHECK_THAT(ParseError(Framework::Megatron,
                          "--pipeline-model-parallel-size 4\n"
                          "--decoder-first-pipeline-num-layers 1\n",
                          layers),
               Catch::Contains("the 7 decoder layers left must divide over "
                               "the 3 other ranks"));
    CHECK_THAT(ParseError(Framework::Megatron,
                          "--pipeline-model-parallel-size 2\n"
                          "--num-virtual-stages-per-pipeline-rank 2\n"
                          "--decoder-first-pipeline-num-layers 3\n"
                          "--decoder-last-pipeline-num-layers 5\n",
                          layers),
               Catch::Contains("(3) must be divisible by v = 2"));
    CHECK_THAT(ParseError(Framework::Megatron,
                          "--pipeline-model-parallel-size 2\n"
                          "--num-virtual-stages-per-pipeline-rank 2\n"
                          "--pipeline-model-parallel-layout "
                          "\"Et*2|t*2|t*2|t*2L\"\n",
                          layers),
               Catch::Contains("must not be given with"));
    CHECK_THAT(ParseError(Framework::Megatron,
                          "--pipeline-model-parallel-size 4\n"
                          "--pipeline-model-parallel-layout "
                          "\"Et*2|t*2|t*2|t*3L\"\n",
                          layers),
               Catch::Contains("expected 'L' (loss/head) for layer 9"));
    // Megatron's default even split: 8 / 4 per rank.
    auto even = ParseMegatronArgs("--pipeline-model-parallel-size 4\n", layers);
    REQUIRE(even.ok());
    CHECK(even->strategy.layers_per_stage == std::vector<int>{3, 2, 2, 3});
  }
  SECTION("torchtitan: every module once, in order") {
    CHECK_THAT(ParseError(Framework::Torchtitan022,
                          "[parallelism]\n"
                          "pipeline_parallel_degree = 2\n"
                          "module_fqns_per_model_part = [[\"tok_embeddings\", "
                          "\"layers.1\"], [\"layers.0\"]]\n",
                          layers),
               Catch::Contains("expected \"layers.0\" next"));
    CHECK_THAT(ParseError(Framework::Torchtitan022,
                          "[parallelism]\n"
                          "pipeline_parallel_degree = 2\n"
                          "pipeline_parallel_schedule = \"1F1B\"\n"
                          "module_fqns_per_model_part = [\n"
                          "  [\"tok_embeddings\", \"layers.0\"],\n"
                          "  [\"layers.1\", \"layers.2\"],\n"
                          "  [\"layers.3\", \"layers.4\", \"layers.5\"],\n"
                          "  [\"layers.6\", \"layers.7\", \"norm\", "
                          "\"output\"],\n"
                          "]\n",
                          layers),
               Catch::Contains("1F1B runs one stage per rank"));
    // Current torchtitan names the head lm_head: v0.2.2's "output" is not
    // a module of it, and TOML keys are not Trainer.Config fields.
    CHECK_THAT(ParseError(Framework::Torchtitan,
                          "config.parallelism.pipeline_parallel_degree = 2\n"
                          "config.parallelism.module_fqns_per_model_part = [\n"
                          "  [\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\"],\n"
                          "  [\"layers.3\", \"layers.4\", \"layers.5\", \"layers.6\", "
                          "\"layers.7\", \"norm\", \"output\"],\n"
                          "]\n",
                          layers),
               Catch::Contains("expected \"lm_head\" next"));
    CHECK_THAT(ParseError(Framework::Torchtitan,
                          "[parallelism]\npipeline_parallel_degree = 2\n", layers),
               Catch::Contains("parallelism.pipeline_parallel_degree: not a key of torchtitan "
                               "main at b5bcd76c"));
  }
  SECTION("DeepSpeed: boundaries cover the layers") {
    CHECK_THAT(ParseError(Framework::DeepSpeed,
                          "num_stages = 4\nparts = [0, 3, 5, 7, 9]\n"
                          "activation_checkpoint_interval = 0\n",
                          layers),
               Catch::Contains("from 0 to the 10 layers"));
  }
}

// Megatron's interleaved order with g = 3 is not torch's Interleaved1F1B
// (g = m / max(1, m / p) = 2): torchtitan gets the simulated order as CSV.
TEST_CASE(
    "emit torchtitan writes the schedule CSV when torch runs another "
    "order") {
  const RunConfig config =
      Load(Model() +
           "pipeline: {stages: 2, virtual_stages: 2, microbatches: 6, schedule: "
           "interleaved, microbatch_group: 3}\n");
  const Program program = ProgramOf(config);
  auto e = Emit(Framework::Torchtitan, config, program);
  REQUIRE(e.ok());
  CHECK(e->schedule_csv == DumpScheduleCsv(program));
  CHECK_THAT(e->text, Catch::Contains("config.parallelism.pipeline_parallel_schedule = "
                                      "\"PipelineScheduleMulti\"\n"
                                      "config.parallelism.pipeline_parallel_schedule_csv = "
                                      "\"ppb-schedule.csv\"\n"));
  CheckRoundTrip(Framework::Torchtitan022, config);
  CHECK_THAT(FormatEmissionsText({*e}), Catch::Contains("==== ppb emit: torchtitan schedule CSV "
                                                        "(ppb-schedule.csv) ====\n" +
                                                        e->schedule_csv));
  CheckRoundTrip(Framework::Torchtitan, config);
  // The same with g = 2 is torch's order: no CSV.
  RunConfig torch_g = config;
  torch_g.schedule_params.group = 2;
  auto plain = Emit(Framework::Torchtitan, torch_g, ProgramOf(torch_g));
  REQUIRE(plain.ok());
  CHECK(plain->schedule_csv.empty());
  CHECK_THAT(plain->text, Catch::Contains("\"Interleaved1F1B\""));
  // Megatron gets the group flag (g != p).
  CHECK_THAT(EmitText(Framework::Megatron, config),
             Catch::Contains("--microbatch-group-size-per-virtual-pipeline-stage 3\n"));
}

TEST_CASE("ppb-sim --emit: text after the report, JSON object, file, errors") {
  const std::string configs = PPB_CONFIGS_DIR;
  const std::string interleaved = configs + "/interleaved.yaml";
  SECTION("text") {
    auto r = test::Cli(
        {"--config", interleaved, "--emit", "megatron", "--emit", "mindformers,torchtitan"});
    REQUIRE(r.status == 0);
    const size_t report = r.out.find("iteration");
    const size_t m = r.out.find("==== ppb emit: megatron ====\n");
    const size_t mf = r.out.find("==== ppb emit: mindformers ====\n");
    const size_t tt = r.out.find("==== ppb emit: torchtitan ====\n");
    CHECK(report < m);
    CHECK(m < mf);
    CHECK(mf < tt);
    CHECK(tt != std::string::npos);
    CHECK_THAT(r.out, Catch::Contains("\"Et*3|t*4|t*4|t*5|t*5|t*4|t*4|t*3L\""));
  }
  SECTION("json") {
    auto r = test::Cli({"--config", interleaved, "--format", "json", "--emit", "mindformers"});
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["schema"] == "ppb.sim/1");
    CHECK_THAT(j["emit"]["mindformers"]["text"].get<std::string>(),
               Catch::Contains("pp_interleave_num: 2"));
    CHECK(j["emit"]["mindformers"]["recompute_expressed"] == true);
  }
  SECTION("file") {
    const std::string path =
        (std::filesystem::temp_directory_path() / "ppb-test-emit.txt").string();
    auto r = test::Cli({"--config", interleaved, "--emit", "megatron", "--emit-file", path});
    REQUIRE(r.status == 0);
    CHECK(r.out.find("==== ppb emit") == std::string::npos);
    std::ifstream f(path);
    std::stringstream text;
    text << f.rdbuf();
    CHECK_THAT(text.str(), Catch::StartsWith("==== ppb emit: megatron ====\n"));
    std::filesystem::remove(path);
  }
  SECTION("bad name, refusal, file without --emit: exit 2, one message") {
    auto bad = test::Cli({"--config", interleaved, "--emit", "nemo"});
    CHECK(bad.status == 2);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, Catch::Contains("--emit: expected megatron"));
    auto refused = test::Cli({"--config", interleaved, "--emit", "deepspeed"});
    CHECK(refused.status == 2);
    CHECK(refused.out.empty());
    CHECK(refused.err ==
          "ppb-sim: --emit deepspeed: runs one stage per rank (PipelineModule "
          "num_stages = pipeline ranks, no interleaving); got v = 2\n");
    auto alone = test::Cli({"--config", interleaved, "--emit-file", "x.txt"});
    CHECK(alone.status == 2);
    CHECK_THAT(alone.err, Catch::Contains("needs --emit"));
  }
  SECTION("search emits the recommendation under its schedule and v") {
    auto r = test::Cli({"search", "--config", interleaved, "--node-limit", "200", "--threads", "1",
                        "--emit", "megatron"});
    REQUIRE(r.status == 0);
    const size_t m = r.out.find("==== ppb emit: megatron ====\n");
    REQUIRE(m != std::string::npos);
    // The emitted layout is the recommendation's.
    const size_t layout = r.out.find("layout            ");
    REQUIRE(layout != std::string::npos);
    const size_t end = r.out.find('\n', layout);
    const std::string best = r.out.substr(layout + 18, end - layout - 18);
    CHECK_THAT(r.out.substr(m),
               Catch::Contains("--pipeline-model-parallel-layout \"" + best + "\"\n"));
    auto j = test::Cli({"search", "--config", interleaved, "--node-limit", "200", "--threads", "1",
                        "--format", "json", "--emit", "torchtitan"});
    REQUIRE(j.status == 0);
    CHECK(nlohmann::json::parse(j.out)["emit"].contains("torchtitan"));
  }
}


// torch has no zb-1p (empty torch_name): torchtitan gets the order as CSV,
// never an empty schedule name.
TEST_CASE("emit torchtitan writes the schedule CSV for zb-1p") {
  const RunConfig config =
      Load(Model() + "pipeline: {stages: 2, microbatches: 4, schedule: zb-1p}\n");
  const Program program = ProgramOf(config);
  auto e = Emit(Framework::Torchtitan, config, program);
  REQUIRE(e.ok());
  CHECK(e->schedule_csv == DumpScheduleCsv(program));
  CHECK_THAT(e->text, Catch::Contains("pipeline_parallel_schedule = "
                                      "\"PipelineScheduleMulti\"\n"));
  CHECK_THAT(e->text, Catch::Contains("torch has no schedule zb-1p"));
  CHECK_THAT(e->text, !Catch::Contains("pipeline_parallel_schedule = \"\""));
}

}  // namespace ppb
