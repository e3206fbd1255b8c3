#include "search/plan/plan_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "schedules/schedule.h"
#include "search/deployable.h"

namespace ppb {

namespace {
constexpr Bytes kMaxBytes = std::numeric_limits<Bytes>::max();
}  // namespace

bool PlanFloorFits(const SearchProblem& problem, const std::optional<RecomputeSetting>& setting) {
  Bytes need = 0;
  const int n = static_cast<int>(problem.layers.size());
  for (int i = 0; i < n; ++i) {
    const Layer& l = problem.layers[static_cast<size_t>(i)];
    // The least stash of the modes the layer may take (a uniform setting:
    // its one mode; Every's choice does not depend on the stage).
    Bytes stash = kMaxBytes;
    const std::vector<std::uint8_t> modes =
        setting && setting->kind == RecomputeSetting::Kind::Every
            ? AllowedModes(*setting, problem.layers, 0, n, i)
            : std::vector<std::uint8_t>{};
    if (modes.empty()) {
      stash = l.activation;
      for (const RecomputeOption& o : l.recompute) stash = std::min(stash, o.retained_activation);
    } else {
      for (std::uint8_t x : modes) {
        const Bytes kept =
            x == 0 ? l.activation : l.recompute[static_cast<size_t>(x - 1)].retained_activation;
        stash = std::min(stash, kept);
      }
    }
    need += l.static_memory + stash;
  }
  Bytes have = 0;
  for (const Device& d : problem.cluster.devices) have += d.memory_capacity;
  return need <= have;
}

namespace {

// The pipeline part of PlanCheapBound under one schedule choice, in ns on
// speed-1 devices (see plan_bounds.h).
long double FillDrainBound(const SearchProblem& pr, const ScheduleChoice& choice) {
  const int p = pr.p;
  const long double m = pr.m;
  long double total = 0;
  for (const Layer& l : pr.layers) total += static_cast<long double>(l.forward + l.backward());
  long double best = total * m / p;  // perfect balance
  const ScheduleInfo* info = FindSchedule(choice.schedule);
  if (info == nullptr || info->placement != StagePlacement::Loop || pr.allow_empty_chunks ||
      p < 2 || total <= 0) {
    return best;
  }
  // Fused backward: every op of rank d lies between the forwards and after
  // the backwards of the stages before its first (Sum_{s<d} F_s + B_s);
  // with W split off (zero-bubble schedules) only the forwards count.
  const bool fused = choice.schedule == "gpipe" || choice.schedule == "1f1b" ||
                     choice.schedule == "interleaved" || choice.schedule == "looped-bfs";
  std::vector<long double> c;  // what each layer adds before/after a rank
  long double f = 1;           // least share of a layer's work that counts
  for (const Layer& l : pr.layers) {
    const long double w = static_cast<long double>(l.forward + l.backward());
    const long double x = fused ? w : static_cast<long double>(l.forward);
    c.push_back(x);
    if (w > 0) f = std::min(f, x / w);
  }
  // Ranks 0..d-1's first stages hold at least d distinct layers: rank d
  // waits at least the d smallest; summed over the ranks, T >= (m W +
  // Sum_d S_d) / p.
  std::sort(c.begin(), c.end());
  long double sum_s = 0, s_d = 0;
  for (int d = 0; d < p && d <= static_cast<int>(c.size()); ++d) {
    sum_s += s_d;
    if (d < static_cast<int>(c.size())) s_d += c[static_cast<size_t>(d)];
  }
  best = std::max(best, (total * m + sum_s) / p);
  // v = 1: rank d's stage is its whole work W_d, and T >= m W_d + f
  // Sum_{d'<d} W_d'; the least T over every split (W_d real) equalises
  // them: T = f W / (1 - (1 - f/m)^p).
  if (choice.v == 1 && f > 0) {
    const long double denom = 1 - std::pow(1 - f / m, static_cast<long double>(p));
    if (denom > 0) best = std::max(best, f * total / denom);
  }
  return best;
}

}  // namespace

Nanos PlanCheapBound(const SearchProblem& problem) {
  double speed = -1;
  for (const Device& d : problem.cluster.devices) {
    if (speed < 0) speed = d.speed;
    if (d.speed != speed) speed = 0;  // mixed speeds: perfect balance only
  }
  long double pipe = 0;
  if (speed > 0) {
    pipe = std::numeric_limits<long double>::max();
    for (const ScheduleChoice& c : problem.choices) {
      pipe = std::min(pipe, FillDrainBound(problem, c) / static_cast<long double>(speed));
    }
  } else {
    long double work = 0, total_speed = 0;
    for (const Layer& l : problem.layers) {
      work += static_cast<long double>(l.forward + l.backward());
    }
    for (const Device& d : problem.cluster.devices) total_speed += d.speed;
    pipe = total_speed > 0 ? work * problem.m / total_speed : 0;
  }
  // Floored, less a rounding slack of 1 ns per layer.
  const auto p = static_cast<Nanos>(std::floor(pipe)) - static_cast<Nanos>(problem.layers.size());
  return std::max<Nanos>(0, p) + TailOptimizerFloor(problem);
}

}  // namespace ppb
