#include "core/lower.h"

#include "core/cost.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ppb {
namespace {

bool IsFirstStageKind(LayerKind k) { return k == LayerKind::Embedding; }
bool IsLastStageKind(LayerKind k) {
  return k == LayerKind::Head || k == LayerKind::Mtp;
}


}  // namespace

Strategy EvenStrategy(const std::vector<Layer>& layers, int p, int v) {
  const int stages = p * v;
  const int n = static_cast<int>(layers.size());
  // Leading embedding layers and trailing head/MTP layers are pinned to the
  // first and last stage; the rest ("body") is split evenly.
  int lead = 0;
  while (lead < n && IsFirstStageKind(layers[lead].kind)) ++lead;
  int tail = 0;
  while (tail < n - lead && IsLastStageKind(layers[n - 1 - tail].kind)) ++tail;
  const int body = n - lead - tail;

  Strategy s;
  s.layers_per_stage.assign(stages, body / stages);
  int extra = body % stages;
  // Remainder order: 1, 2, ..., S-2, then S-1, then 0.
  std::vector<int> order;
  for (int i = 1; i + 1 < stages; ++i) order.push_back(i);
  if (stages >= 2) order.push_back(stages - 1);
  order.push_back(0);
  for (int i = 0; i < extra; ++i) ++s.layers_per_stage[order[i]];
  s.layers_per_stage.front() += lead;
  s.layers_per_stage.back() += tail;
  s.recompute.assign(n, 0);
  return s;
}

Result<PipelineSpec> Lower(const std::vector<Layer>& layers,
                           const Cluster& cluster, const PipelineShape& shape,
                           const Strategy& strategy, bool allow_empty) {
  const int p = shape.p, v = shape.v;
  if (p < 1 || v < 1 || shape.m < 1) {
    return Error{"pipeline", "stages, virtual stages and microbatches must be "
                             ">= 1; got p=" + std::to_string(p) + ", v=" +
                                 std::to_string(v) + ", m=" +
                                 std::to_string(shape.m)};
  }
  const int stages = p * v;
  if (shape.placement == StagePlacement::V && v != 2) {
    return Error{"pipeline.virtual_stages",
                 "must be 2 for the V placement (rank r holds stages r and "
                 "2p-1-r); got " + std::to_string(v)};
  }
  if (shape.fb_overlap_ppm < 0 || shape.fb_overlap_ppm > 1'000'000) {
    return Error{"pipeline.fb_overlap",
                 "must be a share in [0, 1]; got " +
                     std::to_string(static_cast<double>(shape.fb_overlap_ppm) /
                                    1e6)};
  }
  const std::vector<DeviceId> placement =
      StagePlacementDevices(shape.placement, p, v);
  if (static_cast<int>(cluster.devices.size()) != p) {
    return Error{"cluster.devices",
                 "must describe one device per pipeline stage (" +
                     std::to_string(p) + "); got " +
                     std::to_string(cluster.devices.size())};
  }
  if (static_cast<int>(cluster.links.size()) != p) {
    return Error{"cluster.links", "must describe " + std::to_string(p) +
                                      " links (one per rank boundary); got " +
                                      std::to_string(cluster.links.size())};
  }
  for (int d = 0; d < p; ++d) {
    if (!(cluster.devices[d].speed > 0.0) ||
        !std::isfinite(cluster.devices[d].speed)) {
      return Error{"cluster.devices",
                   "speed of rank " + std::to_string(d) +
                       " must be a positive number; got " +
                       std::to_string(cluster.devices[d].speed)};
    }
  }
  if (static_cast<int>(strategy.layers_per_stage.size()) != stages) {
    return Error{"strategy",
                 "needs layer counts for stages x virtual_stages = " +
                     std::to_string(stages) + " chunks; got " +
                     std::to_string(strategy.layers_per_stage.size())};
  }
  if (strategy.recompute.size() != layers.size()) {
    return Error{"strategy.recompute",
                 "needs one recompute choice per layer (" +
                     std::to_string(layers.size()) + "); got " +
                     std::to_string(strategy.recompute.size())};
  }
  long long total = 0;
  for (int s = 0; s < stages; ++s) {
    const int c = strategy.layers_per_stage[s];
    if (c < 0 || (c == 0 && !allow_empty)) {
      return Error{"strategy",
                   "chunk " + std::to_string(s / p) + " of rank " +
                       std::to_string(placement[s].value) + " (stage " +
                       std::to_string(s) +
                       ") must hold at least one layer" +
                       (c == 0 ? " (set strategy.allow_empty_chunks to allow "
                                 "empty chunks)"
                               : "") +
                       "; got " + std::to_string(c)};
    }
    total += c;
  }
  if (total != static_cast<long long>(layers.size())) {
    return Error{"strategy",
                 "layer counts must add up to the model's " +
                     std::to_string(layers.size()) + " layers; got " +
                     std::to_string(total) +
                     (total < static_cast<long long>(layers.size())
                          ? " (layers would be dropped)"
                          : "")};
  }

  PipelineSpec spec;
  spec.p = p;
  spec.v = v;
  spec.m = shape.m;
  spec.comm = shape.comm;
  spec.placement = shape.placement;
  spec.fb_overlap_ppm = shape.fb_overlap_ppm;
  spec.ep_overlap_ppm = shape.ep_overlap_ppm;
  spec.op_overhead = shape.op_overhead;
  spec.tail = shape.tail;
  spec.stage_device = placement;
  spec.device_capacity.resize(p);
  for (int d = 0; d < p; ++d) {
    spec.device_capacity[d] = cluster.devices[d].memory_capacity;
  }
  spec.link_matrix = RingLinkMatrix(p, cluster.links);
  spec.stages.resize(stages);

  size_t li = 0;
  Bytes last_output = 0;  // an empty chunk passes its input on unchanged
  for (int s = 0; s < stages; ++s) {
    const double speed = cluster.devices[spec.stage_device[s].value].speed;
    StageCost& st = spec.stages[s];
    Nanos f = 0, bi = 0, bw = 0, rc = 0, cf = 0, cb = 0, ef = 0, eb = 0;
    Bytes max_workspace = 0, max_rematerialized = 0;
    for (int k = 0; k < strategy.layers_per_stage[s]; ++k, ++li) {
      const Layer& l = layers[li];
      f += l.forward;
      bi += l.backward_input;
      bw += l.backward_weight;
      st.static_memory += l.static_memory;
      st.grad_bytes += l.grad_bytes;
      st.expert_grad_bytes += l.expert_grad_bytes;
      st.optimizer += l.optimizer;
      st.step_gather += l.step_gather;
      cf += l.comm_forward;
      cb += l.comm_backward;
      ef += l.ep_forward;
      eb += l.ep_backward;
      max_workspace = std::max(max_workspace, l.workspace);
      const std::uint8_t choice = strategy.recompute[li];
      if (choice == 0) {
        st.activation += l.activation;
        st.input_grad_release += l.activation - l.HeldAfterInputGrad(l.activation);
      } else {
        if (choice > l.recompute.size()) {
          return Error{"strategy.recompute",
                       "layer " + l.name + " offers " +
                           std::to_string(l.recompute.size()) +
                           " recompute modes; got mode number " +
                           std::to_string(choice)};
        }
        const RecomputeOption& o = l.recompute[choice - 1];
        st.activation += o.retained_activation;
        st.input_grad_release +=
            o.retained_activation - l.HeldAfterInputGrad(o.retained_activation);
        rc += o.extra_time;
        max_rematerialized = std::max(
            max_rematerialized, l.activation - o.retained_activation);
        ++st.num_recomputed;
      }
      st.output_bytes = l.output_bytes;
      ++st.num_layers;
    }
    if (st.num_layers == 0) st.output_bytes = last_output;
    last_output = st.output_bytes;
    st.forward = ScaleTime(f, speed);
    st.backward_input = ScaleTime(bi, speed);
    st.backward_weight = ScaleTime(bw, speed);
    st.recompute = ScaleTime(rc, speed);
    st.collective_forward = ScaleTime(cf, speed);
    st.collective_backward = ScaleTime(cb, speed);
    st.ep_forward = ScaleTime(ef, speed);
    st.ep_backward = ScaleTime(eb, speed);
    st.forward_transient = max_workspace;
    st.backward_transient = max_workspace + std::max<Bytes>(0, max_rematerialized);
  }
  return spec;
}

}  // namespace ppb
