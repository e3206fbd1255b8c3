#include "core/topology.h"

#include <algorithm>

namespace ppb {

Cluster ClusterFor(const Topology& topo, const Placement& placement) {
  Cluster c;
  const int p = static_cast<int>(placement.size());
  c.devices.reserve(p);
  c.links.reserve(p);
  for (int r = 0; r < p; ++r) {
    const DeviceType& t = topo.types[topo.device_type[placement[r]]];
    Device d;
    d.memory_capacity = t.memory_capacity;
    d.speed = t.speed;
    c.devices.push_back(d);
    const int next = placement[(r + 1) % p];
    c.links.push_back(topo.SameNode(placement[r], next) ? topo.intra_node
                                                        : topo.inter_node);
  }
  return c;
}

bool IsPlacement(const Topology& topo, const Placement& placement) {
  const int n = topo.num_devices();
  if (static_cast<int>(placement.size()) != n) return false;
  std::vector<char> seen(n, 0);
  for (int d : placement) {
    if (d < 0 || d >= n || seen[d]) return false;
    seen[d] = 1;
  }
  return true;
}

std::vector<std::int32_t> PlacementKey(const Topology& topo,
                                       const Placement& placement, bool ring) {
  const int p = static_cast<int>(placement.size());
  std::vector<std::int32_t> key;
  key.reserve(2 * p);
  for (int r = 0; r < p; ++r) {
    key.push_back(topo.device_type[placement[r]]);
    const bool last = r + 1 == p;
    key.push_back(last && !ring
                      ? -1
                      : topo.SameNode(placement[r], placement[(r + 1) % p]));
  }
  return key;
}

std::string DeviceLabel(const Topology& topo, int device) {
  return topo.types[topo.device_type[device]].name + "@" +
         topo.node_names[topo.device_node[device]];
}

}  // namespace ppb
