// Search tests, written independently of search/ so they can catch its
// bugs. An exhaustive enumerator simulates every strategy of small problems
// (every contiguous split of the layers over the p*v stages times every
// per-layer recompute choice, for every schedule choice) with Lower(), the
// schedule registry and the engine, and gives the true optimum under the
// search's objective: minimum makespan with every device's peak memory within
// its capacity; ties by lower maximum peak, then fewer recomputed layers.
//
// Instances are random but reproducible: each test walks a fixed list of
// seeds, each seeding its own std::mt19937_64, and prints the seed and the
// whole instance when a check fails. Peak memory does not depend on timing
// (a device runs its list in order), so each instance is enumerated once with
// unlimited memory and its capacities are then chosen from the enumerated
// peaks, between the smallest and the largest, so that memory really binds.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/engine.h"
#include "core/lower.h"
#include "core/model.h"
#include "schedules/schedule.h"
#include "search/lp.h"
#include "search/search.h"
#include "brute_force.h"

namespace ppb {
namespace {

using namespace brute;  // NOLINT: the enumerator is this file's subject

// ---------------------------------------------------------------------------
// Random instances.

int Uniform(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
bool Chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p;
}

struct InstanceOptions {
  std::int64_t budget = 3000;  // most strategies to enumerate
  bool allow_empty = true;     // sometimes allow empty chunks
  bool multi_choice = true;    // sometimes several schedule choices
  // PyTorch's zero-bubble schedules instead: looped-bfs for gpipe,
  // interleaved-zero-bubble (ZB-H1) for 1f1b, zbv-zero-bubble (V placement)
  // for interleaved; m = p or 2p.
  bool zero_bubble = false;
};

// A random problem with unlimited memory (capacities are set afterwards).
SearchProblem RandomProblem(std::mt19937_64& rng, const InstanceOptions& opt) {
  SearchProblem pr;
  // Schedule choices: gpipe / 1f1b (v = 1) and Megatron interleaved (v = 2,
  // m a multiple of p so that m mod g == 0 for g = p or 2p).
  const int kind = Uniform(rng, 0, opt.multi_choice ? 5 : 2);
  const bool interleaved = kind == 2 || kind == 3 || kind == 5;
  pr.p = interleaved || Chance(rng, 0.9) ? Uniform(rng, 2, 4) : 1;
  pr.m = interleaved || opt.zero_bubble ? pr.p * Uniform(rng, 1, 2)
                                        : Uniform(rng, 1, 8);
  auto add = [&](std::string name, int v) {
    ScheduleChoice c;
    if (opt.zero_bubble) {
      name = name == "gpipe"  ? "looped-bfs"
             : name == "1f1b" ? "interleaved-zero-bubble"
                              : "zbv-zero-bubble";
    }
    c.schedule = name;
    c.v = v;
    if (v > 1 && pr.m >= 2 * pr.p && !opt.zero_bubble && Chance(rng, 0.3))
      c.params.group = 2 * pr.p;
    pr.choices.push_back(c);
  };
  switch (kind) {
    case 0:
      add("1f1b", 1);
      break;
    case 1:
      add("gpipe", 1);
      break;
    case 2:
      add("interleaved", 2);
      break;
    case 3:
      add("1f1b", 1);
      add("interleaved", 2);
      break;
    case 4:
      add("gpipe", 1);
      add("1f1b", 1);
      break;
    default:
      add("interleaved", 2);
      add("gpipe", 1);
      add("1f1b", 1);
      break;
  }
  int max_stages = 0;
  for (const ScheduleChoice& c : pr.choices)
    max_stages = std::max(max_stages, pr.p * c.v);
  pr.allow_empty_chunks = opt.allow_empty && Chance(rng, 0.15);
  pr.comm = Chance(rng, 0.25) ? CommMode::Blocking : CommMode::Overlapped;

  const int n = pr.allow_empty_chunks
                    ? Uniform(rng, 2, 6)
                    : Uniform(rng, std::max(4, max_stages), 8);
  const bool embedding = Chance(rng, 0.6);
  const bool head = Chance(rng, 0.6);
  for (int i = 0; i < n; ++i) {
    Layer l;
    l.name = "layer." + std::to_string(i);
    const Nanos f = Uniform(rng, 800, 1600);
    l.forward = f;
    l.backward_input = f * Uniform(rng, 15, 25) / 10;
    l.static_memory = Uniform(rng, 100, 400);
    l.activation = Uniform(rng, 60, 240);
    l.workspace = Chance(rng, 0.5) ? Uniform(rng, 0, 80) : 0;
    l.output_bytes = Uniform(rng, 10, 40);
    if (Chance(rng, 0.2)) {
      // Split backward: I and W given separately.
      l.split_backward = true;
      l.backward_weight = l.backward_input / 2;
      l.backward_input -= l.backward_weight;
    }
    if (Chance(rng, 0.15)) {
      l.kind = LayerKind::Moe;
      l.static_memory *= 3;
    }
    const int modes = Uniform(rng, 0, 2);
    if (modes >= 1) {
      l.recompute.push_back({"full", l.activation / Uniform(rng, 6, 12),
                             f * Uniform(rng, 8, 11) / 10});
    }
    if (modes >= 2) {
      l.recompute.push_back({"selective",
                             l.activation * Uniform(rng, 3, 6) / 10,
                             f * Uniform(rng, 1, 4) / 10});
    }
    if (i == 0 && embedding) {
      l.kind = LayerKind::Embedding;
      l.forward = Uniform(rng, 100, 400);
      l.backward_input = Uniform(rng, 200, 800);
      l.backward_weight = 0;
      l.split_backward = false;
      l.static_memory = Uniform(rng, 300, 900);  // vocabulary
      l.activation = Uniform(rng, 20, 80);
      l.recompute.clear();
    } else if (i == n - 1 && head) {
      l.kind = LayerKind::Head;
      l.forward = Uniform(rng, 1000, 3000);
      l.backward_input = l.forward * 2;
      l.backward_weight = 0;
      l.split_backward = false;
      l.static_memory = Uniform(rng, 300, 900);
      l.activation = Uniform(rng, 150, 400);
      l.workspace = Uniform(rng, 100, 400);
      l.output_bytes = 0;
      l.recompute.clear();
      if (Chance(rng, 0.3)) l.recompute.push_back({"full", 20, l.forward});
    }
    pr.layers.push_back(l);
  }
  // Stay within the budget: drop recompute modes from random layers.
  while (CountStrategies(pr) > opt.budget) {
    std::vector<int> with;
    for (int i = 0; i < n; ++i) {
      if (!pr.layers[i].recompute.empty()) with.push_back(i);
    }
    REQUIRE(!with.empty());
    pr.layers[with[Uniform(rng, 0, static_cast<int>(with.size()) - 1)]]
        .recompute.pop_back();
  }

  const bool hetero_speed = Chance(rng, 0.5);
  for (int d = 0; d < pr.p; ++d) {
    const double speeds[] = {0.8, 1.25, 1.5, 2.0};
    pr.cluster.devices.push_back({kUnlimited, hetero_speed && Chance(rng, 0.5)
                                                  ? speeds[Uniform(rng, 0, 3)]
                                                  : 1.0});
  }
  const int links = Uniform(rng, 0, 2);  // free, uniform, per boundary
  const Link shared{Uniform(rng, 0, 300),
                    BytesPerSec{100'000'000} * Uniform(rng, 1, 10)};
  for (int r = 0; r < pr.p; ++r) {
    if (links == 0) {
      pr.cluster.links.push_back(Link{});
    } else if (links == 1) {
      pr.cluster.links.push_back(shared);
    } else {
      pr.cluster.links.push_back(
          {Uniform(rng, 0, 500),
           BytesPerSec{50'000'000} * Uniform(rng, 1, 20)});
    }
  }
  return pr;
}

void SetCapacities(SearchProblem& pr, const std::vector<Bytes>& caps) {
  for (int d = 0; d < pr.p; ++d)
    pr.cluster.devices[d].memory_capacity = caps[d];
}

// Capacities between the smallest and largest enumerated peaks, such that
// some strategy fits: loose (everything fits), uniform at a quantile of the
// strategies' max peaks, or per device from an anchor strategy plus slack.
std::vector<Bytes> RandomFeasibleCapacities(std::mt19937_64& rng,
                                            const std::vector<Point>& points,
                                            int p) {
  const int mode = Uniform(rng, 0, 9);
  std::vector<Bytes> caps(p, 0);
  if (mode == 0) {
    for (const Point& pt : points) {
      for (int d = 0; d < p; ++d) caps[d] = std::max(caps[d], pt.peaks[d]);
    }
    return caps;
  }
  std::vector<Bytes> max_peaks;
  for (const Point& pt : points) max_peaks.push_back(pt.max_peak);
  std::sort(max_peaks.begin(), max_peaks.end());
  const double q = std::uniform_real_distribution<double>(0.0, 0.6)(rng);
  if (mode <= 3) {
    caps.assign(p, max_peaks[static_cast<size_t>(q * (max_peaks.size() - 1))]);
    return caps;
  }
  // The anchor: a strategy whose max peak is near quantile q.
  const Bytes target =
      max_peaks[static_cast<size_t>(q * (max_peaks.size() - 1))];
  std::vector<const Point*> near;
  for (const Point& pt : points) {
    if (pt.max_peak == target) near.push_back(&pt);
  }
  const Point& anchor =
      *near[Uniform(rng, 0, static_cast<int>(near.size()) - 1)];
  for (int d = 0; d < p; ++d) {
    Bytes most = 0;
    for (const Point& pt : points) most = std::max(most, pt.peaks[d]);
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    caps[d] = anchor.peaks[d] +
              static_cast<Bytes>(u * u * u *
                                 static_cast<double>(most - anchor.peaks[d]));
  }
  return caps;
}

struct Instance {
  SearchProblem problem;
  std::vector<Point> points;
  std::optional<Objective> optimum;
  bool memory_binds = false;  // the unconstrained optimum does not fit
};

Instance RandomFeasibleInstance(std::uint64_t seed,
                                const InstanceOptions& opt) {
  std::mt19937_64 rng(seed);
  Instance in;
  in.problem = RandomProblem(rng, opt);
  in.points = Enumerate(in.problem);
  const std::vector<Bytes> caps =
      RandomFeasibleCapacities(rng, in.points, in.problem.p);
  SetCapacities(in.problem, caps);
  in.optimum = Optimum(in.points, caps);
  REQUIRE(in.optimum);
  const std::optional<Objective> free =
      Optimum(in.points, std::vector<Bytes>(in.problem.p, kUnlimited));
  in.memory_binds = std::get<0>(*free) < std::get<0>(*in.optimum);
  return in;
}

// ---------------------------------------------------------------------------
// Checks on what the search reports.

bool SameStrategy(const Candidate& a, const Candidate& b) {
  return a.choice == b.choice &&
         a.strategy.layers_per_stage == b.strategy.layers_per_stage &&
         a.strategy.recompute == b.strategy.recompute;
}

// Re-simulates a reported candidate and checks every field it states; with
// must_fit, also that it respects every device's capacity.
void CheckCandidate(const SearchProblem& pr, const Candidate& c,
                    bool must_fit) {
  INFO("candidate choice " << c.choice << " " << Show(c.strategy));
  REQUIRE(c.choice >= 0);
  REQUIRE(c.choice < static_cast<int>(pr.choices.size()));
  const int stages = pr.p * pr.choices[c.choice].v;
  REQUIRE(static_cast<int>(c.strategy.layers_per_stage.size()) == stages);
  REQUIRE(c.strategy.recompute.size() == pr.layers.size());
  int sum = 0, recomputed = 0;
  for (int count : c.strategy.layers_per_stage) {
    CHECK(count >= (pr.allow_empty_chunks ? 0 : 1));
    sum += count;
  }
  CHECK(sum == static_cast<int>(pr.layers.size()));
  for (size_t i = 0; i < pr.layers.size(); ++i) {
    CHECK(c.strategy.recompute[i] <= pr.layers[i].recompute.size());
    recomputed += c.strategy.recompute[i] != 0;
  }
  Engine engine;
  const SimResult r = Simulate(pr, c.choice, c.strategy, engine);
  CHECK(c.makespan == r.makespan);
  CHECK(c.recomputed_layers == recomputed);
  CHECK(c.bubble_fraction == Approx(r.bubble_fraction()));
  REQUIRE(c.devices.size() == static_cast<size_t>(pr.p));
  Bytes max_peak = 0;
  bool fits = r.outcome == Outcome::Ok;
  for (int d = 0; d < pr.p; ++d) {
    INFO("device " << d);
    CHECK(c.devices[d].peak_memory == r.devices[d].peak_memory);
    max_peak = std::max(max_peak, r.devices[d].peak_memory);
    if (must_fit)
      CHECK(r.devices[d].peak_memory <= pr.cluster.devices[d].memory_capacity);
    fits = fits &&
           r.devices[d].peak_memory <= pr.cluster.devices[d].memory_capacity;
  }
  CHECK(c.max_peak == max_peak);
  CHECK(c.feasible == fits);
  if (must_fit) CHECK(c.feasible);
}

// Everything a result states that can be checked without knowing the optimum.
void CheckReported(const SearchProblem& pr, const SearchOptions& opt,
                   const SearchResult& r) {
  CHECK(r.nodes >= 0);
  CHECK(r.evaluations >= 0);
  CHECK(!r.stop_reason.empty());
  if (!r.proved_optimal) CHECK(r.stop_reason != "proved optimal");
  if (opt.node_limit > 0) CHECK(r.nodes <= opt.node_limit);
  CHECK(static_cast<int>(r.top.size()) <= opt.top_k);
  if (!r.found) {
    CHECK(r.top.empty());
    return;
  }
  {
    INFO("best");
    CheckCandidate(pr, r.best, true);
  }
  REQUIRE(!r.top.empty());
  CHECK(SameStrategy(r.top.front(), r.best));
  CHECK(r.top.front().makespan == r.best.makespan);
  std::set<std::tuple<int, std::vector<int>, std::vector<std::uint8_t>>> seen;
  for (size_t i = 0; i < r.top.size(); ++i) {
    INFO("top[" << i << "]");
    CheckCandidate(pr, r.top[i], true);
    CHECK(seen.emplace(r.top[i].choice, r.top[i].strategy.layers_per_stage,
                       r.top[i].strategy.recompute)
              .second);
    CHECK(ObjectiveOf(r.top[i]) >= ObjectiveOf(r.best));
    if (i + 1 < r.top.size()) {
      CHECK(Better(r.top[i], r.top[i + 1]));
      CHECK(!Better(r.top[i + 1], r.top[i]));
    }
  }
  CHECK(r.lower_bound >= 0);
  CHECK(r.lower_bound <= r.best.makespan);
  CHECK(r.gap == Approx(static_cast<double>(r.best.makespan - r.lower_bound) /
                        static_cast<double>(r.best.makespan))
                     .margin(1e-12));
}

SearchResult MustSearch(const SearchProblem& pr, const SearchOptions& opt) {
  Result<SearchResult> r = Search(pr, opt);
  if (!r.ok()) FAIL("Search: " << r.error().key << ": " << r.error().message);
  return std::move(r).value();
}

// Fixed seeds: the instances are the same on every run and platform with the
// same standard library.
std::vector<std::uint64_t> Seeds(std::uint64_t first, int count) {
  std::vector<std::uint64_t> seeds;
  for (int i = 0; i < count; ++i)
    seeds.push_back(first + 7919 * static_cast<std::uint64_t>(i));
  return seeds;
}

}  // namespace

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

// ---------------------------------------------------------------------------
// ColumnLp, the simplex behind the open-tree path bound.

TEST_CASE("ColumnLp: a textbook LP, its optimum and shadow prices", "[search][lp]") {
  // max 3x + 5y  s.t.  x <= 4,  2y <= 12,  3x + 2y <= 18  (Hillier and
  // Lieberman's Wyndor Glass example): optimum 36 at (2, 6), prices (0, 1.5, 1).
  ColumnLp lp({4, 12, 18});
  lp.AddColumn(3, {1, 0, 3});
  lp.AddColumn(5, {0, 2, 2});
  REQUIRE(lp.Solve() == ColumnLp::Status::Optimal);
  CHECK(lp.Objective() == Approx(36));
  const std::vector<double> z = lp.Primal();
  CHECK(z[0] == Approx(2));
  CHECK(z[1] == Approx(6));
  const std::vector<double> pi = lp.Duals();
  CHECK(pi[0] == Approx(0).margin(1e-12));
  CHECK(pi[1] == Approx(1.5));
  CHECK(pi[2] == Approx(1));
}

TEST_CASE("ColumnLp: unbounded problems say so", "[search][lp]") {
  ColumnLp lp({1});
  lp.AddColumn(1, {-1});
  CHECK(lp.Solve() == ColumnLp::Status::Unbounded);
}

TEST_CASE("ColumnLp: columns added after a solve reach the all-at-once optimum, with a "
          "certificate",
          "[search][lp]") {
  // Random LPs with non-negative data (bounded: every column has a positive
  // entry). Optimality is checked by duality, not by trusting the solver:
  // z feasible, pi >= 0, A^T pi >= c, and c.z == b.pi.
  for (std::uint64_t seed : Seeds(8101, 40)) {
    std::mt19937_64 rng(seed);
    const int m = Uniform(rng, 1, 6), n = Uniform(rng, 1, 12);
    std::vector<double> b(m);
    for (double& x : b) x = Uniform(rng, 0, 3) == 0 ? 0.0 : Uniform(rng, 1, 20);  // degenerate rows
    std::vector<std::vector<double>> cols(n, std::vector<double>(m));
    std::vector<double> c(n);
    for (int j = 0; j < n; ++j) {
      for (double& a : cols[j]) a = Uniform(rng, 0, 2) == 0 ? 0.0 : Uniform(rng, 1, 9);
      cols[j][Uniform(rng, 0, m - 1)] += 1;
      c[j] = Uniform(rng, -3, 10);
    }
    INFO("seed " << seed << " m " << m << " n " << n);
    ColumnLp all(b), staged(b);
    for (int j = 0; j < n; ++j) all.AddColumn(c[j], cols[j]);
    REQUIRE(all.Solve() == ColumnLp::Status::Optimal);
    for (int j = 0; j < n; ++j) {
      staged.AddColumn(c[j], cols[j]);
      if (j % 3 == 0) REQUIRE(staged.Solve() == ColumnLp::Status::Optimal);
    }
    REQUIRE(staged.Solve() == ColumnLp::Status::Optimal);
    CHECK(staged.Objective() == Approx(all.Objective()).margin(1e-9));
    const std::vector<double> z = all.Primal(), pi = all.Duals();
    double primal = 0, dual = 0;
    for (int j = 0; j < n; ++j) {
      CHECK(z[j] >= 0);
      primal += c[j] * z[j];
      double reduced = 0;
      for (int i = 0; i < m; ++i) reduced += cols[j][i] * pi[i];
      CHECK(reduced >= c[j] - 1e-9);
    }
    for (int i = 0; i < m; ++i) {
      double row = 0;
      for (int j = 0; j < n; ++j) row += cols[j][i] * z[j];
      CHECK(row <= b[i] + 1e-9);
      CHECK(pi[i] >= -1e-12);
      dual += b[i] * pi[i];
    }
    CHECK(primal == Approx(all.Objective()).margin(1e-9));
    CHECK(dual == Approx(primal).margin(1e-9));
  }
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

// A random stack of identical decoders between an embedding and a head on
// p = 2..3 ranks: the shape in which the bound of an open tree couples
// per-rank decoder counts with the schedule's paths. `uneven` adds per-rank
// speeds and links, random message sizes, a selective recompute option and
// blocking sends (memory is unlimited; tests set capacities).
SearchProblem RandomDecoderStack(std::mt19937_64& rng, bool uneven) {
  SearchProblem pr;
  pr.p = Uniform(rng, 2, 3);
  const bool interleaved = Chance(rng, 0.5);
  pr.m = interleaved ? pr.p * Uniform(rng, 1, 2) : Uniform(rng, 2, 6);
  ScheduleChoice c;
  c.schedule = interleaved ? "interleaved" : (Chance(rng, 0.5) ? "1f1b" : "gpipe");
  c.v = interleaved ? 2 : 1;
  pr.choices = {c};
  if (uneven && Chance(rng, 0.3)) pr.comm = CommMode::Blocking;
  auto layer = [&](const char* name, LayerKind kind, Nanos f) {
    Layer x;
    x.name = name;
    x.kind = kind;
    x.forward = f;
    x.backward_input = 2 * f;
    x.static_memory = 1 << 20;
    x.activation = (uneven ? 4 : 2) << 20;
    x.output_bytes = uneven ? Uniform(rng, 1, 64) << 16 : 1 << 16;
    return x;
  };
  pr.layers.push_back(layer("emb", LayerKind::Embedding, Uniform(rng, 1, 3) * 10'000));
  const int decoders = pr.p * c.v + Uniform(rng, 0, 3);
  Layer d = layer("d", LayerKind::Decoder, Uniform(rng, 5, 9) * 100'000);
  if (uneven) d.recompute.push_back(RecomputeOption{"selective", 1 << 20, Uniform(rng, 1, 3) * 50'000});
  for (int i = 0; i < decoders; ++i) {
    d.name = "d" + std::to_string(i);  // names differ, costs do not
    pr.layers.push_back(d);
  }
  pr.layers.push_back(layer("head", LayerKind::Head, Uniform(rng, 2, 6) * 100'000));
  for (int r = 0; r < pr.p; ++r) {
    pr.cluster.devices.push_back(Device{kUnlimited, uneven ? 0.5 * Uniform(rng, 1, 4) : 1.0});
    pr.cluster.links.push_back(uneven ? Link{Uniform(rng, 0, 50) * 1000,
                                             Uniform(rng, 1, 20) * 1'000'000'000LL}
                                      : Link{Uniform(rng, 0, 50) * 1000, 10'000'000'000});
  }
  return pr;
}

TEST_CASE("lower bounds of an open tree on decoder stacks never exceed the optimum",
          "[search]") {
  // The open-tree bound's branch-and-bound over boxes of decoder counts
  // (exact LP, column generation from critical paths, least message time on
  // every hop) stays at or below the exhaustive optimum, also when speeds,
  // links and memory differ per rank and recompute is on offer. With
  // memory unlimited and even ranks nothing is relaxed but real-valued
  // counts, which the bound branches to whole numbers: there it closes on
  // the optimum up to its rounding allowance of 4 ns per micro-batch and
  // stage.
  for (const bool uneven : {false, true}) {
    for (std::uint64_t seed : Seeds(uneven ? 7301 : 7001, uneven ? 40 : 30)) {
      std::mt19937_64 rng(seed);
      SearchProblem pr = RandomDecoderStack(rng, uneven);
      const std::vector<Point> points = Enumerate(pr);
      if (uneven) SetCapacities(pr, RandomFeasibleCapacities(rng, points, pr.p));
      INFO("seed " << seed << "\n" << Describe(pr));
      const std::optional<Objective> best = Optimum(points, Capacities(pr));
      REQUIRE(best.has_value());
      const Nanos opt_makespan = std::get<0>(*best);
      const Nanos allowance =
          static_cast<Nanos>(pr.m) * (pr.p * pr.choices.front().v + 1) * 4 + 1;
      for (std::int64_t limit : {1, 4, 50}) {
        SearchOptions opt;
        opt.node_limit = limit;
        opt.threads = 1;
        const SearchResult r = MustSearch(pr, opt);
        INFO("node limit " << limit << ": " << r.stop_reason << " lb " << r.lower_bound);
        CHECK(r.lower_bound <= opt_makespan);
        if (r.found) CHECK(r.best.makespan >= opt_makespan);
        if (!uneven && r.found && r.best.makespan == opt_makespan) {
          CHECK(r.lower_bound >= opt_makespan - allowance);
        }
      }
    }
  }
}

TEST_CASE("lower bounds never exceed the optimum, also at a node limit",
          "[search]") {
  for (std::uint64_t seed : Seeds(9001, 12)) {
    INFO("seed " << seed);
    InstanceOptions io;
    io.budget = 1500;
    const Instance in = RandomFeasibleInstance(seed, io);
    INFO(Describe(in.problem));
    INFO("optimum " << Show(*in.optimum));
    const Nanos opt_makespan = std::get<0>(*in.optimum);
    for (std::int64_t limit : {0, 1, 5, 20}) {
      INFO("node limit " << limit);
      SearchOptions opt;
      opt.node_limit = limit;
      opt.seed = seed;
      // Progress reports state bounds too: each must be valid.
      std::vector<SearchProgress> reports;
      opt.progress_interval_s = 0;
      opt.progress = [&](const SearchProgress& pg) { reports.push_back(pg); };
      const SearchResult r = MustSearch(in.problem, opt);
      INFO("search: " << r.stop_reason << " nodes " << r.nodes << " lb "
                      << r.lower_bound << " best " << Show(ObjectiveOf(r.best))
                      << " " << Show(r.best.strategy) << " choice "
                      << r.best.choice);
      CHECK(r.lower_bound <= opt_makespan);
      for (const SearchProgress& pg : reports) {
        INFO("progress at node " << pg.nodes << ": incumbent " << pg.incumbent
                                 << ", lower bound " << pg.lower_bound);
        CHECK(pg.lower_bound <= opt_makespan);
        CHECK((pg.incumbent == -1 || pg.incumbent >= opt_makespan));
        CHECK(pg.gap >= 0);
        CHECK(pg.gap <= 1);
      }
      if (r.found) CHECK(ObjectiveOf(r.best) >= *in.optimum);
      if (r.proved_optimal) {
        // Closing the tree means the answer is the optimum.
        REQUIRE(r.found);
        CHECK(ObjectiveOf(r.best) == *in.optimum);
      } else {
        CHECK(limit > 0);
      }
      CheckReported(in.problem, opt, r);
    }
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
