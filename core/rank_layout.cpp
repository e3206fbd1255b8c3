#include "core/rank_layout.h"

#include <algorithm>
#include <cmath>

namespace ppb {

GroupPlacement PlaceGroup(int size, int stride, const Gpu& gpu) {
  GroupPlacement g;
  g.size = std::max(1, size);
  g.stride = std::max(1, stride);
  const int per_node_slots = (gpu.gpus_per_node + g.stride - 1) / g.stride;
  g.per_node = std::max(1, std::min(g.size, per_node_slots));
  g.crosses_nodes =
      static_cast<long long>(g.size - 1) * g.stride >= gpu.gpus_per_node;
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
  j.tp = PlaceGroup(t.tp, 1, gpu);
  j.cp = PlaceGroup(t.cp, t.tp, gpu);
  j.ep = PlaceGroup(t.ep, t.tp, gpu);
  j.dp_cp = PlaceGroup(t.dp * t.cp, t.tp, gpu);
  j.expert_dp = PlaceGroup(std::max(1, t.dp * t.cp / std::max(1, t.ep)),
                           t.tp * std::max(1, t.ep), gpu);
  j.pp_stride = t.tp * t.cp * t.dp;
  return j;
}

std::vector<Link> PipelineLinks(const Training& t, const Gpu& gpu) {
  const int p = std::max(1, t.pp);
  const long long stride = static_cast<long long>(t.tp) * t.cp * t.dp;
  const long long g = std::max(1, gpu.gpus_per_node);
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
  if (!g.crosses_nodes) return s + " in a node (NVLink)";
  return s + " across nodes (" + std::to_string(g.per_node) + " per node)";
}

}  // namespace ppb
