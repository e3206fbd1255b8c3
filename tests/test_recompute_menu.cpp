// The recompute menus' Pareto filter (search/recompute_menu.h): the sweep
// with Fenwick trees must keep exactly what comparing each point with every
// point kept before it keeps, in the same order, counts included (ties in
// every cost are common: small random integers). The menu of k identical
// layers with two modes is checked against its closed form.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "search/recompute_menu.h"

namespace ppb::search_detail {
namespace {

std::vector<MenuPoint> QuadraticFilter(std::vector<MenuPoint> pts) {
  std::sort(pts.begin(), pts.end(), [](const MenuPoint& a, const MenuPoint& b) {
    return std::tie(a.time, a.stash, a.held, a.remat, a.recomputed, a.counts) <
           std::tie(b.time, b.stash, b.held, b.remat, b.recomputed, b.counts);
  });
  std::vector<MenuPoint> out;
  for (auto& p : pts) {
    bool dominated = false;
    for (const auto& q : out) dominated = dominated || Dominates(q, p);
    if (!dominated) out.push_back(p);
  }
  return out;
}

TEST_CASE("ParetoFilter keeps what the pairwise check keeps", "[search][menu]") {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = static_cast<int>(rng() % 200);
    const int range = 1 + static_cast<int>(rng() % 6);
    std::vector<MenuPoint> pts(n);
    for (auto& p : pts) {
      p.stash = static_cast<Bytes>(rng() % range);
      p.remat = static_cast<Bytes>(rng() % range);
      p.time = static_cast<Nanos>(rng() % range);
      p.recomputed = static_cast<int>(rng() % range);
      // Past MenuCounts::kInline entries the counts live on the heap.
      p.counts.assign(seed % 2 == 0 ? 2 : MenuCounts::kInline + 3, 0);
      p.counts[0] = static_cast<MenuCounts::Count>(rng() % 3);
      p.counts[1] = static_cast<MenuCounts::Count>(rng() % 3);
    }
    const std::vector<MenuPoint> want = QuadraticFilter(pts);
    ParetoFilter(pts);
    INFO("seed " << seed << ", n " << n << ", range " << range);
    REQUIRE(pts.size() == want.size());
    for (size_t i = 0; i < pts.size(); ++i) {
      CHECK(std::tie(pts[i].time, pts[i].stash, pts[i].remat, pts[i].recomputed, pts[i].counts) ==
            std::tie(want[i].time, want[i].stash, want[i].remat, want[i].recomputed,
                     want[i].counts));
    }
  }
}

TEST_CASE("ParetoFilter with held-after-I bytes keeps what the pairwise check keeps",
          "[search][menu][zb]") {
  // Held bytes (at most the stash) are a fifth dimension: a point with
  // more stash but less held after I is kept.
  int kept_by_held = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = static_cast<int>(rng() % 200);
    const int range = 1 + static_cast<int>(rng() % 6);
    std::vector<MenuPoint> pts(n);
    for (auto& p : pts) {
      p.stash = static_cast<Bytes>(rng() % range);
      p.held = static_cast<Bytes>(rng() % (p.stash + 1));
      p.remat = static_cast<Bytes>(rng() % range);
      p.time = static_cast<Nanos>(rng() % range);
      p.recomputed = static_cast<int>(rng() % range);
      p.counts.assign(2, 0);
      p.counts[0] = static_cast<MenuCounts::Count>(rng() % 3);
    }
    const std::vector<MenuPoint> want = QuadraticFilter(pts);
    std::vector<MenuPoint> no_held = pts;
    for (auto& p : no_held) p.held = p.stash;
    ParetoFilter(no_held);
    REQUIRE(ParetoFilter(pts) == Filtered::kExact);
    INFO("seed " << seed << ", n " << n << ", range " << range);
    REQUIRE(pts.size() == want.size());
    kept_by_held += pts.size() > no_held.size();
    for (size_t i = 0; i < pts.size(); ++i) {
      CHECK(std::tie(pts[i].time, pts[i].stash, pts[i].held, pts[i].remat, pts[i].recomputed,
                     pts[i].counts) == std::tie(want[i].time, want[i].stash, want[i].held,
                                                want[i].remat, want[i].recomputed,
                                                want[i].counts));
    }
  }
  CHECK(kept_by_held >= 50);
}

TEST_CASE("A menu's held bytes: a recomputed layer holds after I at most its stash",
          "[search][menu][zb]") {
  // activation 100, of which 30 held after I; "full" keeps 10: held 10.
  Layer dec;
  dec.forward = 10;
  dec.activation = 100;
  dec.activation_after_input_grad = 30;
  dec.recompute = {RecomputeOption{"full", 10, 7}};
  const std::vector<Layer> layers(3, dec);
  const Menu menu = BuildMenu(layers, 0, 3);
  REQUIRE(menu.points.size() == 4);
  for (int r = 0; r <= 3; ++r) {
    CHECK(menu.points[r].stash == 100 * (3 - r) + 10 * r);
    CHECK(menu.points[r].held == 30 * (3 - r) + 10 * r);
  }
  CHECK(menu.min_held == 30);
  // A layer that differs only in what it holds after I is not the same.
  Layer other = dec;
  other.activation_after_input_grad = 40;
  CHECK(!SameCosts(dec, other));
}

TEST_CASE("The menu of k identical layers with one mode is k + 1 points", "[search][menu]") {
  // Recomputing one more layer saves (activation - kept) bytes for `extra`
  // time: every count 0..k is Pareto-optimal, sorted by time. k = 300: the
  // counts (once bytes) hold more than 255 layers.
  Layer dec;
  dec.forward = 10;
  dec.backward_input = 20;
  dec.activation = 100;
  dec.recompute = {RecomputeOption{"full", 10, 7}};
  const int k = 300;
  const std::vector<Layer> layers(k, dec);
  const Menu menu = BuildMenu(layers, 0, k);
  REQUIRE(menu.points.size() == static_cast<size_t>(k + 1));
  for (int r = 0; r <= k; ++r) {
    CHECK(menu.points[r].time == 7 * r);
    CHECK(menu.points[r].stash == 100 * (k - r) + 10 * r);
    CHECK(menu.points[r].recomputed == r);
    CHECK(menu.points[r].counts[menu.offsets[0]] == static_cast<MenuCounts::Count>(k - r));
    CHECK(menu.points[r].counts[menu.offsets[0] + 1] == static_cast<MenuCounts::Count>(r));
  }
  CHECK(menu.min_stash == 10 * k);
  CHECK_FALSE(menu.truncated);
}

TEST_CASE("LargestIdenticalGroup finds the first layer of the largest group", "[search][menu]") {
  // Against counting every pair: random layers drawn from a few values of
  // each cost SameLayer compares, so groups of equal size are common.
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const int L = 1 + static_cast<int>(rng() % 40);
    std::vector<Layer> layers(L);
    for (Layer& l : layers) {
      l.forward = static_cast<Nanos>(rng() % 2);
      l.backward_input = static_cast<Nanos>(rng() % 2);
      l.static_memory = static_cast<Bytes>(rng() % 2);
      l.activation = static_cast<Bytes>(rng() % 2);
      if (rng() % 2) {
        l.recompute = {RecomputeOption{"full", static_cast<Bytes>(rng() % 2),
                                       static_cast<Nanos>(rng() % 2)}};
      }
    }
    int rep = 0, count = 0;
    for (int i = 0; i < L; ++i) {
      int cnt = 0;
      for (int j = 0; j < L; ++j) cnt += SameLayer(layers[i], layers[j]);
      if (cnt > count) {
        count = cnt;
        rep = i;
      }
    }
    INFO("seed " << seed);
    CHECK(LargestIdenticalGroup(layers) == std::pair<int, int>(rep, count));
  }
}

}  // namespace
}  // namespace ppb::search_detail
