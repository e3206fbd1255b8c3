// The search shared across processes (SearchShare, EncodePart, DecodePart,
// MergeParts), with threads standing in for mpirun's ranks: whatever the
// number of processes and whichever asks first, the merged result equals
// one process's search — the best strategy and its time, the top list, the
// proof and the bound — and every unit is searched exactly once.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/search_problem.h"
#include "search/search.h"

namespace ppb {
namespace {

// The units granted so far and the least threshold, as rank 0 keeps them.
struct FakeLead {
  std::mutex mu;
  std::map<std::int64_t, int> granted;  // unit -> process
  Nanos least = -1;
};

// Runs `problem` as `n` processes (threads), each through EncodePart and
// DecodePart as on the wire, and merges the parts.
SearchResult Shared(const SearchProblem& problem, SearchOptions options, int n,
                    FakeLead& lead) {
  std::vector<std::string> texts(n);
  std::vector<SearchShare> shares(n);
  std::vector<std::thread> pool;
  for (int i = 0; i < n; ++i) {
    shares[i].processes = n;
    shares[i].lead = i == 0;
    shares[i].claim = [&lead, i](std::int64_t u) {
      std::lock_guard<std::mutex> lock(lead.mu);
      return lead.granted.emplace(u, i).second;
    };
    shares[i].exchange = [&lead](Nanos t) {
      std::lock_guard<std::mutex> lock(lead.mu);
      if (t >= 0 && (lead.least < 0 || t < lead.least)) lead.least = t;
      return lead.least;
    };
  }
  for (int i = 0; i < n; ++i) {
    pool.emplace_back([&, i]() {
      SearchOptions o = options;
      o.share = &shares[i];
      Result<SearchResult> r = Search(problem, o);
      texts[i] = r.ok() ? EncodePart(*r) : std::string("error");
    });
  }
  for (auto& t : pool) t.join();
  std::vector<SearchResult> parts;
  for (const std::string& text : texts) {
    Result<SearchResult> part = DecodePart(problem, text);
    REQUIRE(part.ok());
    parts.push_back(std::move(part).value());
  }
  Result<SearchResult> merged = MergeParts(problem, options, parts);
  REQUIRE(merged.ok());
  return *merged;
}

SearchProblem ProblemOf(const std::string& path, const CliOverrides& ov = {}) {
  Result<RunConfig> cfg = LoadConfig(path, ov);
  REQUIRE(cfg.ok());
  Result<SearchProblem> pr = BuildSearchProblem(*cfg);
  REQUIRE(pr.ok());
  return *pr;
}

void CheckSame(const SearchResult& one, const SearchResult& all) {
  REQUIRE(one.found == all.found);
  CHECK(one.proved_optimal == all.proved_optimal);
  CHECK(one.proved_infeasible == all.proved_infeasible);
  CHECK(one.lower_bound == all.lower_bound);
  CHECK(one.stop_reason == all.stop_reason);
  CHECK(one.min_capacity_needed == all.min_capacity_needed);
  REQUIRE(one.top.size() == all.top.size());
  for (size_t i = 0; i < one.top.size(); ++i) {
    INFO("top " << i);
    CHECK(one.top[i].makespan == all.top[i].makespan);
    CHECK(one.top[i].max_peak == all.top[i].max_peak);
    CHECK(one.top[i].choice == all.top[i].choice);
    CHECK(one.top[i].strategy.layers_per_stage == all.top[i].strategy.layers_per_stage);
    CHECK(one.top[i].strategy.recompute == all.top[i].strategy.recompute);
  }
}

}  // namespace

TEST_CASE("shared search: a placement search split over processes equals one",
          "[search-share]") {
  const SearchProblem pb = ProblemOf(std::string(PPB_TEST_DATA_DIR) + "/configs/hetero-4.yaml");
  REQUIRE(pb.search_placement);
  SearchOptions options;
  options.threads = 1;
  Result<SearchResult> one = Search(pb, options);
  REQUIRE(one.ok());
  REQUIRE(one->proved_optimal);
  for (int n : {1, 2, 3, 5}) {
    INFO(n << " processes");
    FakeLead lead;
    const SearchResult all = Shared(pb, options, n, lead);
    CheckSame(*one, all);
    CHECK(all.best.placement == one->best.placement);
    // Units are prefixes: at least 4 per process unless the orders run out.
    CHECK(!lead.granted.empty());
    // The shared threshold prunes soundly: never below the K-th best.
    CHECK((lead.least == -1 || lead.least >= one->top.back().makespan));
  }
}

TEST_CASE("shared search: schedule choices are the units", "[search-share]") {
  CliOverrides ov;
  ov.schedules = {"1f1b", "gpipe", "interleaved"};
  ov.virtual_stages_list = {1, 2};
  const SearchProblem pb = ProblemOf(std::string(PPB_TEST_DATA_DIR) + "/../../configs/example.yaml", ov);
  REQUIRE(pb.choices.size() >= 3);
  SearchOptions options;
  options.threads = 1;
  Result<SearchResult> one = Search(pb, options);
  REQUIRE(one.ok());
  for (int n : {2, 4}) {
    INFO(n << " processes");
    FakeLead lead;
    const SearchResult all = Shared(pb, options, n, lead);
    CheckSame(*one, all);
    CHECK(all.nodes == one->nodes);  // each choice searched once, as alone
    CHECK(lead.granted.size() == pb.choices.size());
  }
}

TEST_CASE("shared search: nothing fits, the least capacity after the merge",
          "[search-share]") {
  CliOverrides ov;
  ov.schedules = {"1f1b", "gpipe"};
  const SearchProblem pb =
      ProblemOf(std::string(PPB_TEST_DATA_DIR) + "/search_mpi/nofit.yaml", ov);
  SearchOptions options;
  options.threads = 1;
  Result<SearchResult> one = Search(pb, options);
  REQUIRE(one.ok());
  REQUIRE(one->proved_infeasible);
  FakeLead lead;
  const SearchResult all = Shared(pb, options, 2, lead);
  CheckSame(*one, all);
  CHECK(all.min_capacity_needed == one->min_capacity_needed);
  CHECK(all.binding_device == one->binding_device);
}

TEST_CASE("shared search: a malformed part is refused", "[search-share]") {
  const SearchProblem pb = ProblemOf(std::string(PPB_TEST_DATA_DIR) + "/configs/hetero-4.yaml");
  CHECK(!DecodePart(pb, "error").ok());
  CHECK(!DecodePart(pb, "ppb.search-part/1\ncandidate 0 2 1").ok());
  Result<SearchResult> r = DecodePart(pb, "ppb.search-part/1\nstate 1 1 0 5\nbogus 1\n");
  REQUIRE(!r.ok());
  CHECK(r.error().message.find("bogus 1") != std::string::npos);
}

}  // namespace ppb
