// From a run config to the inputs of the strategy search (search/search.h):
// the problem (which schedule / v / micro-batch group combinations are
// searched) and the options (limits, threads, seed), and the problem that
// `ppb-sim rank` evaluates candidates under.
#pragma once

#include <string>
#include <vector>

#include "apps/input/candidates.h"
#include "apps/input/config.h"
#include "core/result.h"
#include "search/search.h"

namespace ppb {

// The search problem of `config`: its layers, cluster, p, m, communication
// and empty-chunk rule, and the choices of config.search:
//   - gpipe and 1f1b run with v = 1 (and no micro-batch group);
//   - interleaved runs with each listed v >= 2 and each listed group;
//   - an absent list takes the pipeline section's value (schedule, v, g);
//     with no lists at all the single choice is the pipeline's own.
// Errors (formatted with FormatError, key search.* or pipeline.*): the
// pipeline's schedule is custom; a listed v that no listed schedule takes
// (v = 1 without gpipe/1f1b, v >= 2 without interleaved); interleaved
// without a v >= 2; groups listed without interleaved or with flavor
// pytorch (which derives g); p * v above the number of layers without
// allow_empty_chunks; a combination the schedule refuses (e.g. g < p).
// Choices are ordered by schedule (as listed), then v, then g.
Result<SearchProblem> BuildSearchProblem(const RunConfig& config);

// config.search as SearchOptions (no progress callback): a time limit of 0
// and a node limit of 0 mean none; 0 threads means every hardware thread.
SearchOptions MakeSearchOptions(const SearchSettings& settings);

// `ppb-sim rank`: the config's problem whose choices are the distinct
// (schedule, v, params) of the candidates, in order of first use;
// choice_of[i] is candidate i's index into problem.choices.
struct RankProblem {
  SearchProblem problem;
  std::vector<int> choice_of;
};
RankProblem BuildRankProblem(const RunConfig& config,
                             const std::vector<RankCandidate>& candidates);

// `config` with candidate `c` of `problem` in place of its pipeline
// schedule, v, schedule parameters, strategy and device order (and the problem's
// empty-chunk rule), ready for Prepare(): how a search's answer is simulated
// again in full, e.g. to draw it.
RunConfig CandidateConfig(const RunConfig& config, const SearchProblem& problem,
                          const Candidate& c);

// The problem's pipeline communication: "overlapped", "blocking", or with
// the choices following Megatron's rule and differing, "blocking for
// 1f1b/gpipe, overlapped otherwise (Megatron's rule)".
std::string DescribeComm(const SearchProblem& problem);

// "1f1b", "interleaved v=2 g=8" (g as the schedule will use it): one choice
// for people.
std::string DescribeChoice(const SearchProblem& problem,
                           const ScheduleChoice& choice);

}  // namespace ppb
