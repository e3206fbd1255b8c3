#include "core/moe.h"

#include "core/architecture.h"

#include <algorithm>
#include <cmath>

namespace ppb {

const char* DispatcherName(Dispatcher d) {
  switch (d) {
    case Dispatcher::AllGather:
      return "allgather";
    case Dispatcher::AllToAll:
      return "alltoall";
    case Dispatcher::Flex:
      return "flex";
  }
  return "?";
}

const char* FlexBackendName(FlexBackend b) {
  return b == FlexBackend::DeepEp ? "deepep" : "hybridep";
}

bool FindDispatcher(const std::string& name, Dispatcher* out) {
  for (Dispatcher d : {Dispatcher::AllGather, Dispatcher::AllToAll, Dispatcher::Flex}) {
    if (name == DispatcherName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

bool FindFlexBackend(const std::string& name, FlexBackend* out) {
  for (FlexBackend b : {FlexBackend::DeepEp, FlexBackend::HybridEp}) {
    if (name == FlexBackendName(b)) {
      *out = b;
      return true;
    }
  }
  return false;
}

int ExpertTp(const Training& t) { return t.moe.expert_tp > 0 ? t.moe.expert_tp : t.tp; }

double RankShare(const std::vector<double>& loads, int ep) {
  const int n = static_cast<int>(loads.size());
  if (n == 0 || ep <= 1) return 1.0;
  const int per = std::max(1, n / ep);
  double total = 0, busiest = 0;
  for (int r = 0; r < ep; ++r) {
    double sum = 0;
    for (int i = r * per; i < std::min(n, (r + 1) * per); ++i) sum += loads[i];
    total += sum;
    busiest = std::max(busiest, sum);
  }
  return total > 0 ? busiest / (total / ep) : 1.0;
}

double BusiestShare(const MoeSettings& m, double routing_skew, int ep, int moe_index) {
  double share = routing_skew;
  if (m.force_balance) share = 1.0;
  if (m.loads.given()) {
    const auto& rows = m.loads.layers;
    const size_t i = std::min(rows.size() - 1, static_cast<size_t>(std::max(0, moe_index)));
    share = RankShare(rows[i], ep);
  }
  if (m.capacity_factor > 0) {
    // Every expert keeps at most capacity_factor x its mean; padded, each
    // one runs exactly that.
    share = m.pad_to_capacity ? m.capacity_factor : std::min(share, m.capacity_factor);
  }
  return share;
}

double HybridEpEfficiency(const EpKernelEfficiency& e, int ranks) {
  if (ranks <= 8) return e.hybridep_8;
  if (ranks >= 36) return e.hybridep_36;
  const double x = std::log(static_cast<double>(ranks) / 8) / std::log(36.0 / 8);
  return e.hybridep_8 + x * (e.hybridep_36 - e.hybridep_8);
}

}  // namespace ppb
