// The two torchtitan forms (apps/output/emit_torchtitan.cpp writes them,
// apps/output/torchtitan_read.cpp reads them back): main's Python
// Trainer.Config and v0.2.2's TOML, their LM head's name and their
// module names. Internal to apps/output.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "apps/output/emit.h"
#include "core/model.h"

namespace ppb::emit_detail {

// The torchtitan version a form is for: its syntax and the LM head's name.
struct TorchtitanForm {
  bool python = true;              // Trainer.Config assignments, else TOML
  const char* head = "lm_head";    // the LM head module (after norm)
  const char* version = "";        // named in the header
  const char* mtp = "";            // why an MTP layer is refused
};
inline constexpr TorchtitanForm kCurrent{
    true, "lm_head", "torchtitan main at b5bcd76c (2026-08-21; Python Trainer.Config)",
    "cannot run MTP layers under pipeline parallelism: torchtitan main's MTPDecoder "
    "(models/deepseek_v3/mtp.py) raises \"MTP does not support pipeline parallelism "
    "yet.\", and its module_fqns_per_model_part has no name for them"};
inline constexpr TorchtitanForm kV022{false, "output", "torchtitan v0.2.2 (TOML job config)",
                                      "has no module name for an MTP layer (torchtitan "
                                      "v0.2.2's LLM modules are tok_embeddings, layers.N, "
                                      "norm and output)"};

// The module that imports torchtitan main's activation-checkpointing policies
// (FullAC), and the import line the Python form starts with when it uses one.
inline constexpr const char* kAcModule = "torchtitan.distributed.activation_checkpoint";

inline const TorchtitanForm& FormOf(Framework f) {
  return f == Framework::Torchtitan022 ? kV022 : kCurrent;
}

// torchtitan module names of each layer from `begin` to `end`:
// tok_embeddings, layers.N, mtp_layers.N, and norm + the head module
// (lm_head; output in v0.2.2) for the head.
std::vector<std::string> TorchtitanModules(const std::vector<Layer>& layers, size_t begin,
                                           size_t end, const char* head);

}  // namespace ppb::emit_detail
