// Reports of `ppb-sim search` and `ppb-sim rank`: text for people, JSON for
// tools ("ppb.search/1", "ppb.rank/1"), and the one-line progress report.
// Pure formatting: callers write the strings where they belong. Everything
// is a function of its arguments (the search's solve time is the only
// figure that changes between identical runs).
#pragma once

#include <string>
#include <vector>

#include "apps/input/config.h"
#include "search/search.h"

namespace ppb {

// What a finished search reports, besides the config it ran on.
// With search.target any: the best strategy one framework can deploy
// (search/deployable.h), beside the recommendation.
struct DeployableBest {
  DeployTarget target = DeployTarget::Megatron;
  bool searched = false;   // false: no time left to search it
  bool is_recommendation = false;  // the recommendation itself is deployable
  SearchResult result;     // the search restricted to `target`
  // Why the framework cannot run the recommendation's split (SplitRefusal;
  // empty when it can).
  std::string split_refusal;
  // When its search found nothing that fits and did not prove that nothing
  // does: the framework's defaults (TryDefaults: the first tries it can
  // deploy) simulated, none of which fits, each "name (schedule): peak P
  // on rank r of C"; empty otherwise.
  std::vector<std::string> defaults_tried;
};

struct SearchReport {
  const SearchProblem* problem = nullptr;
  const SearchOptions* options = nullptr;
  const SearchResult* result = nullptr;
  // Baselines(problem, choice of the best, or 0 when nothing fits).
  std::vector<Baseline> baselines;
  int processes = 1;  // mpirun ranks that shared the search
  // Target any: each framework's best deployable strategy (empty under a
  // framework target, whose result is already deployable).
  std::vector<DeployableBest> deployable;
  // Seconds the frameworks' deployable searches took before the
  // recommendation's (target any under a time limit; 0: they came after or
  // not at all). Shown beside the search's own time.
  double frameworks_first_s = 0;
};

// The recommendation (split as a [chunk][rank] table and a Megatron layout,
// recompute per stage and per layer, per-device memory), the top-K list,
// "PROVED OPTIMAL" or where and how far from the bound it stopped, the
// search's figures and the baselines with the recommendation's speedup.
std::string FormatSearchText(const RunConfig& config,
                             const SearchReport& report);

// One JSON object with "schema": "ppb.search/1"; ends with a newline.
std::string FormatSearchJson(const RunConfig& config,
                             const SearchReport& report);

// "fits", "OOM on rank 3", "OOM on ranks 0, 1, 5-15" (runs of three or
// more as ranges) or "infeasible (deadlock)".
// With `headroom` (SearchProblem::headroom): "at risk on rank 3 (inside
// the memory headroom)" when every rank over capacity is within it.
std::string Fits(const Candidate& c, Bytes headroom = 0);
// Whether `c` runs on the GPU: it fits, or only the headroom is short (at
// risk); out of memory and deadlocked candidates do not.
bool RunsOnGpu(const Candidate& c, Bytes headroom);

// The least per-device capacity at which a strategy fits, as the search
// found it: "X (rank r binds)", "X (binding rank unknown)", or, when its
// search stopped at the time limit, "at most X (...)" / "not found (...)".
std::string MinCapacityText(const SearchResult& result);

// "full decoder.0-3, decoder.9; selective decoder.4-8", or "none".
std::string RecomputeByLayer(const std::vector<Layer>& layers,
                             const Strategy& strategy);

// "full 3, selective 10", or "none": recomputed layers per mode.
std::string RecomputeSummary(const std::vector<Layer>& layers,
                             const Strategy& strategy);

// One line: elapsed, nodes, evaluations, incumbent, lower bound, gap.
std::string FormatProgress(const SearchProgress& progress);

// A candidate of `ppb-sim rank` with its evaluation, in rank order.
struct RankedCandidate {
  std::string name;
  Candidate candidate;
};

// A table best first: rank, name, schedule, iteration time, bubble, max
// peak memory, and whether it fits (else the ranks out of memory).
std::string FormatRankText(const RunConfig& config,
                           const SearchProblem& problem,
                           const std::vector<RankedCandidate>& ranked);

// One JSON object with "schema": "ppb.rank/1"; ends with a newline.
std::string FormatRankJson(const RunConfig& config,
                           const SearchProblem& problem,
                           const std::vector<RankedCandidate>& ranked);

}  // namespace ppb
