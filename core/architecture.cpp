// SameLayers (core/architecture.h): two architectures compared by what the
// cost model derives from them, layer by layer.
#include "core/architecture.h"

namespace ppb {

bool Architecture::HasMixer(Mixer m) const {
  for (int i = 0; i < layers; ++i) {
    if (Block(i).mixer == m) return true;
  }
  return false;
}

bool Architecture::HasSpan(Span s) const {
  for (int i = 0; i < layers; ++i) {
    if (Block(i).span == s) return true;
  }
  return false;
}

bool SameLayers(const Architecture& a, const Architecture& b) {
  if (a.layers != b.layers) return false;
  bool dense = false, moe = false, sliding = false, chunked = false, mamba = false, delta = false;
  for (int i = 0; i < a.layers; ++i) {
    const LayerBlock x = a.Block(i), y = b.Block(i);
    if (x.mixer != y.mixer || x.span != y.span || a.IsMoeLayer(i) != b.IsMoeLayer(i) ||
        a.HasMlp(i) != b.HasMlp(i)) {
      return false;
    }
    dense = dense || (a.HasMlp(i) && !a.IsMoeLayer(i));
    moe = moe || a.IsMoeLayer(i);
    sliding = sliding || (x.mixer == Mixer::Attention && x.span == Span::Sliding);
    chunked = chunked || (x.mixer == Mixer::Attention && x.span == Span::Chunked);
    mamba = mamba || x.mixer == Mixer::Mamba2;
    delta = delta || x.mixer == Mixer::GatedDeltaNet;
  }
  // The MTP layers are full decoder layers of their own (Block's default).
  if (a.mtp_layers != b.mtp_layers) return false;
  dense = dense || (a.mtp_layers > 0 && !a.IsMoeLayer(a.layers));
  moe = moe || (a.mtp_layers > 0 && a.IsMoeLayer(a.layers));
  if (a.mtp_layers > 0 && a.IsMoeLayer(a.layers) != b.IsMoeLayer(b.layers)) return false;
  const bool same_moe =
      !moe || (a.experts == b.experts && a.top_k == b.top_k && a.expert_ffn == b.expert_ffn &&
               a.shared_ffn == b.shared_ffn && a.shared_expert_gate == b.shared_expert_gate &&
               a.router_bias == b.router_bias && a.expert_bias == b.expert_bias &&
               a.moe_latent == b.moe_latent);
  return a.hidden == b.hidden && a.heads == b.heads && a.kv_heads == b.kv_heads &&
         a.head_dim == b.head_dim && (!dense || a.ffn == b.ffn) && a.vocab == b.vocab &&
         a.tied_embeddings == b.tied_embeddings && a.gated_mlp == b.gated_mlp &&
         a.qkv_bias == b.qkv_bias && a.qk_norm == b.qk_norm &&
         a.layernorm_with_bias == b.layernorm_with_bias &&
         a.learned_positions == b.learned_positions && same_moe && a.q_lora_rank == b.q_lora_rank &&
         a.kv_lora_rank == b.kv_lora_rank && a.qk_nope_head_dim == b.qk_nope_head_dim &&
         a.qk_rope_head_dim == b.qk_rope_head_dim && a.v_head_dim == b.v_head_dim &&
         (!sliding || a.sliding_window == b.sliding_window) &&
         (!chunked || a.attention_chunk == b.attention_chunk) &&
         a.attention_sinks == b.attention_sinks && a.attention_out_gate == b.attention_out_gate &&
         a.out_bias == b.out_bias && (!mamba || a.mamba == b.mamba) &&
         (!delta || a.deltanet == b.deltanet);
}

char HybridSymbol(const Architecture& a, int i) {
  const LayerBlock b = a.Block(i);
  if (b.mlp == MlpKind::None) {
    if (b.mixer == Mixer::Mamba2) return 'M';
    if (b.mixer == Mixer::GatedDeltaNet) return 'G';
    // Megatron's hybrid attention is standard (*) or MLA (+) model-wide
    // (hybrid_layer_allocation.py refuses both in one model).
    if (b.mixer == Mixer::Attention && b.span == Span::Full) return a.mla() ? '+' : '*';
    return 0;
  }
  if (b.mixer != Mixer::None) return 0;
  return a.IsMoeLayer(i) ? 'E' : '-';
}

}  // namespace ppb
