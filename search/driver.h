// Internal to search/: the search on one fixed cluster over every schedule
// choice, and the placement search over device orders.
//
// Contract: SearchFixed searches each choice independently (its own
// Searcher; results do not depend on thread timing), shares a node limit
// out over the choices deterministically, and reports every strategy as
// Evaluate() simulates it. SearchPlacement searches device orders too.
#pragma once

#include <vector>

#include "search/context.h"

namespace ppb::search_detail {

Result<ChoiceContext> MakeContext(const SearchProblem& pb, int index);

// The contexts of the choices the schedules accept; the first refusal when
// they accept none.
Result<std::vector<ChoiceContext>> MakeContexts(const SearchProblem& problem);

// The search on the problem's own cluster (no placement decision).
Result<SearchResult> SearchFixed(const SearchProblem& problem, const SearchOptions& options);

// The search over device orders (SearchProblem::search_placement).
Result<SearchResult> SearchPlacement(const SearchProblem& problem,
                                     const SearchOptions& options);

// The search over only what options.target can deploy: one search per
// recompute setting of the target, merged (target_search.cpp).
Result<SearchResult> SearchTarget(const SearchProblem& problem, const SearchOptions& options);

}  // namespace ppb::search_detail
