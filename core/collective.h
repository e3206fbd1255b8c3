// Collectives: the time of one NCCL-style ring collective over a group of
// n ranks on the link the group uses. The closed forms are NCCL's ring
// conventions (nccl-tests doc/PERFORMANCE.md, where bus bandwidth is
// algorithm bandwidth times 2(n-1)/n for all-reduce and (n-1)/n for the
// others), with S the bytes of the whole buffer, B the link's bandwidth per
// direction and a the latency of one ring step:
//   all-reduce                    2(n-1) a + 2(n-1)/n S / B'
//   reduce-scatter, all-gather    (n-1) a + (n-1)/n S / B'   (S gathered)
//   all-to-all (balanced)         (n-1) a + (n-1)/n S / B'   (S one rank's)
//   send/recv                     a + S / B'
// where B' = B * efficiency(S) (core/gpu.h CollectiveEfficiency). n = 1
// costs nothing.
#pragma once

#include <string>

#include "core/gpu.h"
#include "core/types.h"

namespace ppb {

enum class Collective { AllReduce, ReduceScatter, AllGather, AllToAll, SendRecv };
const char* CollectiveName(Collective c);  // "all-reduce", ...

// The link a group's ring runs on.
struct GroupLink {
  double bytes_per_s = 0;  // per direction; 0: free
  Nanos latency = 0;       // per ring step
  bool crosses_nodes = false;
};

// The bandwidth a message of `bytes` moves at: bytes_per_s * collective *
// S / (S + half_size).
double EffectiveBandwidth(const GroupLink& link, Bytes bytes,
                          const CollectiveEfficiency& eff);

// The time of collective `c` of `bytes` over `n` ranks on `link`.
Nanos CollectiveTime(Collective c, int n, Bytes bytes, const GroupLink& link,
                     const CollectiveEfficiency& eff);

}  // namespace ppb
