// Offload to host memory over the GPU's host link (PCIe on x86 nodes,
// NVLink-C2C on Grace): activations and the optimizer.
//
// Activations (Megatron-LM main d98e8a6: docs/user-guide/features/
// fine_grained_activation_offloading.md, transformer_config.py):
//   - fine-grained (--fine-grained-activation-offloading --offload-modules
//     ... --activation-offload-fraction f): the saved input of each named
//     module goes device-to-host on a side stream after the module's
//     forward and comes back host-to-device before its backward; f is the
//     share of the offload groups offloaded (of bytes, on average over the
//     layers);
//   - layer-level (--cpu-offloading-num-layers N): the whole activation of
//     N decoder layers (activations on, weights off by default).
//   Timing, per layer and micro-batch: the copy of a layer's offloaded
//   bytes runs beside the next layer's compute; where the link takes
//   longer than that compute the copy stream backs up and compute waits
//   for the rest, max(0, copy - compute), in the forward (D2H) and in the
//   backward (H2D prefetch) alike. Memory: the offloaded bytes leave the
//   stash; a reloaded layer's bytes are live during its backward.
// Optimizer (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py,
// --optimizer-cpu-offload --optimizer-offload-fraction f; torchtitan's
// enable_cpu_offload is FSDP2's CPUOffloadPolicy, f = 1): the optimizer
// state of f of the parameters lives in host memory and its step runs on
// the host CPU; the gradients of that share go D2H and the updated
// parameters come back H2D. Megatron overlaps the three with
// --overlap-cpu-optimizer-d2h-h2d; ppb takes the longest of them then,
// their sum otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace ppb {

// The modules Megatron's --offload-modules takes (transformer_config.py's
// allowed_modules, less gdp_qkv, a gated-DeltaNet module ppb has no layer
// for).
enum class OffloadModule : std::uint8_t {
  AttnNorm, QkvLinear, CoreAttn, AttnProj, MlpNorm, ExpertFc1, MoeAct,
  FusedGroupMlp
};
const char* OffloadModuleName(OffloadModule m);
bool FindOffloadModule(const std::string& name, OffloadModule* out);
// Every name, comma-separated, for messages.
std::string OffloadModuleNames();

// training.offload.
struct Offload {
  std::vector<OffloadModule> modules;  // activations.modules
  double fraction = 1.0;               // activations.fraction
  int layers = 0;                      // layers (layer-level)
  double optimizer = 0;                // optimizer (share of the state)
  bool overlap_optimizer_copies = false;  // --overlap-cpu-optimizer-d2h-h2d
  bool activations_on() const { return !modules.empty() || layers > 0; }
  bool on() const { return activations_on() || optimizer > 0; }
};

// Nanoseconds for `bytes` over a link of `bytes_per_s` (0: no time).
Nanos CopyTime(double bytes, double bytes_per_s);

// The exposed part of a copy of `copy` ns beside `compute` ns of compute.
Nanos ExposedCopy(Nanos copy, Nanos compute);

}  // namespace ppb
