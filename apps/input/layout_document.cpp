#include "apps/input/layout_document.h"

#include <algorithm>

#include "core/precision.h"

namespace ppb {

PlanJob PlanJobOf(const RunConfig& probe) {
  PlanJob job;
  job.layers = probe.layers;
  job.architecture = probe.architecture;
  job.training = probe.training;
  job.hardware = probe.hardware;
  job.allow_empty_chunks = probe.allow_empty_chunks;
  job.schedule_params = probe.schedule_params;
  return job;
}

namespace {

void Remove(YAML::Node node, const char* key) {
  if (node.IsMap() && node[key]) node.remove(key);
}

YAML::Node Section(YAML::Node root, const char* key) {
  if (!root[key] || !root[key].IsMap()) root[key] = YAML::Node(YAML::NodeType::Map);
  return root[key];
}

}  // namespace

namespace {

YAML::Node WithLayout(std::string_view text, const PlanLayout& l, int n_layers, bool keep_plan) {
  // Loaded afresh (a clone would lose the marks that place errors).
  YAML::Node doc = YAML::Load(std::string(text));
  if (!keep_plan) Remove(doc, "plan");
  YAML::Node tr = Section(doc, "training");
  tr["tensor_parallel"] = l.t;
  tr["context_parallel"] = l.cp;
  tr["expert_parallel"] = l.ep;
  tr["data_parallel"] = l.d;
  tr["micro_batch_size"] = l.mbs;
  tr["sequence_parallel"] = l.sp;
  if (!l.sharding.empty()) {
    // The strategy in Megatron's words; the file's distributed_optimizer
    // key goes (the strategy says it).
    tr["data_parallel_sharding"] = l.sharding;
    Remove(tr, "distributed_optimizer");
  } else if (!keep_plan) {
    // (The probe keeps the file's own.)
    tr["distributed_optimizer"] = l.dist_opt;
  }
  // The probe's one data-parallel rank has no shard group (a layout whose
  // d the file's data_parallel_shard does not divide is refused by the
  // loader).
  if (keep_plan) Remove(tr, "data_parallel_shard");
  // Nor can it run the combined 1F1B (EP 1) or fold expert TP: the layouts
  // take the file's own.
  if (keep_plan && tr["moe"] && tr["moe"].IsMap()) {
    YAML::Node mo = tr["moe"];
    Remove(mo, "overlap_ep_comm");
    Remove(mo, "expert_tensor_parallel");
  }
  if (l.offload == "none") {
    Remove(tr, "offload");
  } else if (!l.offload.empty()) {
    tr["offload"] = YAML::Load(l.offload);
  }
  if (l.moe == "none") {
    Remove(tr, "moe");
  } else if (!l.moe.empty()) {
    tr["moe"] = YAML::Load(l.moe);
  }
  // Only the distributed optimizer gathers parameters: the file's
  // overlap_param_gather (and fp8_param_gather) applies to the layouts that
  // have one.
  if (!l.dist_opt && tr["overlap_param_gather"]) tr["overlap_param_gather"] = false;
  if (const std::optional<Recipe> recipe = FindRecipe(l.precision)) {
    // The layout's recipe replaces the file's, in Megatron's words.
    const std::string old_format =
        tr["fp8"] && tr["fp8"].IsMap() && tr["fp8"]["format"] ? tr["fp8"]["format"].Scalar() : "";
    Remove(tr, "fp8");
    Remove(tr, "fp4");
    if (*recipe == Recipe::None) {
      Remove(tr, "fp8_param_gather");
      Remove(tr, "first_last_layers_bf16");
    } else {
      YAML::Node block(YAML::NodeType::Map);
      if (!IsFp4(*recipe) && !old_format.empty()) block["format"] = old_format;
      block["recipe"] = MegatronRecipe(*recipe);
      tr[IsFp4(*recipe) ? "fp4" : "fp8"] = block;
      if (*recipe == Recipe::Fp8Delayed) Remove(tr, "first_last_layers_bf16");
    }
  }
  if (!l.dist_opt && tr["fp8_param_gather"]) tr["fp8_param_gather"] = false;
  YAML::Node pl = Section(doc, "pipeline");
  pl["stages"] = l.p;
  pl["virtual_stages"] = l.v;
  pl["schedule"] = l.schedule;
  Remove(pl, "microbatches");
  Remove(pl, "microbatch_group");
  Remove(pl, "schedule_csv");
  if (doc["search"] && doc["search"].IsMap()) {
    YAML::Node se = doc["search"];
    for (const char* k : {"schedules", "virtual_stages", "microbatch_groups"}) Remove(se, k);
  }
  if (doc["strategy"] && doc["strategy"].IsMap()) {
    YAML::Node st = doc["strategy"];
    for (const char* k : {"layers_per_chunk", "layout", "offset"}) Remove(st, k);
    // Per-stage recompute counts belong to the file's split; true/false
    // and per-layer choices carry over (the search's seed) for a per-layer
    // search, and nothing for a uniform choice (its own first try).
    YAML::Node rc = st["recompute"];
    if (rc && rc.IsMap()) {
      bool keep = l.recompute == "search";
      for (const auto& kv : rc) {
        const std::string key = kv.first.as<std::string>();
        if (key != "layers" && !kv.second.IsScalar()) keep = false;
        if (key != "layers" && kv.second.IsScalar()) {
          const std::string v = kv.second.Scalar();
          if (v != "true" && v != "false") keep = false;
        }
      }
      if (!keep) st.remove("recompute");
    }
  }
  if (n_layers > 0) {
    // Counts per global stage as even as the layers allow, every stage
    // holding one: a split the loader takes where its default even split
    // (head and MTP layers pinned to the last stage) would leave a chunk
    // empty; the search chooses the split anyway.
    const int stages = l.p * l.v;
    YAML::Node counts(YAML::NodeType::Sequence);
    for (int st = 0; st < stages; ++st) {
      counts.push_back(n_layers / stages + (st < n_layers % stages ? 1 : 0));
    }
    YAML::Node strategy = Section(doc, "strategy");
    strategy["layers_per_chunk"] = counts;
  }
  return doc;
}

}  // namespace

YAML::Node LayoutDocument(std::string_view text, const PlanLayout& l, int n_layers) {
  return WithLayout(text, l, n_layers, false);
}

// The plan block stays where the file has it, with its marks: an error in
// it names its line.
YAML::Node ProbeDocument(std::string_view text) {
  return WithLayout(text, PlanLayout{}, 0, true);
}

std::optional<PlanLayout> OwnLayout(const RunConfig& own) {
  const Training& t = own.training;
  if (t.global_batch <= 0 || own.schedule == "custom") return std::nullopt;
  PlanLayout l;
  l.t = t.tp, l.cp = t.cp, l.ep = t.ep, l.p = own.shape.p, l.d = t.dp;
  l.mbs = static_cast<int>(t.micro_batch);
  l.m = own.shape.m;
  l.sp = t.sp && t.tp > 1;
  l.dist_opt = t.distributed_optimizer;
  if (OwnSharding(t)) l.sharding = DpShardingName(t.sharding.strategy);
  l.schedule = own.schedule;
  l.v = own.shape.v;
  l.recompute = "search";
  return l;
}

}  // namespace ppb
