// The open-tree bound (TotalsPathBound): for the strategies that can still
// beat the incumbent, the least longest path through the fixed program over
// the decoder counts each rank may hold, by an exact LP over path mixtures
// with column generation and a branch-and-bound over boxes of counts.
//
// Contract: TotalsPathBound(best) is valid for every strategy of the choice
// with makespan <= best: it returns a value <= the optimum whenever the
// optimum is below best, and at most best + 1 otherwise. The relaxations'
// values are floored and lowered by a rounding slack; a whole split met as
// a box's minimizer is bounded by SplitFloor (exact: no slack) and cut out
// of its box. `unattained` leaves out the splits SplitFloor attained: when
// it is above the search's best (which those splits were offered to), no
// strategy beats or ties that best outside splits whose ties are settled.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>

#include "core/cost.h"
#include "search/lp.h"
#include "search/open_tree_bound.h"

namespace ppb::search_detail {

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
  target = static_cast<double>(best) + 1 + slack;
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
  // Out of time: no bound of its own (the caller keeps its parent's) and no
  // minimizer, so the box is settled at that bound when it is popped.
  if (TimeUp()) return out;
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
    // A long run of pivots stops at the clock too (a box left with the
    // rounds before it, or its parent's bound). The boxes' LPs take at most
    // about 3,000 pivots on the shipped configs; one in 20,000 is stalling
    // (search-96l-p16-v2 had one run to 100,000: 0.56 s).
    const ColumnLp::Status status = lp.Solve(20000, [this] { return TimeUp(); });
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
  // A split near x* that Lower accepts, then the stage times of x* itself.
  Strategy st;
  if (!NearestSplit(x, &st.layers_per_stage)) return false;
  st.recompute.assign(cp.pb.layers.size(), 0);
  auto spec = Lower(cp.pb.layers, cp.pb.cluster, PipelineShape{p, v, cp.c.m, cp.c.spec.comm, cp.c.spec.placement}, st, false);
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

OpenTreeBound::Point OpenTreeBound::PointBound(const std::vector<double>& x) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  if (!generate || x.size() != static_cast<size_t>(S)) return {};
  Strategy st;
  if (!NearestSplit(x, &st.layers_per_stage)) return {};  // x itself: it is whole
  if (split_floor != nullptr) {
    const SplitValue f = FloorOf(st.layers_per_stage);
    if (f.floor >= kInf) return {kNone, true};
    if (f.floor >= 0) return {static_cast<double>(f.floor), f.attained};
  }
  if (v != 1) return {};
  // One chunk per rank: stage s's recompute is at least its decoders'
  // least that fits (a pinned layer's only adds), and the makespan is the
  // program's longest path, monotone in every op's time.
  st.recompute.assign(cp.pb.layers.size(), 0);
  auto spec = Lower(cp.pb.layers, cp.pb.cluster,
                    PipelineShape{p, v, cp.c.m, cp.c.spec.comm, cp.c.spec.placement}, st, false);
  if (!spec.ok()) return {};
  for (int s = 0; s < S; ++s) {
    const int d = cp.c.spec.stage_device[s].value;
    const int k = static_cast<int>(std::llround(x[s]));
    Nanos r = 0;
    if (!totals.rt.empty()) {
      r = std::max(totals.rt[d][k], chunks.Least(d, {k}));
      if (r >= kInf) return {kNone, true};
    }
    spec->stages[s].recompute = ScaleTime(r, speed[s]);
  }
  SimOptions so;
  so.record_ops = false;
  const SimResult res = engine.Run(*spec, *cp.c.program, so);
  if (res.outcome == Outcome::Deadlock || res.outcome == Outcome::Interrupted) return {};
  // At nominal times (ChoiceContext::bound_scale): the run had the saving.
  const double nominal = static_cast<double>(res.makespan) / std::min(1.0, cp.c.bound_scale);
  return {std::floor(nominal), false};
}

SplitValue OpenTreeBound::FloorOf(const std::vector<int>& split) {
  auto it = evaluated.find(split);
  if (it != evaluated.end()) return it->second;
  const SplitValue f = (*split_floor)(split);
  evaluated.emplace(split, f);
  if (f.attained && f.floor >= 0 && f.floor < best) {
    // A better strategy, offered: from here on only what beats or ties it
    // matters.
    best = f.floor;
    target = static_cast<double>(best) + 1 + slack;
  }
  return f;
}

bool OpenTreeBound::NearestSplit(const std::vector<double>& x, std::vector<int>* split) const {
  // Largest remainders: each stage rounds to its floor or ceiling, so the
  // split stays in any box x is in.
  split->assign(S, 0);
  int total = 0;
  std::vector<std::pair<double, int>> frac;
  for (int s = 0; s < S; ++s) {
    (*split)[s] = static_cast<int>(std::floor(x[s] + 1e-9));
    total += (*split)[s];
    frac.emplace_back(-(x[s] - std::floor(x[s] + 1e-9)), s);
  }
  std::sort(frac.begin(), frac.end());
  for (int i = 0; total < D && i < S; ++i, ++total) ++(*split)[frac[i].second];
  if (total != D) return false;
  if (totals.first_pinned) ++(*split)[0];
  if (totals.last_pinned) ++(*split)[S - 1];
  return true;
}

void OpenTreeBound::TryRounded(const std::vector<double>& x) {
  if (split_floor == nullptr || !generate || x.size() != static_cast<size_t>(S)) return;
  std::vector<int> split;
  if (NearestSplit(x, &split)) FloorOf(split);
}

Nanos OpenTreeBound::Run() {
  if (!Ranges()) return 0;
  Setup();
  // Branch-and-bound over boxes, least bound first: a box whose relaxation
  // has a fractional minimizer splits on its most fractional stage count
  // (x_st <= floor, x_st >= ceil); one with an integral minimizer is cut
  // into that split and the rest (below), or else settled (no allocation
  // in it does better than that relaxation). The bound is the least over
  // settled and open boxes and bounded splits.
  Box root{must, std::vector<int>(S, D)};
  for (int st = 0; st < S; ++st) root.ub[st] = std::min(D, hi[cp.c.spec.stage_device[st].value]);
  Solved at_root = SolveBox(root);
  if (!std::isfinite(at_root.bound)) return 0;  // cannot happen below a real incumbent
  using Open = std::pair<double, int>;  // (bound, index into boxes)
  std::vector<std::pair<Box, Solved>> boxes;
  std::priority_queue<Open, std::vector<Open>, std::greater<Open>> open;
  boxes.emplace_back(std::move(root), std::move(at_root));
  open.emplace(boxes.back().second.bound, 0);
  // The least over boxes settled at their relaxation; over whole splits
  // bounded by their own value, attained (SplitValue) or not.
  double settled = std::numeric_limits<double>::infinity();
  double attained = settled, floored = settled;
  // A child of a box bound at `parent`: solved, bound at least at `parent`
  // (it lies in that box), and opened unless it is empty.
  auto push = [&](Box child, double parent) {
    Solved s = SolveBox(child);
    s.bound = std::max(s.bound, parent);
    if (!std::isfinite(s.bound)) return;
    boxes.emplace_back(std::move(child), std::move(s));
    open.emplace(boxes.back().second.bound, static_cast<int>(boxes.size()) - 1);
  };
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
    // A fractional minimizer: its rounding may be a better strategy.
    if (split >= 0) TryRounded(x);
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
        push(std::move(child), b);
      }
      continue;
    }
    if (split < 0) {
      // An integral minimizer that is a split: bound that split by its own
      // value (PointBound) and branch on the rest of the box (each stage in
      // turn below or above x, the stages before it fixed at x); otherwise
      // the box is settled at its relaxation.
      const Point point = x.empty() ? Point{} : PointBound(x);
      if (point.value < 0) {
        settled = std::min(settled, b);  // integral (or no minimizer known)
        continue;
      }
      // The split's own value is exact (no rounding slack).
      const double value = std::max(point.value, b - slack);
      double& least = point.attained ? attained : floored;
      least = std::min(least, value);
      Box fixed = boxes[i].first;  // a copy: boxes grows below
      std::vector<int> loose;
      for (int st = 0; st < S; ++st) {
        if (fixed.lb[st] < fixed.ub[st]) loose.push_back(st);
      }
      // The counts add up to D: the last loose stage is fixed by the others.
      if (!loose.empty()) loose.pop_back();
      for (int st : loose) {
        const int xr = static_cast<int>(std::llround(x[st]));
        for (int side = 0; side < 2; ++side) {
          Box child = fixed;
          if (side == 0) {
            if (xr <= fixed.lb[st]) continue;
            child.ub[st] = xr - 1;
          } else {
            if (xr >= fixed.ub[st]) continue;
            child.lb[st] = xr + 1;
          }
          push(std::move(child), b);
        }
        fixed.lb[st] = fixed.ub[st] = xr;
      }
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      Box child = boxes[i].first;
      if (side == 0) {
        child.ub[split] = static_cast<int>(std::floor(x[split]));
      } else {
        child.lb[split] = static_cast<int>(std::ceil(x[split]));
      }
      push(std::move(child), b);
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
  // Nothing open below the target: no strategy in range beats or ties
  // `best`. Per-op rounding to whole ns can shave a little off the
  // relaxations' values; stay safely below.
  bound = std::min(bound, target) - slack;
  bound = std::min(bound, floored);
  if (unattained != nullptr) {
    *unattained = std::max<Nanos>(0, static_cast<Nanos>(std::floor(bound)));
  }
  return std::max<Nanos>(0, static_cast<Nanos>(std::floor(std::min(bound, attained))));
}

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
                      Clock::time_point start, Nanos best,
                      const SplitFloor* split_floor, Nanos* unattained) {
  if (unattained != nullptr) *unattained = 0;
  const int D = totals.decoders;
  if (D <= 0 || totals.load.empty() || best >= kInf || PastDeadline(cp.opt)) return 0;
  return OpenTreeBound(cp, totals, path_pool, engine, start, best, split_floor, unattained).Run();
}

}  // namespace ppb::search_detail
