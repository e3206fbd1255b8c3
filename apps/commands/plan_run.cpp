#include "apps/commands/plan_run.h"
#include "apps/commands/plan_state.h"

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

namespace {

using namespace plan_detail;  // NOLINT: the plan's state (plan_state.h)

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

// Outcomes by precedence, for merging parts: what one process learned
// about a layout wins over less.
int Rank(const std::string& outcome) {
  if (outcome == "searched") return 4;
  if (outcome == "memory") return 3;
  if (outcome == "bound") return 2;
  if (!outcome.empty()) return 1;  // refused
  return 0;
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
