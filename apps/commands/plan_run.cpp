#include "apps/commands/plan_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "apps/input/search_problem.h"
#include "core/engine.h"
#include "core/lower.h"
#include "schedules/schedule.h"
#include "search/deployable.h"
#include "search/first_tries.h"

namespace ppb {

namespace {

using Clock = std::chrono::steady_clock;
constexpr Bytes kMaxBytes = std::numeric_limits<Bytes>::max();
constexpr Nanos kNoBound = std::numeric_limits<Nanos>::max() / 4;  // search's kInf

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The recompute setting a layout's search runs under: none for a
// per-layer search (every setting of the target), else its one mode.
std::optional<RecomputeSetting> SettingOf(const PlanLayout& l, DeployTarget target) {
  if (l.recompute == "search") return std::nullopt;
  RecomputeSetting s;
  s.target = target;
  s.kind = RecomputeSetting::Kind::Every;
  s.mode = l.recompute == "none" ? "" : l.recompute;
  return s;
}

}  // namespace

bool PlanFloorFits(const SearchProblem& problem, const std::optional<RecomputeSetting>& setting) {
  Bytes need = 0;
  const int n = static_cast<int>(problem.layers.size());
  for (int i = 0; i < n; ++i) {
    const Layer& l = problem.layers[static_cast<size_t>(i)];
    // The least stash of the modes the layer may take (a uniform setting:
    // its one mode; Every's choice does not depend on the stage).
    Bytes stash = kMaxBytes;
    const std::vector<std::uint8_t> modes =
        setting && setting->kind == RecomputeSetting::Kind::Every
            ? AllowedModes(*setting, problem.layers, 0, n, i)
            : std::vector<std::uint8_t>{};
    if (modes.empty()) {
      stash = l.activation;
      for (const RecomputeOption& o : l.recompute) stash = std::min(stash, o.retained_activation);
    } else {
      for (std::uint8_t x : modes) {
        stash = std::min(stash, x == 0 ? l.activation
                                       : l.recompute[static_cast<size_t>(x - 1)].retained_activation);
      }
    }
    need += l.static_memory + stash;
  }
  Bytes have = 0;
  for (const Device& d : problem.cluster.devices) have += d.memory_capacity;
  return need <= have;
}

namespace {

// The pipeline part of PlanCheapBound under one schedule choice, in ns on
// speed-1 devices (see plan_run.h).
long double FillDrainBound(const SearchProblem& pr, const ScheduleChoice& choice) {
  const int p = pr.p;
  const long double m = pr.m;
  long double total = 0;
  for (const Layer& l : pr.layers) total += static_cast<long double>(l.forward + l.backward());
  long double best = total * m / p;  // perfect balance
  const ScheduleInfo* info = FindSchedule(choice.schedule);
  if (info == nullptr || info->placement != StagePlacement::Loop || pr.allow_empty_chunks ||
      p < 2 || total <= 0) {
    return best;
  }
  // Fused backward: every op of rank d lies between the forwards and after
  // the backwards of the stages before its first (Sum_{s<d} F_s + B_s);
  // with W split off (zero-bubble schedules) only the forwards count.
  const bool fused = choice.schedule == "gpipe" || choice.schedule == "1f1b" ||
                     choice.schedule == "interleaved" || choice.schedule == "looped-bfs";
  std::vector<long double> c;  // what each layer adds before/after a rank
  long double f = 1;           // least share of a layer's work that counts
  for (const Layer& l : pr.layers) {
    const long double w = static_cast<long double>(l.forward + l.backward());
    const long double x = fused ? w : static_cast<long double>(l.forward);
    c.push_back(x);
    if (w > 0) f = std::min(f, x / w);
  }
  // Ranks 0..d-1's first stages hold at least d distinct layers: rank d
  // waits at least the d smallest; summed over the ranks, T >= (m W +
  // Sum_d S_d) / p.
  std::sort(c.begin(), c.end());
  long double sum_s = 0, s_d = 0;
  for (int d = 0; d < p && d <= static_cast<int>(c.size()); ++d) {
    sum_s += s_d;
    if (d < static_cast<int>(c.size())) s_d += c[static_cast<size_t>(d)];
  }
  best = std::max(best, (total * m + sum_s) / p);
  // v = 1: rank d's stage is its whole work W_d, and T >= m W_d + f
  // Sum_{d'<d} W_d'; the least T over every split (W_d real) equalises
  // them: T = f W / (1 - (1 - f/m)^p).
  if (choice.v == 1 && f > 0) {
    const long double denom = 1 - std::pow(1 - f / m, static_cast<long double>(p));
    if (denom > 0) best = std::max(best, f * total / denom);
  }
  return best;
}

}  // namespace

Nanos PlanCheapBound(const SearchProblem& problem) {
  Nanos opt = 0;
  for (const Layer& l : problem.layers) opt += l.optimizer;
  double speed = -1;
  for (const Device& d : problem.cluster.devices) {
    if (speed < 0) speed = d.speed;
    if (d.speed != speed) speed = 0;  // mixed speeds: perfect balance only
  }
  long double pipe = 0;
  if (speed > 0) {
    pipe = std::numeric_limits<long double>::max();
    for (const ScheduleChoice& c : problem.choices) {
      pipe = std::min(pipe, FillDrainBound(problem, c) / static_cast<long double>(speed));
    }
  } else {
    long double work = 0, total_speed = 0;
    for (const Layer& l : problem.layers) {
      work += static_cast<long double>(l.forward + l.backward());
    }
    for (const Device& d : problem.cluster.devices) total_speed += d.speed;
    pipe = total_speed > 0 ? work * problem.m / total_speed : 0;
  }
  // Floored, less a rounding slack of 1 ns per layer.
  const auto p = static_cast<Nanos>(std::floor(pipe)) - static_cast<Nanos>(problem.layers.size());
  return std::max<Nanos>(0, p) + (problem.tail.enabled ? opt / std::max(1, problem.p) : 0);
}

namespace {

// The layout with its recompute choice "search": whose bounds hold for its
// uniform choices.
std::string FreeKey(PlanLayout l) {
  l.recompute = "search";
  l.yours = false;
  return DescribeLayout(l);
}

// Whether every stage of `st` takes the per-layer modes `setting` gives it
// (no setting: any).
bool Allowed(const std::optional<RecomputeSetting>& setting, const std::vector<Layer>& layers,
             const Strategy& st) {
  if (!setting) return true;
  int first = 0;
  for (int count : st.layers_per_stage) {
    if (!StageAllowed(*setting, layers, first, first + count, st.recompute)) return false;
    first += count;
  }
  return true;
}

// The even split with mode `mode` ("" none) on every layer that offers it.
Strategy EvenWith(const SearchProblem& problem, int v, const std::string& mode) {
  Strategy s = EvenStrategy(problem.layers, problem.p, v);
  return mode.empty() ? s : WithModeEverywhere(std::move(s), problem.layers, mode);
}

bool VPlaced(const std::string& schedule, int v) {
  const ScheduleInfo* info = FindSchedule(schedule);
  return info != nullptr && info->placement == StagePlacement::V && v == 2;
}

// The entry's best simulated in full: its step parts and figures.
void Describe(PlanEntry& e) {
  const RunConfig cfg =
      e.note == "your config" ? *e.config : CandidateConfig(*e.config, *e.problem, *e.best);
  Result<PreparedRun> run = Prepare(cfg);
  if (!run.ok()) return;
  Engine engine;
  const SimResult r = engine.Run(run->spec, run->program, SimOptions{});
  if (run->spec.tail.enabled && !r.steps.empty()) {
    e.parts = DeviceStepParts(r, r.breakdown.bottleneck);
  }
  e.metrics = StepMetricsOf(cfg, cfg.strategy.recompute, cfg.shape.m, r.makespan);
}

struct Working {
  PlanEntry entry;
  SearchOptions options;
  bool retry = false;  // its last search stopped at its time share
};

}  // namespace

Result<PlanResult> RunPlan(std::string_view text, std::string_view filename,
                           const PlanOptions& opt) {
  const auto t0 = Clock::now();
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error{"", std::string(filename) + ":" + std::to_string(e.mark.line + 1) +
                         ": must be valid YAML; got a syntax error (" + e.msg + ")"};
  }
  if (!root.IsMap() || !root["plan"]) {
    return Error{"plan", std::string(filename) +
                             ": plan: must be given (a map with gpus and the lists to search); "
                             "got nothing"};
  }
  if (!root["training"] || !root["training"].IsMap() ||
      !root["training"]["global_batch_size"]) {
    const YAML::Node t = root["training"];
    return Error{"training.global_batch_size",
                 std::string(filename) +
                     (t ? ":" + std::to_string(t.Mark().line + 1) : std::string()) +
                     ": training.global_batch_size: must be given for a plan (m = "
                     "global_batch_size / (d x micro_batch_size) at each layout); got nothing"};
  }
  Result<RunConfig> probe = ParseConfigYaml(ProbeDocument(text), filename, opt.overrides);
  if (!probe.ok()) return probe.error();
  PlanResult res;
  res.settings = *probe->plan;
  res.model_name = probe->model_name;
  res.gpu = probe->hardware.step_model ? probe->hardware.gpu.name : "";
  res.seq = probe->training.seq;
  res.global_batch = probe->training.global_batch;
  const PlanSettings& s = res.settings;
  const Nanos limit = s.time_limit;
  const auto deadline = limit > 0 ? t0 + std::chrono::nanoseconds(limit) : Clock::time_point::max();
  auto left_s = [&]() {
    return limit > 0 ? std::chrono::duration<double>(deadline - Clock::now()).count() : 0.0;
  };
  auto past = [&]() { return limit > 0 && Clock::now() >= deadline; };

  // The file's own layout and strategy ("your config").
  std::optional<PlanLayout> yours;
  std::shared_ptr<RunConfig> own_config;
  if (Result<RunConfig> own = ParseConfigYaml(root, filename, CliOverrides{}); own.ok()) {
    yours = OwnLayout(*own);
    if (yours && std::int64_t{yours->t} * yours->cp * yours->p * yours->d != s.gpus) {
      yours.reset();
    }
    if (yours) own_config = std::make_shared<RunConfig>(std::move(*own));
  }
  PlanSpace space = EnumeratePlan(*probe, s, yours ? &*yours : nullptr);
  res.total = space.total;
  res.refused = space.refused;

  // 1. Load every layout, its memory floor and its cheap bound.
  std::vector<Working> work;
  const int n_layouts = static_cast<int>(space.layouts.size());
  int done = 0;
  Nanos incumbent = kNoBound;
  auto open_bound = [&]() {
    Nanos lb = incumbent;
    for (const Working& w : work) {
      if (!w.entry.closed) lb = std::min(lb, w.entry.bound);
    }
    return lb;  // an open layout bounded above the incumbent is settled
  };
  auto report = [&]() {
    if (!opt.progress) return;
    PlanProgress p;
    p.elapsed_s = Since(t0);
    p.done = done;
    p.total = n_layouts;
    p.pruned = res.pruned_by_bound + res.pruned_by_memory;
    p.best = incumbent < kNoBound ? incumbent : -1;
    const Nanos lb = open_bound();
    p.gap = p.best > 0 && lb < kNoBound
                ? static_cast<double>(p.best - std::min(p.best, lb)) / static_cast<double>(p.best)
                : 1.0;
    opt.progress(p);
  };
  for (PlanLayout& l : space.layouts) {
    Result<RunConfig> cfg = ParseConfigYaml(LayoutDocument(text, l), filename, CliOverrides{});
    if (!cfg.ok()) {
      res.refused["the loader: " + cfg.error().key]++;
      ++done;
      continue;
    }
    Result<SearchProblem> problem = BuildSearchProblem(*cfg);
    if (!problem.ok()) {
      res.refused["the search: " + problem.error().key]++;
      ++done;
      continue;
    }
    Working w;
    w.entry.layout = l;
    w.entry.note = l.yours ? "your layout" : "";
    w.options = MakeSearchOptions(cfg->search);
    w.options.target = s.target;
    w.options.setting = SettingOf(l, s.target);
    w.options.min_capacity = false;
    w.options.open_tree_bound = true;
    w.options.top_k = 1;
    w.options.time_limit_s = 0;
    w.options.node_limit = opt.node_limit;
    if (opt.threads > 0) w.options.threads = opt.threads;
    w.options.deadline = deadline;
    w.options.contexts = NewContextCache();
    auto pp = std::make_shared<SearchProblem>(std::move(*problem));
    w.entry.config = std::make_shared<RunConfig>(std::move(*cfg));
    w.entry.problem = pp;
    if (!PlanFloorFits(*pp, w.options.setting)) {
      ++res.pruned_by_memory;
      ++done;
      continue;
    }
    w.entry.bound = PlanCheapBound(*pp);
    work.push_back(std::move(w));
  }
  // Most promising first (by the cheap bound); ties in enumeration order.
  std::stable_sort(work.begin(), work.end(), [](const Working& a, const Working& b) {
    return a.entry.bound < b.entry.bound;
  });

  auto offer = [&](const Candidate& c) {
    if (!c.feasible || c.makespan >= incumbent) return;
    incumbent = c.makespan;
    const double t = Since(t0);
    if (res.first_answer_s < 0) res.first_answer_s = t;
    res.incumbents.emplace_back(t, c.makespan);
  };
  // A layout's strategies: only those its recompute choice allows (a
  // search's first tries may offer others).
  auto keep = [&](PlanEntry& e, const Candidate& c) {
    if (!c.feasible) return;
    if (!Allowed(SettingOf(e.layout, s.target), e.problem->layers, c.strategy)) return;
    if (!e.best || Better(c, *e.best)) e.best = c;
    offer(c);
  };

  // 2. First answers: the file's own strategy, then each layout's even split.
  if (own_config) {
    if (Result<SearchProblem> own_problem = BuildSearchProblem(*own_config); own_problem.ok()) {
      Result<Candidate> c =
          Evaluate(*own_problem, 0, own_config->strategy, Placement{}, deadline);
      if (c.ok()) {
        res.yours = *c;
        res.yours_layout = DescribeLayout(*yours);
        offer(*c);
      }
    }
  }
  const auto first_end =
      limit > 0 ? t0 + std::chrono::nanoseconds(limit / 10) : Clock::time_point::max();
  for (Working& w : work) {
    if (Clock::now() >= first_end || w.entry.bound >= incumbent) break;
    const SearchProblem& pr = *w.entry.problem;
    const int v = pr.choices.front().v;
    std::vector<std::string> modes;
    if (w.entry.layout.recompute == "search") {
      modes.push_back("");
      for (const std::string& m : RecomputeModeNames(pr.layers)) modes.push_back(m);
    } else {
      modes.push_back(w.entry.layout.recompute == "none" ? "" : w.entry.layout.recompute);
    }
    for (const std::string& mode : modes) {
      const Strategy st = EvenWith(pr, v, mode);
      if (s.target != DeployTarget::Any &&
          !Deployable(s.target, pr.layers, st, pr.p, v, VPlaced(pr.choices.front().schedule, v))) {
        continue;
      }
      Result<Candidate> c = Evaluate(pr, 0, st, Placement{}, first_end);
      if (!c.ok()) break;
      if (c->feasible) {
        keep(w.entry, *c);
        break;
      }
    }
  }
  report();

  // The best known bound of each layout's per-layout recompute search (its
  // optimum when closed), which bounds its uniform choices too.
  std::map<std::string, Nanos> free_known;
  auto learn = [&](const Working& w) {
    if (w.entry.layout.recompute != "search") return;
    Nanos x = w.entry.bound;
    if (w.entry.closed && w.entry.searched) x = w.entry.best ? w.entry.best->makespan : kNoBound;
    Nanos& known = free_known.try_emplace(FreeKey(w.entry.layout), 0).first->second;
    known = std::max(known, x);
  };
  // One layout's search, with the incumbent as cutoff and 1/open of the
  // time left.
  auto search_one = [&](Working& w, size_t open) {
    SearchOptions o = w.options;
    if (limit > 0) o.time_limit_s = std::max(1e-3, left_s() / static_cast<double>(open));
    o.cutoff = incumbent < kNoBound ? incumbent : -1;
    Result<SearchResult> r = Search(*w.entry.problem, o);
    if (!r.ok()) {
      res.refused["the search: " + r.error().key]++;
      w.entry.closed = true;
      return;
    }
    if (!w.entry.searched) ++res.searched;
    w.entry.searched = true;
    for (const Candidate& c : r->top) keep(w.entry, c);
    if (r->found) keep(w.entry, r->best);
    w.entry.closed = r->proved_optimal || r->proved_infeasible;
    if (!w.entry.closed) w.entry.bound = std::max(w.entry.bound, r->lower_bound);
    // Only a search stopped by its time share may do better with more.
    w.retry = r->stop_reason == "time limit";
    learn(w);
    if (!w.entry.closed && res.stop_reason.empty()) res.stop_reason = r->stop_reason;
  };



  // 3. The searches, in order of the cheap bound; each layout's root bound
  // just before its search.
  for (size_t i = 0; i < work.size(); ++i) {
    Working& w = work[i];
    if (w.entry.bound >= incumbent) {
      // Every layout from here on has a cheap bound at least this one's.
      for (size_t k = i; k < work.size(); ++k) {
        work[k].entry.closed = true;
        ++res.pruned_by_bound;
      }
      done += static_cast<int>(work.size() - i);
      break;
    }
    if (past()) break;
    // The root bound, and the open-tree bound of what could beat the
    // incumbent, within a share of the time left.
    size_t waiting = 0;
    for (size_t k = i; k < work.size() && work[k].entry.bound < incumbent; ++k) ++waiting;
    SearchOptions bo = w.options;
    if (limit > 0) {
      const double share = std::max(1e-3, left_s() / static_cast<double>(waiting) / 2);
      bo.deadline = std::min(deadline, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(share)));
    }
    const Nanos below = incumbent < kNoBound ? incumbent : -1;
    Result<Nanos> b = LowerBound(*w.entry.problem, bo, below);
    // A uniform choice's strategies are some of the per-layer search's:
    // what bounds that (searched before it) bounds it too.
    if (b.ok() && *b < kNoBound && bo.setting) {
      if (auto it = free_known.find(FreeKey(w.entry.layout)); it != free_known.end()) {
        b = std::max(*b, it->second);
      }
    }    if (!b.ok()) {
      res.refused["the schedule: " + b.error().key]++;
      w.entry.closed = true;
      ++done;
      continue;
    }
    if (*b >= kNoBound) {
      ++res.pruned_by_memory;  // no split the target can run fits
      w.entry.closed = true;
      ++done;
      continue;
    }
    w.entry.bound = std::max(w.entry.bound, *b);
    learn(w);
    if (w.entry.bound >= incumbent) {
      ++res.pruned_by_bound;
      w.entry.closed = true;
      ++done;
      continue;
    }
    if (past()) break;
    // An equal share of the time left among the layouts that may still
    // beat the incumbent.
    size_t open = 0;
    for (size_t k = i; k < work.size() && work[k].entry.bound < incumbent; ++k) ++open;
    search_one(w, open);
    ++done;
    report();
  }
  // Time left: the layouts whose search stopped at its share, searched again
  // (most promising first) with the better incumbent as cutoff and the time
  // left shared among them.
  while (limit > 0 && !past()) {
    std::vector<size_t> again;
    for (size_t k = 0; k < work.size(); ++k) {
      const Working& w = work[k];
      if (!w.entry.closed && w.entry.searched && w.retry && w.entry.bound < incumbent) {
        again.push_back(k);
      }
    }
    if (again.empty()) break;
    std::stable_sort(again.begin(), again.end(),
                     [&](size_t a, size_t b) { return work[a].entry.bound < work[b].entry.bound; });
    for (size_t n = 0; n < again.size() && !past(); ++n) {
      Working& w = work[again[n]];
      if (w.entry.bound >= incumbent) continue;
      search_one(w, again.size() - n);
      report();
    }
  }

  // 4. The proof or the gap.
  const Nanos lb = open_bound();
  bool all_closed = true;
  for (const Working& w : work) {
    all_closed = all_closed && (w.entry.closed || w.entry.bound >= incumbent);
  }
  res.found = incumbent < kNoBound;
  res.proved_optimal = res.found && all_closed;
  res.lower_bound = lb < kNoBound ? lb : 0;
  if (res.found) {
    res.gap = static_cast<double>(incumbent - std::min(incumbent, res.lower_bound)) /
              static_cast<double>(incumbent);
  }
  // Open at the end: a search stopped at its node limit, or time ran out.
  if (all_closed) {
    res.stop_reason = res.found ? "proved optimal" : "nothing fits";
  } else if (res.stop_reason != "node limit" || past()) {
    res.stop_reason = "time limit";
  }
  // The best layouts, one entry each (the file's own strategy as its own).
  std::vector<PlanEntry> entries;
  for (Working& w : work) {
    if (w.entry.best) entries.push_back(std::move(w.entry));
  }
  if (res.yours && res.yours->feasible) {
    PlanEntry e;
    e.layout = *yours;
    e.layout.yours = true;
    e.layout.recompute = "yours";
    e.note = "your config";
    e.best = *res.yours;
    e.closed = true;
    e.config = own_config;
    if (Result<SearchProblem> own_problem = BuildSearchProblem(*own_config); own_problem.ok()) {
      e.problem = std::make_shared<SearchProblem>(std::move(*own_problem));
      entries.push_back(std::move(e));
    }
  }
  // Fastest first; ties in bound order (the file's own last).
  std::vector<std::pair<Nanos, size_t>> order;
  for (size_t i = 0; i < entries.size(); ++i) {
    order.emplace_back(entries[i].best.value_or(Candidate{}).makespan, i);
  }
  std::stable_sort(order.begin(), order.end());
  std::vector<PlanEntry> sorted;
  for (const auto& [mk, i] : order) {
    if (static_cast<int>(sorted.size()) >= s.top) break;
    sorted.push_back(std::move(entries[i]));
  }
  entries = std::move(sorted);
  for (PlanEntry& e : entries) Describe(e);
  res.top = std::move(entries);
  res.solve_time_s = Since(t0);
  return res;
}

}  // namespace ppb
