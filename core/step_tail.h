// The step's tail: what a training step does after (and beside) the
// pipeline's last backward, following Megatron-LM core 0.13's
// DistributedDataParallel and finalize_model_grads
// (megatron/core/distributed/distributed_data_parallel.py,
// param_and_grad_buffer.py, finalize_model_grads.py,
// megatron/core/optimizer/distrib_optimizer.py):
//
//   1. Gradient sync over the data-parallel group (x CP for dense
//      parameters, the expert-data-parallel group for experts), in buckets:
//      a reduce-scatter with the distributed optimizer, an all-reduce
//      without. With overlap_grad_reduce a chunk's buckets start as its last
//      backward produces their gradients (buckets fill in the order the
//      backward runs, so the first is ready 1/nb of the way through it and
//      the last at its end); without, every bucket waits for the rank's
//      pipeline flush. One communication stream per rank: buckets queue.
//   2. Tied embeddings: the first and last pipeline ranks all-reduce the
//      word-embedding gradient (_allreduce_embedding_grads), after 1.
//   3. The optimizer step, which starts on every rank once every rank has
//      its gradients (the gradient-norm all-reduce for clipping joins all
//      ranks: Megatron's default clip_grad = 1.0), memory-bound over the
//      local (shard of the) parameters.
//   4. With the distributed optimizer, the updated parameters are
//      all-gathered over the data-parallel group, exposed unless
//      overlap_param_gather (then it runs under the next step's forward).
//
//   Sharded data parallelism (core/sharding.h) changes 1 and 4: gradients
//   reduce-scattered in the backward of every micro-batch (Megatron-FSDP's
//   optim_grads*, torch FSDP2 without PP) leave 1 nothing to do; parameters
//   sharded (ZeRO-3) are gathered by their units, not after the step; torch
//   FSDP2 under PP gathers each stage's parameters once at the step's start
//   (TailStage::step_gather, what its first forward does not hide, counted
//   with 4); HSDP all-reduces each synced gradient shard over the replicas.
//
// The step ends when the last rank's optimizer (and exposed all-gather)
// ends. Per-stage inputs are StageCost's grad_bytes, expert_grad_bytes and
// optimizer; group sizes and links are StepTail's. Not modelled: the
// gradient traffic sharing a NIC with pipeline messages.
#pragma once

#include <vector>

#include "core/collective.h"
#include "core/types.h"

namespace ppb {

struct StepTail {
  bool enabled = false;  // false: the step is the pipeline (no tail)
  bool overlap_grad_reduce = false;
  bool distributed_optimizer = false;
  bool overlap_param_gather = false;
  bool sync_in_pipeline = false;  // gradients reduced per micro-batch
  bool params_sharded = false;    // ZeRO-3: no all-gather after the step
  int replicate = 1;              // HSDP replicas (1: none)
  GroupLink replicate_link;       // the dense replicate group's link
  GroupLink expert_replicate_link;
  int dp = 1;                  // dense gradient group: data parallel x CP
  GroupLink dp_link;
  int expert_dp = 1;           // expert-data-parallel group
  GroupLink expert_dp_link;
  // Gradient bytes per bucket (0: one bucket per chunk). Megatron buckets
  // max(40M, 1M x dp) parameters with overlap_grad_reduce, and only on the
  // first pipeline rank (DistributedDataParallel.__init__: "Turn off
  // bucketing if we are on a pipeline stage that is not the first"); the
  // other ranks, and every rank without overlap, sync a chunk at once.
  Bytes bucket_bytes = 0;
  // Bytes of the 16-bit parameters all-gathered per gradient byte
  // (weight bytes / gradient bytes, e.g. 2 / 4).
  double param_per_grad = 0.5;
  Nanos embedding_sync = 0;    // tied-embedding all-reduce (first, last rank)
  CollectiveEfficiency efficiency;
};

// What the tail did on one rank.
struct TailTiming {
  Nanos grad_sync_busy = 0;  // time the rank's communication stream ran
  Nanos grad_sync_end = 0;   // when its last gradient collective ended
                             // (its pipeline end when it has none)
  Nanos sync = 0;            // when every rank had its gradients
  Nanos optimizer = 0;       // its optimizer step
  Nanos param_gather = 0;    // its exposed parameter all-gather
  Nanos end = 0;             // sync + optimizer + param_gather
};

// Per stage: [start, end] of its last gradient-producing op (B, or W);
// stage_device[s]; per rank: the end of its last op. Returns the tail of
// every rank (size p). REQUIRES: tail.enabled.
struct TailStage {
  int device = 0;
  Nanos start = 0, end = 0;  // its last backward (B or W)
  Bytes grad_bytes = 0, expert_grad_bytes = 0;
  Nanos optimizer = 0;
  Nanos step_gather = 0;  // exposed once-per-step parameter all-gather
};
std::vector<TailTiming> RunTail(const StepTail& tail,
                                const std::vector<TailStage>& stages,
                                const std::vector<Nanos>& pipeline_end);

// The time of one gradient sync of `bytes` over `n` ranks on `link` in
// buckets of `tail.bucket_bytes` (how many: BucketCount), and of the
// parameter all-gather that follows it.
// `bucketed` false: one bucket (ranks other than the first).
int BucketCount(const StepTail& tail, Bytes bytes, bool bucketed);
Nanos GradSyncTime(const StepTail& tail, Bytes bytes, int n,
                   const GroupLink& link, bool bucketed);
Nanos ParamGatherTime(const StepTail& tail, Bytes grad_bytes, int n,
                      const GroupLink& link, bool bucketed);

}  // namespace ppb
