// The space `ppb-sim plan` searches: every whole-job layout (TP x CP x EP x
// PP x DP, micro-batch size, SP, distributed optimizer, schedule and v,
// recompute choice) the plan block's lists and the model allow, each
// checked against the rules below before any cost is spent, the refusals
// counted by reason. The job is a value (PlanJob: the model's layers and
// shape, training, hardware), read once by the caller; how a layout is
// then applied to it is the caller's (apps/input/layout_document.h).
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

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/architecture.h"
#include "core/model.h"
#include "core/process_memory.h"
#include "schedules/schedule.h"
#include "search/deployable.h"
#include "search/plan/plan_layout.h"

namespace ppb {

// The `plan:` block of a job (read by apps/input/config_plan.cpp): the
// space of whole-job layouts on `gpus` GPUs. An empty list means every
// value the model and the cluster allow (the rules above say which);
// values are distinct and validated one by one by the reader, their
// combinations here.
struct PlanSettings {
  int gpus = 0;  // t x cp x p x d
  std::vector<int> tensor_parallel, context_parallel, expert_parallel, pipeline_parallel,
      micro_batch_size, virtual_stages;
  std::vector<std::string> schedules;  // registry names
  std::vector<bool> sequence_parallel, distributed_optimizer;
  // "search" (per layer, as ppb-sim search), "none", or a recompute mode
  // the layers offer ("selective", "full": on every layer that offers it).
  std::vector<std::string> recompute;
  // plan.precision: bf16 | fp8-delayed | fp8-tensorwise | fp8-blockwise |
  // mxfp8 | nvfp4 (empty: the file's own).
  std::vector<std::string> precision;
  // plan.data_parallel_sharding: no_shard | optim | optim_grads |
  // optim_grads_params (core/sharding.h), in place of
  // distributed_optimizer (empty: that list, or the file's own strategy
  // when it sets one past optim or an FSDP).
  std::vector<std::string> data_parallel_sharding;
  // plan.offload: "none" or a training.offload map, as flow YAML text
  // (empty: the file's own).
  std::vector<std::string> offload;
  // plan.moe: "none" or a training.moe map (dispatcher, backend,
  // overlap_ep_comm, expert_tensor_parallel, ...), as flow YAML text
  // (empty: the file's own).
  std::vector<std::string> moe;
  DeployTarget target = DeployTarget::Any;
  Nanos time_limit = 60'000'000'000;  // 0: none
  int top = 10;
  MemoryHeadroom memory_headroom;
};

// The job whose layouts a plan enumerates, as the rules read it: the
// model's layers (any pipeline), its shape, training (sequence, global
// batch, sharding, the file's recipe) and hardware (the GPU, its NVLink
// domain, whether the step model is on).
struct PlanJob {
  std::vector<Layer> layers;
  Architecture architecture;
  Training training;
  Hardware hardware;
  bool allow_empty_chunks = false;
  ScheduleParams schedule_params;  // the file's (its group is not used)
};

struct PlanSpace {
  std::vector<PlanLayout> layouts;  // every combination that passed
  std::int64_t total = 0;           // every combination the lists make
  std::map<std::string, std::int64_t> refused;  // reason -> count
  // Combinations the enumeration did not reach before `past` said stop
  // (in `total`, neither refused nor in `layouts`).
  std::int64_t not_enumerated = 0;
};

// The layouts of `job` under `s`; `yours` (the config's own layout, when
// it has s.gpus GPUs) is added when the lists leave it out, and marked.
// `past` (optional) is asked every 1,024 steps whether the time limit has
// passed; then the enumeration stops and counts the rest as not enumerated.
PlanSpace EnumeratePlan(const PlanJob& job, const PlanSettings& s,
                        const PlanLayout* yours, const std::function<bool()>& past = {});

// Whether the job sets a data-parallel sharding the distributed-optimizer
// list cannot say (past optim, or an FSDP): its layouts keep it when the
// plan lists no sharding.
bool OwnSharding(const Training& t);

// An upper bound on the combinations the lists make (the product of their
// sizes), for refusing a space no plan could enumerate.
double PlanSpaceSize(const PlanJob& job, const PlanSettings& s);

}  // namespace ppb
