// Looped BFS (Lamy-Poirier, "Breadth-First Pipeline Parallelism", MLSys'23):
// rank r holds chunks c = 0..v-1, i.e. global stages c*p + r, and runs each
// chunk's work for every micro-batch before moving to the next chunk.
//
// Order (torch.distributed.pipelining ScheduleLoopedBFS, v2.14.1,
// _calculate_single_rank_operations): for chunk c = 0..v-1 the forwards of
// micro-batches 0..m-1; then for chunk c = v-1..0 the full backwards of
// micro-batches m-1..0 (last in, first out). torch pads the list with idle
// steps only; the executed order is this one. No shape is refused (any
// m >= 1, v >= 1). Peak in-flight on every rank = v*m (all forwards run
// before the first backward).
#include <vector>

#include "schedules/internal.h"
#include "schedules/schedule.h"

namespace ppb {

// params (flavor, group) are not used: the order is torch's.
Status CheckLoopedBFS(const PipelineSpec& spec, const ScheduleParams& params) {
  if (Status s = schedule_internal::CheckShape(spec); !s.ok()) return s;
  if (params.group != 0) return schedule_internal::NoGroup("looped-bfs", params.group);
  return {};
}

Result<Program> GenerateLoopedBFS(const PipelineSpec& spec,
                                  const ScheduleParams& params) {
  if (Status s = CheckLoopedBFS(spec, params); !s.ok()) return s.error();
  const int p = spec.p;
  std::vector<std::vector<Op>> rank_orders(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) {
    std::vector<Op>& order = rank_orders[static_cast<size_t>(r)];
    order.reserve(2 * static_cast<size_t>(spec.v) * spec.m);
    for (int c = 0; c < spec.v; ++c) {
      for (int j = 0; j < spec.m; ++j) {
        order.push_back(Op{OpKind::F, StageId(c * p + r), MicrobatchId(j)});
      }
    }
    for (int c = spec.v - 1; c >= 0; --c) {
      for (int j = spec.m - 1; j >= 0; --j) {
        order.push_back(Op{OpKind::B, StageId(c * p + r), MicrobatchId(j)});
      }
    }
  }
  return schedule_internal::PlaceOnDevices(spec, rank_orders);
}

}  // namespace ppb
