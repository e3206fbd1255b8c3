// What each framework's configuration can express of a strategy: the rules
// `search.target` restricts the search to and `--emit` writes by
// (apps/output/emit_*.cpp decide "recompute expressed" with the same
// functions, so the two cannot disagree). docs/framework-output.md names
// the version of each framework the rules are taken from.
//
// A strategy is deployable on a target when its split is (SplitRefusal is
// empty) and some recompute setting of the target (RecomputeSettings)
// gives every stage exactly the strategy's per-layer modes (StageAllowed).
// A setting is one run-wide choice of the framework's flags; given the
// setting, what a stage may recompute depends only on that stage's layers,
// which is what lets the search restrict each stage's recompute menu
// independently and take the best over the settings.
//
//   any          every per-layer choice (one setting, no restriction).
//   mindformers  recompute / select_recompute / select_comm_recompute: the
//                first N decoder layers of each stage per list (LayerSetting,
//                mindspore-lab/mindformers at 0afce880), full winning over
//                the select lists: a stage's decoder layers run full, then
//                both select lists, then one of selective / select_comm,
//                then none (nested prefixes); embedding, head, MTP none.
//   megatron     one granularity per run (NVIDIA/Megatron-LM at 00611e6e):
//                none; selective on every decoder (an MTP layer's inner
//                layer selective when ppb offers it); full uniform (every
//                decoder and MTP layer full); full block N (the first
//                min(N, decoders) decoder layers of every stage, no MTP).
//   torchtitan   activation_checkpoint None or FullAC.Config() on every
//                transformer block (torchtitan main at b5bcd76c).
//   deepspeed    activation_checkpoint_interval 0 or 1: none, or full on
//                every layer that offers it.
// Other layers never recompute under a framework target.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"

namespace ppb {

enum class DeployTarget : std::uint8_t { Any, Megatron, MindFormers, Torchtitan, DeepSpeed };

// "any", "megatron", "mindformers", "torchtitan", "deepspeed".
const char* TargetName(DeployTarget t);
// The target named `name` (lower case as above); nullopt if none.
std::optional<DeployTarget> TargetFromName(std::string_view name);
// The framework targets (every target but Any), in the order above.
const std::vector<DeployTarget>& FrameworkTargets();

// Options 1..n of a layer in the order the layers of a stage take them:
// MindFormers' list order full, both_comm_select, selective, select_comm
// (its first-N lists, full winning over the select lists), then any other
// mode in the layer's order. Within a group of identical layers this order
// changes neither time nor peak; it is the one that makes the most
// strategies expressible.
std::vector<std::size_t> ModeOrder(const std::vector<RecomputeOption>& options);

// One run-wide recompute setting of a target.
struct RecomputeSetting {
  enum class Kind : std::uint8_t {
    Free,   // any per-layer choice (target any)
    Lists,  // MindFormers' first-N lists per stage
    Every,  // `mode` on every layer the target's rule names ("" = none)
    Block,  // Megatron's block method: first n decoders of each stage full
  };
  DeployTarget target = DeployTarget::Any;
  Kind kind = Kind::Free;
  std::string mode;
  int n = 0;
};

// The settings of `target` that `layers` can take (one giving a layer a mode
// it does not offer is left out): any -> {Free}; mindformers -> {Lists};
// megatron -> none, selective, full uniform, block 1..D-1 (D decoders; and
// block D when MTP layers tell it from uniform); torchtitan, deepspeed -> none, full.
std::vector<RecomputeSetting> RecomputeSettings(DeployTarget target, const std::vector<Layer>& layers);

// The framework's flags for s, for reports ("--recompute-granularity selective").
// Whether framework `target` runs schedule `schedule` itself: Megatron-LM
// runs 1F1B and interleaved 1F1B only (core 0.20 schedules.py
// get_forward_backward_func); the others any schedule (their other rules
// are ChoiceRefusal's). Shared by the plan's space and the emitters.
bool TargetRunsSchedule(DeployTarget target, const std::string& schedule);

std::string DescribeSetting(const RecomputeSetting& s);

// The option indexes (0 = none) layer l may take in a stage holding layers
// [i, j) under setting s, ascending. Free and Lists give a set; Every and
// Block exactly one.
std::vector<std::uint8_t> AllowedModes(const RecomputeSetting& s, const std::vector<Layer>& layers,
                                       int i, int j, int l);

// Whether per-layer modes rc[i..j) (indexed by layer) of the stage holding
// layers [i, j) are what setting s gives that stage.
bool StageAllowed(const RecomputeSetting& s, const std::vector<Layer>& layers, int i, int j,
                  const std::vector<std::uint8_t>& rc);

// Why the framework cannot run the split (layers per global stage, p ranks,
// v chunks; v_placement: the schedule puts stages r and 2p-1-r on rank r);
// empty when it can.
std::string SplitRefusal(DeployTarget target, const std::vector<Layer>& layers,
                         const std::vector<int>& layers_per_stage, int p, int v,
                         bool v_placement);

// Why the framework cannot run any split of `layers` with v chunks (and the
// V placement when v_placement; p ranks, m micro-batches and micro-batch
// group `group`, 0: the framework's default; p = 0: not checked): the rules
// of SplitRefusal that do not depend on the split, and Megatron's group
// rule; empty when some split may be deployable.
std::string ChoiceRefusal(DeployTarget target, const std::vector<Layer>& layers, int v,
                          bool v_placement, int p = 0, int m = 0, int group = 0);

// Megatron-LM's rule on the micro-batch group g
// (--microbatch-group-size-per-virtual-pipeline-stage, default p) of every
// run with v > 1: p <= g <= m and m mod g = 0 or >= p
// (forward_backward_pipelining_with_interleaving in
// megatron/core/pipeline_parallel/schedules.py, NVIDIA/Megatron-LM at
// 00611e6e: ValueError outside [p, m], RuntimeError for a last group of
// fewer than p). Why g is refused; empty when Megatron runs it.
std::string MegatronGroupRefusal(int p, int g, int m);

// Whether every stage of `strategy` takes exactly the per-layer modes
// setting `s` gives it (StageAllowed stage by stage).
bool SettingAllows(const RecomputeSetting& s, const std::vector<Layer>& layers,
                   const Strategy& strategy);

// The setting of `target` that gives exactly the strategy's recompute, if
// any (the first in RecomputeSettings' order).
std::optional<RecomputeSetting> ExpressingSetting(DeployTarget target, const std::vector<Layer>& layers,
                                                  const Strategy& strategy);

// Split and recompute both expressible.
bool Deployable(DeployTarget target, const std::vector<Layer>& layers, const Strategy& strategy, int p,
                int v, bool v_placement);

}  // namespace ppb
