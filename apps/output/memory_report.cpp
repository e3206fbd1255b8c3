// Memory a process really uses, per rank: see memory_report.h.
#include "apps/output/memory_report.h"

#include <fmt/format.h>

#include "apps/output/output.h"

namespace ppb {

MemoryReport ReportMemory(const RunConfig& config, const SimResult& r) {
  MemoryReport m;
  const Hardware& h = config.hardware;
  m.process_model = h.step_model;
  const ProcessMemory& pm = h.gpu.process_memory;
  m.fixed = h.step_model ? FixedProcessBytes(pm, h.nccl_peers) : 0;
  m.headroom = HeadroomBytes(config, config.search.memory_headroom);
  const Bytes keep = HeadroomTensorBytes(config, config.search.memory_headroom);
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceStats& s = r.devices[d];
    RankMemory x;
    x.rank = static_cast<int>(d);
    x.tensors = s.peak_memory;
    if (h.step_model) {
      x.process = ProcessBytes(pm, s.peak_memory, m.fixed);
      x.gpu = ProcessBytes(pm, s.capacity, m.fixed);
    } else {
      x.process = s.peak_memory;
      x.gpu = s.capacity;
    }
    x.free = x.gpu - x.process;
    x.verdict = Verdict(s.peak_memory, s.capacity - keep, s.capacity);
    if (m.ranks.empty() || x.free < m.ranks[static_cast<size_t>(m.tightest)].free) {
      m.tightest = x.rank;
    }
    if (static_cast<int>(x.verdict) > static_cast<int>(m.verdict)) m.verdict = x.verdict;
    m.ranks.push_back(x);
  }
  return m;
}

std::string RanksWith(const MemoryReport& m, MemoryVerdict v) {
  std::vector<int> ranks;
  for (const RankMemory& x : m.ranks) {
    if (x.verdict == v) ranks.push_back(x.rank);
  }
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j > i ? fmt::format("{}-{}", ranks[i], ranks[j]) : std::to_string(ranks[i]);
    i = j + 1;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

std::string FormatMemoryText(const RunConfig& config, const MemoryReport& m) {
  if (!m.process_model || m.ranks.empty()) return "";
  const ProcessMemory& pm = config.hardware.gpu.process_memory;
  const RankMemory& t = m.ranks[static_cast<size_t>(m.tightest)];
  std::string out = fmt::format(
      "  process memory    rank {}: tensors {} -> process {} of {} ({:g} % allocator "
      "fragmentation, NCCL {} x {} peers{}, context and workspaces {}); {} free, "
      "headroom {} kept: {}\n",
      t.rank, FormatBytes(t.tensors), FormatBytes(t.process), FormatBytes(t.gpu),
      100.0 * pm.fragmentation, FormatBytes(pm.nccl_per_peer), config.hardware.nccl_peers.peers,
      config.hardware.nccl_peers.net_peers > 0
          ? fmt::format(" + {} x {} network peers", FormatBytes(pm.nccl_per_net_peer),
                        config.hardware.nccl_peers.net_peers)
          : std::string(),
      FormatBytes(pm.context + pm.workspace),
      t.free >= 0 ? FormatBytes(t.free) : "-" + FormatBytes(-t.free), FormatBytes(m.headroom),
      MemoryVerdictName(t.verdict));
  return out;
}

nlohmann::ordered_json MemoryJson(const RunConfig& config, const MemoryReport& m) {
  nlohmann::ordered_json j;
  j["verdict"] = MemoryVerdictName(m.verdict);
  j["process_model"] = m.process_model;
  j["headroom_bytes"] = m.headroom;
  if (m.process_model) {
    const ProcessMemory& pm = config.hardware.gpu.process_memory;
    j["fragmentation"] = pm.fragmentation;
    j["nccl_peers"] = config.hardware.nccl_peers.peers;
    j["nccl_net_peers"] = config.hardware.nccl_peers.net_peers;
    j["fixed_bytes"] = m.fixed;
  }
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const RankMemory& x : m.ranks) {
    ranks.push_back({{"rank", x.rank},
                     {"tensor_bytes", x.tensors},
                     {"process_bytes", x.process},
                     {"free_bytes", x.free},
                     {"verdict", MemoryVerdictName(x.verdict)}});
  }
  j["ranks"] = std::move(ranks);
  return j;
}

}  // namespace ppb
