// Internal to search/: the lower bounds that hold for a whole tree (one
// schedule choice on one cluster), as functions of what they read.
//
// Contract: RootBound (root_bound.cpp) is a lower bound on the makespan of
// every split of the choice; its relaxation (RootRelaxation::totals) bounds
// every strategy in which rank d holds k decoders. PathWeights
// (path_bound.cpp) gives a path mixture valid for every split and its value
// at the root; TotalsPathBound is valid for every strategy that can beat
// `best`. Every value is floored and lowered by a rounding slack.
#pragma once

#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "search/context.h"

namespace ppb::search_detail {

// A path through the program's dependency graph: its length is
// sum_s (a[s] * F_s + b[s] * B_s) + c for stage times F_s, B_s.
struct Path {
  std::vector<double> a, b;
  double c = 0;
};

// RootBound's recompute fronts of k decoders, k = 0..D (they depend on the
// layers alone).
using Fronts = std::vector<std::vector<std::pair<Bytes, Nanos>>>;
// RootBound's least recompute per (rank, capacity), for k = 0..D (they
// depend on the problem, the program and the capacity alone).
using RecomputeRows = std::map<std::pair<int, Bytes>, std::vector<Nanos>>;

// RootBound's relaxation, kept for TotalsPathBound: the largest group of
// identical layers ("decoders") and load[d][k], a lower bound on the
// makespan when rank d holds k of them (kInf: k cannot fit).
struct Totals {
  int decoders = 0, rep = 0, free_others = 0;
  bool first_pinned = false, last_pinned = false;
  std::vector<std::vector<Nanos>> load;
  std::vector<std::vector<Nanos>> rt;  // [d][k] least recompute per mb (speed 1), or kInf
};

// What RootBound learns besides its value.
struct RootRelaxation {
  Totals totals;
  Nanos forced_recompute = 0;   // least total recompute per mb memory forces
  std::vector<int> per_device;  // the relaxation's allocation (empty: none)
  int rep = 0;                  // a decoder
};

// Path bound (PathWeights): T >= sum_s (pa[s] f_s + pbw_coef[s] b_s) + pconst
// for any allocation; pa_min[s] / pb_min[s] = least coefficient per unit
// of unscaled work over stages >= s (for layers not yet placed).
struct PathMixture {
  std::vector<double> pa, pbw_coef, pa_min, pb_min;
  double pconst = 0;
};

// root_bound.cpp. `fronts` and `rt_cache` may be null (no sharing).
Nanos RootBound(const ChoiceProblem& cp, Fronts* fronts, RecomputeRows* rt_cache,
                RootRelaxation& out);
// The least total recompute per micro-batch that memory forces on any
// allocation of D decoders (root_bound.cpp); 0 past opt's deadline.
Nanos ForcedRecompute(const std::vector<std::vector<Nanos>>& rt_table, int D,
                      const SearchOptions& opt);

// path_bound.cpp.
Nanos LeastHop(const ChoiceProblem& cp, int a, int b);
Path PathOf(const ChoiceProblem& cp, const std::vector<CriticalStep>& steps);
std::vector<Path> BuildPaths(const ChoiceProblem& cp);
Nanos PathWeights(const ChoiceProblem& cp, Nanos forced_recompute, PathMixture& out);

// chunk_recompute.cpp. The least recompute (per micro-batch, speed 1) with
// which rank d fits its memory when its chunk c holds k[c] decoders (kInf:
// no recompute lets it fit). Per chunk the decoders' stash and recompute
// time is a point of their recompute front (every mode enumerated while
// small, else StackRecomputeFront); the
// rank's peak is at least its static memory (decoders and the pinned first
// or last layer) plus, at every moment of its program, the in-flight count
// of each chunk times that chunk's stash (the pinned layers' least stash
// included; an F adds its own) plus the op's stage workspace; a
// re-materialized activation and any other layer only add.
// Unlike RootBound's rt[d][k], which may put the stash in the chunk with the
// fewest micro-batches in flight, this sees where the decoders are (v > 1).
// Answers are cached per (rank, counts).
class ChunkRecompute {
 public:
  ChunkRecompute(const ChoiceProblem& cp, const Totals& totals);
  Nanos Least(int d, const std::vector<int>& k);

 private:
  const std::vector<std::pair<Bytes, Nanos>>& Front(int k);
  void Prepare(int d);

  const ChoiceProblem& cp_;
  const Totals& totals_;
  std::vector<std::vector<std::pair<Bytes, Nanos>>> fronts_;  // by k (built lazily)
  std::vector<char> built_;
  // Per rank: the in-flight counts of the moments no other moment covers,
  // and each one's pinned least stash.
  std::vector<std::vector<std::vector<int>>> moments_;
  std::vector<std::vector<long double>> base_;
  std::vector<std::vector<int>> chunk_;       // per rank: each moment's op chunk
  std::vector<std::vector<Bytes>> pinned_ws_;  // per rank and chunk
  std::vector<char> prepared_;
  std::vector<std::map<std::vector<int>, Nanos>> cache_;
};

// A lower bound, at nominal times (ChoiceContext::bound_scale), on the
// makespan of every strategy whose split (layers per stage) is `split`
// (floor: kInf when none fits, -1 when none is known); `attained` when a
// strategy of that split and makespan was offered to the search, its ties
// settled as a leaf's.
struct SplitValue {
  Nanos floor = -1;
  bool attained = false;
};
using SplitFloor = std::function<SplitValue(const std::vector<int>& split)>;

// open_tree_bound.cpp.
// `path_pool` (may be null): paths shared by searchers of one program on
// clusters with the same links; `engine` simulates the critical paths;
// `start` is the search's start (the time limit counts from it);
// `split_floor` (may be null) bounds the splits the bound meets whole;
// `unattained` (may be null) gets the bound over all but the splits it
// called attained: above `best` when no strategy outside them beats or ties
// it.
Nanos TotalsPathBound(const ChoiceProblem& cp, const Totals& totals,
                      std::vector<Path>* path_pool, Engine& engine,
                      Clock::time_point start, Nanos best,
                      const SplitFloor* split_floor = nullptr, Nanos* unattained = nullptr);

}  // namespace ppb::search_detail
