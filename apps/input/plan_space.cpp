#include "apps/input/plan_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "schedules/schedule.h"
#include "search/deployable.h"
#include "search/search.h"

namespace ppb {

namespace {

int DecoderCount(const std::vector<Layer>& layers) {
  int n = 0;
  for (const Layer& l : layers) {
    n += l.kind == LayerKind::Decoder || l.kind == LayerKind::Moe || l.kind == LayerKind::Other;
  }
  return n;
}

std::vector<int> PowersOfTwo(int up_to) {
  std::vector<int> out;
  for (int x = 1; x <= up_to; x *= 2) out.push_back(x);
  return out;
}

// One (schedule, v) pair of the space, or the reason it is refused.
struct ScheduleV {
  std::string schedule;
  int v = 1;
  std::string refusal;
};

// The v each schedule runs (plan_space.h): the V schedules 2, the looped
// ones each listed v (a listed v < 2 is a refused pair: every combination
// the lists make is counted), the others 1.
std::vector<ScheduleV> VsOf(const std::string& schedule, const std::vector<int>& listed) {
  const ScheduleInfo* info = FindSchedule(schedule);
  if (info != nullptr && info->placement == StagePlacement::V) return {{schedule, 2, ""}};
  if (schedule == "interleaved" || schedule == "looped-bfs" ||
      schedule == "interleaved-zero-bubble") {
    std::vector<ScheduleV> out;
    for (int v : listed) {
      out.push_back({schedule, v, v >= 2 ? "" : schedule + " needs virtual_stages >= 2"});
    }
    return out;
  }
  return {{schedule, 1, ""}};
}

// The sequence-parallel values at t: sp needs t > 1 (at t = 1 only false).
std::vector<bool> SpsAt(int t, const std::vector<bool>& listed) {
  std::vector<bool> out;
  for (bool b : listed) {
    const bool eff = b && t > 1;
    if (std::find(out.begin(), out.end(), eff) == out.end()) out.push_back(eff);
  }
  return out;
}

// Products of list sizes, saturating at 2^62 (a count beyond any space
// that the plan could enumerate; PlanSpaceSize refuses it first).
std::int64_t Mul(std::int64_t a, std::int64_t b) {
  constexpr std::int64_t kMax = std::int64_t{1} << 62;
  if (a == 0 || b == 0) return 0;
  if (a > kMax / b) return kMax;
  return a * b;
}

struct Lists {
  std::vector<int> t, cp, ep, p, mbs, v;
  std::vector<std::string> schedules, recompute, precision, offload, moe;
  std::vector<bool> sp;
  // The data-parallel choices: (distributed optimizer, strategy name or "").
  std::vector<std::pair<bool, std::string>> dp;
};

// Whether the file sets sharding the distributed-optimizer list cannot say.
bool OwnSharding(const Training& t) {
  return t.sharding.fsdp_on() || t.sharding.strategy >= DpSharding::OptimGrads;
}

Lists Resolve(const RunConfig& probe, const PlanSettings& s) {
  Lists x;
  // The default t and cp: powers of two inside an NVLink domain, at most 8
  // (an NVL72 rack's 72 would list TP 64; list larger ones to try them).
  const int domain = probe.hardware.gpu.nvlink_domain > 0 ? probe.hardware.gpu.nvlink_domain : 8;
  const int node = std::min(domain, 8);
  const int decoders = std::max(1, DecoderCount(probe.layers));
  x.t = !s.tensor_parallel.empty() ? s.tensor_parallel : PowersOfTwo(node);
  x.cp = !s.context_parallel.empty() ? s.context_parallel : PowersOfTwo(node);
  if (!s.expert_parallel.empty()) {
    x.ep = s.expert_parallel;
  } else if (probe.architecture.experts > 0) {
    for (int e : PowersOfTwo(probe.architecture.experts)) {
      if (probe.architecture.experts % e == 0) x.ep.push_back(e);
    }
  } else {
    x.ep = {1};
  }
  if (!s.pipeline_parallel.empty()) {
    x.p = s.pipeline_parallel;
  } else {
    for (int p = 1; p <= std::min(s.gpus, decoders); ++p) {
      if (s.gpus % p == 0) x.p.push_back(p);
    }
  }
  x.mbs = !s.micro_batch_size.empty() ? s.micro_batch_size : std::vector<int>{1, 2, 4, 8};
  x.v = !s.virtual_stages.empty() ? s.virtual_stages : std::vector<int>{2, 3, 4, 5, 6, 7, 8};
  x.schedules = !s.schedules.empty() ? s.schedules
                                     : std::vector<std::string>{"1f1b", "interleaved"};
  x.recompute = !s.recompute.empty() ? s.recompute : std::vector<std::string>{"search"};
  x.precision = !s.precision.empty() ? s.precision : std::vector<std::string>{""};
  x.sp = !s.sequence_parallel.empty() ? s.sequence_parallel : std::vector<bool>{true};
  x.offload = !s.offload.empty() ? s.offload : std::vector<std::string>{""};
  x.moe = !s.moe.empty() ? s.moe : std::vector<std::string>{""};
  const Training& t = probe.training;
  if (!s.data_parallel_sharding.empty()) {
    for (const std::string& name : s.data_parallel_sharding) {
      DpSharding d{};
      FindDpSharding(name, &d);
      x.dp.emplace_back(d >= DpSharding::Optim && t.sharding.fsdp != Fsdp::Torch, name);
    }
  } else if (s.distributed_optimizer.empty() && OwnSharding(t)) {
    x.dp.emplace_back(t.distributed_optimizer, DpShardingName(t.sharding.strategy));
  } else {
    for (bool b : !s.distributed_optimizer.empty() ? s.distributed_optimizer
                                                    : std::vector<bool>{true}) {
      x.dp.emplace_back(b, "");
    }
  }
  return x;
}

// Why the layout breaks a rule on (t, cp, ep, p) alone; empty when none.
std::string ShapeRefusal(const RunConfig& probe, const PlanSettings& s, int t, int cp, int ep,
                         int p) {
  const Architecture& a = probe.architecture;
  // Step by step: t, cp and p of 2^21 each multiply past int64.
  const std::int64_t tc = std::int64_t{t} * cp;  // < 2^62
  if (tc > s.gpus || tc * p > s.gpus || s.gpus % (tc * p) != 0) {
    return "t x cp x p does not divide the GPUs";
  }
  const std::int64_t tcp = tc * p;
  if (a.heads > 0 && a.heads % t != 0) return "t does not divide the attention heads";
  if (a.heads > 0 && !a.mla() && a.kv_heads % t != 0) return "t does not divide the KV heads";
  const int domain = probe.hardware.gpu.nvlink_domain;
  if (probe.hardware.step_model && domain > 0 && t > domain && !probe.training.tp_across_nodes) {
    return domain == probe.hardware.gpu.gpus_per_node
               ? "t exceeds a node (training.tp_across_nodes is off)"
               : "t exceeds an NVLink domain (training.tp_across_nodes is off)";
  }
  const std::int64_t seq = probe.training.seq;
  if (cp > 1 && (seq % (2 * cp) != 0)) {
    return "cp does not split the sequence into 2 x cp equal chunks";
  }
  if (ep > 1 && a.experts == 0) return "ep > 1 needs routed experts (a dense model)";
  if (ep > 1 && a.experts % ep != 0) return "ep does not divide the routed experts";
  const int d = static_cast<int>(s.gpus / tcp);
  if ((std::int64_t{d} * cp) % ep != 0) return "ep does not divide d x cp";
  return "";
}

}  // namespace

double PlanSpaceSize(const RunConfig& probe, const PlanSettings& s) {
  const Lists x = Resolve(probe, s);
  double sv = 0;
  for (const std::string& sch : x.schedules) sv += static_cast<double>(VsOf(sch, x.v).size());
  double n = sv;
  for (size_t k : {x.t.size(), x.cp.size(), x.ep.size(), x.p.size(), x.mbs.size(),
                   x.dp.size(), x.recompute.size(), x.precision.size(), x.sp.size(),
                   x.offload.size(), x.moe.size()}) {
    n *= static_cast<double>(k);
  }
  return n;
}

PlanSpace EnumeratePlan(const RunConfig& probe, const PlanSettings& s, const PlanLayout* yours,
                        const std::function<bool()>& past) {
  PlanSpace out;
  const Lists x = Resolve(probe, s);
  // The clock is looked at every 1,024 steps of the enumeration: past it,
  // the combinations not yet looked at are counted as not enumerated.
  std::int64_t steps = 0;
  bool stopped = false;
  auto stop = [&] {
    if (stopped) return true;
    if (past && (++steps & 1023) == 0 && past()) stopped = true;
    return stopped;
  };
  const int n_layers = static_cast<int>(probe.layers.size());
  const std::int64_t gbs = probe.training.global_batch;
  auto refuse = [&](const std::string& reason, std::int64_t count) {
    out.refused[reason] += count;
    out.total += count;
  };
  bool yours_seen = false;
  const std::string own_precision = RecipeName(probe.training.low.recipe);
  auto precision_of = [&](const PlanLayout& l) {
    return l.precision.empty() ? own_precision : l.precision;
  };
  auto same = [&](const PlanLayout& a, const PlanLayout& b) {
    return a.t == b.t && a.cp == b.cp && a.ep == b.ep && a.p == b.p && a.mbs == b.mbs &&
           a.sp == b.sp && a.dist_opt == b.dist_opt && a.sharding == b.sharding &&
           a.schedule == b.schedule && a.v == b.v && a.recompute == b.recompute &&
           precision_of(a) == precision_of(b) && a.offload == b.offload && a.moe == b.moe;
  };
  // Which recipes the GPU runs (the file's own, "", always loads as it is).
  std::map<std::string, std::string> precision_refusal;
  for (const std::string& name : x.precision) {
    const std::optional<Recipe> r = FindRecipe(name);
    if (!r) continue;  // "": the file's own
    if (!probe.hardware.step_model && *r != Recipe::None) {
      precision_refusal[name] = name + " needs hardware.gpu (the step model)";
    } else if (std::string why = RecipeRuns(*r, probe.hardware.gpu); !why.empty()) {
      precision_refusal[name] = why;
    }
  }
  // The (schedule, v) pairs and their count.
  std::vector<ScheduleV> sv;
  for (const std::string& sch : x.schedules) {
    for (ScheduleV& p : VsOf(sch, x.v)) sv.push_back(std::move(p));
  }
  const std::int64_t per_sv =
      Mul(Mul(Mul(static_cast<std::int64_t>(x.recompute.size()),
                  static_cast<std::int64_t>(x.precision.size())),
              static_cast<std::int64_t>(x.offload.size())),
          static_cast<std::int64_t>(x.moe.size()));
  const std::int64_t per_mbs_sp = Mul(Mul(static_cast<std::int64_t>(x.dp.size()),
                                          static_cast<std::int64_t>(sv.size())),
                                      per_sv);
  // Every combination the lists make, counted before any is looked at.
  std::int64_t all = 0;
  for (int t : x.t) {
    const std::vector<bool> sps = SpsAt(t, x.sp);
    const std::int64_t shapes = Mul(Mul(static_cast<std::int64_t>(x.cp.size()),
                                        static_cast<std::int64_t>(x.ep.size())),
                                    static_cast<std::int64_t>(x.p.size()));
    all += Mul(Mul(shapes, Mul(static_cast<std::int64_t>(x.mbs.size()),
                               static_cast<std::int64_t>(sps.size()))),
               per_mbs_sp);
  }
  for (int t : x.t) {
    if (stop()) break;
    const std::vector<bool> sps = SpsAt(t, x.sp);
    for (int cp : x.cp) {
      if (stopped) break;
      for (int ep : x.ep) {
        if (stopped) break;
        for (int p : x.p) {
          if (stop()) break;
          const std::int64_t per_mbs = Mul(per_mbs_sp, static_cast<std::int64_t>(sps.size()));
          const std::int64_t combos = Mul(per_mbs, static_cast<std::int64_t>(x.mbs.size()));
          if (std::string why = ShapeRefusal(probe, s, t, cp, ep, p); !why.empty()) {
            refuse(why, combos);
            continue;
          }
          const int d = static_cast<int>(s.gpus / (std::int64_t{t} * cp * p));
          for (int mbs : x.mbs) {
            if (stop()) break;
            if (gbs <= 0 || gbs % (std::int64_t{d} * mbs) != 0) {
              refuse("the global batch is not a multiple of d x micro_batch_size", per_mbs);
              continue;
            }
            const int m = static_cast<int>(gbs / (std::int64_t{d} * mbs));
            for (bool sp : sps) {
              for (const auto& [dopt, sharding] : x.dp) {
                for (const ScheduleV& pair : sv) {
                  if (stop()) break;
                  const std::string& sch = pair.schedule;
                  const int v = pair.v;
                  std::string why = pair.refusal;
                  if (!why.empty()) {
                    // a listed v this schedule does not run
                  } else if (static_cast<std::int64_t>(p) * v > n_layers &&
                             !probe.allow_empty_chunks) {
                    why = "p x v exceeds the layers";
                  } else if (!TargetRunsSchedule(s.target, sch)) {
                    why = "megatron runs 1f1b and interleaved only";
                  } else if (p == 1 && v > 1) {
                    why = "interleaving needs p >= 2";
                  } else {
                    ScheduleParams params = probe.schedule_params;
                    params.group = 0;
                    const ScheduleInfo* info = FindSchedule(sch);
                    if (info != nullptr && info->check != nullptr &&
                        !CheckSchedule(sch, p, v, m, params).ok()) {
                      why = "the schedule's rules (" + sch + ")";
                    } else {
                      ScheduleChoice choice{sch, v, params};
                      const std::string r = ChoiceRefusal(
                          s.target, probe.layers, v,
                          info != nullptr && info->placement == StagePlacement::V, p, m,
                          EffectiveGroup(choice, p, m));
                      if (!r.empty()) why = std::string(TargetName(s.target)) + ": " + r;
                    }
                  }
                  if (!why.empty()) {
                    refuse(why, per_sv);
                    continue;
                  }
                  for (const std::string& rc : x.recompute) {
                    for (const std::string& prec : x.precision) {
                      if (auto it = precision_refusal.find(prec); it != precision_refusal.end()) {
                        refuse(it->second, static_cast<std::int64_t>(x.offload.size() *
                                                                     x.moe.size()));
                        continue;
                      }
                      for (const std::string& off : x.offload) {
                       for (const std::string& mo : x.moe) {
                        PlanLayout l;
                        l.t = t, l.cp = cp, l.ep = ep, l.p = p, l.d = d, l.mbs = mbs, l.m = m;
                        l.sp = sp, l.dist_opt = dopt, l.schedule = sch, l.v = v,
                        l.recompute = rc;
                        l.precision = prec;
                        l.sharding = sharding;
                        l.offload = off;
                        l.moe = mo;
                        if (yours != nullptr && same(l, *yours)) {
                          l.yours = true;
                          yours_seen = true;
                        }
                        out.layouts.push_back(std::move(l));
                        ++out.total;
                       }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  // What the clock left unlooked-at: counted, never searched.
  out.not_enumerated = std::max<std::int64_t>(0, all - out.total);
  out.total = std::max(all, out.total);
  if (yours != nullptr && !yours_seen) {
    PlanLayout l = *yours;
    l.yours = true;
    out.layouts.push_back(std::move(l));
    ++out.total;
  }
  return out;
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
