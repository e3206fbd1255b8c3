// What a training step achieves, from the derived model (core/cost_model.h)
// and the simulated iteration time: tokens per second (in all and per GPU),
// model TFLOP/s per GPU, MFU and HFU.
//
// Model FLOPs follow Megatron-LM's count (core 0.20,
// megatron/training/training.py num_floating_point_operations): every
// weight multiplies each token twice in the forward and four times in the
// backward (6 N per token), plus the attention core's 4 b s^2 h per layer
// forward and twice that backward, halved for the causal mask ("only half
// of the mask is non-zero"; Narayanan et al. 2021 §5.1 counted it whole,
// which Flops::attention keeps for the time model's sake). Hardware
// FLOPs add what recompute runs again (the forward of a fully recomputed
// layer, the attention core of a selectively recomputed one). MFU and HFU
// divide the per-GPU rate by the dense 16-bit peak (hardware.peak_tflops).
// The GPUs are t x cp x p x d; a step is d x m micro-batches of b
// sequences of s tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "core/architecture.h"
#include "core/cost_model.h"
#include "core/types.h"

namespace ppb {

struct StepMetrics {
  std::int64_t gpus = 0;
  double tokens_per_step = 0;
  double model_flops = 0;     // per step, all GPUs
  double hardware_flops = 0;  // with recompute
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
};

// REQUIRES: recompute.size() == layers.size() (0: none, k: option k-1).
StepMetrics ComputeStepMetrics(const std::vector<DerivedLayer>& layers,
                               const std::vector<std::uint8_t>& recompute,
                               const Training& t, const Hardware& h, int m,
                               Nanos iteration);

}  // namespace ppb
