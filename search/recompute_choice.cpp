// The recompute choice of one schedule choice's splits (see
// recompute_choice.h for the contract).
#include "search/recompute_choice.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/cost.h"

namespace ppb::search_detail {

const Menu& RecomputeChoice::GetMenu(int i, int j, int* shift) {
  const std::uint64_t key = static_cast<std::uint64_t>(i) * (cp_.c.L + 1) + j;
  auto it = menus_.find(key);
  if (it == menus_.end()) {
    const std::vector<Layer>& layers = cp_.pb.layers;
    const RecomputeSetting* setting = cp_.opt.setting ? &*cp_.opt.setting : nullptr;
    if (setting != nullptr && setting->kind != RecomputeSetting::Kind::Free) {
      // A framework's setting depends on where the range lies (layers
      // pinned at the ends, the first N of a stage): a menu per range.
      auto own =
          ranged_.emplace(key, Shape{i, BuildMenu(layers, i, j, setting, cp_.opt.deadline)})
              .first;
      if (own->second.menu.truncated) menus_truncated_ = true;
      it = menus_.emplace(key, RangeMenu{&own->second, 0}).first;
    } else {
      if (menu_class_.empty()) {
        // BuildMenu reads a layer's activation, what it holds after I and
        // its recompute options (name, retained activation, extra time) and
        // nothing else.
        using Costs = std::tuple<Bytes, Bytes, std::vector<std::tuple<std::string, Bytes, Nanos>>>;
        std::map<Costs, std::int32_t> ids;
        menu_class_.reserve(layers.size());
        for (const Layer& l : layers) {
          Costs c{l.activation, l.HeldAfterInputGrad(l.activation), {}};
          for (const RecomputeOption& o : l.recompute) {
            std::get<2>(c).emplace_back(o.name, o.retained_activation, o.extra_time);
          }
          menu_class_.push_back(
              ids.emplace(std::move(c), static_cast<std::int32_t>(ids.size())).first->second);
        }
      }
      std::vector<std::int32_t> seq(menu_class_.begin() + i, menu_class_.begin() + j);
      auto sh = shapes_.find(seq);
      if (sh == shapes_.end()) {
        sh = shapes_
                 .emplace(std::move(seq),
                          Shape{i, BuildMenu(layers, i, j, setting, cp_.opt.deadline)})
                 .first;
        if (sh->second.menu.truncated) menus_truncated_ = true;
      }
      it = menus_.emplace(key, RangeMenu{&sh->second, i - sh->second.first}).first;
    }
  }
  if (shift != nullptr) *shift = it->second.shift;
  return it->second.shape->menu;
}

Bytes RecomputeChoice::DevicePeakLowerBound(int d, int assigned, const std::vector<int>& split,
                                            const std::vector<int>& first_layer,
                                            const std::vector<StageFixed>& fixed) {
  std::vector<Bytes> stash(cp_.c.v, 0), held(cp_.c.v, 0), remat(cp_.c.v, 0), ws(cp_.c.v, 0);
  Bytes stat = 0;
  for (int c = 0; c < cp_.c.v; ++c) {
    const int s = StageOf(cp_.c.spec.placement, cp_.c.p, c, d);
    if (s >= assigned) continue;
    const int i = first_layer[s], j = i + split[s];
    const Menu& menu = GetMenu(i, j);
    stash[c] = menu.min_stash;
    held[c] = menu.min_held;
    remat[c] = menu.min_remat;
    ws[c] = fixed[s].workspace;
    stat += fixed[s].static_mem;
  }
  Bytes best = stat;
  for (const Moment& mo : cp_.c.profile->moments[d]) {
    Bytes x = stat;
    for (int c = 0; c < cp_.c.v; ++c) {
      x += static_cast<Bytes>(mo.counts[c]) * stash[c] + static_cast<Bytes>(mo.held[c]) * held[c];
    }
    const int c = mo.chunk;
    x += mo.forward ? stash[c] + ws[c] : ws[c] + remat[c];
    best = std::max(best, x);
  }
  return best;
}

// Walks one menu point per chunk of device d (each menu sorted by time) and
// calls leaf(points, total scaled time, peak) for every combination that
// fits `cap`. A chunk's loop stops once the running time passes limit()
// (the caller's best so far); a partial choice whose memory floor (the
// remaining chunks at their least stash) does not fit is skipped. Every
// step spends one unit of `budget`; false once it has run out.
bool WalkFits(
    const ChoiceProblem& cp, int d, const std::vector<const Menu*>& menus,
    const std::vector<const StageFixed*>& fxp, Bytes cap, std::int64_t& budget,
    const std::function<Nanos()>& limit,
    const std::function<void(const std::vector<const MenuPoint*>&, Nanos, Bytes)>& leaf) {
  const int v = static_cast<int>(menus.size());
  const double speed = cp.pb.cluster.devices[d].speed;
  std::vector<MenuPoint> floor_pts(v);
  for (int c = 0; c < v; ++c) {
    floor_pts[c].stash = menus[c]->min_stash;
    floor_pts[c].held = menus[c]->min_held;
    floor_pts[c].remat = menus[c]->min_remat;
  }
  std::vector<const MenuPoint*> cur(v);
  std::function<void(int, Nanos)> rec = [&](int c, Nanos t) {
    if (--budget < 0) return;
    if (c == v) {
      const Bytes peak = cp.DevicePeak(d, fxp, cur);
      if (peak <= cap) leaf(cur, t, peak);
      return;
    }
    for (const MenuPoint& q : menus[c]->points) {
      const Nanos t2 = t + ScaleTime(q.time, speed);
      if (t2 > limit()) break;  // sorted by time
      cur[c] = &q;
      for (int r = c + 1; r < v; ++r) cur[r] = &floor_pts[r];
      if (cp.DevicePeak(d, fxp, cur) > cap) continue;
      rec(c + 1, t2);
    }
  };
  rec(0, 0);
  return budget >= 0;
}

// Least total recompute time (scaled) of device d's chunks such that the
// device fits in memory: an exact search over the chunks' menus (sorted by
// time) with memory pruning from each chunk's least stash. Returns -1 when
// nothing fits. `pts` gets the chosen point per chunk. `exact` is cleared
// when that choice is not provably the best for the makespan: with several
// chunks, the least total is not necessarily the best per-chunk vector (only
// an all-zero choice dominates every other), or the search ran out of budget.
Nanos RecomputeChoice::DeviceRecompute(int d, const std::vector<int>& first,
                                       const std::vector<int>& split,
                                       const std::vector<StageFixed>& fx,
                                       std::vector<const MenuPoint*>& pts,
                                       bool& exact, Bytes cap_limit,
                                       bool fewest_recomputed) {
  const Bytes cap = cap_limit >= 0 ? std::min(cap_limit, cp_.c.spec.device_capacity[d])
                                   : cp_.c.spec.device_capacity[d];
  // The answer depends only on the device and its chunks' layer ranges (the
  // output size does not enter memory): memoize, the tree revisits them.
  std::vector<std::int32_t> key;
  key.reserve(2 * cp_.c.v + 4);
  key.push_back(d);
  key.push_back(static_cast<std::int32_t>(cap >> 32));
  key.push_back(static_cast<std::int32_t>(cap & 0xffffffff));
  key.push_back(fewest_recomputed ? 1 : 0);
  for (int c = 0; c < cp_.c.v; ++c) {
    const int s = StageOf(cp_.c.spec.placement, cp_.c.p, c, d);
    key.push_back(first[s]);
    key.push_back(split[s]);
  }
  if (auto it = recompute_memo_.find(key); it != recompute_memo_.end()) {
    pts = it->second.pts;
    exact = exact && it->second.exact;
    return it->second.time;
  }
  std::vector<const Menu*> menus(cp_.c.v);
  std::vector<const StageFixed*> fxp(cp_.c.v);
  for (int c = 0; c < cp_.c.v; ++c) {
    const int s = StageOf(cp_.c.spec.placement, cp_.c.p, c, d);
    menus[c] = &GetMenu(first[s], first[s] + split[s]);
    fxp[c] = &fx[s];
  }
  pts.clear();
  Nanos best_time = kInf;
  Bytes best_peak = 0;
  int best_rc = 0;
  std::int64_t budget = 200000;
  WalkFits(cp_, d, menus, fxp, cap, budget, [&] { return best_time; },
           [&](const std::vector<const MenuPoint*>& cur, Nanos t, Bytes peak) {
             int rc = 0;
             for (auto* q : cur) rc += q->recomputed;
             const bool better =
                 fewest_recomputed
                     ? std::tie(t, rc, peak) < std::tie(best_time, best_rc, best_peak)
                     : std::tie(t, peak, rc) < std::tie(best_time, best_peak, best_rc);
             if (pts.empty() || better) {
               best_time = t;
               best_peak = peak;
               best_rc = rc;
               pts = cur;
             }
           });
  bool my_exact = budget >= 0;
  if (cp_.c.v > 1 && !pts.empty() && best_time > 0) my_exact = false;
  for (int c = 0; c < cp_.c.v && !pts.empty(); ++c) {
    if (menus[c]->truncated && (cp_.c.v > 1 || pts[c]->time > menus[c]->exact_up_to)) {
      my_exact = false;
    }
  }
  const Nanos result = pts.empty() ? -1 : best_time;
  recompute_memo_.emplace(std::move(key), RecomputeMemo{result, pts, my_exact});
  exact = exact && my_exact;
  return result;
}

// Per-split data every recompute enumeration needs.
void RecomputeChoice::SplitLayout(const std::vector<int>& split, std::vector<int>& first,
                                  std::vector<StageFixed>& fx) const {
  const int S = cp_.c.S;
  first.assign(S, 0);
  for (int s = 1; s < S; ++s) first[s] = first[s - 1] + split[s - 1];
  fx.assign(S, StageFixed{});
  Bytes prev = 0;
  for (int s = 0; s < S; ++s) {
    fx[s] = cp_.Fixed(s, first[s], first[s] + split[s], prev);
    prev = fx[s].output;
  }
}

// Every recompute choice of device d (one menu point per chunk) that fits
// its memory, or false when there are more than `budget` to look at.
bool RecomputeChoice::EnumerateDevice(int d, const std::vector<int>& first,
                                      const std::vector<int>& split,
                                      const std::vector<StageFixed>& fx,
                                      std::vector<DeviceChoice>& found) {
  const int p = cp_.c.p, v = cp_.c.v;
  const double speed = cp_.pb.cluster.devices[d].speed;
  const Bytes cap = cp_.c.spec.device_capacity[d];
  std::vector<const Menu*> menus(v);
  std::vector<const StageFixed*> fxp(v);
  for (int c = 0; c < v; ++c) {
    const int s = StageOf(cp_.c.spec.placement, p, c, d);
    menus[c] = &GetMenu(first[s], first[s] + split[s]);
    fxp[c] = &fx[s];
    if (menus[c]->truncated) return false;
  }
  found.clear();
  std::int64_t budget = 20000;
  return WalkFits(cp_, d, menus, fxp, cap, budget, [] { return kInf; },
                  [&](const std::vector<const MenuPoint*>& cur, Nanos, Bytes peak) {
                    DeviceChoice ch;
                    ch.peak = peak;
                    for (int x = 0; x < v; ++x) {
                      ch.times.push_back(ScaleTime(cur[x]->time, speed));
                      ch.total += ch.times.back();
                      ch.rc += cur[x]->recomputed;
                    }
                    ch.pts = cur;
                    found.push_back(std::move(ch));
                  });
}

std::vector<std::vector<DeviceChoice>> TimeVectors(std::vector<DeviceChoice> found, int v) {
  // Keep Pareto-minimal time vectors (timing depends on nothing else); for
  // each, all (peak, recomputed) options that are Pareto-minimal.
  std::vector<DeviceChoice> keep;
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
        dominated = (found[j].peak <= found[i].peak && found[j].rc <= found[i].rc && a != b) ||
                    (a == b && j < i);
      }
    }
    if (!dominated) keep.push_back(found[i]);
  }
  std::sort(keep.begin(), keep.end(), [](const DeviceChoice& a, const DeviceChoice& b) {
    return std::tie(a.times, a.peak, a.rc) < std::tie(b.times, b.peak, b.rc);
  });
  std::vector<std::vector<DeviceChoice>> vectors;
  for (auto& ch : keep) {
    if (vectors.empty() || vectors.back().front().times != ch.times) vectors.emplace_back();
    vectors.back().push_back(std::move(ch));
  }
  return vectors;
}

}  // namespace ppb::search_detail
