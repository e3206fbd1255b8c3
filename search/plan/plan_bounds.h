// A plan's bounds on one layout's search problem without a simulation:
// what prunes a layout before its pipeline is searched (contract 1 of
// search/plan/layout_search.h).
//
// Contract: both are valid for every strategy of the problem (every split,
// every recompute the problem offers, every schedule choice), so a layout
// pruned by them holds nothing better.
#pragma once

#include <optional>

#include "search/deployable.h"
#include "search/search.h"

namespace ppb {

// The memory floor: false when no strategy of the problem fits (under
// `setting`, a uniform recompute mode, when given). Every layer's static
// memory and least stash against the layout's whole memory: some rank
// holds at least the mean, and each rank holds one micro-batch's stash of
// all its chunks when its first backward starts.
bool PlanFloorFits(const SearchProblem& problem,
                   const std::optional<RecomputeSetting>& setting = std::nullopt);

// The cheap bound on every strategy of the problem (no recompute, no
// pipeline messages counted): the larger of
//   - every micro-batch's forward and backward work W (per micro-batch,
//     times m) at perfect balance over the ranks' speeds;
//   - on equal-speed ranks, a schedule that loops stages over the ranks
//     without empty chunks: every op of rank d waits for micro-batch j's
//     forwards through the stages before rank d's first (and, with a fused
//     backward, is followed by their backwards), which hold at least d
//     distinct layers: T >= (m W + Sum_d S_d) / p, S_d the d smallest
//     layers' share; with v = 1, T >= m W_d + f Sum_{d'<d} W_d' for every
//     rank, whose least over every split is f W / (1 - (1 - f/m)^p) (f: 1
//     fused, else the least forward share of a layer's work);
// plus the optimizer's mean share after the pipeline (as search/search.h
// LowerBound).
Nanos PlanCheapBound(const SearchProblem& problem);

}  // namespace ppb
