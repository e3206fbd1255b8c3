// Internal to search/: recompute menus and the identical-layer relaxations.
//
// Contract: BuildMenu(layers, i, j) is the Pareto set ("menu") of the
// recompute choices of layers [i, j) over (stash per micro-batch, what of
// it is held after I, largest re-materialized activation, recompute time,
// recomputed layers); layers
// with identical costs are grouped and only counts per mode enumerated.
// Every choice is dominated by (or equal to) a menu point unless the menu
// is truncated, and then every choice of time <= exact_up_to still is.
// The least-stash point is always kept, so memory feasibility checks
// against a menu are exact. Points are sorted by time, then stash.
//
// LargestIdenticalGroup and StackRecomputeFront serve the relaxations over
// the largest group of identical layers ("decoders"); a front may err only
// towards less recompute, which keeps every bound built on it valid.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "search/deployable.h"
#include "search/search.h"

namespace ppb::search_detail {

// ---------------------------------------------------------------------------
// Menus: Pareto-optimal recompute choices of one layer range.

// The per (group, option) counts of a menu point (up to the 100,000 layers
// a model may have), inline up to kInline entries and on the heap past
// that: the menus of a search hold millions of points, and a heap block
// each cost as much to free as to build.
class MenuCounts {
 public:
  using Count = std::int32_t;
  static constexpr size_t kInline = 8;
  void assign(size_t n, Count value) {
    n_ = n;
    if (n > kInline) {
      heap_.assign(n, value);
    } else {
      heap_.clear();
      std::fill(inline_.begin(), inline_.begin() + static_cast<std::ptrdiff_t>(n), value);
    }
  }
  size_t size() const { return n_; }
  Count& operator[](size_t i) { return data()[i]; }
  Count operator[](size_t i) const { return data()[i]; }
  const Count* begin() const { return data(); }
  const Count* end() const { return data() + n_; }
  friend bool operator<(const MenuCounts& a, const MenuCounts& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const MenuCounts& a, const MenuCounts& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  Count* data() { return n_ > kInline ? heap_.data() : inline_.data(); }
  const Count* data() const { return n_ > kInline ? heap_.data() : inline_.data(); }
  size_t n_ = 0;
  std::array<Count, kInline> inline_{};
  std::vector<Count> heap_;
};

struct MenuPoint {
  Bytes stash = 0;       // per micro-batch
  Bytes held = 0;        // of it, still held after I (Layer::HeldAfterInputGrad)
  Bytes remat = 0;       // largest activation re-materialized by recompute
  Nanos time = 0;        // recompute time on a speed-1.0 device
  int recomputed = 0;    // layers recomputed
  MenuCounts counts;  // per (group, option) count, flattened
};

struct Group {
  std::vector<int> layers;  // indexes, in order
  Bytes activation = 0;
  Bytes after_input_grad = 0;  // Layer::activation_after_input_grad (or activation)
  std::vector<RecomputeOption> options;
  // The options (0 = none) the group's layers may take under the search's
  // target (deployable.h); every option when it has none.
  std::vector<std::uint8_t> allowed;
};

// Most points a menu keeps; past it the cheapest-time points and the
// least-stash point are kept and the menu is marked truncated (the search
// then no longer claims a proof).
constexpr size_t kMaxMenuPoints = 1024;
// Most partial points kept unfiltered while a restriction couples groups
// (BuildMenu); past it they are Pareto-filtered and the menu is truncated.
constexpr size_t kMaxWholeStagePoints = 1 << 16;

struct Menu {
  bool truncated = false;
  bool cut = false;  // stopped at the deadline (BuildMenu): a shortcut menu
  // Every recompute choice of time <= exact_up_to is in `points` (dropped
  // points are slower): a choice at or below it is provably the fastest.
  Nanos exact_up_to = std::numeric_limits<Nanos>::max();
  std::vector<Group> groups;
  std::vector<int> offsets;       // offset of group g's counts in counts
  std::vector<MenuPoint> points;  // Pareto set, sorted by time then stash
  Bytes min_stash = 0, min_held = 0, min_remat = 0;
};

bool Dominates(const MenuPoint& a, const MenuPoint& b);
// Keeps the points no other point dominates (stash, held, remat, time,
// recomputed). When some point holds less after I than its stash (a layer
// frees part of it at I), the held bytes are a fifth dimension, checked
// against the kept points one by one within a budget of comparisons; past
// it the filter ignores them (a point may then be dropped that only its
// held bytes kept) and answers kHeldIgnored, which the menu reports as
// truncated with nothing proved. Past `deadline` (looked at every 4096
// points) it stops and answers kCut: `pts` is then to be discarded.
enum class Filtered { kExact, kHeldIgnored, kCut };
Filtered ParetoFilter(std::vector<MenuPoint>& pts,
                      std::chrono::steady_clock::time_point deadline =
                          std::chrono::steady_clock::time_point::max());
bool SameCosts(const Layer& a, const Layer& b);
// Identical in every cost the search uses: such layers are interchangeable.
bool SameLayer(const Layer& a, const Layer& b);
// With `setting` (search.target), only the recompute choices it allows
// for a stage holding layers [i, j) (AllowedModes, StageAllowed) are in
// the menu; each layer then takes its group's modes in ModeOrder.
// Past `deadline` (a stage of n identical layers with two modes has
// ~n^2/2 choices: 3 million and seconds at n = 2,500) the enumeration
// stops and the menu is cut: truncated, exact_up_to -1, holding only the
// least-stash and the fastest choices (so min_stash and min_remat stay
// exact and every bound built on the menu valid); not when a restriction
// couples groups (whole stages are checked: no shortcut is known allowed).
Menu BuildMenu(const std::vector<Layer>& layers, int i, int j,
               const RecomputeSetting* setting = nullptr,
               std::chrono::steady_clock::time_point deadline =
                   std::chrono::steady_clock::time_point::max());
// The per-layer modes (rc[l + shift], l in the menu's layers) of menu point
// q: each group's layers take its counts in ModeOrder (deployable.h).
void AssignModes(const Menu& menu, const MenuPoint& q, std::vector<std::uint8_t>& rc,
                 int shift = 0);

// ---------------------------------------------------------------------------
// Relaxations over the largest group of identical layers ("decoders").

// A representative of the largest group of identical layers, and its size.
std::pair<int, int> LargestIdenticalGroup(const std::vector<Layer>& layers);

// The Pareto points (stash per micro-batch, recompute time), stash up and
// time down, of k copies of `dec` (at most two recompute modes enumerated;
// with more, recompute is taken as free at the least stash, which keeps a
// bound valid).
std::vector<std::pair<Bytes, Nanos>> StackRecomputeFront(const Layer& dec, int k);

}  // namespace ppb::search_detail
