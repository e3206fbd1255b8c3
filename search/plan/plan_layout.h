// One whole-job layout of `ppb-sim plan` as a value: the parallel sizes
// (TP x CP x EP x PP x DP), the micro-batch, the schedule and its virtual
// stages, the recompute choice and the training options a plan may vary.
// The job it applies to is the caller's (search/plan/plan_space.h
// enumerates the layouts of a job; apps/input/layout_document.h writes one
// into the job's document); this file reads only the layout's own fields.
//
// Contract: a value type; DescribeLayout is one line for people and a key
// (two layouts describe alike exactly when every field but `yours` is
// equal); PlanTiePreference is a strict weak order.
#pragma once

#include <optional>
#include <string>

#include "search/deployable.h"

namespace ppb {

struct PlanLayout {
  int t = 1, cp = 1, ep = 1, p = 1, d = 1;
  int mbs = 1;
  int m = 1;  // micro-batches: GBS / (d mbs)
  bool sp = false, dist_opt = false;
  std::string schedule = "1f1b";
  int v = 1;
  std::string recompute = "search";  // "search", "none" or a mode
  // The linears' recipe (core/precision.h RecipeName); "" keeps the file's.
  std::string precision;
  // training.data_parallel_sharding (core/sharding.h); "": dist_opt says.
  std::string sharding;
  // training.offload: "" keeps the file's, "none" drops it, else a flow map.
  std::string offload;
  // training.moe: "" keeps the file's, "none" drops it, else a flow map.
  std::string moe;
  bool yours = false;                // the job config's own layout
};

// "t8 cp1 ep1 p8 d24 mbs1 1f1b v1 search": one layout for people.
std::string DescribeLayout(const PlanLayout& l);

// The order of preference inside a tie group, simplest first: fewer model-
// parallel ranks (t x cp x ep x p), then fewer virtual stages, then the
// smaller micro-batch.
bool PlanTiePreference(const PlanLayout& a, const PlanLayout& b);

// The recompute setting a layout's search runs under: none for a
// per-layer search ("search": every setting of the target), else its one
// uniform mode on every layer that offers it ("none": no recompute).
std::optional<RecomputeSetting> LayoutRecomputeSetting(const PlanLayout& l, DeployTarget target);

// The layout with its recompute choice "search", described: whose bounds
// hold for every uniform choice of the same layout.
std::string FreeRecomputeKey(PlanLayout l);

}  // namespace ppb
