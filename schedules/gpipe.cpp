// GPipe (Huang et al., NeurIPS'19): every rank runs all forwards of its
// stage in microbatch order, then all backwards in microbatch order, as
// torch.distributed.pipelining's ScheduleGPipe does. Peak in-flight = m on
// every rank (formulas.md §2).
#include <vector>

#include "schedules/internal.h"
#include "schedules/schedule.h"

namespace ppb {

// Both flavors give the same order; params.group is not used. v must be 1
// (key "pipeline.virtual_stages").
Status CheckGPipe(const PipelineSpec& spec, const ScheduleParams& /*params*/) {
  if (Status s = schedule_internal::CheckShape(spec); !s.ok()) return s;
  if (spec.v != 1) return schedule_internal::NeedsOneChunk("gpipe", spec.v);
  return {};
}

Result<Program> GenerateGPipe(const PipelineSpec& spec,
                              const ScheduleParams& params) {
  if (Status s = CheckGPipe(spec, params); !s.ok()) return s.error();
  std::vector<std::vector<Op>> rank_orders;
  for (int r = 0; r < spec.p; ++r) {
    std::vector<Op> forwards;
    std::vector<Op> backwards;
    for (int j = 0; j < spec.m; ++j) {
      forwards.push_back(Op{OpKind::F, StageId(r), MicrobatchId(j)});
      backwards.push_back(Op{OpKind::B, StageId(r), MicrobatchId(j)});
    }
    rank_orders.push_back(schedule_internal::WarmupSteadyCooldown(
        forwards, backwards, forwards.size()));
  }
  return schedule_internal::PlaceOnDevices(spec, rank_orders);
}

}  // namespace ppb
