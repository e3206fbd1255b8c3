// The per-choice run and its depth-first branch-and-bound over splits.
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
//
// Contract: a child's bound is valid for every split in its subtree
// (rounding of scaled times is allowed for by a slack); a subtree is pruned
// only when its bound exceeds the K-th best time (or the cutoff), so the
// top list is exact when the tree closes. What a limit leaves unexplored is
// kept in pending_bound. Limits: the node limit and the clock are checked at
// every node (a top-level search leaves the last tenth of its time to the
// open-tree bound), the deadline also in every phase before and after the
// tree (root bound, polishing).
#include <algorithm>
#include <cmath>
#include <random>

#include "core/cost.h"
#include "search/driver.h"
#include "search/first_tries.h"
#include "search/incumbent.h"
#include "search/searcher.h"

namespace ppb::search_detail {

// The alternatives are different splits (the same split keeps its best
// recompute).
void Searcher::Offer(Candidate c) {
  // search.target: only what the framework can deploy enters the list.
  if (cp_.opt.target != DeployTarget::Any &&
      !Deployable(cp_.opt.target, cp_.pb.layers, c.strategy, cp_.c.p, cp_.c.v,
                  cp_.c.spec.placement == StagePlacement::V)) {
    return;
  }
  top_list.Offer(std::move(c), limits.start);
}

Nanos Searcher::PruneThreshold() const { return top_list.Threshold(); }

// A subtree whose makespan bound exceeds the K-th best cannot enter the top
// K. A bound equal to it may still tie on makespan and win on memory, so it
// is explored.
bool Searcher::ShouldPrune(Nanos bound) const {
  return (bound >= kInf ? bound : bound + tail_floor_) > PruneThreshold();
}


bool Searcher::CheckLimits() {
  if (limits.hit) return true;
  if (cp_.opt.node_limit != 0 && nodes >= std::max<std::int64_t>(0, cp_.opt.node_limit)) {
    limits.hit = true;
    limits.stop_reason = "node limit";
    return true;
  }
  // The clock at every node (a node can be a leaf's simulations): a
  // top-level search leaves the rest of its time to the bound of an open
  // tree (TotalsPathBound) at 90 % of it, or from half of it on once its
  // incumbent has settled (TreeHandsOver); nothing runs past the deadline.
  if (cp_.opt.time_limit_s > 0 || cp_.opt.deadline != Clock::time_point::max()) {
    const double el = std::chrono::duration<double>(Clock::now() - limits.start).count();
    const double T = cp_.opt.time_limit_s;
    bool stop = PastDeadline(cp_.opt) || (T > 0 && el >= T);
    if (T > 0 && cp_.opt.open_tree_bound) {
      // With nothing found yet, nothing has settled: "last improved now".
      const double last = top_list.top.empty()          ? el
                          : top_list.incumbents.empty() ? 0.0
                                                        : top_list.incumbents.back().first;
      stop = stop || TreeHandsOver(el, T, last);
    }
    if (stop) {
      limits.hit = true;
      limits.stop_reason = "time limit";
      return true;
    }
  }
  if ((nodes & 255) == 0) Report(false);
  return false;
}

void Searcher::Report(bool force) {
  if (!cp_.opt.progress || !ReportDue(force, cp_.opt.progress_interval_s, limits.last_report)) return;
  SearchProgress pr;
  pr.elapsed_s = std::chrono::duration<double>(limits.last_report - limits.start).count();
  pr.nodes = nodes;
  pr.evaluations = evaluations;
  pr.incumbent = top_list.top.empty() ? -1 : top_list.top.front().makespan;
  Nanos lb = top_list.top.empty() ? kInf : top_list.top.front().makespan;
  for (Nanos b : level_bounds_) lb = std::min(lb, b);
  lb = std::min(lb, pending_bound);
  pr.lower_bound = lb;  // kInf: this choice holds no strategy at all
  pr.choice = cp_.c.index;
  cp_.opt.progress(pr);
}

namespace {

// Water-filling: the least level lam such that devices starting at
// open[i].first and absorbing work at speed open[i].second take `need`
// units of work by lam (sorts `open`).
long double WaterLevel(std::vector<std::pair<Nanos, double>>& open, long double need) {
  std::sort(open.begin(), open.end());
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
  return lam;
}

}  // namespace

// The bound of the child that gives stage s layers [pos, pos + k) with fixed
// parts fx and recompute rt (v = 1) / dev_rt (v > 1, the device's last
// chunk): per-device head + work + tail, the chain of one micro-batch, the
// water-filling of the layers not yet placed, the root bound and the path
// bound. Valid for every split below that child.
Nanos Searcher::ChildBound(int s, int pos, int k, const StageFixed& fx, Nanos rt,
                           Nanos dev_rt) const {
  const int S = cp_.c.S, p = cp_.c.p, m = cp_.c.m;
  const int d = cp_.c.spec.stage_device[s].value;
  // Bound: per-device head + work + tail, plus water-filling of the
  // layers not yet placed over devices with open stages.
  const Nanos w = fx.f + fx.bi + fx.bw + rt;
  const Nanos cf = cp_.CommFwd(s, fx.output), cb = cp_.CommBwd(s, fx.output);
  Nanos bound = 0;
  // Device-level parts after adding this stage.
  // head/tail increments apply to devices d' with d' > s (only for s < p).
  Nanos max_fixed = 0;
  std::vector<Nanos>& base = bound_base_;
  base.resize(static_cast<size_t>(p));
  for (int dd = 0; dd < p; ++dd) {
    Nanos h = head_[dd], t = tail_[dd], wk = work_[dd];
    if (s < dd) {
      h += fx.f + cf;
      if (!cp_.c.split_backward) t += fx.bi + fx.bw + rt + cb;
    }
    if (dd == d) wk += static_cast<Nanos>(m) * (w + dev_rt);
    base[dd] = h + wk + t;
    max_fixed = std::max(max_fixed, base[dd]);
  }
  bound = max_fixed;
  // Chain of one micro-batch: assigned stages plus the rest at best speed.
  const int next = pos + k;
  const Nanos rest_work = cp_.suffix_work[next];
  const Nanos chain = chain_ + w + cf + cb +
                      static_cast<Nanos>(std::floor(static_cast<double>(rest_work) / cp_.max_speed));
  if (!cp_.c.split_backward) bound = std::max(bound, chain);
  // Water-filling: devices with stages still open absorb the remaining
  // work m * rest_work (speed-1 units) at their speeds.
  if (rest_work > 0) {
    std::vector<std::pair<Nanos, double>>& open = bound_open_;  // (base, speed)
    open.clear();
    for (int dd = 0; dd < p; ++dd) {
      const int last_stage = StageOf(cp_.c.spec.placement, p, cp_.c.v - 1, dd);
      if (last_stage > s) open.emplace_back(base[dd], cp_.pb.cluster.devices[dd].speed);
    }
    if (!open.empty()) {
      const long double lam = WaterLevel(open, static_cast<long double>(m) * rest_work);
      // Rounding of per-stage times to ns can shave at most a few ns per
      // op; keep the bound safely below.
      const Nanos slack = static_cast<Nanos>(m) * (S + 1) * 2;
      bound = std::max(bound, static_cast<Nanos>(std::floor(lam)) - slack);
    }
  }
  bound = std::max(bound, root_nominal_);
  if (!mix_.pa.empty()) {
    // Path bound: placed stages at their times, the rest at the least
    // coefficient of the stages still open.
    const double placed = path_acc_ + mix_.pa[s] * static_cast<double>(fx.f) +
                          mix_.pbw_coef[s] * static_cast<double>(fx.bi + fx.bw + rt);
    const double rest = s + 1 < S ? mix_.pa_min[s + 1] * static_cast<double>(cp_.suffix_f[next]) +
                                        mix_.pb_min[s + 1] * static_cast<double>(cp_.suffix_b[next])
                                  : 0.0;
    const double slack = static_cast<double>(m) * (S + 1) * 4;
    bound = std::max(bound, static_cast<Nanos>(std::floor(placed + rest + mix_.pconst - slack)));
  }
  return ScaleBound(bound, cp_.c.bound_scale);  // at nominal times so far
}

void Searcher::Dfs(int s, int pos) {
  const int S = cp_.c.S, L = cp_.c.L, p = cp_.c.p, m = cp_.c.m;
  const int kmin = cp_.pb.allow_empty_chunks ? 0 : 1;
  const int remaining_after = S - s - 1;
  const int kmax_total = L - pos - remaining_after * kmin;
  const int d = cp_.c.spec.stage_device[s].value;
  int klo = kmin, khi = kmax_total;
  if (s == S - 1) klo = khi = L - pos;
  if (klo > khi) return;

  std::vector<Child>& children = children_[static_cast<size_t>(s)];
  children.clear();
  const Bytes prev_out = s > 0 ? fixed_[s - 1].output : 0;
  const double speed = cp_.pb.cluster.devices[d].speed;
  const Nanos ideal_k = (L - pos) / std::max(1, S - s);

  for (int k = klo; k <= khi; ++k) {
    const StageFixed fx = cp_.Fixed(s, pos, pos + k, prev_out);
    // Recompute for this stage: for v = 1 exact now (the device has only this
    // stage); for v > 1 known when the device's last chunk is placed.
    split_[s] = k;
    first_layer_[s] = pos;
    fixed_[s] = fx;
    Nanos rt = 0;
    if (cp_.c.v == 1) {
      // The device holds only this stage: its memory floor and least
      // recompute depend on (s, pos, k) alone, and are kept.
      const std::uint64_t key =
          (static_cast<std::uint64_t>(s) * (L + 1) + static_cast<std::uint64_t>(pos)) * (L + 1) +
          static_cast<std::uint64_t>(k);
      auto it = v1_stage_.find(key);
      if (it == v1_stage_.end()) {
        V1Stage got;
        got.floor_peak = rc_.DevicePeakLowerBound(d, s + 1, split_, first_layer_, fixed_);
        if (got.floor_peak <= cp_.c.spec.device_capacity[d]) {
          const Menu& menu = rc_.GetMenu(pos, pos + k);
          std::vector<const StageFixed*> fxp{&fixed_[s]};
          std::vector<const MenuPoint*> pts(1);
          for (const MenuPoint& q : menu.points) {  // sorted by time
            pts[0] = &q;
            if (cp_.DevicePeak(d, fxp, pts) <= cp_.c.spec.device_capacity[d]) {
              // Beyond a truncated menu's exact range only that range's end
              // is a valid lower bound.
              got.rt = ScaleTime(std::min(q.time, menu.exact_up_to), speed);
              break;
            }
          }
        }
        it = v1_stage_.emplace(key, got).first;
      }
      // Memory feasibility (monotone in k: more layers never need less).
      if (it->second.floor_peak > cp_.c.spec.device_capacity[d]) break;
      rt = it->second.rt;
      if (rt < 0) continue;  // only a truncated menu can get here
    } else {
      const Bytes floor_peak = rc_.DevicePeakLowerBound(d, s + 1, split_, first_layer_, fixed_);
      if (floor_peak > cp_.c.spec.device_capacity[d]) break;
    }
    // v > 1: once the device's last chunk is placed, its least total
    // recompute is known; it adds to the device's work (not to the chains).
    Nanos dev_rt = 0;
    if (cp_.c.v > 1 && s / p == cp_.c.v - 1) {
      std::vector<const MenuPoint*> pts;
      bool ex = true;
      dev_rt = rc_.DeviceRecompute(d, first_layer_, split_, fixed_, pts, ex);
      bool truncated = false;
      for (int c = 0; c < cp_.c.v; ++c) {
        const int sc = StageOf(cp_.c.spec.placement, p, c, d);
        truncated |= rc_.GetMenu(first_layer_[sc], first_layer_[sc] + split_[sc]).truncated;
      }
      if (truncated) {
        dev_rt = 0;  // its least total over kept points is no valid bound
      } else if (dev_rt < 0) {
        continue;  // does not fit with any recompute
      }
    }
    const Nanos bound = ChildBound(s, pos, k, fx, rt, dev_rt);
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
    fixed_[s] = cp_.Fixed(s, pos, pos + k, prev_out);
    if (s == S - 1) {
      const std::vector<int> split(split_.begin(), split_.end());
      last_leaf_node_ = nodes;
      // A leaf whose recompute choice could not be settled stays open at its
      // bound (HiGHS-style: the gap reports it).
      if (EvaluateLeaf(split, ch.bound).open) pending_bound = std::min(pending_bound, ch.bound);
      continue;
    }
    // A tree that has gone dive_every nodes without a leaf completes the
    // path it is on (issue 32: a dive reaches a strategy before branching
    // deeper).
    if (cp_.opt.dive_every > 0 && nodes - last_leaf_node_ >= cp_.opt.dive_every) {
      Dive(s + 1, pos + k);
    }
    // Push the stage into the partial sums.
    const StageFixed& fx = fixed_[s];
    const Nanos w = fx.f + fx.bi + fx.bw + ch.rtime;
    const Nanos cf = cp_.CommFwd(s, fx.output), cb = cp_.CommBwd(s, fx.output);
    // Integer sums: subtracting the same terms afterwards restores them.
    const Nanos head_add = fx.f + cf;
    const Nanos tail_add = cp_.c.split_backward ? 0 : fx.bi + fx.bw + ch.rtime + cb;
    const Nanos saved_work = work_[d], saved_chain = chain_;
    for (int dd = s + 1; dd < p; ++dd) {
      head_[dd] += head_add;
      tail_[dd] += tail_add;
    }
    work_[d] += static_cast<Nanos>(m) * (w + ch.dev_rt);
    chain_ += w + cf + cb;
    const double saved_acc = path_acc_;
    if (!mix_.pa.empty()) {
      path_acc_ += mix_.pa[s] * static_cast<double>(fx.f) +
                   mix_.pbw_coef[s] * static_cast<double>(fx.bi + fx.bw + ch.rtime);
    }
    Dfs(s + 1, pos + k);
    for (int dd = s + 1; dd < p; ++dd) {
      head_[dd] -= head_add;
      tail_[dd] -= tail_add;
    }
    work_[d] = saved_work;
    chain_ = saved_chain;
    path_acc_ = saved_acc;
    if (limits.hit) {
      // Unexplored siblings stay pending at their bounds (>= this one's).
      if (ci + 1 < children.size()) {
        pending_bound = std::min(pending_bound, children[ci + 1].bound);
      }
      return;
    }
  }
  level_bounds_[s] = kInf;
}

// The path's stages 0 .. s-1 as placed, the layers from pos spread evenly
// over stages s .. S-1 (the first ones one more where they do not divide),
// each device's recompute chosen and the split simulated and offered: an
// incumbent, never a proof, so pruning and bounds are unchanged.
void Searcher::Dive(int s, int pos) {
  last_leaf_node_ = nodes;
  const int S = cp_.c.S, L = cp_.c.L;
  const int kmin = cp_.pb.allow_empty_chunks ? 0 : 1;
  const int rest = S - s, layers = L - pos;
  if (rest <= 0 || layers < rest * kmin) return;
  std::vector<int> split(split_.begin(), split_.begin() + s);
  for (int t = 0; t < rest; ++t) split.push_back(layers / rest + (t < layers % rest ? 1 : 0));
  Candidate cand;
  bool exact = true;
  if (!EvaluateSplit(split, &cand, exact)) return;
  ++dives;
  Offer(std::move(cand));
}

bool Searcher::TargetRefusesChoice() const {
  return !ChoiceRefusal(cp_.opt.target, cp_.pb.layers, cp_.c.v,
                        cp_.c.spec.placement == StagePlacement::V, cp_.c.p, cp_.c.m,
                        EffectiveGroup(cp_.c.choice, cp_.c.p, cp_.c.m))
              .empty();
}

bool Searcher::Prepare(bool path_weights) {
  const int S = cp_.c.S, L = cp_.c.L, p = cp_.c.p;
  // (Sums over the layers and the least output are in cp_: ChoiceProblem.)
  path_acc_ = 0;
  split_.assign(S, 0);
  first_layer_.assign(S, 0);
  fixed_.assign(S, StageFixed{});
  head_.assign(p, 0);
  tail_.assign(p, 0);
  work_.assign(p, 0);
  level_bounds_.assign(S, kInf);
  children_.assign(static_cast<size_t>(S), {});
  chain_ = 0;
  const int kmin = cp_.pb.allow_empty_chunks ? 0 : 1;
  if (L < S * kmin) {
    closed = true;
    limits.stop_reason = "no split: fewer layers than chunks";
    pending_bound = kInf;
    return false;
  }
  // A choice the target's framework cannot run at all (its v, its
  // placement, the model's layers) holds nothing deployable: closed.
  if (TargetRefusesChoice()) {
    closed = true;
    limits.stop_reason = "nothing deployable under this schedule choice";
    pending_bound = kInf;
    return false;
  }
  // Until the tree search starts, all that is known is the root bound: the
  // total work spread over every device at its speed, and the chain of one
  // micro-batch through all layers at the best speed.
  {
    double speeds = 0;
    for (const auto& dv : cp_.pb.cluster.devices) speeds += dv.speed;
    const long double total = static_cast<long double>(cp_.c.m) * cp_.suffix_work[0];
    const Nanos slack = static_cast<Nanos>(cp_.c.m) * (S + 1) * 2;
    pending_bound = std::max<Nanos>(
        0, std::max(static_cast<Nanos>(std::floor(total / speeds)) - slack,
                    static_cast<Nanos>(std::floor(cp_.suffix_work[0] / cp_.max_speed)) - S));
    root_nominal_ = RootBound(cp_, fronts_, rt_cache_, root_);
    if (path_weights) root_nominal_ = std::max(root_nominal_, PathWeights(cp_, root_.forced_recompute, mix_));
    // Both at nominal times (ChoiceContext::bound_scale).
    pending_bound = ScaleBound(std::max(pending_bound, root_nominal_), cp_.c.bound_scale);
    root_bound_ = ScaleBound(root_nominal_, cp_.c.bound_scale);
  }
  prepared_s = limits.Elapsed();
  return true;
}

// Why a tree searched to the end is not closed when a tie polish failed.
constexpr const char* kTiesUnproved =
    "tie-break not proved (too many recompute combinations of equal time)";

void Searcher::TryFirst() {
  if (tried_first_) return;
  tried_first_ = true;
  // The placement search's per-order searchers run on clusters of their
  // own; the strategies are tried on the problem's cluster here.
  if (cp_.pb.search_placement) return;
  // A choice the target's framework cannot run at all holds nothing
  // deployable (Prepare closes it).
  if (TargetRefusesChoice()) return;
  for (const FirstTry& t : FirstTries(cp_.pb, cp_.c.index)) {
    const Strategy& st = t.strategy;
    // Past the time limit with an answer in hand, the rest are left (the
    // user's own strategy comes first).
    if (!top_list.top.empty() && PastDeadline(cp_.opt)) return;
    Result<Candidate> c =
        Simulate(cp_.pb, cp_.c.index, st, {}, sim_deadline_, cp_.c.program.get());
    if (!c.ok()) {
      if (c.error().key == kTimeLimitKey) {
        // Stopped at the deadline: the search stops there too.
        interrupted = true;
        limits.hit = true;
        limits.stop_reason = "time limit";
        return;
      }
      continue;  // a split this choice refuses (an empty chunk, ...)
    }
    ++evaluations;
    tried_first.push_back(*c);
    if (c->feasible) Offer(std::move(c).value());
  }
}

void Searcher::Run() {
  if (!Prepare()) return;
  // Before any heuristic or tree: what the user would try first (issue 32).
  TryFirst();
  if (interrupted) {
    finished_s = limits.Elapsed();
    pending_bound = std::min(pending_bound, root_bound_);
    Report(true);
    return;
  }
  const int kmin = cp_.pb.allow_empty_chunks ? 0 : 1;
  std::mt19937_64 rng(cp_.opt.seed ^ (0x9E3779B97F4A7C15ULL * (cp_.c.index + 1)));
  std::vector<int> even = EvenSplit(cp_);
  bool even_ok = true;
  for (int x : even) even_ok &= x >= kmin;
  if (even_ok) LocalSearch(even, rng, 0);
  // Past the time limit only the first start is simulated (an answer); the
  // others are not. (A node limit keeps its deterministic course.)
  const auto timed_out = [&] {
    return interrupted ||
           (limits.hit && limits.stop_reason == "time limit" && !top_list.top.empty());
  };
  if (!root_.per_device.empty() && !timed_out()) {
    const std::vector<int> relaxed = RelaxedSplit(cp_, root_.per_device, root_.rep);
    if (!relaxed.empty()) LocalSearch(relaxed, rng, 0);
    if (cp_.c.v > 1) {
      const std::vector<int> aware = ChunkAwareSplit(cp_, root_.per_device, root_.rep);
      if (!aware.empty() && aware != relaxed && !timed_out()) LocalSearch(aware, rng, 0);
    }
  }
  if (!timed_out()) {
    LocalSearch(BalancedSplit(cp_), rng, cp_.opt.local_search_restarts);
  }

  bool searched = false;  // the tree was searched to the end
  if (!limits.hit) {
    pending_bound = kInf;  // from here the tree search tracks what is open
    Dfs(0, 0);
    searched = !limits.hit;
  }
  // A tree left open gets the sharper global bound for its report (not
  // the placement search's per-order runs, which report to a cutoff).
  if (!(searched && pending_bound >= kInf) && !top_list.top.empty() &&
      cp_.opt.open_tree_bound && !interrupted) {
    const SplitFloor floor = SplitFloorFn();
    Nanos unattained = 0;
    totals_bound = ScaleBound(
        TotalsPathBound(cp_, root_.totals, path_pool_, engine_, limits.start,
                        UnscaleBound(top_list.top.front().makespan, cp_.c.bound_scale), &floor,
                        &unattained),
        cp_.c.bound_scale);
    totals_unattained = ScaleBound(unattained, cp_.c.bound_scale);
  }
  // The top list's ties on time are settled by memory, then recompute.
  std::vector<Candidate> polished;
  for (Candidate c : top_list.top) {
    if (interrupted || !PolishTies(c.strategy.layers_per_stage, c)) {
      ties_open = std::min(ties_open, c.makespan);
    }
    polished.push_back(std::move(c));
  }
  top_list.top.clear();
  for (auto& c : polished) Offer(std::move(c));
  if (searched) {
    // A tie polish that was not proved matters only where its time can
    // still enter the top list.
    const bool ties_proved = ties_open >= kInf || ties_open > PruneThreshold();
    closed = pending_bound >= kInf && ties_proved;
    limits.stop_reason = closed ? "proved optimal"
                         : pending_bound >= kInf ? kTiesUnproved
                         : rc_.truncated()
                             ? "recompute choice not proved (too many distinct layers in a stage)"
                             : "recompute choice not proved";
  }
  if (!closed && !interrupted && !top_list.top.empty() &&
      totals_unattained > top_list.top.front().makespan &&
      (ties_open >= kInf || ties_open > top_list.top.front().makespan)) {
    // The open tree's bound proves the best: nothing it did not evaluate
    // beats or ties it (leaves the tree left open included), and the ties
    // of what it did are settled. (The rest of the top list is what was
    // found, not proved.)
    closed = true;
    limits.stop_reason = "proved optimal";
  }
  if (interrupted) {
    // A simulation cut short decided nothing: its leaf stays open, under
    // the root bound (valid for the whole tree) at best.
    closed = false;
    pending_bound = std::min(pending_bound, root_bound_);
    limits.stop_reason = "time limit";
  }
  finished_s = limits.Elapsed();
  Report(true);
}

}  // namespace ppb::search_detail
