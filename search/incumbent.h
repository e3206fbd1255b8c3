// Internal to search/: the top list of candidates and what hangs off it.
//
// Contract: a top list is sorted by Better (best first), holds at most
// top_k feasible candidates, and one per (choice, device order, split),
// the better of two kept. TopThreshold is the bound a subtree must not
// exceed to be explored (a subtree bounded above it cannot enter the list).
// ReportDue throttles progress reports to one per interval. TopList holds
// a list with its top_k and cutoff, and when its best improved. Better() itself
// is public (search.h).
#pragma once

#include <utility>
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

// The top list of one search with its threshold, and each time its best
// improved; kept by the split search and the placement search alike.
struct TopList {
  int top_k = 1;
  Nanos cutoff = -1;                                 // -1: none
  std::vector<Candidate> top;                        // sorted by Better, distinct
  std::vector<std::pair<double, Nanos>> incumbents;  // (s since start, makespan)

  // OfferTop; a new best is recorded with its time since `start`.
  void Offer(Candidate c, Clock::time_point start);
  Nanos Threshold() const { return TopThreshold(top, top_k, cutoff); }
};

}  // namespace ppb::search_detail
