#include "core/cost_model.h"

#include "core/dp_costs.h"
#include "core/layer_kernels.h"
#include "core/mixers.h"
#include "core/rank_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace ppb {

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
  return a.expert_bias ? (a.gated_mlp ? 2 : 1) * a.expert_ffn + a.hidden : 0;
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
  p.expert = static_cast<I64>(a.experts) *
             (MlpWeights(a, a.expert_ffn) + ExpertBiases(a));
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

Flops DecoderLayerFlops(const Architecture& a, const Training& t, int layer) {
  const double tokens = static_cast<double>(t.seq) * t.micro_batch;
  const LayerBlock block = a.Block(layer);
  I64 weights = block.mixer == Mixer::Attention ? AttentionWeights(a)
                                                : MixerWeights(a, block.mixer);
  if (!a.HasMlp(layer)) {
    // No MLP (Nemotron-H's "M" and "*" blocks).
  } else if (a.IsMoeLayer(layer)) {
    // A token meets the router, its top-k experts and the shared expert(s).
    weights += a.hidden * a.experts + a.top_k * MlpWeights(a, a.expert_ffn);
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

namespace {

I64 CeilDiv(I64 x, I64 d) { return (x + d - 1) / d; }

// Activation terms of one decoder layer per micro-batch, bytes on one
// device before any tensor-parallel division [K22 §4.1], with e = bytes
// per element (2 in [K22]) and 1-byte dropout masks:
//   replicated   LayerNorm inputs 2·e·sbh, QKV and MLP inputs 2·e·sbh, two
//                dropout masks 2·sbh  (= 10sbh in [K22])
//   split        Q, K, V, the projection input and the MLP's inner tensors
//                (= 24sbh in [K22] for a = kv, ffn = 4h)
//   core         softmax output e·as²b, its dropout mask as²b and output
//                e·as²b (= 5as²b in [K22]); s² becomes (s/cp)·s with
//                context parallelism (local queries, all keys).
struct ActivationTerms {
  I64 replicated = 0;
  I64 split = 0;
  I64 core = 0;
};

// A layer of `block` (core/architecture.h): the terms of the parts it
// has, its mixer (attention, or core/mixers.h's) and its MLP. Without a
// block a layer is full attention with the MLP `moe` says.
ActivationTerms DecoderTerms(const Architecture& a, const Training& t,
                             bool moe, Recipe recipe, LayerBlock block) {
  const I64 e = t.activation_bytes;
  // Saved linear inputs (QKV and fc1: the norms' outputs; the projection's
  // and fc2's inputs) are kept quantized in a low-precision layer
  // (core/precision.h SavedInputBytes); everything else in e bytes.
  const double q = SavedInputBytes(recipe, t.activation_bytes);
  auto Linear = [q](I64 elements) {
    return static_cast<I64>(std::llround(q * static_cast<double>(elements)));
  };
  const I64 s = t.seq / t.cp;
  const I64 sb = s * t.micro_batch;
  const I64 sbh = sb * a.hidden;
  ActivationTerms x;
  // Per attention and per MLP part: its norm's input e·sbh, the linear's
  // input sbh (counted in `linear`, rounded once) and a dropout mask sbh.
  I64 linear = 0;
  const I64 part = e * sbh + sbh;
  if (block.mixer == Mixer::Attention) {
    x.replicated += part;
    linear += sbh;
    // Q (a·d_qk), K (kv·d_qk), V (kv·d_v), projection input (a·d_v), and
    // Qwen3-Next's output gate (a·d).
    x.split += e * sb *
                   (a.heads * QkDim(a) + KvHeads(a) * QkDim(a) +
                    KvHeads(a) * VDim(a) +
                    (a.attention_out_gate ? a.heads * a.head_dim : 0)) +
               Linear(sb * a.heads * VDim(a));
    // FlashAttention stores no s^2 tensor: only the fp32 log-sum-exp of
    // each query row (its output is the projection input above). Without
    // it the s^2 tensors of the pairs the span computes.
    x.core = t.flash_attention
                 ? 4 * a.heads * s * t.micro_batch
                 : static_cast<I64>(std::llround(
                       static_cast<double>((2 * e + 1) * a.heads * s * t.seq *
                                           t.micro_batch) *
                       SpanShare(a, block.span, t.seq)));
  } else if (block.mixer != Mixer::None) {
    const MixerActivation m = MixerSaved(a, block.mixer, t.activation_bytes);
    x.replicated += sb * m.replicated;
    x.split += sb * m.split;
  }
  if (block.mlp == MlpKind::None) {
    x.replicated += Linear(linear);
    return x;
  }
  x.replicated += part + Linear(linear + sbh);
  // MLP inner tensors: fc1 output and activation output, 2·e·sb·ffn
  // (= 16sbh of [K22]'s 19sbh MLP for ffn = 4h; Megatron's general width
  // 18 + 4·ffn/h in formulas.md §3); a gated MLP's fc1 output is twice as
  // wide (gate and up): 3·e·sb·ffn. The activation output is fc2's input.
  // An MoE token stores it for each of its top-k experts and the shared
  // expert(s).
  const I64 fc1_out = a.gated_mlp ? 2 * e : e;
  const I64 ffn = moe ? a.top_k * a.expert_ffn + a.shared_ffn : a.ffn;
  x.split += fc1_out * sb * ffn + Linear(sb * ffn);
  return x;
}

LayerBlock DefaultBlock(bool moe) {
  return LayerBlock{Mixer::Attention, Span::Full, moe ? MlpKind::Moe : MlpKind::Dense};
}

}  // namespace

Activation DecoderActivation(const Architecture& a, const Training& t,
                             bool moe, Recipe recipe) {
  return BlockActivation(a, t, moe, recipe, DefaultBlock(moe));
}

Activation LayerActivation(const Architecture& a, const Training& t, int layer,
                           Recipe recipe) {
  return BlockActivation(a, t, a.IsMoeLayer(layer), recipe, a.Block(layer));
}

Activation BlockActivation(const Architecture& a, const Training& t, bool moe,
                           Recipe recipe, LayerBlock block) {
  const ActivationTerms x = DecoderTerms(a, t, moe, recipe, block);
  const I64 tp = t.tp;
  const bool sp = t.sp && tp > 1;
  Activation act;
  // [K22 Table 2]: with tensor parallelism only the split and core terms
  // are divided by t; with sequence parallelism everything is.
  if (sp) {
    act.none = CeilDiv(x.replicated + x.split + x.core, tp);
    act.selective = CeilDiv(x.replicated + x.split, tp);
  } else {
    act.none = x.replicated + CeilDiv(x.split, tp) + CeilDiv(x.core, tp);
    act.selective = x.replicated + CeilDiv(x.split, tp);
  }
  // Full recompute keeps only the layer input, e·sbh [K22 Table 2]; with
  // sequence parallelism that input is the local 1/t sequence shard
  // (Megatron checkpoints the sequence-parallel hidden states).
  const I64 input = t.activation_bytes * (t.seq / t.cp) * t.micro_batch *
                    a.hidden;
  act.full = sp ? CeilDiv(input, tp) : input;
  return act;
}

ParamStateBytes StateBytes(Dtype dtype, Dtype grad_dtype,
                           Optimizer optimizer) {
  ParamStateBytes b;
  b.weight = DtypeBytes(dtype);
  b.gradient = DtypeBytes(grad_dtype);
  // Optimizer state in fp32: Adam's m and v (torch.optim.Adam's exp_avg,
  // exp_avg_sq), SGD's momentum_buffer; mixed precision adds the fp32
  // master weight the update is applied to (Megatron's
  // Float16OptimizerWithFloat16Params; FP32Optimizer keeps none) [ZeRO §3.1,
  // MLM].
  const int moments = optimizer == Optimizer::Adam ? 8 : 4;
  b.optimizer = dtype == Dtype::Fp32 ? moments : moments + 4;
  return b;
}

ParamStateBytes StateBytes(const Training& t) {
  return StateBytes(t.dtype, t.grad_dtype, t.optimizer);
}

// What W (the weight-gradient half of a split backward) still needs after I,
// per micro-batch: dW = X^T dY of each matmul needs its input X and its
// output gradient dY [Q24 §2.1, Table 1: M_W = 32sbh for a = kv, ffn = 4h,
// e = 2, the 34sbh of [K22] less the dropout masks and LayerNorm inputs,
// plus the output gradients; the attention core's s^2 terms are not
// needed]. Inputs: QKV and fc1 take the LayerNorm outputs (2 e sbh,
// replicated across tp without sequence parallelism), the projection the
// attention output (e sb a d_v), fc2 the MLP's inner activation
// (e sb ffn). Output gradients: of QKV (e sb (a d_qk + kv d_qk + kv d_v)),
// of fc1 (e sb ffn, twice for a gated MLP), of the projection and fc2
// (2 e sbh, replicated without sequence parallelism). An MoE token counts
// its top-k experts and the shared expert(s). Capped at the activation.
std::int64_t DecoderWeightGradStash(const Architecture& a, const Training& t,
                                    bool moe, Recipe recipe) {
  return BlockWeightGradStash(a, t, moe, recipe, DefaultBlock(moe));
}

std::int64_t LayerWeightGradStash(const Architecture& a, const Training& t,
                                  int layer, Recipe recipe) {
  return BlockWeightGradStash(a, t, a.IsMoeLayer(layer), recipe, a.Block(layer));
}

std::int64_t BlockWeightGradStash(const Architecture& a, const Training& t,
                                  bool moe, Recipe recipe, LayerBlock block) {
  const I64 e = t.activation_bytes;
  // The matmul inputs are the saved (quantized) linear inputs.
  const double q = SavedInputBytes(recipe, t.activation_bytes);
  auto Linear = [q](I64 elements) {
    return static_cast<I64>(std::llround(q * static_cast<double>(elements)));
  };
  const I64 sb = (t.seq / t.cp) * t.micro_batch;
  const I64 sbh = sb * a.hidden;
  // Per part: the input of its first linear and the output gradient of its
  // last, h wide each.
  // (Linear inputs counted in `linear_*`, rounded once.)
  I64 replicated = 0, split = 0, linear_rep = 0, linear_split = 0;
  if (block.mixer == Mixer::Attention) {
    replicated += e * sbh;
    linear_rep += sbh;
    linear_split += sb * a.heads * VDim(a);
    split += e * sb *
                 (a.heads * QkDim(a) + KvHeads(a) * QkDim(a) + KvHeads(a) * VDim(a) +
                  (a.attention_out_gate ? a.heads * a.head_dim : 0));
  } else if (block.mixer != Mixer::None) {
    // in_proj's output gradient and out_proj's input (core/mixers.h).
    replicated += e * sbh;
    linear_rep += sbh;
    const I64 width = MixerWeights(a, block.mixer) / a.hidden;
    split += e * sb * width;
  }
  if (block.mlp != MlpKind::None) {
    const I64 ffn = moe ? a.top_k * a.expert_ffn + a.shared_ffn : a.ffn;
    replicated += e * sbh;
    linear_rep += sbh;
    linear_split += sb * ffn;
    split += e * sb * (a.gated_mlp ? 2 : 1) * ffn;
  }
  replicated += Linear(linear_rep);
  split += Linear(linear_split);
  const I64 tp = t.tp;
  const I64 held = t.sp && tp > 1 ? CeilDiv(replicated + split, tp)
                                  : replicated + CeilDiv(split, tp);
  return std::min(held, BlockActivation(a, t, moe, recipe, block).none);
}

int OptimizerStateBytes(Optimizer optimizer) {
  // 12 for Adam (ZeRO §3.1's "K = 12"; Megatron's 18 = 6 + 12), 8 for SGD.
  return StateBytes(Dtype::Bf16, Dtype::Fp32, optimizer).optimizer;
}

double BytesPerParam(Optimizer optimizer, bool distributed_optimizer,
                     int shards) {
  return StateBytes(Dtype::Bf16, Dtype::Fp32, optimizer)
      .PerParam(distributed_optimizer, shards);
}

double BytesPerParam(bool distributed_optimizer, int shards) {
  return BytesPerParam(Optimizer::Adam, distributed_optimizer, shards);
}

Status ValidateGradDtype(Dtype dtype, Dtype grad_dtype) {
  // Megatron-LM (arguments.py): fp32 training has fp32 gradients; bf16
  // accumulates in fp32 (or bf16 with --main-grads-dtype bf16); fp16 in
  // fp16 (or fp32 with --accumulate-allreduce-grads-in-fp32). A gradient
  // format of the other 16-bit kind is no setup Megatron offers.
  const bool ok = grad_dtype == Dtype::Fp32 || grad_dtype == dtype;
  if (ok) return Status();
  const std::string want =
      dtype == Dtype::Fp32 ? std::string("fp32")
                           : std::string("fp32 or ") + DtypeName(dtype);
  return Status(Error{"training.grad_dtype",
                      std::string("must be ") + want + " with dtype " +
                          DtypeName(dtype) + "; got " +
                          DtypeName(grad_dtype)});
}

Status ValidateCostInputs(const Architecture& a, const Training& t,
                          const Hardware& h) {
  auto fail = [](std::string key, std::string msg) {
    return Status(Error{std::move(key), std::move(msg)});
  };
  auto positive = [](I64 v) { return v > 0; };
  struct Check {
    const char* key;
    I64 value;
  };
  for (const Check& c : {Check{"architecture.hidden", a.hidden},
                         Check{"architecture.layers", a.layers},
                         Check{"architecture.heads", a.heads},
                         Check{"architecture.vocab", a.vocab},
                         Check{"training.seq", t.seq},
                         Check{"training.micro_batch", t.micro_batch},
                         Check{"training.tp", t.tp},
                         Check{"training.cp", t.cp},
                         Check{"training.ep", t.ep},
                         Check{"training.dp", t.dp},
                         Check{"training.pp", t.pp}}) {
    if (!positive(c.value)) {
      return fail(c.key, "must be positive; got " + std::to_string(c.value));
    }
  }
  if (a.mla()) {
    if (a.qk_nope_head_dim + a.qk_rope_head_dim <= 0 || a.v_head_dim <= 0) {
      return fail("architecture.v_head_dim",
                  "MLA needs positive qk_nope/qk_rope/v head dims");
    }
  } else {
    if (a.kv_heads <= 0 || a.heads % a.kv_heads != 0) {
      return fail("architecture.kv_heads",
                  "must divide heads (" + std::to_string(a.heads) +
                      "); got " + std::to_string(a.kv_heads));
    }
    if (a.head_dim <= 0) {
      return fail("architecture.head_dim",
                  "must be positive; got " + std::to_string(a.head_dim));
    }
  }
  bool any_dense = false;
  for (int i = 0; i < a.layers; ++i) {
    any_dense |= a.HasMlp(i) && !a.IsMoeLayer(i);
    const Mixer m = a.Block(i).mixer;
    if (const I64 r = MixerTpRemainder(a, m, t.tp); r != 0) {
      return fail("training.tp",
                  std::string("must divide the ") +
                      (m == Mixer::Mamba2 ? "Mamba-2 heads and groups"
                                          : "DeltaNet key and value heads") +
                      " (Megatron splits them over tensor parallelism; " +
                      std::to_string(r) + " here); got " + std::to_string(t.tp));
    }
  }
  if (any_dense && a.ffn <= 0) {
    return fail("architecture.ffn",
                "must be positive (the model has dense layers); got " +
                    std::to_string(a.ffn));
  }
  if (a.experts > 0) {
    if (a.top_k <= 0 || a.top_k > a.experts) {
      return fail("architecture.top_k",
                  "must be in 1.." + std::to_string(a.experts) + "; got " +
                      std::to_string(a.top_k));
    }
    if (a.expert_ffn <= 0) {
      return fail("architecture.expert_ffn",
                  "must be positive; got " + std::to_string(a.expert_ffn));
    }
    if (a.experts % t.ep != 0) {
      return fail("training.ep", "must divide the experts (" +
                                     std::to_string(a.experts) + "); got " +
                                     std::to_string(t.ep));
    }
  } else if (t.ep != 1) {
    return fail("training.ep", "must be 1 for a dense model; got " +
                                   std::to_string(t.ep));
  }
  if (a.heads % t.tp != 0) {
    return fail("training.tp", "must divide the heads (" +
                                   std::to_string(a.heads) + "); got " +
                                   std::to_string(t.tp));
  }
  if (t.seq % t.cp != 0) {
    return fail("training.cp", "must divide the sequence length (" +
                                   std::to_string(t.seq) + "); got " +
                                   std::to_string(t.cp));
  }
  if (t.activation_bytes != 1 && t.activation_bytes != 2 &&
      t.activation_bytes != 4) {
    return fail("training.activation_bytes",
                "must be 1, 2 or 4; got " + std::to_string(t.activation_bytes));
  }
  if (Status s = ValidateGradDtype(t.dtype, t.grad_dtype); !s.ok()) return s;
  if (!(h.peak_tflops > 0)) {
    return fail("hardware.peak_tflops", "must be positive");
  }
  if (!(h.achievable_fraction > 0 && h.achievable_fraction <= 1)) {
    return fail("hardware.achievable_fraction", "must be in (0, 1]");
  }
  return Status();
}

namespace {

std::string Fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

// Compute rate of one device, FLOP per nanosecond.
double FlopsPerNs(const Hardware& h) {
  return h.peak_tflops * h.achievable_fraction * 1e3;
}

// Per-device time of `flops` of the whole model: split over tp and cp
// (Megatron divides every matmul and the attention core by t; context
// parallelism gives each rank s/cp of the queries). With expert
// parallelism each rank computes, on average, the top-k experts of its own
// tokens' worth of work, so MoE layers divide the same way.
Nanos DeviceTime(double flops, const Training& t, const Hardware& h) {
  return static_cast<Nanos>(
      std::llround(flops / (static_cast<double>(t.tp) * t.cp) / FlopsPerNs(h)));
}

// Static bytes of `p` on one device: dense parameters / t, routed experts /
// (t·ep) (expert tensor parallel = t), times the bytes per parameter, the
// distributed optimizer sharding dense state over dp·cp and expert state
// over the expert data-parallel group dp·cp/ep [MTM]; other strategies and
// offload as core/dp_costs.h RankBytesPerParam.
Bytes StaticBytes(const ParamCount& p, const Training& t) {
  const DpShards shards = ShardsOf(t);
  const double dense = static_cast<double>(p.dense) / t.tp *
                       RankBytesPerParam(t, shards.dense);
  const double expert = static_cast<double>(p.expert) / (ExpertTp(t) * t.ep) *
                        RankBytesPerParam(t, shards.expert);
  return static_cast<Bytes>(std::llround(dense + expert));
}

// Hidden-state bytes of one micro-batch sent to the next stage:
// e·(s/cp)·b·h, the local 1/t shard with sequence parallelism.
Bytes HiddenBytes(const Architecture& a, const Training& t) {
  const I64 bytes = t.activation_bytes * (t.seq / t.cp) * t.micro_batch *
                    a.hidden;
  return (t.sp && t.tp > 1) ? CeilDiv(bytes, t.tp) : bytes;
}

std::string SetupText(const Training& t, const Hardware& h) {
  const std::string split = "tp " + std::to_string(t.tp) + (t.sp ? "+sp" : "") +
                            ", cp " + std::to_string(t.cp);
  if (h.step_model) {
    return split + ", kernels priced by shape on " + h.gpu.name +
           " (the step model; core/layer_kernels.h)";
  }
  return split + " at " + Fmt("%g", h.peak_tflops) + " TFLOP/s x " +
         Fmt("%g", h.achievable_fraction);
}

// "x 18 B/param (bf16 weight 2 + fp32 grad 4 + Adam 12: fp32 master 4 +
// m, v 8)", or "x (6 + 12/shards) ..." with the distributed optimizer.
std::string BytesText(const Training& t) {
  const ParamStateBytes b = StateBytes(t);
  const Sharding sh = ShardingOf(t);
  if (sh.fsdp_on() || t.offload.optimizer > 0 || sh.shard > 0) {
    // Sharded data parallelism or the optimizer offloaded (core/dp_costs.h).
    const DpShards n = ShardsOf(t);
    return Fmt(" x %.4g B/param", RankBytesPerParam(t, n.dense)) + " (" +
           FsdpTitle(sh.fsdp) + " " + DpShardingName(sh.strategy) + " over " + std::to_string(n.dense) +
           (n.replicate > 1 ? " x " + std::to_string(n.replicate) + " replicas" : "") +
           (t.offload.optimizer > 0 ? Fmt(", optimizer %g on the host", t.offload.optimizer)
                                    : std::string()) +
           "; core/sharding.h) [MTM, ZeRO]";
  }
  const bool adam = t.optimizer == Optimizer::Adam;
  const bool master = t.dtype != Dtype::Fp32;
  const std::string k = std::to_string(b.optimizer);
  const std::string wg = std::to_string(b.weight + b.gradient);
  std::string s =
      t.distributed_optimizer
          ? " x (" + wg + " + " + k + "/shards) B/param"
          : " x " + std::to_string(b.weight + b.gradient + b.optimizer) +
                " B/param";
  s += std::string(" (") + DtypeName(t.dtype) + " weight " +
       std::to_string(b.weight) + " + " + DtypeName(t.grad_dtype) +
       " grad " + std::to_string(b.gradient) + " + " +
       (adam ? "Adam " : "SGD momentum ") + k + ": " +
       (master ? "fp32 master 4 + " : "") + (adam ? "m, v 8" : "momentum 4") +
       ")" + (t.distributed_optimizer ? ", distributed optimizer" : "") +
       " [MTM, MLM" + (adam ? "" : ", ZeRO") + "]";
  return s;
}

std::string StaticText(const ParamCount& p, const Training& t,
                       I64 tied_copy = 0) {
  std::string s =
      tied_copy > 0
          ? "static: (" + std::to_string(p.dense) +
                " + tied-embedding copy V*h " + std::to_string(tied_copy) +
                " [MLM]) params / tp"
          : "static: " + std::to_string(p.dense) + " params / tp";
  if (p.expert > 0) {
    s += " + " + std::to_string(p.expert) +
         (ExpertTp(t) != t.tp ? " expert params / (etp*ep)" : " expert params / (tp*ep)");
  }
  return s + BytesText(t);
}

// Times: with the step model the layer's kernels priced by shape
// (core/layer_kernels.h), else its FLOPs at peak x achievable_fraction.
// An MTP layer: its decoder layer, eh_proj (2h -> h) and the shared head's
// logits.
LayerKernels MtpKernels(const Architecture& a, const Training& t) {
  LayerKernels k = DecoderKernels(a, t, a.layers);
  const std::int64_t T = t.micro_batch * (t.seq / t.cp);
  k.gemms.push_back({"eh_proj", T, a.hidden, 2 * a.hidden});
  const LayerKernels head = HeadKernels(a, t);
  k.gemms.insert(k.gemms.end(), head.gemms.begin(), head.gemms.end());
  k.elementwise_bytes += head.elementwise_bytes;
  k.elementwise_kernels += head.elementwise_kernels;
  k.comms.insert(k.comms.end(), head.comms.begin(), head.comms.end());
  return k;
}

// `groups`: the job's placement (PlaceJob), computed once per DeriveLayers.
void SetTimes(DerivedLayer& d, LayerKernels kernels, const Training& t,
              const Hardware& h, const JobGroups& groups) {
  d.layer.split_backward = true;
  if (h.step_model) {
    d.times = PriceKernels(kernels, t, h, groups);
    d.kernels = std::move(kernels);
    d.layer.forward = d.times.forward;
    d.layer.backward_input = d.times.backward_input;
    d.layer.backward_weight = d.times.backward_weight;
    d.layer.comm_forward = d.times.comm_forward;
    d.layer.comm_backward = d.times.comm_backward;
    d.layer.ep_forward = d.times.ep_forward;
    d.layer.ep_backward = d.times.ep_backward;
    return;
  }
  d.layer.forward = DeviceTime(d.flops.forward(), t, h);
  d.layer.backward_input = DeviceTime(d.flops.backward_input(), t, h);
  d.layer.backward_weight = DeviceTime(d.flops.backward_weight(), t, h);
}

// The step's tail of a layer (core/step_tail.h), with the step model: the
// gradient bytes its rank syncs (dense over dp x cp, experts over the
// expert-data-parallel group; tied-embedding copies are parameters of the
// head) and its optimizer step: Adam with an fp32 master copy reads and
// writes the master weight, m and v, reads the gradient and writes the
// 16-bit weight, about 30 bytes of HBM traffic per local parameter
// (job-model.md "Optimizer step"), on the local shard with the distributed
// optimizer.
void SetTail(DerivedLayer& d, const Training& t, const Hardware& h) {
  if (!h.step_model) return;
  const double dense = static_cast<double>(d.params.dense + d.tied_copy_params) / t.tp;
  const double expert = static_cast<double>(d.params.expert) / (ExpertTp(t) * t.ep);
  const int grad = ReduceBytes(t);
  d.layer.grad_bytes = static_cast<Bytes>(std::llround(dense * grad));
  d.layer.expert_grad_bytes = static_cast<Bytes>(std::llround(expert * grad));
  const bool sharded = t.distributed_optimizer || t.sharding.fsdp == Fsdp::Torch;
  const DpShards shards = ShardsOf(t);
  const double local = sharded ? dense / shards.dense + expert / shards.expert
                               : dense + expert;
  d.layer.optimizer = OptimizerStepTime(local, t, h);
  // Low precision: the weights' quantized copies are cast once per step
  // (TE's is_first_microbatch cache), counted with the optimizer's work.
  d.layer.optimizer += d.times.quantize_weight_step;
}

// Bytes of a low-precision layer's quantized weight copies on its rank
// beyond the training-dtype weights StateBytes counts (core/precision.h):
// both orientations kept for the step, or, with --fp8-param-gather, the
// quantized primaries in place of the 16-bit weights.
Bytes LowWeightBytes(const LayerKernels& k, const Training& t,
                     const Hardware& h) {
  if (k.recipe == Recipe::None) return 0;
  const double copy = WeightCopyBytes(k.recipe, h.gpu.arch) -
                      (t.low.param_gather ? DtypeBytes(t.dtype) : 0);
  return static_cast<Bytes>(std::llround(k.quantize_weight * copy));
}

DerivedLayer DecoderLike(const Architecture& a, const Training& t,
                         const Hardware& h, std::string name, LayerKind kind,
                         const ParamCount& params, const Flops& flops,
                         bool moe, LayerKernels kernels, const JobGroups& groups,
                         int index) {
  DerivedLayer d;
  d.layer.name = std::move(name);
  d.layer.kind = kind;
  d.params = params;
  d.flops = flops;
  const Recipe recipe = kernels.recipe;
  const Bytes low_weights = LowWeightBytes(kernels, t, h);
  SetTimes(d, std::move(kernels), t, h, groups);
  SetTail(d, t, h);
  d.layer.static_memory = StaticBytes(params, t) + low_weights;
  const LayerBlock block = a.Block(index < 0 ? a.layers : index);
  d.activation = BlockActivation(a, t, moe, recipe, block);
  d.layer.activation = d.activation.none;
  d.layer.activation_after_input_grad =
      BlockWeightGradStash(a, t, moe, recipe, block);
  d.layer.output_bytes = HiddenBytes(a, t);
  // Selective recompute reruns the attention core; full recompute the whole
  // forward [K22 §5].
  const Nanos core_time =
      h.step_model ? d.times.attention : DeviceTime(flops.attention, t, h);
  // Sharded units and offload (core/dp_costs.h) after the recompute
  // options take the layer's own forward.
  d.layer.recompute = {
      RecomputeOption{"selective", d.activation.selective, core_time},
      RecomputeOption{"full", d.activation.full, d.layer.forward}};
  // Megatron's combined 1F1B (--overlap-moe-expert-parallel-comm) refuses
  // full recompute: the search may not choose it.
  if (t.moe.overlap_ep_comm) d.layer.recompute.pop_back();
  ApplySharding(d, t, h, groups);
  ApplyActivationOffload(d, a, t, h, moe, index);
  d.provenance =
      "params [HF shapes]; forward " + Fmt("%.4g", flops.forward()) +
      " FLOPs = 2*weights*tokens + attention core 2*s^2*b*a*(d_qk+d_v) "
      "[N21 §5.1], " +
      SetupText(t, h) +
      "; backward I = matmul + 2*core, W = matmul [Q24 Table 1]; " +
      StaticText(params, t) +
      "; activation none/selective/full [K22 Table 2" +
      (t.tp > 1 ? (t.sp ? ", tp+sp" : ", tp") : "") +
      "]; output e*s*b*h" + (t.sp && t.tp > 1 ? "/tp" : "") +
      (recipe != Recipe::None
           ? std::string("; linears in ") + RecipeName(recipe) +
                 " [TE, core/precision.h]: saved inputs " +
                 Fmt("%g", SavedInputBytes(recipe, t.activation_bytes)) +
                 " B/element, weight copies " + std::to_string(low_weights) +
                 " B"
           : std::string());
  return d;
}

}  // namespace

std::vector<DerivedLayer> DeriveLayers(const Architecture& a,
                                       const Training& t, const Hardware& h) {
  std::vector<DerivedLayer> out;
  // Where the job's groups sit (the step model), once for every layer.
  const JobGroups groups = h.step_model ? PlaceJob(t, h.gpu) : JobGroups{};
  const bool sp = t.sp && t.tp > 1;
  const I64 s = t.seq / t.cp;
  const I64 sb = s * t.micro_batch;

  {  // Embedding: a lookup, no FLOPs counted.
    DerivedLayer d;
    d.layer.name = "embedding";
    d.layer.kind = LayerKind::Embedding;
    d.params = EmbeddingParams(a);
    SetTimes(d, EmbeddingKernels(a, t), t, h, groups);
    SetTail(d, t, h);
    d.layer.static_memory = StaticBytes(d.params, t);
    // Megatron's estimator: 8sb (input ids) + sbh (embedding dropout
    // mask), divided by t [MTM].
    d.layer.activation = CeilDiv(8 * sb + sb * a.hidden, t.tp);
    d.activation = {d.layer.activation, d.layer.activation,
                    d.layer.activation};
    d.layer.output_bytes = HiddenBytes(a, t);
    ApplySharding(d, t, h, groups);
    d.provenance = "params (V + positions) * h [HF]; forward 0 (lookup); " +
                   StaticText(d.params, t) +
                   "; activation (8sb + sbh)/tp [MTM]; output e*s*b*h" +
                   (sp ? "/tp" : "");
    out.push_back(std::move(d));
  }
  for (int i = 0; i < a.layers; ++i) {
    const bool moe = a.IsMoeLayer(i);
    out.push_back(DecoderLike(a, t, h, "decoder." + std::to_string(i),
                              moe ? LayerKind::Moe : LayerKind::Decoder,
                              DecoderLayerParams(a, i),
                              DecoderLayerFlops(a, t, i), moe,
                              DecoderKernels(a, t, i), groups, i));
  }
  for (int i = 0; i < a.mtp_layers; ++i) {
    DerivedLayer d =
        DecoderLike(a, t, h, "mtp." + std::to_string(i), LayerKind::Mtp,
                    MtpLayerParams(a), MtpLayerFlops(a, t),
                    a.IsMoeLayer(a.layers), MtpKernels(a, t), groups, -1);
    // Its own logits (through the shared head) in fp32, as the head's.
    d.layer.workspace = CeilDiv(4 * sb * a.vocab, t.tp);
    d.provenance += "; workspace fp32 logits 4*s*b*V/tp";
    out.push_back(std::move(d));
  }
  {  // Final norm + LM head + loss.
    DerivedLayer d;
    d.layer.name = "head";
    d.layer.kind = LayerKind::Head;
    const ParamCount norm = FinalNormParams(a);
    const ParamCount head = HeadParams(a);
    d.params = {norm.dense + head.dense, 0};
    d.flops = HeadFlops(a, t);
    SetTimes(d, HeadKernels(a, t), t, h, groups);
    // A tied head's weights are the embedding's. With more than one
    // pipeline rank Megatron's last stage allocates its own output-layer
    // weight, a copy of the word embeddings V x h / t with its gradient and
    // optimizer state, kept equal to the first stage's by an all-reduce
    // over the embedding group [MLM setup_embeddings_and_output_layer].
    // The copy costs memory here but is not a parameter of the model (the
    // totals count the matrix once). The all-reduce of its gradient is in
    // the step's tail (core/step_tail.h), with the step model.
    if (a.tied_embeddings && t.pp > 1) d.tied_copy_params = a.vocab * a.hidden;
    SetTail(d, t, h);
    d.layer.static_memory =
        StaticBytes({d.params.dense + d.tied_copy_params, 0}, t);
    // Stashed: the final norm's input and the head's input, e·sbh each
    // (1/t with sp); transient: the fp32 logits 4·s·b·V/t (Megatron's
    // output-layer estimate 4sbh(1 + V/h)/t [MTM]; formulas.md §3).
    const I64 hidden = t.activation_bytes * sb * a.hidden;
    d.layer.activation = 2 * (sp ? CeilDiv(hidden, t.tp) : hidden);
    d.activation = {d.layer.activation, d.layer.activation,
                    d.layer.activation};
    d.layer.workspace = CeilDiv(4 * sb * a.vocab, t.tp);
    d.layer.output_bytes = 0;
    ApplySharding(d, t, h, groups);
    d.provenance = "params norm + V*h unless tied [HF]; forward " +
                   Fmt("%.4g", d.flops.forward()) +
                   " FLOPs = 2*s*b*h*V [N21 §5.1], " + SetupText(t, h) +
                   "; backward I = W = forward [Q24 Table 1]; " +
                   StaticText(d.params, t, d.tied_copy_params) +
                   "; activation 2*e*s*b*h" + (sp ? "/tp" : "") +
                   "; workspace fp32 logits 4*s*b*V/tp [MTM]";
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Layer> BuildLayers(const Architecture& a, const Training& t,
                               const Hardware& h) {
  std::vector<Layer> layers;
  for (DerivedLayer& d : DeriveLayers(a, t, h)) {
    layers.push_back(std::move(d.layer));
  }
  return layers;
}

}  // namespace ppb
