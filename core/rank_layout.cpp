#include "core/rank_layout.h"

#include <algorithm>
#include <cmath>

namespace ppb {

GroupPlacement PlaceGroup(int size, int stride, const Gpu& gpu,
                          long long world) {
  GroupPlacement g;
  g.size = std::max(1, size);
  g.stride = std::max(1, stride);
  const long long domain = std::max(1, gpu.nvlink_domain);
  const long long block = static_cast<long long>(g.size) * g.stride;
  const long long blocks = std::max(1LL, world / block);
  // Instances start at q x block + r (q < blocks, r < stride); where one
  // sits depends only on its start modulo the domain, so each residue is
  // looked at once (at most `domain` of them). The slowest instance sets
  // the group's pace: it crosses if any instance does, and its ring runs
  // through the NICs of the domain with the fewest members.
  std::vector<char> seen(static_cast<size_t>(domain), 0);
  long long distinct = 0;
  long long fewest = g.size;
  bool crosses = false;
  const long long span = static_cast<long long>(g.size - 1) * g.stride;
  for (long long q = 0; q < std::min(blocks, domain) && distinct < domain; ++q) {
    for (long long r = 0; r < std::min<long long>(g.stride, domain) && distinct < domain; ++r) {
      const long long c = (q * block + r) % domain;
      if (seen[static_cast<size_t>(c)]) continue;
      seen[static_cast<size_t>(c)] = 1;
      ++distinct;
      const long long last = c + span;
      if (last < domain) continue;  // the whole instance in one domain
      crosses = true;
      // Members per domain: the first domain holds those up to its end,
      // the last those from its start, a full domain between them
      // floor(domain / stride) or one more (the fewer is taken); one each
      // when stride >= domain.
      if (g.stride >= domain) {
        fewest = 1;
        continue;
      }
      const long long first = (domain - 1 - c) / g.stride + 1;
      const long long last_start = last / domain * domain;
      const long long first_in_last =
          c + (last_start - c + g.stride - 1) / g.stride * g.stride;
      const long long in_last = (last - first_in_last) / g.stride + 1;
      fewest = std::min({fewest, first, in_last});
      if (last / domain - c / domain >= 2) fewest = std::min(fewest, domain / g.stride);
    }
  }
  g.crosses_nodes = crosses;
  g.per_node = crosses ? static_cast<int>(std::max(1LL, fewest)) : g.size;
  g.domain_is_node = gpu.nvlink_domain == gpu.gpus_per_node;
  if (!g.crosses_nodes) {
    g.link = GroupLink{gpu.nvlink_bytes_per_s, gpu.intra_latency, false};
    g.a2a_link = g.link;
  } else {
    const double nics = gpu.nic_bytes_per_s * g.per_node;
    const double bw = g.per_node > 1 ? std::min(gpu.nvlink_bytes_per_s, nics)
                                     : gpu.nic_bytes_per_s;
    g.link = GroupLink{bw, gpu.inter_latency, true};
    const double share = static_cast<double>(g.size - 1) / (g.size - g.per_node);
    g.a2a_link = GroupLink{gpu.nic_bytes_per_s * share, gpu.inter_latency, true};
  }
  return g;
}

JobGroups PlaceJob(const Training& t, const Gpu& gpu) {
  JobGroups j;
  const long long world = static_cast<long long>(t.tp) * t.cp * t.dp *
                          std::max(1, t.pp);
  j.tp = PlaceGroup(t.tp, 1, gpu, world);
  j.cp = PlaceGroup(t.cp, t.tp, gpu, world);
  // The expert groups fold over the stage's ranks (Megatron's parallel
  // folding): expert TP adjacent, EP beside it, expert DP outside.
  const int etp = ExpertTp(t);
  const int ep = std::max(1, t.ep);
  j.etp = PlaceGroup(etp, 1, gpu, world);
  j.ep = PlaceGroup(t.ep, etp, gpu, world);
  j.etp_ep = PlaceGroup(etp * ep, 1, gpu, world);
  j.dp_cp = PlaceGroup(t.dp * t.cp, t.tp, gpu, world);
  const DpShards n = ShardSizes(t.dp, t.cp, t.ep, t.sharding.shard, t.tp, etp);
  j.expert_dp = PlaceGroup(n.expert * n.replicate, etp * ep, gpu, world);
  // Low-precision amax reductions (delayed scaling): the model-parallel and
  // data-parallel ranks of one pipeline stage together.
  j.tp_dp_cp = PlaceGroup(t.tp * t.cp * t.dp, 1, gpu, world);
  const int r = n.replicate;
  j.dp_shard = r > 1 ? PlaceGroup(n.dense, t.tp, gpu, world) : j.dp_cp;
  j.dp_replicate = PlaceGroup(r, t.tp * n.dense, gpu, world);
  j.expert_shard = r > 1 ? PlaceGroup(n.expert, etp * ep, gpu, world) : j.expert_dp;
  j.expert_replicate = PlaceGroup(r, etp * ep * n.expert, gpu, world);
  j.pp_stride = t.tp * t.cp * t.dp;
  return j;
}

std::vector<Link> PipelineLinks(const Training& t, const Gpu& gpu) {
  const int p = std::max(1, t.pp);
  const long long stride = static_cast<long long>(t.tp) * t.cp * t.dp;
  const long long g = std::max(1, gpu.nvlink_domain);
  std::vector<Link> links(p);
  for (int r = 0; r < p; ++r) {
    const long long a = r * stride, b = ((r + 1) % p) * stride;
    const bool same = a / g == b / g;
    const double bw = same ? gpu.nvlink_bytes_per_s : gpu.nic_bytes_per_s;
    links[r].latency = same ? gpu.intra_latency : gpu.inter_latency;
    // A send is one ring step: the collective efficiency is priced where
    // the message size is known; the link keeps the datasheet figure.
    links[r].bandwidth = static_cast<BytesPerSec>(std::llround(bw));
  }
  return links;
}

std::string GroupText(const std::string& name, const GroupPlacement& g) {
  std::string s = name + " " + std::to_string(g.size);
  if (g.size <= 1) return s + " (none)";
  if (g.domain_is_node) {
    if (!g.crosses_nodes) return s + " in a node (NVLink)";
    return s + " across nodes (" + std::to_string(g.per_node) + " per node)";
  }
  if (!g.crosses_nodes) return s + " in an NVLink domain";
  return s + " across NVLink domains (at least " + std::to_string(g.per_node) +
         " per domain)";
}

}  // namespace ppb
