// Phases of the search that honour a deadline already past (issue 15, "time
// limits are limits"): the root bound's forced-recompute knapsack, the
// recompute menus (and their Pareto filter), and the deployable-target
// search over a framework's settings. Each, past its deadline, returns at
// once with an answer that is still valid (a weaker bound, a cut menu that
// keeps the least-stash and fastest choices, the first setting's answer with
// the time limit as its reason). The setup too: a search whose deadline
// passed before a large program was generated, or during its simulation,
// evaluates nothing and says so; and one set of contexts serves every
// phase of a search. No test here measures time.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "app_helpers.h"
#include "apps/input/search_problem.h"
#include "search/bounds.h"
#include "search/context_cache.h"
#include "search/deployable.h"
#include "search/recompute_menu.h"
#include "search/search.h"

namespace ppb::search_detail {
namespace {

SearchOptions ExpiredOptions() {
  SearchOptions o;
  o.threads = 1;
  o.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  return o;
}

TEST_CASE("deadline: ForcedRecompute is the knapsack, 0 past the deadline",
          "[search][limits]") {
  // Two ranks, two decoders. Rank 0 takes 0, 1 or (not) 2 decoders with
  // 0, 5 ns of recompute; rank 1 takes 0, 1, 2 with 0, 7, 20 ns. The
  // allocations (0, 2), (1, 1), (2, 0) force 20, 12 and (cannot fit)
  // recompute: the least is 12.
  const std::vector<std::vector<Nanos>> rt = {{0, 5, kInf}, {0, 7, 20}};
  SearchOptions none;
  CHECK(ForcedRecompute(rt, 2, none) == 12);
  // Past the deadline: no recompute forced (a valid, weaker bound).
  CHECK(ForcedRecompute(rt, 2, ExpiredOptions()) == 0);
  // Nothing fits: 0 as well, with or without a deadline.
  const std::vector<std::vector<Nanos>> none_fit = {{0, kInf, kInf}, {0, kInf, kInf}};
  CHECK(ForcedRecompute(none_fit, 2, none) == 0);
}

Layer Decoder() {
  Layer l;
  l.forward = 1'000'000;
  l.backward_input = 2'000'000;
  l.activation = 100;
  l.recompute = {{"selective", 60, 5}, {"full", 10, 20}};
  return l;
}

TEST_CASE("deadline: a menu past its deadline is cut to its two extremes", "[search][menu]") {
  const std::vector<Layer> layers(3, Decoder());
  const Menu full = BuildMenu(layers, 0, 3);
  REQUIRE_FALSE(full.cut);
  REQUIRE_FALSE(full.truncated);
  // Three layers, three modes: (3+1)(3+2)/2 = 10 count vectors; by time
  // then stash the Pareto set over (stash, remat, time, recomputed) keeps
  // every one (each more recompute time buys less stash or fewer layers).
  CHECK(full.points.size() == 10);
  CHECK(full.min_stash == 30);  // 3 x full
  CHECK(full.min_remat == 0);   // none

  // A far deadline changes nothing.
  const Menu later =
      BuildMenu(layers, 0, 3, nullptr, std::chrono::steady_clock::now() + std::chrono::hours(1));
  REQUIRE(later.points.size() == full.points.size());
  for (size_t i = 0; i < full.points.size(); ++i) {
    CHECK(later.points[i].stash == full.points[i].stash);
    CHECK(later.points[i].time == full.points[i].time);
  }

  const Menu cut = BuildMenu(layers, 0, 3, nullptr, ExpiredOptions().deadline);
  CHECK(cut.cut);
  CHECK(cut.truncated);
  CHECK(cut.exact_up_to == -1);
  REQUIRE(cut.points.size() == 2);
  // The fastest (every layer none) and the least stash (every layer full).
  CHECK(cut.points[0].time == 0);
  CHECK(cut.points[0].stash == 300);
  CHECK(cut.points[0].recomputed == 0);
  CHECK(cut.points[0].remat == 0);
  CHECK(cut.points[1].time == 60);
  CHECK(cut.points[1].stash == 30);
  CHECK(cut.points[1].recomputed == 3);
  CHECK(cut.points[1].remat == 90);
  // Each is a real choice: the counts say every layer takes one mode.
  CHECK(cut.points[0].counts[cut.offsets[0] + 0] == 3);
  CHECK(cut.points[1].counts[cut.offsets[0] + 2] == 3);
  // Memory checks against the cut menu stay exact.
  CHECK(cut.min_stash == full.min_stash);
  CHECK(cut.min_remat == full.min_remat);

  // The filter itself: past its deadline it answers kCut.
  std::vector<MenuPoint> pts = full.points;
  CHECK(ParetoFilter(pts, ExpiredOptions().deadline) == Filtered::kCut);
  std::vector<MenuPoint> again = full.points;
  CHECK(ParetoFilter(again) == Filtered::kExact);
  CHECK(again.size() == full.points.size());
}

TEST_CASE("deadline: a target search past its deadline searches one setting",
          "[search][limits][target]") {
  Result<RunConfig> config = test::Parse(std::string(test::kTinySearchConfig));
  REQUIRE(config.ok());
  Result<SearchProblem> problem = BuildSearchProblem(*config);
  REQUIRE(problem.ok());
  // Every framework target with several recompute settings for these
  // layers and a deployable answer (at least one has both).
  int checked = 0;
  for (DeployTarget t : FrameworkTargets()) {
    if (RecomputeSettings(t, problem->layers).size() < 2) continue;
    INFO("target " << TargetName(t));
    SearchOptions free;
    free.threads = 1;
    free.target = t;
    const SearchResult full = *Search(*problem, free);
    if (!full.found) continue;
    ++checked;
    SearchOptions late = ExpiredOptions();
    late.target = t;
    const SearchResult r = *Search(*problem, late);
    CHECK_FALSE(r.proved_optimal);
    CHECK_FALSE(r.proved_infeasible);
    CHECK(r.stop_reason == "time limit");
    CHECK(r.lower_bound == 0);  // the settings' bounds are cut too: 0
    CHECK(r.nodes == 0);        // no tree search past the deadline
    if (r.found) {              // the first setting's answer, if it has one
      CHECK(r.best.feasible);
      CHECK(r.best.makespan >= full.best.makespan);
      CHECK(Deployable(t, problem->layers, r.best.strategy, problem->p,
                       problem->choices[r.best.choice].v, false));
    }
  }
  CHECK(checked > 0);
}

// The tiny config (4 identical layers, 2 ranks, 1F1B) with m micro-batches:
// at m = 20,000 its program has 2 x 2 x m = 80,000 ops, over
// Engine::kDeadlineCheckOps (65,536), so the setup and the engine look at the
// clock.
SearchProblem TinyProblem(int m, const std::string& extra = "") {
  std::string text(test::kTinySearchConfig);
  const std::string from = "microbatches: 4";
  text.replace(text.find(from), from.size(), "microbatches: " + std::to_string(m));
  Result<RunConfig> config = test::Parse(text + extra);
  REQUIRE(config.ok());
  Result<SearchProblem> problem = BuildSearchProblem(*config);
  REQUIRE(problem.ok());
  return *problem;
}

TEST_CASE("deadline: a large search past its deadline evaluates nothing and says so",
          "[search][limits]") {
  const SearchProblem problem = TinyProblem(20000);
  // Without a limit it has an answer (so "nothing" below is the clock's).
  SearchOptions free;
  free.threads = 1;
  free.node_limit = 50;
  const SearchResult full = *Search(problem, free);
  REQUIRE(full.found);
  for (DeployTarget t : {DeployTarget::Any, FrameworkTargets().front()}) {
    INFO("target " << TargetName(t));
    SearchOptions late = ExpiredOptions();
    late.target = t;
    const SearchResult r = *Search(problem, late);
    CHECK_FALSE(r.found);
    CHECK_FALSE(r.proved_optimal);
    CHECK_FALSE(r.proved_infeasible);
    CHECK(r.stop_reason == "time limit: nothing evaluated");
    CHECK(r.lower_bound == 0);
    CHECK(r.evaluations == 0);
    CHECK(r.nodes == 0);
    CHECK(r.top.empty());
    // The least capacity was not looked for: said so, none given.
    CHECK(r.min_capacity_cut);
    CHECK(r.min_capacity_needed == 0);
  }
  // A small program is still prepared and simulated past the deadline (an
  // answer; the engine never reads the clock in fewer than 65,536 ops).
  const SearchResult small = *Search(TinyProblem(4), ExpiredOptions());
  CHECK(small.found);
  CHECK(small.stop_reason == "time limit");
}

TEST_CASE("deadline: a simulation running at its deadline is stopped", "[search][limits]") {
  const SearchProblem big = TinyProblem(20000);
  const Strategy even = EvenStrategy(big.layers, big.p, 1);
  const auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const Result<Candidate> stopped = Evaluate(big, 0, even, {}, past);
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.error().key == kTimeLimitKey);
  // Without a deadline it runs: 1F1B over 2 uniform ranks of 2 layers
  // (1 ms forward + 2 ms backward each) takes (m + p - 1) x 6 ms.
  const Result<Candidate> done = Evaluate(big, 0, even);
  REQUIRE(done.ok());
  CHECK(done->makespan == Nanos{20001} * 6'000'000);
  // A small one ends whatever the clock says.
  const SearchProblem small = TinyProblem(4);
  CHECK(Evaluate(small, 0, EvenStrategy(small.layers, small.p, 1), {}, past).ok());
  // The baselines say they were not simulated.
  for (const Baseline& b : Baselines(big, 0, past)) {
    if (b.applicable) FAIL("baseline " << b.name << " simulated past its deadline");
  }
}

TEST_CASE("contexts: one set serves every phase of a search and the searches after it",
          "[search][contexts]") {
  // Two schedule choices; 1 GiB of memory holds no layer (1 GiB of weights
  // each): nothing fits, so the least capacity is searched too.
  std::string text(test::kTinySearchConfig);
  text.replace(text.find("memory: 7GiB"), 12, "memory: 1GiB");
  Result<RunConfig> config = test::Parse(text + "search:\n  schedules: [1f1b, gpipe]\n");
  REQUIRE(config.ok());
  Result<SearchProblem> problem = BuildSearchProblem(*config);
  REQUIRE(problem.ok());
  REQUIRE(problem->choices.size() == 2);
  // A framework with several recompute settings: bounds, each setting's
  // search and the least capacity under each all read the contexts.
  DeployTarget target = DeployTarget::Any;
  for (DeployTarget t : FrameworkTargets()) {
    if (RecomputeSettings(t, problem->layers).size() >= 2) target = t;
  }
  REQUIRE(target != DeployTarget::Any);
  SearchOptions o;
  o.threads = 1;
  o.contexts = NewContextCache();
  o.target = target;
  const SearchResult r = *Search(*problem, o);
  CHECK_FALSE(r.found);
  CHECK(r.proved_infeasible);
  CHECK(r.min_capacity_needed > 0);
  CHECK(o.contexts->built() == 2);
  // The same options again, under every target (the deployable searches
  // after the main one): nothing is built again.
  o.target = DeployTarget::Any;
  const SearchResult any = *Search(*problem, o);
  CHECK(any.proved_infeasible);
  // Every recompute a framework can express is a per-layer choice too.
  CHECK(any.min_capacity_needed > 0);
  CHECK(any.min_capacity_needed <= r.min_capacity_needed);
  CHECK(o.contexts->built() == 2);
  // Another problem is served apart and leaves the cache as it was.
  const SearchProblem other = TinyProblem(4);
  CHECK(Search(other, o)->found);
  CHECK(o.contexts->built() == 2);
}

}  // namespace
}  // namespace ppb::search_detail
