// ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, §6): two
// chunks per rank in the V placement (rank r holds stages r and 2p-1-r) with
// split backward; zero bubble when T_F = T_I = T_W, at 1F1B's peak
// activation memory (2p chunk-micro-batches of half a stage each,
// formulas.md §1.3 and §2).
//
// Order (torch.distributed.pipelining ScheduleZBVZeroBubble, v2.14.1,
// _calculate_single_rank_operations), with chunk 0 = stage r and chunk 1 =
// stage 2p-1-r, each chunk's F, I and W taking micro-batches 0, 1, ... in
// turn, and n = max(2p - 1, m):
//   warm-up   2(p-r)-1 x F0; r x (F1, F0); p-r x (F1, I1, W1);
//   steady    while F1 has run fewer than F0 or F0 fewer than n:
//             [F0 if F0 has run fewer than n], I0, W0, F1, I1, W1;
//   cool-down r x (I0, I1); p-r x (I0, W0) (the W's lagging from the
//             steady phase); then the W1's left, then the W0's left.
// torch builds it for n >= m micro-batches and drops the ops of
// micro-batches >= m (idle steps); so does this generator. Only v = 2 is
// accepted (torch's ValueError, quoted); any m >= 1.
#include <algorithm>
#include <vector>

#include "schedules/internal.h"
#include "schedules/schedule.h"

namespace ppb {
namespace schedule_internal {

std::vector<Op> ZbvRankOrder(int p, int m, int r) {
  const int n = std::max(2 * p - 1, m);
  const StageId chunk[2] = {StageId(r), StageId(2 * p - 1 - r)};
  int f[2] = {0, 0};  // next micro-batch of F, I and W per chunk
  int b[2] = {0, 0};
  int w[2] = {0, 0};
  std::vector<Op> order;
  order.reserve(6 * static_cast<size_t>(n));
  const auto emit = [&](OpKind kind, int c, int& next) {
    if (next < m) order.push_back(Op{kind, chunk[c], MicrobatchId(next)});
    ++next;
  };
  for (int k = 0; k < 2 * (p - r) - 1; ++k) emit(OpKind::F, 0, f[0]);
  for (int k = 0; k < r; ++k) {
    emit(OpKind::F, 1, f[1]);
    emit(OpKind::F, 0, f[0]);
  }
  for (int k = 0; k < p - r; ++k) {
    emit(OpKind::F, 1, f[1]);
    emit(OpKind::I, 1, b[1]);
    emit(OpKind::W, 1, w[1]);
  }
  while (f[1] < f[0] || f[0] < n) {
    if (f[0] < n) emit(OpKind::F, 0, f[0]);
    emit(OpKind::I, 0, b[0]);
    emit(OpKind::W, 0, w[0]);
    emit(OpKind::F, 1, f[1]);
    emit(OpKind::I, 1, b[1]);
    emit(OpKind::W, 1, w[1]);
  }
  for (int k = 0; k < r; ++k) {
    emit(OpKind::I, 0, b[0]);
    emit(OpKind::I, 1, b[1]);
  }
  for (int k = 0; k < p - r; ++k) {
    emit(OpKind::I, 0, b[0]);
    emit(OpKind::W, 0, w[0]);
  }
  while (w[1] < b[1]) emit(OpKind::W, 1, w[1]);
  while (w[0] < b[0]) emit(OpKind::W, 0, w[0]);
  return order;
}

}  // namespace schedule_internal

// Refuses v != 2 and a placement other than V (see CheckVShape) and a
// microbatch_group. params.flavor is not used.
Status CheckZBVZeroBubble(const PipelineSpec& spec, const ScheduleParams& params) {
  if (Status s = schedule_internal::CheckVShape(spec, "zbv-zero-bubble"); !s.ok()) return s;
  if (params.group != 0) return schedule_internal::NoGroup("zbv-zero-bubble", params.group);
  return {};
}

Result<Program> GenerateZBVZeroBubble(const PipelineSpec& spec,
                                      const ScheduleParams& params) {
  if (Status s = CheckZBVZeroBubble(spec, params); !s.ok()) return s.error();
  std::vector<std::vector<Op>> rank_orders;
  for (int r = 0; r < spec.p; ++r) {
    rank_orders.push_back(schedule_internal::ZbvRankOrder(spec.p, spec.m, r));
  }
  return schedule_internal::PlaceOnDevices(spec, rank_orders);
}

}  // namespace ppb
