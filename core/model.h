// The user's description of a training run, in core value types: the model's
// ordered layers with their costs, the cluster, the pipeline shape and the
// strategy (which layers each (rank, chunk) holds and which recompute).
//
// These are what the config loader produces and what the search varies. The
// engine does not see them: Lower() (lower.h) turns them into a PipelineSpec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace ppb {

enum class LayerKind : std::uint8_t { Embedding, Decoder, Moe, Head, Mtp, Other };

// The config file's name of a kind ("embedding", "decoder", ...).
constexpr const char* LayerKindName(LayerKind k) {
  switch (k) {
    case LayerKind::Embedding:
      return "embedding";
    case LayerKind::Decoder:
      return "decoder";
    case LayerKind::Moe:
      return "moe";
    case LayerKind::Head:
      return "head";
    case LayerKind::Mtp:
      return "mtp";
    case LayerKind::Other:
      return "other";
  }
  return "other";
}

// One recompute mode a layer offers (e.g. "full", "selective").
struct RecomputeOption {
  std::string name;
  Bytes retained_activation = 0;  // bytes stashed per micro-batch instead of
                                  // the layer's full activation
  Nanos extra_time = 0;           // extra forward work run right before the
                                  // layer's backward, on a speed-1.0 device
};

// One layer (one entry after `repeat` expansion). Times are for a speed-1.0
// device and one micro-batch.
struct Layer {
  std::string name;
  LayerKind kind = LayerKind::Decoder;
  Nanos forward = 0;
  Nanos backward_input = 0;   // input-gradient part (whole backward if unsplit)
  Nanos backward_weight = 0;  // weight-gradient part (0 if unsplit)
  bool split_backward = false;  // true when the config gave I and W separately
  Bytes static_memory = 0;      // weights + gradients + optimizer state
  Bytes activation = 0;         // stashed per micro-batch from F to B (or W)
  // Of `activation`, the bytes still held between the end of I and the end
  // of W when the backward is split (W needs the inputs and the output
  // gradients of the layer's matmuls [Q24 Table 1: M_W = 32sbh]); unset:
  // all of it (nothing is freed before W).
  std::optional<Bytes> activation_after_input_grad;
  Bytes workspace = 0;          // transient working set while its op runs
  Bytes output_bytes = 0;       // activation sent to the next layer per mb
  std::vector<RecomputeOption> recompute;  // modes offered besides "none"
  // The step's tail (core/step_tail.h), from the step model: bytes of the
  // gradients this rank syncs for the layer (its dense parameters over the
  // data-parallel x CP group, its experts over the expert-data-parallel
  // group) and its share of the optimizer step. 0 without the step model.
  Bytes grad_bytes = 0;
  Bytes expert_grad_bytes = 0;
  Nanos optimizer = 0;
  // Of forward and backward_input: the exposed TP/CP/EP collectives (the
  // step model's; reported apart from compute).
  Nanos comm_forward = 0;
  Nanos comm_backward = 0;
  // Its parameters' all-gather once per step (torch FSDP2 under pipeline
  // parallelism, core/sharding.h), before the step's first forward.
  Nanos step_gather = 0;
  // Of comm_forward and comm_backward: the MoE dispatcher's collectives
  // (all-to-all, DeepEP/HybridEP, expert TP), which Megatron's combined
  // 1F1B hides behind another micro-batch's compute (PipelineSpec::
  // ep_overlap_ppm).
  Nanos ep_forward = 0;
  Nanos ep_backward = 0;

  Nanos backward() const { return backward_input + backward_weight; }
  // Bytes of a stash of `stash` bytes (the activation, or a recompute
  // mode's retained part) still held after I: never more than the stash.
  Bytes HeldAfterInputGrad(Bytes stash) const {
    const Bytes held = activation_after_input_grad.value_or(activation);
    return held < stash ? held : stash;
  }
};

struct Device {
  Bytes memory_capacity = 0;
  double speed = 1.0;  // relative speed: a 2.0 device runs ops in half time
};

// A link between two devices: a message of n bytes occupies it for
// n / bandwidth and arrives latency later.
struct Link {
  Nanos latency = 0;
  BytesPerSec bandwidth = 0;  // 0 means infinite
};

enum class CommMode : std::uint8_t {
  Overlapped,  // sends run on a separate stream; compute continues
  Blocking,    // the sender's compute stream waits until the message arrives
};

struct Cluster {
  std::vector<Device> devices;  // index = pipeline rank
  // links[r] joins rank r and rank (r + 1) mod p (both directions, each
  // direction serializes its own messages).
  std::vector<Link> links;
};

// Which layers each (chunk, rank) holds and which recompute mode each layer
// uses. Layers are assigned in order to global stages 0, 1, ..., p*v - 1
// (stage s = chunk * p + rank).
struct Strategy {
  std::vector<int> layers_per_stage;   // size p*v, indexed by global stage
  std::vector<std::uint8_t> recompute; // per layer: 0 = none, k = option k-1
};

}  // namespace ppb
