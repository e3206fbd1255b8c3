// The adaptive zero-bubble schedules' shared vocabulary (Qi et al., "Zero
// Bubble Pipeline Parallelism", ICLR 2024, §3: ZB-1p / ZB-2p): the per-stage
// costs the heuristics plan with, the activation limit of each stage, and the
// order families that propose candidate orders. Not part of the public API.
//
// A candidate is one order per stage (v = 1: stage s is the only stage of its
// rank) of F, I and W ops. Every family keeps F and I in micro-batch order
// and W after its I, so a candidate never deadlocks; the limit is checked on
// the order itself (stashed activation depends only on the order of one
// rank), and zb_adaptive.cpp keeps the candidate with the shortest simulated
// iteration.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/spec.h"
#include "core/types.h"

namespace ppb::zb {

// What one stage costs, as the planners see it (integer ns and bytes).
struct StagePlan {
  Nanos f = 0;     // forward
  Nanos i = 0;     // input gradient, recompute included (it runs before I)
  Nanos w = 0;     // weight gradient
  Nanos comm = 0;  // message time to stage s+1 (and back): latency plus
                   // link occupancy; 0 on the last stage or the same device
  Bytes act = 0;   // stashed at the end of F
  Bytes held = 0;  // still held after I, released at the end of W
  Bytes limit = 0;  // most activation bytes the stage's rank may hold
};

struct Plan {
  int m = 0;
  std::vector<StagePlan> stages;  // by stage: p (v = 1), or 2p (zb-v)
};

// The planners' view of `spec` (its stage_device set): each stage's costs
// and message time to the next stage, and the limit of its rank — `bytes`
// when > 0, else `multiple` * p micro-batches of what the rank's stages
// stash per micro-batch.
Plan MakePlan(const PipelineSpec& spec, int multiple, Bytes bytes);

// One candidate: orders[r] = rank r's ops in execution order (v = 1: stage
// r's).
using Orders = std::vector<std::vector<Op>>;

// The authors' greedy heuristic (sail-sg zero-bubble v0.1.0,
// megatron/core/pipeline_parallel/auto_schedule.py, Graph.manual_order, run
// by initial_solution for its 8 flag settings): one candidate per setting
// that fits the limit (settings that hit "Cannot fit memory" give none).
std::vector<Orders> AuthorsHeuristic(const Plan& plan);

// The authors' ZB-V heuristic (sail-sg zero-bubble v0.1.0, v_schedule.py,
// PipelineGraph.try_v_schedule; zb_v.cpp) on a plan of 2p stages in the V
// placement: for each setting in the order get_v_schedule tries them
// (fill_b true then false, within it fill_f true then false), the order by
// rank and its largest per-rank bubble; nullopt where a step of the
// heuristic cannot be taken (the authors' code fails an assertion there).
std::vector<std::optional<std::pair<Orders, Nanos>>> AuthorsVHeuristic(const Plan& plan, int p);

// ppb's own family: an event-driven list scheduler that starts the op each
// rank can start first, I before F, F up to a warm-up cap, and W when nothing
// else can start (or when memory needs it); one candidate per (cap, W
// policy) setting (zb_greedy.cpp).
std::vector<Orders> ReadyFirst(const Plan& plan);

// A candidate order and where it came from (the family, as simulate shows
// it); PlanBest and PickBest return the kept one's, with "; polished ..."
// when swaps improved it.
struct Proposal {
  Orders orders;
  std::string origin;
};

// 1F1B with split backward and W right after its I, warm-up cut to what the
// limit holds: fits every limit that holds one micro-batch per stage.
Orders BoundedOneFOneB(const Plan& plan);

// The candidates of the three families above that fit the limit, simulated
// on `spec` (timing only: its capacities are ignored); the first with the
// least (makespan, longest per-rank span, largest stash), then improved by swaps of
// neighbouring ops that keep the limit (zb_adaptive.cpp). Empty when no
// candidate fits (never when every stage's limit holds one micro-batch).
// REQUIRES: spec has p = plan.stages.size() stages, v = 1, one per device,
// and m = plan.m.
Proposal PlanBest(const PipelineSpec& spec, const Plan& plan);

// The candidates that fit the limit (on every rank, over all its stages),
// simulated on `spec`; the best as PlanBest keeps it, polished likewise.
// Orders are by rank (for v = 1 rank s runs stage s). Empty when none fits.
Proposal PickBest(const PipelineSpec& spec, const Plan& plan, std::vector<Proposal> candidates);

// The origin of the fixed schedule an adaptive one falls back to, worded
// for the output ("... (fallback: no planned order was faster)").
std::string FallbackOrigin(std::string_view fixed);

// Most activation bytes stage s holds over `order` (prefix maximum).
Bytes ActivationPeak(const StagePlan& stage, const std::vector<Op>& order);

// Most activation bytes a rank holds over `order`, whose ops may belong to
// several stages (plan.stages by stage).
Bytes RankActivationPeak(const Plan& plan, const std::vector<Op>& order);

}  // namespace ppb::zb
