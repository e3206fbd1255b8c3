// The Zero Bubble authors' greedy heuristic for ZB-1p / ZB-2p, rewritten from
// its description in sail-sg/zero-bubble-pipeline-parallelism v0.1.0
// (megatron/core/pipeline_parallel/auto_schedule.py: Graph.manual_order,
// tried by initial_solution for all 8 settings of allow_bubble_before_first_b,
// prioritize_b and no_bubble_greedy; Qi et al., ICLR 2024, §3.1 "heuristic
// algorithm"). The authors then polish its result with an ILP; ppb does not
// (zb_adaptive.cpp adds its own families and keeps the best simulated one).
//
// The planner walks micro-batches i = 0..m-1 and keeps, per stage, the end of
// its last op (e), its stashed memory and the idle time it has accumulated
// ("stage bubble"). Micro-batch 0: one F on every stage, then as many extra
// warm-up F's as fit before the first I comes back (and memory allows), then
// the I's from the last stage to the first. Later micro-batches: one F on
// every stage that should take one (with prioritize_b, a stage well ahead of
// the next may skip it when its F would delay the I it waits for), then one I
// per stage from the last to the first; a W is put before an F or I when
// memory demands it or when it ends before that op's input arrives (or,
// with no_bubble_greedy, when the wait is within the largest bubble so far).
// All remaining W's close each stage. Differences from the original: the
// message time is per link (comm of stage s is the s -> s+1 message), and
// memory follows ppb (F stashes act, I releases act - held, W the rest).
#include <algorithm>
#include <array>
#include <vector>

#include "schedules/zb_adaptive.h"

namespace ppb::zb {
namespace {

enum Kind { kF = 0, kI = 1, kW = 2 };

class Planner {
 public:
  Planner(const Plan& plan, bool allow_bubble_before_first_i,
          bool prioritize_i, bool no_bubble_greedy)
      : plan_(plan),
        n_(static_cast<int>(plan.stages.size())),
        m_(plan.m),
        allow_bubble_(allow_bubble_before_first_i),
        prioritize_i_(prioritize_i),
        greedy_(no_bubble_greedy) {
    for (auto& table : t_) {
      table.assign(static_cast<size_t>(n_) * m_, 0);
    }
    count_.assign(static_cast<size_t>(n_), {0, 0, 0});
    end_.assign(static_cast<size_t>(n_), 0);
    mem_.assign(static_cast<size_t>(n_), 0);
    bubble_.assign(static_cast<size_t>(n_), 0);
    orders_.assign(static_cast<size_t>(n_), {});
  }

  // The orders, or empty when the setting cannot fit memory.
  Orders Run() {
    for (int i = 0; i < m_ && ok_; ++i) {
      if (i == 0) {
        FirstMicrobatch();
      } else {
        NextMicrobatch(i);
      }
    }
    for (int j = 0; j < n_ && ok_; ++j) {
      while (Count(j, kW) < m_) Put(j, kW);
    }
    if (!ok_) return {};
    return orders_;
  }

 private:
  const StagePlan& S(int j) const { return plan_.stages[static_cast<size_t>(j)]; }
  int& Count(int j, Kind k) { return count_[static_cast<size_t>(j)][k]; }
  Nanos& T(Kind k, int j, int mb) {
    return t_[k][static_cast<size_t>(j) * m_ + static_cast<size_t>(mb)];
  }
  Nanos& E(int j) { return end_[static_cast<size_t>(j)]; }
  Bytes& Mem(int j) { return mem_[static_cast<size_t>(j)]; }
  Nanos& Bubble(int j) { return bubble_[static_cast<size_t>(j)]; }
  Nanos Cost(int j, Kind k) const {
    return k == kF ? S(j).f : k == kI ? S(j).i : S(j).w;
  }
  Bytes MemDelta(int j, Kind k) const {
    return k == kF ? S(j).act : k == kI ? -(S(j).act - S(j).held) : -S(j).held;
  }
  Nanos MaxBubble() const {
    return *std::max_element(bubble_.begin(), bubble_.end());
  }

  void Put(int j, Kind k) {
    const int idx = Count(j, k);
    if (idx >= m_ || Mem(j) + MemDelta(j, k) > S(j).limit) {
      ok_ = false;
      return;
    }
    const Nanos cost = Cost(j, k);
    const Nanos no_bubble = E(j) + cost;
    Nanos end = no_bubble;
    if (j > 0 && k == kF) {
      end = std::max(end, T(kF, j - 1, idx) + S(j - 1).comm + cost);
    }
    if (j + 1 < n_ && k == kI) {
      end = std::max(end, T(kI, j + 1, idx) + S(j).comm + cost);
    }
    if (Count(j, kF) > 0) Bubble(j) += end - no_bubble;
    E(j) = end;
    T(k, j, idx) = end;
    Mem(j) += MemDelta(j, k);
    ++Count(j, k);
    const OpKind kind = k == kF ? OpKind::F : k == kI ? OpKind::I : OpKind::W;
    orders_[static_cast<size_t>(j)].push_back(
        Op{kind, StageId(j), MicrobatchId(idx)});
  }

  // Puts W's on stage j until `extra` more bytes fit; false when they cannot.
  bool MakeRoom(int j, Bytes extra) {
    while (Mem(j) + extra > S(j).limit) {
      if (Count(j, kW) >= Count(j, kI)) {
        ok_ = false;
        return false;
      }
      Put(j, kW);
    }
    return true;
  }

  // Before an op of stage j whose input arrives at `arrive`: W's that end by
  // then, and one more if the wait is a bubble the planner will not accept.
  void FillBefore(int j, Nanos arrive) {
    while (ok_ && Count(j, kW) < Count(j, kI) && E(j) + S(j).w <= arrive) {
      Put(j, kW);
    }
    if (ok_ && Count(j, kW) < Count(j, kI) && E(j) < arrive) {
      if (arrive - E(j) <= MaxBubble() - Bubble(j)) {
        if (greedy_) Put(j, kW);
      } else {
        Put(j, kW);
      }
    }
  }

  void FirstMicrobatch() {
    for (int j = 0; j < n_; ++j) Put(j, kF);
    std::vector<int> extra(static_cast<size_t>(n_), 0);
    Nanos last = 0;
    for (int j = n_ - 1; j >= 0; --j) {
      if (j == n_ - 1) {
        last = T(kF, j, 0) + S(j).i;
        continue;
      }
      Bytes mem = Mem(j);
      Nanos cost = E(j);
      int& req = extra[static_cast<size_t>(j)];
      while (Count(j, kF) + req < m_ && mem + S(j).act <= S(j).limit) {
        if (allow_bubble_) {
          if (cost + S(j).f > last + S(j).comm) break;
        } else {
          if (cost >= last + S(j).comm) break;
        }
        mem += S(j).act;
        cost += S(j).f;
        ++req;
      }
      last = std::max(cost, last + S(j).comm) + S(j).i;
    }
    for (int j = 1; j < n_; ++j) {
      int& req = extra[static_cast<size_t>(j)];
      while (req > 0 && req >= extra[static_cast<size_t>(j - 1)] &&
             Count(j, kF) + req < m_) {
        --req;
      }
    }
    for (int j = 0; j < n_; ++j) {
      for (int k = 0; k < extra[static_cast<size_t>(j)]; ++k) Put(j, kF);
    }
    for (int j = n_ - 1; j >= 0; --j) Put(j, kI);
  }

  void NextMicrobatch(int i) {
    std::vector<int> req(static_cast<size_t>(n_), 0);
    for (int j = 0; j < n_; ++j) {
      if (Count(j, kF) >= m_) continue;
      if (prioritize_i_ && j + 1 < n_ && Count(j, kF) >= Count(j + 1, kF) + 2) {
        const Nanos next_plus_fw =
            E(j + 1) + S(j + 1).f + S(j + 1).i + S(j).comm;
        if (E(j) >= next_plus_fw) continue;
        Nanos w_cost = 0;
        int w_cnt = 0;
        Bytes with_w = Mem(j) + S(j).act;
        while (with_w > S(j).limit && Count(j, kW) + w_cnt < Count(j, kI)) {
          w_cost += S(j).w;
          with_w -= S(j).held;
          ++w_cnt;
        }
        if (E(j) + S(j).f + w_cost <= next_plus_fw) {
          req[static_cast<size_t>(j)] = 1;
          continue;
        }
        if (next_plus_fw - E(j) <= MaxBubble() - Bubble(j)) continue;
      }
      req[static_cast<size_t>(j)] = 1;
    }
    for (int j = n_ - 2; j >= 0; --j) {
      req[static_cast<size_t>(j)] =
          std::min(req[static_cast<size_t>(j)], req[static_cast<size_t>(j + 1)]);
    }
    for (int j = 0; j < n_ && ok_; ++j) {
      if (req[static_cast<size_t>(j)] == 0) continue;
      if (!MakeRoom(j, S(j).act)) return;
      if (j > 0) {
        FillBefore(j, T(kF, j - 1, Count(j, kF)) + S(j - 1).comm);
      }
      Put(j, kF);
    }
    for (int j = n_ - 1; j >= 0 && ok_; --j) {
      if (Count(j, kI) != i || Count(j, kF) <= i) {
        ok_ = false;
        return;
      }
      if (!MakeRoom(j, MemDelta(j, kI))) return;
      if (j + 1 < n_) FillBefore(j, T(kI, j + 1, i) + S(j).comm);
      if (j == 0 && Count(j, kF) == m_) {
        while (ok_ && Count(j, kW) < Count(j, kI)) Put(j, kW);
      }
      Put(j, kI);
    }
  }

  const Plan& plan_;
  int n_, m_;
  bool allow_bubble_, prioritize_i_, greedy_;
  bool ok_ = true;
  std::array<std::vector<Nanos>, 3> t_;  // end time by kind, [stage * m + mb]
  std::vector<std::array<int, 3>> count_;
  std::vector<Nanos> end_;
  std::vector<Bytes> mem_;
  std::vector<Nanos> bubble_;
  Orders orders_;
};

}  // namespace

std::vector<Orders> AuthorsHeuristic(const Plan& plan) {
  std::vector<Orders> out;
  for (bool allow_bubble : {true, false}) {
    for (bool prioritize_i : {true, false}) {
      for (bool greedy : {true, false}) {
        Orders orders =
            Planner(plan, allow_bubble, prioritize_i, greedy).Run();
        if (!orders.empty()) out.push_back(std::move(orders));
      }
    }
  }
  return out;
}

Bytes RankActivationPeak(const Plan& plan, const std::vector<Op>& order) {
  Bytes now = 0, peak = 0;
  for (const Op& op : order) {
    const StagePlan& stage = plan.stages[static_cast<size_t>(op.stage.value)];
    now += op.kind == OpKind::F   ? stage.act
           : op.kind == OpKind::I ? -(stage.act - stage.held)
           : op.kind == OpKind::W ? -stage.held
                                  : -stage.act;
    peak = std::max(peak, now);
  }
  return peak;
}

Bytes ActivationPeak(const StagePlan& stage, const std::vector<Op>& order) {
  Bytes now = 0, peak = 0;
  for (const Op& op : order) {
    switch (op.kind) {
      case OpKind::F:
        now += stage.act;
        break;
      case OpKind::I:
        now -= stage.act - stage.held;
        break;
      case OpKind::W:
        now -= stage.held;
        break;
      case OpKind::B:
        now -= stage.act;
        break;
    }
    peak = std::max(peak, now);
  }
  return peak;
}

}  // namespace ppb::zb
