// Recompute menus and fronts (see recompute_menu.h for the contract).
#include "search/recompute_menu.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>

#include "core/strategy.h"
#include "search/context.h"

namespace ppb::search_detail {

bool Dominates(const MenuPoint& a, const MenuPoint& b) {
  return a.stash <= b.stash && a.held <= b.held && a.remat <= b.remat && a.time <= b.time &&
         a.recomputed <= b.recomputed;
}

namespace {

// The exact filter with held bytes as a fifth dimension: sorted as below,
// a point is kept when no kept point dominates it. False once `budget`
// comparisons are spent (the rest is then left to the four-dimension
// filter).
bool ParetoFilterHeld(std::vector<MenuPoint>& pts, std::int64_t budget) {
  std::vector<MenuPoint> out;
  for (size_t i = 0; i < pts.size(); ++i) {
    bool dominated = false;
    for (const MenuPoint& k : out) {
      if (--budget < 0) return false;
      if (Dominates(k, pts[i])) {
        dominated = true;
        break;
      }
    }
    if (!dominated) out.push_back(pts[i]);
  }
  pts = std::move(out);
  return true;
}

}  // namespace

// Sorted by (time, stash, remat, recomputed, counts), a point is kept when
// no point kept before it dominates it; every earlier point is no slower, so
// that asks for a kept point with stash, remat and recomputed each at most
// the point's own. A Fenwick tree over remat ranks, each node a Fenwick tree
// over the recomputed counts seen there (built offline), holds the least
// stash of the kept points: O(n log^2 n) where comparing with every kept
// point was O(n^2) (the menu of 2,000 identical layers has ~10^6 points).
Filtered ParetoFilter(std::vector<MenuPoint>& pts, Clock::time_point deadline) {
  const bool timed = deadline != Clock::time_point::max();
  if (timed && Clock::now() >= deadline) return Filtered::kCut;
  std::sort(pts.begin(), pts.end(), [](const MenuPoint& a, const MenuPoint& b) {
    return std::tie(a.time, a.stash, a.held, a.remat, a.recomputed, a.counts) <
           std::tie(b.time, b.stash, b.held, b.remat, b.recomputed, b.counts);
  });
  // Held bytes below the stash somewhere: a fifth dimension.
  bool release = false;
  for (const auto& p : pts) release = release || p.held != p.stash;
  if (release && ParetoFilterHeld(pts, std::int64_t{1} << 27)) return Filtered::kExact;
  std::vector<Bytes> remats;
  remats.reserve(pts.size());
  for (const auto& p : pts) remats.push_back(p.remat);
  std::sort(remats.begin(), remats.end());
  remats.erase(std::unique(remats.begin(), remats.end()), remats.end());
  const int R = static_cast<int>(remats.size());
  auto rank = [&](Bytes r) {  // 1-based
    return static_cast<int>(std::lower_bound(remats.begin(), remats.end(), r) - remats.begin()) + 1;
  };
  std::vector<std::vector<int>> keys(R + 1);
  for (const auto& p : pts) {
    for (int i = rank(p.remat); i <= R; i += i & -i) keys[i].push_back(p.recomputed);
  }
  std::vector<std::vector<Bytes>> least(R + 1);
  for (int i = 1; i <= R; ++i) {
    std::sort(keys[i].begin(), keys[i].end());
    keys[i].erase(std::unique(keys[i].begin(), keys[i].end()), keys[i].end());
    least[i].assign(keys[i].size(), std::numeric_limits<Bytes>::max());
  }
  if (timed && Clock::now() >= deadline) return Filtered::kCut;
  std::vector<MenuPoint> out;
  size_t seen = 0;
  for (auto& p : pts) {
    if (timed && ++seen % 4096 == 0 && Clock::now() >= deadline) return Filtered::kCut;
    const int r = rank(p.remat);
    Bytes best = std::numeric_limits<Bytes>::max();
    for (int i = r; i > 0 && best > p.stash; i -= i & -i) {
      const auto& k = keys[i];
      int j = static_cast<int>(std::upper_bound(k.begin(), k.end(), p.recomputed) - k.begin());
      for (; j > 0; j -= j & -j) best = std::min(best, least[i][j - 1]);
    }
    if (best <= p.stash) continue;  // dominated by a kept point
    for (int i = r; i <= R; i += i & -i) {
      const auto& k = keys[i];
      const int n = static_cast<int>(k.size());
      int j = static_cast<int>(std::lower_bound(k.begin(), k.end(), p.recomputed) - k.begin()) + 1;
      for (; j <= n; j += j & -j) least[i][j - 1] = std::min(least[i][j - 1], p.stash);
    }
    out.push_back(std::move(p));
  }
  pts = std::move(out);
  return release ? Filtered::kHeldIgnored : Filtered::kExact;
}

bool SameCosts(const Layer& a, const Layer& b) {
  if (a.activation != b.activation || a.recompute.size() != b.recompute.size() ||
      a.activation_after_input_grad.value_or(a.activation) !=
          b.activation_after_input_grad.value_or(b.activation)) {
    return false;
  }
  for (size_t k = 0; k < a.recompute.size(); ++k) {
    if (a.recompute[k].retained_activation != b.recompute[k].retained_activation ||
        a.recompute[k].extra_time != b.recompute[k].extra_time) {
      return false;
    }
  }
  return true;
}

bool SameLayer(const Layer& a, const Layer& b) {
  return a.forward == b.forward && a.backward_input == b.backward_input &&
         a.backward_weight == b.backward_weight && a.static_memory == b.static_memory &&
         SameCosts(a, b);
}

namespace {

// The menu BuildMenu gives when cut at its deadline: per group, every layer
// at the allowed mode of least stash (then time), and every layer at the
// allowed mode of least time (then stash); both are real choices.
void CutMenu(Menu& menu, int total_opts) {
  MenuPoint least, fastest;
  least.counts.assign(total_opts, 0);
  fastest.counts.assign(total_opts, 0);
  for (size_t gi = 0; gi < menu.groups.size(); ++gi) {
    const Group& g = menu.groups[gi];
    const int k = static_cast<int>(g.layers.size());
    auto stash_of = [&](int x) { return x == 0 ? g.activation : g.options[x - 1].retained_activation; };
    auto time_of = [&](int x) { return x == 0 ? Nanos{0} : g.options[x - 1].extra_time; };
    int xs = g.allowed.front(), xt = g.allowed.front();
    for (int x : g.allowed) {
      if (std::make_pair(stash_of(x), time_of(x)) < std::make_pair(stash_of(xs), time_of(xs))) xs = x;
      if (std::make_pair(time_of(x), stash_of(x)) < std::make_pair(time_of(xt), stash_of(xt))) xt = x;
    }
    for (auto [pt, x] : {std::make_pair(&least, xs), std::make_pair(&fastest, xt)}) {
      pt->counts[menu.offsets[gi] + x] = static_cast<MenuCounts::Count>(k);
      pt->stash += static_cast<Bytes>(k) * stash_of(x);
      // What a layer holds after I, as BuildMenu counts it.
      pt->held += static_cast<Bytes>(k) * std::min(g.after_input_grad, stash_of(x));
      pt->time += static_cast<Nanos>(k) * time_of(x);
      if (x > 0) {
        pt->recomputed += k;
        pt->remat = std::max(pt->remat, g.activation - stash_of(x));
      }
    }
  }
  std::vector<MenuPoint> pts{fastest, least};
  ParetoFilter(pts);  // two points, no deadline: never cut
  menu.points = std::move(pts);
  menu.truncated = true;
  menu.cut = true;
  menu.exact_up_to = -1;
}

}  // namespace

Menu BuildMenu(const std::vector<Layer>& layers, int i, int j, const RecomputeSetting* setting,
               Clock::time_point deadline) {
  Menu menu;
  const bool restricted = setting != nullptr && setting->kind != RecomputeSetting::Kind::Free;
  for (int l = i; l < j; ++l) {
    std::vector<std::uint8_t> allowed;
    if (restricted) {
      allowed = AllowedModes(*setting, layers, i, j, l);
    } else {
      for (size_t x = 0; x <= layers[l].recompute.size(); ++x) {
        allowed.push_back(static_cast<std::uint8_t>(x));
      }
    }
    bool placed = false;
    for (auto& g : menu.groups) {
      if (SameCosts(layers[g.layers.front()], layers[l]) && g.allowed == allowed) {
        g.layers.push_back(l);
        placed = true;
        break;
      }
    }
    if (!placed) {
      Group g;
      g.layers = {l};
      g.activation = layers[l].activation;
      g.after_input_grad = layers[l].activation_after_input_grad.value_or(layers[l].activation);
      g.options = layers[l].recompute;
      g.allowed = std::move(allowed);
      menu.groups.push_back(std::move(g));
    }
  }
  // A restriction that couples groups (MindFormers' nested lists over
  // layers of different costs) is checked on whole stages: partial points
  // are then not Pareto-filtered (a dominated one may be the one allowed).
  // So is MindFormers' rule with one free group beside a layer that
  // cannot be recomputed (not the embedding, head or MTP, which the lists
  // skip): that layer ends every list there (StageAllowed), which a
  // per-group filter cannot see (it would keep a recompute of the free
  // group that dominates, and drop the none that is allowed).
  int free_groups = 0;
  for (const auto& g : menu.groups) free_groups += g.allowed.size() > 1 ? 1 : 0;
  bool blocker = false;
  if (restricted && setting->kind == RecomputeSetting::Kind::Lists && free_groups == 1) {
    const Pinned pin = PinnedLayers(layers);
    const int n = static_cast<int>(layers.size());
    for (const auto& g : menu.groups) {
      for (int l : g.layers) {
        blocker = blocker || (g.allowed.size() == 1 && l >= pin.lead && l < n - pin.tail);
      }
    }
  }
  const bool whole_stage = restricted && (free_groups > 1 || blocker);
  int total_opts = 0;
  for (const auto& g : menu.groups) {
    menu.offsets.push_back(total_opts);
    total_opts += static_cast<int>(g.options.size()) + 1;
  }
  // Past the deadline: the shortcut menu (CutMenu), unless whole stages
  // are checked.
  const bool timed = deadline != Clock::time_point::max() && !whole_stage;
  bool cut = false;
  auto past = [&]() { return cut = cut || (timed && Clock::now() >= deadline); };
  size_t emitted = 0;
  MenuPoint base;
  base.counts.assign(total_opts, 0);
  std::vector<MenuPoint> acc{base};
  for (size_t gi = 0; gi < menu.groups.size() && !past(); ++gi) {
    const Group& g = menu.groups[gi];
    const int k = static_cast<int>(g.layers.size());
    const int o = static_cast<int>(g.options.size());
    // All count vectors (n_0 .. n_o) with sum k for this group.
    std::vector<MenuPoint> local;
    std::vector<int> n(o + 1, 0);
    auto emit = [&]() {
      if (timed && ++emitted % 4096 == 0) past();
      for (int x = 0; x <= o; ++x) {
        if (n[x] > 0 && std::find(g.allowed.begin(), g.allowed.end(), x) == g.allowed.end()) {
          return;
        }
      }
      if (restricted && setting->kind == RecomputeSetting::Kind::Lists) {
        // MindFormers: one select list past the layers in both (the group's
        // layers take ModeOrder, so that is the only way to break nesting).
        int sel = 0, comm = 0;
        for (int x = 1; x <= o; ++x) {
          sel += g.options[x - 1].name == "selective" ? n[x] : 0;
          comm += g.options[x - 1].name == "select_comm" ? n[x] : 0;
        }
        if (sel > 0 && comm > 0) return;
      }
      MenuPoint p;
      p.counts.assign(total_opts, 0);
      for (int x = 0; x <= o; ++x) {
        p.counts[menu.offsets[gi] + x] = static_cast<MenuCounts::Count>(n[x]);
      }
      p.stash = static_cast<Bytes>(n[0]) * g.activation;
      p.held = static_cast<Bytes>(n[0]) * std::min(g.after_input_grad, g.activation);
      for (int x = 1; x <= o; ++x) {
        const RecomputeOption& opt = g.options[x - 1];
        p.stash += static_cast<Bytes>(n[x]) * opt.retained_activation;
        // A recomputed layer holds after I at most what it stashed (as
        // Lower() counts it).
        p.held += static_cast<Bytes>(n[x]) *
                  std::min(g.after_input_grad, opt.retained_activation);
        p.time += static_cast<Nanos>(n[x]) * opt.extra_time;
        p.recomputed += n[x];
        if (n[x] > 0) p.remat = std::max(p.remat, g.activation - opt.retained_activation);
      }
      local.push_back(std::move(p));
    };
    // Enumerate compositions of k into o+1 parts.
    std::function<void(int, int)> rec = [&](int x, int left) {
      if (x == o) {
        n[o] = left;
        emit();
        return;
      }
      for (int c = left; c >= 0 && !cut; --c) {
        n[x] = c;
        rec(x + 1, left - c);
      }
    };
    rec(0, k);
    // False past the deadline (the menu is then cut); a filter past its
    // comparison budget may drop a point only its held bytes kept, which
    // leaves the menu truncated with nothing proved.
    auto filter = [&](std::vector<MenuPoint>& v) {
      const Filtered f = ParetoFilter(v, timed ? deadline : Clock::time_point::max());
      if (f == Filtered::kHeldIgnored) {
        menu.truncated = true;
        menu.exact_up_to = -1;
      }
      if (f == Filtered::kCut) cut = true;
      return !cut;
    };
    if (cut || (!whole_stage && !filter(local))) {
      cut = true;
      break;
    }
    // The first group's points are already filtered (the base adds nothing).
    const bool filtered = gi == 0 && !whole_stage;
    std::vector<MenuPoint> next;
    next.reserve(acc.size() * local.size());
    for (const auto& a : acc) {
      for (const auto& b : local) {
        MenuPoint p = a;
        p.stash += b.stash;
        p.held += b.held;
        p.remat = std::max(p.remat, b.remat);
        p.time += b.time;
        p.recomputed += b.recomputed;
        for (int x = 0; x <= o; ++x) {
          p.counts[menu.offsets[gi] + x] = b.counts[menu.offsets[gi] + x];
        }
        next.push_back(std::move(p));
      }
    }
    if (whole_stage && gi + 1 == menu.groups.size()) {
      // Keep the points whose whole stage is allowed.
      std::vector<MenuPoint> kept;
      std::vector<std::uint8_t> rc(layers.size(), 0);
      for (auto& q : next) {
        AssignModes(menu, q, rc);
        if (StageAllowed(*setting, layers, i, j, rc)) kept.push_back(std::move(q));
      }
      next = std::move(kept);
    }
    if (!whole_stage || gi + 1 == menu.groups.size() || next.size() > kMaxWholeStagePoints) {
      if (whole_stage && gi + 1 < menu.groups.size()) {
        menu.truncated = true;  // too many to check whole: nothing proved
        menu.exact_up_to = -1;
      }
      if (!filtered && !filter(next)) break;
    }
    if (next.size() > kMaxMenuPoints && (!whole_stage || gi + 1 == menu.groups.size())) {
      // Sorted by time: keep the fastest, and the least stash (which makes
      // memory feasibility checks exact) at the end.
      auto least = std::min_element(next.begin(), next.end(),
                                    [](const MenuPoint& a, const MenuPoint& b) {
                                      return std::tie(a.stash, a.remat, a.time) <
                                             std::tie(b.stash, b.remat, b.time);
                                    });
      MenuPoint keep = *least;
      auto least_held = std::min_element(next.begin(), next.end(),
                                         [](const MenuPoint& a, const MenuPoint& b) {
                                           return std::tie(a.held, a.stash, a.remat, a.time) <
                                                  std::tie(b.held, b.stash, b.remat, b.time);
                                         });
      MenuPoint keep_held = *least_held;
      menu.exact_up_to = std::min(menu.exact_up_to, next[kMaxMenuPoints - 3].time);
      next.resize(kMaxMenuPoints - 2);
      next.push_back(std::move(keep));
      next.push_back(std::move(keep_held));
      if (!filter(next)) break;
      menu.truncated = true;
    }
    acc = std::move(next);
  }
  if (cut) {
    CutMenu(menu, total_opts);
  } else {
    menu.points = std::move(acc);
  }
  menu.min_stash = kInf;
  menu.min_held = kInf;
  menu.min_remat = kInf;
  for (const auto& p : menu.points) {
    menu.min_stash = std::min(menu.min_stash, p.stash);
    menu.min_held = std::min(menu.min_held, p.held);
    menu.min_remat = std::min(menu.min_remat, p.remat);
  }
  return menu;
}

void AssignModes(const Menu& menu, const MenuPoint& q, std::vector<std::uint8_t>& rc, int shift) {
  for (size_t g = 0; g < menu.groups.size(); ++g) {
    const Group& grp = menu.groups[g];
    const int base = menu.offsets[g];
    size_t li = 0;
    for (size_t x : ModeOrder(grp.options)) {
      for (int n = 0; n < q.counts[base + static_cast<int>(x)]; ++n, ++li) {
        rc[grp.layers[li] + shift] = static_cast<std::uint8_t>(x);
      }
    }
    for (; li < grp.layers.size(); ++li) rc[grp.layers[li] + shift] = 0;
  }
}

// Sorting by every cost SameLayer compares puts identical layers side by
// side: O(L log L), where comparing every pair took minutes at 10^5 layers.
// The representative is the first layer of the largest group (of the group
// whose first layer comes first, among groups as large).
std::pair<int, int> LargestIdenticalGroup(const std::vector<Layer>& layers) {
  const int L = static_cast<int>(layers.size());
  auto key = [&](int i) {
    const Layer& l = layers[i];
    return std::tie(l.forward, l.backward_input, l.backward_weight, l.static_memory,
                    l.activation);
  };
  auto less = [&](int a, int b) {
    if (key(a) != key(b)) return key(a) < key(b);
    const auto& ra = layers[a].recompute;
    const auto& rb = layers[b].recompute;
    if (ra.size() != rb.size()) return ra.size() < rb.size();
    for (size_t k = 0; k < ra.size(); ++k) {
      const auto x = std::tie(ra[k].retained_activation, ra[k].extra_time);
      const auto y = std::tie(rb[k].retained_activation, rb[k].extra_time);
      if (x != y) return x < y;
    }
    return a < b;  // a group's first layer first
  };
  std::vector<int> order(L);
  for (int i = 0; i < L; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), less);
  int rep = 0, count = 0;
  for (int a = 0; a < L;) {
    int b = a + 1;
    while (b < L && SameLayer(layers[order[a]], layers[order[b]])) ++b;
    if (b - a > count || (b - a == count && order[a] < rep)) {
      count = b - a;
      rep = order[a];
    }
    a = b;
  }
  return {rep, count};
}
std::vector<std::pair<Bytes, Nanos>> StackRecomputeFront(const Layer& dec, int k) {
  const auto& opts = dec.recompute;
  std::vector<std::pair<Bytes, Nanos>> v;
  if (opts.empty()) {
    v.emplace_back(static_cast<Bytes>(k) * dec.activation, 0);
  } else if (opts.size() > 2) {
    Bytes least = dec.activation;
    for (const auto& o : opts) least = std::min(least, o.retained_activation);
    v.emplace_back(static_cast<Bytes>(k) * least, 0);
  } else {
    const int o2 = static_cast<int>(opts.size());
    for (int a = 0; a <= k; ++a) {
      for (int b = 0; b <= (o2 == 2 ? k - a : 0); ++b) {
        const int none = k - a - b;
        Bytes st = static_cast<Bytes>(none) * dec.activation +
                   static_cast<Bytes>(a) * opts[0].retained_activation;
        Nanos t = static_cast<Nanos>(a) * opts[0].extra_time;
        if (o2 == 2) {
          st += static_cast<Bytes>(b) * opts[1].retained_activation;
          t += static_cast<Nanos>(b) * opts[1].extra_time;
        }
        v.emplace_back(st, t);
      }
    }
  }
  std::sort(v.begin(), v.end());
  std::vector<std::pair<Bytes, Nanos>> front;
  for (const auto& x : v) {
    if (front.empty() || x.second < front.back().second) front.push_back(x);
  }
  return front;
}

}  // namespace ppb::search_detail
