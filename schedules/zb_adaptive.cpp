// ZB-1p and ZB-2p: the Zero Bubble paper's automatic schedules (Qi et al.,
// "Zero Bubble Pipeline Parallelism", ICLR 2024, §3), v = 1.
//
// Input: the stage costs of the spec (F, I = backward_input + recompute,
// W = backward_weight, the message time of each link) and an activation
// limit per rank. Output: the per-rank order of F, I and W ops with the
// shortest iteration the engine simulates, among the candidates of three
// families (zb_adaptive.h): the authors' own heuristic in its 8 settings, ppb's
// ready-first list scheduler in 10 settings, and 1F1B with split backward
// (which always fits). Every candidate's stashed activation stays within the
// limit on every rank; the kept one is the first with the least (makespan,
// longest per-rank span, largest stash), then improved by swapping
// neighbouring ops while that score drops. Since the authors' heuristic is among the
// candidates, the result is never slower than it under the same costs and
// limit (in the engine's time).
//
// Limit of rank r (its one stage s = r's activation a_s per micro-batch):
//   zb-1p: p * a_s, what 1F1B holds on rank 0 (p micro-batches of a stage);
//   zb-2p: 2 p * a_s;
//   pipeline.activation_limit: k p * a_s ("kp") or a byte count.
// Memory follows the engine: F stashes a_s, I releases the stage's
// input_grad_release of it, W the rest.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/cost.h"
#include "core/engine.h"
#include "schedules/internal.h"
#include "schedules/schedule.h"
#include "schedules/zb_adaptive.h"

namespace ppb {
namespace {

using schedule_internal::Cat;
using schedule_internal::Str;

Program ToProgram(const PipelineSpec& spec, const zb::Orders& orders) {
  return schedule_internal::PlaceOnDevices(spec, orders);
}

// What the planner minimizes: the simulated iteration, then the longest
// per-rank span (the authors' measure, Qi et al. §5.3), then the largest
// stash of any rank (less memory for the same time).
struct Score {
  Nanos makespan = 0;
  Nanos span = 0;
  Bytes stash = 0;
  bool operator<(const Score& o) const {
    if (makespan != o.makespan) return makespan < o.makespan;
    if (span != o.span) return span < o.span;
    return stash < o.stash;
  }
};

// Simulates candidate orders; nullopt when one breaks the limit or deadlocks.
class Evaluator {
 public:
  Evaluator(const PipelineSpec& spec, const zb::Plan& plan)
      : spec_(spec), plan_(plan) {}

  std::optional<Score> Measure(const zb::Orders& orders) {
    ++runs_;
    Bytes stash = 0;
    for (const std::vector<Op>& order : orders) {
      if (order.empty()) continue;
      // Every stage of a rank carries the rank's limit.
      const Bytes peak = zb::RankActivationPeak(plan_, order);
      if (peak > plan_.stages[static_cast<size_t>(order.front().stage.value)].limit) {
        return std::nullopt;
      }
      stash = std::max(stash, peak);
    }
    engine_.RunInto(spec_, ToProgram(spec_, orders), SimOptions{false, false},
                    result_);
    if (result_.outcome == Outcome::Deadlock) return std::nullopt;
    Score score{result_.makespan, 0, stash};
    for (const DeviceStats& d : result_.devices) {
      score.span = std::max(score.span, d.last_end - d.first_start);
    }
    return score;
  }
  long runs() const { return runs_; }

 private:
  const PipelineSpec& spec_;
  const zb::Plan& plan_;
  Engine engine_;
  SimResult result_;
  long runs_ = 0;
};

// Whether neighbouring ops a then b of one rank may trade places: ops of
// two stages always (an order that then waits on itself is refused by the
// engine as a deadlock); of one stage, not the same kind (F and I stay in
// micro-batch order) and b does not need a (I after its F, W after its I).
bool Swappable(const Op& a, const Op& b) {
  if (a.stage != b.stage) return true;
  if (a.kind == b.kind) return false;
  if (a.mb != b.mb) return true;
  return !((a.kind == OpKind::F && b.kind == OpKind::I) ||
           (a.kind == OpKind::I && b.kind == OpKind::W));
}

// Local search on the kept order: swaps of neighbouring ops of one stage,
// each kept when the score improves, in passes over stages and positions
// until a pass keeps none or the budget of simulations is spent. The budget
// shrinks with the program (about 2M simulated ops in all), so the planning
// time stays bounded; the walk is deterministic.
void Polish(Evaluator& eval, zb::Orders& orders, Score& score) {
  long total = 0;
  for (const auto& o : orders) total += static_cast<long>(o.size());
  const long budget = std::min<long>(4000, 2'000'000 / std::max<long>(1, total));
  const long start = eval.runs();
  bool improved = true;
  while (improved && eval.runs() - start < budget) {
    improved = false;
    for (auto& order : orders) {
      for (size_t k = 0; k + 1 < order.size(); ++k) {
        if (eval.runs() - start >= budget) return;
        if (!Swappable(order[k], order[k + 1])) continue;
        std::swap(order[k], order[k + 1]);
        const std::optional<Score> s = eval.Measure(orders);
        if (s && *s < score) {
          score = *s;
          improved = true;
        } else {
          std::swap(order[k], order[k + 1]);
        }
      }
    }
  }
}

Result<Program> GenerateAdaptive(const PipelineSpec& spec,
                                 const ScheduleParams& params,
                                 std::string_view name, int default_multiple) {
  if (Status s = schedule_internal::CheckShape(spec); !s.ok()) {
    return s.error();
  }
  if (spec.v != 1) {
    return Error{"pipeline.virtual_stages",
                 Cat({"must be 1 for ", name,
                      " (the adaptive ZB-1p/ZB-2p order one stage per rank); "
                      "got ",
                      Str(spec.v)})};
  }
  if (spec.stages.size() != static_cast<size_t>(spec.num_stages())) {
    return Error{"", Cat({"the spec must give ", Str(spec.num_stages()),
                          " stage costs for ", name})};
  }
  PipelineSpec placed = spec;
  if (placed.stage_device.empty()) {
    placed.stage_device = DefaultPlacement(spec.p, spec.v);
  }
  std::vector<char> used(static_cast<size_t>(spec.p), 0);
  for (const DeviceId d : placed.stage_device) {
    if (used[static_cast<size_t>(d.value)]++) {
      return Error{"", Cat({name, " needs one stage per rank; device ",
                            Str(d.value), " holds two"})};
    }
  }
  if (placed.link_matrix.size() !=
      static_cast<size_t>(spec.p) * static_cast<size_t>(spec.p)) {
    placed.link_matrix.assign(static_cast<size_t>(spec.p) * spec.p, Link{});
  }
  const int multiple = params.activation_multiple > 0
                           ? params.activation_multiple
                           : default_multiple;
  const zb::Plan plan = zb::MakePlan(placed, multiple, params.activation_bytes);
  for (int s = 0; s < spec.num_stages(); ++s) {
    const zb::StagePlan& z = plan.stages[static_cast<size_t>(s)];
    if (z.act > z.limit) {
      return Error{"pipeline.activation_limit",
                   Cat({"must hold at least one micro-batch of every stage "
                        "for ",
                        name, " (stage ", Str(s), " stashes ",
                        std::to_string(z.act), " bytes per micro-batch); got ",
                        std::to_string(z.limit), " bytes"})};
    }
  }

  const zb::Proposal best = zb::PlanBest(placed, plan);
  if (best.orders.empty()) {
    return Error{"schedule", Cat({name, ": no candidate order ran to the end"})};
  }
  Program program = ToProgram(placed, best.orders);
  program.origin = best.origin;
  return program;
}

}  // namespace

namespace zb {

Plan MakePlan(const PipelineSpec& spec, int multiple, Bytes bytes) {
  Plan plan;
  plan.m = spec.m;
  const int n = spec.num_stages();
  plan.stages.resize(static_cast<size_t>(n));
  // What one micro-batch stashes on each rank, over all its stages.
  std::vector<Bytes> per_rank(static_cast<size_t>(spec.p), 0);
  for (int s = 0; s < n; ++s) {
    per_rank[static_cast<size_t>(spec.stage_device[static_cast<size_t>(s)].value)] +=
        spec.stages[static_cast<size_t>(s)].activation;
  }
  for (int s = 0; s < n; ++s) {
    const StageCost& c = spec.stages[static_cast<size_t>(s)];
    StagePlan& z = plan.stages[static_cast<size_t>(s)];
    z.f = c.forward;
    z.i = c.recompute + c.backward_input;
    z.w = c.backward_weight;
    z.act = c.activation;
    // The engine frees input_grad_release at the end of I, the rest at W.
    z.held = c.activation - c.input_grad_release;
    const DeviceId a = spec.stage_device[static_cast<size_t>(s)];
    z.limit = bytes > 0 ? bytes
                        : static_cast<Bytes>(multiple) * spec.p *
                              per_rank[static_cast<size_t>(a.value)];
    if (s + 1 < n) {
      const DeviceId b = spec.stage_device[static_cast<size_t>(s + 1)];
      if (a != b) {
        const Link& link = spec.link(a, b);
        z.comm = link.latency + LinkOccupancy(c.output_bytes, link.bandwidth);
      }
    }
  }
  return plan;
}

std::string FallbackOrigin(std::string_view fixed) {
  return std::string(fixed) + " (fallback: no planned order was faster)";
}

Proposal PlanBest(const PipelineSpec& spec, const Plan& plan) {
  std::vector<Proposal> candidates;
  for (Orders& o : AuthorsHeuristic(plan)) {
    candidates.push_back({std::move(o), "the Zero Bubble authors' heuristic"});
  }
  for (Orders& o : ReadyFirst(plan)) {
    candidates.push_back({std::move(o), "ppb's ready-first planner"});
  }
  candidates.push_back({BoundedOneFOneB(plan), FallbackOrigin("1F1B with split backward")});
  return PickBest(spec, plan, std::move(candidates));
}

Proposal PickBest(const PipelineSpec& spec, const Plan& plan, std::vector<Proposal> candidates) {
  // The engine needs capacities; the limit is checked on the orders.
  PipelineSpec sim = spec;
  sim.device_capacity.assign(static_cast<size_t>(spec.p),
                             std::numeric_limits<Bytes>::max());
  Evaluator eval(sim, plan);
  bool have = false;
  Score best_score;
  Proposal best;
  for (Proposal& c : candidates) {
    const std::optional<Score> score = eval.Measure(c.orders);
    if (score && (!have || *score < best_score)) {
      have = true;
      best_score = *score;
      best = std::move(c);
    }
  }
  if (!have) return {};
  const Score kept = best_score;
  Polish(eval, best.orders, best_score);
  if (best_score < kept) best.origin += "; polished by swapping neighbouring ops";
  return best;
}

}  // namespace zb

Result<Program> GenerateZB1P(const PipelineSpec& spec,
                             const ScheduleParams& params) {
  return GenerateAdaptive(spec, params, "zb-1p", 1);
}

Result<Program> GenerateZB2P(const PipelineSpec& spec,
                             const ScheduleParams& params) {
  return GenerateAdaptive(spec, params, "zb-2p", 2);
}

}  // namespace ppb
