#include "search/plan/layout_search.h"

#include <algorithm>
#include <cmath>

#include "core/lower.h"
#include "schedules/schedule.h"
#include "search/deployable.h"
#include "search/first_tries.h"
#include "search/parallel_for.h"

namespace ppb {

using Clock = PlanSearch::Clock;

namespace {

constexpr Nanos kNoBound = PlanSearch::kNoBound;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The even split with mode `mode` ("" none) on every layer that offers it.
Strategy EvenWith(const SearchProblem& problem, int v, const std::string& mode) {
  Strategy s = EvenStrategy(problem.layers, problem.p, v);
  return mode.empty() ? s : WithModeEverywhere(std::move(s), problem.layers, mode);
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
  bool learn = false;  // its bound is known (PlanSearch::Learn)
  std::optional<Result<SearchResult>> search;
};

// A turn's time: the time left over the rounds that the `waiting` layouts
// take on `par` threads.
double TurnShareS(const PlanSearch& st, size_t waiting, size_t par) {
  const double rounds = std::ceil(static_cast<double>(waiting) / static_cast<double>(par));
  return std::max(1e-3, st.LeftS() / std::max(1.0, rounds));
}

SearchOptions SearchOf(const PlanWork& w, Nanos cut, double share_s, int threads) {
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
void BoundAndSearch(const PlanSearch& st, PlanWork& w, Nanos cut,
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
    if (auto it = known.find(FreeRecomputeKey(w.entry.layout)); it != known.end()) {
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
void TakeSearch(PlanSearch& st, PlanWork& w, const Result<SearchResult>& r) {
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
  if (!w.entry.closed && st.stop_reason.empty()) st.stop_reason = r->stop_reason;
}

// The threads of a round of `n` layouts: the plan's threads over its
// layouts (`par`), what is left over inside each search (`inner`). (A
// struct, not a pair: clang before 16 cannot capture structured bindings
// in the round's lambda.)
struct RoundSplit {
  size_t par = 1;
  int inner = 1;
};
RoundSplit RoundThreads(const PlanSearch& st, size_t n) {
  const size_t par = std::max<size_t>(1, std::min<size_t>(n, static_cast<size_t>(st.threads)));
  return {par, std::max(1, st.threads / static_cast<int>(par))};
}

}  // namespace

double PlanSearch::LeftS() const {
  return limit > 0 ? std::chrono::duration<double>(deadline - Clock::now()).count() : 0.0;
}

bool PlanSearch::Past() const { return limit > 0 && Clock::now() >= deadline; }

Nanos PlanSearch::OpenBound() const {
  Nanos lb = incumbent;
  for (const PlanWork& w : work) {
    if (!w.entry.closed) lb = std::min(lb, w.entry.bound);
  }
  return lb;  // an open layout bounded above the incumbent is settled
}

void PlanSearch::Report() const {
  if (!progress) return;
  PlanProgress p;
  p.elapsed_s = Since(t0);
  p.done = done;
  p.total = n_layouts;
  p.pruned = pruned_at_load;
  for (const PlanWork& w : work) p.pruned += w.outcome == "bound" || w.outcome == "memory";
  p.best = incumbent < kNoBound ? incumbent : -1;
  const Nanos lb = OpenBound();
  p.gap = p.best > 0 && lb < kNoBound
              ? static_cast<double>(p.best - std::min(p.best, lb)) / static_cast<double>(p.best)
              : 1.0;
  progress(p);
}

void PlanSearch::Offer(const Candidate& c) {
  if (!c.feasible || c.makespan >= incumbent) return;
  incumbent = c.makespan;
  const double t = Since(t0);
  if (first_answer_s < 0) first_answer_s = t;
  incumbents.emplace_back(t, c.makespan);
}

void PlanSearch::Keep(PlanOutcome& e, const Candidate& c) {
  if (!c.feasible) return;
  const std::optional<RecomputeSetting> setting = LayoutRecomputeSetting(e.layout, target);
  if (setting && !SettingAllows(*setting, e.problem->layers, c.strategy)) return;
  if (!e.best || Better(c, *e.best)) e.best = c;
  Offer(c);
}

void PlanSearch::Learn(const PlanWork& w) {
  if (w.entry.layout.recompute != "search") return;
  Nanos x = w.entry.bound;
  if (w.entry.closed && w.entry.searched) x = w.entry.best ? w.entry.best->makespan : kNoBound;
  Nanos& known = free_known.try_emplace(FreeRecomputeKey(w.entry.layout), 0).first->second;
  known = std::max(known, x);
}

void PlanSearch::Exchange() {
  if (share == nullptr || !share->exchange) return;
  const Nanos g = share->exchange(incumbent < kNoBound ? incumbent : -1);
  if (g >= 0) incumbent = std::min(incumbent, g);
}

void TryEvenSplits(PlanSearch& st, const std::vector<PlanWork*>& ws, Clock::time_point end) {
  for (PlanWork* wp : ws) {
    PlanWork& w = *wp;
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
    const ScheduleInfo* info = FindSchedule(pr.choices.front().schedule);
    const bool v_shape = info != nullptr && info->placement == StagePlacement::V && v == 2;
    for (const std::string& mode : modes) {
      const Strategy strategy = EvenWith(pr, v, mode);
      if (st.target != DeployTarget::Any &&
          !Deployable(st.target, pr.layers, strategy, pr.p, v, v_shape)) {
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

void FirstAnswers(PlanSearch& st) {
  const auto first_end = st.limit > 0 ? st.t0 + std::chrono::nanoseconds(st.limit / 10)
                                      : Clock::time_point::max();
  std::vector<PlanWork*> ws;
  for (PlanWork& w : st.work) {
    if (!w.tried_even) ws.push_back(&w);
  }
  TryEvenSplits(st, ws, first_end);
  st.Report();
}

// The layouts in order of the cheap bound, in rounds of kPlanRound: the
// root bound (and the open-tree bound below the incumbent) just before each
// search; then the layouts left open searched again while time is left.
void Explore(PlanSearch& st) {
  std::vector<PlanWork>& work = st.work;
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
      PlanWork& w = work[i];
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
      if (st.share != nullptr && !st.share->claim(static_cast<std::int64_t>(i - 1))) {
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
      PlanWork& w = work[round[n]];
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
      const PlanWork& w = work[k];
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
        const PlanWork& w = work[round[r]];
        found[r] = Search(*w.entry.problem, SearchOf(w, cut, share, inner));
      });
      for (size_t r = 0; r < round.size(); ++r) {
        TakeSearch(st, work[round[r]], *found[r]);
        st.Report();
      }
    }
  }
}

PlanProof Prove(const PlanSearch& st, std::int64_t not_loaded) {
  PlanProof res;
  // Layouts never loaded bound nothing: 0.
  const Nanos lb = not_loaded > 0 ? 0 : st.OpenBound();
  bool all_closed = not_loaded == 0;
  for (const PlanWork& w : st.work) {
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
  res.stop_reason = st.stop_reason;
  if (all_closed) {
    res.stop_reason = res.found ? "proved optimal" : "nothing fits";
  } else if (res.stop_reason != "node limit" || st.Past()) {
    res.stop_reason = "time limit";
  }
  return res;
}

}  // namespace ppb
