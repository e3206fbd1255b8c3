// When the search may claim PROVED OPTIMAL: never when a step it relies on
// could not be carried out. Two such steps are checked here.
//
// - The tie polish with one chunk per device (v = 1) lists every recompute
//   choice of every device; when a stage's menu is truncated (more than
//   kMaxMenuPoints Pareto points) that list is incomplete, the tie on time
//   is not settled and the search must not claim a proof.
// - Every reported strategy is simulated again (Evaluate); one that is
//   refused, or that simulates to other figures than the search's, is
//   dropped and withdraws the proof (ResimulateTop), never silently kept.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "brute_force.h"
#include "core/model.h"
#include "search/driver.h"
#include "search/search.h"

namespace ppb {
namespace {

using namespace brute;  // NOLINT: Show, ObjectiveOf

constexpr Nanos kUs = 1000;
constexpr Bytes kKiB = 1024;

TEST_CASE("v = 1: a stage menu too large to list leaves the tie-break unproved",
          "[search][ties][proof]") {
  // 22 distinct layers on 2 ranks (1F1B, m = 2): some stage holds at least
  // 11. Layer i stashes 2^i KiB and its full recompute costs 2^i ns, so
  // the stash saved equals the time spent (in those units) and all 2^11
  // recompute subsets of 11 layers are Pareto-minimal: the menu keeps 1,024
  // of them and is truncated. Memory is unlimited, so the fastest choice
  // (no recompute) is exact, but whether a device off the critical path
  // could recompute for free at a lower peak cannot be settled from an
  // incomplete list.
  SearchProblem pr;
  pr.p = 2;
  pr.m = 2;
  ScheduleChoice c;
  c.schedule = "1f1b";
  c.v = 1;
  pr.choices.push_back(c);
  for (int i = 0; i < 22; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.forward = (10 + i % 3) * kUs;
    l.backward_input = 2 * l.forward;
    l.activation = (Bytes{1} << (i % 11)) * kKiB * (1 + i / 11);
    l.recompute.push_back({"full", 0, (Nanos{1} << (i % 11)) * (1 + i / 11)});
    pr.layers.push_back(l);
  }
  for (int d = 0; d < pr.p; ++d) {
    pr.cluster.devices.push_back({kUnlimited, 1.0});
    pr.cluster.links.push_back(Link{});
  }
  Result<SearchResult> got = Search(pr, SearchOptions{});
  REQUIRE(got.ok());
  const SearchResult& r = *got;
  INFO("search: " << r.stop_reason << ", best " << Show(ObjectiveOf(r.best)) << " "
                  << Show(r.best.strategy));
  REQUIRE(r.found);
  CHECK_FALSE(r.proved_optimal);
  CHECK(r.stop_reason.find("tie-break not proved") != std::string::npos);
  // What it found is still the fastest (memory is unlimited, so no
  // recompute is needed) and is what the strategy simulates to.
  CHECK(r.best.recomputed_layers == 0);
  Result<Candidate> again = Evaluate(pr, r.best.choice, r.best.strategy);
  REQUIRE(again.ok());
  CHECK(ObjectiveOf(*again) == ObjectiveOf(r.best));
}

Candidate MakeCandidate(Nanos makespan, Bytes peak, int recomputed) {
  Candidate c;
  c.makespan = makespan;
  c.max_peak = peak;
  c.recomputed_layers = recomputed;
  c.feasible = true;
  c.strategy.layers_per_stage = {static_cast<int>(makespan), recomputed};
  return c;
}

TEST_CASE("ResimulateTop keeps what simulates to the search's figures and drops the rest, "
          "saying why",
          "[search][proof]") {
  using search_detail::ResimulateTop;
  const std::vector<Candidate> top = {MakeCandidate(10, 5, 0), MakeCandidate(11, 4, 1),
                                      MakeCandidate(12, 3, 2)};
  SearchOptions opt;

  SECTION("all agree: every strategy kept, no note") {
    std::vector<Candidate> t = top;
    int calls = 0;
    const std::string note = ResimulateTop(t, opt, [&](const Candidate& c) -> Result<Candidate> {
      ++calls;
      Candidate e = c;
      e.bubble_fraction = 0.25;  // what only the simulation fills in
      return e;
    });
    CHECK(note.empty());
    CHECK(calls == 3);
    REQUIRE(t.size() == 3);
    CHECK(t[0].makespan == 10);
    CHECK(t[2].makespan == 12);
    CHECK(t[1].bubble_fraction == 0.25);  // replaced by the simulation's
  }
  SECTION("a refused strategy is dropped and named") {
    std::vector<Candidate> t = top;
    const std::string note = ResimulateTop(t, opt, [&](const Candidate& c) -> Result<Candidate> {
      if (c.makespan == 10) return Error{"strategy", "cannot be lowered"};
      return c;
    });
    CHECK(note.find("not proved: strategy 1 ") == 0);
    CHECK(note.find("strategy: cannot be lowered") != std::string::npos);
    REQUIRE(t.size() == 2);
    CHECK(t[0].makespan == 11);  // the next best is now the best
    CHECK(t[1].makespan == 12);
  }
  SECTION("a strategy that simulates to other figures is dropped and named") {
    for (int field = 0; field < 4; ++field) {
      std::vector<Candidate> t = top;
      const std::string note =
          ResimulateTop(t, opt, [&](const Candidate& c) -> Result<Candidate> {
            Candidate e = c;
            if (c.makespan == 11) {
              if (field == 0) e.makespan += 1;
              if (field == 1) e.max_peak -= 1;
              if (field == 2) e.recomputed_layers += 1;
              if (field == 3) e.feasible = false;
            }
            return e;
          });
      INFO("field " << field << ": " << note);
      CHECK(note.find("not proved: strategy 2 of the search simulated again gives") == 0);
      REQUIRE(t.size() == 2);
      CHECK(t[0].makespan == 10);
      CHECK(t[1].makespan == 12);
    }
  }
  SECTION("past the deadline only the best is simulated again") {
    std::vector<Candidate> t = top;
    opt.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    int calls = 0;
    const std::string note = ResimulateTop(t, opt, [&](const Candidate& c) -> Result<Candidate> {
      ++calls;
      return c;
    });
    CHECK(note.empty());
    CHECK(calls == 1);
    REQUIRE(t.size() == 1);
    CHECK(t[0].makespan == 10);
  }
}

}  // namespace
}  // namespace ppb
