// ppb's own order families for the adaptive zero-bubble schedules.
//
// ReadyFirst is an event-driven list scheduler over the planner's costs: it
// repeatedly takes the stage whose next op can start earliest (ties: the
// lower stage) and starts it there. A stage's candidates are its next I (its
// F done and the gradient in), its next F (input in, fewer than `cap` F's
// without their I, and room under the limit) and its oldest pending W. I goes
// before F and F before W when they can start at the same time: I is on the
// critical path back to stage 0 and W has no successor but the end of the
// iteration (Qi et al., ICLR 2024, §2: W fills bubbles). The W policy:
//   fill: a W starts whenever it can start no later than any I or F;
//   fits: it starts only if it also ends before the next I or F of the
//         stage can start (a lower bound when that input is not yet sent),
//         or when memory or the end of the F's and I's leave nothing else.
// The cap is the warm-up depth: p - s (1F1B's in-flight count), one or two
// more, 2 (p - s), or none (the limit alone).
//
// BoundedOneFOneB is 1F1B with each B split into I and W back to back and
// the warm-up cut to what the limit holds: the candidate that always fits.
#include <algorithm>
#include <limits>
#include <vector>

#include "schedules/zb_adaptive.h"

namespace ppb::zb {
namespace {

constexpr Nanos kUnknown = std::numeric_limits<Nanos>::max();

enum class WPolicy { kFill, kFits };

struct StageState {
  int nf = 0, ni = 0, nw = 0;  // ops started, by kind
  Nanos free = 0;              // end of its last op
  Bytes mem = 0;               // stashed activation bytes
};

Orders ListSchedule(const Plan& plan, const std::vector<int>& cap,
                    WPolicy policy) {
  const int n = static_cast<int>(plan.stages.size());
  const int m = plan.m;
  auto at = [m](int s, int j) { return static_cast<size_t>(s) * m + j; };
  std::vector<Nanos> f_end(static_cast<size_t>(n) * m, kUnknown);
  std::vector<Nanos> i_end(static_cast<size_t>(n) * m, kUnknown);
  std::vector<StageState> st(static_cast<size_t>(n));
  Orders orders(static_cast<size_t>(n));
  const long total = 3L * n * m;
  Nanos now = 0;  // start of the last op placed: nothing unplaced starts before

  for (long placed = 0; placed < total; ++placed) {
    int best_stage = -1;
    OpKind best_kind = OpKind::F;
    Nanos best_start = kUnknown;
    for (int s = 0; s < n; ++s) {
      const StagePlan& sp = plan.stages[static_cast<size_t>(s)];
      StageState& x = st[static_cast<size_t>(s)];
      // Ready time of the next I and F (kUnknown: input not yet sent) and a
      // lower bound for each when unknown.
      Nanos i_ready = kUnknown, i_bound = kUnknown;
      if (x.ni < x.nf) {
        const Nanos fe = f_end[at(s, x.ni)];
        if (s + 1 == n) {
          i_ready = fe;
        } else if (i_end[at(s + 1, x.ni)] != kUnknown) {
          i_ready = std::max(fe, i_end[at(s + 1, x.ni)] + sp.comm);
        } else {
          i_bound = std::max(fe, now + plan.stages[static_cast<size_t>(s + 1)].i +
                                     sp.comm);
        }
      }
      Nanos f_ready = kUnknown, f_bound = kUnknown;
      const bool f_room = x.mem + sp.act <= sp.limit;
      const bool f_allowed = x.nf < m && x.nf - x.ni < cap[static_cast<size_t>(s)];
      if (f_allowed && f_room) {
        if (s == 0) {
          f_ready = 0;
        } else if (f_end[at(s - 1, x.nf)] != kUnknown) {
          f_ready = f_end[at(s - 1, x.nf)] +
                    plan.stages[static_cast<size_t>(s - 1)].comm;
        } else {
          f_bound = now + plan.stages[static_cast<size_t>(s - 1)].f +
                    plan.stages[static_cast<size_t>(s - 1)].comm;
        }
      }
      Nanos start = kUnknown;
      OpKind kind = OpKind::F;
      auto consider = [&](Nanos ready, OpKind k) {
        if (ready == kUnknown) return;
        const Nanos s0 = std::max(x.free, ready);
        if (s0 < start) {
          start = s0;
          kind = k;
        }
      };
      consider(i_ready, OpKind::I);
      consider(f_ready, OpKind::F);
      if (x.nw < x.ni) {
        const Nanos w_start = std::max(x.free, i_end[at(s, x.nw)]);
        bool take = w_start < start;
        if (take && policy == WPolicy::kFits) {
          const Nanos next = std::min({i_ready, f_ready, i_bound, f_bound});
          const bool forced = (f_allowed && !f_room) || next == kUnknown;
          take = forced || w_start + sp.w <= next;
        }
        if (take) {
          start = w_start;
          kind = OpKind::W;
        }
      }
      if (start < best_start) {
        best_start = start;
        best_stage = s;
        best_kind = kind;
      }
    }
    if (best_stage < 0) return {};  // nothing can start: memory too tight
    const int s = best_stage;
    const StagePlan& sp = plan.stages[static_cast<size_t>(s)];
    StageState& x = st[static_cast<size_t>(s)];
    now = best_start;
    int mb = 0;
    switch (best_kind) {
      case OpKind::F:
        mb = x.nf++;
        x.free = best_start + sp.f;
        f_end[at(s, mb)] = x.free;
        x.mem += sp.act;
        break;
      case OpKind::I:
        mb = x.ni++;
        x.free = best_start + sp.i;
        i_end[at(s, mb)] = x.free;
        x.mem -= sp.act - sp.held;
        break;
      default:
        mb = x.nw++;
        x.free = best_start + sp.w;
        x.mem -= sp.held;
        break;
    }
    orders[static_cast<size_t>(s)].push_back(
        Op{best_kind, StageId(s), MicrobatchId(mb)});
  }
  return orders;
}

}  // namespace

std::vector<Orders> ReadyFirst(const Plan& plan) {
  const int n = static_cast<int>(plan.stages.size());
  std::vector<Orders> out;
  for (int variant = 0; variant < 5; ++variant) {
    std::vector<int> cap(static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) {
      const int depth = n - s;
      cap[static_cast<size_t>(s)] = variant < 3   ? depth + variant
                                    : variant == 3 ? 2 * depth
                                                   : plan.m;
    }
    for (WPolicy policy : {WPolicy::kFill, WPolicy::kFits}) {
      Orders orders = ListSchedule(plan, cap, policy);
      if (!orders.empty()) out.push_back(std::move(orders));
    }
  }
  return out;
}

Orders BoundedOneFOneB(const Plan& plan) {
  const int n = static_cast<int>(plan.stages.size());
  const int m = plan.m;
  Orders orders(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) {
    const StagePlan& sp = plan.stages[static_cast<size_t>(s)];
    // In flight at once: 1F1B's p - s, or what the limit holds (>= 1).
    int depth = std::min(n - s, m);
    if (sp.act > 0) {
      depth = static_cast<int>(
          std::min<Bytes>(depth, std::max<Bytes>(1, sp.limit / sp.act)));
    }
    std::vector<Op>& order = orders[static_cast<size_t>(s)];
    auto op = [s](OpKind k, int j) {
      return Op{k, StageId(s), MicrobatchId(j)};
    };
    const int warmup = depth - 1;
    for (int j = 0; j < warmup; ++j) order.push_back(op(OpKind::F, j));
    for (int j = 0; j < m; ++j) {
      if (j + warmup < m) order.push_back(op(OpKind::F, j + warmup));
      order.push_back(op(OpKind::I, j));
      order.push_back(op(OpKind::W, j));
    }
  }
  return orders;
}

}  // namespace ppb::zb
