// Loading a plan's space (plan_state.h Load): the job parsed, its own
// layout simulated, the space enumerated, every layout loaded as a run
// config of its own with its memory floor and cheap bound (a large space's
// sample first, its even splits tried: contract 1 of plan_run.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "apps/commands/plan_state.h"
#include "apps/input/apply_layout.h"
#include "apps/input/search_problem.h"
#include "apps/output/output.h"
#include "schedules/schedule.h"
#include "search/parallel_for.h"

namespace ppb::plan_detail {

// The largest space a plan enumerates: 1e12 combinations (the lists'
// product), past which even counting them outlasts any time limit.
constexpr double kMaxPlanSpace = 1e12;

namespace {

// One layout of the plan loaded: the job's document with the layout written
// into it, its search problem, memory floor and cheap bound; or why not.
struct Loaded {
  bool not_loaded = false;  // past the time limit
  std::string refused, example;  // the loader's or the search's key, message
  bool no_fit = false;           // its memory floor does not fit
  std::optional<PlanWork> working;
  std::shared_ptr<const RunConfig> config;  // with `working`
  // What the loader gave for it, from its own document with the default
  // even split: the layouts that differ from it only in schedule and v
  // apply theirs to it (apps/input/apply_layout.h). Kept while they load.
  std::shared_ptr<const RunConfig> base;
};

// The layouts that differ only in schedule and v share a key (the layout
// without those two).
std::string ScheduleFreeKey(PlanLayout l) {
  l.schedule.clear();
  l.v = 0;
  l.yours = false;
  return DescribeLayout(l);
}

// Loads `l`: from `base` (the loader's config of a layout that differs
// from it only in schedule and v) where ApplyScheduleV can, else from its
// own document.
Loaded LoadLayout(const PlanState& st, const RunConfig& probe, const PlanLayout& l,
                  const RunConfig* base = nullptr) {
  Loaded out;
  // Past the time limit the rest is not even loaded: open, unbounded.
  if (st.search.Past()) {
    out.not_loaded = true;
    return out;
  }
  const PlanSettings& s = st.res.settings;
  std::optional<RunConfig> applied;
  if (base != nullptr) applied = ApplyScheduleV(*base, l.schedule, l.v);
  bool own_document = !applied;
  Result<RunConfig> cfg = applied ? Result<RunConfig>(std::move(*applied))
                                  : ParseConfigYaml(LayoutDocument(st.text, l), st.filename,
                                                    CliOverrides{});
  const int n_layers = static_cast<int>(probe.layers.size());
  if (!cfg.ok() && cfg.error().key == "model.layers" && n_layers >= l.p * l.v) {
    // The default even split leaves a chunk empty: load with the most even
    // counts instead (the search chooses the split).
    own_document = false;
    cfg = ParseConfigYaml(LayoutDocument(st.text, l, n_layers), st.filename, CliOverrides{});
  }
  if (!cfg.ok()) {
    out.refused = "the loader: " + cfg.error().key;
    out.example = cfg.error().message;
    return out;
  }
  cfg->search.memory_headroom = s.memory_headroom;
  auto config = std::make_shared<RunConfig>(std::move(*cfg));
  if (own_document && AppliesScheduleV(*config)) out.base = config;
  Result<SearchProblem> problem = BuildSearchProblem(*config);
  if (!problem.ok()) {
    out.refused = "the search: " + problem.error().key;
    out.example = problem.error().message;
    return out;
  }
  PlanWork w;
  w.entry.layout = l;
  w.options = MakeSearchOptions(config->search);
  w.options.target = s.target;
  w.options.setting = LayoutRecomputeSetting(l, s.target);
  w.options.min_capacity = false;
  w.options.open_tree_bound = true;
  w.options.top_k = 1;
  w.options.time_limit_s = 0;
  w.options.node_limit = st.opt.node_limit;
  w.options.threads = st.search.threads;
  w.options.deadline = st.search.deadline;
  w.options.contexts = NewContextCache();
  auto pp = std::make_shared<SearchProblem>(std::move(*problem));
  out.config = config;
  w.entry.problem = pp;
  if (!PlanFloorFits(*pp, w.options.setting)) {
    out.no_fit = true;
    return out;
  }
  w.entry.bound = PlanCheapBound(*pp);
  out.working = std::move(w);
  return out;
}

// The sample a large space (PlanOptions::sample_from) loads and tries
// first (Load): every kSampleStride-th layout (policy: a sixteenth).
constexpr size_t kSampleStride = 16;

}  // namespace

// Parses the job, enumerates the space, loads every layout with its memory
// floor and cheap bound, and simulates the file's own strategy.
Status Load(PlanState& st) {
  st.search.t0 = Clock::now();
  const std::string& filename = st.filename;
  YAML::Node root;
  try {
    root = YAML::Load(st.text);
  } catch (const YAML::Exception& e) {
    return Error{"", filename + ":" + std::to_string(e.mark.line + 1) +
                         ": must be valid YAML; got a syntax error (" + e.msg + ")"};
  }
  if (!root.IsMap() || !root["plan"]) {
    return Error{"plan", filename +
                             ": plan: must be given (a map with gpus and the lists to search); "
                             "got nothing"};
  }
  if (!root["training"] || !root["training"].IsMap() ||
      !root["training"]["global_batch_size"]) {
    const YAML::Node t = root["training"];
    return Error{"training.global_batch_size",
                 filename + (t ? ":" + std::to_string(t.Mark().line + 1) : std::string()) +
                     ": training.global_batch_size: must be given for a plan (m = "
                     "global_batch_size / (d x micro_batch_size) at each layout); got nothing"};
  }
  Result<RunConfig> probe = ParseConfigYaml(ProbeDocument(st.text), filename, st.opt.overrides);
  if (!probe.ok()) return probe.error();
  PlanResult& res = st.res;
  res.settings = *probe->plan;
  res.model_name = probe->model_name;
  res.gpu = probe->hardware.step_model ? probe->hardware.gpu.name : "";
  res.seq = probe->training.seq;
  res.global_batch = probe->training.global_batch;
  const PlanSettings& s = res.settings;
  PlanSearch& plan = st.search;
  plan.target = s.target;
  plan.share = st.opt.share;
  plan.progress = st.opt.progress;
  plan.threads = st.opt.threads > 0 ? st.opt.threads : MakeSearchOptions(probe->search).threads;
  plan.limit = s.time_limit;
  if (plan.limit > 0) plan.deadline = plan.t0 + std::chrono::nanoseconds(plan.limit);

  // The file's own layout and strategy ("your config").
  Result<RunConfig> own = ParseConfigYaml(root, filename, CliOverrides{});
  // A file with a pipeline section of its own says what it would run.
  if (!own.ok() && root["pipeline"]) res.yours_error = own.error().message;
  if (own.ok()) {
    st.yours = OwnLayout(*own);
    if (st.yours &&
        std::int64_t{st.yours->t} * st.yours->cp * st.yours->p * st.yours->d != s.gpus) {
      st.yours.reset();
    }
    if (st.yours) {
      own->search.memory_headroom = s.memory_headroom;  // the plan's, not search's
      st.own_config = std::make_shared<RunConfig>(std::move(*own));
    }
  }
  // The first answer: the file's own strategy, before any layout loads.
  if (st.own_config) {
    if (Result<SearchProblem> own_problem = BuildSearchProblem(*st.own_config); own_problem.ok()) {
      st.own_problem = std::make_shared<SearchProblem>(std::move(*own_problem));
      Result<Candidate> c =
          Evaluate(*st.own_problem, 0, st.own_config->strategy, Placement{}, plan.deadline);
      if (c.ok()) {
        res.yours = *c;
        res.yours_layout = DescribeLayout(*st.yours);
        plan.Offer(*c);
      }
    }
  }
  // A space no plan could look at is refused before it is enumerated.
  const PlanJob job = PlanJobOf(*probe);
  if (const double size = PlanSpaceSize(job, s); size > kMaxPlanSpace) {
    return Error{"plan", FormatError(*probe, Error{"plan", fmt::format(
                                         "must make at most {:g} combinations (the product "
                                         "of its lists' sizes); got about {:.3g}",
                                         kMaxPlanSpace, size)})};
  }
  PlanSpace space = EnumeratePlan(job, s, st.yours ? &*st.yours : nullptr,
                                  [&plan] { return plan.Past(); });
  res.total = space.total;
  res.refused = space.refused;
  // Combinations the time limit left unlooked-at bound nothing.
  res.not_loaded += space.not_enumerated;
  plan.n_layouts = static_cast<int>(space.layouts.size());
  // Every layout loaded on the plan's threads, each from the job's text and
  // its layout or from the loaded config of a layout that differs only in
  // schedule and v (below); what they give is taken in enumeration order.
  std::vector<Loaded> loaded(space.layouts.size());
  const Clock::time_point load_t0 = Clock::now();
  double tries_s = 0;
  // A large space first loads a sample, every kSampleStride-th layout in
  // enumeration order (so every t, p, ... of the space is in it), and
  // tries the sample's even splits: a first answer, and an incumbent that
  // prunes, before the rest loads (DeepSeek-V3 on 1,024 GPUs loads 14,000
  // layouts). The sample is fixed by the space alone, so the answer under
  // a node limit stays the same on any number of threads.
  const size_t n = space.layouts.size();
  const size_t sampled = n >= std::max<size_t>(1, st.opt.sample_from)
                             ? (n + kSampleStride - 1) / kSampleStride
                             : 0;
  if (sampled > 0) {
    ForEachOnThreads(sampled, plan.threads, [&](size_t i) {
      const size_t k = i * kSampleStride;
      loaded[k] = LoadLayout(st, *probe, space.layouts[k]);
    });
    std::vector<PlanWork*> ws;
    for (size_t i = 0; i < sampled; ++i) {
      Loaded& x = loaded[i * kSampleStride];
      if (x.working) ws.push_back(&*x.working);
    }
    std::stable_sort(ws.begin(), ws.end(), [](const PlanWork* a, const PlanWork* b) {
      return a->entry.bound < b->entry.bound;
    });
    // A twentieth of the time from when the sample has loaded (not counted
    // in the load time).
    const Clock::time_point tries_t0 = Clock::now();
    TryEvenSplits(plan, ws,
                  plan.limit > 0
                      ? std::min(plan.deadline,
                                 Clock::now() + std::chrono::nanoseconds(plan.limit / 20))
                      : Clock::time_point::max());
    plan.Report();
    tries_s = Since(tries_t0);
  }
  // The rest: first the first layout (in enumeration order) of each group
  // that differs only in schedule and v, from its own document; then the
  // others of the group from it (ApplyScheduleV), or from their own
  // documents where it cannot.
  std::vector<size_t> leader(n);
  {
    std::map<std::string, size_t> first;
    for (size_t k = 0; k < n; ++k) {
      leader[k] = first.try_emplace(ScheduleFreeKey(space.layouts[k]), k).first->second;
    }
  }
  auto in_sample = [&](size_t k) { return sampled > 0 && k % kSampleStride == 0; };
  std::vector<size_t> leaders, others;
  for (size_t k = 0; k < n; ++k) {
    if (in_sample(k)) continue;
    (leader[k] == k ? leaders : others).push_back(k);
  }
  ForEachOnThreads(leaders.size(), plan.threads, [&](size_t i) {
    const size_t k = leaders[i];
    loaded[k] = LoadLayout(st, *probe, space.layouts[k]);
  });
  // A group's members one after another, and its base let go when the
  // last has loaded (the loaded configs of a large space are most of the
  // plan's memory).
  std::stable_sort(others.begin(), others.end(),
                   [&](size_t a, size_t b) { return leader[a] < leader[b]; });
  std::vector<std::atomic<int>> left(n);
  for (size_t k : others) left[leader[k]].fetch_add(1);
  ForEachOnThreads(others.size(), plan.threads, [&](size_t i) {
    const size_t k = others[i];
    loaded[k] = LoadLayout(st, *probe, space.layouts[k], loaded[leader[k]].base.get());
    if (left[leader[k]].fetch_sub(1) == 1) loaded[leader[k]].base.reset();
  });
  for (Loaded& x : loaded) x.base.reset();
  res.load_s = Since(load_t0) - tries_s;
  for (Loaded& x : loaded) {
    res.loaded += !x.not_loaded;
    if (x.not_loaded) {
      ++res.not_loaded;
    } else if (!x.refused.empty()) {
      res.refused[x.refused]++;
      res.refused_example.try_emplace(x.refused, x.example);
      ++plan.done;
    } else if (x.no_fit) {
      ++res.pruned_by_memory;
      ++plan.done;
    } else {
      x.working->id = st.configs.size();
      st.configs.push_back(std::move(x.config));
      plan.work.push_back(std::move(*x.working));
    }
  }
  plan.pruned_at_load = res.pruned_by_memory;
  // Most promising first (by the cheap bound); ties in enumeration order.
  std::stable_sort(plan.work.begin(), plan.work.end(), [](const PlanWork& a, const PlanWork& b) {
    return a.entry.bound < b.entry.bound;
  });
  return Status();
}

}  // namespace ppb::plan_detail
