// Data-parallel sharding: what each data-parallel strategy keeps on a rank
// and what it communicates, per sharded unit and per step.
//
// Strategies (Megatron-LM --data-parallel-sharding-strategy, main d98e8a6,
// megatron/training/arguments.py; its ZeRO names from Rajbhandari et al.
// 2020):
//   no_shard            DDP: every rank holds weights, gradients, optimizer
//   optim               ZeRO-1: the optimizer state sharded (Megatron's
//                       distributed optimizer, --use-distributed-optimizer)
//   optim_grads         ZeRO-2: gradients sharded too
//   optim_grads_params  ZeRO-3: parameters sharded too, gathered per unit
// Implementations (training.fsdp):
//   None      Megatron's DistributedDataParallel (no_shard, optim):
//             core/step_tail.h's one reduce per step;
//   Megatron  Megatron-FSDP (megatron/core/distributed/fsdp/, docs/user-
//             guide/features/megatron_fsdp.md): per-unit flat buffers;
//             ZeRO-3 gathers a unit before its forward and again before its
//             backward; optim_grads* reduce-scatter a unit's gradients after
//             every micro-batch's backward (grad_reduce_every_bprop);
//   Torch     FSDP2 as torchtitan runs it (torchtitan b5bcd76
//             torchtitan/distributed/fsdp.py, config/configs.py; torch
//             torch/distributed/pipelining/stage.py @0138610): always
//             parameters sharded (fully_shard), the sharded parameters FP32
//             (the master copy), all-gathers in BF16 (param_dtype), gradient
//             reduce-scatters in FP32 (reduce_dtype). reshard_after_forward
//             "default" is True without pipeline parallelism and False with
//             it. Under pipeline parallelism torch's stage runs every
//             backward without gradient sync and without reshard after
//             backward and reduces once after the last micro-batch: one
//             all-gather and one reduce-scatter per stage per step, and the
//             unsharded parameters (BF16) and gradients (FP32) of the stage
//             stay on the rank.
// HSDP (training.data_parallel_shard s < data_parallel): the shard group is
// s x cp ranks, replicated r = data_parallel / s times; each synced
// gradient is all-reduced over the r replicas after its reduce-scatter.
#pragma once

#include <cstdint>
#include <string>

namespace ppb {

enum class DpSharding : std::uint8_t { NoShard, Optim, OptimGrads, OptimGradsParams };
enum class Fsdp : std::uint8_t { None, Megatron, Torch };
enum class Reshard : std::uint8_t { Default, Always, Never };

// "no_shard", "optim", "optim_grads", "optim_grads_params"; "none",
// "megatron", "torch"; "default", "always", "never".
const char* DpShardingName(DpSharding s);
const char* FsdpName(Fsdp f);
const char* ReshardName(Reshard r);
// The value of `name`, false when it names none.
bool FindDpSharding(const std::string& name, DpSharding* out);
bool FindFsdp(const std::string& name, Fsdp* out);
bool FindReshard(const std::string& name, Reshard* out);

// training.data_parallel_sharding, fsdp, data_parallel_shard,
// reshard_after_forward.
struct Sharding {
  DpSharding strategy = DpSharding::NoShard;
  Fsdp fsdp = Fsdp::None;
  int shard = 0;  // data_parallel_shard; 0: all of data_parallel (no HSDP)
  Reshard reshard = Reshard::Default;
  bool fsdp_on() const { return fsdp != Fsdp::None; }
  // Sharded past the optimizer state, per unit, by an FSDP.
  bool per_unit() const { return fsdp_on() && strategy >= DpSharding::OptimGrads; }
};

// "torch FSDP2", "Megatron-FSDP", or "Megatron DDP" (Fsdp::None), for reports.
const char* FsdpTitle(Fsdp f);

// The ranks a dense and an expert state shard spans, and the HSDP replicas:
// r = dp / shard (1 without HSDP, shard 0), dense dp x cp / r, expert
// (dp x cp / ep) / r.
struct DpShards {
  int dense = 1;
  int expert = 1;
  int replicate = 1;
};
// The expert groups fold over tp x cp x dp / (etp x ep) ranks (etp = tp:
// dp x cp / ep).
DpShards ShardSizes(int dp, int cp, int ep, int shard, int tp = 1, int etp = 1);

// What a sharded unit (an embedding, a decoder layer, the head) does, for a
// strategy, an implementation and the pipeline depth.
struct UnitTraffic {
  bool gather_forward = false;   // all-gather before every micro-batch's F
  bool gather_backward = false;  // all-gather before every micro-batch's B
  bool reduce_per_microbatch = false;  // reduce-scatter after every B
  bool gather_per_step = false;  // one all-gather per step (torch with PP)
  bool gather_after_optimizer = false;  // updated parameters gathered after
                                        // the step (ZeRO-1, ZeRO-2)
  bool keeps_params = false;     // unsharded 16-bit parameters of every
                                 // unit stay (torch: with PP, or
                                 // reshard_after_forward never)
  bool keeps_grads = false;      // unsharded FP32 gradients of the stage
                                 // stay until the step's reduce (torch, PP)
};
UnitTraffic UnitTrafficOf(const Sharding& s, int pp);

// Bytes per parameter on a rank for the strategy, from the bytes of the
// weight, its gradient and its optimizer state (ParamStateBytes's), over a
// shard group of `shards` ranks:
//   no_shard            w + g + o
//   optim               w + g + o/n
//   optim_grads         w + (g + o)/n
//   optim_grads_params  (w + g + o)/n   (Megatron-FSDP: a BF16 weight shard)
//   torch FSDP2         (g + o)/n       (the FP32 shard is the master copy,
//                                        counted in o; 16/n with Adam)
// torch FSDP2 with PP adds w + g per parameter of the stage (its unsharded
// parameters and gradients), as its working set does not shrink there.
double ShardedBytesPerParam(const Sharding& s, int pp, double weight, double gradient,
                            double optimizer, int shards);

// One unit's exposed all-gather / reduce-scatter on the compute stream, for
// one micro-batch's op, where `comm` is the time the unit's collectives of
// that op take on their link and `compute` the op's compute they run
// beside: with prefetch (torchtitan always; Megatron with overlap flags)
// the next unit's collectives run under this unit's compute and only what
// they exceed it by is exposed, max(0, comm - compute); without, all of it.
std::int64_t ExposedUnitComm(std::int64_t comm, std::int64_t compute, bool prefetch);

}  // namespace ppb
