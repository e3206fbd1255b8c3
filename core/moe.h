// Mixture-of-experts communication and routing: how a token reaches its
// experts (Megatron-LM's token dispatchers), how unevenly the experts'
// ranks are loaded, and the expert tensor-parallel fold. Pure values and
// arithmetic; core/layer_kernels.cpp builds an MoE layer's kernels from
// them, core/rank_layout.cpp places the groups.
//
// Sources (Megatron-LM main d98e8a6):
//   [TD]  megatron/core/transformer/moe/token_dispatcher.py:
//         allgather  gathers the hidden states of the expert-TP x EP group
//                    before the experts and reduce-scatters after them;
//         alltoall   an all-to-all over EP of each token's top-k copies,
//                    then (ETP > 1) an all-gather over ETP; mirrored after;
//         flex       DeepEP or HybridEP kernels for the same exchange.
//   [TC]  megatron/core/transformer/transformer_config.py: the defaults
//         (moe_token_dispatcher_type "allgather", moe_flex_dispatcher_
//         backend "deepep", moe_expert_capacity_factor None = dropless,
//         moe_pad_expert_input_to_capacity False) and the rules of
//         overlap_moe_expert_parallel_comm (__post_init__).
//   [MU]  megatron/core/transformer/moe/moe_utils.py get_capacity:
//         capacity = ceil(tokens x top_k / experts x capacity_factor).
//   [DEP] DeepEP (deepseek-ai/DeepEP) README: normal kernels on SM100 EP8
//         726 / 740 GB/s over NVLink of 900 (0.81); docs/legacy.md on H800
//         internode EP16 dispatch 43 GB/s RDMA of a 50 GB/s CX7 (0.86);
//         a token goes once to each node that holds one of its experts,
//         then over NVLink to the experts' GPUs.
//   [HEP] HybridEP (DeepEP hybrid-ep branch, docs/README_Hybrid-EP.md):
//         GB200, 8 -> 36 ranks: 550 -> 470 GB/s of 900 (0.61 -> 0.52).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ppb {

enum class Dispatcher : std::uint8_t { AllGather, AllToAll, Flex };
enum class FlexBackend : std::uint8_t { DeepEp, HybridEp };
const char* DispatcherName(Dispatcher d);    // "allgather", "alltoall", "flex"
const char* FlexBackendName(FlexBackend b);  // "deepep", "hybridep"
bool FindDispatcher(const std::string& name, Dispatcher* out);
bool FindFlexBackend(const std::string& name, FlexBackend* out);

// Measured tokens per expert of each MoE layer, in layer order (a router
// log; training.moe.expert_loads). One row stands for every MoE layer.
struct ExpertLoads {
  std::string file;
  std::vector<std::vector<double>> layers;
  bool given() const { return !layers.empty(); }
};

// training.moe.
struct MoeSettings {
  // ppb simulates alltoall when the config names none: what Megatron-LM's
  // MoE examples and every published recipe set (examples/mixtral,
  // examples/deepseek_v3), not transformer_config.py's "allgather"; the
  // emitted launch names it.
  Dispatcher dispatcher = Dispatcher::AllToAll;
  FlexBackend backend = FlexBackend::DeepEp;
  bool overlap_ep_comm = false;  // --overlap-moe-expert-parallel-comm
  int expert_tp = 0;             // --expert-tensor-parallel-size; 0: = tp
  double capacity_factor = 0;    // 0: dropless (None)
  bool pad_to_capacity = false;  // --moe-pad-expert-input-to-capacity
  bool force_balance = false;    // --moe-router-force-load-balancing
  ExpertLoads loads;
};

// The fraction of the datasheet bandwidth DeepEP and HybridEP reach
// [DEP, HEP]: coefficients of the GPU preset (hardware.* may override).
struct EpKernelEfficiency {
  double deepep_nvlink = 0.81;
  double deepep_rdma = 0.86;
  double hybridep_8 = 0.61;   // 8 ranks in an NVLink domain
  double hybridep_36 = 0.52;  // 36 ranks; log-linear between, flat beyond
  // The share of the dispatcher collectives Megatron's combined 1F1B hides
  // of what the other micro-batch's compute could hide: Megatron-Bridge's
  // Qwen3-30B-A3B EP 16 run on 16 H100 (skills/mbridge-perf-expert-
  // parallel-overlap, 41.25 -> 31.31 s, 1.317x) against ppb's 1.70x with
  // all of it hidden (bench/validation/mbridge-qwen3-30b-a3b-*): the
  // layer-by-layer dependencies and the communication kernels' SMs leave
  // about half. A coefficient to calibrate (hardware.ep_overlap_efficiency).
  double overlap = 0.52;
};

// The busiest EP rank's tokens over the mean of the MoE layer that is the
// `moe_index`-th (0-based) of the model, with experts placed on EP ranks as
// Megatron does (rank r holds experts r E/ep .. (r+1) E/ep - 1): from the
// measured loads, else 1 with force_balance, else `routing_skew`; then
// capped by the capacity factor (dropless: no cap), or exactly the
// capacity factor when the experts' inputs are padded to capacity [MU].
double BusiestShare(const MoeSettings& m, double routing_skew, int ep, int moe_index);

// The busiest rank's share of measured `loads` over `ep` ranks.
double RankShare(const std::vector<double>& loads, int ep);

// HybridEP's share of NVLink bandwidth for `ranks` in one domain.
double HybridEpEfficiency(const EpKernelEfficiency& e, int ranks);

}  // namespace ppb
