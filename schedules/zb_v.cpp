// ZB-V, adaptive: the Zero Bubble paper's automatic schedule for two chunks
// per rank in the V placement (Qi et al., "Zero Bubble Pipeline
// Parallelism", ICLR 2024, §6; rank r holds stages r and 2p-1-r).
//
// Input: the stage costs of the spec (F, I = backward_input + recompute,
// W = backward_weight, the message time between consecutive stages on two
// devices) and an activation limit per rank: by default the larger of p
// micro-batches of what the rank's two stages stash (1F1B's rank-0 amount,
// as the authors' default 2p chunk-F units) and what torch's
// ZBVZeroBubble order holds on the rank; `pipeline.activation_limit: kp`
// or a byte count.
// Output: the per-rank order of F, I and W ops with the shortest iteration
// the engine simulates among three candidate families, then improved by
// swaps of neighbouring ops while the (makespan, longest per-rank span,
// largest stash) score drops (zb_adaptive.h, PickBest):
//   1. the authors' V heuristic (sail-sg zero-bubble v0.1.0,
//      megatron/core/pipeline_parallel/v_schedule.py, PipelineGraph
//      .try_v_schedule in its four (fill_f, fill_b) settings with its
//      retries under the approved bubble of the previous try), written
//      here for per-stage costs and bytes: F stashes the stage's
//      activation, I frees its input_grad_release, W the rest;
//   2. PyTorch's ScheduleZBVZeroBubble order (zbv_zero_bubble.cpp);
//   3. one micro-batch at a time (F, F, I, W, I, W per rank), which fits
//      every limit that holds one micro-batch of the rank's two stages.
// Since 1 and 2 are among the candidates, zb-v is never slower than either
// under the same costs and limit (in the engine's time); under the default
// limit 2 always fits, so zb-v is never slower than zbv-zero-bubble.
#include <algorithm>
#include <array>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "schedules/internal.h"
#include "schedules/schedule.h"
#include "schedules/zb_adaptive.h"

namespace ppb {
namespace {

using schedule_internal::Cat;
using schedule_internal::Str;

// The authors' V heuristic over "lanes": on rank r, F lane l is model chunk
// l and B (I) and W lane l are model chunk 1-l, so that lane 0 always waits
// on rank r-1 and lane 1 on rank r+1. Op kinds: 0 F, 1 I, 2 W.
class VHeuristic {
 public:
  VHeuristic(const zb::Plan& plan, int p) : plan_(plan), p_(p), m_(plan.m) {}

  // One try (fill_f, fill_b) with the bubble each rank was approved by the
  // previous try (empty: none), then retried while that lowers the largest
  // bubble. nullopt when a step of the heuristic cannot be taken (it would
  // break the limit or run an op before its input).
  std::optional<std::pair<zb::Orders, Nanos>> Try(bool fill_f, bool fill_b,
                                                  const std::vector<Nanos>& approved,
                                                  int depth) {
    Reset(approved);
    if (!Run(fill_f, fill_b)) return std::nullopt;
    const Nanos max_bubble = MaxBubble(-1);
    std::pair<zb::Orders, Nanos> mine{Orders(), max_bubble};
    if (depth < 32 && (max_approved_ < 0 || max_bubble < max_approved_)) {
      const std::vector<Nanos> bubbles = bubble_;
      auto again = Try(fill_f, fill_b, bubbles, depth + 1);
      if (again && again->second < max_bubble) return again;
    }
    return mine;
  }

 private:
  int Stage(int r, int kind, int lane) const {
    const int chunk = kind == 0 ? lane : 1 - lane;
    return chunk == 0 ? r : 2 * p_ - 1 - r;
  }
  const zb::StagePlan& At(int r, int kind, int lane) const {
    return plan_.stages[static_cast<size_t>(Stage(r, kind, lane))];
  }
  Nanos Cost(int r, int kind, int lane) const {
    const zb::StagePlan& s = At(r, kind, lane);
    return kind == 0 ? s.f : kind == 1 ? s.i : s.w;
  }
  Bytes Mem(int r, int kind, int lane) const {
    const zb::StagePlan& s = At(r, kind, lane);
    return kind == 0 ? s.act : kind == 1 ? -(s.act - s.held) : -s.held;
  }
  // The message time into (r, kind, lane) from the rank it waits on (0 for
  // the first stage's F and the last stage's I, which wait on none).
  Nanos Comm(int r, int kind, int lane) const {
    const int s = Stage(r, kind, lane);
    // F of stage s waits on stage s-1; I of stage s on stage s+1.
    const int boundary = kind == 0 ? s - 1 : s;
    if (boundary < 0 || boundary + 1 >= static_cast<int>(plan_.stages.size())) return 0;
    return plan_.stages[static_cast<size_t>(boundary)].comm;
  }
  size_t Id(int kind, int lane, int r, int mb) const {
    return ((static_cast<size_t>(kind) * 2 + lane) * p_ + r) * m_ + mb;
  }
  int& Count(int r, int kind, int lane) { return count_[static_cast<size_t>(r)][kind * 2 + lane]; }

  void Reset(const std::vector<Nanos>& approved) {
    count_.assign(static_cast<size_t>(p_), std::array<int, 6>{});
    end_.assign(static_cast<size_t>(6) * p_ * m_, -1);
    cur_.assign(static_cast<size_t>(p_), 0);
    mem_.assign(static_cast<size_t>(p_), 0);
    bubble_.assign(static_cast<size_t>(p_), 0);
    pending_w_.assign(static_cast<size_t>(p_), {});
    order_.assign(static_cast<size_t>(p_), {});
    approved_ = approved.empty() ? std::vector<Nanos>(static_cast<size_t>(p_), -1) : approved;
    max_approved_ = *std::max_element(approved_.begin(), approved_.end());
  }

  Nanos MaxBubble(int r) const {
    Nanos most = *std::max_element(bubble_.begin(), bubble_.end());
    if (r >= 0) most = std::max(most, max_approved_ - approved_[static_cast<size_t>(r)]);
    return most;
  }
  Bytes Limit(int r) const { return At(r, 0, 0).limit; }
  // The end of op `id` (-1: not run; the authors' code reads the last op's
  // end for "no such op", kept so that its choices are the same).
  Nanos EndOr(std::optional<size_t> id) const { return id ? end_[*id] : end_.back(); }

  // Puts the next op of (r, kind, lane); false when it cannot run yet.
  bool Put(int r, int kind, int lane) {
    const int mb = Count(r, kind, lane);
    if (mb >= m_) return false;
    if (kind == 0 && mem_[static_cast<size_t>(r)] + Mem(r, kind, lane) > Limit(r)) return false;
    const Nanos cost = Cost(r, kind, lane);
    const Nanos no_bubble = cur_[static_cast<size_t>(r)] + cost;
    Nanos end = no_bubble;
    // The op of the same micro-batch before it on this rank (F lane 0
    // before F lane 1 before I lane 0 before I lane 1; W after its I).
    if (kind > 0 || lane > 0) {
      const int prev = kind < 2 ? kind * 2 + lane - 1 : 2 + lane;
      if (end_[Id(prev / 2, prev % 2, r, mb)] < 0) return false;
    }
    if (kind < 2) {
      const int from = lane == 1 ? r + 1 : r - 1;
      if (from >= 0 && from < p_) {
        const Nanos dep = end_[Id(kind, lane, from, mb)];
        if (dep < 0) return false;
        end = std::max(end, dep + Comm(r, kind, lane) + cost);
      }
    }
    if (Count(r, 0, 0) > 0) bubble_[static_cast<size_t>(r)] += end - no_bubble;
    end_[Id(kind, lane, r, mb)] = end;
    cur_[static_cast<size_t>(r)] = end;
    mem_[static_cast<size_t>(r)] += Mem(r, kind, lane);
    order_[static_cast<size_t>(r)].push_back(
        Op{kind == 0 ? OpKind::F : kind == 1 ? OpKind::I : OpKind::W,
           StageId(Stage(r, kind, lane)), MicrobatchId(mb)});
    if (kind == 1) pending_w_[static_cast<size_t>(r)].push_back(lane);
    ++Count(r, kind, lane);
    return true;
  }
  bool PutW(int r) {
    auto& q = pending_w_[static_cast<size_t>(r)];
    if (q.empty()) return false;
    const int lane = q.front();
    q.pop_front();
    return Put(r, 2, lane);
  }
  Nanos NextWCost(int r) const {
    return Cost(r, 2, pending_w_[static_cast<size_t>(r)].front());
  }
  // W's fill the wait for `dep` (an op on another rank), then one more
  // when the wait exceeds the bubble this rank may still take.
  bool FillBubble(int r, std::optional<size_t> dep, Nanos comm, bool fill) {
    auto& q = pending_w_[static_cast<size_t>(r)];
    while (!q.empty() && dep && end_[*dep] + comm >= cur_[static_cast<size_t>(r)] + NextWCost(r)) {
      if (!PutW(r)) return false;
    }
    if (!q.empty() && EndOr(dep) + comm - cur_[static_cast<size_t>(r)] >
                          MaxBubble(r) - bubble_[static_cast<size_t>(r)]) {
      if (fill && !PutW(r)) return false;
    }
    return true;
  }

  bool Run(bool fill_f, bool fill_b) {
    // Warm-up: one F of lane 0 per rank, then from the last rank back, as
    // many more lane-0 F's as fit before lane 1's first F arrives (up to m
    // per rank, as v0.1.0 caps them; later commits cap rank r at m - r).
    for (int r = 0; r < p_; ++r) {
      if (!Put(r, 0, 0)) return false;
    }
    for (int r = p_ - 1; r >= 0; --r) {
      if (r == p_ - 1) {
        if (!Put(r, 0, 1)) return false;
        continue;
      }
      const Nanos arrive = end_[Id(0, 1, r + 1, 0)] + Comm(r, 0, 1);
      while (mem_[static_cast<size_t>(r)] + At(r, 0, 0).act * (2 + 2 * r) <= Limit(r) &&
             cur_[static_cast<size_t>(r)] + Cost(r, 0, 0) <= arrive &&
             Count(r, 0, 0) < m_) {
        for (int j = 0; j <= r; ++j) {
          if (!Put(j, 0, 0)) return false;
        }
      }
      if (!Put(r, 0, 1)) return false;
    }
    // Every rank catches up with the one before it, lanes in turn.
    int lane = 0;
    for (int r = 1; r < p_; ++r) {
      int idle = 0;
      while (Count(r, 0, 0) + Count(r, 0, 1) < Count(r - 1, 0, 0) + Count(r - 1, 0, 1) ||
             (Count(r, 0, 1) <= Count(r - 1, 0, 1) && Count(r - 1, 0, 1) < m_)) {
        bool put = false;
        for (int j = p_ - 1; j >= r; --j) {
          if (Count(j, 0, lane) < m_) {
            if (!Put(j, 0, lane)) return false;
            put = true;
          }
        }
        lane = 1 - lane;
        idle = put ? 0 : idle + 1;
        if (idle > 2) return false;
      }
    }
    // Steady state: per round, each rank's next I (lane 1 ranks from the
    // last, then lane 0 ranks), then each rank's next F; W's fill waits.
    for (int round = 0; round < 2 * m_; ++round) {
      for (int r = 0; r < p_; ++r) {
        while (mem_[static_cast<size_t>(r)] + Mem(r, 1, 0) > Limit(r)) {
          if (!PutW(r)) return false;
        }
      }
      std::vector<int> b0, b1;
      for (int r = 0; r < p_; ++r) {
        if (Count(r, 1, 1) >= Count(r, 1, 0)) {
          b0.push_back(r);
        } else if (r == p_ - 1) {
          b1.push_back(r);
        } else if (end_[Id(1, 1, r + 1, Count(r, 1, 1))] >= 0 || Count(r, 1, 0) >= m_) {
          // (Count(r, 1, 1) < Count(r, 1, 0) <= m here.)
          b1.push_back(r);
        } else {
          b0.push_back(r);
        }
      }
      std::vector<std::pair<int, int>> bs;
      for (auto it = b1.rbegin(); it != b1.rend(); ++it) bs.emplace_back(*it, 1);
      for (int r : b0) bs.emplace_back(r, 0);
      for (const auto& [r, l] : bs) {
        std::optional<size_t> dep;
        const int mb = Count(r, 1, l);
        if (l == 1 && r < p_ - 1 && mb < m_) dep = Id(1, 1, r + 1, mb);
        if (l == 0 && r > 0 && mb < m_) dep = Id(1, 0, r - 1, mb);
        if (!FillBubble(r, dep, Comm(r, 1, l), l == 1 || fill_b)) return false;
        if (!Put(r, 1, l)) return false;
      }
      for (int r = 0; r < p_; ++r) {
        if (Count(r, 0, 1) >= m_) continue;
        int item = -1;
        if (Count(r, 0, 1) >= Count(r, 0, 0)) {
          item = 0;
        } else if (r == p_ - 1) {
          item = 1;
        } else if (end_[Id(0, 1, r + 1, Count(r, 0, 1))] >= 0) {
          item = 1;
        } else if (Count(r, 0, 0) < m_) {
          if (r == 0 || end_[Id(0, 0, r - 1, Count(r, 0, 0))] >= 0) item = 0;
        }
        if (item < 0) continue;
        while (mem_[static_cast<size_t>(r)] + Mem(r, 0, item) > Limit(r)) {
          if (!PutW(r)) return false;
        }
        std::optional<size_t> dep;
        const int mb = Count(r, 0, item);
        if (item == 0 && r > 0 && mb < m_) dep = Id(0, 0, r - 1, mb);
        if (item == 1 && r < p_ - 1 && mb < m_) dep = Id(0, 1, r + 1, mb);
        if (!FillBubble(r, dep, Comm(r, 0, item), fill_f)) return false;
        if (!Put(r, 0, item)) return false;
      }
    }
    for (int r = 0; r < p_; ++r) {
      while (!pending_w_[static_cast<size_t>(r)].empty()) {
        if (!PutW(r)) return false;
      }
    }
    // Every op ran once.
    for (int r = 0; r < p_; ++r) {
      for (int k = 0; k < 6; ++k) {
        if (count_[static_cast<size_t>(r)][k] != m_) return false;
      }
    }
    return true;
  }

  zb::Orders Orders() const { return order_; }

  const zb::Plan& plan_;
  int p_ = 0, m_ = 0;
  std::vector<std::array<int, 6>> count_;
  std::vector<Nanos> end_, cur_, bubble_, approved_;
  std::vector<Bytes> mem_;
  std::vector<std::deque<int>> pending_w_;
  zb::Orders order_;
  Nanos max_approved_ = -1;
};

// F, F, I, W, I, W of one micro-batch at a time on every rank.
zb::Orders OneAtATime(int p, int m) {
  zb::Orders orders(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) {
    const StageId down(r), up(2 * p - 1 - r);
    for (int mb = 0; mb < m; ++mb) {
      const MicrobatchId j(mb);
      for (const Op& op : {Op{OpKind::F, down, j}, Op{OpKind::F, up, j}, Op{OpKind::I, up, j},
                           Op{OpKind::W, up, j}, Op{OpKind::I, down, j}, Op{OpKind::W, down, j}}) {
        orders[static_cast<size_t>(r)].push_back(op);
      }
    }
  }
  return orders;
}

}  // namespace

namespace zb {

std::vector<std::optional<std::pair<Orders, Nanos>>> AuthorsVHeuristic(const Plan& plan, int p) {
  std::vector<std::optional<std::pair<Orders, Nanos>>> out;
  VHeuristic authors(plan, p);
  for (const bool fill_b : {true, false}) {
    for (const bool fill_f : {true, false}) out.push_back(authors.Try(fill_f, fill_b, {}, 0));
  }
  return out;
}

}  // namespace zb

Result<Program> GenerateZBV(const PipelineSpec& spec, const ScheduleParams& params) {
  if (Status s = schedule_internal::CheckShape(spec); !s.ok()) return s.error();
  if (spec.v != 2) {
    return Error{"pipeline.virtual_stages",
                 Cat({"must be 2 for zb-v (two chunks per rank in a V); got ", Str(spec.v)})};
  }
  if (spec.stage_device != StagePlacementDevices(StagePlacement::V, spec.p, 2)) {
    return Error{"pipeline.schedule",
                 "zb-v needs the V placement (rank r holds stages r and 2p-1-r); got another "
                 "placement of the stages"};
  }
  if (params.group != 0) {
    return Error{"pipeline.microbatch_group",
                 Cat({"must not be set for zb-v, which has no microbatch group; got ",
                      Str(params.group)})};
  }
  if (spec.stages.size() != static_cast<size_t>(spec.num_stages())) {
    return Error{"", Cat({"the spec must give ", Str(spec.num_stages()), " stage costs for zb-v"})};
  }
  PipelineSpec placed = spec;
  if (placed.link_matrix.size() != static_cast<size_t>(spec.p) * static_cast<size_t>(spec.p)) {
    placed.link_matrix.assign(static_cast<size_t>(spec.p) * spec.p, Link{});
  }
  const int multiple = params.activation_multiple > 0 ? params.activation_multiple : 1;
  zb::Plan plan = zb::MakePlan(placed, multiple, params.activation_bytes);
  zb::Orders torch;
  for (int r = 0; r < spec.p; ++r) torch.push_back(schedule_internal::ZbvRankOrder(spec.p, spec.m, r));
  // The default limit (no pipeline.activation_limit) is the memory of the
  // fixed schedule zb-v generalises: on each rank, the larger of p
  // micro-batches of its two stages (1F1B's rank-0 amount, the paper's 2p
  // chunk-F units) and what torch's ZBVZeroBubble order holds there. With
  // a real I/W split, I frees less than the authors' model's half (the
  // layer's activation_after_input_grad stays until W), so torch's order
  // can hold more than p micro-batches on the middle ranks; without this,
  // the heuristic's orders could all miss the limit at large p and leave
  // one micro-batch at a time, ten times slower (issue 32). With it,
  // torch's order is always a candidate, so zb-v is never slower than
  // zbv-zero-bubble.
  if (params.activation_multiple <= 0 && params.activation_bytes <= 0) {
    for (int r = 0; r < spec.p; ++r) {
      const Bytes held = zb::RankActivationPeak(plan, torch[static_cast<size_t>(r)]);
      for (const int s : {r, 2 * spec.p - 1 - r}) {
        Bytes& limit = plan.stages[static_cast<size_t>(s)].limit;
        limit = std::max(limit, held);
      }
    }
  }
  for (int r = 0; r < spec.p; ++r) {
    const zb::StagePlan& a = plan.stages[static_cast<size_t>(r)];
    const zb::StagePlan& b = plan.stages[static_cast<size_t>(2 * spec.p - 1 - r)];
    if (a.act + b.act > a.limit) {
      return Error{"pipeline.activation_limit",
                   Cat({"must hold at least one micro-batch of both stages of every rank for "
                        "zb-v (rank ", Str(r), " stashes ", std::to_string(a.act + b.act),
                        " bytes per micro-batch); got ", std::to_string(a.limit), " bytes"})};
    }
  }
  std::vector<zb::Proposal> candidates;
  for (auto& tried : zb::AuthorsVHeuristic(plan, spec.p)) {
    if (tried) {
      candidates.push_back({std::move(tried->first), "the Zero Bubble authors' ZB-V heuristic"});
    }
  }
  candidates.push_back({std::move(torch), zb::FallbackOrigin("torch's ZBVZeroBubble order")});
  candidates.push_back({OneAtATime(spec.p, spec.m), "one micro-batch at a time"});
  const zb::Proposal best = zb::PickBest(placed, plan, std::move(candidates));
  if (best.orders.empty()) return Error{"schedule", "zb-v: no candidate order ran to the end"};
  Program program = schedule_internal::PlaceOnDevices(placed, best.orders);
  program.origin = best.origin;
  return program;
}

}  // namespace ppb
