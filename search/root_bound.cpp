// The root relaxation over the largest group of identical layers.
//
// Contract: RootBound's value is a lower bound on the makespan of every
// split of this choice on this cluster (with any recompute the search's
// setting allows: under a framework target, SettingFront); its tables
// (out.totals: load[d][k], rt[d][k]) bound every strategy in which rank d
// holds k decoders, and out.forced_recompute is the least total recompute per
// micro-batch that memory forces on any allocation. The allocation it
// returns (per device) is a heuristic start, not part of the bound.
#include <algorithm>
#include <cmath>
#include <optional>

#include "core/cost.h"
#include "search/searcher.h"

namespace ppb::search_detail {

namespace {

// N_d per device: the least possible weight of the device's stash at its
// peak moment when the stash is split over its chunks in the most
// favourable way (see RootBound).
// Past the search's deadline the weights found so far are kept (each is
// valid).
std::vector<double> StashWeights(const ChoiceContext& ctx, const SearchOptions& opt) {
  const int p = ctx.p;
  std::vector<double> weight(p, 0.0);
  for (int d = 0; d < p; ++d) {
    const auto& mos = ctx.profile->moments[d];
    double best = 0;
    if (ctx.v == 1) {
      for (const auto& mo : mos) best = std::max(best, static_cast<double>(mo.counts[0]));
    } else if (ctx.v == 2) {
      // min over t in [0,1] of max over moments of n0 t + n1 (1 - t): a
      // convex piecewise-linear function; its minimum is at t = 0, t = 1
      // or a crossing of two lines.
      std::vector<double> ts{0.0, 1.0};
      for (size_t i = 0; i < mos.size(); ++i) {
        for (size_t j = i + 1; j < mos.size(); ++j) {
          const double a1 = mos[i].counts[0] - mos[i].counts[1];
          const double a2 = mos[j].counts[0] - mos[j].counts[1];
          if (a1 != a2) {
            const double t = (mos[j].counts[1] - mos[i].counts[1]) / (a1 - a2);
            if (t > 0 && t < 1) ts.push_back(t);
          }
        }
      }
      best = std::numeric_limits<double>::infinity();
      for (double t : ts) {
        double mx = 0;
        for (const auto& mo : mos) mx = std::max(mx, mo.counts[0] * t + mo.counts[1] * (1 - t));
        best = std::min(best, mx);
      }
    } else {
      // For any distribution q over the moments, min over splits s of
      // max over moments of counts . s >= min over chunks c of the
      // q-average of counts[c] (minimax). Each q gives a valid weight;
      // multiplicative weights look for a good one (the split side answers
      // with its best chunk).
      for (const auto& mo : mos) {
        int mn = std::numeric_limits<int>::max();
        for (int c : mo.counts) mn = std::min(mn, c);
        best = std::max(best, static_cast<double>(mn));
      }
      const size_t nm = mos.size();
      if (nm > 0) {
        double most = 1;
        for (const auto& mo : mos) {
          for (int c : mo.counts) most = std::max(most, static_cast<double>(c));
        }
        std::vector<double> q(nm, 1.0);
        const int rounds = 500;
        const double eta = std::sqrt(std::log(static_cast<double>(nm) + 1) / rounds);
        std::vector<double> avg_sum(ctx.v, 0.0);
        for (int it = 0; it < rounds && !PastDeadline(opt); ++it) {
          double z = 0;
          for (double x : q) z += x;
          std::vector<double> avg(ctx.v, 0.0);
          for (size_t i = 0; i < nm; ++i) {
            for (int c = 0; c < ctx.v; ++c) avg[c] += q[i] / z * mos[i].counts[c];
          }
          best = std::max(best, *std::min_element(avg.begin(), avg.end()));
          const int cstar = static_cast<int>(std::min_element(avg.begin(), avg.end()) - avg.begin());
          double mx = 0;
          for (size_t i = 0; i < nm; ++i) {
            q[i] *= std::exp(eta * mos[i].counts[cstar] / most);
            mx = std::max(mx, q[i]);
          }
          for (double& x : q) x /= mx;
        }
      }
    }
    weight[d] = best;
  }
  return weight;
}

// The recompute front of k copies of `dec` (layer `rep`) under the search's
// framework setting (search.target), a superset of the (stash, time) pairs
// a rank holding k of them can take there: every copy in the one mode an
// Every setting gives it; under Megatron's block n, f copies full and the
// rest none, with f at most min(k, v n) (n per chunk) and, when every body
// layer is a copy of `dec`, at least min(n, k) (sum_c min(n, k_c) >=
// min(n, sum_c k_c)). Without a restricting setting: StackRecomputeFront.
std::vector<std::pair<Bytes, Nanos>> SettingFront(const ChoiceProblem& cp, int rep,
                                                  const Layer& dec, int k) {
  const std::optional<RecomputeSetting>& s = cp.opt.setting;
  using K = RecomputeSetting::Kind;
  if (!s || s->kind == K::Free || s->kind == K::Lists) return StackRecomputeFront(dec, k);
  auto stash = [&](std::size_t o) {
    return o == 0 ? dec.activation : dec.recompute[o - 1].retained_activation;
  };
  auto time = [&](std::size_t o) { return o == 0 ? Nanos{0} : dec.recompute[o - 1].extra_time; };
  const Bytes kb = static_cast<Bytes>(k);
  if (s->kind == K::Every) {
    const std::size_t o = AllowedModes(*s, cp.pb.layers, rep, rep + 1, rep).front();
    return {{kb * stash(o), static_cast<Nanos>(k) * time(o)}};
  }
  auto body = [](LayerKind x) {
    return x == LayerKind::Decoder || x == LayerKind::Moe || x == LayerKind::Other;
  };
  std::size_t full = 0;
  for (std::size_t x = 1; x <= dec.recompute.size(); ++x) {
    if (dec.recompute[x - 1].name == "full") full = x;
  }
  if (!body(dec.kind) || full == 0) return {{kb * dec.activation, 0}};
  bool only_copies = true;
  for (const Layer& l : cp.pb.layers) only_copies = only_copies && (!body(l.kind) || SameLayer(l, dec));
  const int hi = std::min(k, cp.c.v * s->n);
  const int lo = only_copies ? std::min(s->n, k) : 0;
  std::vector<std::pair<Bytes, Nanos>> v;
  for (int f = lo; f <= hi; ++f) {
    v.emplace_back(static_cast<Bytes>(f) * stash(full) + static_cast<Bytes>(k - f) * dec.activation,
                   static_cast<Nanos>(f) * time(full));
  }
  std::sort(v.begin(), v.end());
  std::vector<std::pair<Bytes, Nanos>> front;
  for (const auto& x : v) {
    if (front.empty() || x.second < front.back().second) front.push_back(x);
  }
  return front;
}
}  // namespace

// Least total recompute (per micro-batch, speed 1.0) that memory forces on
// any allocation of D decoders, given each rank's least recompute rt[d][k]
// with k decoders (kInf: k cannot fit): a knapsack over the ranks, O(p D^2);
// 0 when no allocation fits. Past the search's deadline (looked at every 64
// rows of the knapsack) it is 0 too: no recompute forced, a valid and weaker
// bound (20,000 decoders on 8 ranks took seconds here).
Nanos ForcedRecompute(const std::vector<std::vector<Nanos>>& rt_table, int D,
                      const SearchOptions& opt) {
  const int p = static_cast<int>(rt_table.size());
  std::vector<Nanos> best(D + 1, kInf), next(D + 1);
  best[0] = 0;
  for (int d = 0; d < p; ++d) {
    const std::vector<Nanos>& rt = rt_table[d];
    std::fill(next.begin(), next.end(), kInf);
    for (int j = 0; j <= D; ++j) {
      if (j % 64 == 0 && PastDeadline(opt)) return 0;
      if (best[j] >= kInf) continue;
      for (int k = 0; j + k <= D; ++k) {
        if (rt[k] < kInf) next[j + k] = std::min(next[j + k], best[j] + rt[k]);
      }
    }
    best.swap(next);
  }
  return best[D] < kInf ? best[D] : 0;
}

namespace {

// The least level lambda at which every rank can take a feasible number of
// decoders within lambda (load[d][k] <= lambda, from its least feasible
// count kmin_dev[d] on; load is monotone in k) and together they can take
// all D; -1 when no level works.
Nanos LeastLevel(const std::vector<std::vector<Nanos>>& load, const std::vector<int>& kmin_dev,
                 int D) {
  const int p = static_cast<int>(load.size());
  auto absorbs = [&](Nanos lambda) {
    long long lo_sum = 0, hi_sum = 0;
    for (int d = 0; d < p; ++d) {
      if (kmin_dev[d] < 0 || load[d][kmin_dev[d]] > lambda) return false;
      int k = kmin_dev[d];
      while (k < D && load[d][k + 1] <= lambda) ++k;  // load is monotone in k
      lo_sum += kmin_dev[d];
      hi_sum += k;
    }
    return lo_sum <= D && D <= hi_sum;
  };
  Nanos lo = 0, hi = 1;
  while (!absorbs(hi)) {
    if (hi > kInf / 4) return -1;  // decoders cannot fit at all: no bound
    hi *= 2;
  }
  while (lo < hi) {
    const Nanos mid = lo + (hi - lo) / 2;
    if (absorbs(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

// The relaxation's allocation at lambda (lo): as many decoders as each
// device absorbs, trimmed to D from the most loaded devices.
void RelaxedAllocation(const std::vector<std::vector<Nanos>>& load,
                       const std::vector<int>& kmin_dev, int D, Nanos lo,
                       std::vector<int>* per_device) {
  const int p = static_cast<int>(load.size());
  per_device->assign(p, 0);
  int total = 0;
  for (int d = 0; d < p; ++d) {
    int k = std::max(0, kmin_dev[d]);
    while (k < D && load[d][k + 1] <= lo) ++k;
    (*per_device)[d] = k;
    total += k;
  }
  while (total > D) {
    int worst = -1;
    Nanos worst_load = -1;
    for (int d = 0; d < p; ++d) {
      if ((*per_device)[d] <= std::max(0, kmin_dev[d])) continue;
      const Nanos l = load[d][(*per_device)[d]];
      if (l > worst_load) {
        worst_load = l;
        worst = d;
      }
    }
    if (worst < 0) break;  // every device at its least: nothing to trim
    --(*per_device)[worst];
    --total;
  }
}

// R_d(k), the least recompute time (per micro-batch, speed 1.0) with which
// device d holding k decoders fits its memory, or kInf (see RootBound): the
// peak floor below against the device's capacity, over the recompute front
// of k decoders. Rows come from `rt_cache` when it has them.
std::vector<std::vector<Nanos>> RecomputeTable(const ChoiceProblem& cp, const Layer& dec, int D,
                                               int kmin, const std::vector<Bytes>& pinned_static,
                                               const std::vector<Bytes>& pinned_stash,
                                               const Fronts& pts, RecomputeRows* rt_cache) {
  const int L = cp.c.L, p = cp.c.p;
  const int others = L - D;
  auto same = [](const Layer& a, const Layer& b) { return SameLayer(a, b); };
  // N_d per device.
  const std::vector<double> weight = StashWeights(cp.c, cp.opt);

  // A sharper floor on a rank's peak with k decoders of total stash st:
  // every chunk holds at least one layer, so all but the chunks that may
  // hold only non-decoder layers carry at least one decoder's least stash
  // (st1); the rest of the stash may sit in the chunk with the fewest
  // micro-batches in flight. Per program moment that is a valid floor, and
  // the peak is at least the largest of them. A pinned first (last) layer
  // sits in chunk 0 of rank 0 (chunk v-1 of rank p-1).
  Bytes st1 = dec.activation;
  for (const auto& o : dec.recompute) st1 = std::min(st1, o.retained_activation);
  // Chunks that may hold no decoder: the chunk of a pinned first (last)
  // layer on rank 0 (p-1), and, anywhere, as many chunks as there are other
  // non-decoder layers (the adversary's choice: those with most in flight).
  std::vector<std::vector<int>> pinned_chunks(p);
  int pinned_total = 0;
  const bool first_pinned = !same(cp.pb.layers[0], dec);
  const bool last_pinned = L > 1 && !same(cp.pb.layers[L - 1], dec);
  if (first_pinned) {
    ++pinned_total;
    pinned_chunks[0].push_back(0);
  }
  if (last_pinned) {
    ++pinned_total;
    pinned_chunks[p - 1].push_back(cp.c.v - 1);
  }
  const int free_others = std::max(0, others - pinned_total);
  // Per program moment of each rank, the parts of the floor that do not
  // depend on k or the stash (computed once: the pinned layers' stash, the
  // chunks that must carry a decoder).
  // The moment's op adds its stage's workspace and, for an F, its own stash
  // (one more of its chunk); a backward op (B, I or W) of a chunk that needs
  // a decoder adds what its recompute re-materializes: with A a decoder's
  // activation and s the chunk's decoder stash per micro-batch, >= A - s
  // (the engine's transient is the largest activation - retained over the
  // stage's recomputed layers, and with none recomputed s >= A). With n >= 1
  // of the chunk in flight, n s + max(0, A - s) is nondecreasing in s, so
  // the adversary's split of the stash below stays a floor once it may put
  // more of it in that chunk.
  struct MomentFloor {
    long double base = 0;  // the pinned first / last layers' least stash
    long double fl = 0;    // in-flight counts of the chunks that need a decoder
    int nfloor = 0;        // how many such chunks
    int mn = 0;            // the least in-flight count over the chunks
    long double ws = 0;    // the op's least stage workspace
    int remat_n = 0;       // > 0: a backward op's chunk needs a decoder, with
                           // remat_n of its micro-batches in flight
  };
  std::vector<std::vector<MomentFloor>> floors(p);
  std::vector<int> most_nfloor(p, 0);
  auto build_floors = [&](int d) {  // once per rank whose row is computed
    const int v = cp.c.v;
    for (const auto& mo : cp.c.profile->moments[d]) {
      std::vector<int> cnt = mo.counts;
      if (mo.forward) ++cnt[mo.chunk];
      MomentFloor f;
      long double x = 0;
      if (d == 0 && first_pinned) {
        const Layer& x1 = cp.pb.layers[0];
        Bytes least = x1.activation;
        for (const auto& o : x1.recompute) least = std::min(least, o.retained_activation);
        x += static_cast<long double>(cnt[0]) * least;
      }
      if (d == p - 1 && last_pinned) {
        // The last layer's own stash, when rank p-1 is not rank 0's twin.
        const Layer& x2 = cp.pb.layers[L - 1];
        Bytes least = x2.activation;
        for (const auto& o : x2.recompute) least = std::min(least, o.retained_activation);
        x += static_cast<long double>(cnt[v - 1]) * least;
      }
      f.base = x;
      // Chunks that must carry a decoder: all but the pinned chunk and the
      // free_others chunks with the largest counts.
      const auto& pc = pinned_chunks[d];
      const bool op_pinned = std::find(pc.begin(), pc.end(), mo.chunk) != pc.end();
      std::vector<int> must;
      for (int c = 0; c < v; ++c) {
        if (std::find(pc.begin(), pc.end(), c) == pc.end()) must.push_back(cnt[c]);
      }
      std::sort(must.begin(), must.end());
      const int drop = std::min<int>(free_others, static_cast<int>(must.size()));
      must.resize(must.size() - drop);
      f.nfloor = kmin > 0 ? static_cast<int>(must.size()) : 0;
      for (int c = 0; c < f.nfloor; ++c) f.fl += must[c];
      f.mn = *std::min_element(cnt.begin(), cnt.end());
      // The op's chunk surely holds a decoder only when no chunk may go
      // without one (every other layer pinned) and it is not a pinned one.
      const bool op_decoder = f.nfloor > 0 && drop == 0 && !op_pinned;
      Bytes ws = op_decoder ? dec.workspace : 0;
      if (kmin > 0 && op_pinned && d == 0 && first_pinned && mo.chunk == 0) {
        ws = std::max(ws, cp.pb.layers[0].workspace);
      }
      if (kmin > 0 && op_pinned && d == p - 1 && last_pinned && mo.chunk == v - 1) {
        ws = std::max(ws, cp.pb.layers[L - 1].workspace);
      }
      f.ws = static_cast<long double>(ws);
      if (!mo.forward && op_decoder && cnt[mo.chunk] >= 1) f.remat_n = cnt[mo.chunk];
      most_nfloor[d] = std::max(most_nfloor[d], f.nfloor);
      floors[d].push_back(f);
    }
  };
  auto peak_floor = [&](int d, int k, Bytes st) -> long double {
    // Fewer decoders than the chunks that need one: no such allocation.
    if (k < most_nfloor[d]) return std::numeric_limits<long double>::infinity();
    const long double stat = static_cast<long double>(k) * dec.static_memory + pinned_static[d];
    long double worst = 0;
    const long double act = static_cast<long double>(dec.activation);
    for (const MomentFloor& f : floors[d]) {
      const long double extra = st - static_cast<long double>(f.nfloor) * st1;
      long double x = f.base + f.ws + (f.fl * st1 + static_cast<long double>(f.mn) * extra);
      if (f.remat_n > 0) {
        // The op's chunk holds st1 + delta of the extra: the stash costs
        // (remat_n - mn) delta more and re-materializes max(0, A - st1 - delta);
        // linear up to A - st1, so the least is at an end.
        const long double a = std::max(0.0L, act - static_cast<long double>(st1));
        const long double d1 = std::min(std::max(0.0L, extra), a);
        x += std::min(a, static_cast<long double>(f.remat_n - f.mn) * d1 + (a - d1));
      }
      worst = std::max(worst, x);
    }
    // The plain weight floor (stash anywhere) is valid too.
    worst = std::max(worst, static_cast<long double>(weight[d]) * (st + pinned_stash[d]));
    return stat + worst;
  };
  // Least recompute time of device d holding k decoders, or kInf.
  auto least_rt = [&](int d, int k) -> Nanos {
    const Bytes cap = cp.c.spec.device_capacity[d];
    Nanos rt = kInf;
    for (const auto& [st, t] : pts[k]) {
      if (peak_floor(d, k, st) <= static_cast<long double>(cap)) rt = std::min(rt, t);
    }
    return rt;
  };
  std::vector<std::vector<Nanos>> rt_table(p, std::vector<Nanos>(D + 1, kInf));
  // Past the search's deadline the rows still missing are 0 (no recompute
  // forced: a valid, weaker bound) and are not shared.
  bool cut = false;
  for (int d = 0; d < p; ++d) {
    // A rank's row depends on the problem, the program and its capacity
    // alone: searchers of one problem and choice may share it (ShareRecompute).
    const std::pair<int, Bytes> key{d, cp.c.spec.device_capacity[d]};
    if (rt_cache) {
      auto it = rt_cache->find(key);
      if (it != rt_cache->end()) {
        rt_table[d] = it->second;
        continue;
      }
    }
    build_floors(d);
    for (int k = 0; k <= D; ++k) {
      cut = cut || PastDeadline(cp.opt);
      rt_table[d][k] = cut ? 0 : least_rt(d, k);
    }
    if (rt_cache && !cut) rt_cache->emplace(key, rt_table[d]);
  }
  return rt_table;
}

}  // namespace

// A bound for the whole tree that accounts for recompute forced by memory,
// which the per-node bounds only see once a device's stages are placed.
//
// Relaxation: the largest group of identical layers ("decoders", D of them)
// must be spread over the devices; other layers are free (they cost >= 0).
// A device holding k decoders runs at least m * (k * w + R_d(k)), where
// R_d(k) is the least recompute time with which k decoders fit its memory:
// static k * st + N_d * stash <= capacity. N_d = the least possible weight
// of the device's stash at its peak moment when the stash is split over its
// chunks in the most favourable way: min over splits s (summing to 1) of
// max over program moments of counts . s (exact for v <= 2; for v > 2 the
// smaller max over moments of min_c counts_c). Its first op also waits for
// the forward chain through the stages before it and its last op is followed
// by the backward chain (each such stage holds at least one layer, at most
// L - D of which are not decoders). T >= lambda where lambda is the least
// level at which the devices can absorb all D decoders.
Nanos RootBound(const ChoiceProblem& cp, Fronts* fronts, RecomputeRows* rt_cache,
                RootRelaxation& out) {
  std::vector<int>* per_device = &out.per_device;
  int* decoder_rep = &out.rep;
  const int L = cp.c.L, p = cp.c.p, m = cp.c.m;
  if (L == 0) return 0;
  auto same = [](const Layer& a, const Layer& b) { return SameLayer(a, b); };
  const auto [best_rep, best_count] = LargestIdenticalGroup(cp.pb.layers);
  const Layer& dec = cp.pb.layers[best_rep];
  const int D = best_count, others = L - D;
  // The first layer always sits on stage 0 (rank 0) and the last on stage
  // S-1 (rank p-1): when they are not decoders, their work and memory are
  // pinned to those ranks (an embedding, a head with its loss).
  std::vector<Nanos> pinned_work(p, 0);
  std::vector<Bytes> pinned_static(p, 0), pinned_stash(p, 0);
  auto pin = [&](int l, int d) {
    const Layer& x = cp.pb.layers[l];
    if (same(x, dec)) return;
    pinned_work[d] += x.forward + x.backward_input + x.backward_weight;
    pinned_static[d] += x.static_memory;
    Bytes least = x.activation;  // the least it can stash
    for (const auto& o : x.recompute) least = std::min(least, o.retained_activation);
    pinned_stash[d] += least;
  };
  pin(0, 0);
  if (L > 1) pin(L - 1, p - 1);
  const Nanos w1 = dec.forward + dec.backward_input + dec.backward_weight;
  const int kmin = cp.pb.allow_empty_chunks ? 0 : 1;
  Nanos f_min = kInf, b_min = kInf;
  for (const Layer& l : cp.pb.layers) {
    f_min = std::min(f_min, l.forward);
    b_min = std::min(b_min, l.backward_input + l.backward_weight);
  }

  // The fronts depend on the decoder alone: searchers of one problem may
  // share them (ShareFronts).
  // Past the deadline the fronts stay unbuilt (and unshared), and the table
  // below is all 0: no recompute forced, a valid and weaker bound.
  std::vector<std::vector<std::pair<Bytes, Nanos>>> own;
  std::vector<std::vector<std::pair<Bytes, Nanos>>>& pts =
      fronts && static_cast<int>(fronts->size()) == D + 1 ? *fronts : own;
  bool fronts_cut = false;
  if (static_cast<int>(pts.size()) != D + 1) {
    own.assign(D + 1, {});
    for (int k = 0; k <= D && !fronts_cut; ++k) {
      fronts_cut = PastDeadline(cp.opt);
      if (!fronts_cut) own[k] = SettingFront(cp, best_rep, dec, k);
    }
    if (fronts != nullptr && !fronts_cut) *fronts = own;
  }

  // R_d(k) per device: the least recompute with which k decoders fit.
  const std::vector<std::vector<Nanos>> rt_table =
      fronts_cut ? std::vector<std::vector<Nanos>>(p, std::vector<Nanos>(D + 1, 0))
                 : RecomputeTable(cp, dec, D, kmin, pinned_static, pinned_stash, pts, rt_cache);
  out.totals.rt = rt_table;
  out.totals.decoders = D;
  out.totals.rep = best_rep;
  out.totals.first_pinned = !same(cp.pb.layers[0], dec);
  out.totals.last_pinned = L > 1 && !same(cp.pb.layers[L - 1], dec);
  out.totals.free_others = others - out.totals.first_pinned - out.totals.last_pinned;
  // Load of device d holding k decoders (or kInf if it cannot fit them).
  auto load = [&](int d, int k) -> Nanos {
    const double speed = cp.pb.cluster.devices[d].speed;
    const Nanos rt = rt_table[d][k];
    if (rt >= kInf) return kInf;
    // Chains before and after: stages 0 .. d-1 hold >= d*kmin layers, at
    // most `others` of them not decoders.
    const int chain_dec = std::max(0, d * kmin - others);
    const Nanos head = static_cast<Nanos>(chain_dec) * ScaleTime(dec.forward, cp.max_speed) +
                       static_cast<Nanos>(std::max(0, d * kmin - chain_dec)) *
                           ScaleTime(f_min, cp.max_speed);
    const Nanos tail = cp.c.split_backward ? 0 : static_cast<Nanos>(chain_dec) *
                           ScaleTime(dec.backward_input + dec.backward_weight, cp.max_speed) +
                       static_cast<Nanos>(std::max(0, d * kmin - chain_dec)) *
                           ScaleTime(b_min, cp.max_speed);
    return head + tail + static_cast<Nanos>(m) * ScaleTime(k * w1 + rt + pinned_work[d], speed);
  };
  // Least total recompute (per micro-batch, speed 1.0) that memory forces
  // on any allocation of the decoders: a knapsack over the devices.
  out.forced_recompute = ForcedRecompute(rt_table, D, cp.opt);
  // Least lambda at which every device can take a feasible number of
  // decoders within lambda and together they can take all D: each device d
  // has a least feasible count kmin_d (chunks need layers, memory) and a
  // largest count within lambda; lambda works iff sum kmin <= D <= sum kmax.
  std::vector<int> kmin_dev(p, -1);
  for (int d = 0; d < p; ++d) {
    for (int k = 0; k <= D; ++k) {
      if (load(d, k) < kInf) {
        kmin_dev[d] = k;
        break;
      }
    }
  }
  out.totals.load.assign(p, std::vector<Nanos>(D + 1, kInf));
  for (int d = 0; d < p; ++d) {
    for (int k = 0; k <= D; ++k) out.totals.load[d][k] = load(d, k);
  }
  const Nanos lo = LeastLevel(out.totals.load, kmin_dev, D);
  if (lo < 0) return 0;  // decoders cannot fit at all: no bound
  if (per_device != nullptr) {
    RelaxedAllocation(out.totals.load, kmin_dev, D, lo, per_device);
    *decoder_rep = best_rep;
  }
  // Per-op rounding to whole ns can shave a little; stay safely below.
  const Nanos slack = static_cast<Nanos>(m) * (cp.c.S + 1) * 2;
  return std::max<Nanos>(0, lo - slack);
}

}  // namespace ppb::search_detail
