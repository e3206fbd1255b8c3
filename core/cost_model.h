// The symbolic cost model: per-layer parameters, FLOPs, times and memory of a
// transformer (core/architecture.h) under a training setup on a device, as
// the ordered layer list of core/model.h that the simulator and the search
// take. Pure arithmetic; no I/O.
//
// Sources, cited next to each formula in cost_model.cpp, layer_params.cpp
// and layer_memory.cpp:
//   [K22]  Korthikanti et al., "Reducing Activation Recomputation in Large
//          Transformer Models", 2022 (activation memory, §4, Table 2).
//   [N21]  Narayanan et al., "Efficient Large-Scale Language Model Training
//          on GPU Clusters Using Megatron-LM", 2021 (FLOPs, §5.1).
//   [Q24]  Qi et al., "Zero Bubble Pipeline Parallelism", 2024 (the I/W
//          split of the backward, Table 1).
//   [MTM]  Megatron-LM megatron/training/theoretical_memory_usage.py (bytes
//          per parameter, embedding and output-layer activations).
//   [MLM]  Megatron-LM's model code: megatron/training/arguments.py
//          (validate_args: bf16 forces accumulate_allreduce_grads_in_fp32)
//          and megatron/core/models/common/language_module/
//          language_module.py (setup_embeddings_and_output_layer: with
//          share_embeddings_and_output_weights and more than one pipeline
//          stage the last stage allocates its own output_layer.weight, a
//          copy of the word embeddings kept equal by an all-reduce of the
//          embedding group).
//   [ZeRO] Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
//          Trillion Parameter Models", 2020 (optimizer-state bytes, §3.1).
//   [HF]   the HuggingFace transformers modeling files of each family
//          (parameter shapes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/architecture.h"
#include "core/layer_kernels.h"
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
ParamCount MtpLayerParams(const Architecture& a);  // own weights only
// The parameter totals, in the two conventions models publish:
//   main model  embedding + decoder layers + final norm + head, a tied head
//               counted once, MTP modules excluded: DeepSeek-V3's "671B"
//               (exactly 671,026,419,200), Llama's and Qwen's totals;
//   with MTP    + MtpModuleParams: DeepSeek-V3's "685B total, including
//               671B of the main model and 14B of the MTP module" (model
//               card), which counts each MTP module with its own embedding
//               and output head (the HF checkpoint's layer 61 stores
//               embed_tokens and shared_head.head).
// TotalParams(a, false) is the first, TotalParams(a, true) the second.
std::int64_t TotalParams(const Architecture& a, bool with_mtp);
// An upper bound on TotalParams(a, true) computed in floating point: every
// matrix any of the model's layer kinds may hold, each decoder and MTP layer
// counted with all of them. A loader refuses shapes whose bound passes
// kMaxModelParams before any int64 count (parameters, then bytes: at most
// 32 a parameter) is formed from them.
double ParamsUpperBound(const Architecture& a);
// 2^50, some 10^15 parameters: 500 times the largest published model (about
// 2 x 10^12) and 2^13 below int64's 2^63.
inline constexpr double kMaxModelParams = 1125899906842624.0;
// Each MTP module as published: MtpLayerParams + its embedding V x h + its
// head V x h (one matrix when tied), times the MTP layers. 0 without MTP.
std::int64_t MtpModuleParams(const Architecture& a);

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
// A low-precision layer keeps its saved linear inputs in `recipe`'s bytes
// (core/precision.h SavedInputBytes).
Activation DecoderActivation(const Architecture& a, const Training& t,
                             bool moe, Recipe recipe = Recipe::None);
// Bytes of a decoder layer's activation W still needs after I (matmul
// inputs and output gradients) [Q24 Table 1]; at most DecoderActivation's
// none.
std::int64_t DecoderWeightGradStash(const Architecture& a, const Training& t,
                                    bool moe, Recipe recipe = Recipe::None);
// The same for decoder layer `layer` of a hybrid or windowed model (its
// core/architecture.h LayerBlock; core/mixers.h), and for a given block.
Activation LayerActivation(const Architecture& a, const Training& t, int layer,
                           Recipe recipe = Recipe::None);
std::int64_t LayerWeightGradStash(const Architecture& a, const Training& t,
                                  int layer, Recipe recipe = Recipe::None);
Activation BlockActivation(const Architecture& a, const Training& t, bool moe,
                           Recipe recipe, LayerBlock block);
std::int64_t BlockWeightGradStash(const Architecture& a, const Training& t,
                                  bool moe, Recipe recipe, LayerBlock block);

// Bytes one parameter costs on a rank: its weight, its gradient buffer and
// its optimizer state.
//   weight     DtypeBytes(training.dtype)
//   gradient   DtypeBytes(training.grad_dtype): Megatron's main_grad buffer
//              (fp32 for bf16, forced by arguments.py; fp16 for fp16 unless
//              --accumulate-allreduce-grads-in-fp32; fp32 for fp32)
//   optimizer  K: in mixed precision (bf16, fp16) an fp32 master weight 4
//              plus Adam's m and v 8 (ZeRO §3.1's "K = 12") or SGD's
//              momentum 4 (K = 8); in fp32 training the weight is the
//              master copy, so Adam 8 and SGD 4 [ZeRO, MTM, MLM].
// bf16 weights, fp32 gradients and Adam give Megatron
// theoretical_memory_usage.py's 18 B/param, or 6 + 12/d with the
// distributed optimizer, which divides the optimizer state (only) over
// `shards` [MTM, ZeRO-1].
struct ParamStateBytes {
  int weight = 2;
  int gradient = 4;
  int optimizer = 12;
  double PerParam(bool distributed_optimizer, int shards) const {
    return distributed_optimizer
               ? weight + gradient + static_cast<double>(optimizer) / shards
               : static_cast<double>(weight + gradient + optimizer);
  }
};
ParamStateBytes StateBytes(Dtype dtype, Dtype grad_dtype, Optimizer optimizer);
ParamStateBytes StateBytes(const Training& t);

// The mixed-precision optimizer state K (Adam 12, SGD with momentum 8) and
// the bytes per parameter of bf16 weights with fp32 gradients (18 for Adam,
// 14 for SGD; 6 + K / shards with the distributed optimizer). The
// two-argument form is Adam.
int OptimizerStateBytes(Optimizer optimizer);
double BytesPerParam(Optimizer optimizer, bool distributed_optimizer,
                     int shards);
double BytesPerParam(bool distributed_optimizer, int shards);

// One derived layer: the simulator's Layer plus what it was derived from.
struct DerivedLayer {
  Layer layer;
  ParamCount params;        // of the whole layer (all ranks)
  Flops flops;              // whole model, one micro-batch
  Activation activation;    // this device
  // Parameters held besides the model's own (not in `params` nor in the
  // totals): on the head, Megatron's copy of tied word embeddings when the
  // head is on another pipeline rank than the embedding (training.pp > 1).
  std::int64_t tied_copy_params = 0;
  std::string provenance;   // where each number came from
  // With the step model (Hardware::step_model): its kernels on one rank and
  // their priced times (core/layer_kernels.h); empty otherwise.
  LayerKernels kernels;
  KernelTimes times;
  // Bytes of its activation training.offload sends to the host per
  // micro-batch (core/dp_costs.h); 0 without offload.
  Bytes offloaded = 0;
  // Of layer.forward / backward_input: its sharded unit's exposed
  // collectives and its offload's exposed copies (core/dp_costs.h).
  Nanos sharded_forward = 0, sharded_backward = 0;
  Nanos offload_forward = 0, offload_backward = 0;
};

// Whether `grad_dtype` is a gradient format Megatron-LM trains `dtype`
// weights with: fp32, or the weights' own 16-bit format (error key
// "training.grad_dtype").
Status ValidateGradDtype(Dtype dtype, Dtype grad_dtype);

// Checks the architecture and setup (positive sizes, divisibility by tp,
// ...); errors name the field ("architecture.heads", "training.tp").
Status ValidateCostInputs(const Architecture& a, const Training& t,
                          const Hardware& h);

// The ordered layers: embedding, decoder.0 .. decoder.{L-1} (kind moe where
// the layer is MoE), mtp.0 .. (kind mtp), head (final norm + LM head +
// loss; with tied embeddings and t.pp > 1 also the copy of the word
// embeddings, DerivedLayer::tied_copy_params). REQUIRES: ValidateCostInputs(a, t, h).ok()
std::vector<DerivedLayer> DeriveLayers(const Architecture& a,
                                       const Training& t, const Hardware& h);
std::vector<Layer> BuildLayers(const Architecture& a, const Training& t,
                               const Hardware& h);

}  // namespace ppb
