// The symbolic cost model: per-layer parameters, FLOPs, times and memory of a
// transformer (core/architecture.h) under a training setup on a device, as
// the ordered layer list of core/model.h that the simulator and the search
// take. Pure arithmetic; no I/O.
//
// Sources, cited next to each formula in cost_model.cpp:
//   [K22]  Korthikanti et al., "Reducing Activation Recomputation in Large
//          Transformer Models", 2022 (activation memory, §4, Table 2).
//   [N21]  Narayanan et al., "Efficient Large-Scale Language Model Training
//          on GPU Clusters Using Megatron-LM", 2021 (FLOPs, §5.1).
//   [Q24]  Qi et al., "Zero Bubble Pipeline Parallelism", 2024 (the I/W
//          split of the backward, Table 1).
//   [MTM]  Megatron-LM megatron/training/theoretical_memory_usage.py (bytes
//          per parameter, embedding and output-layer activations).
//   [ZeRO] Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
//          Trillion Parameter Models", 2020 (optimizer-state bytes, §3.1).
//   [HF]   the HuggingFace transformers modeling files of each family
//          (parameter shapes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/architecture.h"
#include "core/model.h"
#include "core/result.h"

namespace ppb {

// Parameters of one item, split into those every tensor-parallel rank holds
// a 1/t share of ("dense") and the routed experts (spread over t * ep).
struct ParamCount {
  std::int64_t dense = 0;
  std::int64_t expert = 0;
  std::int64_t total() const { return dense + expert; }
};

// Exact parameter counts [HF].
ParamCount EmbeddingParams(const Architecture& a);  // + learned positions
ParamCount DecoderLayerParams(const Architecture& a, int layer);  // 0-based
ParamCount FinalNormParams(const Architecture& a);
ParamCount HeadParams(const Architecture& a);  // 0 when tied
ParamCount MtpLayerParams(const Architecture& a);
// Embedding + decoder layers + final norm + head (+ MTP layers when
// `with_mtp`; the published totals exclude them).
std::int64_t TotalParams(const Architecture& a, bool with_mtp);

// Forward FLOPs of one item for one micro-batch of the whole model (before
// any parallel split): `matmul` multiplies weights (its backward splits into
// input and weight gradient), `attention` is the attention core QK^T and AV
// (no weights: its backward is all input gradient).
struct Flops {
  double matmul = 0;
  double attention = 0;
  double forward() const { return matmul + attention; }
  double backward_input() const { return matmul + 2 * attention; }
  double backward_weight() const { return matmul; }
};
Flops DecoderLayerFlops(const Architecture& a, const Training& t, int layer);
Flops HeadFlops(const Architecture& a, const Training& t);
Flops MtpLayerFlops(const Architecture& a, const Training& t);

// Activation bytes one decoder layer stashes per micro-batch on one device,
// for each recompute mode [K22 §4].
struct Activation {
  std::int64_t none = 0;
  std::int64_t selective = 0;  // the attention core recomputed
  std::int64_t full = 0;       // only the layer input kept
};
Activation DecoderActivation(const Architecture& a, const Training& t,
                             bool moe);
// Bytes of a decoder layer's activation W still needs after I (matmul
// inputs and output gradients) [Q24 Table 1]; at most DecoderActivation's
// none.
std::int64_t DecoderWeightGradStash(const Architecture& a, const Training& t,
                                    bool moe);

// Bytes of fp32 optimizer state per parameter in mixed precision: Adam 12
// (master weight, m, v), SGD with momentum 8 (master weight, momentum)
// [ZeRO §3.1: "K = 12" for mixed-precision Adam; [MTM] uses the same 12].
int OptimizerStateBytes(Optimizer optimizer);

// Bytes per parameter of weights + gradients + optimizer state in mixed
// precision: 6 (bf16 weight 2 + fp32 grad 4) + the optimizer state K, that
// is 18 for Adam and 14 for SGD with momentum, or 6 + K / shards with the
// distributed optimizer [MTM, ZeRO-1]. The two-argument form is Adam.
double BytesPerParam(Optimizer optimizer, bool distributed_optimizer,
                     int shards);
double BytesPerParam(bool distributed_optimizer, int shards);

// One derived layer: the simulator's Layer plus what it was derived from.
struct DerivedLayer {
  Layer layer;
  ParamCount params;        // of the whole layer (all ranks)
  Flops flops;              // whole model, one micro-batch
  Activation activation;    // this device
  std::string provenance;   // where each number came from
};

// Checks the architecture and setup (positive sizes, divisibility by tp,
// ...); errors name the field ("architecture.heads", "training.tp").
Status ValidateCostInputs(const Architecture& a, const Training& t,
                          const Hardware& h);

// The ordered layers: embedding, decoder.0 .. decoder.{L-1} (kind moe where
// the layer is MoE), mtp.0 .. (kind mtp), head (final norm + LM head +
// loss). REQUIRES: ValidateCostInputs(a, t, h).ok()
std::vector<DerivedLayer> DeriveLayers(const Architecture& a,
                                       const Training& t, const Hardware& h);
std::vector<Layer> BuildLayers(const Architecture& a, const Training& t,
                               const Hardware& h);

}  // namespace ppb
