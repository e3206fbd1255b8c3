// Internal to search/: the search on one fixed cluster over every schedule
// choice, and the placement search over device orders.
//
// Contract: SearchFixed searches each choice independently (its own
// Searcher; results do not depend on thread timing), shares a node limit
// out over the choices deterministically, and reports every strategy as
// Evaluate() simulates it. SearchPlacement searches device orders too.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "search/context.h"
#include "search/context_cache.h"

namespace ppb::search_detail {

// The search on the problem's own cluster (no placement decision). When the
// deadline leaves no time to prepare a choice or to run one simulation of
// the problem, it answers "time limit: nothing evaluated" (nothing found,
// nothing proved, bound 0).
Result<SearchResult> SearchFixed(const SearchProblem& problem, const SearchOptions& options);

// Evaluate (search.h), simulating `program` when given (the search's own
// for the choice: its context's) instead of one generated here.
Result<Candidate> Simulate(const SearchProblem& problem, int choice, const Strategy& strategy,
                           const Placement& placement, Clock::time_point deadline,
                           const Program* program);

// That answer: nothing evaluated before the time limit.
SearchResult NothingEvaluated(const SearchOptions& options);
constexpr const char* kNothingEvaluated = "time limit: nothing evaluated";

// Simulates the strategies of `top` (best first) again by `evaluate`
// (Evaluate, or a stand-in in tests) and replaces each by what it gives;
// past the deadline, or when one more simulation (the longest seen, at
// least simulation_s) would end past it, only those done are kept (the best
// always). A strategy `evaluate` refuses,
// or whose simulation disagrees with the search's (feasible, time, max
// peak, recomputed layers: what Better ranks), is dropped, and the
// returned note says which and why: the search's proof was made with the
// search's own numbers, so the caller must then not claim it. A simulation
// `evaluate` stopped at the deadline (kTimeLimitKey) ends it: the best then
// keeps the search's own figures and the note is "time limit". Empty when
// every strategy was simulated again and agrees.
std::string ResimulateTop(std::vector<Candidate>& top, const SearchOptions& options,
                          const std::function<Result<Candidate>(const Candidate&)>& evaluate,
                          double simulation_s = 0);

// When nothing fits: the least uniform capacity at which a split of some
// choice does, into res (min_capacity_needed, binding_device,
// min_capacity_cut).
void MinCapacity(const SearchProblem& pb, const SearchOptions& options,
                 const std::vector<ChoiceContext>& ctxs, SearchResult& res);

// The search over device orders (SearchProblem::search_placement).
Result<SearchResult> SearchPlacement(const SearchProblem& problem,
                                     const SearchOptions& options);

// The search over only what options.target can deploy: one search per
// recompute setting of the target, merged (target_search.cpp).
Result<SearchResult> SearchTarget(const SearchProblem& problem, const SearchOptions& options);

}  // namespace ppb::search_detail
