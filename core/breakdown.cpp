#include "core/breakdown.h"

#include <algorithm>
#include <limits>

namespace ppb {

const char* BubbleTermKey(BubbleTerm t) {
  switch (t) {
    case BubbleTerm::Ideal:
      return "ideal";
    case BubbleTerm::Imbalance:
      return "imbalance";
    case BubbleTerm::Recompute:
      return "recompute";
    case BubbleTerm::Communication:
      return "communication";
    case BubbleTerm::WarmupDrain:
      return "warmup_drain";
  }
  return "?";
}

const char* BubbleTermLabel(BubbleTerm t) {
  return t == BubbleTerm::WarmupDrain ? "warm-up/drain" : BubbleTermKey(t);
}

Nanos BubbleParts::sum() const {
  Nanos s = 0;
  for (Nanos x : ns) s += x;
  return s;
}

BubbleTerm BubbleParts::largest_loss() const {
  BubbleTerm best = BubbleTerm::Ideal;
  Nanos most = 0;
  for (int t = 1; t < kNumBubbleTerms; ++t) {
    if (ns[t] > most) {
      most = ns[t];
      best = static_cast<BubbleTerm>(t);
    }
  }
  return best;
}

BubbleParts DeviceBubbleParts(const DeviceStats& d, Nanos makespan, Nanos mean_useful) {
  BubbleParts parts;
  const Nanos useful = d.busy - d.recompute;
  const Nanos idle = makespan - d.busy;
  // The engine's waits are disjoint pieces of idle time; the clamp only
  // guards the contract against a partial (deadlocked) run.
  const Nanos comm = std::clamp(d.comm_wait + d.comm_blocked, Nanos{0}, std::max(idle, Nanos{0}));
  parts[BubbleTerm::Recompute] = d.recompute;
  parts[BubbleTerm::Communication] = comm;
  if (useful >= mean_useful) {
    parts[BubbleTerm::Ideal] = mean_useful;
    parts[BubbleTerm::Imbalance] = useful - mean_useful;
  } else {
    // A rank with less than its share idles at least the missing share
    // while the busier ranks finish; that idle time is the imbalance, as far
    // as it is not already message time.
    parts[BubbleTerm::Ideal] = useful;
    parts[BubbleTerm::Imbalance] =
        std::clamp(mean_useful - useful, Nanos{0}, std::max(idle - comm, Nanos{0}));
  }
  parts[BubbleTerm::WarmupDrain] = makespan - parts[BubbleTerm::Ideal] -
                                   parts[BubbleTerm::Imbalance] - parts[BubbleTerm::Recompute] -
                                   parts[BubbleTerm::Communication];
  return parts;
}

Nanos MeanUsefulCompute(const std::vector<DeviceStats>& devices) {
  if (devices.empty()) return 0;
  Nanos sum = 0;
  for (const DeviceStats& d : devices) sum += d.busy - d.recompute;
  return sum / static_cast<Nanos>(devices.size());
}

int BusiestDevice(const std::vector<DeviceStats>& devices) {
  int best = 0;
  for (size_t d = 1; d < devices.size(); ++d) {
    if (devices[d].busy > devices[best].busy) best = static_cast<int>(d);
  }
  return best;
}

StepParts DeviceStepParts(const SimResult& result, int device) {
  StepParts x;
  const DeviceStats& d = result.devices[static_cast<size_t>(device)];
  const RankStep none;
  const RankStep& st =
      result.steps.empty() ? none : result.steps[static_cast<size_t>(device)];
  Nanos sync = result.pipeline_end;
  for (const RankStep& o : result.steps) sync = std::max(sync, o.grad_sync_end);
  x.collectives = st.collectives;
  x.recompute = d.recompute;
  x.compute = d.busy - d.recompute - st.collectives;
  x.bubble = result.pipeline_end - d.busy;
  x.grad_sync = sync - result.pipeline_end;
  x.optimizer = st.optimizer + st.param_gather;
  x.waiting = result.makespan - sync - x.optimizer;
  return x;
}

Breakdown ComputeBreakdown(const SimResult& result) {
  Breakdown b;
  b.iteration = result.makespan;
  b.pipeline_end = result.pipeline_end > 0 ? result.pipeline_end : result.makespan;
  b.grad_sync = result.breakdown.grad_sync;
  b.optimizer = result.breakdown.optimizer;
  b.mean_useful = MeanUsefulCompute(result.devices);
  b.bottleneck = BusiestDevice(result.devices);
  for (DeviceStats d : result.devices) {
    // The pipeline's parts against its own end; the tail is apart.
    d.idle = b.pipeline_end - d.busy;
    b.devices.push_back(DeviceBubbleParts(d, b.pipeline_end, b.mean_useful));
  }
  if (!b.devices.empty()) b.pipeline = b.devices[b.bottleneck];
  return b;
}

UnevenStages UnevenStageLoss(const PipelineSpec& spec, const Program& program,
                             const Breakdown& breakdown) {
  UnevenStages out;
  const auto n = static_cast<Nanos>(spec.stages.size());
  if (n == 0 || breakdown.devices.empty()) return out;
  auto work = [](const StageCost& c) {
    return c.forward + c.backward_input + c.backward_weight + c.recompute;
  };
  Nanos f = 0, bi = 0, bw = 0, rc = 0;
  for (size_t s = 0; s < spec.stages.size(); ++s) {
    const StageCost& c = spec.stages[s];
    f += c.forward;
    bi += c.backward_input;
    bw += c.backward_weight;
    rc += c.recompute;
    if (out.slowest < 0 || work(c) > out.slowest_work) {
      out.slowest = static_cast<int>(s);
      out.slowest_work = work(c);
    }
  }
  for (size_t s = 0; s < spec.stages.size(); ++s) {
    if (100 * work(spec.stages[s]) >= 99 * out.slowest_work) out.at_fault.push_back(static_cast<int>(s));
  }
  out.mean_work = (f + bi + bw + rc) / n;
  PipelineSpec equal = spec;
  for (StageCost& c : equal.stages) {
    c.forward = f / n;
    c.backward_input = bi / n;
    c.backward_weight = bw / n;
    c.recompute = rc / n;
  }
  // Timing only: memory does not change when ops run.
  std::fill(equal.device_capacity.begin(), equal.device_capacity.end(),
            std::numeric_limits<Bytes>::max());
  SimOptions opt;
  opt.record_ops = false;
  const SimResult r = Engine().Run(equal, program, opt);
  if (r.outcome == Outcome::Deadlock || r.outcome == Outcome::Interrupted) return out;
  const Breakdown eb = ComputeBreakdown(r);
  const auto d = static_cast<size_t>(breakdown.bottleneck);
  if (d >= eb.devices.size()) return out;
  out.equal_warmup_drain = eb.devices[d][BubbleTerm::WarmupDrain];
  const Nanos wd = breakdown.pipeline[BubbleTerm::WarmupDrain];
  out.loss = wd - std::min(wd, out.equal_warmup_drain);
  return out;
}

}  // namespace ppb
