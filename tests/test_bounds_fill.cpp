// The open-tree bound where memory forces recompute and few micro-batches
// fill the pipeline (issue 13): m close to p, capacities between the least
// at which any strategy fits and the most any needs, so that how much a
// rank must recompute depends on how many decoders it holds. The bound
// charges each rank's recompute at its own count (an exact knapsack over
// the ranks, search/path_bound.cpp Respond); it must stay at or below the
// exhaustive optimum (tests/brute_force.h) of every instance, at every
// node limit. The result also says which side of the gap set the bound.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <random>
#include <set>
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

// Decoders between an embedding and a head; each decoder offers a
// selective and a full recompute (keeping 1/2 and 1/8 of its activation);
// m = p or p + 1 (1F1B or GPipe), or m = p (interleaved, v = 2, p = 2).
SearchProblem RandomTightStack(std::mt19937_64& rng) {
  SearchProblem pr;
  const int kind = Uniform(rng, 0, 3);
  ScheduleChoice c;
  c.schedule = kind == 0 ? "interleaved" : kind == 1 ? "gpipe" : "1f1b";
  c.v = kind == 0 ? 2 : 1;
  pr.p = kind == 0 ? 2 : Uniform(rng, 2, 3);
  pr.m = kind == 0 ? 2 * Uniform(rng, 1, 2) : pr.p + Uniform(rng, 0, 1);
  pr.choices = {c};
  auto layer = [&](const char* name, LayerKind kind_, Nanos f, Bytes act) {
    Layer x;
    x.name = name;
    x.kind = kind_;
    x.forward = f;
    x.backward_input = 2 * f;
    x.static_memory = Uniform(rng, 1, 4) << 20;
    x.activation = act;
    x.output_bytes = 1 << 16;
    return x;
  };
  pr.layers.push_back(layer("emb", LayerKind::Embedding, Uniform(rng, 1, 3) * 10'000, 1 << 20));
  const int decoders = pr.p * c.v + Uniform(rng, 0, c.v == 1 ? 3 : 2);
  const Bytes act = Uniform(rng, 4, 8) << 20;
  Layer d = layer("d", LayerKind::Decoder, Uniform(rng, 5, 9) * 100'000, act);
  d.recompute.push_back(RecomputeOption{"selective", act / 2, Uniform(rng, 1, 3) * 50'000});
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

TEST_CASE("the open-tree bound with memory-forced recompute never exceeds the optimum",
          "[search][bounds]") {
  const std::set<std::string> sources{"root bound", "tree search", "open-tree bound",
                                      "incumbent"};
  int proved_at_limit = 0;
  for (int i = 0; i < 40; ++i) {
    const std::uint64_t seed = 13001 + 7919 * static_cast<std::uint64_t>(i);
    std::mt19937_64 rng(seed);
    SearchProblem pr = RandomTightStack(rng);
    const std::vector<Point> points = Enumerate(pr);
    brute::SetTightCapacity(rng, pr, points, 0.5);
    INFO("seed " << seed << "\n" << Describe(pr));
    const std::optional<brute::Objective> best = Optimum(points, Capacities(pr));
    REQUIRE(best.has_value());
    const Nanos opt_makespan = std::get<0>(*best);
    for (std::int64_t limit : {1, 3, 20, 0}) {
      SearchOptions opt;
      opt.node_limit = limit;
      opt.threads = 1;
      const SearchResult r = MustSearch(pr, opt);
      INFO("node limit " << limit << ": " << r.stop_reason << ", lb " << r.lower_bound
                         << " from " << r.bound_source << ", optimum " << opt_makespan);
      CHECK(r.lower_bound <= opt_makespan);
      if (!r.found) {  // a node limit may stop before anything fits
        CHECK(limit > 0);
        continue;
      }
      CHECK(r.best.makespan >= opt_makespan);
      CHECK(sources.count(r.bound_source) == 1);
      if (r.proved_optimal) {
        // Proved: the optimum, ties on memory and recompute included.
        CHECK(brute::ObjectiveOf(r.best) == *best);
        CHECK(r.bound_source == "incumbent");
      } else {
        CHECK(limit > 0);
      }
      // The open tree's bound proved what the tree, stopped at its node
      // limit, could not.
      if (r.proved_optimal && limit > 0 && r.nodes >= limit) ++proved_at_limit;
      CHECK(r.bound_time_s >= 0);
      CHECK(r.bound_time_s <= r.solve_time_s);
    }
  }
  // The instances do exercise the open-tree bound: it proves the optimum
  // of trees stopped at their node limit (every such tree here, since it
  // evaluates the splits it meets whole).
  CHECK(proved_at_limit > 0);
}

}  // namespace
}  // namespace ppb
