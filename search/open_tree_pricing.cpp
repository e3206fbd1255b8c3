// What a box's integral allocations of decoders cost a mixture of paths
// (OpenTreeBound, open_tree_bound.h): per rank the cheapest units in the
// box, the recompute its memory forces at each count (per chunk where few
// enough combinations), and the knapsack over ranks.
//
// Contract: see open_tree_bound.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cost.h"
#include "search/open_tree_bound.h"

namespace ppb::search_detail {

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

}  // namespace ppb::search_detail
