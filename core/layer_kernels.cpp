#include "core/layer_kernels.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "core/mixers.h"

namespace ppb {
namespace {

using I64 = std::int64_t;

I64 Div(I64 x, I64 d) { return std::max<I64>(1, x / std::max<I64>(1, d)); }

// Seconds to ns, saturating at about 11.6 days (a step the config checks
// keep far below; never an out-of-range conversion).
Nanos Ns(double seconds) {
  constexpr double kMax = 1e15;
  const double ns = seconds * 1e9;
  return static_cast<Nanos>(std::llround(ns < kMax ? ns : kMax));
}

double PeakFlopsPerS(const Hardware& h) { return h.peak_tflops * 1e12; }

// Tokens of one micro-batch on one rank (its s / cp of each sequence).
I64 Tokens(const Training& t) { return t.micro_batch * (t.seq / t.cp); }

// The element-wise kernels of the hidden stream that sequence parallelism
// divides over t (and that without it every TP rank runs on all tokens).
I64 HiddenShare(const Training& t, I64 bytes) {
  return t.sp && t.tp > 1 ? bytes / t.tp : bytes;
}

// The TP collectives of a pair of linears, column- then row-parallel
// (attention: QKV then projection; MLP: fc1 then fc2), in Megatron-LM's
// mappings.py: without SP an all-reduce after the row-parallel linear in
// the forward and one before the column-parallel linear in the backward;
// with SP an all-gather before and a reduce-scatter after in the forward,
// the conjugates in the backward (the wgrad's re-gather of the input runs
// beside the dgrad GEMM, async, and is not counted).
void TpPair(const std::string& name, const Training& t, Bytes bytes,
            std::vector<CommOp>& out, Recipe recipe = Recipe::None) {
  if (t.tp <= 1) return;
  if (t.sp && recipe != Recipe::None) {
    // TE gathers the quantized input of the column-parallel linear
    // (performance_considerations.rst, sequence parallelism); the
    // backward's all-gather of gradients stays in the training dtype.
    // Current scaling first all-reduces the shards' amax over tp.
    const Bytes quantized = static_cast<Bytes>(std::llround(
        static_cast<double>(bytes) / t.activation_bytes *
        SavedInputBytes(recipe, t.activation_bytes)));
    if (recipe == Recipe::Fp8Tensorwise || recipe == Recipe::Nvfp4) {
      out.push_back({name + " amax all-reduce", Collective::AllReduce,
                     CommGroup::Tp, 4, 1, 0, 1.0});
    }
    out.push_back({name + " all-gather (" + RecipeName(recipe) + ")",
                   Collective::AllGather, CommGroup::Tp, quantized, 1, 0, 1.0});
    out.push_back({name + " all-gather", Collective::AllGather, CommGroup::Tp,
                   bytes, 0, 1, 1.0});
    out.push_back({name + " reduce-scatter", Collective::ReduceScatter,
                   CommGroup::Tp, bytes, 1, 1, 1.0});
  } else if (t.sp) {
    out.push_back({name + " all-gather", Collective::AllGather, CommGroup::Tp,
                   bytes, 1, 1, 1.0});
    out.push_back({name + " reduce-scatter", Collective::ReduceScatter,
                   CommGroup::Tp, bytes, 1, 1, 1.0});
  } else {
    out.push_back({name + " all-reduce", Collective::AllReduce, CommGroup::Tp,
                   bytes, 1, 1, 1.0});
  }
}

// Every GEMM but the router runs `recipe` (core/precision.h); the elements
// each quantizes: its input (m x k) in the forward, its output gradient
// (m x n) in the backward, its weight (n x k) once per step. QKV's and
// fc1's inputs are the norms' outputs (TE LayerNormLinear casts them in
// the norm's kernel; with sequence parallelism the local 1/t shard before
// the gather). Delayed scaling adds one amax all-reduce per pipeline
// rank's block and micro-batch (Megatron transformer_block.py wraps the
// block in one fp8 context for the delayed recipe, and TE reduces the
// amaxes at its exit): spread over the rank's L/p layers.
void MarkLowPrecision(const Architecture& a, const Training& t, Recipe recipe,
                      LayerKernels& k) {
  k.recipe = recipe;
  for (Gemm& g : k.gemms) {
    if (g.name == "router") continue;
    g.recipe = recipe;
    const double count = g.count;
    const double input = static_cast<double>(g.m) * static_cast<double>(g.k) * count;
    if (g.name == "qkv" || g.name == "fc1") {
      k.quantize_input_fused += t.sp && t.tp > 1 ? input / t.tp : input;
    } else {
      k.quantize_input += input;
    }
    k.quantize_grad += static_cast<double>(g.m) * static_cast<double>(g.n) * count;
    k.quantize_weight += static_cast<double>(g.n) * static_cast<double>(g.k) * count;
  }
  if (recipe == Recipe::Fp8Delayed) {
    const double per_rank = std::max(1.0, static_cast<double>(a.layers) / std::max(1, t.pp));
    // The amax history of each quantized tensor: 3 per linear, fp32.
    const Bytes bytes = static_cast<Bytes>(4 * 3 * k.gemms.size());
    k.comms.push_back({"fp8 amax all-reduce (1 per block of L/p layers)",
                       Collective::AllReduce, CommGroup::Amax, bytes, 1, 0,
                       1.0 / per_rank});
  }
}

// Softmax attention: its projections (Qwen3-Next's q_proj also emits the
// output gate), its core over the pairs its span computes (core/mixers.h
// SpanShare), TP collectives and CP's ring.
void AttentionKernels(const Architecture& a, const Training& t,
                      LayerBlock block, Recipe recipe, LayerKernels& k) {
  const I64 T = Tokens(t);
  const I64 e = t.activation_bytes;
  const I64 h = a.hidden;
  const I64 tp = t.tp;
  const Bytes hidden = e * T * h;
  // Attention projections.
  if (a.mla()) {
    const I64 qk = QkDim(a);
    if (a.q_lora_rank > 0) {
      // The down-projections are not tensor-parallel: every rank runs them.
      k.gemms.push_back({"q_down", T, a.q_lora_rank, h});
      k.gemms.push_back({"q_up", T, Div(a.heads, tp) * qk, a.q_lora_rank});
    } else {
      k.gemms.push_back({"q", T, Div(a.heads, tp) * qk, h});
    }
    k.gemms.push_back({"kv_down", T, a.kv_lora_rank + a.qk_rope_head_dim, h});
    k.gemms.push_back({"kv_up", T,
                       Div(a.heads, tp) * (a.qk_nope_head_dim + a.v_head_dim),
                       a.kv_lora_rank});
  } else {
    const I64 gate = a.attention_out_gate ? Div(a.heads, tp) : 0;
    k.gemms.push_back({"qkv", T,
                       (Div(a.heads, tp) + 2 * Div(a.kv_heads, tp) + gate) * a.head_dim,
                       h});
  }
  k.gemms.push_back({"proj", T, h, Div(a.heads, tp) * VDim(a)});
  TpPair("attention", t, hidden, k.comms, recipe);
  // Attention core: the causal half of 2 s^2 b a (d_qk + d_v) over t and cp.
  const double s = static_cast<double>(t.seq);
  k.attention_flops = 0.5 * 2.0 * s * s * static_cast<double>(t.micro_batch) *
                      static_cast<double>(a.heads) *
                      static_cast<double>(QkDim(a) + VDim(a)) /
                      (static_cast<double>(tp) * t.cp) *
                      SpanShare(a, block.span, t.seq);
  if (t.cp > 1) {
    // K and V of the local tokens (their local heads) per ring step.
    k.cp_block_bytes = e * T * Div(KvHeads(a), tp) * (QkDim(a) + VDim(a));
  }
}

// Mamba-2 or gated DeltaNet: the input projection (column-parallel) and
// the output projection (row-parallel), the TP pair around them as
// Megatron's mamba_mixer.py, and the scan priced as the attention core
// (its FLOPs from core/mixers.h ScanFlopsPerToken).
void MixerKernels(const Architecture& a, const Training& t, Mixer m,
                  Recipe recipe, LayerKernels& k) {
  const I64 T = Tokens(t);
  const I64 h = a.hidden;
  const I64 tp = t.tp;
  const I64 inner = m == Mixer::Mamba2 ? a.mamba.inner() : a.deltanet.values();
  const I64 in_width = MixerWeights(a, m) / h - inner;
  k.gemms.push_back({"mixer in_proj", T, Div(in_width, tp), h});
  k.gemms.push_back({"mixer out_proj", T, h, Div(inner, tp)});
  TpPair("mixer", t, t.activation_bytes * T * h, k.comms, recipe);
  k.attention_flops = ScanFlopsPerToken(a, m) * static_cast<double>(T) /
                      static_cast<double>(tp);
  // The causal conv (read + write its channels) and the gated norm (read
  // the scan's output and z, write): two kernels.
  const I64 conv = in_width - inner -
                   (m == Mixer::Mamba2 ? a.mamba.heads : 2 * a.deltanet.value_heads);
  k.elementwise_bytes += t.activation_bytes * T * Div(2 * conv + 3 * inner, tp);
  k.elementwise_kernels += 2;
}

// The MoE layer of decoder layer `layer` (core/moe.h [TD]): the router on
// the rank's tokens (T/t with sequence parallelism), the local experts'
// GEMMs on the tokens routed to them (etp x ep x T_r x top_k / E per
// expert, width f/etp), the shared expert (TP-parallel, with its own TP
// pair), the dispatcher's collectives and the permute / unpermute
// kernels. The busiest rank's share (core/moe.h BusiestShare) scales the
// expert GEMMs and the all-to-alls. A latent MoE (Architecture::moe_latent)
// projects the rank's tokens down before the dispatch and up after the
// combine, whole on every TP rank; its experts and collectives work at the
// latent width. Returns the tokens x inner width of the expert activations
// on this rank.
I64 MoeKernels(const Architecture& a, const Training& t, int layer, Recipe recipe,
               LayerKernels& k) {
  const I64 T = Tokens(t);
  const I64 e = t.activation_bytes;
  const I64 h = a.hidden;
  const I64 tp = t.tp;
  const I64 etp = ExpertTp(t);
  const I64 ep = std::max(1, t.ep);
  const I64 gate = a.gated_mlp ? 2 : 1;
  const I64 rank_tokens = t.sp && tp > 1 ? Div(T, tp) : T;
  // The MoE layers before this one: the row of measured loads it takes.
  const int moe_index = t.moe.loads.given() ? a.MoeLayersBefore(layer) : 0;
  const double share = BusiestShare(t.moe, t.routing_skew, t.ep, moe_index);
  k.gemms.push_back({"router", rank_tokens, a.experts, h});
  const I64 d = ExpertWidth(a);  // what the experts and the dispatcher see
  if (a.moe_latent > 0) {
    k.gemms.push_back({"moe latent down", rank_tokens, a.moe_latent, h});
    k.gemms.push_back({"moe latent up", rank_tokens, h, a.moe_latent});
  }
  const I64 local = Div(a.experts, ep);
  // Balanced: the etp x ep ranks' tokens meet E / ep experts here.
  const I64 per_expert =
      std::max<I64>(1, rank_tokens * a.top_k * ep * etp / std::max(1, a.experts));
  Gemm fc1{"expert fc1", per_expert, gate * Div(a.expert_ffn, etp), d};
  fc1.count = static_cast<int>(local);
  fc1.skew = share;
  Gemm fc2{"expert fc2", per_expert, d, Div(a.expert_ffn, etp)};
  fc2.count = static_cast<int>(local);
  fc2.skew = share;
  k.gemms.push_back(fc1);
  k.gemms.push_back(fc2);
  // etp x T_r x top_k tokens on this rank, f / etp wide.
  I64 width = rank_tokens * a.top_k * a.expert_ffn;
  if (a.shared_ffn > 0) {
    k.gemms.push_back({"shared fc1", T, gate * Div(a.shared_ffn, tp), h});
    k.gemms.push_back({"shared fc2", T, h, Div(a.shared_ffn, tp)});
    width += T * Div(a.shared_ffn, tp);
    TpPair("shared expert", t, e * T * h, k.comms, recipe);
  }
  const Bytes routed = e * rank_tokens * a.top_k * d;
  const MoeSettings& m = t.moe;
  if (m.dispatcher == Dispatcher::AllGather) {
    // The hidden states of the etp x ep group gathered before the experts
    // and reduce-scattered after (forward; the backward mirrors them).
    if (etp * ep > 1) {
      const Bytes all = e * rank_tokens * d * etp * ep;
      k.comms.push_back({"moe all-gather (etp x ep)", Collective::AllGather,
                         CommGroup::EtpEp, all, 1, 1, 1.0});
      k.comms.push_back({"moe reduce-scatter (etp x ep)", Collective::ReduceScatter,
                         CommGroup::EtpEp, all, 1, 1, 1.0});
    }
  } else {
    if (ep > 1) {
      CommOp dispatch{"moe dispatch all-to-all", Collective::AllToAll, CommGroup::Ep,
                      routed, 1, 1, share};
      CommOp combine{"moe combine all-to-all", Collective::AllToAll, CommGroup::Ep,
                     routed, 1, 1, share};
      if (m.dispatcher == Dispatcher::Flex) {
        for (CommOp* c : {&dispatch, &combine}) {
          c->flex = true;
          c->backend = m.backend;
          c->copies = a.top_k;
          c->name = std::string("moe ") + (c == &dispatch ? "dispatch" : "combine") +
                    " (" + FlexBackendName(m.backend) + ")";
        }
      }
      k.comms.push_back(dispatch);
      k.comms.push_back(combine);
    }
    if (etp > 1) {
      // The received tokens gathered over expert TP and reduce-scattered
      // back.
      const Bytes gathered = routed * etp;
      k.comms.push_back({"moe all-gather (etp)", Collective::AllGather, CommGroup::Etp,
                         gathered, 1, 1, share});
      k.comms.push_back({"moe reduce-scatter (etp)", Collective::ReduceScatter,
                         CommGroup::Etp, gathered, 1, 1, share});
    }
  }
  // Permute and unpermute: read and write each routed copy.
  k.elementwise_bytes += static_cast<Bytes>(std::llround(4.0 * static_cast<double>(routed) * share));
  k.elementwise_kernels += 2;
  return width;
}

}  // namespace

const char* CommGroupName(CommGroup g) {
  switch (g) {
    case CommGroup::Tp:
      return "tp";
    case CommGroup::Cp:
      return "cp";
    case CommGroup::Ep:
      return "ep";
    case CommGroup::Amax:
      return "tp x dp x cp";
    case CommGroup::Etp:
      return "etp";
    case CommGroup::EtpEp:
      return "etp x ep";
  }
  return "?";
}

LayerKernels EmbeddingKernels(const Architecture& a, const Training& t) {
  LayerKernels k;
  const I64 T = Tokens(t);
  const Bytes hidden = t.activation_bytes * T * a.hidden;
  // Lookup (write the hidden states) and the embedding dropout.
  k.elementwise_bytes = HiddenShare(t, 3 * hidden);
  k.elementwise_kernels = 2;
  // Vocabulary-parallel embedding: each rank looks up its rows and the
  // partial results are all-reduced (reduce-scattered with SP) in the
  // forward (megatron/core/tensor_parallel/layers.py VocabParallelEmbedding).
  if (t.tp > 1) {
    k.comms.push_back({t.sp ? "embedding reduce-scatter" : "embedding all-reduce",
                       t.sp ? Collective::ReduceScatter : Collective::AllReduce,
                       CommGroup::Tp, hidden, 1, 0, 1.0});
  }
  return k;
}

LayerKernels DecoderKernels(const Architecture& a, const Training& t,
                            int layer) {
  LayerKernels k;
  const Recipe recipe = LowPrecisionLayer(t.low, layer, a.layers)
                            ? t.low.recipe
                            : Recipe::None;
  const I64 T = Tokens(t);
  const I64 e = t.activation_bytes;
  const I64 h = a.hidden;
  const I64 tp = t.tp;
  const Bytes hidden = e * T * h;
  const LayerBlock block = a.Block(layer);
  if (block.mixer == Mixer::Attention) {
    AttentionKernels(a, t, block, recipe, k);
  } else if (block.mixer != Mixer::None) {
    MixerKernels(a, t, block.mixer, recipe, k);
  }
  // MLP.
  const I64 gate = a.gated_mlp ? 2 : 1;
  I64 inner_tokens_width = 0;  // sum over tokens of the inner width
  const bool mlp = a.HasMlp(layer);
  if (!mlp) {
    // Nemotron-H's mixer-only blocks.
  } else if (a.IsMoeLayer(layer)) {
    inner_tokens_width += MoeKernels(a, t, layer, recipe, k);
  } else {
    k.gemms.push_back({"fc1", T, gate * Div(a.ffn, tp), h});
    k.gemms.push_back({"fc2", T, h, Div(a.ffn, tp)});
    inner_tokens_width += T * Div(a.ffn, tp);
  }
  // The dense MLP's TP pair; an MoE layer's shared expert has its own
  // (MoeKernels).
  if (mlp && !a.IsMoeLayer(layer)) TpPair("mlp", t, hidden, k.comms, recipe);
  if (recipe != Recipe::None) MarkLowPrecision(a, t, recipe, k);
  // Element-wise, per part (mixer, MLP): a norm (read + write) and a
  // bias-dropout-add (read two, write one, a 1-byte mask); the activation
  // (read gate x up or fc1, write); rotary on Q and K (read + write) in an
  // attention layer unless positions are learned.
  const int parts = (block.mixer != Mixer::None ? 1 : 0) + (mlp ? 1 : 0);
  I64 bytes = HiddenShare(t, parts * (2 * hidden + 3 * hidden + T * h));
  bytes += (gate + 1) * e * inner_tokens_width;
  int kernels = 2 * parts + (mlp ? 1 : 0);
  if (a.learned_positions == 0 && block.mixer == Mixer::Attention) {
    bytes += 2 * e * T * (Div(a.heads, tp) + Div(KvHeads(a), tp)) * QkDim(a);
    ++kernels;
  }
  k.elementwise_bytes += bytes;
  k.elementwise_kernels += kernels;
  return k;
}

LayerKernels HeadKernels(const Architecture& a, const Training& t) {
  LayerKernels k;
  const I64 T = Tokens(t);
  const Bytes hidden = t.activation_bytes * T * a.hidden;
  k.gemms.push_back({"logits", T, Div(a.vocab, t.tp), a.hidden});
  // Final norm (read + write), then the vocabulary-parallel cross-entropy
  // on fp32 logits: max, exp-sum and the target's logit read the logits
  // about three times [Megatron tensor_parallel/cross_entropy.py].
  k.elementwise_bytes =
      HiddenShare(t, 2 * hidden) + 3 * 4 * T * Div(a.vocab, t.tp);
  k.elementwise_kernels = 4;
  if (t.tp > 1) {
    // The head's input: gathered (SP) or its gradient all-reduced; the
    // loss's three all-reduces of one fp32 per token.
    if (t.sp) {
      k.comms.push_back({"head all-gather", Collective::AllGather,
                         CommGroup::Tp, hidden, 1, 1, 1.0});
    } else {
      k.comms.push_back({"head input-grad all-reduce", Collective::AllReduce,
                         CommGroup::Tp, hidden, 0, 1, 1.0});
    }
    k.comms.push_back({"cross-entropy all-reduce", Collective::AllReduce,
                       CommGroup::Tp, 4 * T, 3, 0, 1.0});
  }
  return k;
}

// The recipe's peak in FLOP/s: the 16-bit peak (hardware.peak_tflops,
// which the user may override) or the preset's FP8 / FP4 peak.
double RecipePeak(const Hardware& h, Recipe recipe) {
  if (recipe == Recipe::None) return PeakFlopsPerS(h);
  return RecipePeakTflops(recipe, h.gpu) * 1e12;
}

double GemmEfficiency(double flops, const Hardware& h, Recipe recipe) {
  if (h.fraction_given) return h.achievable_fraction;
  const ComputeEfficiency& c = h.gpu.compute;
  const double half =
      RecipePeak(h, recipe) * static_cast<double>(c.matmul_half_time) / 1e9;
  const double share = recipe == Recipe::None ? c.matmul
                                              : RecipeMatmulShare(recipe, h.gpu);
  return share * flops / (flops + half);
}

Nanos GemmTime(const Gemm& g, const Hardware& h) {
  const double one = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                     static_cast<double>(g.k) * g.skew;
  if (one <= 0) return 0;
  const Nanos t = Ns(one / (RecipePeak(h, g.recipe) *
                            GemmEfficiency(one, h, g.recipe)));
  return g.count * std::max(t, h.gpu.compute.kernel_floor);
}

QuantizeTimes QuantizeTime(const LayerKernels& k, const Hardware& h) {
  QuantizeTimes q;
  if (k.recipe == Recipe::None) return q;
  const GpuArch arch = h.gpu.arch;
  // Priced as the element-wise kernels they are.
  auto price = [&](std::initializer_list<QuantizeCost> parts) {
    double bytes = 0;
    int kernels = 0;
    for (const QuantizeCost& c : parts) {
      bytes += c.bytes;
      kernels += c.kernels;
    }
    return ElementwiseTime(static_cast<Bytes>(std::llround(bytes)), kernels, h);
  };
  const double inputs = k.quantize_input + k.quantize_input_fused;
  q.forward = price({QuantizeBytes(k.recipe, arch, k.quantize_input, false),
                     QuantizeBytes(k.recipe, arch, k.quantize_input_fused, true),
                     HadamardBytes(k.recipe, inputs)});
  q.backward = price({QuantizeBytes(k.recipe, arch, k.quantize_grad, false)});
  q.hadamard_grad = price({HadamardBytes(k.recipe, k.quantize_grad)});
  q.weight_step = price({QuantizeBytes(k.recipe, arch, k.quantize_weight, false)});
  return q;
}

Nanos AttentionTime(double flops, const Hardware& h) {
  if (flops <= 0) return 0;
  const double eff = h.fraction_given ? h.achievable_fraction
                                      : h.gpu.compute.attention;
  return std::max(Ns(flops / (PeakFlopsPerS(h) * eff)),
                  h.gpu.compute.kernel_floor);
}

Nanos ElementwiseTime(Bytes bytes, int kernels, const Hardware& h) {
  if (bytes <= 0) return 0;
  const Nanos t = Ns(static_cast<double>(bytes) /
                     (h.gpu.hbm_bytes_per_s * h.gpu.compute.hbm));
  return std::max(t, kernels * h.gpu.compute.kernel_floor);
}

const GroupPlacement& GroupOf(CommGroup g, const JobGroups& groups) {
  switch (g) {
    case CommGroup::Tp:
      return groups.tp;
    case CommGroup::Cp:
      return groups.cp;
    case CommGroup::Ep:
      return groups.ep;
    case CommGroup::Etp:
      return groups.etp;
    case CommGroup::EtpEp:
      return groups.etp_ep;
    case CommGroup::Amax:
      break;
  }
  return groups.tp_dp_cp;
}

// DeepEP / HybridEP [core/moe.h DEP, HEP]: inside one NVLink domain the
// (n-1)/n of a rank's copies that leave it at the kernels' measured share
// of NVLink; across domains a token goes once to each other domain holding
// one of its `copies` experts (expected (M-1)(1-(1-1/M)^k) of M domains)
// over the NICs at DeepEP's RDMA share, pipelined with the NVLink hop.
namespace {
Nanos FlexTime(const CommOp& c, const GroupPlacement& g, const Hardware& h) {
  const int n = g.size;
  if (n <= 1 || c.bytes <= 0) return 0;
  const EpKernelEfficiency& x = h.gpu.ep_kernels;
  const double bytes = static_cast<double>(c.bytes) * c.skew;
  const int in_domain = g.crosses_nodes ? std::max(1, g.per_node) : n;
  const double nvl_eff = c.backend == FlexBackend::DeepEp
                             ? x.deepep_nvlink
                             : HybridEpEfficiency(x, in_domain);
  const double nvl = bytes * (n - 1) / n / (h.gpu.nvlink_bytes_per_s * nvl_eff);
  if (!g.crosses_nodes) return h.gpu.intra_latency + Ns(nvl);
  const double domains = std::max(1.0, static_cast<double>(n) / in_domain);
  const double k = std::max(1, c.copies);
  const double remote = (domains - 1) * (1 - std::pow(1 - 1 / domains, k));
  const double rdma = bytes / k * remote / (h.gpu.nic_bytes_per_s * x.deepep_rdma);
  return h.gpu.inter_latency + Ns(std::max(nvl, rdma));
}
}  // namespace

Nanos CommTime(const CommOp& c, const JobGroups& groups, const Hardware& h) {
  const GroupPlacement& g = GroupOf(c.group, groups);
  if (c.flex) return FlexTime(c, g, h);
  const GroupLink& link = c.kind == Collective::AllToAll ? g.a2a_link : g.link;
  const Nanos one = CollectiveTime(c.kind, g.size, c.bytes, link, h.gpu.network);
  return static_cast<Nanos>(std::llround(static_cast<double>(one) * c.skew));
}

KernelTimes PriceKernels(const LayerKernels& k, const Training& t,
                         const Hardware& h, const JobGroups& groups) {
  KernelTimes out;
  Nanos gemm = 0;
  for (const Gemm& g : k.gemms) {
    const Nanos one = GemmTime(g, h);
    gemm += one;
    if (g.recipe != Recipe::None) out.low_gemm_forward += one;
  }
  const QuantizeTimes quantize = QuantizeTime(k, h);
  out.quantize_forward = quantize.forward;
  out.quantize_backward = quantize.backward;
  out.quantize_wgrad = quantize.hadamard_grad;
  out.quantize_weight_step = quantize.weight_step;
  out.attention = AttentionTime(k.attention_flops, h);
  const Nanos attention_bwd = static_cast<Nanos>(std::llround(2.5 * out.attention));
  const Nanos elem = ElementwiseTime(k.elementwise_bytes, k.elementwise_kernels, h);
  const Nanos elem_bwd = ElementwiseTime(2 * k.elementwise_bytes,
                                         2 * k.elementwise_kernels, h);
  Nanos tp_fwd = 0, tp_bwd = 0, other_fwd = 0, other_bwd = 0;
  for (const CommOp& c : k.comms) {
    const Nanos one = CommTime(c, groups, h);
    (c.group == CommGroup::Tp ? tp_fwd : other_fwd) += c.forward * one;
    (c.group == CommGroup::Tp ? tp_bwd : other_bwd) += c.backward * one;
    if (c.group == CommGroup::Ep || c.group == CommGroup::Etp ||
        c.group == CommGroup::EtpEp) {
      out.ep_forward += c.forward * one;
      out.ep_backward += c.backward * one;
    }
  }
  if (t.tp_comm_overlap) {
    // Userbuffers overlap each TP collective with its neighbouring GEMM:
    // what the GEMMs of the pass cannot cover stays exposed.
    tp_fwd = std::max<Nanos>(0, tp_fwd - gemm);
    tp_bwd = std::max<Nanos>(0, tp_bwd - gemm);
  }
  if (k.cp_block_bytes > 0 && groups.cp.size > 1) {
    // The ring's cp - 1 steps: each sends the K/V block while the current
    // block's attention runs (1/cp of the local attention).
    const int steps = groups.cp.size - 1;
    const Nanos send_f = CollectiveTime(Collective::SendRecv, 2, k.cp_block_bytes,
                                        groups.cp.link, h.gpu.network);
    const Nanos send_b = CollectiveTime(Collective::SendRecv, 2, 2 * k.cp_block_bytes,
                                        groups.cp.link, h.gpu.network);
    const Nanos block_f = out.attention / groups.cp.size;
    const Nanos block_b = attention_bwd / groups.cp.size;
    other_fwd += steps * std::max<Nanos>(0, send_f - block_f);
    other_bwd += steps * std::max<Nanos>(0, send_b - block_b);
  }
  out.comm_forward = tp_fwd + other_fwd;
  out.comm_backward = tp_bwd + other_bwd;
  out.forward = gemm + out.attention + elem + out.comm_forward + quantize.forward;
  out.backward_input =
      gemm + attention_bwd + elem_bwd + out.comm_backward + quantize.backward;
  // NVFP4 transforms the output gradient for the wgrad GEMM.
  out.backward_weight = gemm + quantize.hadamard_grad;
  // The host issues each kernel: a GEMM entry is one launch (a grouped
  // GEMM for local experts), the attention core one (FlashAttention's
  // forward; its backward one), each collective one per use.
  const Nanos launch = h.gpu.compute.launch_overhead;
  if (launch > 0) {
    const auto gemms = static_cast<Nanos>(k.gemms.size());
    const Nanos attn = k.attention_flops > 0 ? 1 : 0;
    Nanos comm_f = 0, comm_b = 0;
    for (const CommOp& c : k.comms) {
      comm_f += c.forward;
      comm_b += c.backward;
    }
    if (k.cp_block_bytes > 0 && groups.cp.size > 1) {
      comm_f += groups.cp.size - 1;
      comm_b += groups.cp.size - 1;
    }
    out.host_forward = launch * (gemms + attn + k.elementwise_kernels + comm_f);
    out.host_backward_input = launch * (gemms + attn + 2 * k.elementwise_kernels + comm_b);
    out.host_backward_weight = launch * gemms;
    auto bound = [&](Nanos& gpu, Nanos host) {
      if (host > gpu) {
        out.host_exposed += host - gpu;
        gpu = host;
      }
    };
    bound(out.forward, out.host_forward);
    bound(out.backward_input, out.host_backward_input);
    bound(out.backward_weight, out.host_backward_weight);
  }
  // The framework's synchronizing work in the layer, in each pass.
  out.forward += h.gpu.compute.layer_overhead;
  out.backward_input += h.gpu.compute.layer_overhead;
  out.host_exposed += 2 * h.gpu.compute.layer_overhead;
  return out;
}

}  // namespace ppb
