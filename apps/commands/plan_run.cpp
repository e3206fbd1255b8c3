#include "apps/commands/plan_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
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

bool PlanFloorFits(const SearchProblem& problem) {
  Bytes need = 0;
  for (const Layer& l : problem.layers) {
    Bytes stash = l.activation;
    for (const RecomputeOption& o : l.recompute) stash = std::min(stash, o.retained_activation);
    need += l.static_memory + stash;
  }
  Bytes have = 0;
  for (const Device& d : problem.cluster.devices) have += d.memory_capacity;
  return need <= have;
}

Nanos PlanCheapBound(const SearchProblem& problem) {
  long double work = 0;
  Nanos opt = 0;
  for (const Layer& l : problem.layers) {
    work += static_cast<long double>(l.forward + l.backward());
    opt += l.optimizer;
  }
  double speed = 0;
  for (const Device& d : problem.cluster.devices) speed += d.speed;
  if (speed <= 0) return 0;
  const auto pipe = static_cast<Nanos>(std::floor(work * problem.m / speed));
  return pipe + (problem.tail.enabled ? opt / std::max(1, problem.p) : 0);
}

namespace {

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
    w.options.open_tree_bound = false;
    w.options.top_k = 1;
    w.options.time_limit_s = 0;
    w.options.node_limit = opt.node_limit;
    if (opt.threads > 0) w.options.threads = opt.threads;
    w.options.deadline = deadline;
    w.options.contexts = NewContextCache();
    auto pp = std::make_shared<SearchProblem>(std::move(*problem));
    w.entry.config = std::make_shared<RunConfig>(std::move(*cfg));
    w.entry.problem = pp;
    if (!PlanFloorFits(*pp)) {
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
  auto keep = [&](PlanEntry& e, const Candidate& c) {
    if (!c.feasible) return;
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
    Result<Nanos> b = LowerBound(*w.entry.problem, w.options);
    if (!b.ok()) {
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
