// Parameters and FLOPs of each layer kind (core/cost_model.h's contract):
// weight shapes from each family's HuggingFace modeling file [HF], two
// FLOPs per weight per token [N21 §5.1], the attention core and the MoE
// routing by their shapes. Split from cost_model.cpp by concept (issue 46).
#include "core/cost_model.h"

#include "core/mixers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace ppb {

int Architecture::MoeLayersBefore(int i) const {
  int n = 0;
  for (int j = 0; j < std::min(i, layers); ++j) n += IsMoeLayer(j) ? 1 : 0;
  return n;
}

bool Architecture::IsMoeLayer(int i) const {
  if (experts <= 0) return false;
  const MlpKind kind = Block(i).mlp;
  if (kind != MlpKind::Auto) return kind == MlpKind::Moe;
  const MoeLayout& m = moe_layout;
  // DeepSeek-V2/V3 modeling: first_k_dense_replace, moe_layer_freq [HF].
  if (i < m.first_k_dense) return false;
  if (m.moe_layer_freq > 1 && i % m.moe_layer_freq != 0) return false;
  // Qwen2-MoE/Qwen3-MoE modeling: mlp_only_layers, decoder_sparse_step [HF].
  if (std::find(m.mlp_only_layers.begin(), m.mlp_only_layers.end(), i) !=
      m.mlp_only_layers.end()) {
    return false;
  }
  if (m.decoder_sparse_step > 1 && (i + 1) % m.decoder_sparse_step != 0) {
    return false;
  }
  return true;
}

namespace {

using I64 = std::int64_t;


// Weights of one norm: RMSNorm has a scale, LayerNorm a scale and a bias.
I64 NormParams(const Architecture& a, I64 width) {
  return a.layernorm_with_bias ? 2 * width : width;
}

// Dimensions of the attention: per-head widths of Q/K and of V.
// Weight matrices of the attention block (those a token multiplies).
I64 AttentionWeights(const Architecture& a) {
  const I64 h = a.hidden;
  const I64 heads = a.heads;
  if (a.mla()) {
    // DeepSeek-V2/V3 MLA [HF modeling_deepseek.py]: q_a_proj h x q_lora,
    // q_b_proj q_lora x a(nope+rope) (or q_proj h x a(nope+rope)),
    // kv_a_proj_with_mqa h x (kv_lora + rope), kv_b_proj
    // kv_lora x a(nope+v), o_proj a*v x h.
    const I64 qk = QkDim(a);
    const I64 q = a.q_lora_rank > 0
                      ? h * a.q_lora_rank + a.q_lora_rank * heads * qk
                      : h * heads * qk;
    const I64 kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                   a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim);
    return q + kv + heads * a.v_head_dim * h;
  }
  // Q and O are h x a*d, K and V h x kv*d (GQA) [HF modeling_llama.py];
  // Qwen3-Next's q_proj also emits the output gate, h x a*d
  // [HF modeling_qwen3_next.py].
  const I64 gate = a.attention_out_gate ? h * heads * a.head_dim : 0;
  return 2 * h * heads * a.head_dim + 2 * h * a.kv_heads * a.head_dim + gate;
}

// Everything else of the attention block: biases and the MLA latent norms.
I64 AttentionOther(const Architecture& a) {
  I64 n = 0;
  if (a.mla()) {
    // q_a_layernorm and kv_a_layernorm (RMSNorm) [HF modeling_deepseek.py].
    n += a.q_lora_rank + a.kv_lora_rank;
  } else if (a.qkv_bias || a.layernorm_with_bias) {
    n += a.heads * a.head_dim + 2 * a.kv_heads * a.head_dim;  // Q, K, V bias
  }
  // Output projection bias (GPT; GPT-OSS's o_proj with attention_bias).
  if (a.layernorm_with_bias || a.out_bias) n += a.hidden;
  if (a.qk_norm) n += 2 * a.head_dim;  // q_norm, k_norm [HF modeling_qwen3]
  // GPT-OSS's sinks: one learned logit per head [HF modeling_gpt_oss.py].
  if (a.attention_sinks) n += a.heads;
  return n;
}

// Biases of one expert (GPT-OSS gate_up_proj_bias and down_proj_bias).
I64 ExpertBiases(const Architecture& a) {
  return a.expert_bias ? (a.gated_mlp ? 2 : 1) * a.expert_ffn + ExpertWidth(a) : 0;
}

// Matrices of one routed expert: at the latent width in a latent MoE.
I64 RoutedExpertWeights(const Architecture& a) {
  return (a.gated_mlp ? 3 : 2) * ExpertWidth(a) * a.expert_ffn;
}

// A latent MoE's down and up projections (Megatron-LM moe_layer.py
// fc1_latent_proj, fc2_latent_proj: h x latent each).
I64 LatentProjWeights(const Architecture& a) {
  return a.moe_latent > 0 ? 2 * a.hidden * a.moe_latent : 0;
}

// Matrices of one MLP of width f: gate, up, down (SwiGLU) or fc1, fc2.
I64 MlpWeights(const Architecture& a, I64 f) {
  return (a.gated_mlp ? 3 : 2) * a.hidden * f;
}

// FLOPs per weight per token of a matrix multiply: 2 (multiply + add)
// [N21 §5.1].
constexpr double kFlopsPerWeight = 2.0;

}  // namespace

ParamCount EmbeddingParams(const Architecture& a) {
  // Token embedding V x h, plus learned positions (GPT-2/3) [HF].
  return {(a.vocab + a.learned_positions) * a.hidden, 0};
}

ParamCount DecoderLayerParams(const Architecture& a, int layer) {
  ParamCount p;
  // A norm before the mixer and one before the MLP [HF]; Nemotron-H's
  // blocks hold one of the two.
  const LayerBlock block = a.Block(layer);
  const bool mlp = a.HasMlp(layer);
  const int norms = (block.mixer != Mixer::None ? 1 : 0) + (mlp ? 1 : 0);
  p.dense = norms * NormParams(a, a.hidden);
  if (block.mixer == Mixer::Attention) {
    p.dense += AttentionWeights(a) + AttentionOther(a);
  } else {
    p.dense += MixerParams(a, block.mixer);  // core/mixers.h
  }
  if (!mlp) return p;
  if (!a.IsMoeLayer(layer)) {
    p.dense += MlpWeights(a, a.ffn);
    if (a.layernorm_with_bias) p.dense += a.ffn + a.hidden;  // fc1, fc2 bias
    return p;
  }
  // MoE MLP [HF modeling_mixtral/qwen2_moe/deepseek]: router h x E (and
  // DeepSeek-V3's per-expert score-correction bias), E routed experts, the
  // shared expert(s) and Qwen's shared-expert gate h x 1.
  p.dense += a.hidden * a.experts + (a.router_bias ? a.experts : 0);
  p.dense += a.shared_ffn > 0 ? MlpWeights(a, a.shared_ffn) : 0;
  p.dense += a.shared_expert_gate ? a.hidden : 0;
  p.dense += LatentProjWeights(a);
  p.expert = static_cast<I64>(a.experts) * (RoutedExpertWeights(a) + ExpertBiases(a));
  return p;
}

ParamCount FinalNormParams(const Architecture& a) {
  return {NormParams(a, a.hidden), 0};
}

ParamCount HeadParams(const Architecture& a) {
  return {a.tied_embeddings ? 0 : a.vocab * a.hidden, 0};
}

ParamCount MtpLayerParams(const Architecture& a) {
  // DeepSeek-V3 MTP module (§2.2 of its report; HF checkpoint layer 61):
  // enorm, hnorm, eh_proj 2h x h, one decoder layer (an MoE layer, indexed
  // after the main ones), shared_head.norm; embedding and output head are
  // shared with the main model.
  ParamCount p = DecoderLayerParams(a, a.layers);
  p.dense += 3 * NormParams(a, a.hidden) + 2 * a.hidden * a.hidden;
  return p;
}

std::int64_t MtpModuleParams(const Architecture& a) {
  if (a.mtp_layers <= 0) return 0;
  // The module as DeepSeek-V3's checkpoint stores it (layer 61): its own
  // layer, embed_tokens V x h and shared_head.head V x h.
  const I64 matrices = a.tied_embeddings ? 1 : 2;
  return a.mtp_layers *
         (MtpLayerParams(a).total() + matrices * a.vocab * a.hidden);
}

std::int64_t TotalParams(const Architecture& a, bool with_mtp) {
  I64 n = EmbeddingParams(a).total() + FinalNormParams(a).total() +
          HeadParams(a).total();
  for (int i = 0; i < a.layers; ++i) n += DecoderLayerParams(a, i).total();
  if (with_mtp) n += MtpModuleParams(a);
  return n;
}

double ParamsUpperBound(const Architecture& a) {
  auto d = [](std::int64_t x) { return static_cast<double>(x); };
  const double h = d(a.hidden), q = d(a.heads), kv = d(a.kv_heads);
  const double hd = std::max({d(a.head_dim), d(QkDim(a)), d(a.v_head_dim)});
  // Attention: Q, O and the output gate (h x a*d each), K and V, the MLA
  // down and up projections, biases and norms.
  const double attention = h * (3 * q * hd + 2 * kv * hd) + 3 * q * hd + 2 * kv * hd +
                           d(a.q_lora_rank) * (h + q * hd + 1) +
                           d(a.kv_lora_rank) * (h + 2 * q * hd + 1) +
                           h * d(a.qk_rope_head_dim) + 2 * hd + q + h;
  // The linear mixers: projections in and out, the convolution and the
  // per-head vectors, each width taken at its largest.
  const Mamba2Shape& m = a.mamba;
  const double mamba_width = 3 * d(m.heads) * d(m.head_dim) + 4 * d(m.groups) * d(m.state) +
                             4 * d(m.heads);
  const DeltaNetShape& x = a.deltanet;
  const double delta_width = 3 * d(x.key_heads) * d(x.key_dim) +
                             3 * d(x.value_heads) * d(x.value_dim) + 4 * d(x.value_heads);
  const double mixers =
      (mamba_width + delta_width) * (h + d(std::max(m.conv, x.conv)) + 2) + h;
  // MLPs: the dense, shared and routed experts with their biases, the router.
  const double width = std::max(h, d(a.moe_latent));
  const double mlp = 3 * h * (d(a.ffn) + d(a.shared_ffn) + d(a.experts)) +
                     d(a.experts) *
                         (3 * width * d(a.expert_ffn) + 2 * d(a.expert_ffn) + width + 1) +
                     2 * h * d(a.moe_latent) + d(a.ffn) + 6 * h;
  const double layer = attention + mixers + mlp;
  const double embedding = (d(a.vocab) + d(a.learned_positions)) * h;
  return (d(a.layers) + d(a.mtp_layers)) * layer +
         d(a.mtp_layers) * (2 * h * h + 3 * h + 2 * embedding) + 2 * embedding + 2 * h;
}

Flops DecoderLayerFlops(const Architecture& a, const Training& t, int layer) {
  const double tokens = static_cast<double>(t.seq) * t.micro_batch;
  const LayerBlock block = a.Block(layer);
  I64 weights = block.mixer == Mixer::Attention ? AttentionWeights(a)
                                                : MixerWeights(a, block.mixer);
  if (!a.HasMlp(layer)) {
    // No MLP (Nemotron-H's "M" and "*" blocks).
  } else if (a.IsMoeLayer(layer)) {
    // A token meets the router, its top-k experts and the shared expert(s).
    weights += a.hidden * a.experts + a.top_k * RoutedExpertWeights(a) + LatentProjWeights(a);
    if (a.shared_ffn > 0) weights += MlpWeights(a, a.shared_ffn);
    if (a.shared_expert_gate) weights += a.hidden;
  } else {
    weights += MlpWeights(a, a.ffn);
  }
  Flops f;
  // 2 FLOPs per weight per token [N21 §5.1].
  f.matmul = kFlopsPerWeight * static_cast<double>(weights) * tokens;
  // Attention core: QK^T (2 s^2 b a d_qk) and attention over V
  // (2 s^2 b a d_v), the 4 b s^2 h of [N21 §5.1] for d = h/a; causal
  // masking is not discounted, as there.
  // A sliding window or chunk computes its share of the pairs
  // (core/mixers.h SpanShare); Mamba-2 and DeltaNet their scan.
  const double s = static_cast<double>(t.seq);
  if (block.mixer == Mixer::Attention) {
    f.attention = 2.0 * s * s * static_cast<double>(t.micro_batch) * a.heads *
                  static_cast<double>(QkDim(a) + VDim(a)) *
                  SpanShare(a, block.span, t.seq);
  } else {
    f.attention = ScanFlopsPerToken(a, block.mixer) * tokens;
  }
  return f;
}

Flops HeadFlops(const Architecture& a, const Training& t) {
  // Logits: 2 s b h V [N21 §5.1].
  const double tokens = static_cast<double>(t.seq) * t.micro_batch;
  return {kFlopsPerWeight * static_cast<double>(a.hidden * a.vocab) * tokens,
          0};
}

Flops MtpLayerFlops(const Architecture& a, const Training& t) {
  // eh_proj, one decoder layer and the shared output head (its own loss).
  const double tokens = static_cast<double>(t.seq) * t.micro_batch;
  Flops f = DecoderLayerFlops(a, t, a.layers);
  f.matmul += kFlopsPerWeight * 2.0 * static_cast<double>(a.hidden) *
                  static_cast<double>(a.hidden) * tokens +
              HeadFlops(a, t).matmul;
  return f;
}

}  // namespace ppb
