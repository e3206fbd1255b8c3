// Interleaved zero bubble (Qi et al., "Zero Bubble Pipeline Parallelism",
// ICLR 2024, the hand-made ZB-H1 schedule, §3.1, extended to v chunks): the
// backward is split into I (input gradient, on the critical path) and W
// (weight gradient, free to move), and W ops fill the bubbles that 1F1B
// leaves. With v = 1 this is ZB-H1: bubble (p-1)(T_F + T_I - T_W)
// (formulas.md §1.3) at 1F1B's activation memory.
//
// Order (torch.distributed.pipelining ScheduleInterleavedZeroBubble, v2.14.1,
// _calculate_single_rank_operations and _get_1f1b_rank_ops with
// enable_zero_bubble):
//   - rounds = max(1, m / p) must divide m; g = m / rounds micro-batches per
//     round (as torch's interleaved 1F1B);
//   - rank r runs warm-up = min((v-1)*g + (p-1-r), v*m) forwards (one op per
//     hop, not interleaved 1F1B's two: I is shorter than B);
//   - step k (k = 0 .. v*m + warm-up - 1) runs, while forwards remain, the
//     forward on chunk (k / g) mod v, and from k = warm-up on the I of chunk
//     v-1 - ((k - warm-up) / g) mod v; each chunk takes its micro-batches in
//     order 0, 1, ...;
//   - from the (r+1)-th I on, every step that runs an I also runs the W of
//     the oldest I whose W has not run: rank 0 runs each W right after its
//     I, rank r keeps r W's back to fill the bubbles of the drain;
//   - the W's still pending run at the end, oldest first.
// torch then inserts idle steps where a dependency is not met
// (_add_bubbles_to_actions); that changes no rank's order.
#include <algorithm>
#include <vector>

#include "schedules/internal.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

// One rank's order. REQUIRES: g >= 1, 0 <= r < p.
std::vector<Op> RankOrder(int p, int v, int m, int g, int r) {
  const int microbatch_ops = v * m;
  const int warmup = std::min((v - 1) * g + (p - 1 - r), microbatch_ops);
  const int fwd_bwd = microbatch_ops - warmup;
  const int total = microbatch_ops + warmup;  // warm-up + steady + cool-down
  const auto forward_stage = [&](int k) { return ((k / g) % v) * p + r; };
  const auto backward_stage = [&](int k) {
    return (v - 1 - ((k - warmup) / g) % v) * p + r;
  };
  // Next micro-batch per global stage, for F, I and W.
  std::vector<int> next_f(static_cast<size_t>(p) * v, 0);
  std::vector<int> next_i(next_f.size(), 0);
  std::vector<int> next_w(next_f.size(), 0);
  std::vector<int> i_stages;  // the stage of each I, in order
  size_t w_done = 0;
  std::vector<Op> order;
  order.reserve(3 * static_cast<size_t>(microbatch_ops));
  const auto emit = [&](OpKind kind, int stage, std::vector<int>& next) {
    order.push_back(Op{kind, StageId(stage), MicrobatchId(next[stage]++)});
  };
  const auto emit_oldest_w = [&] {
    emit(OpKind::W, i_stages[w_done], next_w);
    ++w_done;
  };
  for (int k = 0; k < total; ++k) {
    if (k < warmup + fwd_bwd) emit(OpKind::F, forward_stage(k), next_f);
    if (k < warmup) continue;
    const int stage = backward_stage(k);
    emit(OpKind::I, stage, next_i);
    i_stages.push_back(stage);
    if (k - warmup >= r) emit_oldest_w();
  }
  while (w_done < i_stages.size()) emit_oldest_w();
  return order;
}

}  // namespace

// Refuses m not a multiple of max(1, m / p) (torch's ValueError, quoted) and
// a microbatch_group (torch has none). params.flavor is not used.
namespace {

Result<int> ZeroBubbleGroup(const PipelineSpec& spec, const ScheduleParams& params) {
  if (Status s = schedule_internal::CheckShape(spec); !s.ok()) return s.error();
  if (params.group != 0) {
    return schedule_internal::NoGroup("interleaved-zero-bubble", params.group);
  }
  return schedule_internal::TorchMicrobatchesPerRound(spec, "interleaved-zero-bubble",
                                                      "Zero bubble requires");
}

}  // namespace

Status CheckInterleavedZeroBubble(const PipelineSpec& spec, const ScheduleParams& params) {
  const Result<int> g = ZeroBubbleGroup(spec, params);
  if (!g.ok()) return g.error();
  return {};
}

Result<Program> GenerateInterleavedZeroBubble(const PipelineSpec& spec,
                                              const ScheduleParams& params) {
  const Result<int> g = ZeroBubbleGroup(spec, params);
  if (!g.ok()) return g.error();
  std::vector<std::vector<Op>> rank_orders;
  for (int r = 0; r < spec.p; ++r) {
    rank_orders.push_back(RankOrder(spec.p, spec.v, spec.m, *g, r));
  }
  return schedule_internal::PlaceOnDevices(spec, rank_orders);
}

}  // namespace ppb
