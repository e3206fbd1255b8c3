// Lowering: (layers, cluster, pipeline shape, strategy) -> PipelineSpec.
// This is where per-layer costs become per-stage integers on a device.
#pragma once

#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/spec.h"

namespace ppb {

struct PipelineShape {
  int p = 1;  // stages (ranks)
  int v = 1;  // virtual stages (chunks) per rank
  int m = 1;  // micro-batches
  CommMode comm = CommMode::Overlapped;
  StagePlacement placement = StagePlacement::Loop;  // V: v must be 2
  std::int64_t fb_overlap_ppm = 0;  // PipelineSpec::fb_overlap_ppm
  StepTail tail{};                  // PipelineSpec::tail
  std::int64_t ep_overlap_ppm = 0;  // PipelineSpec::ep_overlap_ppm
  Nanos op_overhead = 0;            // PipelineSpec::op_overhead
};

// Megatron-style default split of the layers over p*v stages: embedding
// layers stay on the first stage, head/loss and MTP layers on the last, and
// the other layers are split evenly over all stages with the remainder given
// one each to stages 1, 2, ..., S-2, then S-1, then 0 (the first stage already
// holds the most in-flight activations). No recompute.
// REQUIRES: p*v >= 1.
Strategy EvenStrategy(const std::vector<Layer>& layers, int p, int v);

// Builds the spec. Errors (with key "strategy"/"cluster") when the strategy's
// layer counts do not add up to layers.size(), a count is negative, a chunk is
// empty and !allow_empty, a recompute index names no option of its layer, or
// the cluster does not have p devices / p links.
//
// Per stage: times are the sums over its layers divided by the device speed
// (rounded to the nearest ns); recompute time is the sum of the chosen
// options' extra_time; the stash is the sum of each layer's activation (or
// its option's retained_activation when recomputed); the backward transient
// is the largest workspace plus the largest (activation - retained) among its
// recomputed layers (recompute re-materializes one layer at a time); the
// output size is that of the stage's last layer. The tail's per-stage
// figures (grad_bytes, expert_grad_bytes, optimizer) are the layers' sums,
// not scaled by the device's speed. The part of the stash freed
// at the end of I (input_grad_release) is, per layer, its stash less
// Layer::HeldAfterInputGrad of it: a recomputed layer holds at most what it
// stashed (what recompute re-materializes for W is its backward transient).
// Placement: shape.placement (V needs v = 2, key pipeline.virtual_stages).
Result<PipelineSpec> Lower(const std::vector<Layer>& layers,
                           const Cluster& cluster, const PipelineShape& shape,
                           const Strategy& strategy, bool allow_empty = false);

}  // namespace ppb
