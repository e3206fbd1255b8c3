// Process memory: see process_memory.h.
#include "core/process_memory.h"

#include <algorithm>
#include <cmath>

#include "core/architecture.h"
#include "core/rank_layout.h"

namespace ppb {

int RingPeers(int n) { return n <= 1 ? 0 : n == 2 ? 1 : 2; }

int AllToAllPeers(int n) { return n <= 1 ? 0 : n - 1; }

NcclPeers CountNcclPeers(const Training& t, const JobGroups& g) {
  NcclPeers n;
  n.peers = RingPeers(g.tp.size) + RingPeers(g.cp.size) + RingPeers(g.dp_shard.size) +
            RingPeers(g.dp_replicate.size) + RingPeers(t.pp);
  if (t.ep > 1) {
    if (t.moe.dispatcher == Dispatcher::AllGather) {
      n.peers += RingPeers(g.etp_ep.size);
    } else {
      const int near = g.ep.crosses_nodes ? g.ep.per_node : g.ep.size;
      n.peers += AllToAllPeers(near);
      n.net_peers += g.ep.size - std::max(near, 1);
    }
    if (g.etp.size != g.tp.size) n.peers += RingPeers(g.etp.size);
    n.peers += RingPeers(g.expert_shard.size) + RingPeers(g.expert_replicate.size);
  }
  return n;
}

Bytes FixedProcessBytes(const ProcessMemory& m, const NcclPeers& peers) {
  return m.context + m.workspace + m.nccl_per_peer * static_cast<Bytes>(peers.peers) +
         m.nccl_per_net_peer * static_cast<Bytes>(peers.net_peers);
}

Bytes ProcessBytes(const ProcessMemory& m, Bytes allocated, Bytes fixed) {
  const double reserved = static_cast<double>(allocated) / (1.0 - m.fragmentation);
  return static_cast<Bytes>(std::ceil(reserved)) + fixed;
}

Bytes AllocatableBytes(const ProcessMemory& m, Bytes capacity, Bytes fixed) {
  if (fixed >= capacity) return 0;
  const double a = static_cast<double>(capacity - fixed) * (1.0 - m.fragmentation);
  return static_cast<Bytes>(std::floor(a));
}

const char* MemoryVerdictName(MemoryVerdict v) {
  switch (v) {
    case MemoryVerdict::Fits: return "fits";
    case MemoryVerdict::AtRisk: return "at risk";
    case MemoryVerdict::OutOfMemory: return "OOM";
  }
  return "?";
}

MemoryVerdict Verdict(Bytes allocated, Bytes keep_free_line, Bytes oom_line) {
  if (allocated > oom_line) return MemoryVerdict::OutOfMemory;
  if (allocated > keep_free_line) return MemoryVerdict::AtRisk;
  return MemoryVerdict::Fits;
}

}  // namespace ppb
