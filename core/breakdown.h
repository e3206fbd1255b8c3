// Bubble breakdown: where the iteration time of each device goes, split into
// five parts that add up exactly (integer ns) to the simulated iteration time
// T (the makespan):
//
//   T = ideal + imbalance + recompute + communication + warm-up/drain
//
// Per device d, with U_d its useful compute (F, B, I, W without recompute),
// R_d its recompute, C_d its communication idle (waiting on messages in
// flight + blocked on sends) and mu = floor(sum_d U_d / p) the mean useful
// compute:
//   - d holds at least the mean (U_d >= mu):
//       ideal = mu, imbalance = U_d - mu (the extra compute it was given);
//   - d holds less (U_d < mu):
//       ideal = U_d, imbalance = min(mu - U_d, idle_d - C_d) (the idle time
//       its missing share accounts for: it waits on the busier ranks);
//   - recompute = R_d, communication = C_d,
//   - warm-up/drain = the rest of d's idle time (fill and drain of the
//     schedule, and dependency waits that are not message time).
// Every part is >= 0. The pipeline's breakdown is that of the busiest device
// d* (largest busy time; ties: lowest rank), the device whose time bounds the
// iteration; it equals SimResult::breakdown.
#pragma once

#include <array>
#include <vector>

#include "core/engine.h"
#include "core/types.h"

namespace ppb {

// The parts in report order; Ideal is not a loss.
enum class BubbleTerm : std::uint8_t {
  Ideal = 0,
  Imbalance = 1,
  Recompute = 2,
  Communication = 3,
  WarmupDrain = 4,
};
inline constexpr int kNumBubbleTerms = 5;

// "ideal", "imbalance", "recompute", "communication", "warmup_drain": the
// JSON keys.
const char* BubbleTermKey(BubbleTerm t);
// "ideal", "imbalance", "recompute", "communication", "warm-up/drain": for
// people.
const char* BubbleTermLabel(BubbleTerm t);

// The five parts of one device's (or the pipeline's) time, ns, each >= 0.
struct BubbleParts {
  std::array<Nanos, kNumBubbleTerms> ns{};  // indexed by BubbleTerm

  Nanos operator[](BubbleTerm t) const { return ns[static_cast<int>(t)]; }
  Nanos& operator[](BubbleTerm t) { return ns[static_cast<int>(t)]; }
  Nanos sum() const;
  // The largest part other than Ideal (ties: the earlier in report order);
  // Ideal when every other part is 0.
  BubbleTerm largest_loss() const;
};

struct Breakdown {
  Nanos iteration = 0;    // T, the makespan
  // With the step's tail (core/step_tail.h): the pipeline's parts (below)
  // sum to pipeline_end, and T = pipeline_end + grad_sync + optimizer
  // (BubbleBreakdown's). Without: pipeline_end = T, the two are 0.
  Nanos pipeline_end = 0;
  Nanos grad_sync = 0;
  Nanos optimizer = 0;
  Nanos mean_useful = 0;  // mu
  int bottleneck = 0;     // d*
  BubbleParts pipeline;   // == devices[bottleneck]
  std::vector<BubbleParts> devices;
};

// The whole step of one rank (with the step's tail, PipelineSpec::tail):
// its time split into what it computes, its exposed TP/CP/EP collectives,
// its recompute, its pipeline bubble (the rest of its time until the
// pipeline's end), the wait for every rank's gradients (the sync's end less
// the pipeline's end), its optimizer step (with an exposed parameter
// all-gather) and its wait for the last rank's step. The seven add up to
// the makespan.
struct StepParts {
  Nanos compute = 0, collectives = 0, recompute = 0, bubble = 0;
  Nanos grad_sync = 0, optimizer = 0, waiting = 0;
  Nanos sum() const {
    return compute + collectives + recompute + bubble + grad_sync + optimizer + waiting;
  }
};
// REQUIRES: device < result.devices.size().
StepParts DeviceStepParts(const SimResult& result, int device);

// The parts of device `d` for iteration time `makespan` and mean useful
// compute `mean_useful` (definitions above). REQUIRES: d.busy + d.idle ==
// makespan.
BubbleParts DeviceBubbleParts(const DeviceStats& d, Nanos makespan, Nanos mean_useful);

// mu = floor(sum of useful compute / number of devices); 0 without devices.
Nanos MeanUsefulCompute(const std::vector<DeviceStats>& devices);

// The busiest device (ties: the lowest rank); 0 without devices.
int BusiestDevice(const std::vector<DeviceStats>& devices);

// The breakdown of a finished simulation (any outcome; after a deadlock the
// parts describe the partial run). Works without record_ops/record_memory.
Breakdown ComputeBreakdown(const SimResult& result);

// How much of the busiest rank's warm-up/drain the stages' unequal costs
// cause. The counterfactual is the same program on the same devices and
// links with every stage costing the stages' mean per micro-batch (forward,
// backward halves and recompute, each the mean over stages of the device-
// scaled time): its warm-up/drain on the same rank is the schedule's own
// fill and drain; what the real run has beyond it is the uneven split's
// (issue 32: an uneven layout's cost was booked as fill and drain).
//   loss = WD(d*) - min(WD(d*), WD_equal(d*)), 0 <= loss <= WD(d*).
// The stage at fault is the one with the most work per micro-batch (F +
// I + W + recompute; ties: the lower stage), with any within 1 % of it.
struct UnevenStages {
  Nanos loss = 0;
  Nanos equal_warmup_drain = 0;  // WD_equal(d*), the counterfactual's
  int slowest = -1;              // stage; -1 without stages
  Nanos slowest_work = 0;        // its work per micro-batch
  Nanos mean_work = 0;           // the stages' mean work per micro-batch
  // Every stage whose work is at least 99 % of slowest_work, in order.
  std::vector<int> at_fault;
};
// REQUIRES: breakdown = ComputeBreakdown of a run of `program` on `spec`
// that did not deadlock.
UnevenStages UnevenStageLoss(const PipelineSpec& spec, const Program& program,
                             const Breakdown& breakdown);

}  // namespace ppb
