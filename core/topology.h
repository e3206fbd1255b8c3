// A heterogeneous cluster as it is built: device types, nodes, and the two
// link classes (inside a node, between nodes). Which device runs which
// pipeline rank (the placement) decides the per-rank Cluster the engine
// sees: rank r gets its device's speed and memory, and the link between
// ranks r and r+1 is the intra-node class when both devices share a node,
// else the inter-node class.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/types.h"

namespace ppb {

struct DeviceType {
  std::string name;
  double speed = 1.0;       // relative to the layers' reference device
  Bytes memory_capacity = 0;
};

struct Topology {
  std::vector<DeviceType> types;
  // Per physical device (in the order the config lists them).
  std::vector<int> device_type;  // index into types
  std::vector<int> device_node;  // node index (0-based)
  std::vector<std::string> node_names;
  Link intra_node;
  Link inter_node;

  int num_devices() const { return static_cast<int>(device_type.size()); }
  bool SameNode(int a, int b) const { return device_node[a] == device_node[b]; }
};

// placement[r] = the physical device that runs rank r (a permutation of
// 0..num_devices-1).
using Placement = std::vector<int>;

// The per-rank devices and ring links of `placement` (links[r] joins ranks r
// and (r + 1) mod p). REQUIRES: placement is a permutation of the devices.
Cluster ClusterFor(const Topology& topo, const Placement& placement);

// Whether `placement` is a permutation of 0..num_devices-1.
bool IsPlacement(const Topology& topo, const Placement& placement);

// What the engine can tell apart about a placement: the type of every rank
// and which ring boundaries stay inside a node (`ring` false: the edge from
// rank p-1 back to 0 is ignored, as only interleaved schedules use it).
// Placements with equal keys simulate identically.
std::vector<std::int32_t> PlacementKey(const Topology& topo,
                                       const Placement& placement, bool ring);

// "a100@node0" for people.
std::string DeviceLabel(const Topology& topo, int device);

}  // namespace ppb
