// What data-parallel sharding (core/sharding.h) and offload (core/offload.h)
// add to one derived layer (core/cost_model.h): its state bytes on a rank,
// its sharded unit's all-gathers and reduce-scatters exposed on each
// micro-batch's forward and backward, its once-per-step gather, the working
// set of gathered units, its activations' trips to host memory and its
// optimizer step's share on the host.
//
// A unit is one derived layer: the embedding, a decoder layer, an MTP
// layer, the head (final norm and LM head): torchtitan fsdp.py wraps each
// block, tok_embeddings, and [norm, output] as units; Megatron-FSDP one
// buffer per TransformerLayer and the embedding.
#pragma once

#include "core/architecture.h"
#include "core/cost_model.h"
#include "core/rank_layout.h"

namespace ppb {

// Bytes per gradient element on the wire: FP32 for torch FSDP2 (its
// reduce_dtype), else the gradient dtype (Megatron's main_grad).
int ReduceBytes(const Training& t);

// The shard groups of `t` (core/sharding.h ShardSizes).
DpShards ShardsOf(const Training& t);

// t.sharding, with the distributed optimizer (Training::distributed_optimizer,
// which code and tests may set alone) as at least optim.
Sharding ShardingOf(const Training& t);

// Bytes per parameter on a rank for `t`'s strategy (ShardedBytesPerParam)
// with the optimizer's offloaded share removed (and, with torch FSDP2's
// CPU offload, its sharded parameters and gradients).
double RankBytesPerParam(const Training& t, int shards);

// The unit's collectives on the micro-batches' forward and backward and
// once per step, and its gathered working set. REQUIRES: the step model
// (d.times priced); does nothing without sharding.
void ApplySharding(DerivedLayer& d, const Training& t, const Hardware& h,
                   const JobGroups& groups);

// Bytes of a decoder layer's activation that training.offload sends to the
// host per micro-batch (before the fraction), and the same with the
// fraction, capped at the layer's stash. `layer`: its 0-based index.
double OffloadedActivationBytes(const Architecture& a, const Training& t, bool moe);
void ApplyActivationOffload(DerivedLayer& d, const Architecture& a,
                            const Training& t, const Hardware& h, bool moe,
                            int layer);

// The optimizer step of `local` parameters on a rank: on the GPU (HBM
// traffic kOptimizerBytesPerParam per parameter) for the share kept there,
// and for training.offload.optimizer's share on the host (CPU Adam at
// Gpu::compute.host_optimizer, gradients D2H in FP32 and parameters H2D in
// the training dtype over the host link; their sum, or the longest with
// overlap_optimizer_copies).
Nanos OptimizerStepTime(double local, const Training& t, const Hardware& h);

}  // namespace ppb
