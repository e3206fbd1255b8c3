// The exhaustive enumerator of the search tests (test_search.cpp,
// test_placement.cpp), written independently of search/: every contiguous
// split of the layers over the p*v stages times every per-layer recompute
// choice, for every schedule choice, simulated with Lower(), the schedule
// registry and the engine. Included only by Catch2 test files.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <optional>
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

namespace ppb::brute {

inline constexpr Bytes kUnlimited = std::numeric_limits<Bytes>::max();

// ---------------------------------------------------------------------------
// Brute force.

// One strategy under one schedule choice, simulated.
struct Point {
  int choice = 0;
  Strategy strategy;
  Nanos makespan = 0;
  std::vector<Bytes> peaks;  // per device
  Bytes max_peak = 0;
  int recomputed = 0;  // layers with a recompute mode
};

// The search's objective among feasible strategies, smaller is better.
using Objective =
    std::tuple<Nanos, Bytes, int>;  // makespan, max peak, recomputed

inline Objective ObjectiveOf(const Point& pt) {
  return {pt.makespan, pt.max_peak, pt.recomputed};
}
inline Objective ObjectiveOf(const Candidate& c) {
  return {c.makespan, c.max_peak, c.recomputed_layers};
}

inline std::string Show(const Objective& o) {
  std::ostringstream out;
  out << "{makespan " << std::get<0>(o) << ", max peak " << std::get<1>(o)
      << ", recomputed " << std::get<2>(o) << "}";
  return out.str();
}

inline std::string Show(const Strategy& s) {
  std::ostringstream out;
  out << "layers [";
  for (size_t i = 0; i < s.layers_per_stage.size(); ++i) {
    out << (i ? " " : "") << s.layers_per_stage[i];
  }
  out << "] recompute [";
  for (size_t i = 0; i < s.recompute.size(); ++i) {
    out << (i ? " " : "") << static_cast<int>(s.recompute[i]);
  }
  out << "]";
  return out.str();
}

// The whole problem, for failure messages and reproductions.
inline std::string Describe(const SearchProblem& pr) {
  std::ostringstream out;
  out << "p=" << pr.p << " m=" << pr.m
      << " comm=" << (pr.comm == CommMode::Blocking ? "blocking" : "overlapped")
      << " allow_empty_chunks=" << pr.allow_empty_chunks << "\n";
  for (const ScheduleChoice& c : pr.choices) {
    out << "choice " << c.schedule << " v=" << c.v
        << " group=" << c.params.group << " flavor="
        << (c.params.flavor == Flavor::PyTorch ? "pytorch" : "megatron")
        << "\n";
  }
  for (const Layer& l : pr.layers) {
    out << "layer " << l.name << " kind=" << LayerKindName(l.kind)
        << " F=" << l.forward << " I=" << l.backward_input
        << " W=" << l.backward_weight << " split=" << l.split_backward
        << " static=" << l.static_memory << " act=" << l.activation
        << " ws=" << l.workspace << " out=" << l.output_bytes;
    for (const RecomputeOption& o : l.recompute) {
      out << " {" << o.name << " retained=" << o.retained_activation
          << " time=" << o.extra_time << "}";
    }
    out << "\n";
  }
  for (size_t d = 0; d < pr.cluster.devices.size(); ++d) {
    out << "device " << d
        << " capacity=" << pr.cluster.devices[d].memory_capacity
        << " speed=" << pr.cluster.devices[d].speed << "\n";
  }
  for (size_t r = 0; r < pr.cluster.links.size(); ++r) {
    out << "link " << r << " latency=" << pr.cluster.links[r].latency
        << " bandwidth=" << pr.cluster.links[r].bandwidth << "\n";
  }
  return out.str();
}

// Simulates one strategy: Lower(), the registry's generator with v from the
// choice, the engine. Fails the test on a lowering or generator error.
inline SimResult Simulate(const SearchProblem& pr, int choice, const Strategy& st,
                   Engine& engine) {
  const ScheduleChoice& c = pr.choices.at(choice);
  const ScheduleInfo* info = FindSchedule(c.schedule);
  REQUIRE(info != nullptr);
  PipelineShape shape{pr.p, c.v, pr.m, pr.comm};
  shape.fb_overlap_ppm = pr.fb_overlap_ppm;
  shape.tail = pr.tail;  // the step's tail, as the search simulates it
  if (info->placement == StagePlacement::V && c.v == 2) {
    shape.placement = StagePlacement::V;  // as Prepare lowers it
  }
  Result<PipelineSpec> spec =
      Lower(pr.layers, pr.cluster, shape, st, pr.allow_empty_chunks);
  INFO("strategy " << Show(st));
  if (!spec.ok())
    FAIL("Lower: " << spec.error().key << ": " << spec.error().message);
  Result<Program> program = info->generate(*spec, c.params);
  if (!program.ok()) {
    FAIL("generate: " << program.error().key << ": "
                      << program.error().message);
  }
  return engine.Run(*spec, *program, SimOptions{false, false});
}

// Calls f(counts) for every way to write n as an ordered sum of `parts`
// counts, each >= min_part.
template <class F>
void ForEachSplit(int n, int parts, int min_part, std::vector<int>& counts,
                  F&& f) {
  const int k = static_cast<int>(counts.size());
  if (k == parts - 1) {
    if (n < min_part) return;
    counts.push_back(n);
    f(counts);
    counts.pop_back();
    return;
  }
  for (int c = min_part; n - c >= (parts - 1 - k) * min_part; ++c) {
    counts.push_back(c);
    ForEachSplit(n - c, parts, min_part, counts, f);
    counts.pop_back();
  }
}

// Calls f(recompute) for every per-layer choice (0 = none, k = option k-1).
template <class F>
void ForEachRecompute(const std::vector<Layer>& layers, F&& f) {
  std::vector<std::uint8_t> rc(layers.size(), 0);
  while (true) {
    f(rc);
    size_t i = 0;
    for (; i < layers.size(); ++i) {
      if (rc[i] < layers[i].recompute.size()) {
        ++rc[i];
        break;
      }
      rc[i] = 0;
    }
    if (i == layers.size()) return;
  }
}

inline std::int64_t Binomial(int n, int k) {
  if (k < 0 || n < k) return 0;
  std::int64_t r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

// Strategies (over all choices) the enumeration visits.
inline std::int64_t CountStrategies(const SearchProblem& pr) {
  const int n = static_cast<int>(pr.layers.size());
  std::int64_t rc = 1;
  for (const Layer& l : pr.layers)
    rc *= 1 + static_cast<std::int64_t>(l.recompute.size());
  std::int64_t total = 0;
  for (const ScheduleChoice& c : pr.choices) {
    const int stages = pr.p * c.v;
    const int free = pr.allow_empty_chunks ? n : n - stages;
    total += Binomial(free + stages - 1, stages - 1) * rc;
  }
  return total;
}

// Every strategy of every choice, simulated (peaks do not depend on the
// capacities, which only decide feasibility).
inline std::vector<Point> Enumerate(const SearchProblem& pr) {
  std::vector<Point> points;
  points.reserve(static_cast<size_t>(CountStrategies(pr)));
  Engine engine;
  const int n = static_cast<int>(pr.layers.size());
  for (int ci = 0; ci < static_cast<int>(pr.choices.size()); ++ci) {
    const int stages = pr.p * pr.choices[ci].v;
    std::vector<int> counts;
    ForEachSplit(
        n, stages, pr.allow_empty_chunks ? 0 : 1, counts,
        [&](const std::vector<int>& split) {
          ForEachRecompute(pr.layers, [&](const std::vector<std::uint8_t>& rc) {
            Point pt;
            pt.choice = ci;
            pt.strategy.layers_per_stage = split;
            pt.strategy.recompute = rc;
            const SimResult r = Simulate(pr, ci, pt.strategy, engine);
            REQUIRE(r.outcome != Outcome::Deadlock);
            pt.makespan = r.makespan;
            for (const DeviceStats& d : r.devices) {
              pt.peaks.push_back(d.peak_memory);
              pt.max_peak = std::max(pt.max_peak, d.peak_memory);
            }
            for (std::uint8_t x : rc) pt.recomputed += x != 0;
            points.push_back(std::move(pt));
          });
        });
  }
  REQUIRE(static_cast<std::int64_t>(points.size()) == CountStrategies(pr));
  return points;
}

inline bool Fits(const Point& pt, const std::vector<Bytes>& caps) {
  for (size_t d = 0; d < caps.size(); ++d) {
    if (pt.peaks[d] > caps[d]) return false;
  }
  return true;
}

inline std::vector<Bytes> Capacities(const SearchProblem& pr) {
  std::vector<Bytes> caps;
  for (const Device& d : pr.cluster.devices) caps.push_back(d.memory_capacity);
  return caps;
}

// A strategy that is optimal under the capacities; nullptr when nothing fits.
inline const Point* OptimalPoint(const std::vector<Point>& points,
                          const std::vector<Bytes>& caps) {
  const Point* best = nullptr;
  for (const Point& pt : points) {
    if (!Fits(pt, caps)) continue;
    if (!best || ObjectiveOf(pt) < ObjectiveOf(*best)) best = &pt;
  }
  return best;
}

// The optimum under the capacities; nullopt when nothing fits.
inline std::optional<Objective> Optimum(const std::vector<Point>& points,
                                 const std::vector<Bytes>& caps) {
  const Point* best = OptimalPoint(points, caps);
  if (best == nullptr) return std::nullopt;
  return ObjectiveOf(*best);
}

// The smallest uniform capacity at which some strategy fits.
inline Bytes MinUniformCapacity(const std::vector<Point>& points) {
  Bytes best = kUnlimited;
  for (const Point& pt : points) best = std::min(best, pt.max_peak);
  return best;
}

}  // namespace ppb::brute
