// Other recompute choices of one split than the least total per device
// (v > 1): where a device's recompute lands (which chunk) changes the
// iteration time, not only its total.
//
// Contract: Searcher::ImproveChoice and DescendLeaf simulate only
// strategies of `split` built from one listed choice per device (each fits
// the device's memory), offer what they keep, and prove nothing: a leaf
// they serve stays open. DescendLeaf starts from every device's least-total
// time vector and lets the devices in turn (rank order) take the vector
// that makes the run Better, until a whole pass changes nothing, after
// kDescentSims simulations, at the deadline, or when an interrupted run
// stops the search; its best is tie-polished (PolishTies) and offered. Its
// course is fixed (batches simulated on threads but read in order), so its
// result does not depend on the thread count.
//
// Why: the tree's choice can be several per cent slower than a choice of
// the same totals placed in other chunks (search-405b-p16-v4: 131.8 s
// against 128.7 s; docs/search.md).
#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "search/searcher.h"

namespace ppb::search_detail {

namespace {

constexpr int kDescentSims = 1000;

}  // namespace

Searcher::ChoiceImprovement Searcher::ImproveChoice(const std::vector<int>& split, bool exhaust) {
  ChoiceImprovement out;
  if (cp_.c.v == 1 || interrupted) return out;
  Nanos unproved = kInf, fastest = kInf;
  DeviceVectors too_many;
  if (exhaust) {
    if (ExhaustLeaf(split, unproved, &fastest, &too_many)) {
      out.exhaustive = true;
      if (fastest < kInf) out.best = fastest;
      return out;
    }
  } else {
    // Every device's vectors, however many (the descent's input).
    if (ListTimeVectors(split, too_many, kListAll) < 0) {
      return out;
    }
  }
  if (too_many.empty()) return out;
  std::tie(out.first, out.best) = DescendLeaf(split, too_many);
  return out;
}

std::pair<Nanos, Nanos> Searcher::DescendLeaf(const std::vector<int>& split,
                                              const DeviceVectors& vectors) {
  const int p = cp_.c.p, v = cp_.c.v;
  if (static_cast<int>(vectors.size()) != p) return {-1, -1};
  // Each vector's option with the least peak, then the fewest recomputed
  // (TimeVectors sorts them so): the time depends on the vector alone.
  std::vector<size_t> pick(p, 0);
  for (int d = 0; d < p; ++d) {
    if (vectors[d].empty()) return {-1, -1};
    for (size_t g = 1; g < vectors[d].size(); ++g) {
      if (vectors[d][g].front().total < vectors[d][pick[d]].front().total) pick[d] = g;
    }
  }
  auto set_chosen = [&](const std::vector<size_t>& pk) {
    chosen_.assign(cp_.c.S, nullptr);
    rtime_.assign(cp_.c.S, 0);
    for (int d = 0; d < p; ++d) {
      const DeviceChoice& ch = vectors[d][pk[d]].front();
      for (int c = 0; c < v; ++c) {
        const int s = StageOf(cp_.c.spec.placement, p, c, d);
        chosen_[s] = ch.pts[c];
        rtime_[s] = ch.times[c];
      }
    }
  };
  Candidate cur;
  set_chosen(pick);
  SimulateChosen(split, &cur);
  if (interrupted) return {-1, -1};
  const Nanos first = cur.feasible ? cur.makespan : -1;
  int sims = 1;
  bool improved = true;
  std::vector<BatchSlot> batch;
  std::vector<size_t> alt;
  while (improved && !interrupted) {
    improved = false;
    for (int d = 0; d < p && !interrupted; ++d) {
      const size_t n = vectors[d].size();
      if (n < 2) continue;
      if (sims + static_cast<int>(n) - 1 > kDescentSims || PastDeadline(cp_.opt)) {
        improved = false;
        break;
      }
      batch.assign(n - 1, BatchSlot{});
      alt.clear();
      std::vector<size_t> trial = pick;
      for (size_t g = 0, k = 0; g < n; ++g) {
        if (g == pick[d]) continue;
        trial[d] = g;
        set_chosen(trial);
        BuildChosen(split, batch[k].spec, batch[k].strategy, batch[k].recomputed);
        alt.push_back(g);
        ++k;
      }
      RunBatch(batch);
      sims += static_cast<int>(batch.size());
      if (interrupted) break;
      size_t took = n;
      for (size_t k = 0; k < batch.size(); ++k) {
        Candidate c;
        ToCandidate(std::move(batch[k].strategy), batch[k].recomputed, batch[k].sim, &c);
        if (c.feasible && Better(c, cur)) {
          cur = std::move(c);
          took = alt[k];
        }
      }
      if (took < n) {
        pick[d] = took;
        improved = true;
      }
    }
  }
  if (interrupted || !cur.feasible) return {first, -1};
  Nanos best = cur.makespan;
  if (top_list.top.empty() || cur.makespan <= top_list.top.front().makespan) {
    PolishTies(split, cur);
  }
  Offer(std::move(cur));
  // The tie polish offers what it simulates, and may meet a faster choice
  // of the split than the descent's (one that changes several devices at
  // once): the best is the split's best in the top list.
  for (const Candidate& c : top_list.top) {
    if (c.feasible && c.strategy.layers_per_stage == split) best = std::min(best, c.makespan);
  }
  return {first, best};
}

}  // namespace ppb::search_detail
