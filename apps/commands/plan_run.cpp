#include "apps/commands/plan_run.h"
#include "apps/commands/plan_state.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/input/search_problem.h"
#include "apps/output/output.h"
#include "core/engine.h"
#include "core/lower.h"
#include "schedules/schedule.h"
#include "search/deployable.h"

namespace ppb {

namespace {

using namespace plan_detail;  // NOLINT: the plan's state (plan_state.h)

// The entry's best simulated in full: its step parts and figures.
void Describe(PlanEntry& e) {
  const RunConfig cfg = EntryConfig(e);
  Result<PreparedRun> run = Prepare(cfg);
  if (!run.ok()) return;
  Engine engine;
  const SimResult r = engine.Run(run->spec, run->program, SimOptions{});
  if (run->spec.tail.enabled && !r.steps.empty()) {
    e.parts = DeviceStepParts(r, r.breakdown.bottleneck);
  }
  e.metrics = StepMetricsOf(cfg, cfg.strategy.recompute, cfg.shape.m, r.makespan);
}

// Outcomes by precedence, for merging parts: what one process learned
// about a layout wins over less.
int Rank(const std::string& outcome) {
  if (outcome == "searched") return 4;
  if (outcome == "memory") return 3;
  if (outcome == "bound") return 2;
  if (!outcome.empty()) return 1;  // refused
  return 0;
}

// The proof or the gap, the counts and the top list.
PlanResult Finish(PlanState& st) {
  PlanResult& res = st.res;
  const PlanSearch& plan = st.search;
  const PlanProof proof = Prove(plan, res.not_loaded);
  res.searched += proof.searched;
  res.pruned_by_memory += proof.pruned_by_memory;
  res.pruned_by_bound += proof.pruned_by_bound;
  res.open += proof.open;
  for (const auto& [why, n] : proof.refused) res.refused[why] += n;
  res.found = proof.found;
  res.proved_optimal = proof.proved_optimal;
  res.lower_bound = proof.lower_bound;
  res.gap = proof.gap;
  res.stop_reason = proof.stop_reason;
  res.first_answer_s = plan.first_answer_s;
  res.incumbents = plan.incumbents;
  for (const PlanWork& w : plan.work) {
    if (!w.entry.best) continue;
    const auto key = std::pair{w.entry.layout.t, w.entry.layout.p};
    auto it = res.best_by_tp.try_emplace(key, w.entry.best->makespan).first;
    it->second = std::min(it->second, w.entry.best->makespan);
  }
  // The best layouts, one entry each (the file's own strategy as its own).
  std::vector<PlanEntry> entries;
  for (PlanWork& w : st.search.work) {
    if (!w.entry.best) continue;
    PlanEntry e;
    static_cast<PlanOutcome&>(e) = std::move(w.entry);
    e.note = e.layout.yours ? "your layout" : "";
    e.config = st.configs[w.id];
    entries.push_back(std::move(e));
  }
  if (res.yours && res.yours->feasible) {
    PlanEntry e;
    e.layout = *st.yours;
    e.layout.yours = true;
    e.layout.recompute = "yours";
    e.note = "your config";
    e.best = *res.yours;
    e.closed = true;
    e.config = st.own_config;
    e.problem = st.own_problem;  // res.yours came from it
    entries.push_back(std::move(e));
  }
  // Fastest first; ties in bound order (the file's own last).
  std::vector<std::pair<Nanos, size_t>> order;
  for (size_t i = 0; i < entries.size(); ++i) {
    order.emplace_back(entries[i].best.value_or(Candidate{}).makespan, i);
  }
  std::stable_sort(order.begin(), order.end());
  // Tie groups: layouts whose step is the same to the nanosecond are one
  // answer, led by the simplest (PlanTiePreference); the top list holds
  // `top` different answers.
  std::vector<std::vector<size_t>> groups;
  for (const auto& [mk, i] : order) {
    if (!groups.empty() && entries[groups.back().front()].best->makespan == mk &&
        !entries[i].layout.yours && !entries[groups.back().front()].layout.yours) {
      groups.back().push_back(i);
    } else {
      if (static_cast<int>(groups.size()) >= res.settings.top) break;
      groups.push_back({i});
    }
  }
  std::vector<PlanEntry> sorted;
  for (std::vector<size_t>& g : groups) {
    std::stable_sort(g.begin(), g.end(), [&](size_t a, size_t b) {
      return PlanTiePreference(entries[a].layout, entries[b].layout);
    });
    PlanEntry lead = std::move(entries[g.front()]);
    for (size_t k = 1; k < g.size(); ++k) lead.ties.push_back(entries[g[k]].layout);
    sorted.push_back(std::move(lead));
  }
  for (PlanEntry& e : sorted) Describe(e);
  res.top = std::move(sorted);
  res.solve_time_s = Since(plan.t0);
  return std::move(res);
}

using Json = nlohmann::json;

// What this process learned of each layout, for the lead's merge.
std::string EncodePart(const PlanState& st) {
  Json layouts = Json::array();
  const std::vector<PlanWork>& work = st.search.work;
  for (size_t i = 0; i < work.size(); ++i) {
    const PlanWork& w = work[i];
    if (w.outcome.empty() && !w.entry.best && !w.entry.closed) continue;
    Json x = {{"i", i},           {"claimed", w.claimed},         {"closed", w.entry.closed},
              {"searched", w.entry.searched}, {"outcome", w.outcome}, {"bound", w.entry.bound}};
    if (w.entry.best) {
      x["split"] = w.entry.best->strategy.layers_per_stage;
      x["recompute"] = w.entry.best->strategy.recompute;
    }
    layouts.push_back(std::move(x));
  }
  Json j = {{"layouts", layouts},
            {"stop_reason", st.search.stop_reason},
            {"layouts_total", work.size()}};
  return j.dump();
}

// Merges another process's part into `st` (whose layouts are the same, in
// the same order): the claimed process's outcome, every valid bound (the
// larger), the better best (simulated again here).
Status ApplyPart(PlanState& st, const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return Error{"plan", std::string("an MPI part is not JSON: ") + e.what()};
  }
  std::vector<PlanWork>& work = st.search.work;
  if (j.value("layouts_total", size_t{0}) != work.size()) {
    return Error{"plan", "an MPI part has another set of layouts"};
  }
  for (const Json& x : j["layouts"]) {
    const size_t i = x["i"].get<size_t>();
    if (i >= work.size()) return Error{"plan", "an MPI part names no layout"};
    PlanWork& w = work[i];
    const std::string outcome = x["outcome"].get<std::string>();
    if (Rank(outcome) > Rank(w.outcome)) w.outcome = outcome;
    w.entry.closed = w.entry.closed || x["closed"].get<bool>();
    w.entry.searched = w.entry.searched || x["searched"].get<bool>();
    w.entry.bound = std::max(w.entry.bound, x["bound"].get<Nanos>());
    w.claimed = w.claimed || x["claimed"].get<bool>();
    if (x.contains("split")) {
      Strategy strategy;
      strategy.layers_per_stage = x["split"].get<std::vector<int>>();
      strategy.recompute = x["recompute"].get<std::vector<std::uint8_t>>();
      Result<Candidate> c = Evaluate(*w.entry.problem, 0, strategy);
      if (!c.ok()) return c.error();
      st.search.Keep(w.entry, *c);
    }
  }
  const std::string reason = j.value("stop_reason", "");
  if (st.search.stop_reason.empty()) st.search.stop_reason = reason;
  return Status();
}

}  // namespace

RunConfig EntryConfig(const PlanEntry& e) {
  return e.note == "your config" ? *e.config : CandidateConfig(*e.config, *e.problem, *e.best);
}

Result<PlanResult> RunPlan(std::string_view text, std::string_view filename,
                           const PlanOptions& opt) {
  PlanState st;
  st.text = std::string(text);
  st.filename = std::string(filename);
  st.opt = opt;
  PPB_PLAN_TRY(Load(st));
  FirstAnswers(st.search);
  Explore(st.search);
  if (opt.part != nullptr) *opt.part = EncodePart(st);
  return Finish(st);
}

Result<PlanResult> MergePlan(std::string_view text, std::string_view filename,
                             const PlanOptions& opt, const std::vector<std::string>& parts) {
  PlanState st;
  st.text = std::string(text);
  st.filename = std::string(filename);
  st.opt = opt;
  PPB_PLAN_TRY(Load(st));
  for (const std::string& part : parts) PPB_PLAN_TRY(ApplyPart(st, part));
  return Finish(st);
}

}  // namespace ppb
