// Internal to search/: splits to start the search from (heuristics.cpp).
//
// Contract: each returns a split of the choice's layers over its stages
// that gives every stage its minimum (or empty when it cannot); none looks
// at memory except ChunkAwareSplit, which uses the ranks' exact memory
// model to spread each rank's decoders over its chunks. Deterministic.
#pragma once

#include <vector>

#include "search/context.h"

namespace ppb::search_detail {

std::vector<int> EvenSplit(const ChoiceProblem& cp);
std::vector<int> BalancedSplit(const ChoiceProblem& cp);
std::vector<int> RelaxedSplit(const ChoiceProblem& cp, const std::vector<int>& per_device,
                              int rep);
std::vector<int> SplitFromQuota(const ChoiceProblem& cp, const std::vector<int>& quota,
                                int rep);
std::vector<int> ChunkAwareSplit(const ChoiceProblem& cp, const std::vector<int>& per_device,
                                 int rep);

}  // namespace ppb::search_detail
