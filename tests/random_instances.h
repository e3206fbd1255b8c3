// Random search instances for the tests that check the search against the
// exhaustive enumerator (tests/brute_force.h): test_search.cpp,
// test_search_bounds.cpp, test_bounds_*.cpp, test_search_target*.cpp.
// Instances are random but reproducible: each test walks a fixed list of
// seeds, each seeding its own std::mt19937_64, and prints the seed and the whole instance when a check fails. Peak memory does
// not depend on timing (a device runs its list in order), so each instance is
// enumerated once with unlimited memory and its capacities are then chosen
// from the enumerated peaks, between the smallest and the largest, so that
// memory really binds. Also the checks on what the search reports. Included
// only by Catch2 test files.
#pragma once

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
#include "search/search.h"
#include "brute_force.h"

namespace ppb::brute {

// ---------------------------------------------------------------------------
// Random instances.

inline int Uniform(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}
inline bool Chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p;
}
// A layer of forward f, input-gradient backward 2f and activation act.
inline Layer MakeLayer(const std::string& name, LayerKind kind, Nanos f, Bytes act) {
  Layer l;
  l.name = name;
  l.kind = kind;
  l.forward = f;
  l.backward_input = 2 * f;
  l.activation = act;
  return l;
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
inline SearchProblem RandomProblem(std::mt19937_64& rng, const InstanceOptions& opt) {
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

inline void SetCapacities(SearchProblem& pr, const std::vector<Bytes>& caps) {
  for (int d = 0; d < pr.p; ++d)
    pr.cluster.devices[d].memory_capacity = caps[d];
}

// A uniform capacity between the least at which something fits and the
// largest max peak, a random fraction in [0, most_q) of the way up: at the
// low end most ranks must recompute. Returns it.
inline Bytes SetTightCapacity(std::mt19937_64& rng, SearchProblem& pr,
                              const std::vector<Point>& points, double most_q) {
  const Bytes least = MinUniformCapacity(points);
  Bytes most = least;
  for (const Point& pt : points) most = std::max(most, pt.max_peak);
  const double q = std::uniform_real_distribution<double>(0.0, most_q)(rng);
  const Bytes cap = least + static_cast<Bytes>(q * static_cast<double>(most - least));
  for (auto& dv : pr.cluster.devices) dv.memory_capacity = cap;
  return cap;
}

// Capacities between the smallest and largest enumerated peaks, such that
// some strategy fits: loose (everything fits), uniform at a quantile of the
// strategies' max peaks, or per device from an anchor strategy plus slack.
inline std::vector<Bytes> RandomFeasibleCapacities(std::mt19937_64& rng,
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

inline Instance RandomFeasibleInstance(std::uint64_t seed,
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

inline bool SameStrategy(const Candidate& a, const Candidate& b) {
  return a.choice == b.choice &&
         a.strategy.layers_per_stage == b.strategy.layers_per_stage &&
         a.strategy.recompute == b.strategy.recompute;
}

// Re-simulates a reported candidate and checks every field it states; with
// must_fit, also that it respects every device's capacity.
inline void CheckCandidate(const SearchProblem& pr, const Candidate& c,
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
inline void CheckReported(const SearchProblem& pr, const SearchOptions& opt,
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

inline SearchResult MustSearch(const SearchProblem& pr, const SearchOptions& opt) {
  Result<SearchResult> r = Search(pr, opt);
  if (!r.ok()) FAIL("Search: " << r.error().key << ": " << r.error().message);
  return std::move(r).value();
}

// Fixed seeds: the instances are the same on every run and platform with the
// same standard library.
inline std::vector<std::uint64_t> Seeds(std::uint64_t first, int count) {
  std::vector<std::uint64_t> seeds;
  for (int i = 0; i < count; ++i)
    seeds.push_back(first + 7919 * static_cast<std::uint64_t>(i));
  return seeds;
}

}  // namespace ppb::brute
