// Path bounds: lower bounds on the makespan from paths through the
// program's dependency graph.
//
// Contract: whatever the allocation of layers to stages, the iteration time
// is at least the length of any path, and so of any convex combination of
// paths. PathWeights gives a mixture (PathMixture) valid for
// every split of the choice, and a root value valid for all of them (the
// open-tree bound that builds on these paths is in open_tree_bound.cpp).
// Every value returned is floored and lowered by a rounding slack.
#include <algorithm>
#include <cmath>

#include "core/cost.h"
#include "search/lp.h"
#include "search/searcher.h"

namespace ppb::search_detail {

// The least time of a message from device a to device b (0 on one device):
// the link's latency plus the occupancy of the smallest output any stage
// can send (a stage's output is its last layer's; the model's last layer
// sends nothing unless an empty stage may follow it).
Nanos LeastHop(const ChoiceProblem& cp, int a, int b) {
  if (a == b) return 0;
  const Link& link = cp.c.spec.link(DeviceId(a), DeviceId(b));
  return link.latency + LinkOccupancy(cp.least_output, link.bandwidth);
}

// A critical path as a Path: its F and B ops per stage, plus the least
// message time of every hop between ranks (I and W ops, waits and the
// excess of a message over its least time count 0: still a bound).
Path PathOf(const ChoiceProblem& cp, const std::vector<CriticalStep>& steps) {
  const int S = cp.c.S;
  Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
  int prev = -1;
  for (const CriticalStep& step : steps) {
    if (step.is_transfer) continue;
    if (step.op.kind == OpKind::F) P.a[step.op.stage.value] += 1;
    if (step.op.kind == OpKind::B) P.b[step.op.stage.value] += 1;
    if (prev >= 0) P.c += static_cast<double>(LeastHop(cp, prev, step.device));
    prev = step.device;
  }
  return P;
}

// A bound from paths through the program's dependency graph. Whatever the
// allocation, the iteration time is at least the length of any path, and so
// of any convex combination of paths; a path's length is linear in the
// stages' forward and backward times. Paths used, per rank d and chunk c
// (stage sigma = c*p + d): (1) the forward chain of one micro-batch up to
// rank d's first F of sigma, then every op rank d runs from there on, then
// the backward chain below its last op; (2) the forward chain to rank d's
// first op, its ops up to its last B of sigma, then the backward chain below
// sigma; and the chain of one micro-batch through every stage. Link latency
// counts on every hop between ranks. Weights are tuned by multiplicative
// updates so that the least per-stage coefficient (per unit of work at the
// stage's speed) is large: then the bound holds for any allocation of the
// layers (their total work is fixed) and tightens as stages are placed. For
// uniform stages it reaches the closed forms' fill-and-drain terms that the
// per-rank bound misses for interleaved schedules.
std::vector<Path> BuildPaths(const ChoiceProblem& cp) {
  const int S = cp.c.S, p = cp.c.p;
  auto hop = [&](int s, int t) -> double {  // least message time stage s -> t
    return static_cast<double>(
        LeastHop(cp, cp.c.spec.stage_device[s].value, cp.c.spec.stage_device[t].value));
  };
  auto fwd_chain = [&](Path& P, int upto) {  // F of stages < upto
    for (int s = 0; s < upto; ++s) {
      P.a[s] += 1;
      P.c += hop(s, s + 1);
    }
  };
  // With a split backward (I and W ops: the zero-bubble schedules) the
  // chain runs through the I's, whose time a path has no coefficient for:
  // only the messages count (a shorter path, still a valid bound).
  const bool split = cp.c.split_backward;
  auto bwd_chain = [&](Path& P, int below) {  // B of stages < below
    for (int s = 0; s < below; ++s) {
      if (!split) P.b[s] += 1;
      if (s + 1 < S) P.c += hop(s + 1, s);
    }
  };
  auto add_op = [&](Path& P, const Op& op) {
    if (op.kind == OpKind::F) P.a[op.stage.value] += 1;
    if (op.kind == OpKind::B) P.b[op.stage.value] += 1;  // I, W: 0 (valid)
  };
  std::vector<Path> paths;
  {
    Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
    fwd_chain(P, S - 1);
    P.a[S - 1] += 1;
    bwd_chain(P, S);
    paths.push_back(std::move(P));
  }
  for (int d = 0; d < p; ++d) {
    const std::vector<Op>& ops = cp.c.program->ops[d];
    if (ops.empty()) continue;
    for (int c = 0; c < cp.c.v; ++c) {
      const int sigma = StageOf(cp.c.spec.placement, p, c, d);
      int first_f = -1, last_b = -1;
      for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
        if (ops[i].stage.value != sigma) continue;
        if (ops[i].kind == OpKind::F && first_f < 0) first_f = i;
        if (ops[i].kind == OpKind::B) last_b = i;
      }
      if (first_f >= 0) {
        Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
        fwd_chain(P, sigma);
        for (size_t i = first_f; i < ops.size(); ++i) add_op(P, ops[i]);
        if (ops.back().kind == OpKind::B) bwd_chain(P, ops.back().stage.value);
        paths.push_back(std::move(P));
      }
      // (3) Through the round trip of sigma's last forward: rank d's ops up
      // to its last F of sigma, the chains up to the last stage and back,
      // then rank d's ops from that micro-batch's B of sigma on.
      int last_f = -1;
      for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
        if (ops[i].stage.value == sigma && ops[i].kind == OpKind::F) last_f = i;
      }
      if (last_f >= 0 && ops.front().kind == OpKind::F) {
        const int j = ops[last_f].mb.value;
        int back = -1;
        for (int i = last_f + 1; i < static_cast<int>(ops.size()); ++i) {
          if (ops[i].stage.value == sigma && ops[i].mb.value == j && ops[i].kind == OpKind::B) {
            back = i;
            break;
          }
        }
        if (back >= 0) {
          Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
          fwd_chain(P, ops.front().stage.value);
          for (int i = 0; i <= last_f; ++i) add_op(P, ops[i]);
          for (int t = sigma + 1; t < S; ++t) {
            P.a[t] += 1;
            P.c += hop(t - 1, t);
          }
          for (int t = S - 1; t > sigma; --t) {
            P.b[t] += 1;
            P.c += hop(t, t - 1);
          }
          for (size_t i = back; i < ops.size(); ++i) add_op(P, ops[i]);
          if (ops.back().kind == OpKind::B) bwd_chain(P, ops.back().stage.value);
          paths.push_back(std::move(P));
        }
      }
      if (last_b >= 0 && ops.front().kind == OpKind::F) {
        Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
        fwd_chain(P, ops.front().stage.value);
        for (int i = 0; i <= last_b; ++i) add_op(P, ops[i]);
        bwd_chain(P, sigma);
        paths.push_back(std::move(P));
      }
    }
  }
  return paths;
}

Nanos PathWeights(const ChoiceProblem& cp, Nanos forced_recompute, PathMixture& out) {
  const int S = cp.c.S, L = cp.c.L;
  if (PastDeadline(cp.opt)) return 0;  // no mixture: no path bound
  const std::vector<Path> paths = BuildPaths(cp);
  double F = 0, B = 0;
  for (int l = 0; l < L; ++l) {
    F += static_cast<double>(cp.pb.layers[l].forward);
    B += static_cast<double>(cp.pb.layers[l].backward_input + cp.pb.layers[l].backward_weight);
  }
  std::vector<double> speed(S);
  for (int s = 0; s < S; ++s) speed[s] = cp.pb.cluster.devices[cp.c.spec.stage_device[s].value].speed;
  // The weights solve max over path mixtures of min over stages: a zero-sum
  // game, approached by multiplicative weights on the stages (the side that
  // puts the work where the mixture is weakest) against best-response
  // paths; the mixture is the average of the best responses. Any mixture
  // gives a valid bound; this one is close to the best.
  const size_t n = paths.size();
  std::vector<double> wa(S, 1.0), wb(S, 1.0);
  std::vector<double> count(n, 0.0);
  double scale = 1;
  for (const Path& P : paths) {
    for (int s = 0; s < S; ++s) {
      scale = std::max(scale, std::max(P.a[s], P.b[s]) / speed[s]);
    }
  }
  const int rounds = 4000;
  const double eta = std::sqrt(std::log(static_cast<double>(2 * S)) / rounds);
  // Past the deadline the rounds so far make the mixture (any is valid).
  int done = 0;
  for (int it = 0; it < rounds && (it == 0 || !PastDeadline(cp.opt)); ++it, ++done) {
    double za = 0, zb = 0;
    for (int s = 0; s < S; ++s) {
      za += wa[s];
      zb += wb[s];
    }
    size_t best_k = 0;
    double best_pay = -1;
    for (size_t k = 0; k < n; ++k) {
      double pay = paths[k].c;
      for (int s = 0; s < S; ++s) {
        pay += F * wa[s] / za * paths[k].a[s] / speed[s] + B * wb[s] / zb * paths[k].b[s] / speed[s];
      }
      if (pay > best_pay) {
        best_pay = pay;
        best_k = k;
      }
    }
    count[best_k] += 1;
    for (int s = 0; s < S; ++s) {
      wa[s] *= std::exp(-eta * paths[best_k].a[s] / speed[s] / scale);
      wb[s] *= std::exp(-eta * paths[best_k].b[s] / speed[s] / scale);
    }
    // Keep the weights in range.
    double mx = 0;
    for (int s = 0; s < S; ++s) mx = std::max(mx, std::max(wa[s], wb[s]));
    for (int s = 0; s < S; ++s) {
      wa[s] /= mx;
      wb[s] /= mx;
    }
  }
  std::vector<double> best_lam(n);
  for (size_t k = 0; k < n; ++k) best_lam[k] = count[k] / done;
  double best = 0;
  {
    std::vector<double> A(S, 0.0), Bc(S, 0.0);
    double cst = 0;
    for (size_t k = 0; k < n; ++k) {
      for (int s = 0; s < S; ++s) {
        A[s] += best_lam[k] * paths[k].a[s];
        Bc[s] += best_lam[k] * paths[k].b[s];
      }
      cst += best_lam[k] * paths[k].c;
    }
    double amin = std::numeric_limits<double>::infinity(), bmin = amin;
    for (int s = 0; s < S; ++s) {
      amin = std::min(amin, A[s] / speed[s]);
      bmin = std::min(bmin, Bc[s] / speed[s]);
    }
    best = amin * F + bmin * B + cst;
  }
  out.pa.assign(S, 0.0);
  out.pbw_coef.assign(S, 0.0);
  out.pconst = 0;
  for (size_t k = 0; k < n; ++k) {
    for (int s = 0; s < S; ++s) {
      out.pa[s] += best_lam[k] * paths[k].a[s];
      out.pbw_coef[s] += best_lam[k] * paths[k].b[s];
    }
    out.pconst += best_lam[k] * paths[k].c;
  }
  out.pa_min.assign(S + 1, std::numeric_limits<double>::infinity());
  out.pb_min.assign(S + 1, std::numeric_limits<double>::infinity());
  for (int s = S - 1; s >= 0; --s) {
    out.pa_min[s] = std::min(out.pa_min[s + 1], out.pa[s] / speed[s]);
    out.pb_min[s] = std::min(out.pb_min[s + 1], out.pbw_coef[s] / speed[s]);
  }
  // Recompute runs inside backward ops: memory forces at least
  // forced_recompute per micro-batch, wherever it lands.
  best += out.pb_min[0] * static_cast<double>(forced_recompute);
  // Time scaling rounds each stage's time to the ns: allow for it.
  const double slack = static_cast<double>(cp.c.m) * (S + 1) * 4;
  return std::max<Nanos>(0, static_cast<Nanos>(std::floor(best - slack)));
}

}  // namespace ppb::search_detail
