// The strategies a user would try first (search/first_tries.h).
#include "search/first_tries.h"

#include <algorithm>
#include <utility>

#include "core/lower.h"
#include "schedules/schedule.h"
#include "search/deployable.h"

namespace ppb {

Result<Strategy> MegatronSplit(const Strategy& even) {
  const int S = static_cast<int>(even.layers_per_stage.size());
  if (S < 3) return Error{"", "needs at least 3 stages"};
  if (even.layers_per_stage.front() < 2 || even.layers_per_stage.back() < 2) {
    return Error{"", "the first or last stage has too few layers"};
  }
  Strategy s = even;
  s.layers_per_stage.front() -= 1;
  s.layers_per_stage.back() -= 1;
  // Spread the two freed layers over the middle stages, fewest first.
  for (int extra = 0; extra < 2; ++extra) {
    int best = 1;
    for (int x = 1; x + 1 < S; ++x) {
      if (s.layers_per_stage[x] < s.layers_per_stage[best]) best = x;
    }
    s.layers_per_stage[best] += 1;
  }
  return s;
}

std::vector<std::string> RecomputeModeNames(const std::vector<Layer>& layers) {
  std::vector<std::string> names;
  for (const Layer& l : layers) {
    for (const RecomputeOption& o : l.recompute) {
      if (std::find(names.begin(), names.end(), o.name) == names.end()) names.push_back(o.name);
    }
  }
  return names;
}

Strategy WithModeEverywhere(Strategy strategy, const std::vector<Layer>& layers,
                            const std::string& name) {
  strategy.recompute.assign(layers.size(), 0);
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto& opts = layers[l].recompute;
    for (size_t k = 0; k < opts.size(); ++k) {
      if (opts[k].name == name) strategy.recompute[l] = static_cast<std::uint8_t>(k + 1);
    }
  }
  return strategy;
}

FirstTry SeedTry(const SearchProblem& problem, const Strategy& seed, int v) {
  if (seed.layers_per_stage.size() == static_cast<size_t>(problem.p) * static_cast<size_t>(v)) {
    return FirstTry{"your config", seed};
  }
  Strategy s = EvenStrategy(problem.layers, problem.p, v);
  s.recompute = seed.recompute;
  return FirstTry{"your config's recompute, even split", std::move(s)};
}

std::vector<FirstTry> FirstTries(const SearchProblem& problem, int choice) {
  const int v = problem.choices[static_cast<size_t>(choice)].v;
  const size_t S = static_cast<size_t>(problem.p) * static_cast<size_t>(v);
  const Strategy even = EvenStrategy(problem.layers, problem.p, v);
  std::vector<FirstTry> out;
  auto add = [&](std::string name, Strategy s) {
    if (s.layers_per_stage.size() != S || s.recompute.size() != problem.layers.size()) return;
    for (const FirstTry& o : out) {
      if (o.strategy.layers_per_stage == s.layers_per_stage &&
          o.strategy.recompute == s.recompute) {
        return;
      }
    }
    out.push_back(FirstTry{std::move(name), std::move(s)});
  };
  for (const Strategy& seed : problem.seeds) {
    FirstTry t = SeedTry(problem, seed, v);
    add(std::move(t.name), std::move(t.strategy));
  }
  const std::vector<std::string> modes = RecomputeModeNames(problem.layers);
  std::vector<std::pair<std::string, Strategy>> splits{{"even split", even}};
  if (Result<Strategy> meg = MegatronSplit(even); meg.ok()) {
    splits.emplace_back("Megatron split (one layer fewer on the first and last stage)", *meg);
  }
  for (const auto& [name, split] : splits) {
    add(name + ", no recompute", split);
    for (const std::string& mode : modes) {
      add(name + ", " + mode + " on every layer that offers it",
          WithModeEverywhere(split, problem.layers, mode));
    }
  }
  return out;
}

std::vector<TriedDefault> TryDefaults(const SearchProblem& problem, DeployTarget target,
                                      std::chrono::steady_clock::time_point deadline) {
  std::vector<TriedDefault> out;
  for (int c = 0; c < static_cast<int>(problem.choices.size()); ++c) {
    const ScheduleChoice& ch = problem.choices[static_cast<size_t>(c)];
    const ScheduleInfo* info = FindSchedule(ch.schedule);
    const bool v_placement = info != nullptr && info->placement == StagePlacement::V && ch.v == 2;
    // A choice the framework cannot run at all (Megatron's group rule, ...).
    if (target != DeployTarget::Any &&
        !ChoiceRefusal(target, problem.layers, ch.v, v_placement, problem.p, problem.m,
                       EffectiveGroup(ch, problem.p, problem.m))
             .empty()) {
      continue;
    }
    for (FirstTry& t : FirstTries(problem, c)) {
      if (std::chrono::steady_clock::now() >= deadline) return out;
      if (target != DeployTarget::Any &&
          !Deployable(target, problem.layers, t.strategy, problem.p, ch.v, v_placement)) {
        continue;
      }
      Result<Candidate> e = Evaluate(problem, c, t.strategy, {}, deadline);
      if (!e.ok()) continue;
      out.push_back(TriedDefault{std::move(t.name), c, std::move(e).value()});
    }
  }
  return out;
}

}  // namespace ppb
