// model.architecture.hybrid_layer_pattern, .mamba and .deltanet: a hybrid
// model's layers written inline, one symbol a layer, by Megatron-LM's
// pattern (core 0.20, megatron/core/models/hybrid/hybrid_layer_allocation.py
// Symbols): M a Mamba-2 mixer, G a gated DeltaNet mixer, * self-attention,
// + latent attention (MLA, the model's mla shapes; never beside *), - an
// MLP, E a mixture of experts, each a block with one norm
// (core/architecture.h LayerBlock, as HuggingFace's Nemotron-H
// hybrid_override_pattern). Megatron's D (DeepSeek sparse attention), its
// pipeline separators | and its MTP separator / are refused here: a ppb
// config gives the split in the pipeline section and MTP layers by
// mtp_layers. The gated DeltaNet beside an MLP in one layer (Qwen3-Next,
// Megatron's GPT experimental attention variant) is layer_types'
// linear_attention (config_training.cpp), its shape .deltanet as here.
//
// The gated DeltaNet shape takes Megatron-LM's defaults (TransformerConfig
// linear_num_key_heads 16, linear_num_value_heads 32, linear_key_head_dim
// 128, linear_value_head_dim 128, linear_conv_kernel_dim 4; the chunked
// kernel's block 64, fla's chunk_gated_delta_rule).
//
// The Mamba shapes take Megatron-LM's defaults (TransformerConfig
// mamba_state_dim 128, mamba_head_dim 64, mamba_num_groups 8,
// mamba_num_heads None: expand 2 x hidden / head_dim; MambaMixer d_conv 4,
// chunk_size 128, conv_bias on, no in/out projection bias).
#include <climits>
#include <string>

#include "apps/input/config_parser.h"

namespace ppb::config_detail {

// A mixer's shape map (model.architecture.mamba or .deltanet) with its
// known keys, or no entries when it is not given.
Result<Entries> Parser::ShapeEntries(const Entry* x,
                                     std::initializer_list<std::string_view> keys) {
  if (x == nullptr) return Entries();
  return Map(x->value, x->path, keys);
}

Status Parser::ParseHybridPattern(const Entries& e, const std::string& path,
                                  Architecture& a) {
  const Entry* pattern = Find(e, "hybrid_layer_pattern");
  const Entry* mamba = Find(e, "mamba");
  const Entry* deltanet = Find(e, "deltanet");
  if (pattern == nullptr) {
    if (mamba != nullptr) {
      return Fail(mamba->path, "must be given only with a hybrid_layer_pattern holding M "
                               "(Mamba) layers; got it without one");
    }
    // The gated DeltaNet also comes as layer_types' linear_attention (a
    // DeltaNet beside its MLP): ParseLayerTypes reads it then.
    return Status();
  }
  if (const Entry* types = Find(e, "layer_types")) {
    return Fail(types->path,
                "must not be given with hybrid_layer_pattern (its * layers are "
                "full attention); got both");
  }
  Result<std::string> text =
      String(pattern->value, pattern->path,
             "a string of M, G, *, +, - and E, one per decoder layer");
  if (!text.ok()) return text.error();
  const std::string& p = *text;
  if (static_cast<std::int64_t>(p.size()) != a.layers) {
    return Fail(pattern->path,
                "must have one symbol per decoder layer (num_layers: " +
                    std::to_string(a.layers) + "); got " + std::to_string(p.size()) +
                    " in \"" + p + "\"");
  }
  a.blocks.assign(p.size(), LayerBlock{});
  bool has_mamba = false, has_moe = false, has_delta = false;
  for (size_t i = 0; i < p.size(); ++i) {
    LayerBlock& b = a.blocks[i];
    switch (p[i]) {
      case 'M': b = {Mixer::Mamba2, Span::Full, MlpKind::None}; has_mamba = true; break;
      case 'G': b = {Mixer::GatedDeltaNet, Span::Full, MlpKind::None}; has_delta = true; break;
      case '*':
      case '+': b = {Mixer::Attention, Span::Full, MlpKind::None}; break;
      case '-': b = {Mixer::None, Span::Full, MlpKind::Dense}; break;
      case 'E': b = {Mixer::None, Span::Full, MlpKind::Moe}; has_moe = true; break;
      default:
        return Fail(pattern->path,
                    "must hold only M (Mamba-2), G (gated DeltaNet), * (attention), + (MLA), "
                    "- (MLP) and E (MoE), one per layer (ppb does not model Megatron's D, "
                    "DeepSeek's sparse attention; a ppb config gives the split in pipeline, "
                    "not by |); got '" +
                        std::string(1, p[i]) + "' at position " + std::to_string(i + 1) +
                        " of \"" + p + "\"");
    }
  }
  // Megatron's hybrid models build * as standard attention and + as MLA
  // (core 0.20, hybrid_layer_specs.py attention_layer and mla_layer), and
  // refuse both in one model (hybrid_layer_allocation.py: "Not supported
  // to have both Attention and MLA/DSA in one model"); ppb's MLA shapes are
  // the model's (model.architecture.mla).
  const bool has_std = p.find('*') != std::string::npos;
  const bool has_mla = p.find('+') != std::string::npos;
  if (has_std && has_mla) {
    return Fail(pattern->path,
                "must not hold both * (attention) and + (MLA) layers (Megatron-LM: \"Not "
                "supported to have both Attention and MLA/DSA in one model\"); got \"" + p +
                    "\"");
  }
  if (has_mla && !a.mla()) {
    return Fail(pattern->path,
                "has MLA layers (+), which need model.architecture.mla (their shapes); got "
                "none");
  }
  if (has_std && a.mla()) {
    return Fail(pattern->path,
                "must write the attention layers of a model with model.architecture.mla as "
                "+ (Megatron's hybrid * layers are standard attention); got \"" + p + "\"");
  }
  if (has_moe && a.experts == 0) {
    return Fail(pattern->path,
                "has MoE layers (E), which need model.architecture.moe; got none");
  }
  if (Status st = ParseDeltaNet(deltanet, has_delta, "\"" + p + "\"", path, a); !st.ok()) {
    return st;
  }
  if (!has_mamba) {
    if (mamba == nullptr) return Status();
    return Fail(mamba->path,
                "must be given only with a hybrid_layer_pattern holding M (Mamba) "
                "layers; got \"" + p + "\"");
  }
  Entries m;
  PPB_ASSIGN_OR_RETURN(m, ShapeEntries(mamba, {"num_heads", "head_dim", "state_dim",
                                               "num_groups", "conv_kernel", "chunk_size"}));
  const std::string mp = path + ".mamba";
  Mamba2Shape& s = a.mamba;
  PPB_ASSIGN_OR_RETURN(s.head_dim, ArchInt(m, "head_dim", mp, 1, 64));
  PPB_ASSIGN_OR_RETURN(s.state, ArchInt(m, "state_dim", mp, 1, 128));
  PPB_ASSIGN_OR_RETURN(s.groups, ArchInt(m, "num_groups", mp, 1, 8));
  PPB_ASSIGN_OR_RETURN(s.conv, ArchInt(m, "conv_kernel", mp, 1, 4));
  PPB_ASSIGN_OR_RETURN(s.chunk, ArchInt(m, "chunk_size", mp, 1, 128));
  if (Find(m, "num_heads") == nullptr && (2 * a.hidden) % s.head_dim != 0) {
    return Fail(mp + ".head_dim",
                "must divide 2 x hidden_size (" + std::to_string(2 * a.hidden) +
                    ", Megatron's d_inner when num_heads is not given); got " +
                    std::to_string(s.head_dim));
  }
  PPB_ASSIGN_OR_RETURN(s.heads, ArchInt(m, "num_heads", mp, 1, 2 * a.hidden / s.head_dim));
  s.conv_bias = true;
  s.proj_bias = false;
  if (s.heads % s.groups != 0) {
    return Fail(mp + ".num_groups",
                "must divide the Mamba heads (" + std::to_string(s.heads) +
                    ", Megatron's assert); got " + std::to_string(s.groups));
  }
  return Status();
}

Status Parser::ParseDeltaNet(const Entry* deltanet, bool used, const std::string& layers,
                             const std::string& path, Architecture& a) {
  if (!used) {
    if (deltanet == nullptr) return Status();
    return Fail(deltanet->path,
                "must be given only with a hybrid_layer_pattern holding G (gated DeltaNet) "
                "layers or a layer_types entry linear_attention; got " + layers);
  }
  Entries d;
  PPB_ASSIGN_OR_RETURN(d, ShapeEntries(deltanet, {"key_heads", "value_heads", "key_dim",
                                                  "value_dim", "conv_kernel", "chunk_size"}));
  const std::string dp = path + ".deltanet";
  DeltaNetShape& s = a.deltanet;
  PPB_ASSIGN_OR_RETURN(s.key_heads, ArchInt(d, "key_heads", dp, 1, 16));
  PPB_ASSIGN_OR_RETURN(s.value_heads, ArchInt(d, "value_heads", dp, 1, 32));
  PPB_ASSIGN_OR_RETURN(s.key_dim, ArchInt(d, "key_dim", dp, 1, 128));
  PPB_ASSIGN_OR_RETURN(s.value_dim, ArchInt(d, "value_dim", dp, 1, 128));
  PPB_ASSIGN_OR_RETURN(s.conv, ArchInt(d, "conv_kernel", dp, 1, 4));
  PPB_ASSIGN_OR_RETURN(s.chunk, ArchInt(d, "chunk_size", dp, 1, 64));
  if (s.value_heads % s.key_heads != 0) {
    return Fail(dp + ".value_heads",
                "must be a multiple of key_heads (" + std::to_string(s.key_heads) +
                    ", Megatron's assert); got " + std::to_string(s.value_heads));
  }
  return Status();
}

}  // namespace ppb::config_detail
