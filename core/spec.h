// PipelineSpec: everything the engine needs, lowered to integers per global
// stage. Built by Lower() from (layers, cluster, strategy); built directly by
// tests with uniform costs.
//
// Invariants (checked by Lower / ValidateSpec):
//   num_stages() == p * v; stage_device[s] < p; link matrix is p*p.
#pragma once

#include <vector>

#include "core/model.h"
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
  Bytes activation = 0;       // stashed at end of F, freed at end of B (or W)
  Bytes forward_transient = 0;   // working set while F runs
  Bytes backward_transient = 0;  // working set while B / I / W run (includes
                                 // re-materialized activations of recompute)
  Bytes output_bytes = 0;        // sent to stage s+1 per mb (gradient back is
                                 // the same size)
  int num_layers = 0;
  int num_recomputed = 0;
};

struct PipelineSpec {
  int p = 1;  // pipeline ranks (devices)
  int v = 1;  // chunks (virtual stages) per rank
  int m = 1;  // micro-batches per iteration
  std::vector<StageCost> stages;          // size p*v, by global stage
  std::vector<DeviceId> stage_device;     // size p*v; default s mod p
  std::vector<Bytes> device_capacity;     // size p
  std::vector<Link> link_matrix;          // size p*p: [from * p + to]
  CommMode comm = CommMode::Overlapped;

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

// Link matrix for a ring of ranks from Cluster::links (links[r] joins r and
// r+1 mod p; REQUIRES: links.size() == p). A pair that is not adjacent gets
// the route going up the ring from `from` to `to`: summed latency, smallest
// bandwidth. (Under the default placement only neighbours exchange messages.)
std::vector<Link> RingLinkMatrix(int p, const std::vector<Link>& links);

}  // namespace ppb
