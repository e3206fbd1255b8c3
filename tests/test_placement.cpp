// Placement search tests: which device runs which rank, jointly with the
// split and the recompute. The reference is exhaustive: every permutation of
// the devices (no symmetry breaking), and for each every strategy enumerated
// and simulated by brute_force.h, independently of search/.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <nlohmann/json.hpp>
#include <vector>

#include "app_helpers.h"
#include "apps/input/search_problem.h"
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
  for (std::uint64_t seed = 1; seed <= 24; ++seed) {
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
    // The bound over every order from the fastest type's rank sets.
    if (r->fast_sets > 0 && r->fast_sets_bounded == r->fast_sets) {
      CHECK(r->fast_sets_bound <= std::get<0>(*ex.best));
    }
    // Stopped early, the bound (prefix bounds, the work and decoder-count
    // bounds over all orders) stays below the optimum.
    for (std::int64_t limit : {1, 4, 16}) {
      SearchOptions o = Options();
      o.node_limit = limit;
      Result<SearchResult> early = Search(pr, o);
      REQUIRE(early.ok());
      INFO("node limit " << limit << ": " << early->stop_reason);
      CHECK(early->lower_bound <= std::get<0>(*ex.best));
      if (early->found) CHECK(ObjectiveOf(early->best) >= *ex.best);
    }
    // The reported order and strategy simulate to what is reported.
    REQUIRE(IsPlacement(pr.topology, r->best.placement));
    Result<Candidate> again = Evaluate(pr, r->best.choice, r->best.strategy, r->best.placement);
    REQUIRE(again.ok());
    CHECK(again->makespan == r->best.makespan);
    CHECK(again->feasible);
  }
  CHECK(feasible >= 12);
  CHECK(order_matters >= 8);  // the given order is often not the best
  CHECK(infeasible + feasible == 24);
}

TEST_CASE("placement search on six devices matches every one of the 720 orders",
          "[placement]") {
  for (std::uint64_t seed = 201; seed <= 201; ++seed) {
    const SearchProblem pr = RandomPlacementProblem(seed, 6);
    INFO("seed " << seed << "\n" << Describe(pr) << ShowTopology(pr.topology));
    const Exhaustive ex = ExhaustiveOverOrders(pr);
    REQUIRE(ex.orders == 720);
    Result<SearchResult> r = Search(pr, Options());
    REQUIRE(r.ok());
    REQUIRE(r->found == ex.best.has_value());
    if (!ex.best) continue;
    CHECK(ObjectiveOf(r->best) == *ex.best);
    CHECK(r->proved_optimal);
    if (r->fast_sets > 0 && r->fast_sets_bounded == r->fast_sets) {
      CHECK(r->fast_sets_bound <= std::get<0>(*ex.best));
    }
    // Symmetry breaking: fewer orders searched in full than there are.
    CHECK(r->placements_searched < 720);
  }
}

TEST_CASE("the bound over every order closes on the optimum when the other devices are alike",
          "[placement]") {
  // A stack of identical decoders between an embedding and a head; k fast
  // devices (speed 2) among n, the others alike (speed 1), one link class,
  // memory unlimited. Then the relaxed cluster of each set of ranks for the
  // fast type is exactly the cluster of the orders with that set, so the
  // least over the sets is the optimum, up to the open-tree bound's rounding
  // allowance (4 ns per micro-batch and stage).
  int checked = 0;
  for (std::uint64_t seed = 301; seed <= 312; ++seed) {
    std::mt19937_64 rng(seed);
    SearchProblem pr;
    const int n = Pick(rng, 3, 5), k = Pick(rng, 1, 2);
    pr.p = n;
    pr.m = Pick(rng, 2, 6);
    Topology& t = pr.topology;
    t.types = {DeviceType{"fast", 2.0, std::numeric_limits<Bytes>::max() / 4},
               DeviceType{"slow", 1.0, std::numeric_limits<Bytes>::max() / 4}};
    t.node_names = {"n0"};
    for (int d = 0; d < n; ++d) {
      t.device_type.push_back(d < k ? 0 : 1);
      t.device_node.push_back(0);
    }
    t.intra_node = t.inter_node = Link{Pick(rng, 0, 20) * 1000, 10'000'000'000};
    auto layer = [&](const std::string& name, Nanos f) {
      Layer x;
      x.name = name;
      x.forward = f;
      x.backward_input = 2 * f;
      x.static_memory = 1 << 20;
      x.activation = 1 << 20;
      x.output_bytes = 1 << 16;
      return x;
    };
    pr.layers.push_back(layer("emb", Pick(rng, 1, 3) * 10'000));
    const Nanos fd = Pick(rng, 2, 6) * 100'000;
    for (int i = 0, D = n + Pick(rng, 1, 4); i < D; ++i) pr.layers.push_back(layer("d" + std::to_string(i), fd));
    pr.layers.push_back(layer("head", Pick(rng, 1, 5) * 100'000));
    ScheduleChoice c;
    c.schedule = Pick(rng, 0, 1) ? "1f1b" : "gpipe";
    pr.choices = {c};
    pr.given_placement.resize(n);
    std::iota(pr.given_placement.begin(), pr.given_placement.end(), 0);
    pr.search_placement = true;
    pr.cluster = ClusterFor(t, pr.given_placement);
    INFO("seed " << seed << "\n" << Describe(pr) << ShowTopology(pr.topology));
    const Exhaustive ex = ExhaustiveOverOrders(pr);
    REQUIRE(ex.best.has_value());
    Result<SearchResult> r = Search(pr, Options());
    REQUIRE(r.ok());
    int sets = 1;
    for (int i = 0; i < k; ++i) sets = sets * (n - i) / (i + 1);
    CHECK(r->fast_sets == sets);
    REQUIRE(r->fast_sets_bounded == r->fast_sets);
    const Nanos opt = std::get<0>(*ex.best);
    const Nanos allowance = static_cast<Nanos>(pr.m) * (n + 1) * 4 + 1;
    CHECK(r->fast_sets_bound <= opt);
    CHECK(r->fast_sets_bound >= opt - allowance);
    ++checked;
  }
  CHECK(checked == 12);
}

TEST_CASE("placement search is deterministic without a time limit, on any number of threads",
          "[placement]") {
  for (std::uint64_t seed : {7, 11, 19}) {
    const SearchProblem pr = RandomPlacementProblem(seed, 5);
    INFO("seed " << seed);
    std::vector<SearchResult> runs;
    for (int threads : {1, 2, 1}) {
      SearchOptions o = Options();
      o.threads = threads;
      o.node_limit = 400;
      Result<SearchResult> r = Search(pr, o);
      REQUIRE(r.ok());
      runs.push_back(*r);
    }
    for (const SearchResult& r : runs) {
      CHECK(r.found == runs[0].found);
      CHECK(r.lower_bound == runs[0].lower_bound);
      CHECK(r.nodes == runs[0].nodes);
      CHECK(r.fast_sets_bound == runs[0].fast_sets_bound);
      if (r.found) {
        CHECK(r.best.makespan == runs[0].best.makespan);
        CHECK(r.best.placement == runs[0].best.placement);
        CHECK(r.best.strategy.layers_per_stage == runs[0].best.strategy.layers_per_stage);
      }
    }
  }
}

TEST_CASE("placement search on interleaved schedules uses the ring edge",
          "[placement]") {
  for (std::uint64_t seed = 101; seed <= 110; ++seed) {
    const int n = 2 + static_cast<int>(seed % 2);  // 2..3 devices
    SearchProblem pr = RandomPlacementProblem(seed, n);
    // Two chunks per rank; Megatron needs m a multiple of p.
    while (static_cast<int>(pr.layers.size()) < 2 * n) pr.layers.push_back(pr.layers.back());
    for (size_t l = 0; l < pr.layers.size(); ++l) pr.layers[l].name = "l" + std::to_string(l);
    pr.m = 2 * n;
    ScheduleChoice c;
    c.schedule = "interleaved";
    c.v = 2;
    pr.choices = {c};
    for (DeviceType& t : pr.topology.types) t.memory_capacity = std::numeric_limits<Bytes>::max() / 4;
    pr.cluster = ClusterFor(pr.topology, pr.given_placement);
    INFO("seed " << seed << "\n" << Describe(pr) << ShowTopology(pr.topology));
    const Exhaustive ex = ExhaustiveOverOrders(pr);
    Result<SearchResult> r = Search(pr, Options());
    REQUIRE(r.ok());
    REQUIRE(ex.best.has_value());
    REQUIRE(r->found);
    CHECK(ObjectiveOf(r->best) == *ex.best);
    CHECK(r->proved_optimal);
  }
}

TEST_CASE("placement search: nothing fits on any order is proved", "[placement]") {
  SearchProblem pr = RandomPlacementProblem(7, 3);
  for (DeviceType& t : pr.topology.types) t.memory_capacity = 1;
  pr.cluster = ClusterFor(pr.topology, pr.given_placement);
  Result<SearchResult> r = Search(pr, Options());
  REQUIRE(r.ok());
  CHECK_FALSE(r->found);
  CHECK(r->proved_infeasible);
}

// Four devices on one node, uniform layers: a reference problem whose
// devices differ in one property at a time.
SearchProblem Uniform4(int layers) {
  SearchProblem pr;
  pr.p = 4;
  pr.m = 8;
  for (int l = 0; l < layers; ++l) {
    Layer x;
    x.name = "d" + std::to_string(l);
    x.forward = 1'000'000;
    x.backward_input = 2'000'000;
    x.static_memory = 1 << 20;
    x.activation = 4 << 20;
    x.output_bytes = 1 << 20;
    x.recompute.push_back({"full", 1 << 18, 1'000'000});
    pr.layers.push_back(x);
  }
  ScheduleChoice c;
  c.schedule = "1f1b";
  pr.choices = {c};
  Topology& t = pr.topology;
  t.types = {{"base", 1.0, Bytes{1} << 40}};
  t.node_names = {"n0"};
  t.device_type.assign(4, 0);
  t.device_node.assign(4, 0);
  t.intra_node = Link{1000, 100'000'000'000};
  t.inter_node = t.intra_node;
  pr.given_placement = {0, 1, 2, 3};
  pr.search_placement = true;
  pr.cluster = ClusterFor(t, pr.given_placement);
  return pr;
}

// Layers held by physical device d in candidate c.
int LayersOf(const Candidate& c, int d) {
  for (size_t r = 0; r < c.placement.size(); ++r) {
    if (c.placement[r] == d) return c.strategy.layers_per_stage[r];
  }
  return -1;
}

TEST_CASE("placement search: a twice-as-fast device gets more layers", "[placement]") {
  SearchProblem pr = Uniform4(10);
  pr.topology.types.push_back({"fast", 2.0, Bytes{1} << 40});
  pr.topology.device_type[2] = 1;
  pr.cluster = ClusterFor(pr.topology, pr.given_placement);
  Result<SearchResult> r = Search(pr, Options());
  REQUIRE(r.ok());
  REQUIRE(r->proved_optimal);
  for (int d : {0, 1, 3}) CHECK(LayersOf(r->best, 2) > LayersOf(r->best, d));
}

TEST_CASE("placement search: a device with half the memory holds fewer layers or recomputes more",
          "[placement]") {
  SearchProblem pr = Uniform4(12);
  // 12 layers of 1 MiB static and 4 MiB stash: the even split (3 per rank)
  // needs 3 + 4 * 3 * 4 = 51 MiB on rank 0 and 15 MiB on rank 3, so 28 MiB
  // makes the first ranks recompute and 14 MiB binds wherever the small
  // device sits.
  const Bytes full = 28 << 20;
  pr.topology.types[0].memory_capacity = full;
  pr.topology.types.push_back({"small", 1.0, full / 2});
  pr.topology.device_type[1] = 1;
  pr.cluster = ClusterFor(pr.topology, pr.given_placement);
  Result<SearchResult> r = Search(pr, Options());
  REQUIRE(r.ok());
  REQUIRE(r->found);
  REQUIRE(r->proved_optimal);
  const Candidate& c = r->best;
  int small = -1;
  for (int rk = 0; rk < 4; ++rk) small = c.placement[rk] == 1 ? rk : small;
  std::vector<int> held(4, 0), recomputed(4, 0);
  int layer = 0;
  for (int rk = 0; rk < 4; ++rk) {
    held[rk] = c.strategy.layers_per_stage[rk];
    for (int k = 0; k < held[rk]; ++k, ++layer) recomputed[rk] += c.strategy.recompute[layer] != 0;
  }
  INFO("small device at rank " << small << "; " << Show(c.strategy));
  const int most_held = *std::max_element(held.begin(), held.end());
  const int least_recomputed = *std::min_element(recomputed.begin(), recomputed.end());
  CHECK((held[small] < most_held || recomputed[small] > least_recomputed));
  CHECK(c.devices[small].peak_memory <= full / 2);
}

TEST_CASE("placement search: a slow inter-node link carries as little traffic as it can",
          "[placement]") {
  // Two nodes of two devices: any order crosses between nodes at least once
  // on the chain; the best crosses exactly once.
  SearchProblem pr = Uniform4(8);
  pr.topology.node_names = {"n0", "n1"};
  pr.topology.device_node = {0, 1, 0, 1};  // the given order alternates
  pr.topology.inter_node = Link{2'000'000, 1'000'000'000};  // 2 ms, 1 GB/s
  pr.cluster = ClusterFor(pr.topology, pr.given_placement);
  Result<SearchResult> r = Search(pr, Options());
  REQUIRE(r.ok());
  REQUIRE(r->proved_optimal);
  int crossings = 0;
  for (int rk = 0; rk + 1 < 4; ++rk) {
    crossings += !pr.topology.SameNode(r->best.placement[rk], r->best.placement[rk + 1]);
  }
  CHECK(crossings == 1);
  // And that beats the given, alternating order with its best split.
  SearchProblem given = pr;
  given.search_placement = false;
  Result<SearchResult> g = Search(given, Options());
  REQUIRE(g.ok());
  CHECK(g->best.makespan > r->best.makespan);
}

// ---------------------------------------------------------------------------
// Config and command line.

const char* kHeteroConfig = R"(model:
  layers:
    - {name: emb, kind: embedding, forward: 0.1ms, backward: 0.2ms, output: 1MiB}
    - {name: dec, repeat: 8, forward: 1ms, backward: 2ms, static_memory: 1GiB,
       activation: 1GiB, output: 1MiB, recompute: {full: {activation: 1MiB, time: 1ms}}}
    - {name: head, kind: head, forward: 0.5ms, backward: 1ms, output: 0B}
cluster:
  device_types:
    - {name: big, peak_tflops: 400, memory: 40GiB}
    - {name: small, peak_tflops: 100, memory: 20GiB}
  nodes:
    - {name: a, devices: [small, big]}
    - {name: b, devices: {big: 1, small: 1}}
  link_classes:
    intra_node: {latency: 1us, bandwidth: 200GB/s}
    inter_node: {latency: 20us, bandwidth: 10GB/s}
pipeline: {stages: 4, microbatches: 8}
)";

TEST_CASE("config: heterogeneous cluster with types, nodes and link classes",
          "[placement][config]") {
  Result<RunConfig> c = test::Parse(kHeteroConfig);
  REQUIRE(c.ok());
  REQUIRE(c->topology.has_value());
  const Topology& t = *c->topology;
  REQUIRE(t.types.size() == 2);
  CHECK(t.types[0].speed == 1.0);   // the first peak_tflops is the reference
  CHECK(t.types[1].speed == 0.25);  // 100 / 400
  CHECK(t.device_type == std::vector<int>{1, 0, 0, 1});
  CHECK(t.device_node == std::vector<int>{0, 0, 1, 1});
  CHECK(c->placement == Placement{0, 1, 2, 3});
  // Rank r runs device r: links inside a node between 0-1 and 2-3.
  CHECK(c->cluster.devices[0].memory_capacity == Bytes{20} << 30);
  CHECK(c->cluster.devices[1].speed == 1.0);
  CHECK(c->cluster.links[0].latency == 1000);
  CHECK(c->cluster.links[1].latency == 20000);
  CHECK(c->cluster.links[1].bandwidth == 10'000'000'000);
  CHECK(c->cluster.links[2].latency == 1000);
  CHECK(c->search.search_device_order);

  std::string placed = kHeteroConfig;
  placed.replace(placed.find("  link_classes:"), 0, "  placement: [1, 3, 2, 0]\n");
  Result<RunConfig> c2 = test::Parse(placed);
  REQUIRE(c2.ok());
  CHECK(c2->placement == Placement{1, 3, 2, 0});
  CHECK(c2->cluster.devices[1].speed == 0.25);     // device 3: small
  CHECK(c2->cluster.links[1].latency == 1000);     // devices 3, 2 share node b
  CHECK(c2->cluster.links[2].latency == 20000);    // devices 2 (b), 0 (a)
}

TEST_CASE("config: heterogeneous cluster errors name file, line and key",
          "[placement][config]") {
  auto err = [](const std::string& from, const std::string& to) {
    std::string text = kHeteroConfig;
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    return test::ParseError(text);
  };
  CHECK(err("{name: a, devices: [small, big]}", "{name: a, devices: [small, huge]}") ==
        "run.yaml:12: cluster.nodes[0].devices[1]: must name a type of "
        "cluster.device_types (big, small); got 'huge'");
  CHECK(err("{big: 1, small: 1}", "{big: 1, small: 2}") ==
        "run.yaml:11: cluster.nodes: must hold one device per rank (pipeline.stages "
        "= 4); got 5 devices");
  CHECK(err("{big: 1, small: 1}", "{big: 0, small: 1}") ==
        "run.yaml:13: cluster.nodes[1].devices.big: must be a positive integer; got 0");
  CHECK(err("{name: small, peak_tflops: 100, memory: 20GiB}", "{name: small, memory: 20GiB}") ==
        "run.yaml:10: cluster.device_types[1].speed: must be given (a relative speed), "
        "or peak_tflops; got neither");
  CHECK(err("{name: small, peak_tflops: 100", "{name: big, peak_tflops: 100") ==
        "run.yaml:10: cluster.device_types[1].name: must be unique; got 'big' again");
  CHECK(err("  link_classes:", "  placement: [0, 1, 1, 3]\n  link_classes:") ==
        "run.yaml:14: cluster.placement[2]: must name each device once; got device 1 "
        "again (rank 1)");
  CHECK(err("  link_classes:", "  placement: [0, 1, 2]\n  link_classes:") ==
        "run.yaml:14: cluster.placement: must give one device per rank (pipeline.stages "
        "= 4); got 3");
  CHECK(err("  link_classes:", "  link: {bandwidth: 1GB/s}\n  link_classes:") ==
        "run.yaml:14: cluster.link: must not be given with cluster.nodes (devices come "
        "from cluster.device_types and cluster.nodes, links from cluster.link_classes)");
  CHECK(err("intra_node: {latency: 1us, bandwidth: 200GB/s}", "intra_node: {latency: 1us}") ==
        "run.yaml:15: cluster.link_classes.intra_node.bandwidth: must be given (a positive "
        "bandwidth); got nothing");
  CHECK(err("pipeline: {stages: 4, microbatches: 8}",
            "pipeline: {stages: 4, microbatches: 8}\nsearch: {device_order: sometimes}") ==
        "run.yaml:18: search.device_order: must be one of search, given; got sometimes");
  const std::string per_rank =
      "model:\n  layers:\n    - {name: x, forward: 1ms, backward: 1ms}\n"
      "cluster:\n  devices: {memory: 1GiB}\n  placement: [0]\n"
      "pipeline: {stages: 1, microbatches: 1}\n";
  CHECK(test::ParseError(per_rank) ==
        "run.yaml:6: cluster.placement: is only read with cluster.nodes and "
        "cluster.device_types (a heterogeneous cluster); got it without them");
}

TEST_CASE("config: search.device_order given keeps the config's order", "[placement][config]") {
  std::string text = kHeteroConfig;
  text.replace(text.find("  link_classes:"), 0, "  placement: [1, 3, 2, 0]\n");
  text += "search: {device_order: given}\n";
  Result<RunConfig> c = test::Parse(text);
  REQUIRE(c.ok());
  CHECK_FALSE(c->search.search_device_order);
  Result<SearchProblem> pr = BuildSearchProblem(*c);
  REQUIRE(pr.ok());
  CHECK_FALSE(pr->search_placement);
  SearchOptions o = Options();
  Result<SearchResult> r = Search(*pr, o);
  REQUIRE(r.ok());
  REQUIRE(r->found);
  CHECK(r->best.placement.empty());  // the cluster as configured
  CHECK(r->proved_optimal);
  // The same order searched as a placement problem can only do as well or
  // better.
  SearchProblem free = *pr;
  free.search_placement = true;
  Result<SearchResult> rf = Search(free, o);
  REQUIRE(rf.ok());
  CHECK(rf->best.makespan <= r->best.makespan);

  CHECK(test::ParseError(text, [] {
          CliOverrides ov;
          ov.stages = 3;
          return ov;
        }()) == "run.yaml:11: cluster.nodes: must hold one device per rank (--stages 3); got 4 devices");
}

TEST_CASE("config: device types by peak TFLOP/s scale the cost model's layer times",
          "[placement][config]") {
  // Llama-3-8B from its config.json with hardware.peak_tflops 989 (H100):
  // an H100 type runs at speed 1, an A100 (312 TFLOP/s) at 312/989.
  Result<RunConfig> c =
      LoadConfig(std::string(PPB_TEST_DATA_DIR) + "/configs/llama3-8b-hetero.yaml", {});
  REQUIRE(c.ok());
  REQUIRE(c->topology.has_value());
  CHECK(c->topology->types[0].speed == 1.0);
  CHECK(c->topology->types[1].speed == Approx(312.0 / 989.0).epsilon(1e-15));
  CHECK(c->cluster.devices[2].speed == c->topology->types[1].speed);
  // The same layers on an A100 rank take 989/312 times as long: rank 2 and
  // rank 1 hold 8 decoders each.
  auto run = Prepare(*c);
  REQUIRE(run.ok());
  const SimResult r = Engine().Run(run->spec, run->program, SimOptions{false, false});
  CHECK(static_cast<double>(r.devices[2].busy) / static_cast<double>(r.devices[1].busy) ==
        Approx(989.0 / 312.0).epsilon(1e-6));
}

TEST_CASE("search CLI: the device order, its baselines and JSON", "[placement][search-cli]") {
  const std::string path = std::string(PPB_TEST_DATA_DIR) + "/configs/hetero-4.yaml";
  test::CliRun text = test::Cli({"search", "--config", path, "--threads", "1"});
  INFO(text.err);
  REQUIRE(text.status == 0);
  CHECK(text.out.find("PROVED OPTIMAL") != std::string::npos);
  CHECK(text.out.find("device by rank") != std::string::npos);
  CHECK(text.out.find("Metis-style: layers in proportion to speed, given order") !=
        std::string::npos);
  test::CliRun json =
      test::Cli({"search", "--config", path, "--threads", "1", "--format", "json"});
  REQUIRE(json.status == 0);
  const auto j = nlohmann::json::parse(json.out);
  REQUIRE(j["best"]["placement"].size() == 4);
  CHECK(j["proved_optimal"] == true);
  // The reported order, fixed in the config, simulates to the same time.
  Result<RunConfig> cfg = LoadConfig(path, {});
  REQUIRE(cfg.ok());
  Placement order;
  for (const auto& e : j["best"]["placement"]) order.push_back(e["device"].get<int>());
  Result<SearchProblem> pr = BuildSearchProblem(*cfg);
  REQUIRE(pr.ok());
  Strategy st;
  for (const auto& row : j["best"]["layers_per_chunk"]) {
    for (const auto& x : row) st.layers_per_stage.push_back(x.get<int>());
  }
  st.recompute.assign(pr->layers.size(), 0);
  const auto& per_layer = j["best"]["recompute"]["per_layer"];
  for (size_t l = 0; l < pr->layers.size(); ++l) {
    for (size_t k = 0; k < pr->layers[l].recompute.size(); ++k) {
      if (per_layer[l] == pr->layers[l].recompute[k].name) st.recompute[l] = static_cast<std::uint8_t>(k + 1);
    }
  }
  Result<Candidate> again = Evaluate(*pr, 0, st, order);
  REQUIRE(again.ok());
  CHECK(ToMs(again->makespan) == Approx(j["best"]["iteration_time_ms"].get<double>()).epsilon(1e-12));
}

}  // namespace
}  // namespace ppb
