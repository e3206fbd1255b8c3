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

#include "core/moe.h"
#include "core/process_memory.h"
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
  // Shares of the FP8 and FP4 peaks that large low-precision GEMMs reach
  // (the same curve as `matmul`, with f_half = low peak x matmul_half_time,
  // so small GEMMs gain less: core/precision.h). Guesses to calibrate; the
  // presets' values come from Transformer Engine's pre-quantized GEMM
  // timings (docs/features/low_precision_training/gemm_profiling, TE main
  // 2026: B300 per-layer GEMMs of a 5B model, BF16 12.835 ms, FP8 block
  // 6.830 ms, MXFP8 7.324 ms, NVFP4 3.754 ms against twice and six times
  // BF16's peak): FP8 GEMMs scaled per tensor or per block reach 0.94 of
  // BF16's share of their peak, FP4 GEMMs 0.57 of it; MXFP8's run 0.93 of
  // the FP8 share (core/precision.h).
  double fp8_matmul = 0;
  double fp4_matmul = 0;
  // Parameters per second one GPU's share of its host updates with Adam on
  // the CPU (optimizer offload, core/offload.h). A guess to calibrate: a
  // torch CPU Adam step reads and writes about 28 B of FP32 state per
  // parameter; a two-socket DDR5 host (~600 GB/s) shared by 8 GPUs gives
  // ~75 GB/s, about 2.7e9 parameters/s at full bandwidth, of which torch's
  // multi-tensor CPU Adam reaches a fraction: 0.5e9.
  double host_optimizer = 0.5e9;
  // The host's side of a layer (guesses to calibrate; `ppb-sim calibrate
  // --runs` fits both). `launch_overhead`: CPU time to issue one kernel
  // from PyTorch eager code: the Python call, the autograd and ATen
  // dispatchers and cudaLaunchKernel, 5-25 us per op on current stacks
  // (the dispatch chain of torch 2.x measured op by op). A layer's pass
  // takes at least its kernels times this (the GPU cannot run kernels it
  // has not been given): max(GPU time, host time), which small layers,
  // small micro-batches and fast GPUs reach.
  Nanos launch_overhead = 10'000;
  // Host work per layer and pass that the GPU waits for whatever the
  // launches (a synchronizing call inside the layer: activation-
  // checkpoint bookkeeping, a .item(), a blocking copy), added to each
  // layer's forward and input-gradient backward. Megatron-Core's layers
  // make no such call: 0; BLOOM-176B's DeepSpeed runs fit 3-4 ms
  // (docs/benchmarks.md "Costs per micro-batch").
  Nanos layer_overhead = 0;
  // The framework's time per micro-batch pass (each F and each B or I op
  // of a stage) that the GPU waits for when the pipeline's sends block:
  // Megatron-LM's 1F1B exchanges through batch_isend_irecv and then calls
  // torch.cuda.synchronize() (megatron/core/pipeline_parallel/
  // p2p_communication.py, batch_p2p_sync default True in
  // model_parallel_config.py, core 0.14), which drains the GPU's queue, so
  // the schedule's Python, the p2p setup and the next pass's first
  // launches run with the GPU idle. A guess: 200 us.
  Nanos microbatch_overhead = 200'000;
};

// The low-precision shares against BF16's `matmul` (see fp8_matmul above):
// what a preset, or a peak given for a GPU without one, starts from.
inline constexpr double kFp8MatmulOverBf16 = 0.94;
inline constexpr double kFp4MatmulOverBf16 = 0.57;

// How well collectives use a link: a message of S bytes moves at
// bandwidth * collective * S / (S + collective_half_size) (NCCL reaches
// its bus bandwidth only on large messages; SimAI's measured ratios,
// inputs/ratio/*_ratio.csv, rise from 0.45 at 16 MiB to 0.81 at 16 GiB on
// NVLink).
struct CollectiveEfficiency {
  double collective = 0.8;
  Bytes collective_half_size = 8LL << 20;
};

// The tensor-core generation, which decides the low-precision recipes a GPU
// runs (core/precision.h RecipeRuns).
enum class GpuArch { Ampere, Hopper, Blackwell, Cdna3, Cdna4 };
const char* GpuArchName(GpuArch a);

// One GPU type and the node it sits in.
struct Gpu {
  std::string name;                 // preset name, or "" when none
  GpuArch arch = GpuArch::Hopper;
  double peak_tflops = 0;           // dense 16-bit tensor peak
  double fp8_tflops = 0;            // dense FP8 peak (0: no FP8 tensor cores)
  double fp4_tflops = 0;            // dense FP4 peak (0: none)
  Bytes memory = 0;                 // HBM capacity
  double hbm_bytes_per_s = 0;       // HBM bandwidth
  double nvlink_bytes_per_s = 0;    // to its NVLink peers, per direction
  int gpus_per_node = 8;            // GPUs that share a host (tray)
  // GPUs that share one NVLink domain: 8 on HGX/DGX, 72 on an NVL72 rack
  // (a group inside it runs on NVLink; core/rank_layout.h).
  int nvlink_domain = 8;
  double nic_bytes_per_s = 0;       // its share of the node's NICs, per dir.
  // Its link to host memory, per direction (PCIe, or NVLink-C2C on Grace):
  // what offloading moves over.
  double host_bytes_per_s = 0;
  Nanos host_latency = 5000;        // per copy (a DMA's start)
  std::string host_link;            // "PCIe 5.0 x16", "NVLink-C2C" ...
  Nanos intra_latency = 2000;       // per collective step inside a node
  Nanos inter_latency = 5000;       // per step across nodes
  ComputeEfficiency compute;
  CollectiveEfficiency network;
  // DeepEP's and HybridEP's measured share of the links (core/moe.h).
  EpKernelEfficiency ep_kernels;
  // What a process holds besides its tensors (core/process_memory.h).
  ProcessMemory process_memory;
  std::string source;               // the datasheet(s) the facts come from
};

// The preset of `name` (a100-sxm4-40gb, a100-sxm4-80gb, h100-sxm,
// h200-sxm, b200, b300, gb200-nvl72, gb300-nvl72, mi300x, mi355x), or
// nullptr.
const Gpu* FindGpu(std::string_view name);
// The preset names, in the order above.
std::vector<std::string> GpuNames();

}  // namespace ppb
