// The strategies a user would try first for one schedule choice, which every
// search simulates before any heuristic or tree and keeps as incumbents, so
// that its answer is never slower than one of them that fits (issue 32):
//   - the problem's own seeds (SearchProblem::seeds: the config's strategy):
//     as given when it has the choice's p·v stages, else its recompute on
//     the even split of the choice;
//   - the even split (EvenStrategy) and Megatron's hand-tuned split (one
//     decoder layer fewer on the first and last stages, MegatronSplit), each
//     with no recompute and with each recompute mode on every layer that
//     offers it (Megatron's --recompute-granularity full / selective, one
//     mode per run).
// Contract: deterministic; every strategy has p·v stages and one recompute
// entry per layer, distinct, in the order above. Nothing is simulated here.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "search/search.h"

namespace ppb {

// Megatron's split of `even` (EvenStrategy's): one layer fewer on the first
// and last stages (--decoder-first/last-pipeline-num-layers), the two freed
// layers given to the middle stages with the fewest, first such stage
// first. An error when there are fewer than 3 stages or the first or last
// holds fewer than 2 layers.
Result<Strategy> MegatronSplit(const Strategy& even);

// Each recompute mode name offered by some layer, in order of first offer.
std::vector<std::string> RecomputeModeNames(const std::vector<Layer>& layers);

// `strategy` with mode `name` on every layer that offers it, none elsewhere.
Strategy WithModeEverywhere(Strategy strategy, const std::vector<Layer>& layers,
                            const std::string& name);

// One first try: "your config", "even split, no recompute", "Megatron
// split, selective on every layer that offers it", ...
struct FirstTry {
  std::string name;
  Strategy strategy;
};

// The user's strategy `seed` for a choice of v chunks per rank: as given
// ("your config") when it has p·v stages, else its recompute on the even
// split ("your config's recompute, even split").
FirstTry SeedTry(const SearchProblem& problem, const Strategy& seed, int v);

// The first tries of choice `choice` of `problem` (above).
std::vector<FirstTry> FirstTries(const SearchProblem& problem, int choice);

// The first tries `target` can deploy (search/deployable.h), simulated
// under every choice of `problem` (until `deadline`): what a user of that
// framework would try first, for a report that says which of them were
// tried when a search finds nothing that fits. Deterministic order
// (choices, then tries).
struct TriedDefault {
  std::string name;  // the FirstTry's
  int choice = 0;
  Candidate candidate;  // simulated: feasible, devices' peaks and capacities
};
std::vector<TriedDefault> TryDefaults(
    const SearchProblem& problem, DeployTarget target,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace ppb
