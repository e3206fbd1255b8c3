// The search under the zero-bubble generation's own model: a split
// backward frees part of a layer's stash at the end of I
// (activation_after_input_grad) and DualPipeV's overlapped F+B saves
// pipeline.fb_overlap of the shorter half. The search must find what the
// engine finds: its best equals the exhaustive optimum (every split and
// recompute choice simulated, tests/brute_force.h), its proof holds and its
// lower bound never exceeds that optimum.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "brute_force.h"
#include "core/engine.h"
#include "core/model.h"
#include "search/search.h"

namespace ppb {
namespace {

using namespace brute;  // NOLINT: the enumerator is this file's reference

SearchResult MustSearch(const SearchProblem& pr, const SearchOptions& opt) {
  Result<SearchResult> r = Search(pr, opt);
  if (!r.ok()) FAIL("Search: " << r.error().key << ": " << r.error().message);
  return std::move(r).value();
}

void SetCapacity(SearchProblem& pr, Bytes cap) {
  for (Device& d : pr.cluster.devices) d.memory_capacity = cap;
}

SearchProblem Base(int p, int m) {
  SearchProblem pr;
  pr.p = p;
  pr.m = m;
  pr.cluster.devices.assign(p, Device{kUnlimited, 1.0});
  pr.cluster.links.assign(p, Link{100, 0});
  return pr;
}

Layer Decoder(const std::string& name, Bytes activation, std::optional<Bytes> after_i) {
  Layer l;
  l.name = name;
  l.forward = 1000;
  l.backward_input = 1000;
  l.backward_weight = 1000;
  l.split_backward = true;
  l.static_memory = 50;
  l.activation = activation;
  l.activation_after_input_grad = after_i;
  l.output_bytes = 10;
  return l;
}

// The search's answer equals the enumerator's optimum under the problem's
// capacities, proved, with a valid lower bound; every reported peak is the
// engine's.
void CheckAgainstBruteForce(const SearchProblem& pr, const std::vector<Point>& points,
                            std::uint64_t seed) {
  const std::optional<Objective> optimum = Optimum(points, Capacities(pr));
  REQUIRE(optimum);
  SearchOptions opt;
  opt.seed = seed;
  opt.threads = 1;
  const SearchResult r = MustSearch(pr, opt);
  INFO("search: " << r.stop_reason << ", best " << Show(ObjectiveOf(r.best)) << " "
                  << Show(r.best.strategy) << " choice " << r.best.choice << "; optimum "
                  << Show(*optimum));
  REQUIRE(r.found);
  CHECK(r.proved_optimal);
  CHECK(ObjectiveOf(r.best) == *optimum);
  CHECK(r.lower_bound <= std::get<0>(*optimum));
  Engine engine;
  const SimResult sim = Simulate(pr, r.best.choice, r.best.strategy, engine);
  CHECK(sim.makespan == r.best.makespan);
  for (int d = 0; d < pr.p; ++d) {
    CHECK(sim.devices[d].peak_memory == r.best.devices[d].peak_memory);
    CHECK(sim.devices[d].peak_memory <= pr.cluster.devices[d].memory_capacity);
  }
}

TEST_CASE("search: a split that fits only because I frees part of the stash is found",
          "[search][zb]") {
  // ZB-H1 (interleaved-zero-bubble, v = 1), p = 2, m = 4; five decoders
  // of 100 bytes of which 20 stay from the end of I to the end of W.
  // (ZB-V's peak falls in its warm-up, before any I: there the release
  // changes times, not feasibility; the random instances below cover it.)
  {
    SearchProblem pr = Base(2, 4);
    pr.choices.push_back(ScheduleChoice{"interleaved-zero-bubble", 1, {}});
    for (int i = 0; i < 5; ++i) pr.layers.push_back(Decoder("d" + std::to_string(i), 100, 20));
    SearchProblem held = pr;  // the same without the release: all held until W
    for (Layer& l : held.layers) l.activation_after_input_grad.reset();
    const std::vector<Point> points = Enumerate(pr);
    const std::vector<Point> points_held = Enumerate(held);
    // The least capacity at which a split fits with the release; without
    // it nothing fits there, so the release decides feasibility.
    const Bytes cap = MinUniformCapacity(points);
    INFO("least capacity " << cap << " with the release, " << MinUniformCapacity(points_held)
                           << " without");
    REQUIRE(MinUniformCapacity(points_held) > cap);
    SetCapacity(pr, cap);
    SetCapacity(held, cap);
    CheckAgainstBruteForce(pr, points, 1);
    CHECK(!Optimum(points_held, Capacities(held)));
    // And without the release the search says nothing fits there.
    SearchOptions opt;
    opt.threads = 1;
    const SearchResult none = MustSearch(held, opt);
    CHECK(!none.found);
    CHECK(none.min_capacity_needed == MinUniformCapacity(points_held));
  }
}

// Random small instances of the zero-bubble schedules with a release at I
// (and recompute modes, which hold after I at most what they stash) and,
// for dualpipev, an overlapped share.
SearchProblem RandomZbProblem(std::mt19937_64& rng) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int kind = uni(0, 2);
  SearchProblem pr = Base(2, kind == 2 ? 4 : 2 * uni(1, 2));
  pr.choices.push_back(kind == 0   ? ScheduleChoice{"interleaved-zero-bubble", 1, {}}
                       : kind == 1 ? ScheduleChoice{"zbv-zero-bubble", 2, {}}
                                   : ScheduleChoice{"dualpipev", 2, {}});
  if (kind == 2) pr.fb_overlap_ppm = 250'000 * uni(1, 4);
  pr.comm = uni(0, 3) == 0 ? CommMode::Blocking : CommMode::Overlapped;
  const int n = uni(pr.p * pr.choices[0].v, 6);
  for (int i = 0; i < n; ++i) {
    Layer l = Decoder("l" + std::to_string(i), uni(60, 240), std::nullopt);
    l.forward = uni(800, 1600);
    l.backward_input = l.forward * uni(8, 14) / 10;
    l.backward_weight = l.forward * uni(5, 12) / 10;
    l.static_memory = uni(100, 400);
    l.workspace = uni(0, 1) ? uni(0, 40) : 0;
    if (uni(0, 3) != 0) l.activation_after_input_grad = l.activation * uni(1, 9) / 10;
    if (i < 3 && uni(0, 1)) {
      l.recompute.push_back(RecomputeOption{"full", l.activation / uni(3, 6), l.forward});
    }
    pr.layers.push_back(l);
  }
  return pr;
}

TEST_CASE("search: exhaustive optimum with release at I and overlapped F+B", "[search][zb]") {
  int binding = 0, dualpipe = 0;
  for (std::uint64_t seed = 4001; seed < 4001 + 36; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    SearchProblem pr = RandomZbProblem(rng);
    INFO(Describe(pr) << "fb_overlap_ppm " << pr.fb_overlap_ppm);
    const std::vector<Point> points = Enumerate(pr);
    // A capacity between the least at which something fits and the least
    // at which the fastest strategy fits.
    const Bytes lo = MinUniformCapacity(points);
    const Point& fastest = *OptimalPoint(points, std::vector<Bytes>(pr.p, kUnlimited));
    const Bytes hi = fastest.max_peak;
    const Bytes cap = lo + (hi - lo) * std::uniform_int_distribution<int>(0, 3)(rng) / 4;
    SetCapacity(pr, cap);
    binding += cap < hi;
    dualpipe += pr.fb_overlap_ppm > 0;
    CheckAgainstBruteForce(pr, points, seed);
  }
  CHECK(binding >= 12);
  CHECK(dualpipe >= 6);
}

TEST_CASE("search: fb_overlap shortens dualpipev and its bound stays below the optimum",
          "[search][zb]") {
  SearchProblem pr = Base(2, 4);
  pr.choices.push_back(ScheduleChoice{"dualpipev", 2, {}});
  for (int i = 0; i < 6; ++i) pr.layers.push_back(Decoder("d" + std::to_string(i), 100, std::nullopt));
  SearchOptions opt;
  opt.threads = 1;
  Nanos previous = 0;
  for (std::int64_t ppm : {0, 500'000, 1'000'000}) {
    INFO("fb_overlap_ppm " << ppm);
    pr.fb_overlap_ppm = ppm;
    const std::vector<Point> points = Enumerate(pr);
    CheckAgainstBruteForce(pr, points, 1);
    const SearchResult r = MustSearch(pr, opt);
    // More overlap, shorter iteration (the pairs run F + B - share x min).
    if (ppm > 0) CHECK(r.best.makespan < previous);
    previous = r.best.makespan;
  }
}

TEST_CASE("search: zb-1p/zb-2p/zb-v plan for the mean stage, so identical layers split "
          "evenly run the order simulate plans",
          "[search][zb]") {
  // Identical layers, two per stage: the even split's stages are the mean
  // stage, so the search's one order is the one `simulate` plans for that
  // split, and the search's best is no slower than it. Slow links (800 ns
  // against stages of 2,000 - 2,400 ns) make the order matter.
  for (const char* schedule : {"zb-1p", "zb-2p", "zb-v"}) {
    INFO(schedule);
    const int v = std::string(schedule) == "zb-v" ? 2 : 1;
    SearchProblem pr = Base(3, 6);
    for (Link& l : pr.cluster.links) l.latency = 800;
    pr.choices.push_back(ScheduleChoice{schedule, v, {}});
    for (int i = 0; i < 2 * 3 * v; ++i) {
      Layer l = Decoder("d" + std::to_string(i), 100, std::nullopt);
      l.backward_input = 1200;
      l.backward_weight = 600;
      pr.layers.push_back(l);
    }
    Strategy even;
    even.layers_per_stage.assign(3 * v, 2);
    even.recompute.assign(pr.layers.size(), 0);
    Engine engine;
    const SimResult planned = Simulate(pr, 0, even, engine);
    Result<Candidate> searched_order = Evaluate(pr, 0, even);
    REQUIRE(searched_order.ok());
    CHECK(searched_order->makespan == planned.makespan);
    SearchOptions opt;
    opt.threads = 1;
    const SearchResult r = MustSearch(pr, opt);
    REQUIRE(r.found);
    CHECK(r.best.makespan <= planned.makespan);
  }
}

}  // namespace
}  // namespace ppb
