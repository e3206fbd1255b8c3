// The baselines users would otherwise run (see search.h), each simulated
// by Evaluate.
//
// Contract: a baseline is applicable when its rule yields a strategy; it
// is then simulated as given (no search, no memory repair), so it may be
// infeasible. why_not says why a rule does not apply, or that it was not
// simulated because the search's deadline had passed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "search/first_tries.h"
#include "search/search.h"

namespace ppb {

std::vector<Baseline> Baselines(const SearchProblem& problem, int choice,
                                std::chrono::steady_clock::time_point deadline,
                                double simulation_s, const std::vector<Candidate>& known) {
  using Clock = std::chrono::steady_clock;
  std::vector<Baseline> out;
  // What one simulation is expected to take: the caller's figure, then the
  // longest one here.
  Clock::duration expect = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(simulation_s));
  const ScheduleChoice& ch = problem.choices[choice];
  const int p = problem.p, v = ch.v, S = p * v;
  const int L = static_cast<int>(problem.layers.size());
  // The same strategy of choice k, simulated by the search already.
  const auto simulated = [&](int k, const Strategy& st) -> const Candidate* {
    for (const Candidate& c : known) {
      if (c.choice == k && c.placement.empty() &&
          c.strategy.layers_per_stage == st.layers_per_stage &&
          c.strategy.recompute == st.recompute) {
        return &c;
      }
    }
    return nullptr;
  };
  auto add = [&](std::string name, Result<Strategy> st) {
    Baseline b;
    b.name = std::move(name);
    if (!st.ok()) {
      b.why_not = st.error().message;
      out.push_back(std::move(b));
      return;
    }
    if (const Candidate* c = simulated(choice, *st)) {
      b.applicable = true;
      b.candidate = *c;
      out.push_back(std::move(b));
      return;
    }
    const auto now = Clock::now();
    if (now >= deadline || (deadline != Clock::time_point::max() && deadline - now < expect)) {
      b.why_not = "not simulated: the time limit had passed";
      out.push_back(std::move(b));
      return;
    }
    // Stopped at the deadline: not simulated (the error says so).
    auto c = Evaluate(problem, choice, *st, {}, deadline);
    expect = std::max(expect, Clock::now() - now);
    if (!c.ok()) {
      b.why_not = c.error().message;
    } else {
      b.applicable = true;
      b.candidate = std::move(c).value();
    }
    out.push_back(std::move(b));
  };
  // The user's own strategy (the config's), as the search's first tries
  // take it for this choice.
  for (const Strategy& seed : problem.seeds) {
    FirstTry t = SeedTry(problem, seed, v);
    add(std::move(t.name), std::move(t.strategy));
  }
  const Strategy even = EvenStrategy(problem.layers, p, v);
  add("even split, no recompute", even);

  // Each recompute mode on every layer that offers it: the frameworks'
  // one-mode-per-run settings (Megatron --recompute-granularity full /
  // selective).
  const Strategy full = WithModeEverywhere(even, problem.layers, "full");
  int with_full = 0;
  for (std::uint8_t r : full.recompute) with_full += r != 0 ? 1 : 0;
  if (with_full == 0) {
    add("even split, full recompute",
        Error{"", "no layer offers a recompute mode named \"full\""});
  } else {
    add("even split, full recompute", full);
  }
  for (const std::string& mode : RecomputeModeNames(problem.layers)) {
    if (mode == "full") continue;
    add("even split, " + mode + " recompute", WithModeEverywhere(even, problem.layers, mode));
  }

  // Megatron's hand-tuned split: one decoder layer fewer on the first and
  // last stages (--decoder-first/last-pipeline-num-layers), the rest even.
  add("Megatron: one layer fewer on first and last stage", MegatronSplit(even));

  // Metis (Um et al., USENIX ATC'24) splits layers in proportion to each
  // device's compute speed, in the order the devices are given; the same
  // split with full recompute when that does not fit.
  if (problem.topology.num_devices() == p) {
    Strategy prop = even;
    const int kmin = problem.allow_empty_chunks ? 0 : 1;
    double total = 0;
    for (int s = 0; s < S; ++s) total += problem.cluster.devices[s % p].speed;
    std::vector<std::pair<double, int>> rest;
    int given = 0;
    for (int s = 0; s < S; ++s) {
      const double share = (L - kmin * S) * problem.cluster.devices[s % p].speed / total;
      const int whole = static_cast<int>(std::floor(share));
      prop.layers_per_stage[s] = kmin + whole;
      given += kmin + whole;
      rest.emplace_back(-(share - whole), s);
    }
    std::sort(rest.begin(), rest.end());
    for (int i = 0; given < L; ++i, ++given) ++prop.layers_per_stage[rest[i % S].second];
    std::fill(prop.recompute.begin(), prop.recompute.end(), 0);
    add("Metis-style: layers in proportion to speed, given order", prop);
    if (with_full > 0) {
      prop.recompute = full.recompute;
      add("Metis-style, full recompute", prop);
    }
  }
  // Searching several schedules: the best of them with the even split and
  // no recompute (what trying each schedule by hand gives), by Better.
  const int n = static_cast<int>(problem.choices.size());
  if (n > 1) {
    Baseline b;
    b.name = "even split, no recompute, best of the " + std::to_string(n) + " schedule choices";
    for (int k = 0; k < n; ++k) {
      const ScheduleChoice& other = problem.choices[static_cast<size_t>(k)];
      const Strategy even_k = EvenStrategy(problem.layers, p, other.v);
      if (const Candidate* c = simulated(k, even_k)) {
        if (!b.applicable || Better(*c, b.candidate)) {
          b.applicable = true;
          b.candidate = *c;
        }
        continue;
      }
      const auto now = Clock::now();
      if (now >= deadline || (deadline != Clock::time_point::max() && deadline - now < expect)) {
        if (!b.applicable) b.why_not = "not simulated: the time limit had passed";
        continue;  // a later choice's may have been simulated by the search
      }
      auto c = Evaluate(problem, k, even_k, {}, deadline);
      expect = std::max(expect, Clock::now() - now);
      if (!c.ok() && c.error().key == kTimeLimitKey) {
        if (!b.applicable) b.why_not = c.error().message;
        continue;
      }
      if (!c.ok()) continue;  // a split or schedule this choice refuses
      if (!b.applicable || Better(*c, b.candidate)) {
        b.applicable = true;
        b.candidate = std::move(c).value();
      }
    }
    if (!b.applicable && b.why_not.empty()) b.why_not = "no schedule choice runs the even split";
    if (b.applicable) {
      const ScheduleChoice& best = problem.choices[static_cast<size_t>(b.candidate.choice)];
      b.name += ": " + best.schedule + " v=" + std::to_string(best.v);
      if (best.params.group > 0) b.name += " g=" + std::to_string(best.params.group);
      b.why_not.clear();
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace ppb
