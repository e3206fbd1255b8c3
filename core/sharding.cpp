#include "core/sharding.h"

#include <algorithm>

namespace ppb {

namespace {

constexpr const char* kShardingNames[] = {"no_shard", "optim", "optim_grads",
                                          "optim_grads_params"};
constexpr const char* kFsdpNames[] = {"none", "megatron", "torch"};
constexpr const char* kReshardNames[] = {"default", "always", "never"};

template <typename E, size_t N>
bool FindName(const char* const (&names)[N], const std::string& name, E* out) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* DpShardingName(DpSharding s) { return kShardingNames[static_cast<int>(s)]; }
const char* FsdpName(Fsdp f) { return kFsdpNames[static_cast<int>(f)]; }
const char* ReshardName(Reshard r) { return kReshardNames[static_cast<int>(r)]; }
bool FindDpSharding(const std::string& name, DpSharding* out) {
  return FindName(kShardingNames, name, out);
}
bool FindFsdp(const std::string& name, Fsdp* out) { return FindName(kFsdpNames, name, out); }
bool FindReshard(const std::string& name, Reshard* out) {
  return FindName(kReshardNames, name, out);
}

const char* FsdpTitle(Fsdp f) {
  return f == Fsdp::Torch ? "torch FSDP2" : f == Fsdp::Megatron ? "Megatron-FSDP" : "Megatron DDP";
}

DpShards ShardSizes(int dp, int cp, int ep, int shard, int tp, int etp) {
  DpShards s;
  s.replicate = shard > 0 ? std::max(1, dp / shard) : 1;
  s.dense = std::max(1, dp * cp / s.replicate);
  // Megatron's parallel folding: the expert-data-parallel group is the
  // stage's tp x cp x dp ranks over etp x ep.
  const long long ranks = static_cast<long long>(tp) * cp * dp;
  const long long fold = static_cast<long long>(std::max(1, etp)) * std::max(1, ep);
  s.expert = static_cast<int>(std::max<long long>(1, ranks / fold / s.replicate));
  return s;
}

UnitTraffic UnitTrafficOf(const Sharding& s, int pp) {
  UnitTraffic u;
  if (s.fsdp == Fsdp::Torch) {
    // torchtitan fsdp.py: reshard_after_forward "default" = not PP;
    // torch pipelining stage.py: under PP no gradient sync and no reshard
    // after backward until the last micro-batch.
    const bool reshard = s.reshard == Reshard::Always ||
                         (s.reshard == Reshard::Default && pp == 1);
    if (pp == 1) {
      u.gather_forward = true;
      u.gather_backward = reshard;
      u.reduce_per_microbatch = true;
      u.keeps_params = !reshard;
    } else {
      u.gather_per_step = true;
      u.gather_backward = reshard;
      u.keeps_params = true;
      u.keeps_grads = true;
    }
    return u;
  }
  switch (s.strategy) {
    case DpSharding::NoShard:
      break;
    case DpSharding::Optim:
      u.gather_after_optimizer = true;
      break;
    case DpSharding::OptimGrads:
      u.gather_after_optimizer = true;
      u.reduce_per_microbatch = s.fsdp == Fsdp::Megatron;
      break;
    case DpSharding::OptimGradsParams:
      u.gather_forward = true;
      u.gather_backward = true;
      u.reduce_per_microbatch = true;
      break;
  }
  return u;
}

double ShardedBytesPerParam(const Sharding& s, int pp, double weight, double gradient,
                            double optimizer, int shards) {
  const double n = std::max(1, shards);
  if (s.fsdp == Fsdp::Torch) {
    const UnitTraffic u = UnitTrafficOf(s, pp);
    return (gradient + optimizer) / n + (u.keeps_params ? weight : 0) +
           (u.keeps_grads ? gradient : 0);
  }
  switch (s.strategy) {
    case DpSharding::NoShard:
      return weight + gradient + optimizer;
    case DpSharding::Optim:
      return weight + gradient + optimizer / n;
    case DpSharding::OptimGrads:
      return weight + (gradient + optimizer) / n;
    case DpSharding::OptimGradsParams:
      return (weight + gradient + optimizer) / n;
  }
  return weight + gradient + optimizer;
}

std::int64_t ExposedUnitComm(std::int64_t comm, std::int64_t compute, bool prefetch) {
  if (!prefetch) return comm;
  return std::max<std::int64_t>(0, comm - compute);
}

}  // namespace ppb
