#include "apps/commands/plan_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/input/search_problem.h"
#include "apps/output/output.h"
#include "core/engine.h"
#include "core/lower.h"
#include "schedules/schedule.h"
#include "search/deployable.h"
#include "search/first_tries.h"
#include "search/parallel_for.h"

namespace ppb {

// The largest space a plan enumerates: 1e12 combinations (the lists'
// product), past which even counting them outlasts any time limit.
constexpr double kMaxPlanSpace = 1e12;

namespace {

using Clock = std::chrono::steady_clock;
#define PPB_PLAN_TRY(expr)                 \
  do {                                     \
    if (Status s_ = (expr); !s_.ok()) {    \
      return s_.error();                   \
    }                                      \
  } while (0)
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

// The layout with its recompute choice "search": whose bounds hold for its
// uniform choices.
std::string FreeKey(PlanLayout l) {
  l.recompute = "search";
  l.yours = false;
  return DescribeLayout(l);
}

// The even split with mode `mode` ("" none) on every layer that offers it.
Strategy EvenWith(const SearchProblem& problem, int v, const std::string& mode) {
  Strategy s = EvenStrategy(problem.layers, problem.p, v);
  return mode.empty() ? s : WithModeEverywhere(std::move(s), problem.layers, mode);
}

// The entry's best simulated in full: its step parts and figures.
void Describe(PlanEntry& e) {
  const RunConfig cfg = EntryConfig(e);
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
  bool retry = false;    // its last search stopped at its time share
  bool tried_even = false;  // TryEvenSplits has evaluated it
  bool claimed = false;  // this process settled it (always, without MPI)
  // How it was settled: "" (open or not reached), "memory" (no split fits),
  // "bound", "searched", or "refused: <why>".
  std::string outcome;
};

// Outcomes by precedence, for merging parts: what one process learned
// about a layout wins over less.
int Rank(const std::string& outcome) {
  if (outcome == "searched") return 4;
  if (outcome == "memory") return 3;
  if (outcome == "bound") return 2;
  if (!outcome.empty()) return 1;  // refused
  return 0;
}

// Everything one plan holds between its phases.
struct PlanState {
  std::string text, filename;
  PlanOptions opt;
  Clock::time_point t0;
  Clock::time_point deadline = Clock::time_point::max();
  Nanos limit = 0;
  PlanResult res;
  std::optional<PlanLayout> yours;
  std::shared_ptr<RunConfig> own_config;
  std::shared_ptr<const SearchProblem> own_problem;  // built once, with own_config
  std::vector<Working> work;  // in order of the cheap bound
  int done = 0, n_layouts = 0;
  int threads = 1;  // the plan's threads (PlanOptions::threads, else the search's)
  Nanos incumbent = kNoBound;
  std::map<std::string, Nanos> free_known;

  double LeftS() const {
    return limit > 0 ? std::chrono::duration<double>(deadline - Clock::now()).count() : 0.0;
  }
  bool Past() const { return limit > 0 && Clock::now() >= deadline; }
  Nanos OpenBound() const {
    Nanos lb = incumbent;
    for (const Working& w : work) {
      if (!w.entry.closed) lb = std::min(lb, w.entry.bound);
    }
    return lb;  // an open layout bounded above the incumbent is settled
  }
  void Report() {
    if (!opt.progress) return;
    PlanProgress p;
    p.elapsed_s = Since(t0);
    p.done = done;
    p.total = n_layouts;
    p.pruned = res.pruned_by_memory;
    for (const Working& w : work) p.pruned += w.outcome == "bound" || w.outcome == "memory";
    p.best = incumbent < kNoBound ? incumbent : -1;
    const Nanos lb = OpenBound();
    p.gap = p.best > 0 && lb < kNoBound
                ? static_cast<double>(p.best - std::min(p.best, lb)) / static_cast<double>(p.best)
                : 1.0;
    opt.progress(p);
  }
  void Offer(const Candidate& c) {
    if (!c.feasible || c.makespan >= incumbent) return;
    incumbent = c.makespan;
    const double t = Since(t0);
    if (res.first_answer_s < 0) res.first_answer_s = t;
    res.incumbents.emplace_back(t, c.makespan);
  }
  // A layout's strategies: only those its recompute choice allows (a
  // search's first tries may offer others).
  void Keep(PlanEntry& e, const Candidate& c) {
    if (!c.feasible) return;
    const std::optional<RecomputeSetting> setting = SettingOf(e.layout, res.settings.target);
    if (setting && !SettingAllows(*setting, e.problem->layers, c.strategy)) return;
    if (!e.best || Better(c, *e.best)) e.best = c;
    Offer(c);
  }
  // The best known bound of a layout's per-layout recompute search (its
  // optimum when closed), which bounds its uniform choices too.
  void Learn(const Working& w) {
    if (w.entry.layout.recompute != "search") return;
    Nanos x = w.entry.bound;
    if (w.entry.closed && w.entry.searched) x = w.entry.best ? w.entry.best->makespan : kNoBound;
    Nanos& known = free_known.try_emplace(FreeKey(w.entry.layout), 0).first->second;
    known = std::max(known, x);
  }
  // The global incumbent of every process (MPI).
  void Exchange() {
    if (opt.share == nullptr || !opt.share->exchange) return;
    const Nanos g = opt.share->exchange(incumbent < kNoBound ? incumbent : -1);
    if (g >= 0) incumbent = std::min(incumbent, g);
  }
};

// One layout of the plan loaded: the job's document with the layout written
// into it, its search problem, memory floor and cheap bound; or why not.
struct Loaded {
  bool not_loaded = false;  // past the time limit
  std::string refused, example;  // the loader's or the search's key, message
  bool no_fit = false;           // its memory floor does not fit
  std::optional<Working> working;
};

Loaded LoadLayout(const PlanState& st, const RunConfig& probe, const PlanLayout& l) {
  Loaded out;
  // Past the time limit the rest is not even loaded: open, unbounded.
  if (st.Past()) {
    out.not_loaded = true;
    return out;
  }
  const PlanSettings& s = st.res.settings;
  Result<RunConfig> cfg = ParseConfigYaml(LayoutDocument(st.text, l), st.filename, CliOverrides{});
  const int n_layers = static_cast<int>(probe.layers.size());
  if (!cfg.ok() && cfg.error().key == "model.layers" && n_layers >= l.p * l.v) {
    // The default even split leaves a chunk empty: load with the most even
    // counts instead (the search chooses the split).
    cfg = ParseConfigYaml(LayoutDocument(st.text, l, n_layers), st.filename, CliOverrides{});
  }
  if (!cfg.ok()) {
    out.refused = "the loader: " + cfg.error().key;
    out.example = cfg.error().message;
    return out;
  }
  cfg->search.memory_headroom = s.memory_headroom;
  Result<SearchProblem> problem = BuildSearchProblem(*cfg);
  if (!problem.ok()) {
    out.refused = "the search: " + problem.error().key;
    out.example = problem.error().message;
    return out;
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
  w.options.node_limit = st.opt.node_limit;
  w.options.threads = st.threads;
  w.options.deadline = st.deadline;
  w.options.contexts = NewContextCache();
  auto pp = std::make_shared<SearchProblem>(std::move(*problem));
  w.entry.config = std::make_shared<RunConfig>(std::move(*cfg));
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

void TryEvenSplits(PlanState& st, const std::vector<Working*>& ws, Clock::time_point end);

// Parses the job, enumerates the space, loads every layout with its memory
// floor and cheap bound, and simulates the file's own strategy.
Status Load(PlanState& st) {
  st.t0 = Clock::now();
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
  st.threads = st.opt.threads > 0 ? st.opt.threads : MakeSearchOptions(probe->search).threads;
  st.limit = s.time_limit;
  if (st.limit > 0) st.deadline = st.t0 + std::chrono::nanoseconds(st.limit);

  // The file's own layout and strategy ("your config").
  Result<RunConfig> own = ParseConfigYaml(root, filename, CliOverrides{});
  // A file with a pipeline section of its own says what it would run.
  if (!own.ok() && root["pipeline"]) res.yours_error = own.error().message;
  if (own.ok()) {
    st.yours = OwnLayout(*own);
    if (st.yours && std::int64_t{st.yours->t} * st.yours->cp * st.yours->p * st.yours->d != s.gpus) {
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
          Evaluate(*st.own_problem, 0, st.own_config->strategy, Placement{}, st.deadline);
      if (c.ok()) {
        res.yours = *c;
        res.yours_layout = DescribeLayout(*st.yours);
        st.Offer(*c);
      }
    }
  }
  // A space no plan could look at is refused before it is enumerated.
  if (const double size = PlanSpaceSize(*probe, s); size > kMaxPlanSpace) {
    return Error{"plan", FormatError(*probe, Error{"plan", fmt::format(
                                         "must make at most {:g} combinations (the product "
                                         "of its lists' sizes); got about {:.3g}",
                                         kMaxPlanSpace, size)})};
  }
  PlanSpace space = EnumeratePlan(*probe, s, st.yours ? &*st.yours : nullptr,
                                  [&st] { return st.Past(); });
  res.total = space.total;
  res.refused = space.refused;
  // Combinations the time limit left unlooked-at bound nothing.
  res.not_loaded += space.not_enumerated;
  st.n_layouts = static_cast<int>(space.layouts.size());
  // Every layout loaded on the plan's threads, each on its own (the job's
  // text, its layout); what they give is taken in enumeration order.
  std::vector<Loaded> loaded(space.layouts.size());
  const Clock::time_point load_t0 = Clock::now();
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
    ForEachOnThreads(sampled, st.threads, [&](size_t i) {
      const size_t k = i * kSampleStride;
      loaded[k] = LoadLayout(st, *probe, space.layouts[k]);
    });
    std::vector<Working*> ws;
    for (size_t i = 0; i < sampled; ++i) {
      Loaded& x = loaded[i * kSampleStride];
      if (x.working) ws.push_back(&*x.working);
    }
    std::stable_sort(ws.begin(), ws.end(), [](const Working* a, const Working* b) {
      return a->entry.bound < b->entry.bound;
    });
    // A twentieth of the time from when the sample has loaded.
    TryEvenSplits(st, ws,
                  st.limit > 0 ? std::min(st.deadline,
                                          Clock::now() + std::chrono::nanoseconds(st.limit / 20))
                               : Clock::time_point::max());
    st.Report();
  }
  ForEachOnThreads(n - sampled, st.threads, [&](size_t i) {
    // The i-th layout outside the sample.
    const size_t k = sampled == 0 ? i : i + i / (kSampleStride - 1) + 1;
    loaded[k] = LoadLayout(st, *probe, space.layouts[k]);
  });
  res.load_s = Since(load_t0);
  for (Loaded& x : loaded) {
    res.loaded += !x.not_loaded;
    if (x.not_loaded) {
      ++res.not_loaded;
    } else if (!x.refused.empty()) {
      res.refused[x.refused]++;
      res.refused_example.try_emplace(x.refused, x.example);
      ++st.done;
    } else if (x.no_fit) {
      ++res.pruned_by_memory;
      ++st.done;
    } else {
      st.work.push_back(std::move(*x.working));
    }
  }
  // Most promising first (by the cheap bound); ties in enumeration order.
  std::stable_sort(st.work.begin(), st.work.end(), [](const Working& a, const Working& b) {
    return a.entry.bound < b.entry.bound;
  });
  return Status();
}

// Each of `ws` in turn (most promising first): its even split with its
// recompute choice (no recompute, then each mode the layers offer, for a
// per-layer choice), the first that fits kept; until `end`, or a layout
// bounded at the incumbent.
void TryEvenSplits(PlanState& st, const std::vector<Working*>& ws, Clock::time_point end) {
  const PlanSettings& s = st.res.settings;
  for (Working* wp : ws) {
    Working& w = *wp;
    if (Clock::now() >= end || w.entry.bound >= st.incumbent) break;
    w.tried_even = true;
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
      const Strategy strategy = EvenWith(pr, v, mode);
      if (s.target != DeployTarget::Any &&
          !Deployable(s.target, pr.layers, strategy, pr.p, v,
                      PlacementOf(pr.choices.front().schedule, v) == StagePlacement::V)) {
        continue;
      }
      Result<Candidate> c = Evaluate(pr, 0, strategy, Placement{}, end);
      if (!c.ok()) break;
      if (c->feasible) {
        st.Keep(w.entry, *c);
        break;
      }
    }
  }
}

// First answers: each layout's even split (TryEvenSplits), in order of
// bound, within the first tenth of the time; those the sample of a large
// space tried while loading are not tried again.
void FirstAnswers(PlanState& st) {
  const auto first_end = st.limit > 0 ? st.t0 + std::chrono::nanoseconds(st.limit / 10)
                                      : Clock::time_point::max();
  std::vector<Working*> ws;
  for (Working& w : st.work) {
    if (!w.tried_even) ws.push_back(&w);
  }
  TryEvenSplits(st, ws, first_end);
  st.Report();
}

// Layouts settled at once (Explore's rounds): each round's layouts are
// bounded and searched against the incumbent of the round's start, on up
// to this many threads, and what they learn is taken in their order after
// the round; so the answer, under a node limit, is the same on any number
// of threads (policy, not physics: more layouts per round keep more cores
// busy and search more of them against an older incumbent).
constexpr size_t kPlanRound = 8;

// What one layout's turn in a round found, taken in order after the round.
struct Turn {
  bool learn = false;  // its bound is known (PlanState::Learn)
  std::optional<Result<SearchResult>> search;
};

// A turn's time: the time left over the rounds that the `waiting` layouts
// take on `par` threads.
double TurnShareS(const PlanState& st, size_t waiting, size_t par) {
  const double rounds = std::ceil(static_cast<double>(waiting) / static_cast<double>(par));
  return std::max(1e-3, st.LeftS() / std::max(1.0, rounds));
}

SearchOptions SearchOf(const Working& w, Nanos cut, double share_s, int threads) {
  SearchOptions o = w.options;
  o.threads = threads;
  if (share_s > 0) o.time_limit_s = share_s;
  o.cutoff = cut < kNoBound ? cut : -1;
  return o;
}

// One layout's turn, on a worker: its bound (the root bound, and the
// open-tree bound below `cut`; a uniform recompute choice's raised to what
// bounds its per-layer search, `known`), then its search with `cut` as
// cutoff when the bound is below it. Writes only `w` and `t`.
void BoundAndSearch(const PlanState& st, Working& w, Nanos cut,
                    const std::map<std::string, Nanos>& known, double share_s, int threads,
                    Turn& t) {
  SearchOptions bo = w.options;
  bo.threads = threads;
  if (st.limit > 0) {
    const auto half = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(share_s / 2));
    bo.deadline = std::min(st.deadline, Clock::now() + half);
  }
  Result<Nanos> b = LowerBound(*w.entry.problem, bo, cut < kNoBound ? cut : -1);
  if (!b.ok()) {
    w.outcome = "refused: the schedule: " + b.error().key;
    w.entry.closed = true;
    return;
  }
  // A uniform choice's strategies are some of the per-layer search's:
  // what bounds that (searched before it) bounds it too.
  Nanos bound = *b;
  if (bound < kNoBound && bo.setting) {
    if (auto it = known.find(FreeKey(w.entry.layout)); it != known.end()) {
      bound = std::max(bound, it->second);
    }
  }
  t.learn = true;
  if (bound >= kNoBound) {
    w.outcome = "memory";  // no split the target can run fits
    w.entry.closed = true;
    w.entry.bound = kNoBound;
    return;
  }
  w.entry.bound = std::max(w.entry.bound, bound);
  if (w.entry.bound >= cut) {
    w.outcome = "bound";
    w.entry.closed = true;
    return;
  }
  if (st.Past()) return;
  SearchOptions o = SearchOf(w, cut, st.limit > 0 ? share_s : 0, threads);
  t.search = Search(*w.entry.problem, o);
}

// A search's outcome, taken in order: its strategies offered, the layout
// closed when its search closed its tree.
void TakeSearch(PlanState& st, Working& w, const Result<SearchResult>& r) {
  w.outcome = "searched";
  if (!r.ok()) {
    w.outcome = "refused: the search: " + r.error().key;
    w.entry.closed = true;
    return;
  }
  w.entry.searched = true;
  for (const Candidate& c : r->top) st.Keep(w.entry, c);
  if (r->found) st.Keep(w.entry, r->best);
  w.entry.closed = r->proved_optimal || r->proved_infeasible;
  if (!w.entry.closed) w.entry.bound = std::max(w.entry.bound, r->lower_bound);
  // Only a search stopped by its time share may do better with more.
  w.retry = r->stop_reason == "time limit";
  st.Learn(w);
  if (!w.entry.closed && st.res.stop_reason.empty()) st.res.stop_reason = r->stop_reason;
}

// The threads of a round of `n` layouts: the plan's threads over its
// layouts (`par`), what is left over inside each search (`inner`). (A
// struct, not a pair: clang before 16 cannot capture structured bindings
// in the round's lambda.)
struct RoundSplit {
  size_t par = 1;
  int inner = 1;
};
RoundSplit RoundThreads(const PlanState& st, size_t n) {
  const size_t par = std::max<size_t>(1, std::min<size_t>(n, static_cast<size_t>(st.threads)));
  return {par, std::max(1, st.threads / static_cast<int>(par))};
}

// The layouts in order of the cheap bound, in rounds of kPlanRound: the
// root bound (and the open-tree bound below the incumbent) just before each
// search; then the layouts left open searched again while time is left.
void Explore(PlanState& st) {
  FirstAnswers(st);
  std::vector<Working>& work = st.work;
  size_t i = 0;
  while (i < work.size()) {
    st.Exchange();
    if (st.Past()) break;
    // The round: the next layouts (claimed, under MPI) bounded below the
    // incumbent; past the first that is not, every later one is pruned
    // (their cheap bounds are at least its).
    std::vector<size_t> round;
    size_t waiting = 0;
    for (size_t k = i; k < work.size() && work[k].entry.bound < st.incumbent; ++k) ++waiting;
    while (i < work.size() && round.size() < kPlanRound) {
      Working& w = work[i];
      if (w.entry.bound >= st.incumbent) {
        for (size_t k = i; k < work.size(); ++k) {
          if (work[k].outcome.empty()) work[k].outcome = "bound";
          work[k].entry.closed = true;
        }
        st.done += static_cast<int>(work.size() - i);
        i = work.size();
        break;
      }
      ++i;
      if (st.opt.share != nullptr && !st.opt.share->claim(static_cast<std::int64_t>(i - 1))) {
        continue;
      }
      w.claimed = true;
      ++st.done;
      round.push_back(i - 1);
    }
    if (round.empty()) continue;
    const Nanos cut = st.incumbent;
    const std::map<std::string, Nanos> known = st.free_known;
    const RoundSplit rt = RoundThreads(st, round.size());
    const size_t par = rt.par;
    const int inner = rt.inner;
    const double share = st.limit > 0 ? TurnShareS(st, std::max(waiting, round.size()), par) : 0;
    std::vector<Turn> turns(round.size());
    ForEachOnThreads(round.size(), static_cast<int>(par), [&](size_t n) {
      BoundAndSearch(st, work[round[n]], cut, known, share, inner, turns[n]);
    });
    for (size_t n = 0; n < round.size(); ++n) {
      const Turn& t = turns[n];
      Working& w = work[round[n]];
      if (t.learn) st.Learn(w);
      if (t.search) {
        TakeSearch(st, w, *t.search);
        st.Report();
      }
    }
  }
  // Time left: the layouts this process searched whose search stopped at
  // its share, searched again (most promising first) with the better
  // incumbent as cutoff and the time left shared among them.
  while (st.limit > 0 && !st.Past()) {
    st.Exchange();
    std::vector<size_t> again;
    for (size_t k = 0; k < work.size(); ++k) {
      const Working& w = work[k];
      if (!w.entry.closed && w.claimed && w.entry.searched && w.retry &&
          w.entry.bound < st.incumbent) {
        again.push_back(k);
      }
    }
    if (again.empty()) break;
    std::stable_sort(again.begin(), again.end(), [&](size_t a, size_t b) {
      return work[a].entry.bound < work[b].entry.bound;
    });
    // Each once a pass: `n` goes past every layout a round took or skipped.
    for (size_t n = 0; n < again.size() && !st.Past();) {
      std::vector<size_t> round;
      for (; n < again.size() && round.size() < kPlanRound; ++n) {
        if (work[again[n]].entry.bound < st.incumbent) round.push_back(again[n]);
      }
      if (round.empty()) continue;
      const Nanos cut = st.incumbent;
      const RoundSplit rt = RoundThreads(st, round.size());
      const size_t par = rt.par;
      const int inner = rt.inner;
      const double share = TurnShareS(st, again.size() - n + round.size(), par);
      std::vector<std::optional<Result<SearchResult>>> found(round.size());
      ForEachOnThreads(round.size(), static_cast<int>(par), [&](size_t r) {
        const Working& w = work[round[r]];
        found[r] = Search(*w.entry.problem, SearchOf(w, cut, share, inner));
      });
      for (size_t r = 0; r < round.size(); ++r) {
        TakeSearch(st, work[round[r]], *found[r]);
        st.Report();
      }
    }
  }
}

// The proof or the gap, the counts and the top list.
PlanResult Finish(PlanState& st) {
  PlanResult& res = st.res;
  // Layouts never loaded bound nothing: 0.
  const Nanos lb = res.not_loaded > 0 ? 0 : st.OpenBound();
  bool all_closed = res.not_loaded == 0;
  for (const Working& w : st.work) {
    all_closed = all_closed && (w.entry.closed || w.entry.bound >= st.incumbent);
    if (w.outcome == "searched") ++res.searched;
    if (w.outcome == "memory") ++res.pruned_by_memory;
    // A layout never reached whose bound the incumbent passed is pruned
    // by bound too.
    if (w.outcome == "bound" || (w.outcome.empty() && w.entry.bound >= st.incumbent)) {
      ++res.pruned_by_bound;
    } else if (w.outcome.empty()) {
      ++res.open;  // never reached: the time limit came first
    }
    if (w.outcome.rfind("refused: ", 0) == 0) res.refused[w.outcome.substr(9)]++;
  }
  res.found = st.incumbent < kNoBound;
  res.proved_optimal = res.found && all_closed;
  res.lower_bound = lb < kNoBound ? lb : 0;
  if (res.found) {
    res.gap = static_cast<double>(st.incumbent - std::min(st.incumbent, res.lower_bound)) /
              static_cast<double>(st.incumbent);
  }
  // Open at the end: a search stopped at its node limit, or time ran out.
  if (all_closed) {
    res.stop_reason = res.found ? "proved optimal" : "nothing fits";
  } else if (res.stop_reason != "node limit" || st.Past()) {
    res.stop_reason = "time limit";
  }
  for (const Working& w : st.work) {
    if (!w.entry.best) continue;
    const auto key = std::pair{w.entry.layout.t, w.entry.layout.p};
    auto it = res.best_by_tp.try_emplace(key, w.entry.best->makespan).first;
    it->second = std::min(it->second, w.entry.best->makespan);
  }
  // The best layouts, one entry each (the file's own strategy as its own).
  std::vector<PlanEntry> entries;
  for (Working& w : st.work) {
    if (w.entry.best) entries.push_back(std::move(w.entry));
  }
  if (res.yours && res.yours->feasible) {
    PlanEntry e;
    e.layout = *st.yours;
    e.layout.yours = true;
    e.layout.recompute = "yours";
    e.note = "your config";
    e.best = *res.yours;
    e.closed = true;
    e.config = st.own_config;
    e.problem = st.own_problem;  // res.yours came from it
    entries.push_back(std::move(e));
  }
  // Fastest first; ties in bound order (the file's own last).
  std::vector<std::pair<Nanos, size_t>> order;
  for (size_t i = 0; i < entries.size(); ++i) {
    order.emplace_back(entries[i].best.value_or(Candidate{}).makespan, i);
  }
  std::stable_sort(order.begin(), order.end());
  // Tie groups: layouts whose step is the same to the nanosecond are one
  // answer, led by the simplest (PlanTiePreference); the top list holds
  // `top` different answers.
  std::vector<std::vector<size_t>> groups;
  for (const auto& [mk, i] : order) {
    if (!groups.empty() && entries[groups.back().front()].best->makespan == mk &&
        !entries[i].layout.yours && !entries[groups.back().front()].layout.yours) {
      groups.back().push_back(i);
    } else {
      if (static_cast<int>(groups.size()) >= res.settings.top) break;
      groups.push_back({i});
    }
  }
  std::vector<PlanEntry> sorted;
  for (std::vector<size_t>& g : groups) {
    std::stable_sort(g.begin(), g.end(), [&](size_t a, size_t b) {
      return PlanTiePreference(entries[a].layout, entries[b].layout);
    });
    PlanEntry lead = std::move(entries[g.front()]);
    for (size_t k = 1; k < g.size(); ++k) lead.ties.push_back(entries[g[k]].layout);
    sorted.push_back(std::move(lead));
  }
  for (PlanEntry& e : sorted) Describe(e);
  res.top = std::move(sorted);
  res.solve_time_s = Since(st.t0);
  return std::move(res);
}

using Json = nlohmann::json;

// What this process learned of each layout, for the lead's merge.
std::string EncodePart(const PlanState& st) {
  Json layouts = Json::array();
  for (size_t i = 0; i < st.work.size(); ++i) {
    const Working& w = st.work[i];
    if (w.outcome.empty() && !w.entry.best && !w.entry.closed) continue;
    Json x = {{"i", i},           {"claimed", w.claimed},         {"closed", w.entry.closed},
              {"searched", w.entry.searched}, {"outcome", w.outcome}, {"bound", w.entry.bound}};
    if (w.entry.best) {
      x["split"] = w.entry.best->strategy.layers_per_stage;
      x["recompute"] = w.entry.best->strategy.recompute;
    }
    layouts.push_back(std::move(x));
  }
  Json j = {{"layouts", layouts},
            {"stop_reason", st.res.stop_reason},
            {"layouts_total", st.work.size()}};
  return j.dump();
}

// Merges another process's part into `st` (whose layouts are the same, in
// the same order): the claimed process's outcome, every valid bound (the
// larger), the better best (simulated again here).
Status ApplyPart(PlanState& st, const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return Error{"plan", std::string("an MPI part is not JSON: ") + e.what()};
  }
  if (j.value("layouts_total", size_t{0}) != st.work.size()) {
    return Error{"plan", "an MPI part has another set of layouts"};
  }
  for (const Json& x : j["layouts"]) {
    const size_t i = x["i"].get<size_t>();
    if (i >= st.work.size()) return Error{"plan", "an MPI part names no layout"};
    Working& w = st.work[i];
    const std::string outcome = x["outcome"].get<std::string>();
    if (Rank(outcome) > Rank(w.outcome)) w.outcome = outcome;
    w.entry.closed = w.entry.closed || x["closed"].get<bool>();
    w.entry.searched = w.entry.searched || x["searched"].get<bool>();
    w.entry.bound = std::max(w.entry.bound, x["bound"].get<Nanos>());
    w.claimed = w.claimed || x["claimed"].get<bool>();
    if (x.contains("split")) {
      Strategy strategy;
      strategy.layers_per_stage = x["split"].get<std::vector<int>>();
      strategy.recompute = x["recompute"].get<std::vector<std::uint8_t>>();
      Result<Candidate> c = Evaluate(*w.entry.problem, 0, strategy);
      if (!c.ok()) return c.error();
      st.Keep(w.entry, *c);
    }
  }
  const std::string reason = j.value("stop_reason", "");
  if (st.res.stop_reason.empty()) st.res.stop_reason = reason;
  return Status();
}

}  // namespace

RunConfig EntryConfig(const PlanEntry& e) {
  return e.note == "your config" ? *e.config : CandidateConfig(*e.config, *e.problem, *e.best);
}

Result<PlanResult> RunPlan(std::string_view text, std::string_view filename,
                           const PlanOptions& opt) {
  PlanState st;
  st.text = std::string(text);
  st.filename = std::string(filename);
  st.opt = opt;
  PPB_PLAN_TRY(Load(st));
  Explore(st);
  if (opt.part != nullptr) *opt.part = EncodePart(st);
  return Finish(st);
}

Result<PlanResult> MergePlan(std::string_view text, std::string_view filename,
                             const PlanOptions& opt, const std::vector<std::string>& parts) {
  PlanState st;
  st.text = std::string(text);
  st.filename = std::string(filename);
  st.opt = opt;
  PPB_PLAN_TRY(Load(st));
  for (const std::string& part : parts) PPB_PLAN_TRY(ApplyPart(st, part));
  return Finish(st);
}

}  // namespace ppb
