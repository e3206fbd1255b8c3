#include "core/step_tail.h"

#include <algorithm>
#include <numeric>

namespace ppb {

int BucketCount(const StepTail& tail, Bytes bytes, bool bucketed) {
  if (bytes <= 0) return 0;
  if (tail.bucket_bytes <= 0 || !bucketed) return 1;
  return static_cast<int>((bytes + tail.bucket_bytes - 1) / tail.bucket_bytes);
}

namespace {

// Sums `price(b)` over the buckets `bytes` splits into: nb - 1 full buckets
// and the rest.
template <typename Price>
Nanos OverBuckets(const StepTail& tail, Bytes bytes, int nb, Price price) {
  const Bytes full = nb > 1 ? tail.bucket_bytes : bytes;
  const Bytes last = bytes - full * (nb - 1);
  return (nb - 1) * price(full) + price(last);
}

}  // namespace

Nanos GradSyncTime(const StepTail& tail, Bytes bytes, int n,
                   const GroupLink& link, bool bucketed) {
  const int nb = BucketCount(tail, bytes, bucketed);
  if (nb == 0 || n <= 1) return 0;
  const Collective c = tail.distributed_optimizer ? Collective::ReduceScatter
                                                  : Collective::AllReduce;
  return OverBuckets(tail, bytes, nb, [&](Bytes b) {
    return CollectiveTime(c, n, b, link, tail.efficiency);
  });
}

Nanos ParamGatherTime(const StepTail& tail, Bytes grad_bytes, int n,
                      const GroupLink& link, bool bucketed) {
  const int nb = BucketCount(tail, grad_bytes, bucketed);
  if (nb == 0 || n <= 1 || !tail.distributed_optimizer || tail.params_sharded) return 0;
  return OverBuckets(tail, grad_bytes, nb, [&](Bytes g) {
    const Bytes b = static_cast<Bytes>(static_cast<double>(g) * tail.param_per_grad);
    return CollectiveTime(Collective::AllGather, n, b, link, tail.efficiency);
  });
}

std::vector<TailTiming> RunTail(const StepTail& tail,
                                const std::vector<TailStage>& stages,
                                const std::vector<Nanos>& pipeline_end) {
  const int p = static_cast<int>(pipeline_end.size());
  std::vector<TailTiming> out(p);
  // Each rank's stages in the order their gradients complete (ties: the
  // lower stage), then its communication stream, bucket by bucket.
  std::vector<int> order(stages.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return stages[a].end < stages[b].end;
  });
  std::vector<Nanos> channel(p, 0);
  for (int d = 0; d < p; ++d) channel[d] = tail.overlap_grad_reduce ? 0 : pipeline_end[d];
  for (int s : order) {
    const TailStage& st = stages[s];
    TailTiming& t = out[st.device];
    t.optimizer += st.optimizer;
    t.param_gather += st.step_gather;
    for (int expert = 0; expert < 2; ++expert) {
      const Bytes bytes = expert ? st.expert_grad_bytes : st.grad_bytes;
      const int n = expert ? tail.expert_dp : tail.dp;
      const GroupLink& link = expert ? tail.expert_dp_link : tail.dp_link;
      const bool bucketed = st.device == 0;
      Nanos r = tail.sync_in_pipeline ? 0 : GradSyncTime(tail, bytes, n, link, bucketed);
      if (r > 0 && tail.replicate > 1) {
        // HSDP: each shard's gradient all-reduced over the replicas.
        const GroupLink& rlink = expert ? tail.expert_replicate_link : tail.replicate_link;
        r += CollectiveTime(Collective::AllReduce, tail.replicate, bytes / n, rlink,
                            tail.efficiency);
      }
      const Nanos gather = tail.overlap_param_gather
                               ? 0
                               : ParamGatherTime(tail, bytes, n, link, bucketed);
      t.param_gather += gather;
      if (r == 0) continue;
      t.grad_sync_busy += r;
      Nanos& ch = channel[st.device];
      if (tail.overlap_grad_reduce) {
        // Buckets become ready evenly through the last backward: the first
        // after 1/nb of it, the last at its end.
        const int nb = BucketCount(tail, bytes, bucketed);
        const Nanos first = st.start + (st.end - st.start) / nb;
        const Nanos start = std::max(ch, first);
        ch = std::max(start + r, st.end + r / nb);
      } else {
        ch += r;
      }
    }
  }
  // The embedding group: the ranks of the first and the last stage (one
  // rank under a V placement: nothing to sync).
  const int first = stages.empty() ? 0 : stages.front().device;
  const int last = stages.empty() ? 0 : stages.back().device;
  Nanos sync = 0;
  for (int d = 0; d < p; ++d) {
    TailTiming& t = out[d];
    Nanos end = std::max(channel[d], pipeline_end[d]);
    if (tail.embedding_sync > 0 && first != last && (d == first || d == last)) {
      end += tail.embedding_sync;
      t.grad_sync_busy += tail.embedding_sync;
    }
    t.grad_sync_end = end;
    sync = std::max(sync, end);
  }
  for (TailTiming& t : out) {
    t.sync = sync;
    t.end = sync + t.optimizer + t.param_gather;
  }
  return out;
}

}  // namespace ppb
