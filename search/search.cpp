// The strategy search (see search.h for the contract).
//
// Shape of the search, per schedule choice (schedule, v, g):
//   1. The program depends only on (p, v, m, g): generate it once, and derive
//      each device's memory profile from it (MemoryProfile): memory changes
//      only at the device's own op boundaries, in program order, so a
//      device's simulated peak is max over its ops of a linear function of
//      its stages' stash sizes plus a transient - no timing needed.
//   2. For a stage holding layers [i, j), the recompute choices that can
//      matter form a Pareto set ("menu") over (stash per micro-batch, largest
//      re-materialized activation, recompute time, recomputed layers); layers
//      with identical costs are grouped and only counts per mode enumerated.
//   3. Depth-first branch-and-bound over the layer count of stages 0, 1, ...,
//      S-1. Each child gets a valid lower bound on the simulated makespan
//      (LowerBound below); children are explored best bound first; a child
//      whose bound cannot beat the K-th best candidate is pruned. Leaves pick
//      each device's recompute exactly (v = 1: the cheapest feasible menu
//      point; v > 1: a small exact search for the least total recompute) and
//      are simulated by the engine.
//   4. Heuristic incumbents first (even split, work-balanced split) polished
//      by local search (boundary moves, seeded random restarts).
//
// Lower bound (valid for any program in which a device runs its ops one at a
// time and every op waits for its inputs): device d's first op is an F of its
// lowest stage d, which needs the forward chain of stages 0..d-1 first
// (head_d); its last op is a B of stage d, after which the backward chain of
// stages d-1..0 still has to run (tail_d); in between it does all its own
// work. So T >= head_d + work_d + tail_d for every d. Messages add at least
// latency + bytes/bandwidth to every chain hop between devices. Layers not yet
// assigned add their work to the devices that still have open stages
// (water-filling relaxation). For uniform stages this bound equals the closed
// forms of GPipe/1F1B and interleaved 1F1B (Narayanan et al., SC'21, 2.2),
// which is why the search closes quickly on balanced instances.
#include "search/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <tuple>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <random>
#include <thread>
#include <unordered_map>

#include "core/cost.h"
#include "core/validate.h"
#include "search/lp.h"

namespace ppb {
namespace {

using Clock = std::chrono::steady_clock;
constexpr Nanos kInf = std::numeric_limits<Nanos>::max() / 4;



// ---------------------------------------------------------------------------
// Memory profile: for each device, the distinct "moments" of its program.
// A moment is (stash counts per chunk before the op, the op's chunk, whether
// it is an F). Memory at that moment, as the engine computes it:
//   static + sum_c n_c * stash_c + (F ? stash_op + fwd_transient_op
//                                     : bwd_transient_op).
struct Moment {
  std::vector<int> counts;  // size v
  int chunk = 0;
  bool forward = false;
  bool operator<(const Moment& o) const {
    return std::tie(chunk, forward, counts) <
           std::tie(o.chunk, o.forward, o.counts);
  }
};

struct MemoryProfile {
  int v = 1;
  std::vector<std::vector<Moment>> moments;  // [device]
};

MemoryProfile BuildProfile(const PipelineSpec& spec, const Program& program) {
  MemoryProfile prof;
  prof.v = spec.v;
  prof.moments.resize(spec.p);
  for (int d = 0; d < spec.p; ++d) {
    std::vector<int> counts(spec.v, 0);
    std::vector<Moment> all;
    for (const Op& op : program.ops[d]) {
      const int c = op.stage.value / spec.p;
      all.push_back(Moment{counts, c, op.kind == OpKind::F});
      if (op.kind == OpKind::F) ++counts[c];
      if (op.kind == OpKind::B || op.kind == OpKind::W) --counts[c];
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end(),
                          [](const Moment& a, const Moment& b) {
                            return !(a < b) && !(b < a);
                          }),
              all.end());
    // Drop moments dominated by another of the same chunk and kind.
    std::vector<Moment> keep;
    for (size_t i = 0; i < all.size(); ++i) {
      bool dominated = false;
      for (size_t j = 0; j < all.size() && !dominated; ++j) {
        if (i == j || all[j].chunk != all[i].chunk ||
            all[j].forward != all[i].forward) {
          continue;
        }
        bool ge = true, gt = false;
        for (int c = 0; c < spec.v; ++c) {
          if (all[j].counts[c] < all[i].counts[c]) ge = false;
          if (all[j].counts[c] > all[i].counts[c]) gt = true;
        }
        dominated = ge && gt;
      }
      if (!dominated) keep.push_back(all[i]);
    }
    prof.moments[d] = std::move(keep);
  }
  return prof;
}

// ---------------------------------------------------------------------------
// Menus: Pareto-optimal recompute choices of one layer range.
struct MenuPoint {
  Bytes stash = 0;       // per micro-batch
  Bytes remat = 0;       // largest activation re-materialized by recompute
  Nanos time = 0;        // recompute time on a speed-1.0 device
  int recomputed = 0;    // layers recomputed
  std::vector<std::uint8_t> counts;  // per (group, option) count, flattened
};

struct Group {
  std::vector<int> layers;  // indexes, in order
  Bytes activation = 0;
  std::vector<RecomputeOption> options;
};

// Most points a menu keeps; past it the cheapest-time points and the
// least-stash point are kept and the menu is marked truncated (the search
// then no longer claims a proof).
constexpr size_t kMaxMenuPoints = 1024;

struct Menu {
  bool truncated = false;
  // Every recompute choice of time <= exact_up_to is in `points` (dropped
  // points are slower): a choice at or below it is provably the fastest.
  Nanos exact_up_to = std::numeric_limits<Nanos>::max();
  std::vector<Group> groups;
  std::vector<int> offsets;       // offset of group g's counts in counts
  std::vector<MenuPoint> points;  // Pareto set, sorted by time then stash
  Bytes min_stash = 0, min_remat = 0;
};

bool Dominates(const MenuPoint& a, const MenuPoint& b) {
  return a.stash <= b.stash && a.remat <= b.remat && a.time <= b.time &&
         a.recomputed <= b.recomputed;
}

void ParetoFilter(std::vector<MenuPoint>& pts) {
  std::sort(pts.begin(), pts.end(), [](const MenuPoint& a, const MenuPoint& b) {
    return std::tie(a.time, a.stash, a.remat, a.recomputed, a.counts) <
           std::tie(b.time, b.stash, b.remat, b.recomputed, b.counts);
  });
  std::vector<MenuPoint> out;
  for (auto& p : pts) {
    bool dom = false;
    for (const auto& q : out) {
      if (Dominates(q, p)) {
        dom = true;
        break;
      }
    }
    if (!dom) out.push_back(std::move(p));
  }
  pts = std::move(out);
}

bool SameCosts(const Layer& a, const Layer& b) {
  if (a.activation != b.activation || a.recompute.size() != b.recompute.size()) {
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

// Identical in every cost the search uses: such layers are interchangeable.
bool SameLayer(const Layer& a, const Layer& b) {
  return a.forward == b.forward && a.backward_input == b.backward_input &&
         a.backward_weight == b.backward_weight && a.static_memory == b.static_memory &&
         SameCosts(a, b);
}

Menu BuildMenu(const std::vector<Layer>& layers, int i, int j) {
  Menu menu;
  for (int l = i; l < j; ++l) {
    if (layers[l].recompute.empty()) {
      menu.min_stash += 0;  // accounted below with the fixed part
    }
    bool placed = false;
    for (auto& g : menu.groups) {
      if (SameCosts(layers[g.layers.front()], layers[l])) {
        g.layers.push_back(l);
        placed = true;
        break;
      }
    }
    if (!placed) {
      Group g;
      g.layers = {l};
      g.activation = layers[l].activation;
      g.options = layers[l].recompute;
      menu.groups.push_back(std::move(g));
    }
  }
  int total_opts = 0;
  for (const auto& g : menu.groups) {
    menu.offsets.push_back(total_opts);
    total_opts += static_cast<int>(g.options.size()) + 1;
  }
  MenuPoint base;
  base.counts.assign(total_opts, 0);
  std::vector<MenuPoint> acc{base};
  for (size_t gi = 0; gi < menu.groups.size(); ++gi) {
    const Group& g = menu.groups[gi];
    const int k = static_cast<int>(g.layers.size());
    const int o = static_cast<int>(g.options.size());
    // All count vectors (n_0 .. n_o) with sum k for this group.
    std::vector<MenuPoint> local;
    std::vector<int> n(o + 1, 0);
    auto emit = [&]() {
      MenuPoint p;
      p.counts.assign(total_opts, 0);
      for (int x = 0; x <= o; ++x) {
        p.counts[menu.offsets[gi] + x] = static_cast<std::uint8_t>(n[x]);
      }
      p.stash = static_cast<Bytes>(n[0]) * g.activation;
      for (int x = 1; x <= o; ++x) {
        const RecomputeOption& opt = g.options[x - 1];
        p.stash += static_cast<Bytes>(n[x]) * opt.retained_activation;
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
      for (int c = left; c >= 0; --c) {
        n[x] = c;
        rec(x + 1, left - c);
      }
    };
    rec(0, k);
    ParetoFilter(local);
    std::vector<MenuPoint> next;
    next.reserve(acc.size() * local.size());
    for (const auto& a : acc) {
      for (const auto& b : local) {
        MenuPoint p = a;
        p.stash += b.stash;
        p.remat = std::max(p.remat, b.remat);
        p.time += b.time;
        p.recomputed += b.recomputed;
        for (int x = 0; x <= o; ++x) {
          p.counts[menu.offsets[gi] + x] = b.counts[menu.offsets[gi] + x];
        }
        next.push_back(std::move(p));
      }
    }
    ParetoFilter(next);
    if (next.size() > kMaxMenuPoints) {
      // Sorted by time: keep the fastest, and the least stash (which makes
      // memory feasibility checks exact) at the end.
      auto least = std::min_element(next.begin(), next.end(),
                                    [](const MenuPoint& a, const MenuPoint& b) {
                                      return std::tie(a.stash, a.remat, a.time) <
                                             std::tie(b.stash, b.remat, b.time);
                                    });
      MenuPoint keep = *least;
      menu.exact_up_to = std::min(menu.exact_up_to, next[kMaxMenuPoints - 2].time);
      next.resize(kMaxMenuPoints - 1);
      next.push_back(std::move(keep));
      ParetoFilter(next);
      menu.truncated = true;
    }
    acc = std::move(next);
  }
  menu.points = std::move(acc);
  menu.min_stash = kInf;
  menu.min_remat = kInf;
  for (const auto& p : menu.points) {
    menu.min_stash = std::min(menu.min_stash, p.stash);
    menu.min_remat = std::min(menu.min_remat, p.remat);
  }
  return menu;
}

// ---------------------------------------------------------------------------
// Relaxations over the largest group of identical layers ("decoders").

// A representative of the largest group of identical layers, and its size.
std::pair<int, int> LargestIdenticalGroup(const std::vector<Layer>& layers) {
  const int L = static_cast<int>(layers.size());
  int rep = 0, count = 0;
  for (int i = 0; i < L; ++i) {
    int cnt = 0;
    for (int j = 0; j < L; ++j) cnt += SameLayer(layers[i], layers[j]);
    if (cnt > count) {
      count = cnt;
      rep = i;
    }
  }
  return {rep, count};
}

// The Pareto points (stash per micro-batch, recompute time), stash up and
// time down, of k copies of `dec` (at most two recompute modes enumerated;
// with more, recompute is taken as free at the least stash, which keeps a
// bound valid).
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

// ---------------------------------------------------------------------------
// The top list (best first, at most top_k distinct strategies), kept by the
// split search and by the placement search alike.

// Adds a feasible candidate unless top_k better ones are there; one entry
// per (choice, device order, split), the better kept. True when it became
// the best.
bool OfferTop(std::vector<Candidate>& top, Candidate c, int top_k) {
  if (!c.feasible) return false;
  for (auto it = top.begin(); it != top.end(); ++it) {
    if (it->choice == c.choice && it->placement == c.placement &&
        it->strategy.layers_per_stage == c.strategy.layers_per_stage) {
      if (!Better(c, *it)) return false;
      top.erase(it);
      break;
    }
  }
  const int k = std::max(1, top_k);
  auto it = std::lower_bound(top.begin(), top.end(), c, Better);
  if (static_cast<int>(it - top.begin()) >= k) return false;
  const bool improves = it == top.begin();
  top.insert(it, std::move(c));
  if (static_cast<int>(top.size()) > k) top.pop_back();
  return improves;
}

// Whether a progress report is due (forced, or `interval` seconds after
// the last one); records the time when it is.
bool ReportDue(bool force, double interval, Clock::time_point& last) {
  const auto now = Clock::now();
  if (!force && std::chrono::duration<double>(now - last).count() < interval) return false;
  last = now;
  return true;
}

// A bound a subtree must not exceed to be explored: the K-th best time
// once the list is full, and never above `cutoff` (-1: none).
Nanos TopThreshold(const std::vector<Candidate>& top, int top_k, Nanos cutoff) {
  const Nanos cut = cutoff >= 0 ? cutoff : kInf;
  if (static_cast<int>(top.size()) < std::max(1, top_k)) return cut;
  return std::min(cut, top.back().makespan);
}

// ---------------------------------------------------------------------------
// Per-choice search state.

struct ChoiceContext {
  int index = 0;
  ScheduleChoice choice;
  int p = 1, v = 1, m = 1, S = 1, L = 0;
  Program program;
  PipelineSpec spec;  // template: shape, placement, links, capacities
  MemoryProfile profile;
};

// What a stage costs on its device with the cheapest-memory recompute, and
// the fixed parts that do not depend on recompute.
struct StageFixed {
  Nanos f = 0, bi = 0, bw = 0;  // scaled to the device
  Bytes static_mem = 0;
  Bytes workspace = 0;
  Bytes output = 0;
};

class Searcher {
 public:
  Searcher(const SearchProblem& problem, const SearchOptions& options,
           ChoiceContext ctx)
      : pb_(problem), opt_(options), c_(std::move(ctx)) {
    const int L = c_.L;
    pf_.assign(L + 1, 0);
    pbi_.assign(L + 1, 0);
    pbw_.assign(L + 1, 0);
    pst_.assign(L + 1, 0);
    for (int l = 0; l < L; ++l) {
      pf_[l + 1] = pf_[l] + pb_.layers[l].forward;
      pbi_[l + 1] = pbi_[l] + pb_.layers[l].backward_input;
      pbw_[l + 1] = pbw_[l] + pb_.layers[l].backward_weight;
      pst_[l + 1] = pst_[l] + pb_.layers[l].static_memory;
    }
    max_speed_ = 0;
    for (const auto& d : pb_.cluster.devices) max_speed_ = std::max(max_speed_, d.speed);
    start_ = Clock::now();
  }

  // Runs heuristics, local search and branch-and-bound.
  void Run();

  // Whether some split fits every device's memory (any recompute); the
  // split found goes to *split. Depth-first with memory pruning only.
  bool AnyFeasibleSplit(std::vector<int>* split);

  bool ChooseRecompute(const std::vector<int>& split, bool& exact,
                       int* failed_device = nullptr);

  std::vector<Candidate> top;  // sorted by Better, distinct strategies
  Nanos pending_bound = kInf;  // min bound of what was left unexplored
  bool closed = false;
  bool limit_hit = false;
  std::string stop_reason;
  std::int64_t nodes = 0, evaluations = 0;
  std::vector<std::pair<double, Nanos>> incumbents;  // (s, makespan)

  // The bound Run() starts its tree search from (valid for every split of
  // this choice on this cluster), without searching.
  Nanos RootOnly() {
    Prepare();
    return pending_bound;
  }
  // A path through the program's dependency graph: its length is
  // sum_s (a[s] * F_s + b[s] * B_s) + c for stage times F_s, B_s.
  struct Path {
    std::vector<double> a, b;
    double c = 0;
  };
  // Paths (as PathOf gives them) shared by searchers of one program on
  // clusters with the same links: TotalsPathBound starts from them and adds
  // the ones it generates.
  void SharePaths(std::vector<Path>* pool) { path_pool_ = pool; }
  // RootBound's recompute fronts of k decoders, k = 0..D, shared by
  // searchers of one problem (same layers).
  void ShareFronts(std::vector<std::vector<std::pair<Bytes, Nanos>>>* fronts) { fronts_ = fronts; }
  // RootBound's least recompute per (rank, capacity), for k = 0..D, shared
  // by searchers of one problem and schedule choice.
  using RecomputeRows = std::map<std::pair<int, Bytes>, std::vector<Nanos>>;
  void ShareRecompute(RecomputeRows* rows) { rt_cache_ = rows; }
  // The root bound raised by the open-tree bound for strategies that can
  // beat `best` (kInf: no split exists at all).
  Nanos RootAndTotals(Nanos best) {
    if (!Prepare(false)) return kInf;
    return std::max(pending_bound, TotalsPathBound(best));
  }

 private:
  // Prefix sums and the root bound (pending_bound); false when no split
  // exists at all (closed then).
  bool Prepare(bool path_weights = true);
  const Menu& GetMenu(int i, int j) {
    const std::uint64_t key = static_cast<std::uint64_t>(i) * (c_.L + 1) + j;
    auto it = menus_.find(key);
    if (it != menus_.end()) return it->second;
    const Menu& menu = menus_.emplace(key, BuildMenu(pb_.layers, i, j)).first->second;
    if (menu.truncated) menus_truncated_ = true;
    return menu;
  }

  StageFixed Fixed(int s, int i, int j, Bytes prev_output) const {
    const double speed = pb_.cluster.devices[s % c_.p].speed;
    StageFixed x;
    x.f = ScaleTime(pf_[j] - pf_[i], speed);
    x.bi = ScaleTime(pbi_[j] - pbi_[i], speed);
    x.bw = ScaleTime(pbw_[j] - pbw_[i], speed);
    x.static_mem = pst_[j] - pst_[i];
    for (int l = i; l < j; ++l) x.workspace = std::max(x.workspace, pb_.layers[l].workspace);
    x.output = j > i ? pb_.layers[j - 1].output_bytes : prev_output;
    return x;
  }

  Nanos CommFwd(int s, Bytes bytes) const {
    if (s + 1 >= c_.S) return 0;
    const int a = s % c_.p, b = (s + 1) % c_.p;
    if (a == b) return 0;
    const Link& l = c_.spec.link(DeviceId(a), DeviceId(b));
    return l.latency + LinkOccupancy(bytes, l.bandwidth);
  }
  Nanos CommBwd(int s, Bytes bytes) const {  // gradient from s+1 to s
    if (s + 1 >= c_.S) return 0;
    const int a = (s + 1) % c_.p, b = s % c_.p;
    if (a == b) return 0;
    const Link& l = c_.spec.link(DeviceId(a), DeviceId(b));
    return l.latency + LinkOccupancy(bytes, l.bandwidth);
  }

  // Peak memory of device d for menu points pts[c] (one per chunk) of stages
  // with the given fixed parts.
  Bytes DevicePeak(int d, const std::vector<const StageFixed*>& fx,
                   const std::vector<const MenuPoint*>& pts) const {
    Bytes stat = 0;
    for (int c = 0; c < c_.v; ++c) stat += fx[c]->static_mem;
    Bytes best = stat;
    for (const Moment& mo : c_.profile.moments[d]) {
      Bytes x = stat;
      for (int c = 0; c < c_.v; ++c) x += static_cast<Bytes>(mo.counts[c]) * pts[c]->stash;
      const int c = mo.chunk;
      x += mo.forward ? pts[c]->stash + fx[c]->workspace
                      : fx[c]->workspace + pts[c]->remat;
      best = std::max(best, x);
    }
    return best;
  }

  // Lower bound on device d's peak from the chunks assigned so far (others
  // empty), using each chunk's least stash and re-materialization.
  Bytes DevicePeakLowerBound(int d, int assigned_stages) const;

  // Picks the recompute of every device for a full split. Returns false if
  // some device cannot fit. Fills chosen_[s] and rtime_[s] (scaled).
  bool WalkFits(int d, const std::vector<const Menu*>& menus,
                const std::vector<const StageFixed*>& fxp, Bytes cap, std::int64_t& budget,
                const std::function<Nanos()>& limit,
                const std::function<void(const std::vector<const MenuPoint*>&, Nanos, Bytes)>&
                    leaf) const;
  Nanos DeviceRecompute(int d, const std::vector<int>& first,
                        const std::vector<int>& split,
                        const std::vector<StageFixed>& fx,
                        std::vector<const MenuPoint*>& pts, bool& exact,
                        Bytes cap_limit = -1, bool fewest_recomputed = false);

  // Full evaluation of a split: recompute choice + simulation. Returns
  // false when infeasible in memory.
  bool EvaluateSplit(const std::vector<int>& split, Candidate* out, bool& exact);
  void SimulateChosen(const std::vector<int>& split, Candidate* out);
  struct BatchSlot {
    std::vector<int> split;
    PipelineSpec spec;
    Strategy strategy;
    int recomputed = 0;
    SimResult sim;
  };
  // Simulates every slot (on opt_.threads threads when the runs are big
  // enough to pay for them).
  void RunBatch(std::vector<BatchSlot>& batch);
  std::vector<Engine> batch_engines_;
  void BuildChosen(const std::vector<int>& split, PipelineSpec& spec, Strategy& st,
                   int& recomputed);
  void ToCandidate(Strategy st, int recomputed, const SimResult& sim, Candidate* out) const;
  bool ExhaustLeaf(const std::vector<int>& split);
  struct DeviceChoice {
    std::vector<Nanos> times;  // per chunk, scaled
    Nanos total = 0;
    Bytes peak = 0;
    int rc = 0;
    std::vector<const MenuPoint*> pts;
  };
  void SplitLayout(const std::vector<int>& split, std::vector<int>& first,
                   std::vector<StageFixed>& fx) const;
  bool EnumerateDevice(int d, const std::vector<int>& first,
                       const std::vector<int>& split,
                       const std::vector<StageFixed>& fx,
                       std::vector<DeviceChoice>& found);
  void PolishTies(const std::vector<int>& split, Candidate& cand);

  void Offer(Candidate c);
  Nanos PruneThreshold() const;  // bound must be <= this to explore
  bool ShouldPrune(Nanos bound) const;

  void Dfs(int s, int pos);
  bool CheckLimits();
  void Report(bool force);

  Nanos RootBound(std::vector<int>* decoders_per_device, int* decoder_rep);
  std::vector<Path> BuildPaths() const;
  Nanos LeastHop(int a, int b) const;
  Path PathOf(const std::vector<CriticalStep>& steps) const;
  Nanos PathWeights();
  Nanos TotalsPathBound(Nanos best);
  std::vector<Path>* path_pool_ = nullptr;
  std::vector<std::vector<std::pair<Bytes, Nanos>>>* fronts_ = nullptr;
  RecomputeRows* rt_cache_ = nullptr;
  std::vector<int> RelaxedSplit(const std::vector<int>& per_device, int rep) const;
  std::vector<int> SplitFromQuota(const std::vector<int>& quota, int rep) const;
  std::vector<int> ChunkAwareSplit(const std::vector<int>& per_device, int rep);
  std::vector<int> EvenSplit() const;
  std::vector<int> BalancedSplit() const;
  void LocalSearch(std::vector<int> split, std::mt19937_64& rng, int restarts);

  const SearchProblem& pb_;
  const SearchOptions& opt_;
  ChoiceContext c_;
  std::vector<Nanos> pf_, pbi_, pbw_;
  std::vector<Bytes> pst_;
  double max_speed_ = 1.0;
  std::unordered_map<std::uint64_t, Menu> menus_;
  bool menus_truncated_ = false;
  Engine engine_;
  SimResult sim_;
  PipelineSpec work_spec_;
  Clock::time_point start_;
  Clock::time_point last_report_{};

  // DFS state.
  std::vector<int> split_;            // counts of stages assigned so far
  std::vector<int> first_layer_;      // first layer of each stage
  std::vector<StageFixed> fixed_;     // per assigned stage
  std::vector<Nanos> head_, tail_;    // per device (partial sums)
  std::vector<Nanos> work_;           // per device
  Nanos chain_ = 0;                   // one micro-batch through assigned stages
  std::vector<const MenuPoint*> chosen_;  // per stage after ChooseRecompute
  std::vector<Nanos> rtime_;              // per stage, scaled recompute time
  std::vector<Nanos> min_rtime_;          // v=1: least feasible recompute
  std::vector<Nanos> suffix_work_;        // unscaled m-less work of layers >= l
  std::vector<Nanos> level_bounds_;       // pending bound per DFS level
  Nanos root_bound_ = 0;                  // valid for the whole tree
  // RootBound's relaxation, kept for TotalsPathBound: the largest group of
  // identical layers ("decoders") and load[d][k], a lower bound on the
  // makespan when rank d holds k of them (kInf: k cannot fit).
  struct Totals {
    int decoders = 0, rep = 0, free_others = 0;
    bool first_pinned = false, last_pinned = false;
    std::vector<std::vector<Nanos>> load;
    std::vector<std::vector<Nanos>> rt;  // [d][k] least recompute per mb (speed 1), or kInf
  } totals_;
 public:
  Nanos totals_bound = 0;  // TotalsPathBound after the heuristics (0: none)
 private:
  // Path bound (PathWeights): T >= sum_s (pa_[s] f_s + pb_[s] b_s) + pconst_
  // for any allocation; pa_min_[s] / pb_min_[s] = least coefficient per unit
  // of unscaled work over stages >= s (for layers not yet placed).
  std::vector<double> pa_, pbw_coef_, pa_min_, pb_min_;
  double pconst_ = 0, path_acc_ = 0;
  Nanos forced_recompute_ = 0;  // RootBound: least total recompute per mb
  Bytes least_output_ = 0;      // least bytes a stage can send (LeastHop)
  std::vector<Nanos> suffix_f_, suffix_b_;
  std::vector<int> relaxed_per_device_;   // the root relaxation's allocation
  int relaxed_rep_ = 0;
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
};

Bytes Searcher::DevicePeakLowerBound(int d, int assigned) const {
  std::vector<Bytes> stash(c_.v, 0), remat(c_.v, 0), ws(c_.v, 0);
  Bytes stat = 0;
  for (int c = 0; c < c_.v; ++c) {
    const int s = c * c_.p + d;
    if (s >= assigned) continue;
    const int i = first_layer_[s], j = i + split_[s];
    const Menu& menu = const_cast<Searcher*>(this)->GetMenu(i, j);
    stash[c] = menu.min_stash;
    remat[c] = menu.min_remat;
    ws[c] = fixed_[s].workspace;
    stat += fixed_[s].static_mem;
  }
  Bytes best = stat;
  for (const Moment& mo : c_.profile.moments[d]) {
    Bytes x = stat;
    for (int c = 0; c < c_.v; ++c) x += static_cast<Bytes>(mo.counts[c]) * stash[c];
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
bool Searcher::WalkFits(
    int d, const std::vector<const Menu*>& menus, const std::vector<const StageFixed*>& fxp,
    Bytes cap, std::int64_t& budget, const std::function<Nanos()>& limit,
    const std::function<void(const std::vector<const MenuPoint*>&, Nanos, Bytes)>& leaf) const {
  const int v = static_cast<int>(menus.size());
  const double speed = pb_.cluster.devices[d].speed;
  std::vector<MenuPoint> floor_pts(v);
  for (int c = 0; c < v; ++c) {
    floor_pts[c].stash = menus[c]->min_stash;
    floor_pts[c].remat = menus[c]->min_remat;
  }
  std::vector<const MenuPoint*> cur(v);
  std::function<void(int, Nanos)> rec = [&](int c, Nanos t) {
    if (--budget < 0) return;
    if (c == v) {
      const Bytes peak = DevicePeak(d, fxp, cur);
      if (peak <= cap) leaf(cur, t, peak);
      return;
    }
    for (const MenuPoint& q : menus[c]->points) {
      const Nanos t2 = t + ScaleTime(q.time, speed);
      if (t2 > limit()) break;  // sorted by time
      cur[c] = &q;
      for (int r = c + 1; r < v; ++r) cur[r] = &floor_pts[r];
      if (DevicePeak(d, fxp, cur) > cap) continue;
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
Nanos Searcher::DeviceRecompute(int d, const std::vector<int>& first,
                                const std::vector<int>& split,
                                const std::vector<StageFixed>& fx,
                                std::vector<const MenuPoint*>& pts,
                                bool& exact, Bytes cap_limit,
                                bool fewest_recomputed) {
  const Bytes cap = cap_limit >= 0 ? std::min(cap_limit, c_.spec.device_capacity[d])
                                   : c_.spec.device_capacity[d];
  // The answer depends only on the device and its chunks' layer ranges (the
  // output size does not enter memory): memoize, the tree revisits them.
  std::vector<std::int32_t> key;
  key.reserve(2 * c_.v + 4);
  key.push_back(d);
  key.push_back(static_cast<std::int32_t>(cap >> 32));
  key.push_back(static_cast<std::int32_t>(cap & 0xffffffff));
  key.push_back(fewest_recomputed ? 1 : 0);
  for (int c = 0; c < c_.v; ++c) {
    const int s = c * c_.p + d;
    key.push_back(first[s]);
    key.push_back(split[s]);
  }
  if (auto it = recompute_memo_.find(key); it != recompute_memo_.end()) {
    pts = it->second.pts;
    exact = exact && it->second.exact;
    return it->second.time;
  }
  std::vector<const Menu*> menus(c_.v);
  std::vector<const StageFixed*> fxp(c_.v);
  for (int c = 0; c < c_.v; ++c) {
    const int s = c * c_.p + d;
    menus[c] = &GetMenu(first[s], first[s] + split[s]);
    fxp[c] = &fx[s];
  }
  pts.clear();
  Nanos best_time = kInf;
  Bytes best_peak = 0;
  int best_rc = 0;
  std::int64_t budget = 200000;
  WalkFits(d, menus, fxp, cap, budget, [&] { return best_time; },
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
  if (c_.v > 1 && !pts.empty() && best_time > 0) my_exact = false;
  for (int c = 0; c < c_.v && !pts.empty(); ++c) {
    if (menus[c]->truncated && (c_.v > 1 || pts[c]->time > menus[c]->exact_up_to)) {
      my_exact = false;
    }
  }
  const Nanos result = pts.empty() ? -1 : best_time;
  recompute_memo_.emplace(std::move(key), RecomputeMemo{result, pts, my_exact});
  exact = exact && my_exact;
  return result;
}

bool Searcher::ChooseRecompute(const std::vector<int>& split, bool& exact,
                               int* failed_device) {
  exact = true;
  const int S = c_.S;
  chosen_.assign(S, nullptr);
  rtime_.assign(S, 0);
  std::vector<int> first(S, 0);
  for (int s = 1; s < S; ++s) first[s] = first[s - 1] + split[s - 1];
  std::vector<StageFixed> fx(S);
  Bytes prev = 0;
  for (int s = 0; s < S; ++s) {
    fx[s] = Fixed(s, first[s], first[s] + split[s], prev);
    prev = fx[s].output;
  }
  // Pass 1: each device's least recompute time, and its least peak at that
  // time. Ties are broken over the whole pipeline: the max peak cannot go
  // below the largest of those peaks (M), so pass 2 lets every device take
  // the fewest recomputed layers at its least time within peak M.
  Bytes max_peak = 0;
  std::vector<Nanos> least(c_.p, 0);
  for (int d = 0; d < c_.p; ++d) {
    std::vector<const MenuPoint*> pts;
    bool dev_exact = true;
    least[d] = DeviceRecompute(d, first, split, fx, pts, dev_exact);
    if (least[d] < 0) {
      if (failed_device != nullptr) *failed_device = d;
      return false;
    }
    exact &= dev_exact;
    std::vector<const StageFixed*> fxp(c_.v);
    for (int c = 0; c < c_.v; ++c) fxp[c] = &fx[c * c_.p + d];
    max_peak = std::max(max_peak, DevicePeak(d, fxp, pts));
  }
  for (int d = 0; d < c_.p; ++d) {
    std::vector<const MenuPoint*> pts;
    bool dev_exact = true;
    const Nanos t = DeviceRecompute(d, first, split, fx, pts, dev_exact, max_peak,
                                    /*fewest_recomputed=*/true);
    exact &= dev_exact && t == least[d];
    const double speed = pb_.cluster.devices[d].speed;
    for (int c = 0; c < c_.v; ++c) {
      const int s = c * c_.p + d;
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

// Enumerates, for every device, the feasible recompute choices whose
// per-chunk time vectors are Pareto-minimal (for equal vectors: the least
// peak, then the fewest recomputed layers), and simulates every combination
// across devices. Returns false (nothing offered) when that is too many.
// Per-split data every recompute enumeration needs.
void Searcher::SplitLayout(const std::vector<int>& split, std::vector<int>& first,
                           std::vector<StageFixed>& fx) const {
  const int S = c_.S;
  first.assign(S, 0);
  for (int s = 1; s < S; ++s) first[s] = first[s - 1] + split[s - 1];
  fx.assign(S, StageFixed{});
  Bytes prev = 0;
  for (int s = 0; s < S; ++s) {
    fx[s] = Fixed(s, first[s], first[s] + split[s], prev);
    prev = fx[s].output;
  }
}

// Every recompute choice of device d (one menu point per chunk) that fits
// its memory, or false when there are more than `budget` to look at.
bool Searcher::EnumerateDevice(int d, const std::vector<int>& first,
                               const std::vector<int>& split,
                               const std::vector<StageFixed>& fx,
                               std::vector<DeviceChoice>& found) {
  const int p = c_.p, v = c_.v;
  const double speed = pb_.cluster.devices[d].speed;
  const Bytes cap = c_.spec.device_capacity[d];
  std::vector<const Menu*> menus(v);
  std::vector<const StageFixed*> fxp(v);
  for (int c = 0; c < v; ++c) {
    const int s = c * p + d;
    menus[c] = &GetMenu(first[s], first[s] + split[s]);
    fxp[c] = &fx[s];
    if (menus[c]->truncated) return false;
  }
  found.clear();
  std::int64_t budget = 20000;
  return WalkFits(d, menus, fxp, cap, budget, [] { return kInf; },
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

// Ties on the iteration time are broken by the max peak, then the number of
// recomputed layers. Recomputing on a device off the critical path can
// lower the peak for free, so for a candidate good enough for the top list:
// find the least cap M on every device's peak at which the least-recompute
// choices within M still give the same iteration time (bisection over the
// peaks on offer; the time can only grow as M falls), then let each device
// in turn take the fewest recomputed layers within M that keep the time.
void Searcher::PolishTies(const std::vector<int>& split, Candidate& cand) {
  const int S = c_.S, p = c_.p, v = c_.v;
  if (!cand.feasible) return;
  std::vector<int> first;
  std::vector<StageFixed> fx;
  SplitLayout(split, first, fx);
  std::vector<std::vector<DeviceChoice>> opts(p);
  std::vector<Bytes> peaks;
  for (int d = 0; d < p; ++d) {
    if (!EnumerateDevice(d, first, split, fx, opts[d])) return;
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

bool Searcher::ExhaustLeaf(const std::vector<int>& split) {
  const int S = c_.S, p = c_.p, v = c_.v;
  std::vector<int> first;
  std::vector<StageFixed> fx;
  SplitLayout(split, first, fx);
  using Choice = DeviceChoice;
  std::vector<std::vector<std::vector<Choice>>> per_device(p);
  std::int64_t combos = 1;
  for (int d = 0; d < p; ++d) {
    std::vector<Choice> found;
    if (!EnumerateDevice(d, first, split, fx, found) || found.empty()) return false;
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
  const int S = c_.S;
  spec = c_.spec;
  int first = 0;
  Bytes prev = 0;
  st.layers_per_stage = split;
  st.recompute.assign(c_.L, 0);
  recomputed = 0;
  for (int s = 0; s < S; ++s) {
    const StageFixed fx = Fixed(s, first, first + split[s], prev);
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
    const Menu& menu = GetMenu(first, first + split[s]);
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
  cand.choice = c_.index;
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
  engine_.RunInto(work_spec_, c_.program, so, sim_);
  ToCandidate(std::move(st), recomputed, sim_, out);
}

void Searcher::RunBatch(std::vector<BatchSlot>& batch) {
  evaluations += static_cast<std::int64_t>(batch.size());
  SimOptions so;
  so.record_ops = false;
  const int threads = std::max(1, std::min<int>(opt_.threads, static_cast<int>(batch.size())));
  // Below a few thousand ops a run takes microseconds: threads cost more.
  if (threads == 1 || c_.program.total_ops() < 4096) {
    for (BatchSlot& slot : batch) engine_.RunInto(slot.spec, c_.program, so, slot.sim);
    return;
  }
  if (static_cast<int>(batch_engines_.size()) < threads) batch_engines_.resize(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t]() {
      for (size_t k = t; k < batch.size(); k += threads) {
        batch_engines_[t].RunInto(batch[k].spec, c_.program, so, batch[k].sim);
      }
    });
  }
  for (auto& th : pool) th.join();
}

// The alternatives are different splits (the same split keeps its best
// recompute).
void Searcher::Offer(Candidate c) {
  if (OfferTop(top, std::move(c), opt_.top_k)) {
    incumbents.emplace_back(
        std::chrono::duration<double>(Clock::now() - start_).count(),
        top.front().makespan);
  }
}

Nanos Searcher::PruneThreshold() const { return TopThreshold(top, opt_.top_k, opt_.cutoff); }

// A subtree whose makespan bound exceeds the K-th best cannot enter the top
// K. A bound equal to it may still tie on makespan and win on memory, so it
// is explored.
bool Searcher::ShouldPrune(Nanos bound) const { return bound > PruneThreshold(); }

bool Searcher::CheckLimits() {
  if (limit_hit) return true;
  if (opt_.node_limit != 0 && nodes >= std::max<std::int64_t>(0, opt_.node_limit)) {
    limit_hit = true;
    stop_reason = "node limit";
    return true;
  }
  if ((nodes & 255) == 0) {
    const double el = std::chrono::duration<double>(Clock::now() - start_).count();
    // A top-level search leaves the last tenth of its time to the bound
    // of an open tree (TotalsPathBound).
    const double share = opt_.open_tree_bound ? 0.9 : 1.0;
    if (opt_.time_limit_s > 0 && el >= opt_.time_limit_s * share) {
      limit_hit = true;
      stop_reason = "time limit";
      return true;
    }
    Report(false);
  }
  return false;
}

void Searcher::Report(bool force) {
  if (!opt_.progress || !ReportDue(force, opt_.progress_interval_s, last_report_)) return;
  SearchProgress pr;
  pr.elapsed_s = std::chrono::duration<double>(last_report_ - start_).count();
  pr.nodes = nodes;
  pr.evaluations = evaluations;
  pr.incumbent = top.empty() ? -1 : top.front().makespan;
  Nanos lb = top.empty() ? kInf : top.front().makespan;
  for (Nanos b : level_bounds_) lb = std::min(lb, b);
  lb = std::min(lb, pending_bound);
  pr.lower_bound = lb;  // kInf: this choice holds no strategy at all
  pr.choice = c_.index;
  opt_.progress(pr);
}

void Searcher::Dfs(int s, int pos) {
  const int S = c_.S, L = c_.L, p = c_.p, m = c_.m;
  const int kmin = pb_.allow_empty_chunks ? 0 : 1;
  const int remaining_after = S - s - 1;
  const int kmax_total = L - pos - remaining_after * kmin;
  const int d = s % p;
  int klo = kmin, khi = kmax_total;
  if (s == S - 1) klo = khi = L - pos;
  if (klo > khi) return;

  struct Child {
    int k;
    Nanos bound;
    Nanos rtime;   // v = 1: this stage's recompute
    Nanos dev_rt;  // v > 1, last chunk: the device's least total recompute
  };
  std::vector<Child> children;
  const Bytes prev_out = s > 0 ? fixed_[s - 1].output : 0;
  const double speed = pb_.cluster.devices[d].speed;
  const Nanos ideal_k = (L - pos) / std::max(1, S - s);

  for (int k = klo; k <= khi; ++k) {
    const StageFixed fx = Fixed(s, pos, pos + k, prev_out);
    // Recompute for this stage: for v = 1 exact now (the device has only this
    // stage); for v > 1 known when the device's last chunk is placed.
    split_[s] = k;
    first_layer_[s] = pos;
    fixed_[s] = fx;
    Nanos rt = 0;
    // Memory feasibility (monotone in k: more layers never need less).
    const Bytes floor_peak = DevicePeakLowerBound(d, s + 1);
    if (floor_peak > c_.spec.device_capacity[d]) break;
    if (c_.v == 1) {
      const Menu& menu = GetMenu(pos, pos + k);
      std::vector<const StageFixed*> fxp{&fixed_[s]};
      rt = -1;
      for (const MenuPoint& q : menu.points) {  // sorted by time
        std::vector<const MenuPoint*> pts{&q};
        if (DevicePeak(d, fxp, pts) <= c_.spec.device_capacity[d]) {
          // Beyond a truncated menu's exact range only that range's end
          // is a valid lower bound.
          rt = ScaleTime(std::min(q.time, menu.exact_up_to), speed);
          break;
        }
      }
      if (rt < 0) continue;  // only a truncated menu can get here
    }
    // v > 1: once the device's last chunk is placed, its least total
    // recompute is known; it adds to the device's work (not to the chains).
    Nanos dev_rt = 0;
    if (c_.v > 1 && s / p == c_.v - 1) {
      std::vector<const MenuPoint*> pts;
      bool ex = true;
      dev_rt = DeviceRecompute(d, first_layer_, split_, fixed_, pts, ex);
      bool truncated = false;
      for (int c = 0; c < c_.v; ++c) {
        const int sc = c * p + d;
        truncated |= GetMenu(first_layer_[sc], first_layer_[sc] + split_[sc]).truncated;
      }
      if (truncated) {
        dev_rt = 0;  // its least total over kept points is no valid bound
      } else if (dev_rt < 0) {
        continue;  // does not fit with any recompute
      }
    }
    // Bound: per-device head + work + tail, plus water-filling of the
    // layers not yet placed over devices with open stages.
    const Nanos w = fx.f + fx.bi + fx.bw + rt;
    const Nanos cf = CommFwd(s, fx.output), cb = CommBwd(s, fx.output);
    Nanos bound = 0;
    // Device-level parts after adding this stage.
    // head/tail increments apply to devices d' with d' > s (only for s < p).
    Nanos max_fixed = 0;
    std::vector<Nanos> base(p);
    for (int dd = 0; dd < p; ++dd) {
      Nanos h = head_[dd], t = tail_[dd], wk = work_[dd];
      if (s < dd) {
        h += fx.f + cf;
        t += fx.bi + fx.bw + rt + cb;
      }
      if (dd == d) wk += static_cast<Nanos>(m) * (w + dev_rt);
      base[dd] = h + wk + t;
      max_fixed = std::max(max_fixed, base[dd]);
    }
    bound = max_fixed;
    // Chain of one micro-batch: assigned stages plus the rest at best speed.
    const int next = pos + k;
    const Nanos rest_work = suffix_work_[next];
    const Nanos chain = chain_ + w + cf + cb +
                        static_cast<Nanos>(std::floor(static_cast<double>(rest_work) / max_speed_));
    bound = std::max(bound, chain);
    // Water-filling: devices with stages still open absorb the remaining
    // work m * rest_work (speed-1 units) at their speeds.
    if (rest_work > 0) {
      std::vector<std::pair<Nanos, double>> open;  // (base, speed)
      for (int dd = 0; dd < p; ++dd) {
        const int last_stage = (c_.v - 1) * p + dd;
        if (last_stage > s) open.emplace_back(base[dd], pb_.cluster.devices[dd].speed);
      }
      if (!open.empty()) {
        std::sort(open.begin(), open.end());
        const long double need = static_cast<long double>(m) * rest_work;
        long double cap_rate = 0;  // sum of speeds of devices below level
        long double filled = 0;
        long double level = static_cast<long double>(open[0].first);
        size_t idx = 0;
        long double lam = level;
        while (true) {
          while (idx < open.size() && static_cast<long double>(open[idx].first) <= level) {
            cap_rate += open[idx].second;
            ++idx;
          }
          const long double next_level =
              idx < open.size() ? static_cast<long double>(open[idx].first) : -1;
          if (next_level < 0 || filled + cap_rate * (next_level - level) >= need) {
            lam = level + (need - filled) / cap_rate;
            break;
          }
          filled += cap_rate * (next_level - level);
          level = next_level;
        }
        // Rounding of per-stage times to ns can shave at most a few ns per
        // op; keep the bound safely below.
        const Nanos slack = static_cast<Nanos>(m) * (S + 1) * 2;
        bound = std::max(bound, static_cast<Nanos>(std::floor(lam)) - slack);
      }
    }
    bound = std::max(bound, root_bound_);
    if (!pa_.empty()) {
      // Path bound: placed stages at their times, the rest at the least
      // coefficient of the stages still open.
      const double placed = path_acc_ + pa_[s] * static_cast<double>(fx.f) +
                            pbw_coef_[s] * static_cast<double>(fx.bi + fx.bw + rt);
      const double rest = s + 1 < S ? pa_min_[s + 1] * static_cast<double>(suffix_f_[next]) +
                                          pb_min_[s + 1] * static_cast<double>(suffix_b_[next])
                                    : 0.0;
      const double slack = static_cast<double>(m) * (S + 1) * 4;
      bound = std::max(bound, static_cast<Nanos>(std::floor(placed + rest + pconst_ - slack)));
    }
    children.push_back(Child{k, bound, rt, dev_rt});
  }
  std::stable_sort(children.begin(), children.end(), [&](const Child& a, const Child& b) {
    if (a.bound != b.bound) return a.bound < b.bound;
    return std::abs(a.k - ideal_k) < std::abs(b.k - ideal_k);
  });

  level_bounds_[s] = kInf;
  for (size_t ci = 0; ci < children.size(); ++ci) {
    const Child& ch = children[ci];
    if (ShouldPrune(ch.bound)) {
      // Sorted by bound: the rest are pruned too.
      break;
    }
    // Everything from this child on is pending until explored.
    level_bounds_[s] = ch.bound;
    if (CheckLimits()) {
      pending_bound = std::min(pending_bound, ch.bound);
      return;
    }
    ++nodes;
    const int k = ch.k;
    split_[s] = k;
    first_layer_[s] = pos;
    fixed_[s] = Fixed(s, pos, pos + k, prev_out);
    if (s == S - 1) {
      std::vector<int> split(split_.begin(), split_.end());
      Candidate cand;
      bool exact = true;
      if (EvaluateSplit(split, &cand, exact)) {
        const Nanos got = cand.makespan;
        if (cand.feasible && (top.empty() || got <= top.front().makespan)) {
          PolishTies(split, cand);
        }
        Offer(std::move(cand));
        // The least-total recompute is not provably best with several chunks:
        // simulate every Pareto-minimal choice, or leave the leaf open at its
        // bound (HiGHS-style: the gap reports it).
        if (!exact && got > ch.bound && !ExhaustLeaf(split)) {
          pending_bound = std::min(pending_bound, ch.bound);
        }
      }
      continue;
    }
    // Push the stage into the partial sums.
    const StageFixed& fx = fixed_[s];
    const Nanos w = fx.f + fx.bi + fx.bw + ch.rtime;
    const Nanos cf = CommFwd(s, fx.output), cb = CommBwd(s, fx.output);
    std::vector<Nanos> saved_head = head_, saved_tail = tail_;
    const Nanos saved_work = work_[d], saved_chain = chain_;
    for (int dd = s + 1; dd < p; ++dd) {
      head_[dd] += fx.f + cf;
      tail_[dd] += fx.bi + fx.bw + ch.rtime + cb;
    }
    work_[d] += static_cast<Nanos>(m) * (w + ch.dev_rt);
    chain_ += w + cf + cb;
    const double saved_acc = path_acc_;
    if (!pa_.empty()) {
      path_acc_ += pa_[s] * static_cast<double>(fx.f) +
                   pbw_coef_[s] * static_cast<double>(fx.bi + fx.bw + ch.rtime);
    }
    Dfs(s + 1, pos + k);
    head_ = std::move(saved_head);
    tail_ = std::move(saved_tail);
    work_[d] = saved_work;
    chain_ = saved_chain;
    path_acc_ = saved_acc;
    if (limit_hit) {
      // Unexplored siblings stay pending at their bounds (>= this one's).
      if (ci + 1 < children.size()) {
        pending_bound = std::min(pending_bound, children[ci + 1].bound);
      }
      return;
    }
  }
  level_bounds_[s] = kInf;
}

// The least time of a message from device a to device b (0 on one device):
// the link's latency plus the occupancy of the smallest output any stage
// can send (a stage's output is its last layer's; the model's last layer
// sends nothing unless an empty stage may follow it).
Nanos Searcher::LeastHop(int a, int b) const {
  if (a == b) return 0;
  const Link& link = c_.spec.link(DeviceId(a), DeviceId(b));
  return link.latency + LinkOccupancy(least_output_, link.bandwidth);
}

// A critical path as a Path: its F and B ops per stage, plus the least
// message time of every hop between ranks (I and W ops, waits and the
// excess of a message over its least time count 0: still a bound).
Searcher::Path Searcher::PathOf(const std::vector<CriticalStep>& steps) const {
  const int S = c_.S;
  Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
  int prev = -1;
  for (const CriticalStep& step : steps) {
    if (step.is_transfer) continue;
    if (step.op.kind == OpKind::F) P.a[step.op.stage.value] += 1;
    if (step.op.kind == OpKind::B) P.b[step.op.stage.value] += 1;
    if (prev >= 0) P.c += static_cast<double>(LeastHop(prev, step.device));
    prev = step.device;
  }
  return P;
}

// A bound from paths through the program's dependency graph. Whatever the
// allocation, the iteration time is at least the length of any path, and so
// of any convex combination of paths; a path's length is linear in the
// stages' forward and backward times. Paths used, per rank d and chunk c
// (stage sigma = c*p + d): (1) the forward chain of one micro-batch up to
// rank d's first F of sigma, then every op rank d runs from there on, then
// the backward chain below its last op; (2) the forward chain to rank d's
// first op, its ops up to its last B of sigma, then the backward chain below
// sigma; and the chain of one micro-batch through every stage. Link latency
// counts on every hop between ranks. Weights are tuned by multiplicative
// updates so that the least per-stage coefficient (per unit of work at the
// stage's speed) is large: then the bound holds for any allocation of the
// layers (their total work is fixed) and tightens as stages are placed. For
// uniform stages it reaches the closed forms' fill-and-drain terms that the
// per-rank bound misses for interleaved schedules.
std::vector<Searcher::Path> Searcher::BuildPaths() const {
  const int S = c_.S, p = c_.p;
  auto hop = [&](int s, int t) -> double {  // least message time stage s -> t
    return static_cast<double>(
        LeastHop(c_.spec.stage_device[s].value, c_.spec.stage_device[t].value));
  };
  auto fwd_chain = [&](Path& P, int upto) {  // F of stages < upto
    for (int s = 0; s < upto; ++s) {
      P.a[s] += 1;
      P.c += hop(s, s + 1);
    }
  };
  auto bwd_chain = [&](Path& P, int below) {  // B of stages < below
    for (int s = 0; s < below; ++s) {
      P.b[s] += 1;
      if (s + 1 < S) P.c += hop(s + 1, s);
    }
  };
  auto add_op = [&](Path& P, const Op& op) {
    if (op.kind == OpKind::F) P.a[op.stage.value] += 1;
    if (op.kind == OpKind::B) P.b[op.stage.value] += 1;  // I, W: 0 (valid)
  };
  std::vector<Path> paths;
  {
    Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
    fwd_chain(P, S - 1);
    P.a[S - 1] += 1;
    bwd_chain(P, S);
    paths.push_back(std::move(P));
  }
  for (int d = 0; d < p; ++d) {
    const std::vector<Op>& ops = c_.program.ops[d];
    if (ops.empty()) continue;
    for (int c = 0; c < c_.v; ++c) {
      const int sigma = c * p + d;
      int first_f = -1, last_b = -1;
      for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
        if (ops[i].stage.value != sigma) continue;
        if (ops[i].kind == OpKind::F && first_f < 0) first_f = i;
        if (ops[i].kind == OpKind::B) last_b = i;
      }
      if (first_f >= 0) {
        Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
        fwd_chain(P, sigma);
        for (size_t i = first_f; i < ops.size(); ++i) add_op(P, ops[i]);
        if (ops.back().kind == OpKind::B) bwd_chain(P, ops.back().stage.value);
        paths.push_back(std::move(P));
      }
      // (3) Through the round trip of sigma's last forward: rank d's ops up
      // to its last F of sigma, the chains up to the last stage and back,
      // then rank d's ops from that micro-batch's B of sigma on.
      int last_f = -1;
      for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
        if (ops[i].stage.value == sigma && ops[i].kind == OpKind::F) last_f = i;
      }
      if (last_f >= 0 && ops.front().kind == OpKind::F) {
        const int j = ops[last_f].mb.value;
        int back = -1;
        for (int i = last_f + 1; i < static_cast<int>(ops.size()); ++i) {
          if (ops[i].stage.value == sigma && ops[i].mb.value == j && ops[i].kind == OpKind::B) {
            back = i;
            break;
          }
        }
        if (back >= 0) {
          Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
          fwd_chain(P, ops.front().stage.value);
          for (int i = 0; i <= last_f; ++i) add_op(P, ops[i]);
          for (int t = sigma + 1; t < S; ++t) {
            P.a[t] += 1;
            P.c += hop(t - 1, t);
          }
          for (int t = S - 1; t > sigma; --t) {
            P.b[t] += 1;
            P.c += hop(t, t - 1);
          }
          for (size_t i = back; i < ops.size(); ++i) add_op(P, ops[i]);
          if (ops.back().kind == OpKind::B) bwd_chain(P, ops.back().stage.value);
          paths.push_back(std::move(P));
        }
      }
      if (last_b >= 0 && ops.front().kind == OpKind::F) {
        Path P{std::vector<double>(S, 0.0), std::vector<double>(S, 0.0), 0};
        fwd_chain(P, ops.front().stage.value);
        for (int i = 0; i <= last_b; ++i) add_op(P, ops[i]);
        bwd_chain(P, sigma);
        paths.push_back(std::move(P));
      }
    }
  }
  return paths;
}

Nanos Searcher::PathWeights() {
  const int S = c_.S, L = c_.L;
  const std::vector<Path> paths = BuildPaths();
  double F = 0, B = 0;
  for (int l = 0; l < L; ++l) {
    F += static_cast<double>(pb_.layers[l].forward);
    B += static_cast<double>(pb_.layers[l].backward_input + pb_.layers[l].backward_weight);
  }
  std::vector<double> speed(S);
  for (int s = 0; s < S; ++s) speed[s] = pb_.cluster.devices[c_.spec.stage_device[s].value].speed;
  // The weights solve max over path mixtures of min over stages: a zero-sum
  // game, approached by multiplicative weights on the stages (the side that
  // puts the work where the mixture is weakest) against best-response
  // paths; the mixture is the average of the best responses. Any mixture
  // gives a valid bound; this one is close to the best.
  const size_t n = paths.size();
  std::vector<double> wa(S, 1.0), wb(S, 1.0);
  std::vector<double> count(n, 0.0);
  double scale = 1;
  for (const Path& P : paths) {
    for (int s = 0; s < S; ++s) {
      scale = std::max(scale, std::max(P.a[s], P.b[s]) / speed[s]);
    }
  }
  const int rounds = 4000;
  const double eta = std::sqrt(std::log(static_cast<double>(2 * S)) / rounds);
  for (int it = 0; it < rounds; ++it) {
    double za = 0, zb = 0;
    for (int s = 0; s < S; ++s) {
      za += wa[s];
      zb += wb[s];
    }
    size_t best_k = 0;
    double best_pay = -1;
    for (size_t k = 0; k < n; ++k) {
      double pay = paths[k].c;
      for (int s = 0; s < S; ++s) {
        pay += F * wa[s] / za * paths[k].a[s] / speed[s] + B * wb[s] / zb * paths[k].b[s] / speed[s];
      }
      if (pay > best_pay) {
        best_pay = pay;
        best_k = k;
      }
    }
    count[best_k] += 1;
    for (int s = 0; s < S; ++s) {
      wa[s] *= std::exp(-eta * paths[best_k].a[s] / speed[s] / scale);
      wb[s] *= std::exp(-eta * paths[best_k].b[s] / speed[s] / scale);
    }
    // Keep the weights in range.
    double mx = 0;
    for (int s = 0; s < S; ++s) mx = std::max(mx, std::max(wa[s], wb[s]));
    for (int s = 0; s < S; ++s) {
      wa[s] /= mx;
      wb[s] /= mx;
    }
  }
  std::vector<double> best_lam(n);
  for (size_t k = 0; k < n; ++k) best_lam[k] = count[k] / rounds;
  double best = 0;
  {
    std::vector<double> A(S, 0.0), Bc(S, 0.0);
    double cst = 0;
    for (size_t k = 0; k < n; ++k) {
      for (int s = 0; s < S; ++s) {
        A[s] += best_lam[k] * paths[k].a[s];
        Bc[s] += best_lam[k] * paths[k].b[s];
      }
      cst += best_lam[k] * paths[k].c;
    }
    double amin = std::numeric_limits<double>::infinity(), bmin = amin;
    for (int s = 0; s < S; ++s) {
      amin = std::min(amin, A[s] / speed[s]);
      bmin = std::min(bmin, Bc[s] / speed[s]);
    }
    best = amin * F + bmin * B + cst;
  }
  pa_.assign(S, 0.0);
  pbw_coef_.assign(S, 0.0);
  pconst_ = 0;
  for (size_t k = 0; k < n; ++k) {
    for (int s = 0; s < S; ++s) {
      pa_[s] += best_lam[k] * paths[k].a[s];
      pbw_coef_[s] += best_lam[k] * paths[k].b[s];
    }
    pconst_ += best_lam[k] * paths[k].c;
  }
  pa_min_.assign(S + 1, std::numeric_limits<double>::infinity());
  pb_min_.assign(S + 1, std::numeric_limits<double>::infinity());
  for (int s = S - 1; s >= 0; --s) {
    pa_min_[s] = std::min(pa_min_[s + 1], pa_[s] / speed[s]);
    pb_min_[s] = std::min(pb_min_[s + 1], pbw_coef_[s] / speed[s]);
  }
  // Recompute runs inside backward ops: memory forces at least
  // forced_recompute_ per micro-batch, wherever it lands.
  best += pb_min_[0] * static_cast<double>(forced_recompute_);
  // Time scaling rounds each stage's time to the ns: allow for it.
  const double slack = static_cast<double>(c_.m) * (S + 1) * 4;
  return std::max<Nanos>(0, static_cast<Nanos>(std::floor(best - slack)));
}

// A bound that couples the decoder counts per rank with the fill and drain
// of the schedule, for the strategies that can still beat `best`.
//
// RootBound's load[d][k] bounds the makespan of any strategy in which rank
// d holds k decoders, so a strategy with makespan <= best gives every rank
// a count in [lo_d, hi_d] (those k with load <= best, also within what the
// other ranks can leave: the counts add up to D). Over such allocations
// (decoders placed on any chunk of their rank, every stage without a pinned
// first or last layer holding at least one decoder when no other layer
// could fill it; the other non-decoder layers cost >= 0 and are dropped),
// the makespan is at least any mixture of the program's paths (BuildPaths);
// its least value is found exactly by a greedy over ranks. The best
// mixture is an exact LP (ColumnLp) whose paths come from the simulator's
// critical paths at the LP's own minimizing allocation (column generation,
// below). Any mixture is valid.
// The integrality the per-rank ranges carry is what the allocation-free
// path bound (PathWeights) misses: e.g. the last rank holding the head
// must also hold its full share of decoders, and then the fill and drain
// through the other stages come on top of its work.
Nanos Searcher::TotalsPathBound(Nanos best) {
  const int S = c_.S, p = c_.p, v = c_.v;
  const int D = totals_.decoders;
  if (D <= 0 || totals_.load.empty() || best >= kInf) return 0;
  std::vector<int> lo(p, -1), hi(p, -1);
  for (int d = 0; d < p; ++d) {
    for (int k = 0; k <= D; ++k) {
      if (totals_.load[d][k] > best) continue;
      if (lo[d] < 0) lo[d] = k;
      hi[d] = k;
    }
    if (lo[d] < 0) return 0;  // cannot happen below a real incumbent
  }
  // The counts add up to D: tighten each range by the others' ranges.
  for (int round = 0; round < 2; ++round) {
    long long slo = 0, shi = 0;
    for (int d = 0; d < p; ++d) {
      slo += lo[d];
      shi += hi[d];
    }
    if (slo > D || shi < D) return 0;
    for (int d = 0; d < p; ++d) {
      lo[d] = std::max<long long>(lo[d], D - (shi - hi[d]));
      hi[d] = std::min<long long>(hi[d], D - (slo - lo[d]));
    }
  }
  const Layer& dec = pb_.layers[totals_.rep];
  const double fd = static_cast<double>(dec.forward);
  const double bd = static_cast<double>(dec.backward_input + dec.backward_weight);
  std::vector<double> speed(S);
  for (int st = 0; st < S; ++st) speed[st] = pb_.cluster.devices[st % p].speed;
  // Stages that must hold a decoder: all but those of a pinned first or
  // last layer, unless other non-decoder layers could fill some.
  std::vector<int> must(S, 0);
  if (totals_.free_others == 0 && !pb_.allow_empty_chunks) {
    for (int st = 0; st < S; ++st) must[st] = 1;
    if (totals_.first_pinned) must[0] = 0;
    if (totals_.last_pinned) must[S - 1] = 0;
  }
  std::vector<Path> paths = BuildPaths();
  const int own_paths = static_cast<int>(paths.size());
  if (path_pool_) paths.insert(paths.end(), path_pool_->begin(), path_pool_->end());
  std::vector<Path> raw_paths(paths);  // before the pinned layers are folded in
  // Pinned layers' work is fixed: fold it into a path's constant. (With
  // empty chunks allowed the first layer may sit past stage 0.)
  auto fold_pinned = [&](Path& P) {
    if (pb_.allow_empty_chunks) return;
    auto add = [&](int layer, int st) {
      const Layer& x = pb_.layers[layer];
      P.c += (P.a[st] * x.forward + P.b[st] * (x.backward_input + x.backward_weight)) / speed[st];
    };
    if (totals_.first_pinned) add(0, 0);
    if (totals_.last_pinned) add(c_.L - 1, S - 1);
  };
  for (Path& P : paths) fold_pinned(P);
  // A node of the bound's own branch-and-bound: decoders of stage st within
  // [lb[st], ub[st]] (the root: [must, the rank's hi]).
  struct Box {
    std::vector<int> lb, ub;
  };
  // respond(): the least value of the mixture lambda over the integral
  // allocations in a box, exactly. Per rank, taking its k cheapest units
  // (stage by stage within the box) costs a convex function of k, so
  // filling each rank's floor (its lbs, then up to lo) and then the
  // cheapest remaining units over all ranks, each rank up to its hi, until
  // D are placed, is optimal.
  //
  // Memory forces recompute: a rank whose count can be k runs at least
  // rt[d][k] of it per micro-batch inside its B ops, spread over its chunks
  // in some way, so a path with b_P B ops on each of the rank's stages
  // carries at least min_c b_P * (least rt over the box's counts for d).
  // Time path P spends per decoder on stage st.
  auto unit = [&](const Path& P, int st) { return (P.a[st] * fd + P.b[st] * bd) / speed[st]; };
  std::vector<double> cost(S);
  auto least_rt = [&](const Box& box) {
    std::vector<double> r(p, 0.0);
    if (totals_.rt.empty()) return r;
    for (int d = 0; d < p; ++d) {
      int klo = lo[d], khi = hi[d], floor_d = 0, ceil_d = 0;
      for (int c = 0; c < v; ++c) {
        floor_d += box.lb[c * p + d];
        ceil_d += box.ub[c * p + d];
      }
      klo = std::max(klo, floor_d);
      khi = std::min(khi, ceil_d);
      Nanos least = kInf;
      for (int k = std::max(0, klo); k <= khi && k <= D; ++k) least = std::min(least, totals_.rt[d][k]);
      r[d] = least >= kInf ? 0.0 : static_cast<double>(least) / pb_.cluster.devices[d].speed;
    }
    return r;
  };
  auto recompute_on = [&](const Path& P, const std::vector<double>& r) {
    double t = 0;
    for (int d = 0; d < p; ++d) {
      if (r[d] == 0) continue;
      double least = P.b[d];
      for (int c = 1; c < v; ++c) least = std::min(least, P.b[c * p + d]);
      t += least * r[d];
    }
    return t;
  };
  auto respond = [&](const std::vector<double>& lam, const Box& box) -> double {
    constexpr double kNone = std::numeric_limits<double>::infinity();
    double cst = 0;
    std::fill(cost.begin(), cost.end(), 0.0);
    const std::vector<double> rt = least_rt(box);
    for (size_t k = 0; k < lam.size(); ++k) {
      if (lam[k] == 0) continue;
      cst += lam[k] * (paths[k].c + recompute_on(paths[k], rt));
      for (int st = 0; st < S; ++st) {
        cost[st] += lam[k] * unit(paths[k], st);
      }
    }
    double total = cst;
    int placed = 0;
    std::vector<std::pair<double, int>> extra;  // (unit cost, stage) beyond the floors
    std::vector<std::pair<double, int>> units;
    for (int d = 0; d < p; ++d) {
      int count = 0;
      units.clear();
      for (int c = 0; c < v; ++c) {
        const int st = c * p + d;
        if (box.lb[st] > box.ub[st]) return kNone;
        count += box.lb[st];
        total += box.lb[st] * cost[st];
        const int room = std::min(box.ub[st] - box.lb[st], std::max(0, hi[d]));
        for (int u = 0; u < room; ++u) units.emplace_back(cost[st], st);
      }
      if (count > hi[d]) return kNone;
      std::sort(units.begin(), units.end());
      size_t i = 0;
      for (; count < lo[d]; ++i, ++count) {
        if (i >= units.size()) return kNone;
        total += units[i].first;
      }
      placed += count;
      for (; count < hi[d] && i < units.size(); ++i, ++count) extra.push_back(units[i]);
    }
    if (placed > D) return kNone;
    std::sort(extra.begin(), extra.end());
    for (size_t i = 0; placed < D && i < extra.size(); ++i, ++placed) {
      total += extra[i].first;
    }
    return placed < D ? kNone : total;
  };
  // The best mixture for a box is an LP: max over path weights lambda
  // (summing to 1) of min over the box's allocations x of sum_P lambda_P
  // len_P(x). The allocations' hull is {lb <= x <= ub, lo_d <= sum_c x_cd
  // <= hi_d, sum x = D} (integral), so its dual is min over that hull of
  // max_P len_P(x): the continuous relaxation of the fixed program's
  // longest path, a convex function of x. ColumnLp solves the first form
  // exactly; its shadow prices are the minimizing x*, where the simulator's
  // critical path is the path that most violates the current mixture
  // (column generation), until no path is longer at x* than the LP's
  // value: the relaxation is solved. Whatever the floating point did, the
  // box's bound is respond() of the LP's weights: the exact least value
  // over its integral allocations.
  const double scale = static_cast<double>(best);
  // Only when every layer but a pinned first and last is a decoder are the
  // decoder counts per stage a split that the simulator can run.
  const bool generate = totals_.free_others == 0 && !pb_.allow_empty_chunks;
  const Layer& first = pb_.layers.front();
  const Layer& last = pb_.layers.back();
  auto time_up = [&]() {
    return opt_.time_limit_s > 0 &&
           std::chrono::duration<double>(Clock::now() - start_).count() > opt_.time_limit_s;
  };
  int rounds_left = 2000;  // column generation rounds over the whole tree
  // Boxes are searched until every open one is bound at `target`: then no
  // strategy in range beats `best` even after the rounding allowance.
  const double slack = static_cast<double>(c_.m) * (S + 1) * 4;
  const double target = static_cast<double>(best) + slack;
  struct Solved {
    double bound = 0;  // valid for every integral allocation in the box
    std::vector<double> x;  // the relaxation's minimizer (empty: none)
    std::vector<int> support;  // paths with weight in its LP's solution
  };
  // Every box's LP starts from every path known so far; the simulator's
  // critical paths join them (once each).
  std::map<std::vector<double>, int> path_index;  // a ++ b ++ {c} -> index
  auto key_of = [](const Path& P) {
    std::vector<double> k(P.a);
    k.insert(k.end(), P.b.begin(), P.b.end());
    k.push_back(P.c);
    return k;
  };
  for (int k = 0; k < static_cast<int>(paths.size()); ++k) path_index.emplace(key_of(paths[k]), k);
  auto solve_box = [&](const Box& box) -> Solved {
    Solved out;
    // Row 0: sum lambda <= 1 (its price is t); row 1 + st: -sum_P K_P[st]
    // lambda_P + (duals of the rank and box constraints) <= 0 (its price is
    // x_st - lb_st), with K_P[st] path P's time per decoder on stage st.
    std::vector<double> rhs(S + 1, 0.0);
    rhs[0] = 1.0;
    ColumnLp lp(std::move(rhs));
    std::vector<double> col(S + 1);
    std::vector<int> path_column, path_of_column;
    const std::vector<double> rt = least_rt(box);
    auto add_path = [&](int k) {
      const Path& P = paths[k];
      std::fill(col.begin(), col.end(), 0.0);
      col[0] = 1.0;
      double cst = (P.c + recompute_on(P, rt)) / scale;
      for (int st = 0; st < S; ++st) {
        const double kk = unit(P, st) / scale;
        col[1 + st] = -kk;
        cst += kk * box.lb[st];
      }
      path_column.push_back(lp.AddColumn(cst, col));
      path_of_column.push_back(k);
    };
    int d_rest = D;
    for (int st = 0; st < S; ++st) d_rest -= box.lb[st];
    for (int d = 0; d < p; ++d) {
      int floor_d = 0;
      for (int c = 0; c < v; ++c) floor_d += box.lb[c * p + d];
      std::fill(col.begin(), col.end(), 0.0);
      for (int c = 0; c < v; ++c) col[1 + c * p + d] = 1.0;
      lp.AddColumn(std::max(lo[d], floor_d) - floor_d, col);  // sum_c x_cd >= lo_d
      for (double& e : col) e = -e;
      lp.AddColumn(-(hi[d] - floor_d), col);  // sum_c x_cd <= hi_d
    }
    std::fill(col.begin(), col.end(), 1.0);
    col[0] = 0.0;
    lp.AddColumn(d_rest, col);  // sum x >= D
    for (double& e : col) e = -e;
    lp.AddColumn(-d_rest, col);  // sum x <= D
    for (int st = 0; st < S; ++st) {
      if (box.ub[st] >= D) continue;
      std::fill(col.begin(), col.end(), 0.0);
      col[1 + st] = -1.0;
      lp.AddColumn(-(box.ub[st] - box.lb[st]), col);  // x_st <= ub_st
    }
    for (int k = 0; k < static_cast<int>(paths.size()); ++k) add_path(k);
    std::vector<double> lam;
    for (;;) {
      const ColumnLp::Status status = lp.Solve();
      if (status == ColumnLp::Status::Unbounded) {
        out.bound = std::numeric_limits<double>::infinity();  // an empty box
        out.x.clear();
        return out;
      }
      if (status != ColumnLp::Status::Optimal) return out;
      const std::vector<double> z = lp.Primal();
      lam.assign(paths.size(), 0.0);
      double sum = 0;
      out.support.clear();
      for (size_t j = 0; j < path_column.size(); ++j) {
        const double w = z[path_column[j]];
        if (w <= 0) continue;
        lam[path_of_column[j]] = w;
        sum += w;
        out.support.push_back(path_of_column[j]);
      }
      if (sum <= 0) return out;
      for (double& l : lam) l /= sum;
      out.bound = std::max(out.bound, respond(lam, box));
      const std::vector<double> pi = lp.Duals();
      out.x.assign(S, 0.0);
      for (int st = 0; st < S; ++st) out.x[st] = box.lb[st] + std::max(0.0, pi[1 + st]);
      if (!generate || rounds_left <= 0 || out.bound >= target || time_up()) return out;
      --rounds_left;
      const std::vector<double>& x = out.x;
      const double t_star = lp.Objective() * scale;
      // A split near x* (largest remainders) that Lower accepts, then the
      // stage times of x* itself.
      Strategy st;
      st.layers_per_stage.assign(S, 0);
      int total = 0;
      std::vector<std::pair<double, int>> frac;
      for (int s = 0; s < S; ++s) {
        st.layers_per_stage[s] = static_cast<int>(std::floor(x[s] + 1e-9));
        total += st.layers_per_stage[s];
        frac.emplace_back(-(x[s] - std::floor(x[s] + 1e-9)), s);
      }
      std::sort(frac.begin(), frac.end());
      for (int i = 0; total < D && i < S; ++i, ++total) ++st.layers_per_stage[frac[i].second];
      if (total != D) return out;
      if (totals_.first_pinned) ++st.layers_per_stage[0];
      if (totals_.last_pinned) ++st.layers_per_stage[S - 1];
      st.recompute.assign(pb_.layers.size(), 0);
      auto spec = Lower(pb_.layers, pb_.cluster, PipelineShape{p, v, c_.m, pb_.comm}, st, false);
      if (!spec.ok()) return out;
      for (int s = 0; s < S; ++s) {
        double f = x[s] * static_cast<double>(dec.forward);
        double bi = x[s] * static_cast<double>(dec.backward_input);
        double bw = x[s] * static_cast<double>(dec.backward_weight);
        for (const auto& [pinned, layer] : {std::pair{totals_.first_pinned && s == 0, &first},
                                            std::pair{totals_.last_pinned && s == S - 1, &last}}) {
          if (!pinned) continue;
          f += static_cast<double>(layer->forward);
          bi += static_cast<double>(layer->backward_input);
          bw += static_cast<double>(layer->backward_weight);
        }
        StageCost& sc = spec->stages[s];
        sc.forward = std::llround(f / speed[s]);
        sc.backward_input = std::llround(bi / speed[s]);
        sc.backward_weight = std::llround(bw / speed[s]);
        sc.recompute = 0;
      }
      SimOptions so;
      so.record_ops = true;
      const SimResult r = engine_.Run(*spec, c_.program, so);
      if (r.outcome == Outcome::Deadlock) return out;
      Path P = PathOf(CriticalPath(*spec, c_.program, r));
      const Path raw = P;
      fold_pinned(P);
      double len = P.c + recompute_on(P, rt);
      for (int s = 0; s < S; ++s) len += x[s] * unit(P, s);
      // No path is longer at x* than the mixture: the relaxation is solved.
      if (len <= t_star * (1 + 1e-9) + 1.0) return out;
      // A path the LP already has: it is solved up to rounding.
      if (!path_index.emplace(key_of(P), static_cast<int>(paths.size())).second) return out;
      paths.push_back(std::move(P));
      raw_paths.push_back(raw);
      add_path(static_cast<int>(paths.size()) - 1);
    }
  };
  // Branch-and-bound over boxes, least bound first: a box whose relaxation
  // has a fractional minimizer splits on its most fractional stage count
  // (x_st <= floor, x_st >= ceil); one with an integral minimizer is
  // settled (no allocation in it does better than that relaxation). The
  // bound is the least over settled and open boxes.
  Box root{must, std::vector<int>(S, D)};
  for (int st = 0; st < S; ++st) root.ub[st] = std::min(D, hi[st % p]);
  Solved at_root = solve_box(root);
  if (!std::isfinite(at_root.bound)) return 0;  // cannot happen below a real incumbent
  using Open = std::pair<double, int>;  // (bound, index into boxes)
  std::vector<std::pair<Box, Solved>> boxes;
  std::priority_queue<Open, std::vector<Open>, std::greater<Open>> open;
  boxes.emplace_back(std::move(root), std::move(at_root));
  open.emplace(boxes.back().second.bound, 0);
  double settled = std::numeric_limits<double>::infinity();
  const int kMaxBoxes = 4000;
  while (!open.empty()) {
    const auto [b, i] = open.top();
    if (b >= target || time_up() || rounds_left <= 0 ||
        static_cast<int>(boxes.size()) + 2 > kMaxBoxes) {
      break;
    }
    open.pop();
    const std::vector<double> x = boxes[i].second.x;
    int split = -1;
    double most = 1e-6;
    for (int st = 0; st < static_cast<int>(x.size()); ++st) {
      const double f = std::abs(x[st] - std::round(x[st]));
      if (f > most) {
        most = f;
        split = st;
      }
    }
    if (split < 0) {
      settled = std::min(settled, b);  // integral (or no minimizer known)
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      Box child = boxes[i].first;
      if (side == 0) {
        child.ub[split] = static_cast<int>(std::floor(x[split]));
      } else {
        child.lb[split] = static_cast<int>(std::ceil(x[split]));
      }
      Solved s = solve_box(child);
      s.bound = std::max(s.bound, b);  // a child's bound is at least its parent's
      if (!std::isfinite(s.bound)) continue;
      boxes.emplace_back(std::move(child), std::move(s));
      open.emplace(boxes.back().second.bound, static_cast<int>(boxes.size()) - 1);
    }
  }
  if (path_pool_) {
    // What the next searcher starts from: the paths any box's LP used.
    std::vector<char> used(paths.size(), 0);
    for (const auto& bx : boxes) {
      for (int k : bx.second.support) used[k] = 1;
    }
    path_pool_->clear();
    for (size_t k = own_paths; k < paths.size(); ++k) {
      if (used[k]) path_pool_->push_back(raw_paths[k]);
    }
  }
  double bound = std::min(settled, open.empty() ? std::numeric_limits<double>::infinity()
                                                 : open.top().first);
  // Nothing open below the target: no strategy in range beats `best`.
  bound = std::min(bound, target);
  // Per-op rounding to whole ns can shave a little; stay safely below.
  return std::max<Nanos>(0, static_cast<Nanos>(std::floor(bound - slack)));
}

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
Nanos Searcher::RootBound(std::vector<int>* per_device, int* decoder_rep) {
  const int L = c_.L, p = c_.p, m = c_.m;
  if (L == 0) return 0;
  auto same = [](const Layer& a, const Layer& b) { return SameLayer(a, b); };
  const auto [best_rep, best_count] = LargestIdenticalGroup(pb_.layers);
  const Layer& dec = pb_.layers[best_rep];
  const int D = best_count, others = L - D;
  // The first layer always sits on stage 0 (rank 0) and the last on stage
  // S-1 (rank p-1): when they are not decoders, their work and memory are
  // pinned to those ranks (an embedding, a head with its loss).
  std::vector<Nanos> pinned_work(p, 0);
  std::vector<Bytes> pinned_static(p, 0), pinned_stash(p, 0);
  auto pin = [&](int l, int d) {
    const Layer& x = pb_.layers[l];
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
  const int kmin = pb_.allow_empty_chunks ? 0 : 1;
  Nanos f_min = kInf, b_min = kInf;
  for (const Layer& l : pb_.layers) {
    f_min = std::min(f_min, l.forward);
    b_min = std::min(b_min, l.backward_input + l.backward_weight);
  }

  // The fronts depend on the decoder alone: searchers of one problem may
  // share them (ShareFronts).
  std::vector<std::vector<std::pair<Bytes, Nanos>>> own;
  std::vector<std::vector<std::pair<Bytes, Nanos>>>& pts = fronts_ ? *fronts_ : own;
  if (static_cast<int>(pts.size()) != D + 1) {
    pts.assign(D + 1, {});
    for (int k = 0; k <= D; ++k) pts[k] = StackRecomputeFront(dec, k);
  }

  // N_d per device.
  std::vector<double> weight(p, 0.0);
  for (int d = 0; d < p; ++d) {
    const auto& mos = c_.profile.moments[d];
    double best = 0;
    if (c_.v == 1) {
      for (const auto& mo : mos) best = std::max(best, static_cast<double>(mo.counts[0]));
    } else if (c_.v == 2) {
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
        std::vector<double> avg_sum(c_.v, 0.0);
        for (int it = 0; it < rounds; ++it) {
          double z = 0;
          for (double x : q) z += x;
          std::vector<double> avg(c_.v, 0.0);
          for (size_t i = 0; i < nm; ++i) {
            for (int c = 0; c < c_.v; ++c) avg[c] += q[i] / z * mos[i].counts[c];
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
  const bool first_pinned = !same(pb_.layers[0], dec);
  const bool last_pinned = L > 1 && !same(pb_.layers[L - 1], dec);
  if (first_pinned) {
    ++pinned_total;
    pinned_chunks[0].push_back(0);
  }
  if (last_pinned) {
    ++pinned_total;
    pinned_chunks[p - 1].push_back(c_.v - 1);
  }
  const int free_others = std::max(0, others - pinned_total);
  auto peak_floor = [&](int d, int k, Bytes st) -> long double {
    const int v = c_.v;
    const long double stat = static_cast<long double>(k) * dec.static_memory + pinned_static[d];
    const auto& mos = c_.profile.moments[d];
    long double worst = 0;
    for (const auto& mo : mos) {
      const std::vector<int>& cnt = mo.counts;
      long double x = 0;
      if (d == 0 && first_pinned) {
        const Layer& x1 = pb_.layers[0];
        Bytes least = x1.activation;
        for (const auto& o : x1.recompute) least = std::min(least, o.retained_activation);
        x += static_cast<long double>(cnt[0]) * least;
      }
      if (d == p - 1 && last_pinned) {
        // The last layer's own stash, when rank p-1 is not rank 0's twin.
        const Bytes last_least = [&] {
          const Layer& x2 = pb_.layers[L - 1];
          Bytes least = x2.activation;
          for (const auto& o : x2.recompute) least = std::min(least, o.retained_activation);
          return least;
        }();
        x += static_cast<long double>(cnt[v - 1]) * last_least;
      }
      // Chunks that must carry a decoder: all but the pinned chunk and the
      // free_others chunks with the largest counts.
      std::vector<int> must;
      for (int c = 0; c < v; ++c) {
        const auto& pc = pinned_chunks[d];
        if (std::find(pc.begin(), pc.end(), c) == pc.end()) must.push_back(cnt[c]);
      }
      std::sort(must.begin(), must.end());
      const int drop = std::min<int>(free_others, static_cast<int>(must.size()));
      must.resize(must.size() - drop);
      const int nfloor = kmin > 0 ? static_cast<int>(must.size()) : 0;
      if (k < nfloor) return std::numeric_limits<long double>::infinity();
      long double fl = 0;
      for (int c = 0; c < nfloor; ++c) fl += must[c];
      const int mn = *std::min_element(cnt.begin(), cnt.end());
      x += fl * st1 + static_cast<long double>(mn) * (st - static_cast<long double>(nfloor) * st1);
      worst = std::max(worst, x);
    }
    // The plain weight floor (stash anywhere) is valid too.
    worst = std::max(worst, static_cast<long double>(weight[d]) * (st + pinned_stash[d]));
    return stat + worst;
  };
  // Least recompute time of device d holding k decoders, or kInf.
  auto least_rt = [&](int d, int k) -> Nanos {
    const Bytes cap = c_.spec.device_capacity[d];
    Nanos rt = kInf;
    for (const auto& [st, t] : pts[k]) {
      if (peak_floor(d, k, st) <= static_cast<long double>(cap)) rt = std::min(rt, t);
    }
    return rt;
  };
  std::vector<std::vector<Nanos>> rt_table(p, std::vector<Nanos>(D + 1, kInf));
  for (int d = 0; d < p; ++d) {
    // A rank's row depends on the problem, the program and its capacity
    // alone: searchers of one problem and choice may share it (ShareRecompute).
    const std::pair<int, Bytes> key{d, c_.spec.device_capacity[d]};
    if (rt_cache_) {
      auto it = rt_cache_->find(key);
      if (it != rt_cache_->end()) {
        rt_table[d] = it->second;
        continue;
      }
    }
    for (int k = 0; k <= D; ++k) rt_table[d][k] = least_rt(d, k);
    if (rt_cache_) rt_cache_->emplace(key, rt_table[d]);
  }
  totals_.rt = rt_table;
  totals_.decoders = D;
  totals_.rep = best_rep;
  totals_.first_pinned = !same(pb_.layers[0], dec);
  totals_.last_pinned = L > 1 && !same(pb_.layers[L - 1], dec);
  totals_.free_others = others - totals_.first_pinned - totals_.last_pinned;
  // Load of device d holding k decoders (or kInf if it cannot fit them).
  auto load = [&](int d, int k) -> Nanos {
    const double speed = pb_.cluster.devices[d].speed;
    const Nanos rt = rt_table[d][k];
    if (rt >= kInf) return kInf;
    // Chains before and after: stages 0 .. d-1 hold >= d*kmin layers, at
    // most `others` of them not decoders.
    const int chain_dec = std::max(0, d * kmin - others);
    const Nanos head = static_cast<Nanos>(chain_dec) * ScaleTime(dec.forward, max_speed_) +
                       static_cast<Nanos>(std::max(0, d * kmin - chain_dec)) *
                           ScaleTime(f_min, max_speed_);
    const Nanos tail = static_cast<Nanos>(chain_dec) *
                           ScaleTime(dec.backward_input + dec.backward_weight, max_speed_) +
                       static_cast<Nanos>(std::max(0, d * kmin - chain_dec)) *
                           ScaleTime(b_min, max_speed_);
    return head + tail + static_cast<Nanos>(m) * ScaleTime(k * w1 + rt + pinned_work[d], speed);
  };
  // Least total recompute (per micro-batch, speed 1.0) that memory forces
  // on any allocation of the decoders: a knapsack over the devices.
  {
    std::vector<Nanos> best(D + 1, kInf), next(D + 1);
    best[0] = 0;
    for (int d = 0; d < p; ++d) {
      const std::vector<Nanos>& rt = rt_table[d];
      std::fill(next.begin(), next.end(), kInf);
      for (int j = 0; j <= D; ++j) {
        if (best[j] >= kInf) continue;
        for (int k = 0; j + k <= D; ++k) {
          if (rt[k] < kInf) next[j + k] = std::min(next[j + k], best[j] + rt[k]);
        }
      }
      best.swap(next);
    }
    forced_recompute_ = best[D] < kInf ? best[D] : 0;
  }
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
  totals_.load.assign(p, std::vector<Nanos>(D + 1, kInf));
  for (int d = 0; d < p; ++d) {
    for (int k = 0; k <= D; ++k) totals_.load[d][k] = load(d, k);
  }
  auto absorbs = [&](Nanos lambda) {
    long long lo_sum = 0, hi_sum = 0;
    for (int d = 0; d < p; ++d) {
      if (kmin_dev[d] < 0 || load(d, kmin_dev[d]) > lambda) return false;
      int k = kmin_dev[d];
      while (k < D && load(d, k + 1) <= lambda) ++k;  // load is monotone in k
      lo_sum += kmin_dev[d];
      hi_sum += k;
    }
    return lo_sum <= D && D <= hi_sum;
  };
  Nanos lo = 0, hi = 1;
  while (!absorbs(hi)) {
    if (hi > kInf / 4) return 0;  // decoders cannot fit at all: no bound
    hi *= 2;
  }
  while (lo < hi) {
    const Nanos mid = lo + (hi - lo) / 2;
    if (absorbs(mid)) hi = mid;
    else lo = mid + 1;
  }
  if (per_device != nullptr) {
    // The relaxation's allocation at lambda: as many decoders as each
    // device absorbs, trimmed to D from the most loaded devices.
    per_device->assign(p, 0);
    int total = 0;
    for (int d = 0; d < p; ++d) {
      int k = std::max(0, kmin_dev[d]);
      while (k < D && load(d, k + 1) <= lo) ++k;
      (*per_device)[d] = k;
      total += k;
    }
    while (total > D) {
      int worst = -1;
      Nanos worst_load = -1;
      for (int d = 0; d < p; ++d) {
        if ((*per_device)[d] <= std::max(0, kmin_dev[d])) continue;
        const Nanos l = load(d, (*per_device)[d]);
        if (l > worst_load) {
          worst_load = l;
          worst = d;
        }
      }
      if (worst < 0) break;  // every device at its least: nothing to trim
      --(*per_device)[worst];
      --total;
    }
    *decoder_rep = best_rep;
  }
  // Per-op rounding to whole ns can shave a little; stay safely below.
  const Nanos slack = static_cast<Nanos>(m) * (c_.S + 1) * 2;
  return std::max<Nanos>(0, lo - slack);
}

// A split that realizes the root relaxation's per-device decoder counts:
// each device's decoders spread evenly over its chunks, the other layers
// kept with the stage that is open when the walk through the model meets
// them (so a leading embedding lands on stage 0, a trailing head on the
// last stage). Empty when it cannot give every chunk its minimum.
std::vector<int> Searcher::RelaxedSplit(const std::vector<int>& per_device,
                                        int rep) const {
  const int S = c_.S, p = c_.p, v = c_.v;
  std::vector<int> quota(S, 0);
  for (int d = 0; d < p; ++d) {
    for (int c = 0; c < v; ++c) {
      quota[c * p + d] = per_device[d] / v + (c < per_device[d] % v ? 1 : 0);
    }
  }
  return SplitFromQuota(quota, rep);
}

// The split whose stage s holds quota[s] decoders (layers like `rep`), the
// other layers staying with the stage that is open when the walk through
// the model meets them. Empty when a stage would get too few layers.
std::vector<int> Searcher::SplitFromQuota(const std::vector<int>& quota, int rep) const {
  const int S = c_.S, L = c_.L;
  const int kmin = pb_.allow_empty_chunks ? 0 : 1;
  const Layer& dec = pb_.layers[rep];
  auto is_dec = [&](int l) { return SameLayer(pb_.layers[l], dec); };
  std::vector<int> split(S, 0);
  int l = 0;
  for (int s = 0; s < S; ++s) {
    int got = 0;
    while (l < L && (s == S - 1 || got < quota[s] || !is_dec(l))) {
      if (is_dec(l)) {
        if (got == quota[s] && s < S - 1) break;
        ++got;
      }
      ++split[s];
      ++l;
      if (s < S - 1 && got == quota[s] && l < L && is_dec(l)) break;
    }
  }
  for (int x : split) {
    if (x < kmin) return {};
  }
  return l == L ? split : std::vector<int>{};
}

// Like RelaxedSplit, but each rank's decoders are spread over its chunks to
// need the least recompute: chunks differ in how many micro-batches they
// hold in flight (the last stage holds one), so a rank can keep more layers
// un-recomputed in its lightly loaded chunks. Every composition of the
// rank's count over its chunks is tried on the rank's exact memory model.
std::vector<int> Searcher::ChunkAwareSplit(const std::vector<int>& per_device, int rep) {
  const int S = c_.S, L = c_.L, p = c_.p, v = c_.v;
  const int kmin = pb_.allow_empty_chunks ? 0 : 1;
  const Layer& dec = pb_.layers[rep];
  const bool first_pinned = !SameLayer(pb_.layers[0], dec);
  const bool last_pinned = L > 1 && !SameLayer(pb_.layers[L - 1], dec);
  // Synthetic layer lists: x decoders, with the pinned layer where it sits.
  std::map<std::pair<int, int>, std::pair<std::vector<Layer>, Menu>> cache;
  auto chunk = [&](int x, int pin) -> const std::pair<std::vector<Layer>, Menu>& {
    auto key = std::make_pair(x, pin);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    std::vector<Layer> ls;
    if (pin == 1) ls.push_back(pb_.layers[0]);
    for (int i = 0; i < x; ++i) ls.push_back(dec);
    if (pin == 2) ls.push_back(pb_.layers[L - 1]);
    Menu menu = BuildMenu(ls, 0, static_cast<int>(ls.size()));
    return cache.emplace(key, std::make_pair(std::move(ls), std::move(menu))).first->second;
  };
  std::vector<int> quota(S, 0);
  for (int d = 0; d < p; ++d) {
    const int k = per_device[d];
    std::vector<int> pin(v, 0);
    if (d == 0 && first_pinned) pin[0] = 1;
    if (d == p - 1 && last_pinned) pin[v - 1] = 2;
    const Bytes cap = c_.spec.device_capacity[d];
    std::vector<int> x(v, 0), best_x;
    Nanos best_t = kInf;
    Bytes best_peak = 0;
    std::int64_t budget = 20000;
    std::function<void(int, int)> compose = [&](int c, int left) {
      if (--budget < 0) return;
      if (c == v - 1) {
        x[c] = left;
        if (pin[c] == 0 && left < kmin) return;
        std::vector<StageFixed> fx(v);
        std::vector<const Menu*> menus(v);
        std::vector<const StageFixed*> fxp(v);
        for (int cc = 0; cc < v; ++cc) {
          const auto& [ls, menu] = chunk(x[cc], pin[cc]);
          menus[cc] = &menu;
          for (const Layer& l : ls) {
            fx[cc].static_mem += l.static_memory;
            fx[cc].workspace = std::max(fx[cc].workspace, l.workspace);
          }
          fxp[cc] = &fx[cc];
        }
        // Least total recompute that fits.
        Nanos t_best = kInf;
        Bytes peak_best = 0;
        WalkFits(d, menus, fxp, cap, budget, [&] { return t_best; },
                 [&](const std::vector<const MenuPoint*>&, Nanos t, Bytes peak) {
                   if (t < t_best || (t == t_best && peak < peak_best)) {
                     t_best = t;
                     peak_best = peak;
                   }
                 });
        if (t_best < best_t || (t_best == best_t && t_best < kInf && peak_best < best_peak)) {
          best_t = t_best;
          best_peak = peak_best;
          best_x = x;
        }
        return;
      }
      for (int n = (pin[c] ? 0 : kmin); n <= left; ++n) {
        x[c] = n;
        compose(c + 1, left - n);
      }
    };
    compose(0, k);
    if (best_x.empty()) return {};
    for (int c = 0; c < v; ++c) quota[c * p + d] = best_x[c];
  }
  return SplitFromQuota(quota, rep);
}

std::vector<int> Searcher::EvenSplit() const {
  return EvenStrategy(pb_.layers, c_.p, c_.v).layers_per_stage;
}

// Contiguous split minimizing the largest per-device share of work (speed
// aware) by bisection on the bottleneck; a good incumbent for the B&B.
std::vector<int> Searcher::BalancedSplit() const {
  const int S = c_.S, L = c_.L;
  const int kmin = pb_.allow_empty_chunks ? 0 : 1;
  auto work = [&](int s, int i, int j) {
    const double sp = pb_.cluster.devices[s % c_.p].speed;
    return ScaleTime(pf_[j] - pf_[i] + pbi_[j] - pbi_[i] + pbw_[j] - pbw_[i], sp);
  };
  auto try_cap = [&](Nanos cap, std::vector<int>& out) {
    out.assign(S, 0);
    int pos = 0;
    for (int s = 0; s < S; ++s) {
      const int rest = S - s - 1;
      int k = kmin;
      const int kmax = L - pos - rest * kmin;
      if (s == S - 1) {
        k = L - pos;
        if (work(s, pos, pos + k) > cap) return false;
      } else {
        while (k + 1 <= kmax && work(s, pos, pos + k + 1) <= cap) ++k;
        if (k > kmax) return false;
      }
      out[s] = k;
      pos += k;
    }
    return pos == L;
  };
  // Every layer on the slowest device is a cap every split meets.
  Nanos lo = 0, hi = 1;
  for (int s = 0; s < S; ++s) hi = std::max(hi, work(s, 0, L) + 1);
  std::vector<int> best = EvenSplit(), tmp;
  while (lo < hi) {
    const Nanos mid = lo + (hi - lo) / 2;
    if (try_cap(mid, tmp)) {
      hi = mid;
      best = tmp;
    } else {
      lo = mid + 1;
    }
  }
  return best;
}

void Searcher::LocalSearch(std::vector<int> split, std::mt19937_64& rng,
                           int restarts) {
  const int S = c_.S;
  const int kmin = pb_.allow_empty_chunks ? 0 : 1;
  auto eval = [&](const std::vector<int>& sp, Candidate& out) {
    bool exact = true;
    if (!EvaluateSplit(sp, &out, exact)) return false;
    Offer(out);
    return out.feasible;
  };
  // First-improvement descent. Neighbours: move one layer from a chunk of
  // one of the two busiest devices to any other chunk (the layers between
  // shift by one position), least busy devices first; then move one layer
  // across a single boundary.
  auto climb = [&](std::vector<int> cur) {
    Candidate best;
    if (!eval(cur, best)) best.feasible = false;
    bool improved = true;
    int rounds = 0;
    while (improved && rounds++ < 400 && !limit_hit) {
      improved = false;
      std::vector<std::pair<int, int>> moves;  // (from stage, to stage)
      if (best.feasible) {
        std::vector<int> order(c_.p);
        for (int d = 0; d < c_.p; ++d) order[d] = d;
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
          return best.devices[a].busy > best.devices[b].busy;
        });
        for (int di = 0; di < std::min(2, c_.p); ++di) {
          for (int c = 0; c < c_.v; ++c) {
            const int from = c * c_.p + order[di];
            for (int ti = c_.p - 1; ti >= 0; --ti) {
              for (int c2 = 0; c2 < c_.v; ++c2) {
                const int to = c2 * c_.p + order[ti];
                if (to != from) moves.emplace_back(from, to);
              }
            }
          }
        }
      }
      for (int s = 0; s + 1 < S; ++s) {
        moves.emplace_back(s, s + 1);
        moves.emplace_back(s + 1, s);
      }
      // Neighbours go in fixed batches: built (recompute chosen, spec
      // filled) in order, simulated on several threads, then taken in
      // order; the first improvement wins. Batches do not depend on the
      // thread count, so neither do the answer and the node count.
      constexpr size_t kBatch = 16;
      size_t i = 0;
      bool stop = false;
      while (i < moves.size() && !improved && !stop) {
        std::vector<BatchSlot> batch;
        for (; i < moves.size() && batch.size() < kBatch; ++i) {
          const auto [from, to] = moves[i];
          std::vector<int> nb = cur;
          nb[from] -= 1;
          nb[to] += 1;
          if (nb[from] < kmin) continue;
          if (CheckLimits()) {
            stop = true;
            break;
          }
          ++nodes;
          bool exact = true;
          if (!ChooseRecompute(nb, exact)) continue;
          BatchSlot slot;
          slot.split = std::move(nb);
          BuildChosen(slot.split, slot.spec, slot.strategy, slot.recomputed);
          batch.push_back(std::move(slot));
        }
        RunBatch(batch);
        for (BatchSlot& slot : batch) {
          Candidate c;
          ToCandidate(std::move(slot.strategy), slot.recomputed, slot.sim, &c);
          const bool feasible = c.feasible;
          const bool better = feasible && (!best.feasible || Better(c, best));
          Offer(c);
          if (better) {
            best = std::move(c);
            cur = slot.split;
            improved = true;
            break;
          }
        }
      }
      if (stop) return;
    }
  };
  climb(split);
  for (int r = 0; r < restarts && !limit_hit; ++r) {
    std::vector<int> cur = top.empty() ? split : top.front().strategy.layers_per_stage;
    // Perturb: move a few random layers across random boundaries.
    std::uniform_int_distribution<int> pick(0, std::max(0, S - 2));
    for (int moves = 0; moves < 1 + r % 4 && S > 1; ++moves) {
      const int s = pick(rng);
      const int dir = (rng() & 1) ? 1 : -1;
      if (cur[s] - dir >= kmin && cur[s + 1] + dir >= kmin) {
        cur[s] -= dir;
        cur[s + 1] += dir;
      }
    }
    climb(cur);
  }
}

bool Searcher::AnyFeasibleSplit(std::vector<int>* out) {
  const int S = c_.S, L = c_.L, p = c_.p;
  const int kmin = pb_.allow_empty_chunks ? 0 : 1;
  split_.assign(S, 0);
  first_layer_.assign(S, 0);
  fixed_.assign(S, StageFixed{});
  if (L < S * kmin) return false;
  // A budget keeps a hopeless instance from running forever; running out
  // counts as "does not fit", so a reported minimum capacity errs high.
  std::int64_t budget = 2'000'000;
  std::function<bool(int, int)> rec = [&](int s, int pos) {
    if (--budget < 0) return false;
    if (s == S) return pos == L;
    const int d = s % p;
    const int khi = s == S - 1 ? L - pos : L - pos - (S - s - 1) * kmin;
    const int klo = s == S - 1 ? L - pos : kmin;
    const Bytes prev = s > 0 ? fixed_[s - 1].output : 0;
    for (int k = klo; k <= khi; ++k) {
      split_[s] = k;
      first_layer_[s] = pos;
      fixed_[s] = Fixed(s, pos, pos + k, prev);
      if (DevicePeakLowerBound(d, s + 1) > c_.spec.device_capacity[d]) break;
      if (s / p == c_.v - 1) {
        std::vector<const MenuPoint*> pts;
        bool ex = true;
        if (DeviceRecompute(d, first_layer_, split_, fixed_, pts, ex) < 0) continue;
      }
      if (rec(s + 1, pos + k)) return true;
    }
    return false;
  };
  if (!rec(0, 0)) return false;
  *out = split_;
  return true;
}

bool Searcher::Prepare(bool path_weights) {
  const int S = c_.S, L = c_.L, p = c_.p;
  least_output_ = std::numeric_limits<Bytes>::max();
  for (int l = 0; l < L; ++l) {
    if (l + 1 < L || pb_.allow_empty_chunks) {
      least_output_ = std::min(least_output_, pb_.layers[l].output_bytes);
    }
  }
  if (L <= 1) least_output_ = 0;
  suffix_work_.assign(L + 1, 0);
  for (int l = L - 1; l >= 0; --l) {
    suffix_work_[l] = suffix_work_[l + 1] + pb_.layers[l].forward +
                      pb_.layers[l].backward_input + pb_.layers[l].backward_weight;
  }
  suffix_f_.assign(L + 1, 0);
  suffix_b_.assign(L + 1, 0);
  for (int l = L - 1; l >= 0; --l) {
    suffix_f_[l] = suffix_f_[l + 1] + pb_.layers[l].forward;
    suffix_b_[l] = suffix_b_[l + 1] + pb_.layers[l].backward_input + pb_.layers[l].backward_weight;
  }
  path_acc_ = 0;
  split_.assign(S, 0);
  first_layer_.assign(S, 0);
  fixed_.assign(S, StageFixed{});
  head_.assign(p, 0);
  tail_.assign(p, 0);
  work_.assign(p, 0);
  level_bounds_.assign(S, kInf);
  chain_ = 0;
  const int kmin = pb_.allow_empty_chunks ? 0 : 1;
  if (L < S * kmin) {
    closed = true;
    stop_reason = "no split: fewer layers than chunks";
    pending_bound = kInf;
    return false;
  }
  // Until the tree search starts, all that is known is the root bound: the
  // total work spread over every device at its speed, and the chain of one
  // micro-batch through all layers at the best speed.
  {
    double speeds = 0;
    for (const auto& dv : pb_.cluster.devices) speeds += dv.speed;
    const long double total = static_cast<long double>(c_.m) * suffix_work_[0];
    const Nanos slack = static_cast<Nanos>(c_.m) * (S + 1) * 2;
    pending_bound = std::max<Nanos>(
        0, std::max(static_cast<Nanos>(std::floor(total / speeds)) - slack,
                    static_cast<Nanos>(std::floor(suffix_work_[0] / max_speed_)) - S));
    root_bound_ = RootBound(&relaxed_per_device_, &relaxed_rep_);
    if (path_weights) root_bound_ = std::max(root_bound_, PathWeights());
    pending_bound = std::max(pending_bound, root_bound_);
  }
  return true;
}

void Searcher::Run() {
  if (!Prepare()) return;
  const int kmin = pb_.allow_empty_chunks ? 0 : 1;
  std::mt19937_64 rng(opt_.seed ^ (0x9E3779B97F4A7C15ULL * (c_.index + 1)));
  std::vector<int> even = EvenSplit();
  bool even_ok = true;
  for (int x : even) even_ok &= x >= kmin;
  if (even_ok) LocalSearch(even, rng, 0);
  if (!relaxed_per_device_.empty()) {
    const std::vector<int> relaxed = RelaxedSplit(relaxed_per_device_, relaxed_rep_);
    if (!relaxed.empty()) LocalSearch(relaxed, rng, 0);
    if (c_.v > 1) {
      const std::vector<int> aware = ChunkAwareSplit(relaxed_per_device_, relaxed_rep_);
      if (!aware.empty() && aware != relaxed) LocalSearch(aware, rng, 0);
    }
  }
  LocalSearch(BalancedSplit(), rng, opt_.local_search_restarts);

  if (!limit_hit) {
    pending_bound = kInf;  // from here the tree search tracks what is open
    Dfs(0, 0);
    if (!limit_hit) {
      closed = pending_bound >= kInf;
      stop_reason = closed ? "proved optimal"
                    : menus_truncated_
                        ? "recompute choice not proved (too many distinct layers in a stage)"
                        : "recompute choice not proved";
    }
  }
  // A tree left open gets the sharper global bound for its report (not
  // the placement search's per-order runs, which report to a cutoff).
  if (!closed && !top.empty() && opt_.open_tree_bound) {
    totals_bound = TotalsPathBound(top.front().makespan);
  }
  // The top list's ties on time are settled by memory, then recompute.
  std::vector<Candidate> polished;
  for (Candidate c : top) {
    PolishTies(c.strategy.layers_per_stage, c);
    polished.push_back(std::move(c));
  }
  top.clear();
  for (auto& c : polished) Offer(std::move(c));
  Report(true);
}

}  // namespace

bool Better(const Candidate& a, const Candidate& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (a.makespan != b.makespan) return a.makespan < b.makespan;
  if (a.max_peak != b.max_peak) return a.max_peak < b.max_peak;
  if (a.recomputed_layers != b.recomputed_layers) {
    return a.recomputed_layers < b.recomputed_layers;
  }
  if (a.choice != b.choice) return a.choice < b.choice;
  if (a.strategy.layers_per_stage != b.strategy.layers_per_stage) {
    return a.strategy.layers_per_stage < b.strategy.layers_per_stage;
  }
  return a.strategy.recompute < b.strategy.recompute;
}

namespace {

Result<ChoiceContext> MakeContext(const SearchProblem& pb, int index) {
  const ScheduleChoice& ch = pb.choices[index];
  ChoiceContext c;
  c.index = index;
  c.choice = ch;
  c.p = pb.p;
  c.v = ch.v;
  c.m = pb.m;
  c.S = pb.p * ch.v;
  c.L = static_cast<int>(pb.layers.size());
  const ScheduleInfo* info = FindSchedule(ch.schedule);
  if (info == nullptr) {
    return Error{"search.schedules",
                 "the search generates its programs: expected gpipe, 1f1b or "
                 "interleaved; got '" + ch.schedule + "'"};
  }
  // Template spec: shape, placement, links, capacities; costs filled per
  // evaluation.
  c.spec = PipelineSpec::Uniform(pb.p, ch.v, pb.m, 1, 1);
  c.spec.comm = pb.comm;
  if (static_cast<int>(pb.cluster.devices.size()) != pb.p ||
      static_cast<int>(pb.cluster.links.size()) != pb.p) {
    return Error{"cluster", "needs one device and one link per stage (" +
                                std::to_string(pb.p) + ")"};
  }
  for (int d = 0; d < pb.p; ++d) {
    c.spec.device_capacity[d] = pb.cluster.devices[d].memory_capacity;
  }
  c.spec.link_matrix = RingLinkMatrix(pb.p, pb.cluster.links);
  auto prog = info->generate(c.spec, ch.params);
  if (!prog.ok()) return prog.error();
  c.program = std::move(prog).value();
  c.profile = BuildProfile(c.spec, c.program);
  return c;
}

// Smallest uniform capacity at which some split fits, by bisection over an
// exact feasibility search; the binding device is one that cannot fit that
// split with a byte less.
void MinCapacity(const SearchProblem& pb, const SearchOptions& options,
                 const std::vector<ChoiceContext>& ctxs, SearchResult& res) {
  Bytes best = kInf;
  int binding = -1;
  auto at = [&](const ChoiceContext& c0, Bytes cap) {
    ChoiceContext c = c0;
    for (auto& x : c.spec.device_capacity) x = cap;
    return std::make_unique<Searcher>(pb, options, std::move(c));
  };
  for (const ChoiceContext& c0 : ctxs) {
    std::vector<int> split;
    Bytes hi = 1;
    while (!at(c0, hi)->AnyFeasibleSplit(&split)) {
      if (hi > (Bytes{1} << 61)) break;
      hi *= 2;
    }
    if (hi > (Bytes{1} << 61)) continue;
    Bytes lo = 0;
    while (lo < hi) {
      const Bytes mid = lo + (hi - lo) / 2;
      if (at(c0, mid)->AnyFeasibleSplit(&split)) hi = mid;
      else lo = mid + 1;
    }
    if (hi < best) {
      best = hi;
      at(c0, hi)->AnyFeasibleSplit(&split);
      bool exact = true;
      int failed = -1;
      if (!at(c0, hi - 1)->ChooseRecompute(split, exact, &failed)) binding = failed;
    }
  }
  if (best < kInf) {
    res.min_capacity_needed = best;
    res.binding_device = binding;
  }
}

}  // namespace

// The search on the problem's own cluster (no placement decision).
// The contexts of the choices the schedules accept; the first refusal when
// they accept none.
static Result<std::vector<ChoiceContext>> MakeContexts(const SearchProblem& problem) {
  std::vector<ChoiceContext> ctxs;
  std::vector<Error> refused;
  for (int i = 0; i < static_cast<int>(problem.choices.size()); ++i) {
    auto c = MakeContext(problem, i);
    if (!c.ok()) {
      refused.push_back(c.error());
      continue;
    }
    ctxs.push_back(std::move(c).value());
  }
  if (ctxs.empty()) return refused.front();
  return ctxs;
}

static Result<SearchResult> SearchFixed(const SearchProblem& problem,
                                        const SearchOptions& options) {
  const auto t0 = Clock::now();
  if (problem.choices.empty()) {
    return Error{"search", "needs at least one schedule choice"};
  }
  Result<std::vector<ChoiceContext>> made = MakeContexts(problem);
  if (!made.ok()) return made.error();
  std::vector<ChoiceContext> ctxs = std::move(made).value();

  // Each choice is searched independently (so results do not depend on
  // thread timing); with several threads, choices run concurrently and
  // their progress reports are serialized.
  // A node limit is shared out over the choices (deterministically); each
  // choice reports its own progress and the caller sees the sum of nodes and
  // evaluations, the best incumbent and the least bound over all choices (a
  // choice not yet started bounds nothing: 0).
  const int n = static_cast<int>(ctxs.size());
  std::vector<SearchOptions> opts(n, options);
  std::mutex progress_mu;
  std::vector<SearchProgress> latest(n);
  for (auto& pr : latest) pr.lower_bound = 0;
  const auto start = Clock::now();
  // Threads: choices run side by side; what is left over goes to each
  // choice's batches of simulations.
  const int per_choice_threads = std::max(1, options.threads / std::max(1, std::min(options.threads, n)));
  for (int i = 0; i < n; ++i) {
    opts[i].threads = per_choice_threads;
    if (options.node_limit > 0) {
      opts[i].node_limit = options.node_limit / n + (i < options.node_limit % n ? 1 : 0);
      if (opts[i].node_limit == 0) opts[i].node_limit = -1;  // no nodes at all
    }
    if (options.progress) {
      opts[i].progress = [&, i](const SearchProgress& pr) {
        std::lock_guard<std::mutex> lock(progress_mu);
        latest[i] = pr;
        SearchProgress all;
        all.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
        Nanos inc = kInf, lb = kInf;
        for (const auto& x : latest) {
          all.nodes += x.nodes;
          all.evaluations += x.evaluations;
          if (x.incumbent >= 0) inc = std::min(inc, x.incumbent);
          lb = std::min(lb, x.lower_bound);
        }
        all.incumbent = inc >= kInf ? -1 : inc;
        all.lower_bound = lb >= kInf ? 0 : std::min(lb, inc);
        all.gap = all.incumbent > 0 ? static_cast<double>(all.incumbent - all.lower_bound) /
                                          static_cast<double>(all.incumbent)
                                    : 1.0;
        all.choice = -1;
        options.progress(all);
      };
    }
  }
  std::vector<std::unique_ptr<Searcher>> searchers;
  for (int i = 0; i < n; ++i) {
    searchers.push_back(std::make_unique<Searcher>(problem, opts[i], ctxs[i]));
  }
  const int threads = std::max(1, std::min<int>(options.threads, static_cast<int>(searchers.size())));
  if (threads == 1) {
    for (auto& s : searchers) s->Run();
  } else {
    std::vector<std::thread> pool;
    std::atomic<size_t> next{0};
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&]() {
        for (size_t i = next++; i < searchers.size(); i = next++) searchers[i]->Run();
      });
    }
    for (auto& th : pool) th.join();
  }

  SearchResult res;
  std::vector<Candidate> all;
  bool all_closed = true;
  Nanos lb = kInf;
  std::vector<std::pair<double, Nanos>> events;
  for (auto& s : searchers) {
    events.insert(events.end(), s->incumbents.begin(), s->incumbents.end());
  }
  std::sort(events.begin(), events.end());
  for (const auto& e : events) {
    if (res.incumbents.empty() || e.second < res.incumbents.back().second) {
      res.incumbents.push_back(e);
    }
  }
  for (auto& s : searchers) {
    res.nodes += s->nodes;
    res.evaluations += s->evaluations;
    for (auto& c : s->top) all.push_back(c);
    all_closed &= s->closed;
    // This choice's bound on its own optimum.
    Nanos own = s->top.empty() ? kInf : s->top.front().makespan;
    own = std::min(own, s->pending_bound);
    // Whatever can still beat the choice's incumbent obeys TotalsPathBound.
    if (!s->top.empty()) own = std::max(own, std::min(s->top.front().makespan, s->totals_bound));
    lb = std::min(lb, own);
  }
  std::sort(all.begin(), all.end(), Better);
  const int k = std::max(1, options.top_k);
  if (static_cast<int>(all.size()) > k) all.resize(k);
  res.top = all;
  res.found = !all.empty();
  if (res.found) {
    // Report the strategies as Lower() + Engine evaluate them.
    for (auto& c : res.top) {
      auto e = Evaluate(problem, c.choice, c.strategy);
      if (e.ok()) c = std::move(e).value();
    }
    res.best = res.top.front();
  }
  res.proved_optimal = res.found && all_closed;
  res.proved_infeasible = !res.found && all_closed;
  res.lower_bound = lb >= kInf ? 0 : std::min(lb, res.found ? res.best.makespan : lb);
  if (res.found) {
    res.gap = res.best.makespan > 0
                  ? static_cast<double>(res.best.makespan - res.lower_bound) /
                        static_cast<double>(res.best.makespan)
                  : 0.0;
  }
  std::string reason;
  for (auto& s : searchers) {
    if (!s->closed && reason.empty()) reason = s->stop_reason;
  }
  res.stop_reason = all_closed ? (res.found ? "proved optimal" : "proved infeasible")
                               : reason;
  if (!res.found && options.min_capacity) {
    MinCapacity(problem, options, ctxs, res);
    res.lower_bound = 0;
  }
  res.solve_time_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

namespace {

// ---------------------------------------------------------------------------
// Placement search (SearchProblem::search_placement): which physical device
// runs each rank, jointly with the split and the recompute.
//
// Depth-first branch-and-bound over device orders, rank 0 first. A prefix
// (the devices of ranks 0..k-1) is bounded by the root bound of a relaxed
// cluster: every rank not yet placed gets the fastest speed and the largest
// memory among the devices left, and every boundary with an unplaced end the
// best link class. The relaxation is valid because the simulated iteration
// time of a fixed program is a max-plus expression of op durations and
// message delays (so it can only fall when a device gets faster or a link
// better), and more memory only adds feasible recompute choices: the relaxed
// cluster's optimum is at most that of any completion, and the root bound
// is at most the relaxed optimum. At a leaf the cluster is exact; its split
// and recompute are searched by the fixed-cluster search under a cutoff (the
// K-th best time so far), so a leaf that cannot enter the top list is closed
// as soon as its own tree falls above the cutoff.
//
// Symmetry: devices of one type on one node are interchangeable (only the
// lowest-numbered unplaced one is tried), so are whole nodes no device of
// which is placed yet when their type multisets are equal; orders that
// still coincide in what the engine can see (PlacementKey) are searched once.
class PlacementSearcher {
 public:
  PlacementSearcher(const SearchProblem& pb, const SearchOptions& opt,
                    std::vector<ChoiceContext> ctxs)
      : pb_(pb), opt_(opt), topo_(pb.topology), ctxs_(std::move(ctxs)) {
    n_ = topo_.num_devices();
    ring_ = false;
    for (const ChoiceContext& c : ctxs_) ring_ |= c.v > 1;
    best_link_.latency = std::min(topo_.intra_node.latency, topo_.inter_node.latency);
    auto bw = [](BytesPerSec b) {
      return b <= 0 ? std::numeric_limits<BytesPerSec>::max() : b;
    };
    const BytesPerSec b = std::max(bw(topo_.intra_node.bandwidth), bw(topo_.inter_node.bandwidth));
    best_link_.bandwidth = b == std::numeric_limits<BytesPerSec>::max() ? 0 : b;
    // Nodes whose devices form the same multiset of types.
    const int nodes = static_cast<int>(topo_.node_names.size());
    std::vector<std::vector<int>> comp(nodes, std::vector<int>(topo_.types.size(), 0));
    for (int d = 0; d < n_; ++d) ++comp[topo_.device_node[d]][topo_.device_type[d]];
    node_class_.assign(nodes, 0);
    for (int a = 0; a < nodes; ++a) {
      node_class_[a] = a;
      for (int o = 0; o < a; ++o) {
        if (comp[a] == comp[o]) {
          node_class_[a] = node_class_[o];
          break;
        }
      }
    }
    // Whatever the order, the devices share all the work: T >= m * W / sum
    // of speeds (less the per-op rounding of scaled times).
    double speeds = 0;
    for (int d = 0; d < n_; ++d) speeds += topo_.types[topo_.device_type[d]].speed;
    long double work = 0;
    for (const Layer& l : pb_.layers) work += l.forward + l.backward_input + l.backward_weight;
    int max_s = 0;
    for (const ChoiceContext& c : ctxs_) max_s = std::max(max_s, c.S);
    work_bound_ = std::max<Nanos>(
        0, static_cast<Nanos>(std::floor(work * pb_.m / speeds)) -
               static_cast<Nanos>(pb_.m) * (max_s + 1) * 2);
    work_bound_ = std::max(work_bound_, DecoderBound());
    start_ = Clock::now();
  }

  SearchResult Run();

 private:
  // Whatever the order: the largest group of identical layers (D
  // "decoders") is spread over the devices in whole numbers; a device of
  // type t holding k of them is busy at least m * (k * w + R_t(k)) / speed,
  // where R_t(k) is the least recompute with which their static memory and
  // stash fit its memory at the most favourable rank (the least weight of
  // micro-batches in flight any rank has). The least level every device
  // can stay under while together they hold all D bounds the optimum.
  Nanos DecoderBound() const;
  double Elapsed() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }
  std::int64_t AllNodes() const { return nodes_ + placement_nodes_; }
  bool OutOfLimits() {
    if (limit_hit_) return true;
    if (opt_.node_limit != 0 && AllNodes() >= std::max<std::int64_t>(0, opt_.node_limit)) {
      limit_hit_ = true;
      stop_reason_ = "node limit";
    } else if (opt_.time_limit_s > 0 && Elapsed() >= opt_.time_limit_s) {
      limit_hit_ = true;
      stop_reason_ = "time limit";
    }
    return limit_hit_;
  }
  Nanos Threshold() const { return TopThreshold(top_, opt_.top_k, opt_.cutoff); }
  void Offer(Candidate c) {
    if (OfferTop(top_, std::move(c), opt_.top_k)) {
      incumbents_.emplace_back(Elapsed(), top_.front().makespan);
    }
  }
  void Report(bool force);
  Cluster Relaxed(const Placement& prefix) const;
  // The problem on one fixed cluster (no placement search), and a schedule
  // choice's context with that cluster's capacities and links.
  SearchProblem FixedProblem(Cluster cluster) const;
  ChoiceContext ContextOn(size_t choice, const Cluster& cluster) const;
  Nanos Bound(const Placement& prefix);
  // Searches the split and recompute of a full order; `budget` > 0 caps
  // its nodes (a heuristic look, which leaves the order open).
  void Leaf(const Placement& order, Nanos bound, std::int64_t budget);
  void Dfs(Placement& prefix, std::vector<char>& used, Nanos bound);
  std::vector<Placement> HeuristicOrders() const;
  // Swaps of two ranks' devices from the best order while they improve it
  // (each order searched with a small node budget).
  void PolishOrder(std::int64_t budget);
  void BoundFastestPlacements();

  const SearchProblem& pb_;
  const SearchOptions& opt_;
  const Topology& topo_;
  std::vector<ChoiceContext> ctxs_;
  int n_ = 0;
  bool ring_ = false;
  Link best_link_;
  Nanos work_bound_ = 0;
  std::vector<int> node_class_;
  std::vector<Candidate> top_;
  std::map<std::vector<std::int32_t>, bool> seen_;  // key -> closed
  Nanos open_bound_ = kInf;  // least bound over what was left open
  bool limit_hit_ = false;
  bool inexact_ = false;     // some leaf closed without a proof
  std::string stop_reason_;
  std::string inexact_reason_;
  std::int64_t nodes_ = 0, evaluations_ = 0, placement_nodes_ = 0, searched_ = 0;
  Clock::time_point start_;
  Clock::time_point last_report_{};
  std::vector<std::pair<double, Nanos>> incumbents_;
  // BoundFastestPlacements: sets of ranks for the fastest type, how many
  // were bounded, and the least bound when all were (0: none).
  std::int64_t fast_sets_total_ = 0, fast_sets_done_ = 0;
  Nanos fast_bound_ = 0;
};

Nanos PlacementSearcher::DecoderBound() const {
  if (pb_.layers.empty()) return 0;
  const auto [rep, D] = LargestIdenticalGroup(pb_.layers);
  const Layer& dec = pb_.layers[rep];
  const Nanos w = dec.forward + dec.backward_input + dec.backward_weight;
  // Least recompute time of k decoders whose stash fits `room`.
  std::vector<std::vector<std::pair<Bytes, Nanos>>> fronts(D + 1);
  for (int k = 0; k <= D; ++k) fronts[k] = StackRecomputeFront(dec, k);
  auto least_rt = [&](int k, long double room) -> Nanos {
    Nanos best_t = kInf;
    for (const auto& [st, t] : fronts[k]) {
      if (static_cast<long double>(st) <= room) best_t = std::min(best_t, t);
    }
    return best_t;
  };
  Nanos overall = kInf;
  for (const ChoiceContext& c : ctxs_) {
    // The least weight of stash in flight at a rank's peak: max over its
    // moments of the fewest micro-batches any chunk holds (valid for any
    // spread of the stash over the chunks), least over the ranks.
    double weight = std::numeric_limits<double>::infinity();
    for (int d = 0; d < c.p; ++d) {
      double mx = 0;
      for (const Moment& mo : c.profile.moments[d]) {
        mx = std::max(mx, static_cast<double>(*std::min_element(mo.counts.begin(), mo.counts.end())));
      }
      weight = std::min(weight, mx);
    }
    if (!std::isfinite(weight)) weight = 0;
    // load[t][k] per device type.
    const int T = static_cast<int>(topo_.types.size());
    std::vector<std::vector<Nanos>> load(T, std::vector<Nanos>(D + 1, kInf));
    for (int t = 0; t < T; ++t) {
      const DeviceType& dt = topo_.types[t];
      for (int k = 0; k <= D; ++k) {
        const long double room =
            static_cast<long double>(dt.memory_capacity) - static_cast<long double>(k) * dec.static_memory;
        if (room < 0) break;
        const Nanos rt = weight > 0 ? least_rt(k, room / weight) : 0;
        if (rt >= kInf) break;  // more decoders fit no better
        load[t][k] = static_cast<Nanos>(
            std::floor(static_cast<long double>(pb_.m) * (k * w + rt) / dt.speed));
      }
    }
    auto absorbs = [&](Nanos lambda) {
      long long total = 0;
      for (int d = 0; d < n_; ++d) {
        const auto& ld = load[topo_.device_type[d]];
        int k = 0;
        while (k < D && ld[k + 1] <= lambda) ++k;
        total += k;
      }
      return total >= D;
    };
    Nanos lo = 0, hi = 1;
    bool ok = true;
    while (!absorbs(hi)) {
      if (hi > kInf / 4) {
        ok = false;
        break;
      }
      hi *= 2;
    }
    if (!ok) continue;  // nothing fits this choice: it bounds nothing here
    while (lo < hi) {
      const Nanos mid = lo + (hi - lo) / 2;
      if (absorbs(mid)) hi = mid;
      else lo = mid + 1;
    }
    overall = std::min(overall, lo);
  }
  if (overall >= kInf) return 0;
  // Per-op rounding of scaled times can shave a little.
  int max_s = 0;
  for (const ChoiceContext& c : ctxs_) max_s = std::max(max_s, c.S);
  return std::max<Nanos>(0, overall - static_cast<Nanos>(pb_.m) * (max_s + 1) * 2);
}

void PlacementSearcher::Report(bool force) {
  if (!opt_.progress || !ReportDue(force, opt_.progress_interval_s, last_report_)) return;
  SearchProgress pr;
  pr.elapsed_s = Elapsed();
  pr.nodes = AllNodes();
  pr.evaluations = evaluations_;
  pr.incumbent = top_.empty() ? -1 : top_.front().makespan;
  pr.lower_bound = std::min(open_bound_, pr.incumbent < 0 ? kInf : pr.incumbent);
  if (pr.lower_bound >= kInf) pr.lower_bound = 0;
  pr.gap = pr.incumbent > 0 ? static_cast<double>(pr.incumbent - pr.lower_bound) /
                                  static_cast<double>(pr.incumbent)
                            : 1.0;
  opt_.progress(pr);
}

Cluster PlacementSearcher::Relaxed(const Placement& prefix) const {
  const int k = static_cast<int>(prefix.size());
  Placement full = prefix;
  std::vector<char> used(n_, 0);
  for (int d : prefix) used[d] = 1;
  Device super;
  super.speed = 0;
  for (int d = 0; d < n_; ++d) {
    if (used[d]) continue;
    full.push_back(d);
    const DeviceType& t = topo_.types[topo_.device_type[d]];
    super.speed = std::max(super.speed, t.speed);
    super.memory_capacity = std::max(super.memory_capacity, t.memory_capacity);
  }
  Cluster c = ClusterFor(topo_, full);
  for (int r = k; r < n_; ++r) c.devices[r] = super;
  for (int r = 0; r < n_; ++r) {
    if (r >= k || (r + 1) % n_ >= k) c.links[r] = best_link_;
  }
  return c;
}

SearchProblem PlacementSearcher::FixedProblem(Cluster cluster) const {
  SearchProblem q = pb_;
  q.search_placement = false;
  q.cluster = std::move(cluster);
  return q;
}

ChoiceContext PlacementSearcher::ContextOn(size_t choice, const Cluster& cluster) const {
  ChoiceContext c = ctxs_[choice];
  for (int d = 0; d < pb_.p; ++d) c.spec.device_capacity[d] = cluster.devices[d].memory_capacity;
  c.spec.link_matrix = RingLinkMatrix(pb_.p, cluster.links);
  return c;
}

Nanos PlacementSearcher::Bound(const Placement& prefix) {
  const SearchProblem q = FixedProblem(Relaxed(prefix));
  SearchOptions o = opt_;
  o.progress = nullptr;
  Nanos best = kInf;
  for (size_t ci = 0; ci < ctxs_.size(); ++ci) {
    Searcher s(q, o, ContextOn(ci, q.cluster));
    best = std::min(best, s.RootOnly());
  }
  return std::max(best, work_bound_);
}

void PlacementSearcher::PolishOrder(std::int64_t budget) {
  for (int round = 0; round < 4 * n_ && !top_.empty(); ++round) {
    const Placement current = top_.front().placement;
    const Nanos before = top_.front().makespan;
    bool improved = false;
    for (int i = 0; i < n_ && !improved; ++i) {
      for (int j = i + 1; j < n_ && !improved; ++j) {
        const int a = current[i], b = current[j];
        if (topo_.device_type[a] == topo_.device_type[b] &&
            topo_.device_node[a] == topo_.device_node[b]) {
          continue;  // the same order
        }
        if (OutOfLimits()) return;
        Placement next = current;
        std::swap(next[i], next[j]);
        Leaf(next, 0, budget);  // a look: no pruning, so no bound needed
        improved = top_.front().makespan < before;
      }
    }
    if (!improved) return;
  }
}

void PlacementSearcher::Leaf(const Placement& order, Nanos bound, std::int64_t budget) {
  const std::vector<std::int32_t> key = PlacementKey(topo_, order, ring_);
  auto it = seen_.find(key);
  if (it != seen_.end() && (it->second || budget > 0)) return;
  if (bound > Threshold()) {
    seen_[key] = true;  // cannot enter the top list
    return;
  }
  const SearchProblem q = FixedProblem(ClusterFor(topo_, order));
  SearchOptions o = opt_;
  o.progress = nullptr;
  o.min_capacity = false;
  o.open_tree_bound = false;  // its bound only decides whether the order is open
  const Nanos cut = Threshold();
  o.cutoff = cut >= kInf ? -1 : cut;
  if (opt_.time_limit_s > 0) o.time_limit_s = std::max(1e-3, opt_.time_limit_s - Elapsed());
  std::int64_t nodes_left = 0;
  if (opt_.node_limit != 0) {
    nodes_left = std::max<std::int64_t>(0, opt_.node_limit) - AllNodes();
    if (nodes_left <= 0) nodes_left = -1;
  }
  o.node_limit = budget > 0 ? (nodes_left != 0 ? std::min(budget, nodes_left) : budget) : nodes_left;
  if (o.node_limit < 0) o.node_limit = -1;
  Result<SearchResult> r = SearchFixed(q, o);
  if (budget <= 0) ++searched_;
  if (!r.ok()) {  // a schedule refused p/v/m: the same for every order
    seen_[key] = true;
    return;
  }
  nodes_ += r->nodes;
  evaluations_ += r->evaluations;
  for (Candidate c : r->top) {
    c.placement = order;
    Offer(std::move(c));
  }
  const bool closed = r->proved_optimal || r->proved_infeasible;
  if (budget > 0) {
    if (!closed) {
      seen_.emplace(key, false);
      return;
    }
  }
  seen_[key] = true;
  if (!closed) {
    if (r->stop_reason == "node limit" || r->stop_reason == "time limit") {
      limit_hit_ = true;
      stop_reason_ = r->stop_reason;
      open_bound_ = std::min(open_bound_, r->found ? r->lower_bound : bound);
    } else {
      inexact_ = true;
      inexact_reason_ = r->stop_reason;
      open_bound_ = std::min(open_bound_, r->found ? r->lower_bound : bound);
    }
  }
  Report(false);
}

void PlacementSearcher::Dfs(Placement& prefix, std::vector<char>& used, Nanos bound) {
  if (OutOfLimits()) {
    open_bound_ = std::min(open_bound_, bound);
    return;
  }
  if (static_cast<int>(prefix.size()) == n_) {
    Leaf(prefix, bound, 0);
    return;
  }
  ++placement_nodes_;
  const int nodes = static_cast<int>(topo_.node_names.size());
  std::vector<char> touched(nodes, 0);
  for (int d : prefix) touched[topo_.device_node[d]] = 1;
  std::vector<std::pair<Nanos, int>> kids;
  for (int d = 0; d < n_; ++d) {
    if (used[d]) continue;
    bool rep = true;
    for (int e = 0; e < d && rep; ++e) {
      if (used[e]) continue;
      const int nd = topo_.device_node[d], ne = topo_.device_node[e];
      if (topo_.device_type[e] != topo_.device_type[d]) continue;
      // Same node, or an untouched node of the same make-up: e stands for d.
      if (ne == nd) rep = false;
      if (!touched[nd] && !touched[ne] && node_class_[nd] == node_class_[ne] && ne < nd) rep = false;
    }
    if (!rep) continue;
    prefix.push_back(d);
    kids.emplace_back(Bound(prefix), d);
    prefix.pop_back();
  }
  std::sort(kids.begin(), kids.end());
  for (size_t i = 0; i < kids.size(); ++i) {
    const auto [b, d] = kids[i];
    if (b > Threshold()) break;  // sorted: the rest cannot do better
    if (OutOfLimits()) {
      open_bound_ = std::min(open_bound_, b);
      continue;
    }
    prefix.push_back(d);
    used[d] = 1;
    Dfs(prefix, used, b);
    used[d] = 0;
    prefix.pop_back();
  }
}

// Orders worth a first look: nodes kept together, the largest-memory
// devices first (the first ranks hold the most micro-batches in flight
// under 1F1B); the same with the fastest first; the given order.
std::vector<Placement> PlacementSearcher::HeuristicOrders() const {
  std::vector<Placement> out;
  const int nodes = static_cast<int>(topo_.node_names.size());
  for (int rule = 0; rule < 2; ++rule) {
    auto key = [&](int d) {
      const DeviceType& t = topo_.types[topo_.device_type[d]];
      return rule == 0 ? std::make_tuple(-static_cast<double>(t.memory_capacity), -t.speed)
                       : std::make_tuple(-t.speed, -static_cast<double>(t.memory_capacity));
    };
    std::vector<std::vector<int>> by_node(nodes);
    for (int d = 0; d < n_; ++d) by_node[topo_.device_node[d]].push_back(d);
    for (auto& v : by_node) {
      std::stable_sort(v.begin(), v.end(), [&](int a, int b) { return key(a) < key(b); });
    }
    std::vector<int> order(nodes);
    for (int i = 0; i < nodes; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      if (by_node[a].empty() || by_node[b].empty()) return !by_node[a].empty();
      return key(by_node[a].front()) < key(by_node[b].front());
    });
    Placement pl;
    for (int nd : order) pl.insert(pl.end(), by_node[nd].begin(), by_node[nd].end());
    out.push_back(pl);
  }
  out.push_back(pb_.given_placement);
  return out;
}

// A bound for every order at once. Each order puts the fastest device type
// on some set of ranks; over all such sets (when there are few enough), a
// cluster with that type on the set, every other rank given the fastest
// speed and the largest memory of the other types, and every link the best
// class is a relaxation of each order with that set (the simulated time of
// a fixed program cannot rise when a device gets faster or a link better,
// and more memory only adds choices). Its root and open-tree bounds (the
// exact LP over decoder counts with the program's critical paths) bound
// those orders; the least over the sets bounds them all. Each set only has
// to reach the least found so far, and the sets share the paths their LPs
// used (same program, same links). Sets are spread over the threads; the
// bound counts only when every set was bounded within the time share.
void PlacementSearcher::BoundFastestPlacements() {
  if (top_.empty() || ctxs_.empty()) return;
  const int T = static_cast<int>(topo_.types.size());
  if (T < 2) return;
  int fast = 0;
  for (int t = 1; t < T; ++t) {
    if (topo_.types[t].speed > topo_.types[fast].speed) fast = t;
  }
  Device fastd, rest;
  fastd.speed = topo_.types[fast].speed;
  fastd.memory_capacity = topo_.types[fast].memory_capacity;
  rest.speed = 0;
  rest.memory_capacity = 0;
  int k = 0;
  for (int d = 0; d < n_; ++d) {
    const DeviceType& t = topo_.types[topo_.device_type[d]];
    if (topo_.device_type[d] == fast) {
      ++k;
      continue;
    }
    rest.speed = std::max(rest.speed, t.speed);
    rest.memory_capacity = std::max(rest.memory_capacity, t.memory_capacity);
  }
  if (k == 0 || k == n_) return;
  // All k-subsets of the n ranks, in lexicographic order (few enough).
  std::vector<std::vector<int>> sets;
  constexpr size_t kMaxSets = 5000;
  {
    std::vector<int> pick(k);
    for (int i = 0; i < k; ++i) pick[i] = i;
    while (sets.size() <= kMaxSets) {
      sets.push_back(pick);
      int i = k - 1;
      while (i >= 0 && pick[i] == n_ - k + i) --i;
      if (i < 0) break;
      ++pick[i];
      for (int j = i + 1; j < k; ++j) pick[j] = pick[j - 1] + 1;
    }
    if (sets.size() > kMaxSets) return;
  }
  fast_sets_total_ = static_cast<std::int64_t>(sets.size());
  // Each set counts as a placement node: a node limit that cannot cover
  // them all leaves the bound out (and its nodes to the tree search).
  if (opt_.node_limit != 0 &&
      AllNodes() + fast_sets_total_ > std::max<std::int64_t>(0, opt_.node_limit)) {
    return;
  }
  // Time share: up to 60% of the limit from the start of the search.
  const double share = opt_.time_limit_s > 0 ? 0.6 * opt_.time_limit_s : 0;
  if (opt_.time_limit_s > 0 && Elapsed() >= share) return;
  const Nanos best = top_.front().makespan;
  std::atomic<Nanos> least{best};
  std::atomic<std::int64_t> done{0};
  std::atomic<bool> stop{false};
  const Cluster base = ClusterFor(topo_, pb_.given_placement);
  auto work = [&](int thread, int threads) {
    std::vector<std::vector<Searcher::Path>> pools(ctxs_.size());
    std::vector<std::vector<std::pair<Bytes, Nanos>>> fronts;
    std::vector<Searcher::RecomputeRows> rows(ctxs_.size());
    for (size_t si = thread; si < sets.size() && !stop; si += threads) {
      if (opt_.time_limit_s > 0 && Elapsed() >= share) {
        stop = true;
        break;
      }
      Cluster relaxed = base;
      for (int r = 0; r < n_; ++r) relaxed.devices[r] = rest;
      for (int r : sets[si]) relaxed.devices[r] = fastd;
      for (Link& l : relaxed.links) l = best_link_;
      const SearchProblem q = FixedProblem(std::move(relaxed));
      SearchOptions o = opt_;
      o.progress = nullptr;
      if (opt_.time_limit_s > 0) o.time_limit_s = std::max(1e-3, share - Elapsed());
      Nanos b = kInf;
      for (size_t ci = 0; ci < ctxs_.size(); ++ci) {
        Searcher s(q, o, ContextOn(ci, q.cluster));
        s.SharePaths(&pools[ci]);
        s.ShareFronts(&fronts);
        s.ShareRecompute(&rows[ci]);
        b = std::min(b, s.RootAndTotals(least.load()));
      }
      Nanos cur = least.load();
      while (b < cur && !least.compare_exchange_weak(cur, b)) {
      }
      ++done;
      if (thread == 0) Report(false);  // progress (the other threads touch none of it)
    }
  };
  // Without a time limit the sets run in order on one thread, so that the
  // bound (each set's target is the least so far) does not depend on
  // thread timing; with one, the sets are spread over the threads.
  const int threads = opt_.time_limit_s > 0
                          ? std::max(1, std::min<int>(opt_.threads, static_cast<int>(sets.size())))
                          : 1;
  if (threads == 1) {
    work(0, 1);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t, threads);
    for (auto& th : pool) th.join();
  }
  fast_sets_done_ = done.load();
  placement_nodes_ += fast_sets_done_;
  if (fast_sets_done_ == fast_sets_total_) fast_bound_ = std::min(least.load(), best);
}

SearchResult PlacementSearcher::Run() {
  // A short look at a few natural orders gives an incumbent for pruning.
  constexpr std::int64_t kLook = 64;
  for (const Placement& pl : HeuristicOrders()) {
    if (OutOfLimits()) break;
    Leaf(pl, 0, kLook);
  }
  // The bound over every order comes before the polish: it needs only an
  // incumbent, and the polish would take its time.
  BoundFastestPlacements();
  PolishOrder(kLook);
  Placement prefix;
  std::vector<char> used(n_, 0);
  // (Stopped before the tree search, the whole tree is open: its root bound
  // is what is known.)
  Dfs(prefix, used, Bound(prefix));
  Report(true);

  SearchResult res;
  res.nodes = AllNodes();
  res.evaluations = evaluations_;
  res.placements_searched = searched_;
  res.placement_nodes = placement_nodes_;
  res.incumbents = incumbents_;
  res.top = top_;
  res.found = !top_.empty();
  for (auto& c : res.top) {
    auto e = Evaluate(pb_, c.choice, c.strategy, c.placement);
    if (e.ok()) c = std::move(e).value();
  }
  if (res.found) res.best = res.top.front();
  const bool closed = !limit_hit_ && !inexact_;
  res.proved_optimal = res.found && closed;
  res.proved_infeasible = !res.found && closed;
  res.lower_bound = res.found ? std::min(open_bound_, res.best.makespan) : 0;
  // The bound over every order from the fastest type's rank sets.
  if (res.found && fast_bound_ > 0) {
    res.lower_bound = std::max(res.lower_bound, std::min(fast_bound_, res.best.makespan));
  }
  res.fast_sets = fast_sets_total_;
  res.fast_sets_bounded = fast_sets_done_;
  res.fast_sets_bound = fast_bound_;
  if (res.found && res.best.makespan > 0) {
    res.gap = static_cast<double>(res.best.makespan - res.lower_bound) /
              static_cast<double>(res.best.makespan);
  }
  res.stop_reason = closed ? (res.found ? "proved optimal" : "proved infeasible")
                           : limit_hit_ ? stop_reason_ : inexact_reason_;
  return res;
}

Result<SearchResult> SearchPlacement(const SearchProblem& problem,
                                     const SearchOptions& options) {
  const auto t0 = Clock::now();
  const Topology& topo = problem.topology;
  if (topo.num_devices() != problem.p || !IsPlacement(topo, problem.given_placement)) {
    return Error{"cluster", "the placement search needs one device per rank (" +
                                std::to_string(problem.p) + ") and a given order"};
  }
  Result<std::vector<ChoiceContext>> made = MakeContexts(problem);
  if (!made.ok()) return made.error();
  std::vector<ChoiceContext> ctxs = std::move(made).value();
  PlacementSearcher ps(problem, options, std::move(ctxs));
  SearchResult res = ps.Run();
  res.solve_time_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace

Result<SearchResult> Search(const SearchProblem& problem,
                            const SearchOptions& options) {
  if (problem.choices.empty()) {
    return Error{"search", "needs at least one schedule choice"};
  }
  if (problem.search_placement) return SearchPlacement(problem, options);
  return SearchFixed(problem, options);
}

Result<Candidate> Evaluate(const SearchProblem& problem, int choice,
                           const Strategy& strategy,
                           const Placement& placement) {
  if (choice < 0 || choice >= static_cast<int>(problem.choices.size())) {
    return Error{"search", "no schedule choice " + std::to_string(choice)};
  }
  if (!placement.empty() && !IsPlacement(problem.topology, placement)) {
    return Error{"search", "the placement is not a permutation of the devices"};
  }
  const ScheduleChoice& ch = problem.choices[choice];
  const Cluster placed =
      placement.empty() ? Cluster{} : ClusterFor(problem.topology, placement);
  auto spec = Lower(problem.layers, placement.empty() ? problem.cluster : placed,
                    PipelineShape{problem.p, ch.v, problem.m, problem.comm}, strategy,
                    problem.allow_empty_chunks);
  if (!spec.ok()) return spec.error();
  const ScheduleInfo* info = FindSchedule(ch.schedule);
  if (info == nullptr) {
    return Error{"search.schedules", "unknown schedule '" + ch.schedule + "'"};
  }
  auto prog = info->generate(*spec, ch.params);
  if (!prog.ok()) return prog.error();
  Engine engine;
  SimOptions so;
  so.record_ops = false;
  const SimResult r = engine.Run(*spec, *prog, so);
  Candidate c;
  c.choice = choice;
  c.strategy = strategy;
  c.makespan = r.makespan;
  c.bubble_fraction = r.bubble_fraction();
  for (const auto& d : r.devices) c.max_peak = std::max(c.max_peak, d.peak_memory);
  for (auto x : strategy.recompute) c.recomputed_layers += x != 0;
  c.feasible = r.outcome == Outcome::Ok;
  c.devices = r.devices;
  c.placement = placement;
  return c;
}

std::vector<Baseline> Baselines(const SearchProblem& problem, int choice) {
  std::vector<Baseline> out;
  const ScheduleChoice& ch = problem.choices[choice];
  const int p = problem.p, v = ch.v, S = p * v;
  const int L = static_cast<int>(problem.layers.size());
  auto add = [&](std::string name, Result<Strategy> st) {
    Baseline b;
    b.name = std::move(name);
    if (!st.ok()) {
      b.why_not = st.error().message;
      out.push_back(std::move(b));
      return;
    }
    auto c = Evaluate(problem, choice, *st);
    if (!c.ok()) {
      b.why_not = c.error().message;
    } else {
      b.applicable = true;
      b.candidate = std::move(c).value();
    }
    out.push_back(std::move(b));
  };
  const Strategy even = EvenStrategy(problem.layers, p, v);
  add("even split, no recompute", even);

  Strategy full = even;
  int with_full = 0;
  for (int l = 0; l < L; ++l) {
    const auto& opts = problem.layers[l].recompute;
    for (size_t k = 0; k < opts.size(); ++k) {
      if (opts[k].name == "full") {
        full.recompute[l] = static_cast<std::uint8_t>(k + 1);
        ++with_full;
      }
    }
  }
  if (with_full == 0) {
    add("even split, full recompute",
        Error{"", "no layer offers a recompute mode named \"full\""});
  } else {
    add("even split, full recompute", full);
  }

  // Megatron's hand-tuned split: one decoder layer fewer on the first and
  // last stages (--decoder-first/last-pipeline-num-layers), the rest even.
  Result<Strategy> meg = Error{"", "needs at least 3 stages"};
  if (S >= 3) {
    Strategy s = even;
    if (even.layers_per_stage.front() < 2 || even.layers_per_stage.back() < 2) {
      meg = Error{"", "the first or last stage has too few layers"};
    } else {
      s.layers_per_stage.front() -= 1;
      s.layers_per_stage.back() -= 1;
      // Spread the two freed layers over the middle stages, fewest first.
      for (int extra = 0; extra < 2; ++extra) {
        int best = 1;
        for (int x = 1; x + 1 < S; ++x) {
          if (s.layers_per_stage[x] < s.layers_per_stage[best]) best = x;
        }
        s.layers_per_stage[best] += 1;
      }
      meg = s;
    }
  }
  add("Megatron: one layer fewer on first and last stage", meg);

  // Metis (Um et al., USENIX ATC'24) splits layers in proportion to each
  // device's compute speed, in the order the devices are given; the same
  // split with full recompute when that does not fit.
  if (problem.topology.num_devices() == p) {
    Strategy prop = even;
    const int kmin = problem.allow_empty_chunks ? 0 : 1;
    double total = 0;
    for (int s = 0; s < S; ++s) total += problem.cluster.devices[s % p].speed;
    std::vector<std::pair<double, int>> rest;
    int given = 0;
    for (int s = 0; s < S; ++s) {
      const double share = (L - kmin * S) * problem.cluster.devices[s % p].speed / total;
      const int whole = static_cast<int>(std::floor(share));
      prop.layers_per_stage[s] = kmin + whole;
      given += kmin + whole;
      rest.emplace_back(-(share - whole), s);
    }
    std::sort(rest.begin(), rest.end());
    for (int i = 0; given < L; ++i, ++given) ++prop.layers_per_stage[rest[i % S].second];
    std::fill(prop.recompute.begin(), prop.recompute.end(), 0);
    add("Metis-style: layers in proportion to speed, given order", prop);
    if (with_full > 0) {
      prop.recompute = full.recompute;
      add("Metis-style, full recompute", prop);
    }
  }
  return out;
}

}  // namespace ppb
