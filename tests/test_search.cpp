// Search tests, written independently of search/ so they can catch its
// bugs. An exhaustive enumerator (tests/brute_force.h) simulates every
// strategy of small problems (every contiguous split of the layers over the
// p*v stages times every per-layer recompute choice, for every schedule
// choice) with Lower(), the schedule registry and the engine, and gives the
// true optimum under the search's objective: minimum makespan with every
// device's peak memory within its capacity; ties by lower maximum peak, then
// fewer recomputed layers. The random, reproducible instances are
// tests/random_instances.h's. The lower bounds of open trees are checked in
// test_search_bounds.cpp, the LP behind them in test_column_lp.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/model.h"
#include "search/search.h"
#include "brute_force.h"
#include "random_instances.h"

namespace ppb {

using namespace brute;  // NOLINT: the enumerator is this file's subject

TEST_CASE("brute force: the enumerator visits every split and recompute choice",
          "[search][bruteforce]") {
  // 5 layers over 3 stages: C(4, 2) = 6 splits; with empty chunks C(7, 2) = 21.
  std::vector<int> counts;
  int splits = 0;
  ForEachSplit(5, 3, 1, counts, [&](const std::vector<int>& s) {
    CHECK(s[0] + s[1] + s[2] == 5);
    ++splits;
  });
  CHECK(splits == 6);
  splits = 0;
  ForEachSplit(5, 3, 0, counts, [&](const std::vector<int>&) { ++splits; });
  CHECK(splits == 21);
  std::vector<Layer> layers(3);
  layers[0].recompute.resize(2);
  layers[2].recompute.resize(1);
  std::set<std::vector<std::uint8_t>> seen;
  ForEachRecompute(layers, [&](const std::vector<std::uint8_t>& rc) {
    CHECK(rc[1] == 0);
    seen.insert(rc);
  });
  CHECK(seen.size() == 6);
}

TEST_CASE("brute force: a hand-checked instance", "[search][bruteforce]") {
  // Two equal layers on two ranks, 1F1B, m = 1: the only split is 1|1, and the
  // makespan is F + F + B + B = 4 + 4 + 8 + 8 = 24 without recompute, or
  // 24 + 3 when layer 0 recomputes (extra forward before its backward).
  SearchProblem pr;
  pr.p = 2;
  pr.m = 1;
  pr.choices = {ScheduleChoice{}};
  for (int i = 0; i < 2; ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.forward = 4;
    l.backward_input = 8;
    l.static_memory = 100;
    l.activation = 50;
    pr.layers.push_back(l);
  }
  pr.layers[0].recompute.push_back({"full", 10, 3});
  pr.cluster.devices.assign(2, Device{1000, 1.0});
  pr.cluster.links.assign(2, Link{});
  const std::vector<Point> points = Enumerate(pr);
  REQUIRE(points.size() == 2);
  CHECK(points[0].makespan == 24);
  CHECK(points[0].peaks == std::vector<Bytes>{150, 150});
  CHECK(points[1].makespan == 27);
  // Recompute keeps 10, then re-materializes 50 - 10 during the backward.
  CHECK(points[1].peaks == std::vector<Bytes>{150, 150});
  CHECK(points[1].recomputed == 1);
  CHECK(*Optimum(points, {1000, 1000}) == Objective{24, 150, 0});
  CHECK(!Optimum(points, {149, 1000}));
  CHECK(MinUniformCapacity(points) == 150);
}

TEST_CASE("search finds the exhaustive optimum and proves it", "[search]") {
  int binding = 0, multi = 0;
  const std::vector<std::uint64_t> seeds = Seeds(1001, 80);
  for (std::uint64_t seed : seeds) {
    INFO("seed " << seed);
    const Instance in = RandomFeasibleInstance(seed, InstanceOptions{});
    INFO(Describe(in.problem));
    const Point& opt_pt = *OptimalPoint(in.points, Capacities(in.problem));
    INFO("strategies " << in.points.size() << ", optimum " << Show(*in.optimum)
                       << " at choice " << opt_pt.choice << " "
                       << Show(opt_pt.strategy));
    binding += in.memory_binds;
    multi += in.problem.choices.size() > 1;
    SearchOptions opt;
    opt.seed = seed;
    const SearchResult r = MustSearch(in.problem, opt);
    INFO("search: " << r.stop_reason << ", best " << Show(ObjectiveOf(r.best))
                    << " " << Show(r.best.strategy) << " choice "
                    << r.best.choice);
    REQUIRE(r.found);
    CHECK(r.proved_optimal);
    CHECK(ObjectiveOf(r.best) == *in.optimum);
    CHECK(r.lower_bound <= std::get<0>(*in.optimum));
    CheckReported(in.problem, opt, r);
  }
  // The generator must produce instances where memory decides the answer.
  CHECK(binding >= static_cast<int>(seeds.size()) / 4);
  CHECK(multi >= static_cast<int>(seeds.size()) / 6);
}

TEST_CASE("search finds the exhaustive optimum under the zero-bubble schedules",
          "[search]") {
  int v_placed = 0;
  for (std::uint64_t seed : Seeds(7001, 40)) {
    INFO("seed " << seed);
    InstanceOptions io;
    io.zero_bubble = true;
    const Instance in = RandomFeasibleInstance(seed, io);
    INFO(Describe(in.problem));
    for (const ScheduleChoice& c : in.problem.choices) {
      v_placed += c.schedule == "zbv-zero-bubble";
    }
    SearchOptions opt;
    opt.seed = seed;
    const SearchResult r = MustSearch(in.problem, opt);
    INFO("search: " << r.stop_reason << ", best " << Show(ObjectiveOf(r.best))
                    << " " << Show(r.best.strategy) << " choice " << r.best.choice);
    REQUIRE(r.found);
    CHECK(r.proved_optimal);
    CHECK(ObjectiveOf(r.best) == *in.optimum);
    CHECK(r.lower_bound <= std::get<0>(*in.optimum));
    CheckReported(in.problem, opt, r);
  }
  CHECK(v_placed >= 10);
}

TEST_CASE("infeasible problems report the smallest uniform capacity that fits",
          "[search]") {
  for (std::uint64_t seed : Seeds(5003, 14)) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    InstanceOptions io;
    io.budget = 1200;
    SearchProblem pr = RandomProblem(rng, io);
    const std::vector<Point> points = Enumerate(pr);
    const Bytes needed = MinUniformCapacity(points);
    // Every device below `needed`: each strategy exceeds capacity on the
    // device where it peaks. Uniform or per-device.
    std::vector<Bytes> caps(pr.p, needed - 1);
    if (Chance(rng, 0.5)) {
      for (Bytes& c : caps) c -= Uniform(rng, 0, static_cast<int>(needed / 4));
    }
    SetCapacities(pr, caps);
    REQUIRE(!Optimum(points, caps));
    INFO(Describe(pr));
    INFO("needed " << needed);
    SearchOptions opt;
    const SearchResult r = MustSearch(pr, opt);
    CHECK(!r.found);
    // No limit: the whole tree was closed, proving there is no answer.
    CHECK(r.proved_infeasible);
    CHECK_FALSE(r.proved_optimal);
    CHECK(r.stop_reason == "proved infeasible");
    CHECK(r.top.empty());
    CHECK(r.min_capacity_needed == needed);
    // The binding device: where some strategy that fits at `needed` peaks.
    std::set<int> binding;
    for (const Point& pt : points) {
      if (pt.max_peak != needed) continue;
      for (int d = 0; d < pr.p; ++d) {
        if (pt.peaks[d] == needed) binding.insert(d);
      }
    }
    INFO("binding device " << r.binding_device);
    CHECK(binding.count(r.binding_device) == 1);
    CheckReported(pr, opt, r);

    // With every device at `needed`, the problem becomes feasible.
    SetCapacities(pr, std::vector<Bytes>(pr.p, needed));
    const SearchResult fits = MustSearch(pr, opt);
    CHECK(fits.found);
    CHECK(fits.best.max_peak == needed);
    CHECK(ObjectiveOf(fits.best) ==
          *Optimum(points, std::vector<Bytes>(pr.p, needed)));
  }
}

TEST_CASE("a time limit stops the search with valid results", "[search]") {
  for (std::uint64_t seed : Seeds(11003, 4)) {
    INFO("seed " << seed);
    InstanceOptions io;
    io.budget = 1500;
    const Instance in = RandomFeasibleInstance(seed, io);
    INFO(Describe(in.problem));
    SearchOptions opt;
    opt.time_limit_s = 1e-9;
    opt.seed = seed;
    const SearchResult r = MustSearch(in.problem, opt);
    INFO("search: " << r.stop_reason << " nodes " << r.nodes);
    CHECK(r.lower_bound <= std::get<0>(*in.optimum));
    CHECK(r.solve_time_s >= 0);
    CHECK(r.solve_time_s < 5);
    if (r.found) CHECK(ObjectiveOf(r.best) >= *in.optimum);
    if (r.proved_optimal) CHECK(ObjectiveOf(r.best) == *in.optimum);
    CheckReported(in.problem, opt, r);
  }
}

TEST_CASE("every reported strategy fits and re-simulates to what is reported",
          "[search]") {
  for (std::uint64_t seed : Seeds(12007, 8)) {
    INFO("seed " << seed);
    InstanceOptions io;
    io.budget = 1500;
    const Instance in = RandomFeasibleInstance(seed, io);
    INFO(Describe(in.problem));
    // Count the strategies that fit: top can hold at most that many.
    int fitting = 0;
    for (const Point& pt : in.points)
      fitting += Fits(pt, Capacities(in.problem));
    for (int k : {1, 3, 12}) {
      INFO("top_k " << k);
      SearchOptions opt;
      opt.top_k = k;
      opt.seed = seed;
      const SearchResult r = MustSearch(in.problem, opt);
      REQUIRE(r.found);
      CHECK(static_cast<int>(r.top.size()) <= std::min(k, fitting));
      CheckReported(in.problem, opt, r);
    }
  }
}

TEST_CASE(
    "Evaluate simulates a strategy like Lower, the schedule and the engine",
    "[search]") {
  for (std::uint64_t seed : Seeds(15013, 6)) {
    INFO("seed " << seed);
    InstanceOptions io;
    io.budget = 600;
    const Instance in = RandomFeasibleInstance(seed, io);
    INFO(Describe(in.problem));
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 20; ++i) {
      const Point& pt =
          in.points[Uniform(rng, 0, static_cast<int>(in.points.size()) - 1)];
      Result<Candidate> c = Evaluate(in.problem, pt.choice, pt.strategy);
      REQUIRE(c.ok());
      CHECK(c->choice == pt.choice);
      CHECK(c->strategy.layers_per_stage == pt.strategy.layers_per_stage);
      CHECK(c->strategy.recompute == pt.strategy.recompute);
      CheckCandidate(in.problem, *c, false);
      CHECK(c->feasible == Fits(pt, Capacities(in.problem)));
    }
  }
}

TEST_CASE("search is deterministic for a seed and node limit", "[search]") {
  for (std::uint64_t seed : Seeds(20011, 6)) {
    INFO("seed " << seed);
    InstanceOptions io;
    io.budget = 1500;
    const Instance in = RandomFeasibleInstance(seed, io);
    INFO(Describe(in.problem));
    for (std::int64_t limit : {0, 3, 11}) {
      INFO("node limit " << limit);
      SearchOptions opt;
      opt.node_limit = limit;
      opt.seed = seed * 31 + 5;
      const SearchResult a = MustSearch(in.problem, opt);
      const SearchResult b = MustSearch(in.problem, opt);
      CHECK(a.found == b.found);
      CHECK(a.proved_optimal == b.proved_optimal);
      CHECK(a.nodes == b.nodes);
      CHECK(a.evaluations == b.evaluations);
      CHECK(a.lower_bound == b.lower_bound);
      CHECK(a.stop_reason == b.stop_reason);
      if (a.found && b.found) {
        CHECK(SameStrategy(a.best, b.best));
        CHECK(a.best.makespan == b.best.makespan);
      }
      REQUIRE(a.top.size() == b.top.size());
      for (size_t i = 0; i < a.top.size(); ++i)
        CHECK(SameStrategy(a.top[i], b.top[i]));
    }
  }
}

TEST_CASE("searches on several threads find the same optimum", "[search]") {
  for (std::uint64_t seed : Seeds(23003, 4)) {
    INFO("seed " << seed);
    InstanceOptions io;
    io.budget = 1500;
    const Instance in = RandomFeasibleInstance(seed, io);
    INFO(Describe(in.problem));
    SearchOptions opt;
    opt.threads = 3;
    opt.seed = seed;
    const SearchResult r = MustSearch(in.problem, opt);
    REQUIRE(r.found);
    CHECK(r.proved_optimal);
    CHECK(ObjectiveOf(r.best) == *in.optimum);
    CheckReported(in.problem, opt, r);
  }
}

TEST_CASE("the even-split baseline is EvenStrategy simulated", "[search]") {
  for (std::uint64_t seed : Seeds(30011, 10)) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    InstanceOptions io;
    io.budget = 600;
    SearchProblem pr = RandomProblem(rng, io);
    // Capacities from the even split's own peaks: sometimes it fits, sometimes
    // one device is one byte short.
    Engine engine;
    for (int ci = 0; ci < static_cast<int>(pr.choices.size()); ++ci) {
      INFO("choice " << ci);
      const int v = pr.choices[ci].v;
      const Strategy even = EvenStrategy(pr.layers, pr.p, v);
      bool valid = true;
      for (int c : even.layers_per_stage)
        valid = valid && (c > 0 || pr.allow_empty_chunks);
      if (!valid) continue;  // the baseline may say why it does not apply
      const SimResult base = Simulate(pr, ci, even, engine);
      std::vector<Bytes> caps;
      for (const DeviceStats& d : base.devices) caps.push_back(d.peak_memory);
      const bool short_one = Chance(rng, 0.5);
      if (short_one) caps[Uniform(rng, 0, pr.p - 1)] -= 1;
      SetCapacities(pr, caps);
      INFO(Describe(pr));

      const std::vector<Baseline> baselines = Baselines(pr, ci);
      const Baseline* no_rc = nullptr;
      for (const Baseline& b : baselines) {
        if (b.name == "even split, no recompute") no_rc = &b;
      }
      REQUIRE(no_rc != nullptr);
      REQUIRE(no_rc->applicable);
      const Candidate& c = no_rc->candidate;
      CHECK(c.choice == ci);
      CHECK(c.strategy.layers_per_stage == even.layers_per_stage);
      CHECK(c.strategy.recompute == even.recompute);
      CHECK(c.makespan == base.makespan);
      CHECK(c.recomputed_layers == 0);
      CHECK(c.feasible == !short_one);
      CheckCandidate(pr, c, false);
      for (const Baseline& b : baselines) {
        INFO("baseline " << b.name);
        CHECK(!b.name.empty());
        if (b.applicable) {
          CheckCandidate(pr, b.candidate, false);
        } else {
          CHECK(!b.why_not.empty());
        }
      }
    }
  }
}

}  // namespace ppb
