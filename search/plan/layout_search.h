// The branch-and-bound over whole-job layouts that `ppb-sim plan` runs
// (apps/commands/plan_run.h is the command): each layout is a search
// problem of its own (loaded by the caller from its job, with its options,
// its memory floor and cheap bound: search/plan/plan_bounds.h), searched by
// the pipeline search of search/search.h. This room holds no job and reads
// no file: it orders, bounds, searches and proves over the problems given.
//
// Contract (the numbering continues plan_run.h's contract 1, the loading):
//   2. First answers (TryEvenSplits, FirstAnswers): in order of bound, each
//      layout's even split with its recompute choice (for "search": none,
//      then each mode on every layer that offers it, the first that fits)
//      is simulated, within the first tenth of the time. These, and any
//      strategy the caller offers (Offer: the job's own), are incumbents.
//   3. Explore: then the layouts in order of bound: one whose bound is not
//      below the incumbent is pruned by bound (so are all after it); the
//      others are searched with the incumbent as cutoff and an equal share
//      of the time left. A layout is closed when its search closed its
//      tree (found its best, or proved nothing below the cutoff or nothing
//      fits). They go in rounds of 8 on `threads` threads, each against the
//      incumbent of its round's start, taken in order after the round: the
//      same answer on any number of threads. Time left goes to the layouts
//      whose search stopped at its share, most promising first.
//   4. Prove: the plan's lower bound is the least of the incumbent and
//      every open layout's bound (the larger of its own and its search's);
//      it is proved optimal when every layout is closed or pruned.
// Under mpirun (search/search.h SearchShare) a process settles a layout
// only when share->claim grants it, and share->exchange gives the least
// incumbent of all. Deterministic without a time limit (the searches
// are); a time limit may stop at different points on another machine.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/plan/plan_layout.h"
#include "search/search.h"

namespace ppb {

// Where a plan stands, for a progress line.
struct PlanProgress {
  double elapsed_s = 0;
  int done = 0, total = 0;  // layouts settled (searched or pruned) / all
  std::int64_t pruned = 0;
  Nanos best = -1;
  double gap = 1.0;
};

// One layout's outcome.
struct PlanOutcome {
  PlanLayout layout;
  Nanos bound = 0;      // its lower bound (before and after its search)
  bool closed = false;  // its optimum is known, or none below the incumbent
  bool searched = false;
  std::optional<Candidate> best;  // its best strategy found (feasible)
  std::shared_ptr<const SearchProblem> problem;
};

// One layout at work.
struct PlanWork {
  PlanOutcome entry;
  SearchOptions options;  // its search's (target, setting, limits, cache)
  std::size_t id = 0;     // the caller's number for it
  bool retry = false;       // its last search stopped at its time share
  bool tried_even = false;  // TryEvenSplits has evaluated it
  bool claimed = false;     // this process settled it (always, without MPI)
  // How it was settled: "" (open or not reached), "memory" (no split fits),
  // "bound", "searched", or "refused: <why>".
  std::string outcome;
};

// Everything the branch-and-bound holds. The caller sets the settings and
// fills `work` (in order of the cheap bound, ties in its own order), then
// runs FirstAnswers and Explore (or merges parts) and Prove.
struct PlanSearch {
  using Clock = std::chrono::steady_clock;
  static constexpr Nanos kNoBound = std::numeric_limits<Nanos>::max() / 4;  // search's kInf

  // Settings.
  DeployTarget target = DeployTarget::Any;
  Clock::time_point t0 = Clock::now();
  Clock::time_point deadline = Clock::time_point::max();
  Nanos limit = 0;  // 0: no time limit
  int threads = 1;
  const SearchShare* share = nullptr;
  std::function<void(const PlanProgress&)> progress;  // may be empty

  // State.
  std::vector<PlanWork> work;
  int done = 0, n_layouts = 0;    // settled / every layout of the space
  std::int64_t pruned_at_load = 0;  // pruned by memory before `work`
  Nanos incumbent = kNoBound;
  double first_answer_s = -1;                         // -1: none yet
  std::vector<std::pair<double, Nanos>> incumbents;   // each improvement
  std::string stop_reason;  // the first open search's stop reason
  std::map<std::string, Nanos> free_known;  // FreeRecomputeKey -> bound

  double LeftS() const;
  bool Past() const;
  // The least of the incumbent and every open layout's bound.
  Nanos OpenBound() const;
  void Report() const;
  // A strategy found elsewhere (the job's own): an incumbent if it fits.
  void Offer(const Candidate& c);
  // A layout's strategy: kept only where its recompute choice allows it.
  void Keep(PlanOutcome& e, const Candidate& c);
  // The best known bound of a layout's per-layout recompute search (its
  // optimum when closed), which bounds its uniform choices too.
  void Learn(const PlanWork& w);
  // The global incumbent of every process (MPI).
  void Exchange();
};

// Contract 2 for `ws` in turn (most promising first): the first even split
// with its recompute choice that fits kept; until `end`, or a layout
// bounded at the incumbent.
void TryEvenSplits(PlanSearch& st, const std::vector<PlanWork*>& ws,
                   PlanSearch::Clock::time_point end);
// Contract 2 for every layout not tried yet, within the first tenth of the
// time.
void FirstAnswers(PlanSearch& st);
// Contract 3 (after FirstAnswers).
void Explore(PlanSearch& st);

// Contract 4.
struct PlanProof {
  bool found = false, proved_optimal = false;
  Nanos lower_bound = 0;
  double gap = 0;
  std::string stop_reason;  // "proved optimal", "nothing fits", "time limit", "node limit"
  std::int64_t searched = 0, pruned_by_memory = 0, pruned_by_bound = 0, open = 0;
  std::map<std::string, std::int64_t> refused;  // the searches' refusals by reason
};
// `not_loaded`: layouts of the space that never became work (the time
// limit came first); they bound nothing.
PlanProof Prove(const PlanSearch& st, std::int64_t not_loaded);

}  // namespace ppb
