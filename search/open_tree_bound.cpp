// The open-tree bound (TotalsPathBound): for the strategies that can still
// beat the incumbent, the least longest path through the fixed program over
// the decoder counts each rank may hold, by an exact LP over path mixtures
// with column generation and a branch-and-bound over boxes of counts.
//
// Contract: TotalsPathBound(best) is valid for every strategy of the choice
// with makespan <= best: it returns a value <= the optimum whenever the
// optimum is below best, and at most best otherwise. The value is floored
// and lowered by a rounding slack.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>

#include "core/cost.h"
#include "search/lp.h"
#include "search/searcher.h"

namespace ppb::search_detail {
namespace {

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
                std::vector<Path>* pool, Engine& sim, Clock::time_point t0, Nanos best_time)
      : cp(problem), totals(relaxation), path_pool(pool), engine(sim), start(t0),
        best(best_time), S(problem.c.S), p(problem.c.p), v(problem.c.v),
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

  const ChoiceProblem& cp;
  const Totals& totals;
  std::vector<Path>* path_pool;
  Engine& engine;
  Clock::time_point start;
  Nanos best;
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
};

bool OpenTreeBound::Ranges() {
  lo.assign(p, -1);
  hi.assign(p, -1);
  for (int d = 0; d < p; ++d) {
    for (int k = 0; k <= D; ++k) {
      if (totals.load[d][k] > best) continue;
      if (lo[d] < 0) lo[d] = k;
      hi[d] = k;
    }
    if (lo[d] < 0) return false;  // cannot happen below a real incumbent
  }
  // The counts add up to D: tighten each range by the others' ranges.
  for (int round = 0; round < 2; ++round) {
    long long slo = 0, shi = 0;
    for (int d = 0; d < p; ++d) {
      slo += lo[d];
      shi += hi[d];
    }
    if (slo > D || shi < D) return false;
    for (int d = 0; d < p; ++d) {
      lo[d] = std::max<long long>(lo[d], D - (shi - hi[d]));
      hi[d] = std::min<long long>(hi[d], D - (slo - lo[d]));
    }
  }
  return true;
}

void OpenTreeBound::Setup() {
  const Layer& dec = cp.pb.layers[totals.rep];
  fd = static_cast<double>(dec.forward);
  bd = static_cast<double>(dec.backward_input + dec.backward_weight);
  speed.assign(S, 0.0);
  for (int st = 0; st < S; ++st) speed[st] = cp.pb.cluster.devices[cp.c.spec.stage_device[st].value].speed;
  // Stages that must hold a decoder: all but those of a pinned first or
  // last layer, unless other non-decoder layers could fill some.
  must.assign(S, 0);
  if (totals.free_others == 0 && !cp.pb.allow_empty_chunks) {
    for (int st = 0; st < S; ++st) must[st] = 1;
    if (totals.first_pinned) must[0] = 0;
    if (totals.last_pinned) must[S - 1] = 0;
  }
  paths = BuildPaths(cp);
  own_paths = static_cast<int>(paths.size());
  if (path_pool) paths.insert(paths.end(), path_pool->begin(), path_pool->end());
  raw_paths = paths;  // before the pinned layers are folded in
  for (Path& P : paths) FoldPinned(P);
  cost.assign(S, 0.0);
  scale = static_cast<double>(best);
  generate = totals.free_others == 0 && !cp.pb.allow_empty_chunks;
  slack = static_cast<double>(cp.c.m) * (S + 1) * 4;
  target = static_cast<double>(best) + slack;
  for (int k = 0; k < static_cast<int>(paths.size()); ++k) path_index.emplace(KeyOf(paths[k]), k);
}

// Pinned layers' work is fixed: fold it into a path's constant. (With
// empty chunks allowed the first layer may sit past stage 0.)
void OpenTreeBound::FoldPinned(Path& P) const {
  if (cp.pb.allow_empty_chunks) return;
  auto add = [&](int layer, int st) {
    const Layer& x = cp.pb.layers[layer];
    P.c += (P.a[st] * x.forward + P.b[st] * (x.backward_input + x.backward_weight)) / speed[st];
  };
  if (totals.first_pinned) add(0, 0);
  if (totals.last_pinned) add(cp.c.L - 1, S - 1);
}

// Time path P spends per decoder on stage st.
double OpenTreeBound::Unit(const Path& P, int st) const {
  return (P.a[st] * fd + P.b[st] * bd) / speed[st];
}

std::vector<double> OpenTreeBound::LeastRt(const Box& box) const {
  std::vector<double> r(p, 0.0);
  if (totals.rt.empty()) return r;
  for (int d = 0; d < p; ++d) {
    int klo = lo[d], khi = hi[d], floor_d = 0, ceil_d = 0;
    for (int c = 0; c < v; ++c) {
      floor_d += box.lb[StageOf(cp.c.spec.placement, p, c, d)];
      ceil_d += box.ub[StageOf(cp.c.spec.placement, p, c, d)];
    }
    klo = std::max(klo, floor_d);
    khi = std::min(khi, ceil_d);
    Nanos least = kInf;
    if (ByChunk(box, d)) {
      // The least over the box's counts per chunk (ChunkRecompute).
      ChunkCounts cc = CountsOf(box, d);
      do {
        int sum = 0;
        for (int c = 0; c < v; ++c) sum += cc.k[c];
        if (sum >= klo && sum <= khi && sum <= D) {
          least = std::min(least, std::max(totals.rt[d][sum], chunks.Least(d, cc.k)));
        }
      } while (cc.Next());
    } else {
      for (int k = std::max(0, klo); k <= khi && k <= D; ++k) least = std::min(least, totals.rt[d][k]);
    }
    r[d] = least >= kInf ? 0.0 : static_cast<double>(least) / cp.pb.cluster.devices[d].speed;
  }
  return r;
}

double OpenTreeBound::RecomputeOn(const Path& P, const std::vector<double>& r) const {
  double t = 0;
  for (int d = 0; d < p; ++d) {
    if (r[d] == 0) continue;
    double least = P.b[d];
    for (int c = 1; c < v; ++c) least = std::min(least, P.b[StageOf(cp.c.spec.placement, p, c, d)]);
    t += least * r[d];
  }
  return t;
}

// Respond(): the least value of the mixture lambda over the integral
// allocations in a box, exactly. Per rank, taking its k cheapest units
// (stage by stage within the box) costs a convex function of k; on top of
// it, memory forces recompute: a rank holding k decoders runs at least
// rt[d][k] of it per micro-batch inside its B ops, spread over its chunks
// in some way, so a path with b_P B ops on each of the rank's stages
// carries at least min_c b_P * rt[d][k]. The rank's cost g_d(k) is then
// any function of k, and a knapsack over the ranks (k within the rank's
// range and the box, D in all) gives the exact least value. Counts that
// cannot fit (rt = kInf) are not allocations at all.
// A stage of a rank whose recompute the box leaves loose at integral x
// (LeastRt over the rank's count range below rt at x's count), the
// loosest such rank's widest stage; -1: none.
int OpenTreeBound::LooseStage(const Box& box, const std::vector<double>& x) const {
  if (totals.rt.empty()) return -1;
  const std::vector<double> least = LeastRt(box);
  int pick = -1;
  double most = 0;
  for (int d = 0; d < p; ++d) {
    int k = 0, widest = -1;
    for (int c = 0; c < v; ++c) {
      const int st = StageOf(cp.c.spec.placement, p, c, d);
      k += static_cast<int>(std::llround(x[st]));
      if (box.lb[st] < box.ub[st] && (widest < 0 || box.ub[st] - box.lb[st] >
                                                        box.ub[widest] - box.lb[widest])) {
        widest = st;
      }
    }
    if (widest < 0 || k < 0 || k > D) continue;
    const double r = RtAt(d, k);
    if (!std::isfinite(r)) continue;
    if (r - least[d] > most) {
      most = r - least[d];
      pick = widest;
    }
  }
  return pick;
}

double OpenTreeBound::LeastB(const Path& P, int d) const {
  double least = std::numeric_limits<double>::infinity();
  for (int c = 0; c < v; ++c) least = std::min(least, P.b[StageOf(cp.c.spec.placement, p, c, d)]);
  return least;
}

double OpenTreeBound::RtAt(int d, int k) const {
  if (totals.rt.empty()) return 0;
  const Nanos t = totals.rt[d][k];
  return t >= kInf ? std::numeric_limits<double>::infinity()
                   : static_cast<double>(t) / cp.pb.cluster.devices[d].speed;
}

bool OpenTreeBound::ByChunk(const Box& box, int d) const {
  if (totals.rt.empty()) return false;
  long long combos = 1;
  for (int c = 0; c < v; ++c) {
    const int st = StageOf(cp.c.spec.placement, p, c, d);
    combos *= std::max(1, std::min(box.ub[st], hi[d]) - box.lb[st] + 1);
    if (combos > kMaxChunkCombos) return false;
  }
  return true;
}

OpenTreeBound::ChunkCounts OpenTreeBound::CountsOf(const Box& box, int d) const {
  ChunkCounts cc;
  for (int c = 0; c < v; ++c) {
    const int st = StageOf(cp.c.spec.placement, p, c, d);
    cc.st.push_back(st);
    cc.lo.push_back(box.lb[st]);
    cc.k.push_back(box.lb[st]);
    cc.top.push_back(std::min(box.ub[st], hi[d]));
  }
  return cc;
}

std::vector<double> OpenTreeBound::ChunkCosts(const Box& box, int d, int klo, int khi,
                                              double rc) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<double> g(khi - klo + 1, kNone);
  ChunkCounts cc = CountsOf(box, d);
  const double speed_d = cp.pb.cluster.devices[d].speed;
  do {
    int sum = 0;
    double units = 0;
    for (int c = 0; c < v; ++c) {
      sum += cc.k[c];
      units += cc.k[c] * cost[cc.st[c]];
    }
    if (sum >= klo && sum <= khi) {
      const double r0 = RtAt(d, sum);
      const Nanos r1 = chunks.Least(d, cc.k);
      if (r0 != kNone && r1 < kInf) {
        const double r = std::max(r0, static_cast<double>(r1) / speed_d);
        g[sum - klo] = std::min(g[sum - klo], units + rc * r);
      }
    }
  } while (cc.Next());
  return g;
}

double OpenTreeBound::Respond(const std::vector<double>& lam, const Box& box) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  double cst = 0;
  std::fill(cost.begin(), cost.end(), 0.0);
  std::vector<double> rc(p, 0.0);  // per rank: the mixture's weight on its recompute
  for (size_t k = 0; k < lam.size(); ++k) {
    if (lam[k] == 0) continue;
    cst += lam[k] * paths[k].c;
    for (int st = 0; st < S; ++st) {
      cost[st] += lam[k] * Unit(paths[k], st);
    }
    for (int d = 0; d < p; ++d) rc[d] += lam[k] * LeastB(paths[k], d);
  }
  // least[j]: the least cost of the ranks so far holding j decoders.
  std::vector<double> least(D + 1, kNone), next(D + 1);
  least[0] = 0;
  std::vector<double> units;
  for (int d = 0; d < p; ++d) {
    int floor_d = 0;
    double floor_cost = 0;
    units.clear();
    for (int c = 0; c < v; ++c) {
      const int st = StageOf(cp.c.spec.placement, p, c, d);
      if (box.lb[st] > box.ub[st]) return kNone;
      floor_d += box.lb[st];
      floor_cost += box.lb[st] * cost[st];
      const int room = std::min(box.ub[st] - box.lb[st], std::max(0, hi[d]));
      for (int u = 0; u < room; ++u) units.push_back(cost[st]);
    }
    std::sort(units.begin(), units.end());
    const int klo = std::max(lo[d], floor_d);
    const int khi = std::min<int>({hi[d], floor_d + static_cast<int>(units.size()), D});
    if (klo > khi) return kNone;
    std::fill(next.begin(), next.end(), kNone);
    auto take = [&](int k, double gk) {
      for (int j = 0; j + k <= D; ++j) {
        if (least[j] == kNone) continue;
        next[j + k] = std::min(next[j + k], least[j] + gk);
      }
    };
    if (ByChunk(box, d)) {
      // The rank's cost per count k is the least over its counts per chunk,
      // each charged the recompute those counts force (ChunkRecompute):
      // rt[d][k] may put the stash where the fewest micro-batches are in
      // flight (v > 1) and takes recompute as free with over two modes.
      const std::vector<double> g = ChunkCosts(box, d, klo, khi, rc[d]);
      for (int k = klo; k <= khi; ++k) {
        if (g[k - klo] != kNone) take(k, g[k - klo]);
      }
    } else {
      double g = floor_cost;
      for (int k = floor_d; k <= khi; ++k) {
        if (k > floor_d) g += units[k - floor_d - 1];
        if (k < klo) continue;
        const double r = RtAt(d, k);
        if (r == kNone) continue;  // k cannot fit on d
        take(k, g + rc[d] * r);
      }
    }
    least.swap(next);
  }
  if (least[D] == kNone) return kNone;
  return cst + least[D];
}

bool OpenTreeBound::TimeUp() const {
  return PastDeadline(cp.opt) ||
         (cp.opt.time_limit_s > 0 &&
          std::chrono::duration<double>(Clock::now() - start).count() > cp.opt.time_limit_s);
}

std::vector<double> OpenTreeBound::KeyOf(const Path& P) {
  std::vector<double> k(P.a);
  k.insert(k.end(), P.b.begin(), P.b.end());
  k.push_back(P.c);
  return k;
}

// The best mixture for a box is an LP: max over path weights lambda
// (summing to 1) of min over the box's allocations x of sum_P lambda_P
// len_P(x). The allocations' hull is {lb <= x <= ub, lo_d <= sum_c x_cd
// <= hi_d, sum x = D} (integral), so its dual is min over that hull of
// max_P len_P(x): the continuous relaxation of the fixed program's
// longest path, a convex function of x. ColumnLp solves the first form
// exactly; its shadow prices are the minimizing x*, where the simulator's
// critical path is the path that most violates the current mixture
// (column generation), until no path is longer at x* than the LP's
// value: the relaxation is solved. Whatever the floating point did, the
// box's bound is Respond() of the LP's weights: the exact least value
// over its integral allocations.
Solved OpenTreeBound::SolveBox(const Box& box) {
  Solved out;
  // Row 0: sum lambda <= 1 (its price is t); row 1 + st: -sum_P K_P[st]
  // lambda_P + (duals of the rank and box constraints) <= 0 (its price is
  // x_st - lb_st), with K_P[st] path P's time per decoder on stage st.
  std::vector<double> rhs(S + 1, 0.0);
  rhs[0] = 1.0;
  ColumnLp lp(std::move(rhs));
  std::vector<double> col(S + 1);
  std::vector<int> path_column, path_of_column;
  const std::vector<double> rt = LeastRt(box);
  auto add_path = [&](int k) {
    const Path& P = paths[k];
    std::fill(col.begin(), col.end(), 0.0);
    col[0] = 1.0;
    double cst = (P.c + RecomputeOn(P, rt)) / scale;
    for (int st = 0; st < S; ++st) {
      const double kk = Unit(P, st) / scale;
      col[1 + st] = -kk;
      cst += kk * box.lb[st];
    }
    path_column.push_back(lp.AddColumn(cst, col));
    path_of_column.push_back(k);
  };
  int d_rest = D;
  for (int st = 0; st < S; ++st) d_rest -= box.lb[st];
  for (int d = 0; d < p; ++d) {
    int floor_d = 0;
    for (int c = 0; c < v; ++c) floor_d += box.lb[StageOf(cp.c.spec.placement, p, c, d)];
    std::fill(col.begin(), col.end(), 0.0);
    for (int c = 0; c < v; ++c) col[1 + StageOf(cp.c.spec.placement, p, c, d)] = 1.0;
    lp.AddColumn(std::max(lo[d], floor_d) - floor_d, col);  // sum_c x_cd >= lo_d
    for (double& e : col) e = -e;
    lp.AddColumn(-(hi[d] - floor_d), col);  // sum_c x_cd <= hi_d
  }
  std::fill(col.begin(), col.end(), 1.0);
  col[0] = 0.0;
  lp.AddColumn(d_rest, col);  // sum x >= D
  for (double& e : col) e = -e;
  lp.AddColumn(-d_rest, col);  // sum x <= D
  for (int st = 0; st < S; ++st) {
    if (box.ub[st] >= D) continue;
    std::fill(col.begin(), col.end(), 0.0);
    col[1 + st] = -1.0;
    lp.AddColumn(-(box.ub[st] - box.lb[st]), col);  // x_st <= ub_st
  }
  for (int k = 0; k < static_cast<int>(paths.size()); ++k) add_path(k);
  std::vector<double> lam;
  for (;;) {
    const ColumnLp::Status status = lp.Solve();
    if (status == ColumnLp::Status::Unbounded) {
      out.bound = std::numeric_limits<double>::infinity();  // an empty box
      out.x.clear();
      return out;
    }
    if (status != ColumnLp::Status::Optimal) return out;
    const std::vector<double> z = lp.Primal();
    lam.assign(paths.size(), 0.0);
    double sum = 0;
    out.support.clear();
    for (size_t j = 0; j < path_column.size(); ++j) {
      const double w = z[path_column[j]];
      if (w <= 0) continue;
      lam[path_of_column[j]] = w;
      sum += w;
      out.support.push_back(path_of_column[j]);
    }
    if (sum <= 0) return out;
    for (double& l : lam) l /= sum;
    out.bound = std::max(out.bound, Respond(lam, box));
    const std::vector<double> pi = lp.Duals();
    out.x.assign(S, 0.0);
    for (int st = 0; st < S; ++st) out.x[st] = box.lb[st] + std::max(0.0, pi[1 + st]);
    if (!generate || rounds_left <= 0 || out.bound >= target || TimeUp()) return out;
    --rounds_left;
    const std::vector<double>& x = out.x;
    const double t_star = lp.Objective() * scale;
    Path P;
    if (!CriticalPathAt(x, &P)) return out;
    const Path raw = P;
    FoldPinned(P);
    double len = P.c + RecomputeOn(P, rt);
    for (int s = 0; s < S; ++s) len += x[s] * Unit(P, s);
    // No path is longer at x* than the mixture: the relaxation is solved.
    if (len <= t_star * (1 + 1e-9) + 1.0) return out;
    // A path the LP already has: it is solved up to rounding.
    if (!path_index.emplace(KeyOf(P), static_cast<int>(paths.size())).second) return out;
    paths.push_back(std::move(P));
    raw_paths.push_back(raw);
    add_path(static_cast<int>(paths.size()) - 1);
  }
}

bool OpenTreeBound::CriticalPathAt(const std::vector<double>& x, Path* P) {
  const Layer& dec = cp.pb.layers[totals.rep];
  const Layer& first = cp.pb.layers.front();
  const Layer& last = cp.pb.layers.back();
  // A split near x* (largest remainders) that Lower accepts, then the
  // stage times of x* itself.
  Strategy st;
  st.layers_per_stage.assign(S, 0);
  int total = 0;
  std::vector<std::pair<double, int>> frac;
  for (int s = 0; s < S; ++s) {
    st.layers_per_stage[s] = static_cast<int>(std::floor(x[s] + 1e-9));
    total += st.layers_per_stage[s];
    frac.emplace_back(-(x[s] - std::floor(x[s] + 1e-9)), s);
  }
  std::sort(frac.begin(), frac.end());
  for (int i = 0; total < D && i < S; ++i, ++total) ++st.layers_per_stage[frac[i].second];
  if (total != D) return false;
  if (totals.first_pinned) ++st.layers_per_stage[0];
  if (totals.last_pinned) ++st.layers_per_stage[S - 1];
  st.recompute.assign(cp.pb.layers.size(), 0);
  auto spec = Lower(cp.pb.layers, cp.pb.cluster, PipelineShape{p, v, cp.c.m, cp.pb.comm, cp.c.spec.placement}, st, false);
  if (!spec.ok()) return false;
  for (int s = 0; s < S; ++s) {
    double f = x[s] * static_cast<double>(dec.forward);
    double bi = x[s] * static_cast<double>(dec.backward_input);
    double bw = x[s] * static_cast<double>(dec.backward_weight);
    for (const auto& [pinned, layer] : {std::pair{totals.first_pinned && s == 0, &first},
                                        std::pair{totals.last_pinned && s == S - 1, &last}}) {
      if (!pinned) continue;
      f += static_cast<double>(layer->forward);
      bi += static_cast<double>(layer->backward_input);
      bw += static_cast<double>(layer->backward_weight);
    }
    StageCost& sc = spec->stages[s];
    sc.forward = std::llround(f / speed[s]);
    sc.backward_input = std::llround(bi / speed[s]);
    sc.backward_weight = std::llround(bw / speed[s]);
    sc.recompute = 0;
  }
  SimOptions so;
  so.record_ops = true;
  const SimResult r = engine.Run(*spec, *cp.c.program, so);
  if (r.outcome == Outcome::Deadlock) return false;
  *P = PathOf(cp, CriticalPath(*spec, *cp.c.program, r));
  return true;
}

Nanos OpenTreeBound::Run() {
  if (!Ranges()) return 0;
  Setup();
  // Branch-and-bound over boxes, least bound first: a box whose relaxation
  // has a fractional minimizer splits on its most fractional stage count
  // (x_st <= floor, x_st >= ceil); one with an integral minimizer is
  // settled (no allocation in it does better than that relaxation). The
  // bound is the least over settled and open boxes.
  Box root{must, std::vector<int>(S, D)};
  for (int st = 0; st < S; ++st) root.ub[st] = std::min(D, hi[cp.c.spec.stage_device[st].value]);
  Solved at_root = SolveBox(root);
  if (!std::isfinite(at_root.bound)) return 0;  // cannot happen below a real incumbent
  using Open = std::pair<double, int>;  // (bound, index into boxes)
  std::vector<std::pair<Box, Solved>> boxes;
  std::priority_queue<Open, std::vector<Open>, std::greater<Open>> open;
  boxes.emplace_back(std::move(root), std::move(at_root));
  open.emplace(boxes.back().second.bound, 0);
  double settled = std::numeric_limits<double>::infinity();
  while (!open.empty()) {
    const auto [b, i] = open.top();
    if (b >= target || TimeUp() || rounds_left <= 0 ||
        static_cast<int>(boxes.size()) + 2 > max_boxes) {
      break;
    }
    open.pop();
    const std::vector<double> x = boxes[i].second.x;
    int split = -1;
    double most = 1e-6;
    for (int st = 0; st < static_cast<int>(x.size()); ++st) {
      const double f = std::abs(x[st] - std::round(x[st]));
      if (f > most) {
        most = f;
        split = st;
      }
    }
    // An integral minimizer still leaves a rank's recompute loose when its
    // count can vary in the box and the least recompute over the range is
    // below that of the count at x: split that rank's stage at x.
    int at = -1;
    if (split < 0 && !x.empty()) at = LooseStage(boxes[i].first, x);
    if (at >= 0) {
      const Box bx = boxes[i].first;  // a copy: boxes grows below
      const int xr = static_cast<int>(std::llround(x[at]));
      // [lb, c] and [c + 1, ub], both non-empty.
      const int c = xr < bx.ub[at] ? xr : xr - 1;
      for (int side = 0; side < 2; ++side) {
        Box child = bx;
        if (side == 0) child.ub[at] = c;
        else child.lb[at] = c + 1;
        Solved s = SolveBox(child);
          s.bound = std::max(s.bound, b);
        if (!std::isfinite(s.bound)) continue;
        boxes.emplace_back(std::move(child), std::move(s));
        open.emplace(boxes.back().second.bound, static_cast<int>(boxes.size()) - 1);
      }
      continue;
    }
    if (split < 0) {
      settled = std::min(settled, b);  // integral (or no minimizer known)
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      Box child = boxes[i].first;
      if (side == 0) {
        child.ub[split] = static_cast<int>(std::floor(x[split]));
      } else {
        child.lb[split] = static_cast<int>(std::ceil(x[split]));
      }
      Solved s = SolveBox(child);
      s.bound = std::max(s.bound, b);  // a child's bound is at least its parent's
      if (!std::isfinite(s.bound)) continue;
      boxes.emplace_back(std::move(child), std::move(s));
      open.emplace(boxes.back().second.bound, static_cast<int>(boxes.size()) - 1);
    }
  }
  if (path_pool) {
    // What the next searcher starts from: the paths any box's LP used.
    std::vector<char> used(paths.size(), 0);
    for (const auto& bx : boxes) {
      for (int k : bx.second.support) used[k] = 1;
    }
    path_pool->clear();
    for (size_t k = own_paths; k < paths.size(); ++k) {
      if (used[k]) path_pool->push_back(raw_paths[k]);
    }
  }
  double bound = std::min(settled, open.empty() ? std::numeric_limits<double>::infinity()
                                                 : open.top().first);
  // Nothing open below the target: no strategy in range beats `best`.
  bound = std::min(bound, target);
  // Per-op rounding to whole ns can shave a little; stay safely below.
  return std::max<Nanos>(0, static_cast<Nanos>(std::floor(bound - slack)));
}

}  // namespace

// A bound that couples the decoder counts per rank with the fill and drain
// of the schedule, for the strategies that can still beat `best`.
//
// RootBound's load[d][k] bounds the makespan of any strategy in which rank
// d holds k decoders, so a strategy with makespan <= best gives every rank
// a count in [lo_d, hi_d] (those k with load <= best, also within what the
// other ranks can leave: the counts add up to D). Over such allocations
// (decoders placed on any chunk of their rank, every stage without a pinned
// first or last layer holding at least one decoder when no other layer
// could fill it; the other non-decoder layers cost >= 0 and are dropped),
// the makespan is at least any mixture of the program's paths (BuildPaths);
// its least value is found exactly by a greedy over ranks. The best
// mixture is an exact LP (ColumnLp) whose paths come from the simulator's
// critical paths at the LP's own minimizing allocation (column generation,
// below). Any mixture is valid.
// The integrality the per-rank ranges carry is what the allocation-free
// path bound (PathWeights) misses: e.g. the last rank holding the head
// must also hold its full share of decoders, and then the fill and drain
// through the other stages come on top of its work.
Nanos TotalsPathBound(const ChoiceProblem& cp, const Totals& totals,
                      std::vector<Path>* path_pool, Engine& engine,
                      Clock::time_point start, Nanos best) {
  const int D = totals.decoders;
  if (D <= 0 || totals.load.empty() || best >= kInf || PastDeadline(cp.opt)) return 0;
  return OpenTreeBound(cp, totals, path_pool, engine, start, best).Run();
}

}  // namespace ppb::search_detail
