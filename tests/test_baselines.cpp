// search's baselines (search/baselines.cpp): with several schedule choices
// the last row is the best of them with the even split and no recompute —
// what trying each schedule by hand gives — checked against every choice
// simulated one by one.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/search_problem.h"
#include "core/lower.h"
#include "search/search.h"

namespace ppb {

TEST_CASE("baselines: the best schedule choice with the even split", "[search][baselines]") {
  CliOverrides ov;
  ov.schedules = {"gpipe", "1f1b", "interleaved"};
  ov.virtual_stages_list = {2, 4};
  Result<RunConfig> cfg = LoadConfig(std::string(PPB_TEST_DATA_DIR) + "/../../configs/example.yaml", ov);
  REQUIRE(cfg.ok());
  Result<SearchProblem> pb = BuildSearchProblem(*cfg);
  REQUIRE(pb.ok());
  REQUIRE(pb->choices.size() >= 3);
  const std::vector<Baseline> rows = Baselines(*pb, 0);
  REQUIRE(!rows.empty());
  const Baseline& best = rows.back();
  REQUIRE(best.applicable);
  // Every choice by hand: none is Better than the row, and the row is one.
  bool found = false;
  for (int k = 0; k < static_cast<int>(pb->choices.size()); ++k) {
    Result<Candidate> c = Evaluate(*pb, k, EvenStrategy(pb->layers, pb->p, pb->choices[k].v));
    if (!c.ok()) continue;
    CHECK_FALSE(Better(*c, best.candidate));
    found = found || (k == best.candidate.choice && c->makespan == best.candidate.makespan);
  }
  CHECK(found);
  const ScheduleChoice& ch = pb->choices[best.candidate.choice];
  CHECK(best.name == "even split, no recompute, best of the " +
                         std::to_string(pb->choices.size()) + " schedule choices: " +
                         ch.schedule + " v=" + std::to_string(ch.v) +
                         (ch.params.group > 0 ? " g=" + std::to_string(ch.params.group) : ""));
  // One choice: no such row.
  SearchProblem one = *pb;
  one.choices.resize(1);
  for (const Baseline& b : Baselines(one, 0)) CHECK(b.name.find("best of") == std::string::npos);
}

}  // namespace ppb
