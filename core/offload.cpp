#include "core/offload.h"

#include <algorithm>
#include <cmath>

namespace ppb {

namespace {
constexpr const char* kModuleNames[] = {"attn_norm", "qkv_linear", "core_attn",
                                        "attn_proj", "mlp_norm",   "expert_fc1",
                                        "moe_act",   "fused_group_mlp"};
}  // namespace

const char* OffloadModuleName(OffloadModule m) { return kModuleNames[static_cast<int>(m)]; }

bool FindOffloadModule(const std::string& name, OffloadModule* out) {
  for (size_t i = 0; i < std::size(kModuleNames); ++i) {
    if (name == kModuleNames[i]) {
      *out = static_cast<OffloadModule>(i);
      return true;
    }
  }
  return false;
}

std::string OffloadModuleNames() {
  std::string s;
  for (const char* n : kModuleNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

Nanos CopyTime(double bytes, double bytes_per_s) {
  if (bytes <= 0 || bytes_per_s <= 0) return 0;
  return static_cast<Nanos>(std::llround(bytes / bytes_per_s * 1e9));
}

Nanos ExposedCopy(Nanos copy, Nanos compute) { return std::max<Nanos>(0, copy - compute); }

}  // namespace ppb
