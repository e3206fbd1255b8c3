#include "core/dp_costs.h"

#include <algorithm>
#include <cmath>

#include "core/collective.h"

namespace ppb {

namespace {

// Bytes of HBM traffic per local parameter of an Adam step in mixed
// precision (job-model.md "Optimizer step": read and write the fp32 master
// weight, m and v, read the gradient, write the 16-bit weight).
constexpr double kOptimizerBytesPerParam = 30;

Nanos Ns(double seconds) { return static_cast<Nanos>(std::llround(seconds * 1e9)); }

// Exposed time on the layer's forward and backward: of their times and of
// the exposed communication the reports list apart from compute.
void AddExposed(DerivedLayer& d, Nanos fwd, Nanos bwd) {
  d.layer.forward += fwd;
  d.layer.comm_forward += fwd;
  d.layer.backward_input += bwd;
  d.layer.comm_backward += bwd;
}

// Bytes each wire format moves per parameter: torch FSDP2 gathers in BF16
// (param_dtype) and reduces in FP32 (reduce_dtype, torchtitan's
// mixed_precision_reduce default); Megatron gathers the training dtype (the
// low-precision primaries with --fp8-param-gather) and reduces its gradient
// dtype (grad_dtype; --grad-reduce-in-bf16 gives bf16): ReduceBytes.
double GatherBytes(const Training& t, Recipe recipe) {
  if (t.sharding.fsdp == Fsdp::Torch) {
    // torchao's float8 all-gather (enable_fsdp_float8_all_gather) is the
    // tensorwise recipe's; the others gather BF16.
    return t.low.param_gather && recipe == Recipe::Fp8Tensorwise ? 1 : 2;
  }
  if (t.low.param_gather && recipe != Recipe::None) return GatheredParamBytes(recipe);
  return DtypeBytes(t.dtype);
}

}  // namespace

int ReduceBytes(const Training& t) {
  return t.sharding.fsdp == Fsdp::Torch ? 4 : DtypeBytes(t.grad_dtype);
}

DpShards ShardsOf(const Training& t) {
  return ShardSizes(t.dp, t.cp, t.ep, t.sharding.shard, t.tp, ExpertTp(t));
}

Sharding ShardingOf(const Training& t) {
  Sharding s = t.sharding;
  if (t.distributed_optimizer && s.strategy == DpSharding::NoShard) s.strategy = DpSharding::Optim;
  return s;
}

double RankBytesPerParam(const Training& t, int shards) {
  const ParamStateBytes b = StateBytes(t);
  const double kept = 1 - t.offload.optimizer;
  // torch's CPUOffloadPolicy moves the sharded parameters and gradients
  // with the optimizer state (torchtitan enable_cpu_offload); Megatron's
  // hybrid optimizer moves the optimizer state's share only.
  const bool torch = t.sharding.fsdp == Fsdp::Torch;
  const double grad_sharded = torch ? b.gradient * kept : b.gradient;
  const Sharding sh = ShardingOf(t);
  const UnitTraffic u = UnitTrafficOf(sh, t.pp);
  if (torch) {
    return (grad_sharded + b.optimizer * kept) / std::max(1, shards) +
           (u.keeps_params ? b.weight : 0) + (u.keeps_grads ? b.gradient : 0);
  }
  return ShardedBytesPerParam(sh, t.pp, b.weight, b.gradient, b.optimizer * kept, shards);
}

void ApplySharding(DerivedLayer& d, const Training& t, const Hardware& h,
                   const JobGroups& groups) {
  const Sharding& s = t.sharding;
  if (!h.step_model || s.strategy < DpSharding::OptimGrads) return;
  const UnitTraffic u = UnitTrafficOf(s, t.pp);
  const double dense = static_cast<double>(d.params.dense + d.tied_copy_params) / t.tp;
  const double expert = static_cast<double>(d.params.expert) / (ExpertTp(t) * std::max(1, t.ep));
  if (dense + expert <= 0) return;
  const double gather = GatherBytes(t, d.kernels.recipe);
  const double reduce = ReduceBytes(t);
  const CollectiveEfficiency& eff = h.gpu.network;
  auto over = [&](Collective c, double per_param, bool with_replicas) {
    Nanos sum = 0;
    for (int e = 0; e < 2; ++e) {
      const double n = e ? expert : dense;
      if (n <= 0) continue;
      const GroupPlacement& g = e ? groups.expert_shard : groups.dp_shard;
      const Bytes bytes = static_cast<Bytes>(std::llround(n * per_param));
      sum += CollectiveTime(c, g.size, bytes, g.link, eff);
      const GroupPlacement& r = e ? groups.expert_replicate : groups.dp_replicate;
      if (with_replicas && r.size > 1) {
        sum += CollectiveTime(Collective::AllReduce, r.size, bytes / std::max(1, g.size),
                              r.link, eff);
      }
    }
    return sum;
  };
  const Nanos ag = over(Collective::AllGather, gather, false);
  const Nanos rs = over(Collective::ReduceScatter, reduce, true);
  // torchtitan always prefetches (backward prefetch on, forward implicitly
  // by CPU run-ahead); Megatron-FSDP overlaps with --overlap-param-gather
  // and --overlap-grad-reduce.
  const bool torch = s.fsdp == Fsdp::Torch;
  const bool pre_gather = torch || t.overlap_param_gather;
  const bool pre_reduce = torch || t.overlap_grad_reduce;
  Nanos fwd = 0, bwd = 0;
  if (u.gather_forward) fwd = ExposedUnitComm(ag, d.layer.forward, pre_gather);
  {
    const Nanos hidden = (u.gather_backward && pre_gather ? ag : 0) +
                         (u.reduce_per_microbatch && pre_reduce ? rs : 0);
    const Nanos bare = (u.gather_backward && !pre_gather ? ag : 0) +
                       (u.reduce_per_microbatch && !pre_reduce ? rs : 0);
    bwd = ExposedUnitComm(hidden, d.layer.backward(), true) + bare;
  }
  AddExposed(d, fwd, bwd);
  d.sharded_forward = fwd;
  d.sharded_backward = bwd;
  if (u.gather_per_step) d.layer.step_gather = ag;
  // Working set: the gathered unit and the next one prefetched (Megatron's
  // --fsdp-double-buffer bound, torchtitan's implicit prefetch), and the
  // unit's unsharded gradient while its reduce-scatter runs.
  const double units = dense + expert;
  Bytes ws = 0;
  if (u.gather_forward || u.gather_backward) {
    ws += static_cast<Bytes>(std::llround(2 * units * (torch ? 2 : DtypeBytes(t.dtype))));
  }
  if (u.reduce_per_microbatch) ws += static_cast<Bytes>(std::llround(units * reduce));
  d.layer.workspace += ws;
}

double OffloadedActivationBytes(const Architecture& a, const Training& t, bool moe) {
  const double e = t.activation_bytes;
  const double tokens = static_cast<double>(t.seq / t.cp) * t.micro_batch;
  const bool sp = t.sp && t.tp > 1;
  const double local = sp ? tokens / t.tp : tokens;  // tokens of h-wide tensors
  const double h = static_cast<double>(a.hidden);
  const double heads = a.heads, kv = KvHeads(a);
  const double qk = QkDim(a), v = VDim(a);
  const double k = std::max(1, a.top_k);
  const double ffn = static_cast<double>(a.expert_ffn) / t.tp;
  const double gate = a.gated_mlp ? 2 : 1;
  double sum = 0;
  for (OffloadModule m : t.offload.modules) {
    switch (m) {
      case OffloadModule::AttnNorm:
      case OffloadModule::QkvLinear:
      case OffloadModule::MlpNorm:
        sum += e * local * h;
        break;
      case OffloadModule::CoreAttn:  // q, k, v and the output
        sum += e * tokens * (heads * qk + kv * qk + kv * v + heads * v) / t.tp;
        break;
      case OffloadModule::AttnProj:
        sum += e * tokens * heads * v / t.tp;
        break;
      case OffloadModule::ExpertFc1:  // the routed copies, at the experts' width
        if (moe) sum += e * local * k * static_cast<double>(ExpertWidth(a));
        break;
      case OffloadModule::MoeAct:
        if (moe) sum += e * local * k * gate * ffn;
        break;
      case OffloadModule::FusedGroupMlp:
        if (moe) sum += e * local * k * (static_cast<double>(ExpertWidth(a)) + gate * ffn + ffn);
        break;
    }
  }
  return sum;
}

void ApplyActivationOffload(DerivedLayer& d, const Architecture& a,
                            const Training& t, const Hardware& h, bool moe,
                            int layer) {
  const Offload& o = t.offload;
  if (!h.step_model || !o.activations_on()) return;
  double bytes = 0;
  if (o.layers > 0) {
    if (layer >= 0 && layer < o.layers) bytes = static_cast<double>(d.layer.activation);
  } else {
    bytes = o.fraction * OffloadedActivationBytes(a, t, moe);
  }
  const Bytes off = std::min(d.layer.activation, static_cast<Bytes>(std::llround(bytes)));
  if (off <= 0) return;
  d.layer.activation -= off;
  if (d.layer.activation_after_input_grad) {
    d.layer.activation_after_input_grad =
        std::min(*d.layer.activation_after_input_grad, d.layer.activation);
  }
  // The layer's reloaded bytes are live through its backward.
  d.layer.workspace += off;
  const Nanos copy =
      h.gpu.host_latency + CopyTime(static_cast<double>(off), h.gpu.host_bytes_per_s);
  const Nanos fwd = ExposedCopy(copy, d.layer.forward);
  const Nanos bwd = ExposedCopy(copy, d.layer.backward());
  AddExposed(d, fwd, bwd);
  d.offloaded = off;
  d.offload_forward = fwd;
  d.offload_backward = bwd;
}

Nanos OptimizerStepTime(double local, const Training& t, const Hardware& h) {
  if (local <= 0) return 0;
  const double f = t.offload.optimizer;
  const Nanos gpu =
      f >= 1 ? 0
             : std::max<Nanos>(h.gpu.compute.kernel_floor,
                               Ns((1 - f) * local * kOptimizerBytesPerParam /
                                  (h.gpu.hbm_bytes_per_s * h.gpu.compute.hbm)));
  if (f <= 0) return gpu;
  const double n = f * local;
  const Nanos cpu = Ns(n / h.gpu.compute.host_optimizer);
  const Nanos d2h = CopyTime(n * 4, h.gpu.host_bytes_per_s);
  const Nanos h2d = CopyTime(n * DtypeBytes(t.dtype), h.gpu.host_bytes_per_s);
  return gpu + (t.offload.overlap_optimizer_copies ? std::max({cpu, d2h, h2d})
                                                   : cpu + d2h + h2d);
}

}  // namespace ppb
