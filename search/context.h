// Internal to search/: what every part of the strategy search shares.
//
// Contract: ChoiceContext is one schedule choice made concrete (its program,
// a template PipelineSpec with the cluster's placement, links and
// capacities, and the program's memory profile); it is built once per
// choice and problem (MakeContext, kept by a ContextCache: context_cache.h)
// and only read afterwards. Its program and profile (O(p m) each) are
// shared, immutable, by every copy, so a copy (a searcher's, one with other
// capacities) costs O(p + S), and threads may read them at once. StageFixed is what a stage
// costs on its device apart from recompute. ChoiceProblem is everything
// the search of one choice on one cluster reads and never writes (the
// problem, the options, the context, sums over the layers), passed
// explicitly to the bounds and heuristics; SearchLimits is one search's
// clock, progress throttle and stop state. kInf is the "no bound / no time"
// sentinel: far below overflow when a few are added.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "search/memory_profile.h"
#include "search/recompute_menu.h"
#include "search/search.h"

namespace ppb::search_detail {

using Clock = std::chrono::steady_clock;
constexpr Nanos kInf = std::numeric_limits<Nanos>::max() / 4;

// ---------------------------------------------------------------------------
// Per-choice search state.

struct ChoiceContext {
  int index = 0;
  ScheduleChoice choice;
  int p = 1, v = 1, m = 1, S = 1, L = 0;
  std::shared_ptr<const Program> program;  // never null in a built context
  PipelineSpec spec;  // template: shape, placement, links, capacities
  std::shared_ptr<const MemoryProfile> profile;  // never null in a built context
  // The program splits backwards (I and W ops: the zero-bubble schedules).
  // A device's last op may then be a W that nothing follows, and one
  // micro-batch's chain runs through I's only: the bounds drop their tail
  // and chain terms (weaker, still valid). When some layer frees part of
  // its stash at I (activation_after_input_grad), the memory profile counts
  // that release as the engine does (profile.release_at_i).
  bool split_backward = false;
  // The program runs overlapped F+B ops (Op::paired) that save a share f
  // (SearchProblem::fb_overlap_ppm) of the shorter half: every op then
  // lasts at least (1 - f) of its nominal time (each half's part of the
  // saving is at most f of its own time, core/engine.cpp), and the
  // iteration is a max-plus expression of op and message times, which
  // scaling all of them by 1 - f scales alike and lowering the messages
  // back up cannot shorten; so (1 - f) x any bound on the program run
  // without the saving (and without the pairs' joint start, which only adds
  // waits) bounds it. The bounds are computed at nominal times and scaled
  // by bound_scale = 1 - f (1 without pairs or saving) where they are
  // compared with simulated times (ScaleBound / UnscaleBound).
  double bound_scale = 1.0;
};

// A bound at nominal times, as a bound of the program with its saving (see
// ChoiceContext::bound_scale): rounded down.
inline Nanos ScaleBound(Nanos b, double scale) {
  if (scale >= 1.0 || b <= 0 || b >= kInf) return b;
  return std::max<Nanos>(0, static_cast<Nanos>(std::floor(static_cast<long double>(b) * scale)) - 1);
}
// A simulated time as a threshold for bounds at nominal times: rounded up.
inline Nanos UnscaleBound(Nanos t, double scale) {
  if (scale >= 1.0 || t <= 0 || t >= kInf) return t;
  return std::min<Nanos>(kInf, static_cast<Nanos>(std::ceil(static_cast<long double>(t) / scale)) + 1);
}

// What a stage costs on its device with the cheapest-memory recompute, and
// the fixed parts that do not depend on recompute.
struct StageFixed {
  Nanos f = 0, bi = 0, bw = 0;  // scaled to the device
  Bytes static_mem = 0;
  Bytes workspace = 0;
  Bytes output = 0;
  // The step's tail (StageCost's fields of the same names).
  Bytes grad_bytes = 0, expert_grad_bytes = 0;
  Nanos optimizer = 0;
  Nanos step_gather = 0;
  Nanos ep_forward = 0, ep_backward = 0;  // scaled to the device
};

// The clock of one search, its progress throttle (ReportDue), and whether
// and why it stopped.
// Whether the search's deadline (SearchOptions::deadline) has passed.
inline bool PastDeadline(const SearchOptions& opt) { return Clock::now() >= opt.deadline; }

// Whether a tree search left open at `elapsed` of its `limit` (seconds)
// hands the rest of the time to the open-tree bound (TotalsPathBound): at
// 90 % of the limit, or from half of it on when its best strategy last
// improved at `last_improved` more than a quarter of the limit ago (the
// incumbent has settled; the gap can only close from the bound's side).
// Measured on issue 13's instances (docs/benchmarks.md).
inline bool TreeHandsOver(double elapsed, double limit, double last_improved) {
  if (elapsed >= 0.9 * limit) return true;
  return elapsed >= 0.5 * limit && elapsed - last_improved > 0.25 * limit;
}

struct SearchLimits {
  Clock::time_point start;
  Clock::time_point last_report{};
  bool hit = false;        // a node or time limit stopped it
  std::string stop_reason;
  double Elapsed() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
};

// Read-only for the whole search of one choice on one cluster: the problem,
// the options, the choice's context and sums over the layers. The bounds
// and heuristics take it explicitly; the searcher holds one.
struct ChoiceProblem {
  ChoiceProblem(const SearchProblem& problem, const SearchOptions& options, ChoiceContext ctx);

  const SearchProblem& pb;
  const SearchOptions& opt;
  ChoiceContext c;
  std::vector<Nanos> pf, pbi, pbw;  // prefix sums: forward, backward input / weight
  std::vector<Bytes> pst;           // prefix sums: static memory
  // Prefix sums of the step's tail per layer (Layer::grad_bytes, ...).
  std::vector<Bytes> pgrad, pexp;
  std::vector<Nanos> popt, pgather, pepf, pepb;
  double max_speed = 1.0;           // the fastest device's speed
  std::vector<Nanos> suffix_work;   // unscaled m-less work of layers >= l
  std::vector<Nanos> suffix_f, suffix_b;  // the same, forward / backward only
  Bytes least_output = 0;           // least bytes a stage can send (LeastHop)

  // The fixed parts of stage s holding layers [i, j) on its device.
  StageFixed Fixed(int s, int i, int j, Bytes prev_output) const;
  // One message of `bytes` from stage s to s+1 (forward) or back (0 on one
  // device or past the last stage).
  Nanos CommFwd(int s, Bytes bytes) const;
  Nanos CommBwd(int s, Bytes bytes) const;  // gradient from s+1 to s
  // Peak memory of device d for menu points pts[c] (one per chunk) of stages
  // with the given fixed parts.
  Bytes DevicePeak(int d, const std::vector<const StageFixed*>& fx,
                   const std::vector<const MenuPoint*>& pts) const;
};

}  // namespace ppb::search_detail
