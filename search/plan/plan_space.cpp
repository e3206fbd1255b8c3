#include "search/plan/plan_space.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "schedules/schedule.h"
#include "search/deployable.h"
#include "core/precision.h"
#include "core/sharding.h"
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

Lists Resolve(const PlanJob& job, const PlanSettings& s) {
  Lists x;
  // The default t and cp: powers of two inside an NVLink domain, at most 8
  // (an NVL72 rack's 72 would list TP 64; list larger ones to try them).
  const int domain = job.hardware.gpu.nvlink_domain > 0 ? job.hardware.gpu.nvlink_domain : 8;
  const int node = std::min(domain, 8);
  const int decoders = std::max(1, DecoderCount(job.layers));
  x.t = !s.tensor_parallel.empty() ? s.tensor_parallel : PowersOfTwo(node);
  x.cp = !s.context_parallel.empty() ? s.context_parallel : PowersOfTwo(node);
  if (!s.expert_parallel.empty()) {
    x.ep = s.expert_parallel;
  } else if (job.architecture.experts > 0) {
    for (int e : PowersOfTwo(job.architecture.experts)) {
      if (job.architecture.experts % e == 0) x.ep.push_back(e);
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
  const Training& t = job.training;
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
std::string ShapeRefusal(const PlanJob& job, const PlanSettings& s, int t, int cp, int ep,
                         int p) {
  const Architecture& a = job.architecture;
  // Step by step: t, cp and p of 2^21 each multiply past int64.
  const std::int64_t tc = std::int64_t{t} * cp;  // < 2^62
  if (tc > s.gpus || tc * p > s.gpus || s.gpus % (tc * p) != 0) {
    return "t x cp x p does not divide the GPUs";
  }
  const std::int64_t tcp = tc * p;
  if (a.heads > 0 && a.heads % t != 0) return "t does not divide the attention heads";
  if (a.heads > 0 && !a.mla() && a.kv_heads % t != 0) return "t does not divide the KV heads";
  const int domain = job.hardware.gpu.nvlink_domain;
  if (job.hardware.step_model && domain > 0 && t > domain && !job.training.tp_across_nodes) {
    return domain == job.hardware.gpu.gpus_per_node
               ? "t exceeds a node (training.tp_across_nodes is off)"
               : "t exceeds an NVLink domain (training.tp_across_nodes is off)";
  }
  const std::int64_t seq = job.training.seq;
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

bool OwnSharding(const Training& t) {
  return t.sharding.fsdp_on() || t.sharding.strategy >= DpSharding::OptimGrads;
}

double PlanSpaceSize(const PlanJob& job, const PlanSettings& s) {
  const Lists x = Resolve(job, s);
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

PlanSpace EnumeratePlan(const PlanJob& job, const PlanSettings& s, const PlanLayout* yours,
                        const std::function<bool()>& past) {
  PlanSpace out;
  const Lists x = Resolve(job, s);
  // The clock is looked at every 1,024 steps of the enumeration: past it,
  // the combinations not yet looked at are counted as not enumerated.
  std::int64_t steps = 0;
  bool stopped = false;
  auto stop = [&] {
    if (stopped) return true;
    if (past && (++steps & 1023) == 0 && past()) stopped = true;
    return stopped;
  };
  const int n_layers = static_cast<int>(job.layers.size());
  const std::int64_t gbs = job.training.global_batch;
  auto refuse = [&](const std::string& reason, std::int64_t count) {
    out.refused[reason] += count;
    out.total += count;
  };
  bool yours_seen = false;
  const std::string own_precision = RecipeName(job.training.low.recipe);
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
    if (!job.hardware.step_model && *r != Recipe::None) {
      precision_refusal[name] = name + " needs hardware.gpu (the step model)";
    } else if (std::string why = RecipeRuns(*r, job.hardware.gpu); !why.empty()) {
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
          if (std::string why = ShapeRefusal(job, s, t, cp, ep, p); !why.empty()) {
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
                             !job.allow_empty_chunks) {
                    why = "p x v exceeds the layers";
                  } else if (!TargetRunsSchedule(s.target, sch)) {
                    why = "megatron runs 1f1b and interleaved only";
                  } else if (p == 1 && v > 1) {
                    why = "interleaving needs p >= 2";
                  } else {
                    ScheduleParams params = job.schedule_params;
                    params.group = 0;
                    const ScheduleInfo* info = FindSchedule(sch);
                    if (info != nullptr && info->check != nullptr &&
                        !CheckSchedule(sch, p, v, m, params).ok()) {
                      why = "the schedule's rules (" + sch + ")";
                    } else {
                      ScheduleChoice choice{sch, v, params};
                      const std::string r = ChoiceRefusal(
                          s.target, job.layers, v,
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

}  // namespace ppb
