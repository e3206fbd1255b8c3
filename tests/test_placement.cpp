// Placement search tests: which device runs which rank, jointly with the
// split and the recompute. The reference is exhaustive: every permutation of
// the devices (no symmetry breaking), and for each every strategy enumerated
// and simulated by brute_force.h, independently of search.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "brute_force.h"
#include "core/topology.h"
#include "search/search.h"

namespace ppb {
namespace {

using namespace brute;  // NOLINT

int Pick(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

std::string ShowTopology(const Topology& t) {
  std::ostringstream out;
  for (size_t i = 0; i < t.types.size(); ++i) {
    out << "type " << t.types[i].name << " speed=" << t.types[i].speed
        << " memory=" << t.types[i].memory_capacity << "\n";
  }
  for (int d = 0; d < t.num_devices(); ++d) {
    out << "device " << d << " type=" << t.device_type[d]
        << " node=" << t.device_node[d] << "\n";
  }
  out << "intra latency=" << t.intra_node.latency
      << " bw=" << t.intra_node.bandwidth
      << " inter latency=" << t.inter_node.latency
      << " bw=" << t.inter_node.bandwidth << "\n";
  return out.str();
}

// The best objective over every order of the devices (nullopt: nothing
// fits anywhere).
struct Exhaustive {
  std::optional<Objective> best;
  Placement order;  // one order reaching it
  int orders = 0;
};
Exhaustive ExhaustiveOverOrders(const SearchProblem& base) {
  Exhaustive ex;
  Placement perm(base.topology.num_devices());
  std::iota(perm.begin(), perm.end(), 0);
  do {
    SearchProblem pr = base;
    pr.search_placement = false;
    pr.cluster = ClusterFor(base.topology, perm);
    const std::vector<Point> points = Enumerate(pr);
    const std::optional<Objective> o = Optimum(points, Capacities(pr));
    ++ex.orders;
    if (o && (!ex.best || *o < *ex.best)) {
      ex.best = o;
      ex.order = perm;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return ex;
}

// A random heterogeneous problem: n devices of 2-3 types on 1-3 nodes, a
// fast link inside a node and a slow one between nodes, 4-7 layers with
// uneven costs and some recompute modes, one or two schedule choices.
SearchProblem RandomPlacementProblem(std::uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  SearchProblem pr;
  pr.p = n;
  pr.m = Pick(rng, 2, 6);
  Topology& t = pr.topology;
  const int types = Pick(rng, 2, 3);
  const double speeds[] = {0.5, 1.0, 2.0};
  for (int i = 0; i < types; ++i) {
    DeviceType dt;
    dt.name = "t" + std::to_string(i);
    dt.speed = speeds[Pick(rng, 0, 2)];
    dt.memory_capacity = std::numeric_limits<Bytes>::max() / 4;
    t.types.push_back(dt);
  }
  const int nodes = Pick(rng, 1, 3);
  for (int k = 0; k < nodes; ++k) t.node_names.push_back("n" + std::to_string(k));
  for (int d = 0; d < n; ++d) {
    t.device_type.push_back(Pick(rng, 0, types - 1));
    t.device_node.push_back(Pick(rng, 0, nodes - 1));
  }
  t.intra_node = Link{1000, 100'000'000'000};
  t.inter_node = Link{Pick(rng, 10, 200) * 1000, Pick(rng, 1, 4) * 1'000'000'000LL};
  const int L = Pick(rng, n, n + 2);
  for (int l = 0; l < L; ++l) {
    Layer layer;
    layer.name = "l" + std::to_string(l);
    layer.forward = Pick(rng, 1, 4) * 100'000;
    layer.backward_input = layer.forward * Pick(rng, 1, 2);
    layer.static_memory = Pick(rng, 1, 3) << 20;
    layer.activation = Pick(rng, 1, 4) << 20;
    layer.output_bytes = Pick(rng, 1, 8) << 18;
    if (Pick(rng, 0, 2) == 0) {
      layer.recompute.push_back({"full", 1 << 18, layer.forward});
    }
    pr.layers.push_back(layer);
  }
  ScheduleChoice c;
  c.schedule = Pick(rng, 0, 1) ? "1f1b" : "gpipe";
  pr.choices.push_back(c);
  pr.given_placement.resize(n);
  std::iota(pr.given_placement.begin(), pr.given_placement.end(), 0);
  pr.search_placement = true;
  pr.cluster = ClusterFor(t, pr.given_placement);
  // Memory that binds: between the least and the largest per-device peak
  // of the given order's strategies, different per type.
  SearchProblem fixed = pr;
  fixed.search_placement = false;
  const std::vector<Point> points = Enumerate(fixed);
  Bytes lo = std::numeric_limits<Bytes>::max(), hi = 0;
  for (const Point& pt : points) {
    lo = std::min(lo, pt.max_peak);
    hi = std::max(hi, pt.max_peak);
  }
  for (DeviceType& dt : t.types) {
    dt.memory_capacity = lo + (hi - lo) * Pick(rng, 0, 4) / 4;
  }
  pr.cluster = ClusterFor(t, pr.given_placement);
  return pr;
}

SearchOptions Options() {
  SearchOptions o;
  o.threads = 1;
  o.top_k = 3;
  return o;
}

TEST_CASE("placement search finds the optimum over every device order and proves it",
          "[placement]") {
  int infeasible = 0, feasible = 0, order_matters = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const int n = 3 + static_cast<int>(seed % 3);  // 3..5 devices
    const SearchProblem pr = RandomPlacementProblem(seed, n);
    INFO("seed " << seed << "\n" << Describe(pr) << ShowTopology(pr.topology));
    const Exhaustive ex = ExhaustiveOverOrders(pr);
    Result<SearchResult> r = Search(pr, Options());
    REQUIRE(r.ok());
    REQUIRE(r->found == ex.best.has_value());
    if (!ex.best) {
      ++infeasible;
      CHECK(r->proved_infeasible);
      continue;
    }
    ++feasible;
    {
      SearchProblem given = pr;
      given.search_placement = false;
      const auto o = Optimum(Enumerate(given), Capacities(given));
      if (!o || *o != *ex.best) ++order_matters;
    }
    CHECK(ObjectiveOf(r->best) == *ex.best);
    CHECK(r->proved_optimal);
    CHECK(r->lower_bound <= r->best.makespan);
    // The reported order and strategy simulate to what is reported.
    REQUIRE(IsPlacement(pr.topology, r->best.placement));
    Result<Candidate> again = Evaluate(pr, r->best.choice, r->best.strategy, r->best.placement);
    REQUIRE(again.ok());
    CHECK(again->makespan == r->best.makespan);
    CHECK(again->feasible);
  }
  CHECK(feasible >= 20);
  CHECK(order_matters >= 10);  // the given order is often not the best
  CHECK(infeasible + feasible == 40);
}

}  // namespace
}  // namespace ppb
