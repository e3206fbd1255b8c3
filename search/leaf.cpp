// The recompute choice of a whole split, and the simulation of leaves.
//
// Contract: ChooseRecompute picks, per device (RecomputeChoice), the least
// recompute time that fits its memory, then lets every device take the
// fewest recomputed layers at that time within the largest of those
// peaks; it says (`exact`) whether the choice is provably best for the
// makespan. ExhaustLeaf simulates every Pareto-minimal combination when it
// is not; PolishTies only ever replaces a candidate by a Better one of the
// same split that keeps its time, and returns true only when no choice of
// the split with that time is Better (settled by simulation; never when a
// device's choices cannot all be listed). Every
// simulation counts in `evaluations`; batches are
// simulated on threads but read and offered in a fixed order, so results
// do not depend on the thread count.
#include <algorithm>
#include <functional>
#include <iterator>
#include <limits>
#include <thread>
#include <tuple>

#include "core/cost.h"
#include "search/incumbent.h"
#include "search/searcher.h"

namespace ppb::search_detail {

bool Searcher::ChooseRecompute(const std::vector<int>& split, bool& exact,
                               int* failed_device) {
  exact = true;
  const int S = cp_.c.S;
  chosen_.assign(S, nullptr);
  rtime_.assign(S, 0);
  std::vector<int> first(S, 0);
  for (int s = 1; s < S; ++s) first[s] = first[s - 1] + split[s - 1];
  std::vector<StageFixed> fx(S);
  Bytes prev = 0;
  for (int s = 0; s < S; ++s) {
    fx[s] = cp_.Fixed(s, first[s], first[s] + split[s], prev);
    prev = fx[s].output;
  }
  // Pass 1: each device's least recompute time, and its least peak at that
  // time. Ties are broken over the whole pipeline: the max peak cannot go
  // below the largest of those peaks (M), so pass 2 lets every device take
  // the fewest recomputed layers at its least time within peak M.
  Bytes max_peak = 0;
  std::vector<Nanos> least(cp_.c.p, 0);
  for (int d = 0; d < cp_.c.p; ++d) {
    std::vector<const MenuPoint*> pts;
    bool dev_exact = true;
    least[d] = rc_.DeviceRecompute(d, first, split, fx, pts, dev_exact);
    if (least[d] < 0) {
      if (failed_device != nullptr) *failed_device = d;
      return false;
    }
    exact &= dev_exact;
    std::vector<const StageFixed*> fxp(cp_.c.v);
    for (int c = 0; c < cp_.c.v; ++c) fxp[c] = &fx[StageOf(cp_.c.spec.placement, cp_.c.p, c, d)];
    max_peak = std::max(max_peak, cp_.DevicePeak(d, fxp, pts));
  }
  for (int d = 0; d < cp_.c.p; ++d) {
    std::vector<const MenuPoint*> pts;
    bool dev_exact = true;
    const Nanos t = rc_.DeviceRecompute(d, first, split, fx, pts, dev_exact, max_peak,
                                    /*fewest_recomputed=*/true);
    exact &= dev_exact && t == least[d];
    const double speed = cp_.pb.cluster.devices[d].speed;
    for (int c = 0; c < cp_.c.v; ++c) {
      const int s = StageOf(cp_.c.spec.placement, cp_.c.p, c, d);
      chosen_[s] = pts[c];
      rtime_[s] = ScaleTime(pts[c]->time, speed);
    }
  }
  return true;
}

bool Searcher::EvaluateSplit(const std::vector<int>& split, Candidate* out,
                             bool& exact) {
  if (!ChooseRecompute(split, exact)) return false;
  SimulateChosen(split, out);
  return true;
}

namespace {

// Most combinations across devices the exact tie polish (PolishChunks)
// simulates or orders in one step, as ExhaustLeaf.
constexpr std::int64_t kTieCombos = 256;

// The choices of one device within `cap` that no other choice within `cap`
// matches or beats in every chunk's time (and, with by_rc, in the recomputed
// layers), the first in (total, recomputed, peak) order kept of equal ones.
// The iteration time depends only on the chunks' times and cannot fall when
// one of them grows, so the others never do better.
std::vector<const DeviceChoice*> Undominated(const std::vector<DeviceChoice>& all, Bytes cap,
                                             bool by_rc) {
  std::vector<const DeviceChoice*> in;
  for (const DeviceChoice& ch : all) {
    if (ch.peak <= cap) in.push_back(&ch);
  }
  std::stable_sort(in.begin(), in.end(), [](const DeviceChoice* a, const DeviceChoice* b) {
    return std::tie(a->total, a->rc, a->peak) < std::tie(b->total, b->rc, b->peak);
  });
  // A dominating choice sorts first (its total is at most the other's).
  std::vector<const DeviceChoice*> keep;
  for (const DeviceChoice* ch : in) {
    bool dominated = false;
    for (const DeviceChoice* k : keep) {
      bool le = !by_rc || k->rc <= ch->rc;
      for (size_t x = 0; x < ch->times.size() && le; ++x) le = k->times[x] <= ch->times[x];
      if (le) {
        dominated = true;
        break;
      }
    }
    if (!dominated) keep.push_back(ch);
  }
  return keep;
}

}  // namespace

// Sets chosen_ and rtime_ from one choice per device and simulates.
void Searcher::SimulatePicks(const std::vector<int>& split,
                             const std::vector<const DeviceChoice*>& pick, Candidate* out) {
  const int p = cp_.c.p, v = cp_.c.v;
  chosen_.assign(cp_.c.S, nullptr);
  rtime_.assign(cp_.c.S, 0);
  for (int d = 0; d < p; ++d) {
    for (int c = 0; c < v; ++c) {
      chosen_[StageOf(cp_.c.spec.placement, p, c, d)] = pick[d]->pts[c];
      rtime_[StageOf(cp_.c.spec.placement, p, c, d)] = pick[d]->times[c];
    }
  }
  SimulateChosen(split, out);
}

// Simulates the combinations of one choice per device from `sets` that add
// up to fewer than `rc_below` recomputed layers, fewest first (then in
// odometer order), until one keeps the iteration time within `target`: 1
// with it in *out, 0 when none does, -1 (nothing simulated) when there are
// more than kTieCombos combinations.
int Searcher::FirstWithin(const std::vector<int>& split,
                          const std::vector<std::vector<const DeviceChoice*>>& sets,
                          Nanos target, int rc_below, Candidate* out) {
  const int p = cp_.c.p;
  std::int64_t combos = 1;
  for (const auto& set : sets) {
    if (set.empty()) return 0;
    combos *= static_cast<std::int64_t>(set.size());
    if (combos > kTieCombos) return -1;
  }
  std::vector<std::pair<int, std::vector<size_t>>> order;  // (recomputed, indices)
  std::vector<size_t> idx(p, 0);
  while (true) {
    int rc = 0;
    for (int d = 0; d < p; ++d) rc += sets[d][idx[d]]->rc;
    if (rc < rc_below) order.emplace_back(rc, idx);
    int d = 0;
    while (d < p && ++idx[d] == sets[d].size()) idx[d++] = 0;
    if (d == p) break;
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const DeviceChoice*> pick(p);
  for (const auto& [rc, ix] : order) {
    for (int d = 0; d < p; ++d) pick[d] = sets[d][ix[d]];
    Candidate trial;
    SimulatePicks(split, pick, &trial);
    if (trial.feasible && trial.makespan <= target) {
      *out = std::move(trial);
      return 1;
    }
  }
  return 0;
}

// The exact tie polish with several chunks per device: among the split's
// recompute choices whose iteration time is within the candidate's, the
// least max peak, then the fewest recomputed layers. Whether some choice
// within a cap M on every device's peak keeps the time is monotone in M, and
// only the choices within M undominated in their chunks' times need
// simulating: bisection over the peaks on offer. At the least such M, the
// choices undominated in (times, recomputed layers) are simulated fewest
// recomputed first. False (cand unchanged) when a device's choices cannot
// all be listed or a step has more than kTieCombos combinations. `opts`:
// every device's choices, as EnumerateDevice lists them.
bool Searcher::PolishChunks(const std::vector<int>& split,
                            const std::vector<std::vector<DeviceChoice>>& opts, Candidate& cand) {
  const int p = cp_.c.p;
  Bytes floor = 0;  // no choice of the split goes below this max peak
  std::vector<Bytes> peaks;
  for (int d = 0; d < p; ++d) {
    if (opts[d].empty()) return false;
    Bytes least = kInf;
    for (const DeviceChoice& ch : opts[d]) {
      least = std::min(least, ch.peak);
      peaks.push_back(ch.peak);
    }
    floor = std::max(floor, least);
  }
  const Nanos target = cand.makespan;
  std::sort(peaks.begin(), peaks.end());
  peaks.erase(std::unique(peaks.begin(), peaks.end()), peaks.end());
  // Caps that could lower the max peak: [floor, cand.max_peak).
  peaks.erase(std::remove_if(peaks.begin(), peaks.end(),
                             [&](Bytes b) { return b < floor || b >= cand.max_peak; }),
              peaks.end());
  auto sets_within = [&](Bytes M, bool by_rc) {
    std::vector<std::vector<const DeviceChoice*>> sets(p);
    for (int d = 0; d < p; ++d) sets[d] = Undominated(opts[d], M, by_rc);
    return sets;
  };
  Candidate best = cand;
  Bytes M = cand.max_peak;
  size_t lo = 0, hi = peaks.size();  // the first cap that keeps the time is in [lo, hi]
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    Candidate trial;
    const int got = FirstWithin(split, sets_within(peaks[mid], false), target,
                                std::numeric_limits<int>::max(), &trial);
    if (got < 0) return false;
    if (got == 1) {
      hi = mid;
      best = std::move(trial);
      M = peaks[mid];
    } else {
      lo = mid + 1;
    }
  }
  // Fewest recomputed layers within M.
  const auto sets = sets_within(M, true);
  int least_rc = 0;
  for (const auto& set : sets) {
    int r = std::numeric_limits<int>::max();
    for (const DeviceChoice* ch : set) r = std::min(r, ch->rc);
    least_rc += set.empty() ? 0 : r;
  }
  if (least_rc < best.recomputed_layers) {
    Candidate trial;
    const int got = FirstWithin(split, sets, best.makespan, best.recomputed_layers, &trial);
    if (got < 0) return false;
    if (got == 1) best = std::move(trial);
  }
  if (Better(best, cand)) cand = std::move(best);
  return true;
}

// Most simulations FewestRecomputed runs for one split.
constexpr int kTieSims = 512;

// The fewest recomputed layers within a cap on every device's peak that
// keep the iteration time within `target`, exactly, with one chunk per
// device: depth-first over the devices, each taking its choices within the
// cap undominated in (time, recomputed layers), fewest recomputed first. A
// partial assignment is simulated with the devices not yet assigned at their
// least-time choice within the cap (`least`): the time cannot fall when a
// device's recompute time grows, so when that exceeds `target` no completion
// keeps it; and it is cut when its recomputed layers plus the least of the
// devices left cannot go below `best`'s. `best` (a choice within the cap
// that keeps the time) is replaced by each Better one found. False when it
// stopped at kTieSims simulations or the deadline (best is then the best
// found, not proved).
bool Searcher::FewestRecomputed(const std::vector<int>& split,
                                const std::vector<std::vector<DeviceChoice>>& opts, Bytes cap,
                                Nanos target, const std::vector<const DeviceChoice*>& least,
                                Candidate& best) {
  const int p = cp_.c.p;
  std::vector<std::vector<const DeviceChoice*>> sets(p);
  std::vector<int> rest(p + 1, 0);  // least recomputed of devices d.. p-1
  for (int d = 0; d < p; ++d) {
    sets[d] = Undominated(opts[d], cap, /*by_rc=*/true);
    std::stable_sort(sets[d].begin(), sets[d].end(),
                     [](const DeviceChoice* a, const DeviceChoice* b) {
                       return std::tie(a->rc, a->total, a->peak) <
                              std::tie(b->rc, b->total, b->peak);
                     });
  }
  for (int d = p - 1; d >= 0; --d) {
    rest[d] = rest[d + 1] + (sets[d].empty() ? 0 : sets[d].front()->rc);
  }
  std::vector<const DeviceChoice*> pick = least;
  int sims = 0;
  bool complete = true;
  std::function<void(int, int)> dfs = [&](int d, int rc) {
    for (const DeviceChoice* ch : sets[d]) {
      if (!complete) return;
      // Sorted by recomputed layers: the rest cannot do better either.
      if (rc + ch->rc + rest[d + 1] >= best.recomputed_layers) break;
      pick[d] = ch;
      if (ch != least[d]) {  // else: the assignment the caller already kept
        if (++sims > kTieSims || PastDeadline(cp_.opt)) {
          complete = false;
          break;
        }
        Candidate trial;
        SimulatePicks(split, pick, &trial);
        if (!trial.feasible || trial.makespan > target) continue;
        // A whole assignment too (the rest at their least-time choices).
        if (Better(trial, best)) best = std::move(trial);
      }
      if (d + 1 < p) dfs(d + 1, rc + ch->rc);
    }
    pick[d] = least[d];
  };
  if (rest[0] < best.recomputed_layers) dfs(0, 0);
  return complete;
}

// Ties on the iteration time are broken by the max peak, then the number of
// recomputed layers. Recomputing on a device off the critical path can
// lower the peak for free, so for a candidate good enough for the top list
// PolishTies looks for a Better choice of the same split that keeps the time.
// With one chunk per device (v = 1) a device's least recompute time within a
// cap M is its only time that matters: find the least cap M on every
// device's peak at which the least-recompute choices within M still give the
// same iteration time (bisection over the peaks on offer; the time can only
// grow as M falls), then let each device in turn take the fewest recomputed
// layers within M that keep the time, and prove that count the least by
// FewestRecomputed. With several chunks the chunk that
// recomputes decides the time, not the device's total: PolishChunks settles
// the tie exactly (by simulation); when it cannot (too many combinations)
// the greedy polish still runs and PolishTies returns false (not proved).
// So it does when some device's choices cannot all be listed (a truncated
// menu): nothing is polished then.
bool Searcher::PolishTies(const std::vector<int>& split, Candidate& cand) {
  const int p = cp_.c.p, v = cp_.c.v;
  if (!cand.feasible) return true;
  if (PastDeadline(cp_.opt)) return false;  // not polished: not proved
  // Every device's choices, listed once for the exact and the greedy polish.
  std::vector<int> first;
  std::vector<StageFixed> fx;
  rc_.SplitLayout(split, first, fx);
  std::vector<std::vector<DeviceChoice>> opts(p);
  bool listed = true;
  for (int d = 0; d < p && listed; ++d) {
    listed = rc_.EnumerateDevice(d, first, split, fx, opts[d]);
  }
  if (v > 1 && listed && PolishChunks(split, opts, cand)) return true;
  // Some choice could not be listed: nothing to polish with, and no proof.
  if (!listed) return false;
  const bool proved = v == 1;
  std::vector<Bytes> peaks;
  for (int d = 0; d < p; ++d) {
    for (const auto& ch : opts[d]) peaks.push_back(ch.peak);
  }
  std::sort(peaks.begin(), peaks.end());
  peaks.erase(std::unique(peaks.begin(), peaks.end()), peaks.end());
  const Nanos target = cand.makespan;
  std::vector<const DeviceChoice*> pick(p);
  auto apply = [&](Candidate& out) { SimulatePicks(split, pick, &out); };
  // Least-recompute choice of every device within M; false if none fits.
  auto choose_within = [&](Bytes M) {
    for (int d = 0; d < p; ++d) {
      pick[d] = nullptr;
      for (const auto& ch : opts[d]) {
        if (ch.peak > M) continue;
        if (pick[d] == nullptr ||
            std::tie(ch.total, ch.rc, ch.peak) <
                std::tie(pick[d]->total, pick[d]->rc, pick[d]->peak)) {
          pick[d] = &ch;
        }
      }
      if (pick[d] == nullptr) return false;
    }
    return true;
  };
  auto ok = [&](size_t i) {
    Candidate trial;
    if (!choose_within(peaks[i])) return false;
    apply(trial);
    return trial.feasible && trial.makespan <= target;
  };
  size_t lo = 0, hi = peaks.size();  // the first ok index is in [lo, hi]
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (ok(mid)) hi = mid;
    else lo = mid + 1;
  }
  if (lo >= peaks.size()) return proved;
  const Bytes M = peaks[lo];
  if (!choose_within(M)) return proved;
  Candidate best;
  apply(best);
  if (!best.feasible || best.makespan > target) return proved;
  const std::vector<const DeviceChoice*> least = pick;
  // Fewest recomputed layers, device by device, keeping the time.
  for (int d = 0; d < p; ++d) {
    if (PastDeadline(cp_.opt)) {  // what it has, not proved
      if (Better(best, cand)) cand = std::move(best);
      return false;
    }
    std::vector<const DeviceChoice*> order;
    for (const auto& ch : opts[d]) {
      if (ch.peak <= M && ch.rc < pick[d]->rc) order.push_back(&ch);
    }
    std::sort(order.begin(), order.end(), [](const DeviceChoice* a, const DeviceChoice* b) {
      return std::tie(a->rc, a->total, a->peak) < std::tie(b->rc, b->total, b->peak);
    });
    const DeviceChoice* keep = pick[d];
    for (const DeviceChoice* ch : order) {
      pick[d] = ch;
      Candidate trial;
      apply(trial);
      if (trial.feasible && trial.makespan <= target && Better(trial, best)) {
        best = std::move(trial);
        keep = ch;
        break;
      }
    }
    pick[d] = keep;
  }
  // The greedy pass above need not find the fewest (a device that takes
  // slack may leave less to another that saves more): with one chunk per
  // device the search below is exact.
  const bool fewest = proved && FewestRecomputed(split, opts, M, target, least, best);
  if (Better(best, cand)) cand = std::move(best);
  return fewest;
}

std::int64_t Searcher::ListTimeVectors(const std::vector<int>& split, DeviceVectors& out,
                                       std::int64_t stop_above) {
  const int p = cp_.c.p;
  std::vector<int> first;
  std::vector<StageFixed> fx;
  rc_.SplitLayout(split, first, fx);
  out.assign(p, {});
  std::int64_t combos = 1;
  for (int d = 0; d < p; ++d) {
    std::vector<DeviceChoice> found;
    if (!rc_.EnumerateDevice(d, first, split, fx, found) || found.empty()) return -1;
    out[d] = TimeVectors(std::move(found), cp_.c.v);
    const auto n = static_cast<std::int64_t>(out[d].size());  // >= 1
    combos = combos > stop_above / n ? stop_above + 1 : std::min(combos * n, stop_above + 1);
    if (combos > stop_above) return combos;  // the rest not listed
  }
  return combos;
}

// Enumerates, for every device, the feasible recompute choices whose
// per-chunk time vectors are Pareto-minimal (for equal vectors: the least
// peak, then the fewest recomputed layers), and simulates every combination
// across devices; the best of them, when good enough for the top list, is
// tie-polished before it is offered. Returns false (nothing offered) when
// that is too many.
bool Searcher::ExhaustLeaf(const std::vector<int>& split, Nanos& unproved, Nanos* fastest,
                           DeviceVectors* too_many) {
  if (PastDeadline(cp_.opt)) return false;  // nothing offered: the leaf stays open
  const int S = cp_.c.S, p = cp_.c.p, v = cp_.c.v;
  using Choice = DeviceChoice;
  DeviceVectors per_device;
  const std::int64_t combos = ListTimeVectors(
      split, per_device,
      too_many == nullptr ? kTieCombos : kListAll);
  if (combos < 0) return false;
  if (combos > kTieCombos) {
    if (too_many != nullptr) *too_many = std::move(per_device);
    return false;
  }
  // Odometer over the devices' time vectors; for each combination, the
  // least max peak M, then per device the fewest recomputed within M.
  std::vector<size_t> idx(p, 0);
  std::vector<Candidate> cands;
  size_t best = 0;
  while (true) {
    Bytes max_peak = 0;
    for (int d = 0; d < p; ++d) {
      Bytes least = kInf;
      for (const Choice& ch : per_device[d][idx[d]]) least = std::min(least, ch.peak);
      max_peak = std::max(max_peak, least);
    }
    chosen_.assign(S, nullptr);
    rtime_.assign(S, 0);
    for (int d = 0; d < p; ++d) {
      const Choice* pick = nullptr;
      for (const Choice& ch : per_device[d][idx[d]]) {
        if (ch.peak > max_peak) continue;
        if (pick == nullptr || std::tie(ch.rc, ch.peak) < std::tie(pick->rc, pick->peak)) {
          pick = &ch;
        }
      }
      for (int c = 0; c < v; ++c) {
        chosen_[StageOf(cp_.c.spec.placement, p, c, d)] = pick->pts[c];
        rtime_[StageOf(cp_.c.spec.placement, p, c, d)] = pick->times[c];
      }
    }
    Candidate cand;
    SimulateChosen(split, &cand);
    if (!cands.empty() && Better(cand, cands[best])) best = cands.size();
    cands.push_back(std::move(cand));
    int d = 0;
    while (d < p && ++idx[d] == per_device[d].size()) idx[d++] = 0;
    if (d == p) break;
  }
  if (fastest != nullptr) {
    *fastest = kInf;
    for (const Candidate& cand : cands) {
      if (cand.feasible) *fastest = std::min(*fastest, cand.makespan);
    }
  }
  Candidate& top = cands[best];
  if (top.feasible &&
      (top_list.top.empty() || top.makespan <= top_list.top.front().makespan)) {
    if (!PolishTies(split, top)) unproved = std::min(unproved, top.makespan);
  }
  for (Candidate& cand : cands) Offer(std::move(cand));
  return true;
}

Searcher::LeafResult Searcher::EvaluateLeaf(const std::vector<int>& split, Nanos bound) {
  LeafResult out;
  Candidate cand;
  bool exact = true;
  if (!EvaluateSplit(split, &cand, exact)) {
    out.fits = false;
    return out;
  }
  const Nanos got = cand.makespan;
  const bool feasible = cand.feasible;
  Nanos unproved = kInf;  // the time of a tie polish not proved
  if (feasible && (top_list.top.empty() || got <= top_list.top.front().makespan) &&
      !PolishTies(split, cand)) {
    unproved = got;
  }
  Offer(std::move(cand));
  // At or below the bound, the choice is the split's fastest whether or not
  // it is proved.
  if (feasible && !interrupted && (exact || got <= bound)) out.least = got;
  // The least-total recompute is not provably best with several chunks:
  // simulate every Pareto-minimal choice, or leave the leaf open.
  // ExhaustLeaf's best is the split's fastest, and its tie polish replaces
  // the one above.
  if (!exact && got > bound) {
    unproved = kInf;
    Nanos fastest = kInf;
    if (!ExhaustLeaf(split, unproved, &fastest)) {
      out.open = true;
    } else if (!interrupted && fastest < kInf) {
      out.least = fastest;
    }
  }
  // Not closed while a choice of that time and a lower peak may remain.
  ties_open = std::min(ties_open, unproved);
  return out;
}

SplitValue Searcher::SplitOptimum(const std::vector<int>& split) {
  if (interrupted || PastDeadline(cp_.opt)) return {};
  const LeafResult leaf = EvaluateLeaf(split, -1);
  // No recompute of some device fits: no strategy of the split does, unless
  // a menu was cut short.
  if (!leaf.fits) return {rc_.truncated() ? -1 : kInf, true};
  if (leaf.least < 0) return {};
  // Under search.target the offered strategy may not enter the list: then
  // the value only bounds.
  const bool attained = cp_.opt.target == DeployTarget::Any;
  // At nominal times: the least t with ScaleBound(t) <= least.
  if (cp_.c.bound_scale >= 1.0) return {leaf.least, attained};
  return {static_cast<Nanos>(std::floor(static_cast<long double>(leaf.least) / cp_.c.bound_scale)),
          attained};
}

// The spec and strategy of a split with the recompute in chosen_/rtime_.
// Reads only caches that are already filled, so batches can be built first
// and simulated on several threads.
void Searcher::BuildChosen(const std::vector<int>& split, PipelineSpec& spec, Strategy& st,
                           int& recomputed) {
  const int S = cp_.c.S;
  spec = cp_.c.spec;
  int first = 0;
  Bytes prev = 0;
  st.layers_per_stage = split;
  st.recompute.assign(cp_.c.L, 0);
  recomputed = 0;
  for (int s = 0; s < S; ++s) {
    const StageFixed fx = cp_.Fixed(s, first, first + split[s], prev);
    prev = fx.output;
    const MenuPoint& q = *chosen_[s];
    StageCost& sc = spec.stages[s];
    sc = StageCost{};
    sc.forward = fx.f;
    sc.backward_input = fx.bi;
    sc.backward_weight = fx.bw;
    sc.recompute = rtime_[s];
    sc.static_memory = fx.static_mem;
    sc.activation = q.stash;
    sc.input_grad_release = q.stash - q.held;
    sc.forward_transient = fx.workspace;
    sc.backward_transient = fx.workspace + q.remat;
    sc.output_bytes = fx.output;
    sc.num_layers = split[s];
    sc.num_recomputed = q.recomputed;
    sc.grad_bytes = fx.grad_bytes;
    sc.expert_grad_bytes = fx.expert_grad_bytes;
    sc.optimizer = fx.optimizer;
    sc.step_gather = fx.step_gather;
    sc.ep_forward = fx.ep_forward;
    sc.ep_backward = fx.ep_backward;
    recomputed += q.recomputed;
    // Per-layer modes: within each group of identical layers the order is
    // free (same stage time and peak), so the layers take the modes in the
    // order MindFormers' "first N layers of the stage" lists apply them
    // (full, then both select lists, selective, select_comm; any other mode
    // after them in the layer's order), the rest keep everything (as
    // Megatron's "block" method: the first N layers). More strategies are
    // then expressible (AssignModes, search/deployable.h).
    int shift = 0;  // the menu's layer l is layer l + shift here
    const Menu& menu = rc_.GetMenu(first, first + split[s], &shift);
    AssignModes(menu, q, st.recompute, shift);
    first += split[s];
  }
}

void Searcher::ToCandidate(Strategy st, int recomputed, const SimResult& sim, Candidate* out) const {
  Candidate& cand = *out;
  cand.choice = cp_.c.index;
  cand.strategy = std::move(st);
  cand.makespan = sim.makespan;
  cand.bubble_fraction = sim.bubble_fraction();
  cand.max_peak = 0;
  cand.recomputed_layers = recomputed;
  for (const auto& d : sim.devices) cand.max_peak = std::max(cand.max_peak, d.peak_memory);
  cand.feasible = sim.outcome == Outcome::Ok;
  cand.devices = sim.devices;
}

bool Searcher::Finished(const SimResult& sim) {
  if (sim.outcome != Outcome::Interrupted) {
    ++evaluations;
    return true;
  }
  interrupted = true;
  limits.hit = true;
  limits.stop_reason = "time limit";
  return false;
}

SimOptions Searcher::EvalOptions() const {
  SimOptions so;
  so.record_ops = false;
  so.deadline = sim_deadline_;
  so.record_order = order_.empty();
  so.order = order_.empty() ? nullptr : &order_;
  return so;
}

void Searcher::KeepOrder(SimResult& sim) {
  if (order_.empty() && (sim.outcome == Outcome::Ok || sim.outcome == Outcome::OutOfMemory)) {
    order_ = ExecutionOrder::Compile(*cp_.c.program, sim.order);
  }
}

// An interrupted run gives an infeasible candidate (ToCandidate), which
// is never offered.
void Searcher::SimulateChosen(const std::vector<int>& split, Candidate* out) {
  Strategy st;
  int recomputed = 0;
  BuildChosen(split, work_spec_, st, recomputed);
  engine_.RunInto(work_spec_, *cp_.c.program, EvalOptions(), sim_);
  KeepOrder(sim_);
  Finished(sim_);
  ToCandidate(std::move(st), recomputed, sim_, out);
}

void Searcher::RunBatch(std::vector<BatchSlot>& batch) {
  size_t first = 0;  // the slots from here on run below
  if (order_.empty() && !batch.empty()) {
    // The first run records the order the others follow.
    engine_.RunInto(batch[0].spec, *cp_.c.program, EvalOptions(), batch[0].sim);
    KeepOrder(batch[0].sim);
    first = 1;
  }
  const SimOptions so = EvalOptions();
  const size_t left = batch.size() - first;
  const int threads = std::max(1, std::min<int>(cp_.opt.threads, static_cast<int>(left)));
  const auto count = [&] {
    for (const BatchSlot& slot : batch) Finished(slot.sim);
  };
  // Below a few thousand ops a run takes microseconds: threads cost more.
  if (threads == 1 || cp_.c.program->total_ops() < 4096) {
    for (size_t k = first; k < batch.size(); ++k) {
      engine_.RunInto(batch[k].spec, *cp_.c.program, so, batch[k].sim);
    }
    count();
    return;
  }
  if (static_cast<int>(batch_engines_.size()) < threads) batch_engines_.resize(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t]() {
      for (size_t k = first + t; k < batch.size(); k += threads) {
        batch_engines_[t].RunInto(batch[k].spec, *cp_.c.program, so, batch[k].sim);
      }
    });
  }
  for (auto& th : pool) th.join();
  count();
}

}  // namespace ppb::search_detail

