// Internal to search/: the top list of candidates and what hangs off it.
//
// Contract: a top list is sorted by Better (best first), holds at most
// top_k feasible candidates, and one per (choice, device order, split),
// the better of two kept. TopThreshold is the bound a subtree must not
// exceed to be explored (a subtree bounded above it cannot enter the list).
// ReportDue throttles progress reports to one per interval. Better() itself
// is public (search.h).
#pragma once

#include <vector>

#include "search/context.h"

namespace ppb::search_detail {

// ---------------------------------------------------------------------------
// The top list (best first, at most top_k distinct strategies), kept by the
// split search and by the placement search alike.

// Adds a feasible candidate unless top_k better ones are there; one entry
// per (choice, device order, split), the better kept. True when it became
// the best.
bool OfferTop(std::vector<Candidate>& top, Candidate c, int top_k);

// Whether a progress report is due (forced, or `interval` seconds after
// the last one); records the time when it is.
bool ReportDue(bool force, double interval, Clock::time_point& last);

// A bound a subtree must not exceed to be explored: the K-th best time
// once the list is full, and never above `cutoff` (-1: none).
Nanos TopThreshold(const std::vector<Candidate>& top, int top_k, Nanos cutoff);

}  // namespace ppb::search_detail
