// Memory per layer (core/cost_model.h's contract): activation bytes per
// micro-batch [K22 §4.1] by the parts a layer has, what a split backward's
// W still needs [Q24 Table 1], parameter and optimizer-state bytes
// [MTM][ZeRO], and the validation of the cost inputs. Split from
// cost_model.cpp by concept (issue 46).
#include "core/cost_model.h"

#include "core/dp_costs.h"
#include "core/mixers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace ppb {

namespace {

using I64 = std::int64_t;

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
  // A latent MoE's up projection keeps its input, the combined tokens at
  // the latent width (the down projection's is the MLP input above).
  if (moe && a.moe_latent > 0) x.replicated += Linear(sb * a.moe_latent);
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

}  // namespace ppb
