#include "apps/input/apply_layout.h"

#include <cstdint>

#include "apps/input/config_reader.h"
#include "core/lower.h"

namespace ppb {

bool AppliesScheduleV(const RunConfig& loaded) {
  return loaded.schedule != "custom" && !loaded.training.moe.overlap_ep_comm &&
         !loaded.schedule_params.combined_1f1b;
}

std::optional<RunConfig> ApplyScheduleV(const RunConfig& loaded, const std::string& schedule,
                                        int v) {
  using config_detail::kDefaultMaxOps;
  using config_detail::kMaxLayers;
  using config_detail::kOpKindsBound;
  const int p = loaded.shape.p;
  const int m = loaded.shape.m;
  // The loader's checks that read v (config_pipeline.cpp ParsePipeline,
  // CheckOps) and the schedule (config_moe.cpp: the combined 1F1B); a
  // custom schedule reads a CSV.
  if (!AppliesScheduleV(loaded) || schedule == "custom" || v < 1) return std::nullopt;
  if (std::int64_t{p} * v > kMaxLayers) return std::nullopt;
  if (kOpKindsBound * p * v * m > kDefaultMaxOps) return std::nullopt;
  RunConfig out = loaded;
  out.schedule = schedule;
  out.shape.v = v;
  // pipeline.communication's default (config.cpp ParseRoot, Megatron's
  // rule): blocking for 1f1b and gpipe, overlapped for the others.
  if (!out.communication_given) {
    out.shape.comm =
        schedule == "1f1b" || schedule == "gpipe" ? CommMode::Blocking : CommMode::Overlapped;
  }
  // The default even split over p x v stages (config_strategy.cpp
  // EvenSplit); the per-layer recompute is the document's, which names no
  // per-stage counts (LayoutDocument), so it is the same for every split.
  Strategy even = EvenStrategy(out.layers, p, v);
  if (!out.allow_empty_chunks) {
    for (int c : even.layers_per_stage) {
      if (c == 0) return std::nullopt;
    }
  }
  out.strategy.layers_per_stage = std::move(even.layers_per_stage);
  return out;
}

}  // namespace ppb
