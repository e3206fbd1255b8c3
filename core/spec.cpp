#include "core/spec.h"

#include <algorithm>
#include <limits>

namespace ppb {

std::vector<DeviceId> DefaultPlacement(int p, int v) {
  std::vector<DeviceId> placement(static_cast<size_t>(p) * v);
  for (int s = 0; s < p * v; ++s) placement[s] = DeviceId(s % p);
  return placement;
}

std::vector<DeviceId> StagePlacementDevices(StagePlacement placement, int p,
                                            int v) {
  if (placement == StagePlacement::Loop) return DefaultPlacement(p, v);
  std::vector<DeviceId> devices(static_cast<size_t>(p) * v);
  for (int s = 0; s < p * v; ++s) {
    devices[static_cast<size_t>(s)] = DeviceId(s < p ? s : 2 * p - 1 - s);
  }
  return devices;
}

int ChunkOnRank(const std::vector<DeviceId>& stage_device, int s) {
  int chunk = 0;
  for (int o = 0; o < s; ++o) {
    chunk += stage_device[static_cast<size_t>(o)] == stage_device[static_cast<size_t>(s)] ? 1 : 0;
  }
  return chunk;
}

std::vector<Link> RingLinkMatrix(int p, const std::vector<Link>& links) {
  std::vector<Link> matrix(static_cast<size_t>(p) * p);
  for (int from = 0; from < p; ++from) {
    for (int to = 0; to < p; ++to) {
      if (from == to) continue;
      // Going up the ring from `from` reaches `to` after (to - from) mod p
      // hops; going down after (from - to) mod p. Take the shorter way.
      const int up = (to - from + p) % p;
      const int down = (from - to + p) % p;
      Link route{0, 0};
      BytesPerSec bw = std::numeric_limits<BytesPerSec>::max();
      bool any_finite = false;
      const auto add = [&](const Link& l) {
        route.latency += l.latency;
        if (l.bandwidth > 0) {
          bw = std::min(bw, l.bandwidth);
          any_finite = true;
        }
      };
      if (up <= down) {
        for (int h = 0; h < up; ++h) add(links[(from + h) % p]);
      } else {
        for (int h = 0; h < down; ++h) add(links[(from - h - 1 + p) % p]);
      }
      route.bandwidth = any_finite ? bw : 0;
      matrix[static_cast<size_t>(from) * p + to] = route;
    }
  }
  return matrix;
}

PipelineSpec PipelineSpec::Uniform(int p, int v, int m, Nanos forward,
                                   Nanos backward) {
  PipelineSpec spec;
  spec.p = p;
  spec.v = v;
  spec.m = m;
  StageCost cost;
  cost.forward = forward;
  cost.backward_input = backward;
  cost.num_layers = 1;
  spec.stages.assign(static_cast<size_t>(p) * v, cost);
  spec.stage_device = DefaultPlacement(p, v);
  spec.device_capacity.assign(p, std::numeric_limits<Bytes>::max());
  spec.link_matrix.assign(static_cast<size_t>(p) * p, Link{});
  return spec;
}

}  // namespace ppb
