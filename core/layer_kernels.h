// The kernels of one layer for one micro-batch on one rank, and their
// price: the step model's compute (core/architecture.h Hardware::step_model).
//
// A layer is its GEMMs (each (m x k) x (k x n) per rank after the tensor-
// parallel split, as Megatron-LM's ColumnParallelLinear / RowParallelLinear
// shard them), the attention core (FlashAttention: no s^2 tensor, the
// causal half of 4 b s^2 h FLOPs computed), its element-wise kernels
// (norms, bias-dropout-add, activation, rotary: priced by the bytes they
// move through HBM) and its collectives (TP, CP, EP; core/collective.h).
//
// Prices (core/gpu.h ComputeEfficiency):
//   GEMM         max(floor, 2mnk / (peak x matmul x f / (f + f_half)))
//                with f = 2mnk, f_half = peak x matmul_half_time; the
//                backward runs each GEMM twice (dgrad: I, wgrad: W)
//   attention    causal FLOPs / (peak x attention); backward 2.5x (the
//                FlashAttention-2 backward's five GEMMs against two)
//   element-wise bytes / (HBM bandwidth x hbm), backward twice the bytes
//   low precision  linears of low-precision layers at the recipe's peak
//                and share (core/precision.h), the quantize kernels priced
//                as element-wise by the bytes they move
//   host         each pass takes at least its kernel launches x the
//                host's launch_overhead (the GPU runs only what the CPU
//                has issued): max(GPU time, host time)
//   collectives  on the critical path in the pass that runs them, unless
//                training.tp_comm_overlap hides TP ones behind the pass's
//                GEMMs (exposed: what exceeds them); CP's ring exposes per
//                step what its K/V send takes beyond the block's attention
// With hardware.achievable_fraction given, GEMMs and attention run at that
// constant share of the peak instead.
#pragma once

#include <string>
#include <vector>

#include "core/architecture.h"
#include "core/collective.h"
#include "core/rank_layout.h"
#include "core/types.h"

namespace ppb {

struct Gemm {
  std::string name;
  std::int64_t m = 0, n = 0, k = 0;  // per rank
  int count = 1;                     // identical GEMMs (local experts)
  double skew = 1.0;                 // time multiplier (routing skew)
  // The recipe it runs in (None: the training dtype; core/precision.h).
  Recipe recipe = Recipe::None;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) *
           static_cast<double>(k) * count;
  }
};

// Amax: the low-precision amax reduction over a stage's tp x dp x cp ranks.
// Etp: expert tensor parallel; EtpEp: the allgather dispatcher's etp x ep.
enum class CommGroup { Tp, Cp, Ep, Amax, Etp, EtpEp };
const char* CommGroupName(CommGroup g);
// The placement of a collective's group among the job's groups.
const GroupPlacement& GroupOf(CommGroup g, const JobGroups& groups);

struct CommOp {
  std::string name;
  Collective kind = Collective::AllReduce;
  CommGroup group = CommGroup::Tp;
  Bytes bytes = 0;   // NCCL's S (core/collective.h)
  int forward = 0;   // how many in the forward
  int backward = 0;  // and in the backward
  double skew = 1.0;
  // An MoE dispatch or combine through the flex dispatcher's kernels
  // (core/moe.h): priced by their measured bandwidth, not NCCL's ring;
  // `copies` is each token's top-k (DeepEP sends a token once per node).
  bool flex = false;
  FlexBackend backend = FlexBackend::DeepEp;
  int copies = 1;
};

struct LayerKernels {
  std::vector<Gemm> gemms;       // forward
  double attention_flops = 0;    // forward core on this rank, causal
  Bytes elementwise_bytes = 0;   // forward HBM traffic
  int elementwise_kernels = 0;   // forward kernels
  std::vector<CommOp> comms;
  // Context parallelism's ring (p2p): bytes of the K/V block a rank sends
  // per step of the forward (the backward sends K/V and dK/dV: twice).
  Bytes cp_block_bytes = 0;
  // Low precision (core/precision.h): the layer's recipe and the elements
  // its linears quantize: inputs in the forward (those a norm's kernel
  // casts, and the others), output gradients in the backward, weights once
  // per step.
  Recipe recipe = Recipe::None;
  double quantize_input = 0;
  double quantize_input_fused = 0;
  double quantize_grad = 0;
  double quantize_weight = 0;  // also the low-precision weight elements
};

LayerKernels EmbeddingKernels(const Architecture& a, const Training& t);
LayerKernels DecoderKernels(const Architecture& a, const Training& t,
                            int layer);
LayerKernels HeadKernels(const Architecture& a, const Training& t);

// A layer's priced times on its rank.
struct KernelTimes {
  Nanos forward = 0;          // everything below for the forward
  Nanos backward_input = 0;   // dgrad GEMMs, attention and element-wise
                              // backward, backward collectives
  Nanos backward_weight = 0;  // wgrad GEMMs
  Nanos attention = 0;        // the forward attention core (selective
                              // recompute reruns it)
  Nanos comm_forward = 0;     // exposed collectives in forward
  Nanos comm_backward = 0;    // and in backward_input
  Nanos ep_forward = 0;       // of those, the MoE dispatcher's (EP, ETP)
  Nanos ep_backward = 0;
  // Low precision: the quantize kernels in forward, in backward_input
  // (output gradients) and in backward_weight (NVFP4's Hadamard of the
  // gradient), each included above; the weights' once per step (in the
  // step's tail); the time of the low-precision GEMMs (forward, once).
  Nanos quantize_forward = 0;
  Nanos quantize_backward = 0;
  Nanos quantize_wgrad = 0;
  Nanos quantize_weight_step = 0;
  Nanos low_gemm_forward = 0;
  // The host's time to issue each pass's kernels (kernels x
  // launch_overhead, core/gpu.h), and what of it the GPU waits for
  // (included above: a pass takes max(GPU time, host time)).
  Nanos host_forward = 0, host_backward_input = 0, host_backward_weight = 0;
  Nanos host_exposed = 0;  // forward + backward_input + backward_weight
};

Nanos GemmTime(const Gemm& g, const Hardware& h);
// The share of the recipe's peak a GEMM of `flops` reaches.
double GemmEfficiency(double flops, const Hardware& h,
                      Recipe recipe = Recipe::None);
// The quantize kernels of `k`'s low-precision linears (core/precision.h).
struct QuantizeTimes {
  Nanos forward = 0, backward = 0, hadamard_grad = 0, weight_step = 0;
};
QuantizeTimes QuantizeTime(const LayerKernels& k, const Hardware& h);
Nanos AttentionTime(double flops, const Hardware& h);
Nanos ElementwiseTime(Bytes bytes, int kernels, const Hardware& h);
Nanos CommTime(const CommOp& c, const JobGroups& groups, const Hardware& h);

KernelTimes PriceKernels(const LayerKernels& k, const Training& t,
                         const Hardware& h, const JobGroups& groups);

}  // namespace ppb
