// GPUs and the machine around them: what one accelerator computes and
// stores, how fast it reaches its peers in a node (NVLink / Infinity
// Fabric) and other nodes (its share of the node's NICs), and the
// efficiency coefficients the step model prices kernels and collectives
// with. Presets for the common training GPUs; every field can be
// overridden from the config (hardware.*), and `ppb-sim model` prints each
// value with its source.
//
// Facts (peak, memory, bandwidths) cite the vendor's datasheet. The
// efficiencies are not facts: they are guesses of what real kernels and
// NCCL reach, marked as such, for the user to override or fit with
// `ppb-sim calibrate`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace ppb {

// How well real kernels use the GPU (core/efficiency.h prices with these).
struct ComputeEfficiency {
  // A GEMM of f FLOPs runs at peak * matmul * f / (f + f_half), where
  // f_half = peak * matmul_half_time: a GEMM whose ideal time at peak is
  // matmul_half_time reaches half of `matmul` (small GEMMs do not fill the
  // GPU; the shape of Calculon's efficiency by GFLOPs per op,
  // calculon/llm/processor.py).
  double matmul = 0.7;
  Nanos matmul_half_time = 3200;
  // FlashAttention's share of the peak on the attention core.
  double attention = 0.6;
  // Element-wise kernels (norms, activations, dropout, residuals, rotary):
  // bytes moved / (HBM bandwidth * hbm).
  double hbm = 0.8;
  // The least time any kernel takes (launch and tail).
  Nanos kernel_floor = 3000;
};

// How well collectives use a link: a message of S bytes moves at
// bandwidth * collective * S / (S + collective_half_size) (NCCL reaches
// its bus bandwidth only on large messages; SimAI's measured ratios,
// inputs/ratio/*_ratio.csv, rise from 0.45 at 16 MiB to 0.81 at 16 GiB on
// NVLink).
struct CollectiveEfficiency {
  double collective = 0.8;
  Bytes collective_half_size = 8LL << 20;
};

// One GPU type and the node it sits in.
struct Gpu {
  std::string name;                 // preset name, or "" when none
  double peak_tflops = 0;           // dense 16-bit tensor peak
  Bytes memory = 0;                 // HBM capacity
  double hbm_bytes_per_s = 0;       // HBM bandwidth
  double nvlink_bytes_per_s = 0;    // to its node peers, per direction
  int gpus_per_node = 8;            // one NVLink domain
  double nic_bytes_per_s = 0;       // its share of the node's NICs, per dir.
  Nanos intra_latency = 2000;       // per collective step inside a node
  Nanos inter_latency = 5000;       // per step across nodes
  ComputeEfficiency compute;
  CollectiveEfficiency network;
  std::string source;               // the datasheet(s) the facts come from
};

// The preset of `name` (a100-sxm4-40gb, a100-sxm4-80gb, h100-sxm,
// h200-sxm, b200, mi300x), or nullptr.
const Gpu* FindGpu(std::string_view name);
// The preset names, in the order above.
std::vector<std::string> GpuNames();

}  // namespace ppb
