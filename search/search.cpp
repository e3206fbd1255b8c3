// The strategy search (see search.h for the contract): the contexts of the
// schedule choices, the search on a fixed cluster over every choice and
// thread, the least capacity that fits, and the public entry points.
//
// Contract: Search dispatches to the placement search or the fixed-cluster
// search; every strategy in a result is simulated again by Evaluate (Lower +
// Engine), so what is reported is what the engine computes. The per-choice
// searcher is in searcher.h, the placement search in placement.h, the
// baselines in baselines.cpp.
#include "search/search.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>

#include "core/validate.h"
#include "search/driver.h"
#include "search/parallel_for.h"
#include "search/searcher.h"

namespace ppb::search_detail {

// Smallest uniform capacity at which some split fits, by bisection over an
// exact feasibility search; the binding device is one that cannot fit that
// split with a byte less. Past the deadline it stops: what it found is then
// a capacity at which one fits, not the least (min_capacity_cut).
void MinCapacity(const SearchProblem& pb, const SearchOptions& options,
                 const std::vector<ChoiceContext>& ctxs, SearchResult& res) {
  Bytes best = kInf;
  int binding = -1;
  auto at = [&](const ChoiceContext& c0, Bytes cap) {
    ChoiceContext c = c0;
    for (auto& x : c.spec.device_capacity) x = cap;
    return std::make_unique<Searcher>(pb, options, std::move(c));
  };
  bool cut = false;
  // Whether a split fits at `cap`; false, with `cut` set, past the deadline.
  auto fits = [&](const ChoiceContext& c0, Bytes cap, std::vector<int>& split) {
    if (cut || PastDeadline(options)) {
      cut = true;
      return false;
    }
    auto s = at(c0, cap);
    const bool ok = s->AnyFeasibleSplit(&split);
    cut = cut || s->deadline_cut;
    return ok;
  };
  for (const ChoiceContext& c0 : ctxs) {
    std::vector<int> split;
    Bytes hi = 1;
    while (!fits(c0, hi, split) && !cut) {
      if (hi > (Bytes{1} << 61)) break;
      hi *= 2;
    }
    if (cut) break;
    if (hi > (Bytes{1} << 61)) continue;
    Bytes lo = 0;
    while (lo < hi && !cut) {
      const Bytes mid = lo + (hi - lo) / 2;
      if (fits(c0, mid, split)) hi = mid;
      else if (!cut) lo = mid + 1;
    }
    if (cut) {  // hi fits (not proved the least)
      best = std::min(best, hi);
      break;
    }
    if (hi < best) {
      best = hi;
      at(c0, hi)->AnyFeasibleSplit(&split);
      bool exact = true;
      int failed = -1;
      if (!at(c0, hi - 1)->ChooseRecompute(split, exact, &failed)) binding = failed;
    }
  }
  res.min_capacity_cut = cut;
  if (best < kInf) {
    res.min_capacity_needed = best;
    res.binding_device = cut ? -1 : binding;
  }
}

std::string ResimulateTop(std::vector<Candidate>& top, const SearchOptions& options,
                          const std::function<Result<Candidate>(const Candidate&)>& evaluate,
                          double simulation_s) {
  std::string note;
  std::vector<Candidate> kept;
  auto longest =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(simulation_s));
  for (size_t i = 0; i < top.size(); ++i) {
    // Only the best past the deadline, or when one more would end past it.
    const auto now = Clock::now();
    if (i > 0 && (now >= options.deadline || options.deadline - now < longest)) break;
    Result<Candidate> e = evaluate(top[i]);
    longest = std::max(longest, Clock::now() - now);
    if (!e.ok() && e.error().key == kTimeLimitKey) {
      // Stopped at the deadline: the best keeps the search's own
      // simulation of it, unchecked, so nothing is proved; no others.
      if (i == 0) {
        kept.push_back(top[i]);
        if (note.empty()) note = "time limit";
      }
      break;
    }
    std::string why;
    if (!e.ok()) {
      why = "could not be simulated again (" + e.error().key + ": " + e.error().message + ")";
    } else if (e->feasible != top[i].feasible || e->makespan != top[i].makespan ||
               e->max_peak != top[i].max_peak ||
               e->recomputed_layers != top[i].recomputed_layers) {
      why = "simulated again gives " + std::to_string(e->makespan) + " ns at a peak of " +
            std::to_string(e->max_peak) + " B, the search had " +
            std::to_string(top[i].makespan) + " ns at " + std::to_string(top[i].max_peak) +
            " B";
    }
    if (why.empty()) {
      kept.push_back(std::move(e).value());
    } else if (note.empty()) {
      note = "not proved: strategy " + std::to_string(i + 1) + " of the search " + why;
    }
  }
  top = std::move(kept);
  return note;
}

// The search on the problem's own cluster (no placement decision).
Result<SearchResult> SearchFixed(const SearchProblem& problem,
                                 const SearchOptions& options) {
  const auto t0 = Clock::now();
  if (problem.choices.empty()) {
    return Error{"search", "needs at least one schedule choice"};
  }
  // Past the deadline no more choices are prepared (a first small one
  // still is: an answer; context_cache.h); those left out are not
  // searched, so nothing is proved and they bound nothing. None prepared:
  // nothing evaluated.
  bool choices_cut = false;
  Result<std::vector<ChoiceContext>> made = MakeContexts(problem, options, &choices_cut);
  if (!made.ok()) return made.error();
  std::vector<ChoiceContext> ctxs = std::move(made).value();
  auto nothing = [&](double simulation_s) {
    SearchResult res = NothingEvaluated(options);
    res.solve_time_s = std::chrono::duration<double>(Clock::now() - t0).count();
    res.simulation_s = simulation_s;
    return res;
  };
  if (ctxs.empty()) return nothing(0);

  // With a deadline, one simulation of the problem (the even split of the
  // first choice) is timed first (once per problem: the context cache
  // keeps it), and the searchers stop kReserveSims times that before the
  // deadline: a phase that starts just before it may still run a
  // simulation or two (the first of a local search, the tie polish), the
  // answer is simulated again, and freeing what they built takes about one
  // more. The caller learns what one costs (simulation_s, for its
  // baselines). That simulation stops at the deadline too: then nothing is
  // evaluated.
  SearchOptions searchers_options = options;
  double simulation_s = 0;
  if (options.deadline != Clock::time_point::max()) {
    const ChoiceContext& c0 = ctxs.front();
    simulation_s =
        options.contexts != nullptr ? options.contexts->SimulationSeconds(problem) : 0;
    if (simulation_s <= 0) {
      const auto t = Clock::now();
      const Result<Candidate> timed =
          Simulate(problem, c0.index, EvenStrategy(problem.layers, problem.p, c0.v), {},
                   options.deadline, c0.program.get());
      simulation_s = std::chrono::duration<double>(Clock::now() - t).count();
      if (!timed.ok() && timed.error().key == kTimeLimitKey) return nothing(simulation_s);
      if (options.contexts != nullptr) options.contexts->SetSimulationSeconds(problem, simulation_s);
    }
    const auto took = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(simulation_s));
    constexpr int kReserveSims = 6;
    searchers_options.deadline = options.deadline - kReserveSims * took;
    // The open-tree bound (TotalsPathBound) runs its first round of
    // simulations whatever the clock says: only with time for it.
    if (searchers_options.deadline - Clock::now() < 50 * took) {
      searchers_options.open_tree_bound = false;
    }
  }
  // Each choice is searched independently (so results do not depend on
  // thread timing); with several threads, choices run concurrently and
  // their progress reports are serialized.
  // A node limit is shared out over the choices (deterministically); each
  // choice reports its own progress and the caller sees the sum of nodes and
  // evaluations, the best incumbent and the least bound over all choices (a
  // choice not yet started bounds nothing: 0).
  const int n = static_cast<int>(ctxs.size());
  std::vector<SearchOptions> opts(n, searchers_options);
  std::mutex progress_mu;
  std::vector<SearchProgress> latest(n);
  for (auto& pr : latest) pr.lower_bound = 0;
  const auto start = Clock::now();
  // Threads: choices run side by side; what is left over goes to each
  // choice's batches of simulations.
  const int per_choice_threads = std::max(1, options.threads / std::max(1, std::min(options.threads, n)));
  for (int i = 0; i < n; ++i) {
    opts[i].threads = per_choice_threads;
    if (options.node_limit > 0) {
      opts[i].node_limit = options.node_limit / n + (i < options.node_limit % n ? 1 : 0);
      if (opts[i].node_limit == 0) opts[i].node_limit = -1;  // no nodes at all
    }
    if (options.progress) {
      opts[i].progress = [&, i](const SearchProgress& pr) {
        std::lock_guard<std::mutex> lock(progress_mu);
        latest[i] = pr;
        SearchProgress all;
        all.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
        Nanos inc = kInf, lb = kInf;
        for (const auto& x : latest) {
          all.nodes += x.nodes;
          all.evaluations += x.evaluations;
          if (x.incumbent >= 0) inc = std::min(inc, x.incumbent);
          lb = std::min(lb, x.lower_bound);
        }
        all.incumbent = inc >= kInf ? -1 : inc;
        all.lower_bound = lb >= kInf ? 0 : std::min(lb, inc);
        all.gap = all.incumbent > 0 ? static_cast<double>(all.incumbent - all.lower_bound) /
                                          static_cast<double>(all.incumbent)
                                    : 1.0;
        all.choice = -1;
        options.progress(all);
      };
    }
  }
  std::vector<std::unique_ptr<Searcher>> searchers;
  for (int i = 0; i < n; ++i) {
    searchers.push_back(std::make_unique<Searcher>(problem, opts[i], ctxs[i]));
    // Simulations may run to the search's own deadline (not the phases'
    // earlier one): one still running there is stopped.
    searchers.back()->SimulateUntil(options.deadline);
  }
  // Every choice's first tries before any choice's tree (issue 32: more
  // choices never leave one without its quick incumbents). Under a share a
  // choice is tried by the process granted it (in Run).
  if (options.share == nullptr) {
    for (auto& s : searchers) s->TryFirst();
  }
  const int threads = std::max(1, std::min<int>(options.threads, static_cast<int>(searchers.size())));
  // Under a clock, the time is shared out over the choices (issue 32: more
  // choices never hurt): a choice starts with an equal share of what is
  // left over those not started (per thread), so time a choice does not
  // use flows to the next, and with a cutoff at the K-th best strategy
  // known when it starts (every choice's first tries, the choices that
  // ended): a choice whose bound cannot beat it closes at once. Nothing
  // pruned so can enter the top list, so the answer, its alternatives and
  // its proof keep their meaning. A node-limited run (no clock) keeps its
  // deterministic course.
  const bool shared_clock =
      searchers_options.deadline != Clock::time_point::max() && options.share == nullptr;
  std::mutex clock_mu;
  std::vector<Candidate> known;  // the K best strategies of ended choices and first tries
  const auto remember = [&](const Searcher& s) {
    for (const Candidate& c : s.top_list.top) OfferTop(known, c, options.top_k);
  };
  int not_started = n;
  if (shared_clock) {
    for (auto& s : searchers) remember(*s);
  }
  const auto start_share = [&](size_t i) {
    std::lock_guard<std::mutex> lock(clock_mu);
    const auto now = Clock::now();
    const int waves = (not_started + threads - 1) / threads;
    --not_started;
    if (now < searchers_options.deadline) {
      const auto share = (searchers_options.deadline - now) / std::max(1, waves);
      opts[i].deadline = now + share;
      if (opts[i].time_limit_s > 0) {
        opts[i].time_limit_s = std::chrono::duration<double>(share).count();
      }
      // The open-tree bound's first round runs whatever the clock says:
      // only with time for it (as for the whole search above).
      if (std::chrono::duration<double>(share).count() < 50 * simulation_s) {
        opts[i].open_tree_bound = false;
      }
    }
    const Nanos cut = TopThreshold(known, options.top_k, options.cutoff);
    searchers[i]->top_list.cutoff = cut >= kInf ? -1 : cut;
    searchers[i]->RestartClock();
  };
  // Under a share, choice i is unit i: searched here only when granted.
  std::vector<char> mine(searchers.size(), 1);
  auto run = [&](size_t i) {
    if (options.share != nullptr && !options.share->claim(static_cast<std::int64_t>(i))) {
      mine[i] = 0;
      return;
    }
    if (shared_clock) start_share(i);
    searchers[i]->Run();
    if (shared_clock) {
      std::lock_guard<std::mutex> lock(clock_mu);
      remember(*searchers[i]);
    }
  };
  ForEachOnThreads(searchers.size(), threads, run);
  std::vector<std::unique_ptr<Searcher>> skipped;
  for (size_t i = searchers.size(); i-- > 0;) {
    if (!mine[i]) {
      skipped.push_back(std::move(searchers[i]));
      searchers.erase(searchers.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  SearchResult res;
  std::vector<Candidate> all;
  bool all_closed = true;
  Nanos lb = kInf;
  std::vector<std::pair<double, Nanos>> events;
  for (auto& s : searchers) {
    // Each searcher's times count from its own start: from the search's.
    const double since = std::chrono::duration<double>(s->limits.start - t0).count();
    for (const auto& [t, mk] : s->top_list.incumbents) events.emplace_back(since + t, mk);
  }
  std::sort(events.begin(), events.end());
  for (const auto& e : events) {
    if (res.incumbents.empty() || e.second < res.incumbents.back().second) {
      res.incumbents.push_back(e);
    }
  }
  for (auto& s : searchers) {
    res.nodes += s->nodes;
    res.evaluations += s->evaluations;
    res.dives += s->dives;
    for (const Candidate& c : s->tried_first) res.first_tries.push_back(c);
    for (auto& c : s->top_list.top) all.push_back(c);
    all_closed &= s->closed;
    // This choice's bound on its own optimum.
    const Nanos inc = s->top_list.top.empty() ? kInf : s->top_list.top.front().makespan;
    Nanos own = std::min(inc, s->pending_bound);
    // Whatever can still beat the choice's incumbent obeys TotalsPathBound.
    if (!s->top_list.top.empty()) {
      own = std::max(own, std::min(s->top_list.top.front().makespan, s->totals_bound));
    }
    // The side that set `own` (the least over choices sets the result's).
    if (own < lb) {
      if (own >= inc) {
        res.bound_source = "incumbent";
        res.bound_time_s = s->finished_s;
      } else if (s->totals_bound >= own && s->totals_bound > s->pending_bound) {
        res.bound_source = "open-tree bound";
        res.bound_time_s = s->finished_s;
      } else if (s->pending_bound <= s->root_bound()) {
        res.bound_source = "root bound";
        res.bound_time_s = s->prepared_s;
      } else {
        res.bound_source = "tree search";
        res.bound_time_s = s->finished_s;
      }
    }
    lb = std::min(lb, own);
  }
  std::sort(all.begin(), all.end(), Better);
  const int k = std::max(1, options.top_k);
  if (static_cast<int>(all.size()) > k) all.resize(k);
  res.top = all;
  res.found = !all.empty();
  // Report the strategies as Lower() + Engine evaluate them; an
  // alternative that would end past the deadline (at the longest
  // simulation seen) is dropped, the best never.
  const std::string resimulated =
      ResimulateTop(res.top, options, [&](const Candidate& c) {
        return Evaluate(problem, c.choice, c.strategy, {}, options.deadline);
      }, simulation_s);
  if (!resimulated.empty()) all_closed = false;
  res.found = !res.top.empty();
  if (res.found) res.best = res.top.front();
  if (choices_cut) {
    all_closed = false;
    lb = 0;
  }
  res.proved_optimal = res.found && all_closed;
  res.proved_infeasible = !res.found && all_closed;
  res.part_bound = lb >= kInf ? -1 : lb;
  res.lower_bound = lb >= kInf ? 0 : std::min(lb, res.found ? res.best.makespan : lb);
  if (res.found) {
    res.gap = res.best.makespan > 0
                  ? static_cast<double>(res.best.makespan - res.lower_bound) /
                        static_cast<double>(res.best.makespan)
                  : 0.0;
  }
  std::string reason = choices_cut ? "time limit" : "";
  for (auto& s : searchers) {
    if (!s->closed && reason.empty()) reason = s->limits.stop_reason;
  }
  if (!resimulated.empty()) reason = resimulated;
  // Not one simulation ended before the deadline.
  bool cut_short = false;
  for (auto& s : searchers) cut_short = cut_short || s->interrupted;
  if (cut_short && !res.found && res.evaluations == 0) reason = kNothingEvaluated;
  res.stop_reason = all_closed ? (res.found ? "proved optimal" : "proved infeasible")
                               : reason;
  if (!res.found && options.min_capacity && options.share == nullptr) {
    MinCapacity(problem, searchers_options, ctxs, res);
    // Choices left out may fit with less.
    res.min_capacity_cut = res.min_capacity_cut || choices_cut;
    if (choices_cut) res.binding_device = -1;
    res.lower_bound = 0;
  }
  res.solve_time_s = std::chrono::duration<double>(Clock::now() - t0).count();
  res.simulation_s = simulation_s;
  return res;
}

SearchResult NothingEvaluated(const SearchOptions& options) {
  SearchResult res;
  res.stop_reason = kNothingEvaluated;
  res.part_bound = 0;  // everything is still open
  // The least capacity was not looked for either.
  res.min_capacity_cut = options.min_capacity && options.share == nullptr;
  return res;
}

Result<Candidate> Simulate(const SearchProblem& problem, int choice, const Strategy& strategy,
                           const Placement& placement, Clock::time_point deadline,
                           const Program* program) {
  if (choice < 0 || choice >= static_cast<int>(problem.choices.size())) {
    return Error{"search", "no schedule choice " + std::to_string(choice)};
  }
  if (!placement.empty() && !IsPlacement(problem.topology, placement)) {
    return Error{"search", "the placement is not a permutation of the devices"};
  }
  const ScheduleChoice& ch = problem.choices[choice];
  const Cluster placed =
      placement.empty() ? Cluster{} : ClusterFor(problem.topology, placement);
  const ScheduleInfo* info = FindSchedule(ch.schedule);
  if (info == nullptr) {
    return Error{"search.schedules", "unknown schedule '" + ch.schedule + "'"};
  }
  auto spec = Lower(problem.layers, placement.empty() ? problem.cluster : placed,
                    PipelineShape{problem.p, ch.v, problem.m, ChoiceComm(problem, ch),
                                  info->placement, problem.fb_overlap_ppm,
                                  problem.tail, problem.ep_overlap_ppm,
                                  problem.op_overhead},
                    strategy, problem.allow_empty_chunks);
  if (!spec.ok()) return spec.error();
  std::shared_ptr<const Program> made;
  if (program == nullptr && ch.schedule.rfind("zb-", 0) == 0) {
    // The one order the search ran for this choice (MakeContext), so that
    // reported times are those it ranked and bounded.
    Result<ChoiceContext> ctx = MakeContext(problem, choice);
    if (!ctx.ok()) return ctx.error();
    made = ctx->program;
  } else if (program == nullptr) {
    Result<Program> prog = info->generate(*spec, ch.params);
    if (!prog.ok()) return prog.error();
    made = std::make_shared<const Program>(std::move(prog).value());
  }
  Engine engine;
  SimOptions so;
  so.record_ops = false;
  so.deadline = deadline;
  const SimResult r = engine.Run(*spec, program != nullptr ? *program : *made, so);
  if (r.outcome == Outcome::Interrupted) {
    return Error{kTimeLimitKey, "not simulated: the time limit had passed"};
  }
  Candidate c;
  c.choice = choice;
  c.strategy = strategy;
  c.makespan = r.makespan;
  c.bubble_fraction = r.bubble_fraction();
  for (const auto& d : r.devices) c.max_peak = std::max(c.max_peak, d.peak_memory);
  for (auto x : strategy.recompute) c.recomputed_layers += x != 0;
  c.feasible = r.outcome == Outcome::Ok;
  c.devices = r.devices;
  c.placement = placement;
  return c;
}

}  // namespace ppb::search_detail

namespace ppb {

using search_detail::SearchFixed;
using search_detail::SearchPlacement;

CommMode ChoiceComm(const SearchProblem& problem, const ScheduleChoice& choice) {
  if (!problem.comm_by_schedule) return problem.comm;
  return choice.schedule == "1f1b" || choice.schedule == "gpipe" ? CommMode::Blocking
                                                                 : CommMode::Overlapped;
}

int EffectiveGroup(const ScheduleChoice& choice, int p, int m) {
  if (choice.schedule != "interleaved") return 0;
  if (choice.params.flavor == Flavor::PyTorch) return m / std::max(1, m / p);
  return choice.params.group > 0 ? choice.params.group : p;
}

Result<SearchResult> Search(const SearchProblem& problem,
                            const SearchOptions& options) {
  if (problem.choices.empty()) {
    return Error{"search", "needs at least one schedule choice"};
  }
  SearchOptions timed = options;
  if (options.time_limit_s > 0) {
    const auto end = search_detail::Clock::now() +
                     std::chrono::duration_cast<search_detail::Clock::duration>(
                         std::chrono::duration<double>(options.time_limit_s));
    timed.deadline = std::min(timed.deadline, end);
  }
  // Every phase of this search shares one set of contexts (the caller's
  // when it gave one).
  if (timed.contexts == nullptr) timed.contexts = NewContextCache();
  if (timed.target != DeployTarget::Any && !timed.setting) {
    return search_detail::SearchTarget(problem, timed);
  }
  if (problem.search_placement) return SearchPlacement(problem, timed);
  return SearchFixed(problem, timed);
}

Result<Candidate> Evaluate(const SearchProblem& problem, int choice,
                           const Strategy& strategy, const Placement& placement,
                           std::chrono::steady_clock::time_point deadline) {
  return search_detail::Simulate(problem, choice, strategy, placement, deadline, nullptr);
}

std::shared_ptr<search_detail::ContextCache> NewContextCache() {
  return std::make_shared<search_detail::ContextCache>();
}

}  // namespace ppb
