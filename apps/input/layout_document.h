// A plan's layout applied to its job file: the job's YAML document with
// the layout written into it, then the usual loader (apps/input/config.h)
// gives that layout's run config; the document the job is read from once;
// the file's own layout; the job value the plan's space is enumerated for
// (search/plan/plan_space.h).
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string_view>

#include "apps/input/config.h"
#include "search/plan/plan_space.h"

namespace ppb {

// What the plan's rules read of a run config (the probe: the job loaded
// with any pipeline).
PlanJob PlanJobOf(const RunConfig& probe);

// The job's document (YAML `text`) with `layout` written into it (training.*,
// pipeline.stages / virtual_stages / schedule; pipeline.microbatches and
// microbatch_group, the plan and the search lists removed;
// overlap_param_gather off without the distributed optimizer; a split of
// strategy.* removed, its recompute kept only where it names no per-stage
// counts), ready for ParseConfigYaml. With n_layers > 0 (the model's
// layers, at least p x v), strategy.layers_per_chunk is set to the most
// even counts per global stage (for a layout whose default even split the
// loader refuses). REQUIRES: `text` is valid YAML.
YAML::Node LayoutDocument(std::string_view text, const PlanLayout& layout, int n_layers = 0);

// The document the plan reads the job from: `text` as one layout with
// t = cp = ep = p = d = mbs = 1 (1f1b), so that the model, training and
// hardware load whatever the file's own layout.
YAML::Node ProbeDocument(std::string_view text);

// The file's own layout (training.*, pipeline.*; 1 where absent) with m from
// its global batch; nullopt without training.global_batch_size.
std::optional<PlanLayout> OwnLayout(const RunConfig& own);

}  // namespace ppb
