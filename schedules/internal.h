// Helpers shared by the schedule generators (not part of the public API).
//
// Every schedule here is a per-rank order of the same shape: a warm-up of
// forwards, a steady state of (forward, backward) pairs, and a cool-down of
// backwards (Narayanan et al., SC'21, §2.2: PipeDream-Flush / 1F1B). GPipe is
// the case "warm-up = all forwards"; interleaved 1F1B walks a table of
// (microbatch, chunk) instead of the microbatches of one stage.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/program.h"
#include "core/result.h"
#include "core/spec.h"
#include "core/types.h"

namespace ppb::schedule_internal {

// Concatenates message pieces: Cat({"must be >= ", Str(p), "; got ", ...}).
inline std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out += part;
  return out;
}

inline std::string Str(int n) { return std::to_string(n); }

// Checks what every generator needs from the spec: p, v, m >= 1 and a
// placement that is empty (= default, stage s on rank s mod p) or has p*v
// entries in [0, p).
inline Status CheckShape(const PipelineSpec& spec) {
  if (spec.p < 1) {
    return Error{"pipeline.stages", Cat({"must be >= 1; got ", Str(spec.p)})};
  }
  if (spec.v < 1) {
    return Error{"pipeline.virtual_stages",
                 Cat({"must be >= 1; got ", Str(spec.v)})};
  }
  if (spec.m < 1) {
    return Error{"pipeline.microbatches",
                 Cat({"must be >= 1; got ", Str(spec.m)})};
  }
  if (spec.stage_device.empty()) return {};
  const int n = spec.num_stages();
  if (spec.stage_device.size() != static_cast<size_t>(n)) {
    return Error{
        "", Cat({"stage placement must list stages * virtual_stages (", Str(n),
                 ") devices; got ", std::to_string(spec.stage_device.size())})};
  }
  for (int s = 0; s < n; ++s) {
    const int d = spec.stage_device[static_cast<size_t>(s)].value;
    if (d < 0 || d >= spec.p) {
      return Error{"",
                   Cat({"stage ", Str(s), " must be placed on a device in [0, ",
                        Str(spec.p), "); got ", Str(d)})};
    }
  }
  return {};
}

// The 1F1B shape: forwards[0..warmup), then for k = 0.. the pair
// (forwards[warmup + k], backwards[k]) while forwards remain, then the
// remaining backwards. REQUIRES: forwards.size() == backwards.size(),
// 0 <= warmup <= forwards.size().
inline std::vector<Op> WarmupSteadyCooldown(const std::vector<Op>& forwards,
                                            const std::vector<Op>& backwards,
                                            size_t warmup) {
  const size_t n = forwards.size();
  std::vector<Op> order;
  order.reserve(2 * n);
  for (size_t k = 0; k < warmup; ++k) order.push_back(forwards[k]);
  for (size_t k = 0; k + warmup < n; ++k) {
    order.push_back(forwards[warmup + k]);
    order.push_back(backwards[k]);
  }
  for (size_t k = n - warmup; k < n; ++k) order.push_back(backwards[k]);
  return order;
}

// Megatron's combined 1F1B on an order WarmupSteadyCooldown built with
// `warmup` forwards first: each steady-state F paired with the backward
// after it.
inline void PairSteadyState(std::vector<Op>& order, size_t warmup, size_t forwards) {
  for (size_t k = 0; k + warmup < forwards; ++k) order[warmup + 2 * k].paired = true;
}

// Puts each logical rank's order on the devices: op (s, ...) goes to device
// spec.stage_device[s] (rank s mod p when the placement is empty), keeping
// the order within each rank; ranks are appended in rank order. With the
// default placement (or any placement that keeps each rank's stages on one
// device) device d's list is exactly rank d's order.
// REQUIRES: CheckShape(spec).ok(); rank_orders.size() == p.
inline Program PlaceOnDevices(const PipelineSpec& spec,
                              const std::vector<std::vector<Op>>& rank_orders) {
  Program program;
  program.ops.resize(static_cast<size_t>(spec.p));
  for (const auto& order : rank_orders) {
    for (const Op& op : order) {
      const int d =
          spec.stage_device.empty()
              ? op.stage.value % spec.p
              : spec.stage_device[static_cast<size_t>(op.stage.value)].value;
      program.ops[static_cast<size_t>(d)].push_back(op);
    }
  }
  return program;
}

// "must be 1 for <schedule> (use interleaved for v > 1); got v".
inline Error NeedsOneChunk(std::string_view schedule, int v) {
  return Error{"pipeline.virtual_stages",
               Cat({"must be 1 for ", schedule,
                    " (use interleaved for v > 1); got ", Str(v)})};
}

// The V schedules' shape (torch's ScheduleZBVZeroBubble and
// ScheduleDualPipeV, v2.14.1): exactly two stages per rank (torch's
// ValueError "ZBV requires exactly 2 stages per rank, but got N.", quoted),
// placed V-shaped (spec.stage_device as StagePlacementDevices(V, p, 2); Lower
// does so for these schedules).
inline Status CheckVShape(const PipelineSpec& spec, std::string_view schedule) {
  if (Status s = CheckShape(spec); !s.ok()) return s;
  if (spec.v != 2) {
    return Error{"pipeline.virtual_stages",
                 Cat({"must be 2 for ", schedule,
                      " (PyTorch: \"ZBV requires exactly 2 stages per rank, "
                      "but got ",
                      Str(spec.v), ".\"); got ", Str(spec.v)})};
  }
  if (spec.stage_device != StagePlacementDevices(StagePlacement::V, spec.p, 2)) {
    return Error{"pipeline.schedule",
                 Cat({schedule,
                      " needs the V placement (rank r holds stages r and "
                      "2p-1-r); got another placement of the stages"})};
  }
  return {};
}

// Rank r's order under PyTorch's ScheduleZBVZeroBubble (zbv_zero_bubble.cpp;
// zb-v starts from it too).
std::vector<Op> ZbvRankOrder(int p, int m, int r);

// "must not be set for <schedule> (PyTorch), which has no such knob; got g".
inline Error NoGroup(std::string_view schedule, int group) {
  return Error{"pipeline.microbatch_group",
               Cat({"must not be set for ", schedule,
                    " (PyTorch), which has no microbatch group; got ",
                    Str(group)})};
}

// torch's rounds of the interleaved schedules (ScheduleInterleaved1F1B,
// ScheduleInterleavedZeroBubble, v2.14.1): rounds = max(1, m / p) must divide
// m, and each round takes m / rounds micro-batches. `torch_prefix` is the
// start of torch's ValueError text ("Zero bubble requires"), quoted in the
// error. Returns the micro-batches per round.
inline Result<int> TorchMicrobatchesPerRound(const PipelineSpec& spec,
                                             std::string_view schedule,
                                             std::string_view torch_prefix) {
  const int rounds = spec.m / spec.p > 1 ? spec.m / spec.p : 1;
  if (spec.m % rounds != 0) {
    const std::string torch_text =
        Cat({torch_prefix,
             " the number of microbatches to be a multiple of the number of "
             "rounds (",
             Str(rounds), "), but got ", Str(spec.m), "."});
    return Error{"pipeline.microbatches",
                 Cat({"must be a multiple of the number of rounds max(1, "
                      "microbatches / stages) for ",
                      schedule, " (PyTorch: \"", torch_text, "\"); got ",
                      Str(spec.m)})};
  }
  return spec.m / rounds;
}

}  // namespace ppb::schedule_internal
