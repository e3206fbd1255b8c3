// Interleaved 1F1B (Narayanan et al., SC'21, §2.2.2): rank r holds chunks
// c = 0..v-1, i.e. global stages c*p + r.
//
// Order (Megatron-LM schedules.py, forward_backward_pipelining_with_
// interleaving and get_schedule_table, main @d98e8a64): microbatches are
// taken in groups of g; the table lists, group by group, for chunk 0..v-1,
// for each microbatch of the group, (microbatch, chunk). The last group holds
// the m mod g leftover microbatches when g does not divide m. Forward k runs
// table[k]; backward k runs table[k] on chunk v-1-chunk. Rank r runs
// warm-up = min(v*m, 2(p-1-r) + (v-1)*g) forwards, then (F, B) pairs, then
// the remaining backwards. torch.distributed.pipelining's
// ScheduleInterleaved1F1B (2.14) is the same order with g =
// "microbatches_per_round" = m / max(1, m / p) (equal groups).
// Peak in-flight on rank r = min(v*m, 2(p-1-r) + (v-1)*g + 1) (formulas.md §2).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "schedules/internal.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

using schedule_internal::Cat;
using schedule_internal::Str;

struct MicrobatchChunk {
  int mb;
  int chunk;
};

// Megatron's get_schedule_table. REQUIRES: m >= 1, v >= 1, g >= 1.
std::vector<MicrobatchChunk> ScheduleTable(int m, int v, int g) {
  std::vector<MicrobatchChunk> table;
  table.reserve(static_cast<size_t>(m) * static_cast<size_t>(v));
  for (int first = 0; first < m; first += g) {
    const int end = std::min(first + g, m);
    for (int c = 0; c < v; ++c) {
      for (int j = first; j < end; ++j) table.push_back({j, c});
    }
  }
  return table;
}

// The group size g under Megatron's rules (current main): v >= 2,
// p <= g <= m, and m mod g == 0 or m mod g >= p; g defaults to p.
Result<int> MegatronGroup(const PipelineSpec& spec, int group) {
  if (spec.v < 2) {
    return Error{"pipeline.virtual_stages",
                 Cat({"must be >= 2 for interleaved (Megatron; use 1f1b for "
                      "v = 1, or flavor pytorch); got ",
                      Str(spec.v)})};
  }
  if (group == 0) {
    // The default g = p: the range rule becomes m >= p and the remainder
    // rule (m mod p < p) becomes m mod p == 0. The user did not choose g, so
    // these errors are about the microbatches.
    if (spec.m < spec.p || spec.m % spec.p != 0) {
      return Error{
          "pipeline.microbatches",
          Cat({"must be a multiple of stages (", Str(spec.p),
               ") for interleaved (Megatron) with the default "
               "microbatch_group (= stages), or set microbatch_group to g in "
               "[stages, microbatches] with microbatches mod g == 0 or >= "
               "stages; got ",
               Str(spec.m)})};
    }
    return spec.p;
  }
  if (group < spec.p || group > spec.m) {
    return Error{
        "pipeline.microbatch_group",
        Cat({"must be in [stages (", Str(spec.p), "), microbatches (",
             Str(spec.m), ")] for interleaved (Megatron); got ", Str(group)})};
  }
  const int rem = spec.m % group;
  if (rem != 0 && rem < spec.p) {
    return Error{"pipeline.microbatch_group",
                 Cat({"must leave a remainder of microbatches (", Str(spec.m),
                      ") that is 0 or >= stages (", Str(spec.p),
                      ") for interleaved (Megatron); got ", Str(group),
                      " (remainder ", Str(rem), ")"})};
  }
  return group;
}

// The group size under torch's rules: rounds = max(1, m / p) must divide m;
// g = m / rounds. A user-given group is refused (torch has no such knob).
Result<int> PyTorchGroup(const PipelineSpec& spec, int group) {
  if (group != 0) {
    return Error{"pipeline.microbatch_group",
                 Cat({"must not be set for interleaved (PyTorch), which "
                      "groups m / max(1, m / p) microbatches per round; got ",
                      Str(group), " (use flavor megatron to set it)"})};
  }
  return schedule_internal::TorchMicrobatchesPerRound(spec, "interleaved",
                                                       "Interleaved 1F1B requires");
}

// The group size g of a valid shape; errors: see MegatronGroup /
// PyTorchGroup above.
Result<int> InterleavedGroup(const PipelineSpec& spec, const ScheduleParams& params) {
  if (Status s = schedule_internal::CheckShape(spec); !s.ok()) return s.error();
  if (params.group < 0) {
    return Error{"pipeline.microbatch_group",
                 Cat({"must be >= 1 (or unset); got ", Str(params.group)})};
  }
  return params.flavor == Flavor::Megatron ? MegatronGroup(spec, params.group)
                                           : PyTorchGroup(spec, params.group);
}

}  // namespace

Status CheckInterleaved(const PipelineSpec& spec, const ScheduleParams& params) {
  const Result<int> group = InterleavedGroup(spec, params);
  if (!group.ok()) return group.error();
  return {};
}

Result<Program> GenerateInterleaved(const PipelineSpec& spec,
                                    const ScheduleParams& params) {
  const Result<int> group = InterleavedGroup(spec, params);
  if (!group.ok()) return group.error();
  const int g = *group;
  const int p = spec.p;
  const int v = spec.v;
  const std::vector<MicrobatchChunk> table = ScheduleTable(spec.m, v, g);
  const int total = spec.m * v;

  std::vector<std::vector<Op>> rank_orders;
  for (int r = 0; r < p; ++r) {
    std::vector<Op> forwards;
    std::vector<Op> backwards;
    for (const MicrobatchChunk& e : table) {
      forwards.push_back(
          Op{OpKind::F, StageId(e.chunk * p + r), MicrobatchId(e.mb)});
      backwards.push_back(Op{OpKind::B, StageId((v - 1 - e.chunk) * p + r),
                             MicrobatchId(e.mb)});
    }
    // Combined 1F1B runs one more warm-up forward, so that each paired F
    // and B are independent (schedules.py get_pp_rank_microbatches).
    const int warmup = std::min(total, 2 * (p - 1 - r) + (v - 1) * g +
                                           (params.combined_1f1b ? 1 : 0));
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
