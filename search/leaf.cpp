// The recompute choice of a whole split, and the simulation of leaves.
//
// Contract: ChooseRecompute picks, per device (RecomputeChoice), the least
// recompute time that fits its memory, then lets every device take the
// fewest recomputed layers at that time within the largest of those
// peaks; it says (`exact`) whether the choice is provably best for the
// makespan. ExhaustLeaf simulates every Pareto-minimal combination when it
// is not; PolishTies only ever replaces a candidate by a Better one of the
// same split. Every simulation counts in `evaluations`; batches are
// simulated on threads but read and offered in a fixed order, so results
// do not depend on the thread count.
#include <algorithm>
#include <functional>
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
    for (int c = 0; c < cp_.c.v; ++c) fxp[c] = &fx[c * cp_.c.p + d];
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
      const int s = c * cp_.c.p + d;
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

// Ties on the iteration time are broken by the max peak, then the number of
// recomputed layers. Recomputing on a device off the critical path can
// lower the peak for free, so for a candidate good enough for the top list:
// find the least cap M on every device's peak at which the least-recompute
// choices within M still give the same iteration time (bisection over the
// peaks on offer; the time can only grow as M falls), then let each device
// in turn take the fewest recomputed layers within M that keep the time.
void Searcher::PolishTies(const std::vector<int>& split, Candidate& cand) {
  const int S = cp_.c.S, p = cp_.c.p, v = cp_.c.v;
  if (!cand.feasible) return;
  std::vector<int> first;
  std::vector<StageFixed> fx;
  rc_.SplitLayout(split, first, fx);
  std::vector<std::vector<DeviceChoice>> opts(p);
  std::vector<Bytes> peaks;
  for (int d = 0; d < p; ++d) {
    if (!rc_.EnumerateDevice(d, first, split, fx, opts[d])) return;
    for (const auto& ch : opts[d]) peaks.push_back(ch.peak);
  }
  std::sort(peaks.begin(), peaks.end());
  peaks.erase(std::unique(peaks.begin(), peaks.end()), peaks.end());
  const Nanos target = cand.makespan;
  std::vector<const DeviceChoice*> pick(p);
  auto apply = [&](Candidate& out) {
    chosen_.assign(S, nullptr);
    rtime_.assign(S, 0);
    for (int d = 0; d < p; ++d) {
      for (int c = 0; c < v; ++c) {
        chosen_[c * p + d] = pick[d]->pts[c];
        rtime_[c * p + d] = pick[d]->times[c];
      }
    }
    SimulateChosen(split, &out);
  };
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
  if (lo >= peaks.size()) return;
  const Bytes M = peaks[lo];
  if (!choose_within(M)) return;
  Candidate best;
  apply(best);
  if (!best.feasible || best.makespan > target) return;
  // Fewest recomputed layers, device by device, keeping the time.
  for (int d = 0; d < p; ++d) {
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
  if (Better(best, cand)) cand = std::move(best);
}

// Enumerates, for every device, the feasible recompute choices whose
// per-chunk time vectors are Pareto-minimal (for equal vectors: the least
// peak, then the fewest recomputed layers), and simulates every combination
// across devices. Returns false (nothing offered) when that is too many.
bool Searcher::ExhaustLeaf(const std::vector<int>& split) {
  const int S = cp_.c.S, p = cp_.c.p, v = cp_.c.v;
  std::vector<int> first;
  std::vector<StageFixed> fx;
  rc_.SplitLayout(split, first, fx);
  using Choice = DeviceChoice;
  std::vector<std::vector<std::vector<Choice>>> per_device(p);
  std::int64_t combos = 1;
  for (int d = 0; d < p; ++d) {
    std::vector<Choice> found;
    if (!rc_.EnumerateDevice(d, first, split, fx, found) || found.empty()) return false;
    // Keep Pareto-minimal time vectors (timing depends on nothing else);
    // for each, all (peak, recomputed) options that are Pareto-minimal.
    std::vector<Choice> keep;
    for (size_t i = 0; i < found.size(); ++i) {
      bool dominated = false;
      for (size_t j = 0; j < found.size() && !dominated; ++j) {
        if (i == j) continue;
        bool le = true, lt = false;
        for (int x = 0; x < v; ++x) {
          if (found[j].times[x] > found[i].times[x]) le = false;
          if (found[j].times[x] < found[i].times[x]) lt = true;
        }
        if (!le) continue;
        if (lt) {
          dominated = true;  // strictly faster somewhere, never slower
        } else {
          // Same time vector: dominated in (peak, rc), or a duplicate.
          const auto a = std::tie(found[j].peak, found[j].rc);
          const auto b = std::tie(found[i].peak, found[i].rc);
          dominated = (found[j].peak <= found[i].peak && found[j].rc <= found[i].rc &&
                       a != b) ||
                      (a == b && j < i);
        }
      }
      if (!dominated) keep.push_back(found[i]);
    }
    std::sort(keep.begin(), keep.end(), [](const Choice& a, const Choice& b) {
      return std::tie(a.times, a.peak, a.rc) < std::tie(b.times, b.peak, b.rc);
    });
    // Distinct time vectors, each with its options.
    std::vector<std::vector<Choice>> vectors;
    for (auto& ch : keep) {
      if (vectors.empty() || vectors.back().front().times != ch.times) vectors.emplace_back();
      vectors.back().push_back(std::move(ch));
    }
    combos *= static_cast<std::int64_t>(vectors.size());
    if (combos > 256) return false;
    per_device[d] = std::move(vectors);
  }
  // Odometer over the devices' time vectors; for each combination, the
  // least max peak M, then per device the fewest recomputed within M.
  std::vector<size_t> idx(p, 0);
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
        chosen_[c * p + d] = pick->pts[c];
        rtime_[c * p + d] = pick->times[c];
      }
    }
    Candidate cand;
    SimulateChosen(split, &cand);
    Offer(std::move(cand));
    int d = 0;
    while (d < p && ++idx[d] == per_device[d].size()) idx[d++] = 0;
    if (d == p) break;
  }
  return true;
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
    sc.forward_transient = fx.workspace;
    sc.backward_transient = fx.workspace + q.remat;
    sc.output_bytes = fx.output;
    sc.num_layers = split[s];
    sc.num_recomputed = q.recomputed;
    recomputed += q.recomputed;
    // Per-layer modes: within each group of identical layers, the first
    // n_1 layers take option 1, the next n_2 option 2, and so on; the rest
    // keep everything (like Megatron's "block" method: the first N layers).
    const Menu& menu = rc_.GetMenu(first, first + split[s]);
    for (size_t g = 0; g < menu.groups.size(); ++g) {
      const Group& grp = menu.groups[g];
      size_t li = 0;
      for (size_t x = 1; x <= grp.options.size(); ++x) {
        for (int n = 0; n < q.counts[menu.offsets[g] + x]; ++n, ++li) {
          st.recompute[grp.layers[li]] = static_cast<std::uint8_t>(x);
        }
      }
    }
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

void Searcher::SimulateChosen(const std::vector<int>& split, Candidate* out) {
  Strategy st;
  int recomputed = 0;
  BuildChosen(split, work_spec_, st, recomputed);
  ++evaluations;
  SimOptions so;
  so.record_ops = false;
  engine_.RunInto(work_spec_, cp_.c.program, so, sim_);
  ToCandidate(std::move(st), recomputed, sim_, out);
}

void Searcher::RunBatch(std::vector<BatchSlot>& batch) {
  evaluations += static_cast<std::int64_t>(batch.size());
  SimOptions so;
  so.record_ops = false;
  const int threads = std::max(1, std::min<int>(cp_.opt.threads, static_cast<int>(batch.size())));
  // Below a few thousand ops a run takes microseconds: threads cost more.
  if (threads == 1 || cp_.c.program.total_ops() < 4096) {
    for (BatchSlot& slot : batch) engine_.RunInto(slot.spec, cp_.c.program, so, slot.sim);
    return;
  }
  if (static_cast<int>(batch_engines_.size()) < threads) batch_engines_.resize(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t]() {
      for (size_t k = t; k < batch.size(); k += threads) {
        batch_engines_[t].RunInto(batch[k].spec, cp_.c.program, so, batch[k].sim);
      }
    });
  }
  for (auto& th : pool) th.join();
}

}  // namespace ppb::search_detail

