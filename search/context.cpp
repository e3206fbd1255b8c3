// The read-only view of one choice's search (see context.h): sums over the
// layers, stage costs, messages and the exact peak of a device.
#include "search/context.h"

#include <algorithm>

#include "core/cost.h"

namespace ppb::search_detail {

ChoiceProblem::ChoiceProblem(const SearchProblem& problem, const SearchOptions& options,
                             ChoiceContext ctx)
    : pb(problem), opt(options), c(std::move(ctx)) {
  const int L = c.L;
  pf.assign(L + 1, 0);
  pbi.assign(L + 1, 0);
  pbw.assign(L + 1, 0);
  pst.assign(L + 1, 0);
  pgrad.assign(L + 1, 0);
  pexp.assign(L + 1, 0);
  popt.assign(L + 1, 0);
  pgather.assign(L + 1, 0);
  pepf.assign(L + 1, 0);
  pepb.assign(L + 1, 0);
  for (int l = 0; l < L; ++l) {
    pgrad[l + 1] = pgrad[l] + pb.layers[l].grad_bytes;
    pexp[l + 1] = pexp[l] + pb.layers[l].expert_grad_bytes;
    popt[l + 1] = popt[l] + pb.layers[l].optimizer;
    pgather[l + 1] = pgather[l] + pb.layers[l].step_gather;
    pepf[l + 1] = pepf[l] + pb.layers[l].ep_forward;
    pepb[l + 1] = pepb[l] + pb.layers[l].ep_backward;
    pf[l + 1] = pf[l] + pb.layers[l].forward;
    pbi[l + 1] = pbi[l] + pb.layers[l].backward_input;
    pbw[l + 1] = pbw[l] + pb.layers[l].backward_weight;
    pst[l + 1] = pst[l] + pb.layers[l].static_memory;
  }
  max_speed = 0;
  for (const auto& d : pb.cluster.devices) max_speed = std::max(max_speed, d.speed);
  least_output = std::numeric_limits<Bytes>::max();
  for (int l = 0; l < L; ++l) {
    if (l + 1 < L || pb.allow_empty_chunks) {
      least_output = std::min(least_output, pb.layers[l].output_bytes);
    }
  }
  if (L <= 1) least_output = 0;
  suffix_work.assign(L + 1, 0);
  for (int l = L - 1; l >= 0; --l) {
    suffix_work[l] = suffix_work[l + 1] + pb.layers[l].forward +
                     pb.layers[l].backward_input + pb.layers[l].backward_weight;
  }
  suffix_f.assign(L + 1, 0);
  suffix_b.assign(L + 1, 0);
  for (int l = L - 1; l >= 0; --l) {
    suffix_f[l] = suffix_f[l + 1] + pb.layers[l].forward;
    suffix_b[l] = suffix_b[l + 1] + pb.layers[l].backward_input + pb.layers[l].backward_weight;
  }
}

StageFixed ChoiceProblem::Fixed(int s, int i, int j, Bytes prev_output) const {
  const double speed = pb.cluster.devices[c.spec.stage_device[s].value].speed;
  StageFixed x;
  x.f = ScaleTime(pf[j] - pf[i], speed);
  x.bi = ScaleTime(pbi[j] - pbi[i], speed);
  x.bw = ScaleTime(pbw[j] - pbw[i], speed);
  x.static_mem = pst[j] - pst[i];
  x.grad_bytes = pgrad[j] - pgrad[i];
  x.expert_grad_bytes = pexp[j] - pexp[i];
  x.optimizer = popt[j] - popt[i];
  x.step_gather = pgather[j] - pgather[i];
  x.ep_forward = ScaleTime(pepf[j] - pepf[i], speed);
  x.ep_backward = ScaleTime(pepb[j] - pepb[i], speed);
  for (int l = i; l < j; ++l) x.workspace = std::max(x.workspace, pb.layers[l].workspace);
  x.output = j > i ? pb.layers[j - 1].output_bytes : prev_output;
  return x;
}

Nanos ChoiceProblem::CommFwd(int s, Bytes bytes) const {
  if (s + 1 >= c.S) return 0;
  const int a = c.spec.stage_device[s].value, b = c.spec.stage_device[s + 1].value;
  if (a == b) return 0;
  const Link& l = c.spec.link(DeviceId(a), DeviceId(b));
  return l.latency + LinkOccupancy(bytes, l.bandwidth);
}

Nanos ChoiceProblem::CommBwd(int s, Bytes bytes) const {  // gradient from s+1 to s
  if (s + 1 >= c.S) return 0;
  const int a = c.spec.stage_device[s + 1].value, b = c.spec.stage_device[s].value;
  if (a == b) return 0;
  const Link& l = c.spec.link(DeviceId(a), DeviceId(b));
  return l.latency + LinkOccupancy(bytes, l.bandwidth);
}

Bytes ChoiceProblem::DevicePeak(int d, const std::vector<const StageFixed*>& fx,
                                const std::vector<const MenuPoint*>& pts) const {
  Bytes stat = 0;
  for (int cc = 0; cc < c.v; ++cc) stat += fx[cc]->static_mem;
  Bytes best = stat;
  for (const Moment& mo : c.profile->moments[d]) {
    Bytes x = stat;
    for (int cc = 0; cc < c.v; ++cc) {
      x += static_cast<Bytes>(mo.counts[cc]) * pts[cc]->stash +
           static_cast<Bytes>(mo.held[cc]) * pts[cc]->held;
    }
    const int ch = mo.chunk;
    x += mo.forward ? pts[ch]->stash + fx[ch]->workspace
                    : fx[ch]->workspace + pts[ch]->remat;
    best = std::max(best, x);
  }
  return best;
}

}  // namespace ppb::search_detail
