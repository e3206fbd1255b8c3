// The least recompute of a rank given how many decoders each of its chunks
// holds (ChunkRecompute, declared in bounds.h), for the open-tree bound.
//
// Contract: Least(d, k) <= the recompute time per micro-batch (speed 1.0,
// summed over the rank's chunks) of every strategy in which rank d's chunk
// c holds k[c] decoders and the rank fits its memory; kInf when none fits.
// Valid because each chunk's (stash, recompute time) is dominated by a
// point of its decoders' front, and the rank's simulated peak is at least
// static memory + max over its program's moments of sum_c in-flight_c x
// stash_c, plus the stash of the F that starts at that moment and its
// stage's workspace (search/memory_profile.h; re-materialized activations
// and other layers only add).
#include <algorithm>
#include <set>

#include "search/bounds.h"
#include "search/recompute_menu.h"

namespace ppb::search_detail {

namespace {

// The Pareto points (stash per micro-batch, recompute time), stash up and
// time down, of k copies of `dec`, every number of recompute modes
// enumerated (counts per mode) while there are at most 20,000 combinations;
// past that StackRecomputeFront's (valid, looser) front. StackRecomputeFront
// takes recompute as free beyond two modes, which SAPP's layers (four modes)
// always pass.
std::vector<std::pair<Bytes, Nanos>> ExactFront(const Layer& dec, int k) {
  const auto& opts = dec.recompute;
  const int modes = static_cast<int>(opts.size());
  double combos = 1;  // C(k + modes, modes)
  for (int i = 1; i <= modes; ++i) combos = combos * (k + i) / i;
  if (modes <= 2 || combos > 20'000) return StackRecomputeFront(dec, k);
  std::vector<std::pair<Bytes, Nanos>> pts;
  auto rec = [&](auto&& self, int i, int left, Bytes st, Nanos t) -> void {
    if (i == modes) {
      pts.emplace_back(st + static_cast<Bytes>(left) * dec.activation, t);
      return;
    }
    for (int n = 0; n <= left; ++n) {
      self(self, i + 1, left - n, st + static_cast<Bytes>(n) * opts[i].retained_activation,
           t + static_cast<Nanos>(n) * opts[i].extra_time);
    }
  };
  rec(rec, 0, k, 0, 0);
  std::sort(pts.begin(), pts.end());
  std::vector<std::pair<Bytes, Nanos>> front;
  for (const auto& x : pts) {
    if (front.empty() || x.second < front.back().second) front.push_back(x);
  }
  return front;
}

}  // namespace

ChunkRecompute::ChunkRecompute(const ChoiceProblem& cp, const Totals& totals)
    : cp_(cp), totals_(totals), fronts_(totals.decoders + 1),
      built_(totals.decoders + 1, 0), moments_(cp.c.p), base_(cp.c.p),
      chunk_(cp.c.p), pinned_ws_(cp.c.p), prepared_(cp.c.p, 0), cache_(cp.c.p) {}

const std::vector<std::pair<Bytes, Nanos>>& ChunkRecompute::Front(int k) {
  if (!built_[k]) {
    built_[k] = 1;
    if (k > 0) fronts_[k] = ExactFront(cp_.pb.layers[totals_.rep], k);
    if (fronts_[k].empty()) fronts_[k] = {{0, 0}};  // nothing to stash
  }
  return fronts_[k];
}

void ChunkRecompute::Prepare(int d) {
  prepared_[d] = 1;
  const int p = cp_.c.p, v = cp_.c.v, S = cp_.c.S, L = cp_.c.L;
  auto least_stash = [](const Layer& x) {
    Bytes least = x.activation;
    for (const auto& o : x.recompute) least = std::min(least, o.retained_activation);
    return static_cast<long double>(least);
  };
  // The pinned first (last) layer sits on stage 0 (S - 1) unless chunks may
  // be empty; then its place is unknown and it is left out (a lower floor).
  std::vector<long double> pinned(v, 0.0L);
  std::vector<Bytes> pinned_ws(v, 0);
  if (!cp_.pb.allow_empty_chunks) {
    for (int c = 0; c < v; ++c) {
      const int st = StageOf(cp_.c.spec.placement, p, c, d);
      for (const auto& [is, layer] : {std::pair{totals_.first_pinned && st == 0, 0},
                                      std::pair{totals_.last_pinned && st == S - 1, L - 1}}) {
        if (!is) continue;
        pinned[c] += least_stash(cp_.pb.layers[layer]);
        pinned_ws[c] = std::max(pinned_ws[c], cp_.pb.layers[layer].workspace);
      }
    }
  }
  // A moment before an F of chunk c holds that F's own stash too (one more
  // of chunk c), and any op adds its stage's workspace (the largest of its
  // layers'). Moments that another of the same chunk covers componentwise
  // cannot set the peak (every stash is >= 0): drop them.
  std::set<std::pair<int, std::vector<int>>> unique;
  for (const Moment& mo : cp_.c.profile->moments[d]) {
    std::vector<int> n = mo.counts;
    if (mo.forward) ++n[mo.chunk];
    unique.emplace(mo.chunk, std::move(n));
  }
  const std::vector<std::pair<int, std::vector<int>>> all(unique.begin(), unique.end());
  for (size_t i = 0; i < all.size(); ++i) {
    bool covered = false;
    for (size_t j = 0; j < all.size() && !covered; ++j) {
      if (i == j || all[j].first != all[i].first) continue;
      bool ge = true;
      for (int c = 0; c < v && ge; ++c) ge = all[j].second[c] >= all[i].second[c];
      covered = ge;  // all distinct: j covers i strictly
    }
    if (covered) continue;
    long double b = 0;
    for (int c = 0; c < v; ++c) b += static_cast<long double>(all[i].second[c]) * pinned[c];
    moments_[d].push_back(all[i].second);
    chunk_[d].push_back(all[i].first);
    base_[d].push_back(b);
  }
  pinned_ws_[d] = std::move(pinned_ws);
}

Nanos ChunkRecompute::Least(int d, const std::vector<int>& k) {
  auto it = cache_[d].find(k);
  if (it != cache_[d].end()) return it->second;
  if (!prepared_[d]) Prepare(d);
  const int v = cp_.c.v, p = cp_.c.p, L = cp_.c.L, S = cp_.c.S;
  const Layer& dec = cp_.pb.layers[totals_.rep];
  long double stat = 0;
  int total = 0;
  for (int c = 0; c < v; ++c) total += k[c];
  stat += static_cast<long double>(total) * dec.static_memory;
  if (!cp_.pb.allow_empty_chunks) {
    for (int c = 0; c < v; ++c) {
      const int st = StageOf(cp_.c.spec.placement, p, c, d);
      if (totals_.first_pinned && st == 0) stat += cp_.pb.layers[0].static_memory;
      if (totals_.last_pinned && st == S - 1) stat += cp_.pb.layers[L - 1].static_memory;
    }
  }
  const long double room = static_cast<long double>(cp_.c.spec.device_capacity[d]) - stat;
  std::vector<const std::vector<std::pair<Bytes, Nanos>>*> fr(v);
  for (int c = 0; c < v; ++c) fr[c] = &Front(k[c]);
  // Least stash and least time of chunks c.. (each front: stash up, time down).
  std::vector<Nanos> rest_t(v + 1, 0);
  for (int c = v - 1; c >= 0; --c) rest_t[c] = rest_t[c + 1] + fr[c]->back().second;
  std::vector<long double> stash(v, 0.0L);
  for (int c = 0; c < v; ++c) stash[c] = static_cast<long double>(fr[c]->front().first);
  const auto& mos = moments_[d];
  const auto& base = base_[d];
  const auto& chunk = chunk_[d];
  std::vector<long double> ws(v, 0.0L);  // per chunk: its stage's least workspace
  for (int c = 0; c < v; ++c) {
    ws[c] = static_cast<long double>(std::max(k[c] > 0 ? dec.workspace : 0, pinned_ws_[d][c]));
  }
  auto fits = [&]() {
    for (size_t i = 0; i < mos.size(); ++i) {
      long double x = base[i] + ws[chunk[i]];
      for (int c = 0; c < v; ++c) x += mos[i][c] * stash[c];
      if (x > room) return false;
    }
    return room >= 0;
  };
  Nanos best = kInf;
  long long nodes = 0;
  constexpr long long kMaxNodes = 200'000;
  bool cut = false;
  // Depth-first over the chunks' front points; chunks not yet chosen sit
  // at their least stash (a floor), so an infeasible partial choice is cut.
  auto dfs = [&](auto&& self, int c, Nanos t) -> void {
    if (cut) return;
    if (++nodes > kMaxNodes) {
      cut = true;
      return;
    }
    if (t + rest_t[c] >= best) return;
    if (c == v) {
      best = t;
      return;
    }
    const auto& f = *fr[c];
    // Least stash first means most time first: go from the other end.
    for (size_t i = f.size(); i-- > 0;) {
      stash[c] = static_cast<long double>(f[i].first);
      if (fits()) self(self, c + 1, t + f[i].second);
    }
    stash[c] = static_cast<long double>(f.front().first);
  };
  if (fits()) dfs(dfs, 0, 0);
  // Cut short: each chunk's least time is still a floor.
  const Nanos out = cut ? rest_t[0] : best;
  cache_[d].emplace(k, out);
  return out;
}

}  // namespace ppb::search_detail
