// Internal to search/: the recompute choice of one schedule choice's splits
// (recompute_choice.cpp), the part of the search that knows the menus.
//
// Contract: peaks come from ChoiceProblem::DevicePeak (the engine's peak of
// a device for given menu points, exact from the memory profile);
// DevicePeakLowerBound never exceeds the peak of any completion of a
// partial split. WalkFits visits, while its budget lasts, every
// combination of menu points that fits and is not slower than its limit
// (chunk menus sorted by time, memory floors pruned). DeviceRecompute
// picks a device's least recompute time that fits its memory (then the
// least peak, then the fewest recomputed layers; memoized per device,
// capacity and layer ranges) and says (`exact`) whether that choice is
// provably best for the makespan. Menus are cached per layer range; the
// references and pointers into them stay valid for the object's life. A
// range whose layers BuildMenu cannot tell from those of a range already
// built (same recompute costs and option names, layer by layer) shares
// that menu: the same menu BuildMenu would build except that its groups'
// layer indexes are those of the range built, `shift` layers earlier
// (GetMenu's out-parameter; layer l of a group is layer l + shift here).
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "search/context.h"
#include "search/recompute_menu.h"

namespace ppb::search_detail {

// Walks one menu point per chunk of device d (each menu sorted by time) and
// calls leaf(points, total scaled time, peak) for every combination that
// fits `cap`.
bool WalkFits(const ChoiceProblem& cp, int d, const std::vector<const Menu*>& menus,
              const std::vector<const StageFixed*>& fxp, Bytes cap, std::int64_t& budget,
              const std::function<Nanos()>& limit,
              const std::function<void(const std::vector<const MenuPoint*>&, Nanos, Bytes)>&
                  leaf);

// One recompute choice of a device that fits (EnumerateDevice).
struct DeviceChoice {
  std::vector<Nanos> times;  // per chunk, scaled
  Nanos total = 0;
  Bytes peak = 0;
  int rc = 0;
  std::vector<const MenuPoint*> pts;
};

// A device's choices grouped by their per-chunk time vectors: only the
// Pareto-minimal vectors (no other is as fast in every chunk and faster in
// one), each with its options Pareto-minimal in (peak, recomputed layers);
// vectors in lexicographic order, options by (peak, recomputed).
std::vector<std::vector<DeviceChoice>> TimeVectors(std::vector<DeviceChoice> found, int v);
// Per device, its TimeVectors.
using DeviceVectors = std::vector<std::vector<std::vector<DeviceChoice>>>;

class RecomputeChoice {
 public:
  explicit RecomputeChoice(const ChoiceProblem& cp) : cp_(cp) {}

  // The menu of layers [i, j) (built once per sequence of layers); its
  // groups' layer l is layer l + *shift of [i, j) (see the contract).
  const Menu& GetMenu(int i, int j, int* shift = nullptr);
  // Whether some menu was truncated (its choices are then not all proved).
  bool truncated() const { return menus_truncated_; }

  // Lower bound on device d's peak from the chunks assigned so far (others
  // empty), using each chunk's least stash and re-materialization.
  Bytes DevicePeakLowerBound(int d, int assigned_stages, const std::vector<int>& split,
                             const std::vector<int>& first_layer,
                             const std::vector<StageFixed>& fixed);
  Nanos DeviceRecompute(int d, const std::vector<int>& first,
                        const std::vector<int>& split,
                        const std::vector<StageFixed>& fx,
                        std::vector<const MenuPoint*>& pts, bool& exact,
                        Bytes cap_limit = -1, bool fewest_recomputed = false);
  // Per-split data every recompute enumeration needs.
  void SplitLayout(const std::vector<int>& split, std::vector<int>& first,
                   std::vector<StageFixed>& fx) const;
  bool EnumerateDevice(int d, const std::vector<int>& first,
                       const std::vector<int>& split,
                       const std::vector<StageFixed>& fx,
                       std::vector<DeviceChoice>& found);

 private:
  const ChoiceProblem& cp_;
  bool menus_truncated_ = false;
  // Per layer, an id equal for layers BuildMenu cannot tell apart (filled
  // on first use); per sequence of ids, the menu of the first range built.
  std::vector<std::int32_t> menu_class_;
  struct Shape {
    int first = 0;  // the first layer of the range built
    Menu menu;
  };
  struct RangeMenu {
    const Shape* shape;  // into shapes_ (stable nodes)
    int shift;
  };
  std::unordered_map<std::uint64_t, RangeMenu> menus_;
  struct RecomputeMemo {
    Nanos time;
    std::vector<const MenuPoint*> pts;  // point into menus_ (stable nodes)
    bool exact;
  };
  struct KeyHash {
    size_t operator()(const std::vector<std::int32_t>& k) const {
      std::uint64_t h = 1469598103934665603ULL;
      for (std::int32_t x : k) h = (h ^ static_cast<std::uint32_t>(x)) * 1099511628211ULL;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::vector<std::int32_t>, RecomputeMemo, KeyHash> recompute_memo_;
  std::unordered_map<std::vector<std::int32_t>, Shape, KeyHash> shapes_;
  // Under a framework's restricted setting: one menu per range (by key).
  std::unordered_map<std::uint64_t, Shape> ranged_;
};

}  // namespace ppb::search_detail
