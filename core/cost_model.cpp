// The layer list (core/cost_model.h's contract): each layer's times (by
// FLOPs at the device's rate, or its kernels priced by shape with the step
// model), static and activation bytes, output bytes and the step's tail,
// from layer_params.cpp's counts and layer_memory.cpp's bytes.
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

namespace {

using I64 = std::int64_t;

I64 CeilDiv(I64 x, I64 d) { return (x + d - 1) / d; }

}  // namespace

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

// What a decoder layer's derivation reads of its index i: its block, whether
// it is MoE, whether its linears run in low precision (the bf16 first and
// last layers), whether its activations go to the host (offload.layers),
// and which row of measured expert loads it takes. Layers equal in these
// derive equal layers, bar the name (DecoderLike, DecoderKernels,
// DecoderLayerParams, DecoderLayerFlops and ApplyActivationOffload read i
// for nothing else).
struct DecoderClass {
  LayerBlock block;
  bool moe = false;
  bool low = false;
  bool offloaded = false;
  int moe_row = -1;
  bool operator==(const DecoderClass&) const = default;
};

DecoderClass DecoderClassOf(const Architecture& a, const Training& t, int i) {
  DecoderClass c;
  c.block = a.Block(i);
  c.moe = a.IsMoeLayer(i);
  c.low = LowPrecisionLayer(t.low, i, a.layers);
  c.offloaded = t.offload.layers > 0 && i < t.offload.layers;
  // MoeKernels: the row of measured loads.
  if (c.moe && t.moe.loads.given()) c.moe_row = a.MoeLayersBefore(i);
  return c;
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
  out.reserve(static_cast<size_t>(a.layers) + static_cast<size_t>(a.mtp_layers) + 2);
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
  // Decoder layers of one class (DecoderClassOf) derive alike: the first
  // of each class is derived, the others are its copies renamed. (A plan
  // derives thousands of layouts; GPT-3's 96 layers are one class.)
  std::vector<std::pair<DecoderClass, size_t>> classes;
  for (int i = 0; i < a.layers; ++i) {
    const DecoderClass c = DecoderClassOf(a, t, i);
    auto same = std::find_if(classes.begin(), classes.end(),
                             [&](const auto& k) { return k.first == c; });
    if (same != classes.end()) {
      DerivedLayer d = out[same->second];
      d.layer.name = "decoder." + std::to_string(i);
      out.push_back(std::move(d));
      continue;
    }
    classes.emplace_back(c, out.size());
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
