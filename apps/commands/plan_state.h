// The state of one `ppb-sim plan` between its phases (apps/commands/
// plan_run.h gives the contract): the layouts at work, the incumbent, the
// result being built; shared by plan_load.cpp (loading the space and its
// first answers) and plan_run.cpp (the rounds, the proof, the parts of an
// MPI plan). Internal to the plan command.
#pragma once

#include <chrono>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/commands/plan_run.h"
#include "apps/input/plan_space.h"
#include "search/deployable.h"
#include "search/first_tries.h"
#include "search/search.h"

namespace ppb::plan_detail {

using Clock = std::chrono::steady_clock;
#define PPB_PLAN_TRY(expr)                 \
  do {                                     \
    if (Status s_ = (expr); !s_.ok()) {    \
      return s_.error();                   \
    }                                      \
  } while (0)
constexpr Nanos kNoBound = std::numeric_limits<Nanos>::max() / 4;  // search's kInf

inline double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The recompute setting a layout's search runs under: none for a
// per-layer search (every setting of the target), else its one mode.
inline std::optional<RecomputeSetting> SettingOf(const PlanLayout& l, DeployTarget target) {
  if (l.recompute == "search") return std::nullopt;
  RecomputeSetting s;
  s.target = target;
  s.kind = RecomputeSetting::Kind::Every;
  s.mode = l.recompute == "none" ? "" : l.recompute;
  return s;
}

// The layout with its recompute choice "search": whose bounds hold for its
// uniform choices.
inline std::string FreeKey(PlanLayout l) {
  l.recompute = "search";
  l.yours = false;
  return DescribeLayout(l);
}

// The even split with mode `mode` ("" none) on every layer that offers it.
inline Strategy EvenWith(const SearchProblem& problem, int v, const std::string& mode) {
  Strategy s = EvenStrategy(problem.layers, problem.p, v);
  return mode.empty() ? s : WithModeEverywhere(std::move(s), problem.layers, mode);
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

// Parses the job, enumerates the space, loads every layout (a large space's
// sample first, with its even splits tried) with its memory floor and cheap
// bound, and simulates the file's own strategy (plan_load.cpp).
Status Load(PlanState& st);
// First answers: each layout at work not tried yet, its even split with its
// recompute choice, in order of bound, within the first tenth of the time
// (plan_load.cpp).
void FirstAnswers(PlanState& st);

}  // namespace ppb::plan_detail
