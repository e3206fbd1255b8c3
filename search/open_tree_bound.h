// Internal to search/: the state of one open-tree bound (TotalsPathBound,
// bounds.h), shared by its two files: open_tree_bound.cpp (ranges, the LP
// per box with column generation, the branch-and-bound over boxes, the
// whole splits met on the way) and open_tree_pricing.cpp (what a box's
// integral allocations cost a mixture of paths: Respond and the recompute
// memory forces per rank and per chunk).
//
// Contract: as TotalsPathBound's (open_tree_bound.cpp). Respond(lam, box) is
// the exact least value of the mixture lam over the box's integral
// allocations (kNone when it has none); LeastRt(box) is per rank at most
// the recompute of any of them.
#pragma once

#include <map>
#include <vector>

#include "search/searcher.h"

namespace ppb::search_detail {

// Most counts-per-chunk combinations Respond prices one rank by
// (ChunkRecompute); a rank with more in a box is priced by its total.
constexpr long long kMaxChunkCombos = 4096;

// A node of the bound's own branch-and-bound: decoders of stage st within
// [lb[st], ub[st]] (the root: [must, the rank's hi]).
struct Box {
  std::vector<int> lb, ub;
};

struct Solved {
  double bound = 0;  // valid for every integral allocation in the box
  std::vector<double> x;  // the relaxation's minimizer (empty: none)
  std::vector<int> support;  // paths with weight in its LP's solution
};

// The state of one TotalsPathBound (see there): the decoder ranges, the
// paths known so far, and the column generation and branch-and-bound over
// boxes that use them.
class OpenTreeBound {
 public:
  OpenTreeBound(const ChoiceProblem& problem, const Totals& relaxation,
                std::vector<Path>* pool, Engine& sim, Clock::time_point t0, Nanos best_time,
                const SplitFloor* floor, Nanos* unattained_out)
      : cp(problem), totals(relaxation), path_pool(pool), engine(sim), start(t0),
        best(best_time), split_floor(floor), unattained(unattained_out), S(problem.c.S),
        p(problem.c.p), v(problem.c.v),
        D(relaxation.decoders), chunks(problem, relaxation) {}

  Nanos Run();

 private:
  // lo/hi: the decoder counts per rank of strategies that can beat `best`;
  // false when there are none (no bound).
  bool Ranges();
  // Stage speeds, the stages that must hold a decoder, the paths known so
  // far (pinned layers folded in) and the LP's constants.
  void Setup();
  void FoldPinned(Path& P) const;
  double Unit(const Path& P, int st) const;
  std::vector<double> LeastRt(const Box& box) const;
  double RecomputeOn(const Path& P, const std::vector<double>& r) const;
  // The least value of mixture lam over the box's whole allocations.
  double Respond(const std::vector<double>& lam, const Box& box);
  int LooseStage(const Box& box, const std::vector<double>& x) const;
  double LeastB(const Path& P, int d) const;  // least B ops of P on d's chunks
  double RtAt(int d, int k) const;            // d's least recompute with k (time)
  // Whether Respond prices rank d by its counts per chunk (few enough
  // combinations in the box), and those prices: per k in
  // [klo, khi], the least over the box's counts per chunk adding up to k of
  // their units plus rc times the recompute they force (kNone: none fits).
  bool ByChunk(const Box& box, int d) const;
  std::vector<double> ChunkCosts(const Box& box, int d, int klo, int khi, double rc);
  // Rank d's counts per chunk within the box: chunk c's stage st[c] holds
  // from its lower bound to min(its upper bound, hi[d]) decoders; Next()
  // steps through every such vector k (mixed-radix order), false after
  // the last.
  struct ChunkCounts {
    std::vector<int> st, k, lo, top;
    bool Next() {
      size_t c = 0;
      while (c < k.size() && k[c] == top[c]) {
        k[c] = lo[c];
        ++c;
      }
      if (c == k.size()) return false;
      ++k[c];
      return true;
    }
  };
  ChunkCounts CountsOf(const Box& box, int d) const;

  bool TimeUp() const;
  static std::vector<double> KeyOf(const Path& P);
  Solved SolveBox(const Box& box);
  // The simulator's critical path at a split near x (false: none).
  bool CriticalPathAt(const std::vector<double>& x, Path* P);
  // A lower bound on every strategy whose split is the whole allocation x
  // (infinity: none fits; -1: none known): split_floor's, else with one
  // chunk per rank one simulation with each stage's recompute at its
  // rank's least.
  struct Point {
    double value = -1;
    bool attained = false;  // SplitValue::attained
  };
  Point PointBound(const std::vector<double>& x);

  const ChoiceProblem& cp;
  const Totals& totals;
  std::vector<Path>* path_pool;
  Engine& engine;
  Clock::time_point start;
  Nanos best;
  const SplitFloor* split_floor;
  Nanos* unattained;
  int S, p, v, D;
  std::vector<int> lo, hi;    // per rank
  double fd = 0, bd = 0;      // a decoder's forward and backward work
  std::vector<double> speed;  // per stage
  std::vector<int> must;      // per stage: must hold a decoder
  std::vector<Path> paths;
  int own_paths = 0;
  std::vector<Path> raw_paths;
  std::vector<double> cost;   // Respond's scratch: per stage
  double scale = 1;
  // Only when every layer but a pinned first and last is a decoder are the
  // decoder counts per stage a split that the simulator can run.
  bool generate = false;
  // Column generation rounds over the whole tree, and the most boxes. A
  // search under a clock stops the bound at it; with no clock (node limits
  // only) these caps end it, so that its answer is the same on every run.
  bool clocked() const {
    return cp.opt.time_limit_s > 0 || cp.opt.deadline != Clock::time_point::max();
  }
  int rounds_left = clocked() ? 200'000 : 2000;
  const int max_boxes = clocked() ? 100'000 : 4000;
  // Boxes are searched until every open one is bound at `target`: then no
  // strategy in range beats `best` even after the rounding allowance.
  double slack = 0, target = 0;
  // Every box's LP starts from every path known so far; the simulator's
  // critical paths join them (once each).
  std::map<std::vector<double>, int> path_index;  // a ++ b ++ {c} -> index
  mutable ChunkRecompute chunks;  // the recompute per counts per chunk (a cache)
  // split_floor's values, once per split; a better attained one lowers
  // `best` and `target`.
  std::map<std::vector<int>, SplitValue> evaluated;
  SplitValue FloorOf(const std::vector<int>& split);
  // The split nearest the box's fractional minimizer x, offered through
  // split_floor (a primal heuristic: its value bounds nothing).
  void TryRounded(const std::vector<double>& x);
  // The split of the decoder counts nearest x (pinned layers added);
  // false when they do not add up to D.
  bool NearestSplit(const std::vector<double>& x, std::vector<int>* split) const;
};

}  // namespace ppb::search_detail
