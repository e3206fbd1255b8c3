// Building a schedule choice's context and keeping it (see context_cache.h
// for the contract).
#include "search/context_cache.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "core/engine.h"

namespace ppb::search_detail {

namespace {

// One choice's context up to its program (generated), without its
// memory profile (FinishContext).
Result<ChoiceContext> BeginContext(const SearchProblem& pb, int index) {
  const ScheduleChoice& ch = pb.choices[index];
  ChoiceContext c;
  c.index = index;
  c.choice = ch;
  c.p = pb.p;
  c.v = ch.v;
  c.m = pb.m;
  c.S = pb.p * ch.v;
  c.L = static_cast<int>(pb.layers.size());
  const ScheduleInfo* info = FindSchedule(ch.schedule);
  if (info == nullptr) {
    return Error{"search.schedules",
                 "the search generates its programs: expected a registered "
                 "schedule; got '" + ch.schedule + "'"};
  }
  // Template spec: shape, placement, links, capacities; costs filled per
  // evaluation.
  c.spec = PipelineSpec::Uniform(pb.p, ch.v, pb.m, 1, 1);
  c.spec.comm = ChoiceComm(pb, ch);
  c.spec.tail = pb.tail;
  if (info->placement == StagePlacement::V && ch.v == 2) {
    c.spec.placement = StagePlacement::V;
    c.spec.stage_device = StagePlacementDevices(StagePlacement::V, pb.p, ch.v);
  }
  if (static_cast<int>(pb.cluster.devices.size()) != pb.p ||
      static_cast<int>(pb.cluster.links.size()) != pb.p) {
    return Error{"cluster", "needs one device and one link per stage (" +
                                std::to_string(pb.p) + ")"};
  }
  for (int d = 0; d < pb.p; ++d) {
    c.spec.device_capacity[d] = pb.cluster.devices[d].memory_capacity;
  }
  c.spec.link_matrix = RingLinkMatrix(pb.p, pb.cluster.links);
  // The adaptive schedules (zb-1p, zb-2p, zb-v) plan from costs: one order
  // per choice, planned for the mean stage (below), with one unit of activation per
  // micro-batch so that their limit counts micro-batches (k p of each
  // rank's stage), which holds for every split. A limit in bytes depends
  // on the split and cannot be kept by one order.
  if (ch.schedule.rfind("zb-", 0) == 0) {
    if (ch.params.activation_bytes > 0) {
      return Error{"pipeline.activation_limit",
                   "must be kp (k p micro-batches per rank) when searching "
                   "with " + ch.schedule + ": one order serves every split; got " +
                       std::to_string(ch.params.activation_bytes) + " bytes"};
    }
    // The order is planned for the mean stage of the model on each rank's
    // device (the layers' F, I and W summed and shared evenly over the S
    // stages) and the real links, so that it sees the model's F : I : W
    // ratios and how long a message takes beside a stage's work.
    long double f = 0, bi = 0, bw = 0;
    for (const Layer& l : pb.layers) {
      f += l.forward;
      bi += l.backward_input;
      bw += l.backward_weight;
    }
    for (int s = 0; s < c.S; ++s) {
      StageCost& st = c.spec.stages[s];
      const double speed = pb.cluster.devices[c.spec.stage_device[s].value].speed;
      auto mean = [&](long double x) {
        return std::max<Nanos>(1, std::llround(x / c.S / (speed > 0 ? speed : 1.0)));
      };
      st.forward = mean(f);
      st.backward_input = mean(bi);
      st.backward_weight = mean(bw);
      st.activation = 1;
    }
  }
  auto prog = info->generate(c.spec, ch.params);
  if (!prog.ok()) return prog.error();
  auto program = std::make_shared<const Program>(std::move(prog).value());
  c.program = program;
  bool paired = false;
  for (const std::vector<Op>& ops : program->ops) {
    for (const Op& op : ops) {
      c.split_backward = c.split_backward || op.kind == OpKind::I;
      paired = paired || op.paired;
    }
  }
  c.spec.fb_overlap_ppm = pb.fb_overlap_ppm;
  c.spec.ep_overlap_ppm = pb.ep_overlap_ppm;
  c.spec.op_overhead = pb.op_overhead;
  if (paired && pb.fb_overlap_ppm > 0) {
    c.bound_scale = 1.0 - static_cast<double>(pb.fb_overlap_ppm) / 1e6;
  } else if (paired && pb.ep_overlap_ppm > 0) {
    // A combined F+B saves at most its shorter op (each op's share is at
    // most the other's compute): the pair takes at least half its nominal
    // time.
    c.bound_scale = 0.5;
  }
  return c;
}

// The memory profile of a context BeginContext made.
void FinishContext(const SearchProblem& pb, ChoiceContext& c) {
  // Some layer frees part of its stash at the end of I (Lower() sets
  // input_grad_release): the profile then counts it as the engine does.
  bool release = false;
  for (const Layer& l : pb.layers) {
    Bytes most = l.activation;
    for (const RecomputeOption& o : l.recompute) most = std::max(most, o.retained_activation);
    release = release || l.HeldAfterInputGrad(most) < most;
  }
  c.profile = std::make_shared<const MemoryProfile>(
      BuildProfile(c.spec, *c.program, c.split_backward && release));
}

}  // namespace

Result<ChoiceContext> MakeContext(const SearchProblem& pb, int index) {
  Result<ChoiceContext> c = BeginContext(pb, index);
  if (c.ok()) FinishContext(pb, *c);
  return c;
}

bool ContextCache::Serves(const SearchProblem& problem) {
  if (problem_ == nullptr) {
    problem_ = &problem;
    p_ = problem.p;
    m_ = problem.m;
    choices_ = problem.choices.size();
    made_.assign(choices_, std::nullopt);
    begun_.assign(choices_, std::nullopt);
  }
  return problem_ == &problem && p_ == problem.p && m_ == problem.m &&
         choices_ == problem.choices.size();
}

Result<std::vector<ChoiceContext>> ContextCache::Contexts(const SearchProblem& problem,
                                                          Clock::time_point deadline,
                                                          bool* cut) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!Serves(problem)) {
    lock.unlock();
    ContextCache apart;
    return apart.Contexts(problem, deadline, cut);
  }
  std::vector<ChoiceContext> ctxs;
  const Error* refused = nullptr;
  bool left_out = false;
  for (size_t i = 0; i < made_.size(); ++i) {
    if (!made_[i]) {
      // Past the deadline only a first small program is still prepared;
      // each of the two steps, once started, is kept.
      const ScheduleChoice& ch = problem.choices[i];
      const std::int64_t ops = std::int64_t{3} * problem.p * std::max(1, ch.v) * problem.m;
      const bool small =
          ctxs.empty() && ops <= static_cast<std::int64_t>(Engine::kDeadlineCheckOps);
      const auto late = [&] { return !small && Clock::now() >= deadline; };
      if (!begun_[i]) {
        if (late()) {
          left_out = true;
          continue;
        }
        ++built_;
        Result<ChoiceContext> c = BeginContext(problem, static_cast<int>(i));
        if (c.ok()) {
          begun_[i] = std::move(c).value();
        } else {
          made_[i] = std::move(c);
        }
      }
      if (!made_[i]) {
        if (late()) {
          left_out = true;
          continue;
        }
        FinishContext(problem, *begun_[i]);
        made_[i] = std::move(*begun_[i]);
        begun_[i].reset();
      }
    }
    if (made_[i]->ok()) {
      ctxs.push_back(made_[i]->value());
    } else if (refused == nullptr) {
      refused = &made_[i]->error();
    }
  }
  if (left_out && cut != nullptr) *cut = true;
  if (ctxs.empty() && !left_out) {
    return refused != nullptr ? *refused : Error{"search", "needs at least one schedule choice"};
  }
  return ctxs;
}

double ContextCache::SimulationSeconds(const SearchProblem& problem) {
  std::lock_guard<std::mutex> lock(mu_);
  return Serves(problem) ? simulation_s_ : 0;
}

void ContextCache::SetSimulationSeconds(const SearchProblem& problem, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Serves(problem)) simulation_s_ = seconds;
}

int ContextCache::built() const {
  std::lock_guard<std::mutex> lock(mu_);
  return built_;
}

Result<std::vector<ChoiceContext>> MakeContexts(const SearchProblem& problem,
                                                const SearchOptions& options, bool* cut) {
  if (options.contexts != nullptr) return options.contexts->Contexts(problem, options.deadline, cut);
  ContextCache apart;
  return apart.Contexts(problem, options.deadline, cut);
}

}  // namespace ppb::search_detail
