// PipelineSpec: everything the engine needs, lowered to integers per global
// stage. Built by Lower() from (layers, cluster, strategy); built directly by
// tests with uniform costs.
//
// Invariants (checked by Lower / ValidateSpec):
//   num_stages() == p * v; stage_device[s] < p; link matrix is p*p.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model.h"
#include "core/step_tail.h"
#include "core/types.h"

namespace ppb {

// Costs of one global stage (a chunk of contiguous layers) on its device, for
// one micro-batch. Times are already scaled by the device's speed.
struct StageCost {
  Nanos forward = 0;
  Nanos backward_input = 0;   // I (B = I + W when fused)
  Nanos backward_weight = 0;  // W
  Nanos recompute = 0;        // extra forward run right before B (or I)
  Bytes static_memory = 0;    // weights + grads + optimizer state
  Bytes activation = 0;       // stashed at end of F, freed at end of B (or
                              // at the end of I and W, see the next field)
  Bytes input_grad_release = 0;  // part of `activation` freed at the end of
                                 // I; the rest is freed at the end of W
                                 // (0: all of it held until W)
  Bytes forward_transient = 0;   // working set while F runs
  Bytes backward_transient = 0;  // working set while B / I / W run (includes
                                 // re-materialized activations of recompute)
  Bytes output_bytes = 0;        // sent to stage s+1 per mb (gradient back is
                                 // the same size)
  int num_layers = 0;
  int num_recomputed = 0;
  // The step's tail (core/step_tail.h): gradient bytes this rank syncs for
  // the stage's dense and expert parameters, and its optimizer step.
  Bytes grad_bytes = 0;
  Bytes expert_grad_bytes = 0;
  Nanos optimizer = 0;
  // Of forward and backward_input: exposed TP/CP/EP collectives.
  Nanos collective_forward = 0;
  Nanos collective_backward = 0;
  // The stage's parameters all-gathered once per step (Layer::step_gather).
  Nanos step_gather = 0;
  // Of forward and backward_input: the MoE dispatcher's collectives
  // (Layer::ep_forward), which PipelineSpec::ep_overlap_ppm hides.
  Nanos ep_forward = 0;
  Nanos ep_backward = 0;
};

// Which rank holds global stage s (of p*v):
//   Loop: rank s mod p (chunk c of rank r is stage c*p + r; Megatron, torch's
//         "loop" style);
//   V:    v = 2, rank r holds stages r and 2p-1-r (torch's "v" style, ZB-V
//         and DualPipeV): the model goes down the ranks and back up, so the
//         turn from stage p-1 to p stays on rank p-1 and the last stage is
//         on rank 0.
enum class StagePlacement : std::uint8_t { Loop, V };

// The global stage of chunk `chunk` of rank `rank`: chunk * p + rank (Loop),
// or rank / 2p-1-rank (V, chunk 0 / 1).
constexpr int StageOf(StagePlacement placement, int p, int chunk, int rank) {
  return placement == StagePlacement::V && chunk == 1 ? 2 * p - 1 - rank
                                                      : chunk * p + rank;
}

// "loop" or "v".
constexpr const char* StagePlacementName(StagePlacement placement) {
  return placement == StagePlacement::V ? "v" : "loop";
}

struct PipelineSpec {
  int p = 1;  // pipeline ranks (devices)
  int v = 1;  // chunks (virtual stages) per rank
  int m = 1;  // micro-batches per iteration
  std::vector<StageCost> stages;          // size p*v, by global stage
  std::vector<DeviceId> stage_device;     // size p*v; default s mod p
  std::vector<Bytes> device_capacity;     // size p
  std::vector<Link> link_matrix;          // size p*p: [from * p + to]
  CommMode comm = CommMode::Overlapped;
  StagePlacement placement = StagePlacement::Loop;  // of stage_device
  // Overlapped F+B ops (Op::paired) save this share, in parts per million,
  // of the shorter of the two: 0 (the default) runs them back to back.
  std::int64_t fb_overlap_ppm = 0;
  // Megatron's combined 1F1B (--overlap-moe-expert-parallel-comm): in a
  // paired F+B each op's MoE dispatcher collectives (StageCost::ep_forward,
  // ep_backward) run on a communication stream behind the other op's
  // compute, this share of them in parts per million (0: off; the GPU's
  // ep_overlap_efficiency, core/moe.h). Used when fb_overlap_ppm is 0.
  std::int64_t ep_overlap_ppm = 0;
  // The framework's time per micro-batch pass when the pipeline's sends
  // block (comm Blocking, p > 1): added to every F, B and I op (not W),
  // the host work the GPU waits for after each synchronizing exchange
  // (core/gpu.h ComputeEfficiency::microbatch_overhead). 0: none.
  Nanos op_overhead = 0;
  // After the pipeline: gradient sync, optimizer, parameter all-gather
  // (disabled: the step ends with the last op).
  StepTail tail;

  int num_stages() const { return p * v; }
  const Link& link(DeviceId from, DeviceId to) const {
    return link_matrix[static_cast<size_t>(from.value) * p + to.value];
  }

  // A spec with p*v identical stages on the default placement, zero-cost
  // links and unlimited memory; for tests and benchmarks.
  static PipelineSpec Uniform(int p, int v, int m, Nanos forward,
                              Nanos backward);
};

// Default placement: global stage s on rank s mod p.
std::vector<DeviceId> DefaultPlacement(int p, int v);

// The placement of `placement` (see StagePlacement). REQUIRES: v == 2 for V.
std::vector<DeviceId> StagePlacementDevices(StagePlacement placement, int p,
                                            int v);

// The chunk of global stage `s` on its rank: how many of that rank's stages
// come before it in `stage_device` (Loop: s / p; V: 0 for s < p, else 1).
int ChunkOnRank(const std::vector<DeviceId>& stage_device, int s);

// Link matrix for a ring of ranks from Cluster::links (links[r] joins r and
// r+1 mod p; REQUIRES: links.size() == p). A pair that is not adjacent gets
// the route going up the ring from `from` to `to`: summed latency, smallest
// bandwidth. (Under the default placement only neighbours exchange messages.)
std::vector<Link> RingLinkMatrix(int p, const std::vector<Link>& links);

}  // namespace ppb
