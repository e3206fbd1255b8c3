// The space `ppb-sim plan` searches: every whole-job layout (TP x CP x EP x
// PP x DP, micro-batch size, SP, distributed optimizer, schedule and v,
// recompute choice) the plan block's lists and the model allow, each
// checked against the rules below before any cost is spent, the refusals
// counted by reason; and the run config of one layout (the job's YAML
// document with the layout written into it, then the usual loader).
//
// Rules (Megatron-LM core 0.20, arguments.py validate_args and
// parallel_state.py, unless named otherwise):
//   - t x cp x p must divide plan.gpus (d = gpus / (t cp p));
//   - t divides the attention heads and the KV heads (attention.py divides
//     both) and fits an NVLink domain (a node on HGX/DGX, a rack on NVL72)
//     unless training.tp_across_nodes;
//   - cp splits the sequence into 2 x cp equal chunks (the load-balanced
//     causal split);
//   - ep divides the routed experts and d x cp (the expert rank generator);
//     ep > 1 needs a MoE model;
//   - the global batch is a multiple of d x micro_batch_size (m = GBS /
//     (d mbs));
//   - p x v stages at most the model's layers (every chunk holds a layer);
//   - the schedule's own rules (CheckSchedule) and the target's
//     (search/deployable.h ChoiceRefusal); megatron runs 1f1b and
//     interleaved only (schedules.py get_forward_backward_func).
// Sequence parallel needs t > 1 (Megatron turns it off at t = 1): at t = 1
// only sp = false is a layout. Each schedule takes the v it runs: gpipe,
// 1f1b and zb-1p/zb-2p v = 1; interleaved, looped-bfs and
// interleaved-zero-bubble each listed v >= 2; the V schedules (zb-v,
// zbv-zero-bubble, dualpipev) v = 2.
//
// Defaults of absent lists: t every power of two up to the NVLink domain,
// at most 8; cp the same; ep 1 (dense) or every power of two dividing
// the experts; p every divisor of the GPUs up to the decoder layers; mbs 1,
// 2, 4, 8; schedules 1f1b and interleaved; v 2 to 8; sp true; distributed
// optimizer true; recompute search.
//
// plan.precision adds the linears' recipe (default: the file's own): one
// the GPU cannot run is refused with the reason (core/precision.h
// RecipeRuns). Its layouts write training.fp8 / training.fp4; the file's
// fp8_param_gather stays where the distributed optimizer is on, its
// first_last_layers_bf16 where the recipe is not delayed.
//
// plan.data_parallel_sharding replaces the distributed-optimizer list with
// strategies (core/sharding.h; the file's training.fsdp decides whose FSDP,
// Megatron-FSDP by default); a file that sets a strategy past optim or an
// FSDP keeps its own when the plan lists none. plan.offload adds
// training.offload maps ("none": no offload). A combination the loader
// refuses (torch FSDP2 with a strategy other than optim_grads_params,
// layer-level offload under pipeline parallelism) is a refusal with its
// reason, counted.
//
// Deterministic: layouts in the nested order t, cp, ep, p, mbs, sp, dist-opt
// (or sharding), schedule, v, recompute, precision, offload (lists in the
// order given).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/config.h"
#include "search/plan/plan_layout.h"

namespace ppb {

struct PlanSpace {
  std::vector<PlanLayout> layouts;  // every combination that passed
  std::int64_t total = 0;           // every combination the lists make
  std::map<std::string, std::int64_t> refused;  // reason -> count
  // Combinations the enumeration did not reach before `past` said stop
  // (in `total`, neither refused nor in `layouts`).
  std::int64_t not_enumerated = 0;
};

// The layouts of `probe` (the job config loaded with any pipeline, whose
// plan block is `s`: layers, architecture, training and hardware) under
// `s`; `yours` (the config's own layout, when it has s.gpus GPUs) is added
// when the lists leave it out, and marked.
// `past` (optional) is asked every 1,024 steps whether the time limit has
// passed; then the enumeration stops and counts the rest as not enumerated.
PlanSpace EnumeratePlan(const RunConfig& probe, const PlanSettings& s,
                        const PlanLayout* yours, const std::function<bool()>& past = {});

// An upper bound on the combinations the lists make (the product of their
// sizes), for refusing a space no plan could enumerate.
double PlanSpaceSize(const RunConfig& probe, const PlanSettings& s);

// The job's document (YAML `text`) with `layout` written into it (training.*,
// pipeline.stages / virtual_stages / schedule; pipeline.microbatches and
// microbatch_group, the plan and the search lists removed;
// overlap_param_gather off without the distributed optimizer; a split of
// strategy.* removed, its recompute kept only where it names no per-stage
// counts), ready for ParseConfigYaml. With n_layers > 0 (the model's
// layers, at least p x v), strategy.layers_per_chunk is set to the most
// even counts per global stage (for a layout whose default even split the
// loader refuses). REQUIRES: `text` is valid YAML.
YAML::Node LayoutDocument(std::string_view text, const PlanLayout& layout, int n_layers = 0);

// The document the plan reads the job from: `text` as one layout with
// t = cp = ep = p = d = mbs = 1 (1f1b), so that the model, training and
// hardware load whatever the file's own layout.
YAML::Node ProbeDocument(std::string_view text);

// The file's own layout (training.*, pipeline.*; 1 where absent) with m from
// its global batch; nullopt without training.global_batch_size.
std::optional<PlanLayout> OwnLayout(const RunConfig& own);

}  // namespace ppb
