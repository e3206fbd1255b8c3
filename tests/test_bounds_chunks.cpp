// The open-tree bound prices a rank by its decoders per chunk (v > 1:
// search/chunk_recompute.cpp, the recompute those counts force, every
// recompute mode enumerated) - issue 13. Random small instances (p 2-4,
// v 1-3, m 1-6, gpipe / 1f1b / interleaved) whose decoders offer three
// recompute modes (more than StackRecomputeFront enumerates) and whose
// capacity forces recompute: the bound must stay at or below the
// exhaustive optimum (tests/brute_force.h) at every node limit, and a
// proof must agree with it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "brute_force.h"
#include "random_instances.h"

namespace ppb {
namespace {

using brute::Capacities;
using brute::Uniform;
using brute::Describe;
using brute::Enumerate;
using brute::Optimum;
using brute::Point;

// An embedding, p*v (+0..1) decoders with three recompute modes, a head.
SearchProblem RandomThreeModeStack(std::mt19937_64& rng) {
  SearchProblem pr;
  // 0, 1: interleaved v = 2; 2: gpipe; 3: 1f1b; 4: interleaved v = 3.
  const int kind = Uniform(rng, 0, 4);
  ScheduleChoice c;
  c.schedule = kind <= 1 || kind == 4 ? "interleaved" : kind == 2 ? "gpipe" : "1f1b";
  c.v = kind <= 1 ? 2 : kind == 4 ? 3 : 1;
  pr.p = c.v > 1 ? 2 : Uniform(rng, 2, 4);
  pr.m = c.v > 1 ? 2 * Uniform(rng, 1, 3) : Uniform(rng, 1, 6);
  pr.choices = {c};
  auto layer = [&](const char* name, LayerKind kind_, Nanos f, Bytes act) {
    Layer x;
    x.name = name;
    x.kind = kind_;
    x.forward = f;
    x.backward_input = 2 * f;
    x.static_memory = Uniform(rng, 1, 4) << 20;
    x.activation = act;
    x.workspace = Uniform(rng, 0, 2) << 20;
    x.output_bytes = 1 << 16;
    return x;
  };
  pr.layers.push_back(layer("emb", LayerKind::Embedding, Uniform(rng, 1, 3) * 10'000, 1 << 20));
  const int decoders = pr.p * c.v + (pr.p * c.v <= 4 ? Uniform(rng, 0, 1) : 0);
  const Bytes act = Uniform(rng, 4, 8) << 20;
  Layer d = layer("d", LayerKind::Decoder, Uniform(rng, 5, 9) * 100'000, act);
  d.recompute.push_back(RecomputeOption{"selective", act / 2, Uniform(rng, 1, 3) * 50'000});
  d.recompute.push_back(RecomputeOption{"comm", act * 3 / 4, Uniform(rng, 1, 2) * 20'000});
  d.recompute.push_back(RecomputeOption{"full", act / 8, d.forward});
  for (int i = 0; i < decoders; ++i) {
    d.name = "d" + std::to_string(i);
    pr.layers.push_back(d);
  }
  pr.layers.push_back(layer("head", LayerKind::Head, Uniform(rng, 2, 6) * 100'000, 2 << 20));
  for (int r = 0; r < pr.p; ++r) {
    pr.cluster.devices.push_back(Device{brute::kUnlimited, 1.0});
    pr.cluster.links.push_back(Link{Uniform(rng, 0, 20) * 1000, 10'000'000'000});
  }
  return pr;
}

SearchResult MustSearch(const SearchProblem& pr, const SearchOptions& opt) {
  Result<SearchResult> r = Search(pr, opt);
  if (!r.ok()) FAIL("Search: " << r.error().key << ": " << r.error().message);
  return std::move(r).value();
}

TEST_CASE("the open-tree bound priced per chunk never exceeds the optimum",
          "[search][bounds]") {
  int proved_at_limit = 0, interleaved = 0, three = 0;
  for (int i = 0; i < 24; ++i) {
    const std::uint64_t seed = 41'003 + 6'007 * static_cast<std::uint64_t>(i);
    std::mt19937_64 rng(seed);
    SearchProblem pr = RandomThreeModeStack(rng);
    const std::vector<Point> points = Enumerate(pr);
    // A uniform capacity between the least at which something fits and
    // the largest max peak: at the low end most ranks must recompute.
    const Bytes least = brute::MinUniformCapacity(points);
    Bytes most = least;
    for (const Point& pt : points) most = std::max(most, pt.max_peak);
    const double q = std::uniform_real_distribution<double>(0.0, 0.4)(rng);
    for (auto& dv : pr.cluster.devices) {
      dv.memory_capacity = least + static_cast<Bytes>(q * static_cast<double>(most - least));
    }
    INFO("seed " << seed << "\n" << Describe(pr));
    const std::optional<brute::Objective> best = Optimum(points, Capacities(pr));
    REQUIRE(best.has_value());
    const Nanos opt_makespan = std::get<0>(*best);
    if (pr.choices[0].v > 1) ++interleaved;
    if (pr.choices[0].v == 3) ++three;
    for (std::int64_t limit : {1, 4, 0}) {
      SearchOptions opt;
      opt.node_limit = limit;
      opt.threads = 1;
      const SearchResult r = MustSearch(pr, opt);
      INFO("node limit " << limit << ": " << r.stop_reason << ", lb " << r.lower_bound
                         << " from " << r.bound_source << ", optimum " << opt_makespan);
      CHECK(r.lower_bound <= opt_makespan);
      if (!r.found) {
        CHECK(limit > 0);
        continue;
      }
      CHECK(r.best.makespan >= opt_makespan);
      // Proved: the optimum, ties on memory and recompute included.
      if (r.proved_optimal) CHECK(brute::ObjectiveOf(r.best) == *best);
      if (limit == 0) CHECK(r.proved_optimal);
      // The open tree's bound proved what the tree, stopped at its node
      // limit, could not.
      if (r.proved_optimal && limit > 0 && r.nodes >= limit) ++proved_at_limit;
    }
  }
  CHECK(interleaved > 0);
  CHECK(three > 0);
  // The instances do exercise the open-tree bound: it proves the optimum
  // of trees stopped at their node limit (every such tree here, since it
  // evaluates the splits it meets whole).
  CHECK(proved_at_limit > 0);
}

}  // namespace
}  // namespace ppb
