// Framework-ready output of a strategy (`--emit`): the layers per (chunk,
// rank) and the recompute of a run config, written the way Megatron-LM,
// MindFormers, torchtitan and DeepSpeed take them, and read back.
//
// Every emitted form follows the framework's own rules as gathered in
// ../shared/reference/conventions.md (cited by section below). An emitter
// refuses (an Error, exit 2 at the CLI) a strategy the framework cannot
// represent at all (an empty stage where it needs layers, layers it has no
// name for, interleaving it does not run); a representable split whose
// recompute the framework cannot express is emitted with a comment line
// "# ppb: ..." saying so, and without recompute settings. Before returning,
// each emitter parses its own text back with the parser below (which applies
// the framework's rules) and checks it gives the same split, and the same
// recompute where it claims to express it; so nothing is emitted that the
// framework would read as another split (e.g. layers dropped by a
// divisibility rule).
//
// Pure functions: text in, text out; same input, same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/config.h"
#include "core/model.h"
#include "core/program.h"
#include "core/result.h"

namespace ppb {

// Torchtitan is torchtitan main at b5bcd76c (Python Trainer.Config); Torchtitan022 the
// TOML job config of torchtitan v0.2.2 (apps/output/emit_torchtitan.cpp).
enum class Framework : std::uint8_t { Megatron, MindFormers, Torchtitan, Torchtitan022, DeepSpeed };

// The search.target whose rules (search/deployable.h) are the framework's:
// both torchtitan forms take torchtitan's.
DeployTarget TargetOf(Framework f);

// "megatron", "mindformers", "torchtitan", "torchtitan-0.2.2", "deepspeed".
const char* FrameworkName(Framework f);

// A --emit value: one name or a comma-separated list of them (any case);
// repeats are dropped, the order is kept. Errors name `flag`.
Result<std::vector<Framework>> ParseFrameworks(const std::string& flag, std::string_view text);

// One emitted form.
struct Emission {
  Framework framework = Framework::Megatron;
  std::string text;  // the fragment; ends with a newline
  // torchtitan only: the torch schedule CSV the fragment names
  // (pipeline_parallel_schedule_csv) when the simulated order is not the one
  // torch's named schedule runs; empty otherwise.
  std::string schedule_csv;
  // false when the strategy recomputes something the form cannot express
  // (the text then says so in a "# ppb:" line and sets no recompute).
  bool recompute_expressed = true;
};

// What a framework reads from an emitted form: the pipeline shape and the
// strategy (layers per global stage; per-layer recompute as in Strategy,
// all 0 where the form sets none).
struct EmittedPlan {
  int p = 1;
  int v = 1;
  int m = 0;  // micro-batches; 0 when the form does not say
  Strategy strategy;
};

// Emits `config`'s strategy under its schedule for `framework`. `program`
// is the order that was simulated (Prepare(config).program); torchtitan
// writes it as a schedule CSV when torch's named schedule runs another one.
// REQUIRES: config loaded and validated (LoadConfig), program valid for it.
Result<Emission> Emit(Framework framework, const RunConfig& config, const Program& program);

// Readers of the emitted forms, applying the framework's rules; `layers` is
// the model the form is for. They read what the emitters write (and the
// equivalent forms the emitters offer in comments once uncommented), not
// every file the framework accepts.
//   Megatron-LM: one "--flag value" per line ('#' lines ignored):
//     --pipeline-model-parallel-size, --pipeline-model-parallel-layout or
//     --decoder-first/last-pipeline-num-layers with
//     --num-virtual-stages-per-pipeline-rank, --recompute-granularity,
//     --recompute-method, --recompute-num-layers,
//     --microbatch-group-size-per-virtual-pipeline-stage.
//   MindFormers: the YAML fragment (parallel.pipeline_config,
//     parallel_config, model.model_config, recompute_config), read as
//     MindFormers' LayerSetting reads it.
//   torchtitan: "config.SECTION.KEY = value" assignments to torchtitan
//     main's Python Trainer.Config (parallelism, training, and
//     "config.activation_checkpoint = None | FullAC.Config()" after its
//     "from torchtitan.distributed.activation_checkpoint import FullAC"),
//     with main's checks (CUDA graphs off under PP, num_pp_microbatches >
//     0); torchtitan-0.2.2: the TOML fragment ([parallelism],
//     [activation_checkpoint]).
//   DeepSpeed: the Python assignments (num_stages, parts,
//     activation_checkpoint_interval, gradient_accumulation_steps).
Result<EmittedPlan> ParseMegatronArgs(std::string_view text, const std::vector<Layer>& layers);
Result<EmittedPlan> ParseMindFormersYaml(std::string_view text, const std::vector<Layer>& layers);
// `f` is Framework::Torchtitan or Framework::Torchtitan022.
Result<EmittedPlan> ParseTorchtitan(Framework f, std::string_view text,
                                    const std::vector<Layer>& layers);
Result<EmittedPlan> ParseDeepSpeed(std::string_view text, const std::vector<Layer>& layers);
Result<EmittedPlan> ParseEmission(Framework framework, std::string_view text,
                                  const std::vector<Layer>& layers);

// The emissions as text to print after a report: each form under a
// "==== ppb emit: NAME ====" line (and the CSV under its own line).
std::string FormatEmissionsText(const std::vector<Emission>& emissions);

// `json` (one JSON object, as FormatSimJson/FormatSearchJson write it) with
// an "emit" object added: {"megatron": {"text": ..., "recompute_expressed":
// ...}, "torchtitan": {..., "schedule_csv": ...}}. Same indentation.
std::string AddEmissionsToJson(const std::string& json, const std::vector<Emission>& emissions);

}  // namespace ppb
