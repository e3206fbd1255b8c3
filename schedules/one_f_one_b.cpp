// 1F1B, a.k.a. PipeDream-Flush (Narayanan et al., SC'21, §2.2.1).
//
// Rank r runs warm-up = min(p - r - 1, m) forwards, then (F, B) pairs while
// forwards remain, then the remaining backwards (Megatron-LM schedules.py
// forward_backward_pipelining_without_interleaving). torch's Schedule1F1B
// runs min(m, p - r) forwards and then (B, F) pairs, which is the same order.
// Peak in-flight on rank r = min(m, p - r) (formulas.md §2).
#include <algorithm>
#include <string>
#include <vector>

#include "schedules/internal.h"
#include "schedules/schedule.h"

namespace ppb {

// Megatron accepts any m >= 1. PyTorch (torch 2.14's Schedule1F1B) refuses
// m < p (key "pipeline.microbatches"); torch 2.6 did not check and ran this
// same order. v must be 1 (key "pipeline.virtual_stages"). params.group is
// not used.
Status Check1F1B(const PipelineSpec& spec, const ScheduleParams& params) {
  if (Status s = schedule_internal::CheckShape(spec); !s.ok()) return s;
  if (spec.v != 1) return schedule_internal::NeedsOneChunk("1f1b", spec.v);
  if (params.flavor == Flavor::PyTorch && spec.m < spec.p) {
    using schedule_internal::Cat;
    using schedule_internal::Str;
    const std::string torch_text =
        Cat({"Number of microbatches (", Str(spec.m),
             ") must be greater than or equal to the number of stages (",
             Str(spec.p), ")."});
    return Error{
        "pipeline.microbatches",
        Cat({"must be >= stages (", Str(spec.p), ") for 1f1b (PyTorch: \"",
             torch_text, "\"; flavor megatron allows it); got ", Str(spec.m)})};
  }
  return {};
}

Result<Program> Generate1F1B(const PipelineSpec& spec,
                             const ScheduleParams& params) {
  if (Status s = Check1F1B(spec, params); !s.ok()) return s.error();
  std::vector<std::vector<Op>> rank_orders;
  for (int r = 0; r < spec.p; ++r) {
    std::vector<Op> forwards;
    std::vector<Op> backwards;
    for (int j = 0; j < spec.m; ++j) {
      forwards.push_back(Op{OpKind::F, StageId(r), MicrobatchId(j)});
      backwards.push_back(Op{OpKind::B, StageId(r), MicrobatchId(j)});
    }
    // Combined 1F1B (p = 1 in Megatron, combined_1f1b_schedule_for_no_
    // pipelining): F0, then F(j+1) with B(j), then the last B.
    const int warmup = std::min(spec.p - r - 1 + (params.combined_1f1b ? 1 : 0), spec.m);
    rank_orders.push_back(schedule_internal::WarmupSteadyCooldown(
        forwards, backwards, static_cast<size_t>(warmup)));
    if (params.combined_1f1b) {
      schedule_internal::PairSteadyState(rank_orders.back(), static_cast<size_t>(warmup),
                                         forwards.size());
    }
  }
  return schedule_internal::PlaceOnDevices(spec, rank_orders);
}

}  // namespace ppb
