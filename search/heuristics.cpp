// Incumbent heuristics: splits to start from, local search, and a split
// that fits memory at all.
//
// Contract: a heuristic only proposes splits; every split it offers is
// simulated (recompute chosen by ChooseRecompute), so an incumbent is
// always a real, memory-feasible strategy. Local search moves keep the
// minimum layers per chunk; a move whose split does not fit any recompute
// is skipped. Moves are evaluated in fixed batches taken in order, so the
// result does not depend on the thread count. AnyFeasibleSplit is exact
// (memory pruning only) up to its budget; running out counts as no split.
// Under search.target it finds only a split the framework can run
// (ChoiceRefusal, SplitRefusal) with the recompute of the search's setting.
#include <algorithm>
#include <functional>
#include <map>
#include <random>

#include "core/cost.h"
#include "search/incumbent.h"
#include "search/searcher.h"

namespace ppb::search_detail {

// A split that realizes the root relaxation's per-device decoder counts:
// each device's decoders spread evenly over its chunks, the other layers
// kept with the stage that is open when the walk through the model meets
// them (so a leading embedding lands on stage 0, a trailing head on the
// last stage). Empty when it cannot give every chunk its minimum.
std::vector<int> RelaxedSplit(const ChoiceProblem& cp, const std::vector<int>& per_device,
                              int rep) {
  const int S = cp.c.S, p = cp.c.p, v = cp.c.v;
  std::vector<int> quota(S, 0);
  for (int d = 0; d < p; ++d) {
    for (int c = 0; c < v; ++c) {
      quota[StageOf(cp.c.spec.placement, p, c, d)] = per_device[d] / v + (c < per_device[d] % v ? 1 : 0);
    }
  }
  return SplitFromQuota(cp, quota, rep);
}

// The split whose stage s holds quota[s] decoders (layers like `rep`), the
// other layers staying with the stage that is open when the walk through
// the model meets them. Empty when a stage would get too few layers.
std::vector<int> SplitFromQuota(const ChoiceProblem& cp, const std::vector<int>& quota,
                                int rep) {
  const int S = cp.c.S, L = cp.c.L;
  const int kmin = cp.pb.allow_empty_chunks ? 0 : 1;
  const Layer& dec = cp.pb.layers[rep];
  auto is_dec = [&](int l) { return SameLayer(cp.pb.layers[l], dec); };
  std::vector<int> split(S, 0);
  int l = 0;
  for (int s = 0; s < S; ++s) {
    int got = 0;
    while (l < L && (s == S - 1 || got < quota[s] || !is_dec(l))) {
      if (is_dec(l)) {
        if (got == quota[s] && s < S - 1) break;
        ++got;
      }
      ++split[s];
      ++l;
      if (s < S - 1 && got == quota[s] && l < L && is_dec(l)) break;
    }
  }
  for (int x : split) {
    if (x < kmin) return {};
  }
  return l == L ? split : std::vector<int>{};
}

// Like RelaxedSplit, but each rank's decoders are spread over its chunks to
// need the least recompute: chunks differ in how many micro-batches they
// hold in flight (the last stage holds one), so a rank can keep more layers
// un-recomputed in its lightly loaded chunks. Every composition of the
// rank's count over its chunks is tried on the rank's exact memory model.
std::vector<int> ChunkAwareSplit(const ChoiceProblem& cp, const std::vector<int>& per_device,
                                 int rep) {
  const int S = cp.c.S, L = cp.c.L, p = cp.c.p, v = cp.c.v;
  const int kmin = cp.pb.allow_empty_chunks ? 0 : 1;
  const Layer& dec = cp.pb.layers[rep];
  const bool first_pinned = !SameLayer(cp.pb.layers[0], dec);
  const bool last_pinned = L > 1 && !SameLayer(cp.pb.layers[L - 1], dec);
  // Synthetic layer lists: x decoders, with the pinned layer where it sits.
  std::map<std::pair<int, int>, std::pair<std::vector<Layer>, Menu>> cache;
  auto chunk = [&](int x, int pin) -> const std::pair<std::vector<Layer>, Menu>& {
    auto key = std::make_pair(x, pin);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    std::vector<Layer> ls;
    if (pin == 1) ls.push_back(cp.pb.layers[0]);
    for (int i = 0; i < x; ++i) ls.push_back(dec);
    if (pin == 2) ls.push_back(cp.pb.layers[L - 1]);
    Menu menu = BuildMenu(ls, 0, static_cast<int>(ls.size()), nullptr, cp.opt.deadline);
    return cache.emplace(key, std::make_pair(std::move(ls), std::move(menu))).first->second;
  };
  std::vector<int> quota(S, 0);
  for (int d = 0; d < p; ++d) {
    const int k = per_device[d];
    std::vector<int> pin(v, 0);
    if (d == 0 && first_pinned) pin[0] = 1;
    if (d == p - 1 && last_pinned) pin[v - 1] = 2;
    const Bytes cap = cp.c.spec.device_capacity[d];
    std::vector<int> x(v, 0), best_x;
    Nanos best_t = kInf;
    Bytes best_peak = 0;
    std::int64_t budget = 20000;
    std::function<void(int, int)> compose = [&](int c, int left) {
      if (--budget < 0) return;
      if (c == v - 1) {
        x[c] = left;
        if (pin[c] == 0 && left < kmin) return;
        std::vector<StageFixed> fx(v);
        std::vector<const Menu*> menus(v);
        std::vector<const StageFixed*> fxp(v);
        for (int cc = 0; cc < v; ++cc) {
          const auto& [ls, menu] = chunk(x[cc], pin[cc]);
          menus[cc] = &menu;
          for (const Layer& l : ls) {
            fx[cc].static_mem += l.static_memory;
            fx[cc].workspace = std::max(fx[cc].workspace, l.workspace);
          }
          fxp[cc] = &fx[cc];
        }
        // Least total recompute that fits.
        Nanos t_best = kInf;
        Bytes peak_best = 0;
        WalkFits(cp, d, menus, fxp, cap, budget, [&] { return t_best; },
                 [&](const std::vector<const MenuPoint*>&, Nanos t, Bytes peak) {
                   if (t < t_best || (t == t_best && peak < peak_best)) {
                     t_best = t;
                     peak_best = peak;
                   }
                 });
        if (t_best < best_t || (t_best == best_t && t_best < kInf && peak_best < best_peak)) {
          best_t = t_best;
          best_peak = peak_best;
          best_x = x;
        }
        return;
      }
      for (int n = (pin[c] ? 0 : kmin); n <= left; ++n) {
        x[c] = n;
        compose(c + 1, left - n);
      }
    };
    compose(0, k);
    if (best_x.empty()) return {};
    for (int c = 0; c < v; ++c) quota[StageOf(cp.c.spec.placement, p, c, d)] = best_x[c];
  }
  return SplitFromQuota(cp, quota, rep);
}

std::vector<int> EvenSplit(const ChoiceProblem& cp) {
  return EvenStrategy(cp.pb.layers, cp.c.p, cp.c.v).layers_per_stage;
}

// Contiguous split minimizing the largest per-device share of work (speed
// aware) by bisection on the bottleneck; a good incumbent for the B&B.
std::vector<int> BalancedSplit(const ChoiceProblem& cp) {
  const int S = cp.c.S, L = cp.c.L;
  const int kmin = cp.pb.allow_empty_chunks ? 0 : 1;
  auto work = [&](int s, int i, int j) {
    const double sp = cp.pb.cluster.devices[cp.c.spec.stage_device[s].value].speed;
    return ScaleTime(cp.pf[j] - cp.pf[i] + cp.pbi[j] - cp.pbi[i] + cp.pbw[j] - cp.pbw[i], sp);
  };
  auto try_cap = [&](Nanos cap, std::vector<int>& out) {
    out.assign(S, 0);
    int pos = 0;
    for (int s = 0; s < S; ++s) {
      const int rest = S - s - 1;
      int k = kmin;
      const int kmax = L - pos - rest * kmin;
      if (s == S - 1) {
        k = L - pos;
        if (work(s, pos, pos + k) > cap) return false;
      } else {
        while (k + 1 <= kmax && work(s, pos, pos + k + 1) <= cap) ++k;
        if (k > kmax) return false;
      }
      out[s] = k;
      pos += k;
    }
    return pos == L;
  };
  // Every layer on the slowest device is a cap every split meets.
  Nanos lo = 0, hi = 1;
  for (int s = 0; s < S; ++s) hi = std::max(hi, work(s, 0, L) + 1);
  std::vector<int> best = EvenSplit(cp), tmp;
  while (lo < hi) {
    const Nanos mid = lo + (hi - lo) / 2;
    if (try_cap(mid, tmp)) {
      hi = mid;
      best = tmp;
    } else {
      lo = mid + 1;
    }
  }
  return best;
}

void Searcher::LocalSearch(std::vector<int> split, std::mt19937_64& rng,
                           int restarts) {
  const int S = cp_.c.S;
  const int kmin = cp_.pb.allow_empty_chunks ? 0 : 1;
  auto eval = [&](const std::vector<int>& sp, Candidate& out) {
    bool exact = true;
    if (!EvaluateSplit(sp, &out, exact)) return false;
    Offer(out);
    return out.feasible;
  };
  // First-improvement descent. Neighbours: move one layer from a chunk of
  // one of the two busiest devices to any other chunk (the layers between
  // shift by one position), least busy devices first; then move one layer
  // across a single boundary.
  // With a deadline, a batch takes no more simulations than fit before it
  // at the longest one seen (on one thread); the search stops when not even
  // one does. (The first evaluation of a start always runs: an answer.)
  const bool timed = cp_.opt.deadline != Clock::time_point::max();
  Clock::duration per_sim{0};
  auto climb = [&](std::vector<int> cur) {
    if (interrupted) return;  // a simulation no longer fits before the deadline
    Candidate best;
    const auto t_first = Clock::now();
    if (!eval(cur, best)) best.feasible = false;
    per_sim = std::max(per_sim, Clock::now() - t_first);
    bool improved = true;
    int rounds = 0;
    while (improved && rounds++ < 400 && !limits.hit) {
      improved = false;
      std::vector<std::pair<int, int>> moves;  // (from stage, to stage)
      if (best.feasible) {
        std::vector<int> order(cp_.c.p);
        for (int d = 0; d < cp_.c.p; ++d) order[d] = d;
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
          return best.devices[a].busy > best.devices[b].busy;
        });
        for (int di = 0; di < std::min(2, cp_.c.p); ++di) {
          for (int c = 0; c < cp_.c.v; ++c) {
            const int from = StageOf(cp_.c.spec.placement, cp_.c.p, c, order[di]);
            for (int ti = cp_.c.p - 1; ti >= 0; --ti) {
              for (int c2 = 0; c2 < cp_.c.v; ++c2) {
                const int to = StageOf(cp_.c.spec.placement, cp_.c.p, c2, order[ti]);
                if (to != from) moves.emplace_back(from, to);
              }
            }
          }
        }
      }
      for (int s = 0; s + 1 < S; ++s) {
        moves.emplace_back(s, s + 1);
        moves.emplace_back(s + 1, s);
      }
      // Neighbours go in fixed batches: built (recompute chosen, spec
      // filled) in order, simulated on several threads, then taken in
      // order; the first improvement wins. Batches do not depend on the
      // thread count, so neither do the answer and the node count.
      constexpr size_t kBatch = 16;
      size_t i = 0;
      bool stop = false;
      while (i < moves.size() && !improved && !stop) {
        std::vector<BatchSlot> batch;
        for (; i < moves.size() && batch.size() < kBatch; ++i) {
          const auto [from, to] = moves[i];
          std::vector<int> nb = cur;
          nb[from] -= 1;
          nb[to] += 1;
          if (nb[from] < kmin) continue;
          if (CheckLimits()) {
            stop = true;
            break;
          }
          if (timed && Clock::now() + static_cast<int>(batch.size() + 1) * per_sim >
                           cp_.opt.deadline) {
            if (batch.empty()) {  // not even one more fits
              limits.hit = true;
              limits.stop_reason = "time limit";
              stop = true;
            }
            break;
          }
          ++nodes;
          bool exact = true;
          if (!ChooseRecompute(nb, exact)) continue;
          BatchSlot slot;
          slot.split = std::move(nb);
          BuildChosen(slot.split, slot.spec, slot.strategy, slot.recomputed);
          batch.push_back(std::move(slot));
        }
        const auto t_batch = Clock::now();
        RunBatch(batch);
        if (!batch.empty()) {
          per_sim = std::max(per_sim, (Clock::now() - t_batch) / static_cast<int>(batch.size()));
        }
        for (BatchSlot& slot : batch) {
          Candidate c;
          ToCandidate(std::move(slot.strategy), slot.recomputed, slot.sim, &c);
          const bool feasible = c.feasible;
          const bool better = feasible && (!best.feasible || Better(c, best));
          Offer(c);
          if (better) {
            best = std::move(c);
            cur = slot.split;
            improved = true;
            break;
          }
        }
      }
      if (stop) return;
    }
    // Where the recompute of the split found lands decides its time too
    // (v > 1): every Pareto-minimal choice when they are few, else a descent.
    if (best.feasible && !limits.hit) ImproveChoice(cur);
  };
  climb(split);
  for (int r = 0; r < restarts && !limits.hit; ++r) {
    std::vector<int> cur =
        top_list.top.empty() ? split : top_list.top.front().strategy.layers_per_stage;
    // Perturb: move a few random layers across random boundaries.
    std::uniform_int_distribution<int> pick(0, std::max(0, S - 2));
    for (int moves = 0; moves < 1 + r % 4 && S > 1; ++moves) {
      const int s = pick(rng);
      const int dir = (rng() & 1) ? 1 : -1;
      if (cur[s] - dir >= kmin && cur[s + 1] + dir >= kmin) {
        cur[s] -= dir;
        cur[s + 1] += dir;
      }
    }
    climb(cur);
  }
}

bool Searcher::AnyFeasibleSplit(std::vector<int>* out) {
  const int S = cp_.c.S, L = cp_.c.L, p = cp_.c.p;
  const int kmin = cp_.pb.allow_empty_chunks ? 0 : 1;
  split_.assign(S, 0);
  first_layer_.assign(S, 0);
  fixed_.assign(S, StageFixed{});
  if (L < S * kmin) return false;
  // search.target: only a split the framework can run (and, through the
  // menus, the recompute its setting gives).
  const DeployTarget target = cp_.opt.target;
  const bool v_placement = cp_.c.spec.placement == StagePlacement::V;
  if (target != DeployTarget::Any &&
      !ChoiceRefusal(target, cp_.pb.layers, cp_.c.v, v_placement, p, cp_.c.m,
                     EffectiveGroup(cp_.c.choice, p, cp_.c.m))
           .empty()) {
    return false;
  }
  // A budget keeps a hopeless instance from running forever; running out
  // counts as "does not fit", so a reported minimum capacity errs high.
  std::int64_t budget = 2'000'000;
  deadline_cut = false;
  std::function<bool(int, int)> rec = [&](int s, int pos) {
    if (--budget < 0) return false;
    // Every node: one may build a menu of thousands of layers.
    if (PastDeadline(cp_.opt)) {
      deadline_cut = true;
      budget = -1;  // unwinds: nothing more is tried
      return false;
    }
    if (s == S) {
      return pos == L && (target == DeployTarget::Any ||
                          SplitRefusal(target, cp_.pb.layers, split_, p, cp_.c.v, v_placement)
                              .empty());
    }
    const int d = cp_.c.spec.stage_device[s].value;
    const int khi = s == S - 1 ? L - pos : L - pos - (S - s - 1) * kmin;
    const int klo = s == S - 1 ? L - pos : kmin;
    const Bytes prev = s > 0 ? fixed_[s - 1].output : 0;
    for (int k = klo; k <= khi; ++k) {
      split_[s] = k;
      first_layer_[s] = pos;
      fixed_[s] = cp_.Fixed(s, pos, pos + k, prev);
      if (rc_.DevicePeakLowerBound(d, s + 1, split_, first_layer_, fixed_) >
          cp_.c.spec.device_capacity[d]) {
        break;
      }
      if (s / p == cp_.c.v - 1) {
        std::vector<const MenuPoint*> pts;
        bool ex = true;
        if (rc_.DeviceRecompute(d, first_layer_, split_, fixed_, pts, ex) < 0) continue;
      }
      if (rec(s + 1, pos + k)) return true;
    }
    return false;
  };
  if (!rec(0, 0)) return false;
  *out = split_;
  return true;
}

}  // namespace ppb::search_detail
