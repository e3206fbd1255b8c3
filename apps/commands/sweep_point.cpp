// One point of a sweep, evaluated (apps/commands/sweep_point.h).
#include "apps/commands/sweep_point.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <optional>

#include "apps/commands/compare_run.h"
#include "apps/input/search_problem.h"
#include "core/engine.h"
#include "core/strategy.h"
#include "search/search.h"

namespace ppb {

using namespace vary_detail;  // NOLINT: the variant documents

namespace {

std::string RecomputeText(const std::vector<std::uint8_t>& recompute) {
  const auto n =
      std::count_if(recompute.begin(), recompute.end(), [](std::uint8_t r) { return r != 0; });
  return fmt::format("recompute {} layer{}", n, n == 1 ? "" : "s");
}

// "1f1b v=1 | Et*8|t*8|t*8|t*8L | recompute 0 layers".
std::string DescribeStrategy(const std::string& schedule, int v, const RunConfig& config,
                             const Strategy& strategy) {
  return fmt::format("{} v={} | {} | {}", schedule, v,
                     FormatMegatronLayout(strategy.layers_per_stage, config.layers),
                     RecomputeText(strategy.recompute));
}

// The edits of the point's document keys (the pipeline keys are overrides).
std::vector<Edit> PointEdits(const SweepPlan& plan, const SweepPoint& point) {
  std::vector<Edit> edits;
  for (size_t k = 0; k < plan.axes.size(); ++k) {
    if (plan.axes[k].type == PlanAxis::Type::Document) {
      edits.push_back(Edit{&plan.axes[k].axis, point.values[k]});
    }
  }
  return edits;
}

// The point's config: its edits in the document, its pipeline values as
// overrides, with the strategy fallback of compare. Sets row.reason on
// failure, row.note on a fallback.
std::optional<RunConfig> LoadPoint(const SweepPlan& plan, const SweepPoint& point,
                                   const CliOverrides& ov, SweepRow& row) {
  const std::vector<Edit> edits = PointEdits(plan, point);
  const YAML::Node root = YAML::Load(plan.config_text);
  const YAML::Node strategy = At(root, {{"strategy"}});
  const bool has_split = strategy.IsMap() &&
                         (strategy["layers_per_chunk"] || strategy["layout"] || strategy["offset"]);
  const bool has_recompute = strategy.IsMap() && strategy["recompute"];
  std::vector<Strip> levels = {Strip::kNone};
  if (has_split) levels.push_back(Strip::kSplit);
  if (has_recompute) levels.push_back(Strip::kSplitAndRecompute);
  std::string first_reason;
  for (size_t l = 0; l < levels.size(); ++l) {
    Result<YAML::Node> doc = VariantDocument(plan.config_text, edits, levels[l]);
    if (!doc.ok()) {
      row.reason = doc.error().message;
      return std::nullopt;
    }
    Result<RunConfig> c = ParseConfigYaml(*doc, plan.config_path, ov);
    if (c.ok()) {
      if (l > 0) {
        row.note = std::string(levels[l] == Strip::kSplit
                                   ? "the config's split does not apply: even split"
                                   : "the config's strategy does not apply: even split, "
                                     "no recompute") +
                   " (" + first_reason + ")";
      }
      return std::move(*c);
    }
    const bool strategy_error =
        c.error().key == "strategy" || c.error().key.rfind("strategy.", 0) == 0;
    if (!strategy_error) {
      row.reason = c.error().message;
      return std::nullopt;
    }
    if (l == 0) first_reason = c.error().message;
    row.reason = c.error().message;
  }
  return std::nullopt;
}

// A simulation's outcome as a row's status.
const char* StatusOf(Outcome outcome) {
  switch (outcome) {
    case Outcome::Ok:
      return "ok";
    case Outcome::OutOfMemory:
      return "oom";
    case Outcome::Deadlock:
      return "deadlock";
    case Outcome::Interrupted:  // no deadline is set here
      return "interrupted";
  }
  return "deadlock";
}

void Simulate(const RunConfig& config, SweepRow& row) {
  Result<PreparedRun> run = Prepare(config);
  if (!run.ok()) {
    row.status = "refused";
    row.reason = run.error().message;
    return;
  }
  SimOptions options;
  Engine engine;
  const SimResult r = engine.Run(run->spec, run->program, options);
  row.ran = true;
  row.iteration_time = r.makespan;
  row.bubble = r.bubble_fraction();
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceStats& ds = r.devices[d];
    if (row.peak_rank < 0 || ds.peak_memory > row.peak_memory) {
      row.peak_memory = ds.peak_memory;
      row.peak_rank = static_cast<int>(d);
      row.peak_capacity = ds.capacity;
    }
  }
  row.fits = r.outcome == Outcome::Ok;
  row.status = StatusOf(r.outcome);
  row.strategy = DescribeStrategy(config.schedule, config.shape.v, config, config.strategy);
  row.proof = "simulated: the strategy given, no optimality claimed";
}

void RunSearch(const RunConfig& config, SweepRow& row) {
  Result<SearchProblem> problem = BuildSearchProblem(config);
  if (!problem.ok()) {
    row.status = "refused";
    row.reason = problem.error().message;
    return;
  }
  const SearchOptions options = MakeSearchOptions(config.search);
  Result<SearchResult> result = Search(*problem, options);
  if (!result.ok()) {
    row.status = "refused";
    row.reason = result.error().message;
    return;
  }
  const SearchResult& s = *result;
  if (!s.found) {
    row.status = "no_fit";
    row.reason = s.min_capacity_needed > 0
                     ? fmt::format(
                           "no strategy fits; the smallest uniform capacity at which "
                           "one fits is {} bytes",
                           s.min_capacity_needed)
                     : "no strategy fits";
    row.proof = s.proved_infeasible
                    ? "proved infeasible: nothing fits"
                    : "nothing found before the " + s.stop_reason + " (not proved infeasible)";
    return;
  }
  const Candidate& best = s.best;
  row.ran = true;
  row.iteration_time = best.makespan;
  row.bubble = best.bubble_fraction;
  row.peak_memory = best.max_peak;
  for (size_t d = 0; d < best.devices.size(); ++d) {
    if (best.devices[d].peak_memory == best.max_peak) {
      row.peak_rank = static_cast<int>(d);
      row.peak_capacity = best.devices[d].capacity;
      break;
    }
  }
  row.fits = best.feasible;
  row.status = best.feasible ? "ok" : "oom";
  const ScheduleChoice& choice = problem->choices[static_cast<size_t>(best.choice)];
  row.strategy = fmt::format("{} | {} | {}", DescribeChoice(*problem, choice),
                             FormatMegatronLayout(best.strategy.layers_per_stage, config.layers),
                             RecomputeText(best.strategy.recompute));
  row.lower_bound = s.lower_bound;
  row.gap = s.proved_optimal ? 0.0 : s.gap;
  row.proof =
      s.proved_optimal
          ? "proved optimal"
          : fmt::format("stopped at the {}: lower bound {:.3f} ms, gap {:.2f} %", s.stop_reason,
                        static_cast<double>(s.lower_bound) / 1e6, 100.0 * s.gap);
}

void RunCompare(const SweepPlan& plan, const SweepPoint& point, const CliOverrides& ov,
                SweepRow& row) {
  const std::vector<Edit> edits = PointEdits(plan, point);
  Result<YAML::Node> doc = VariantDocument(plan.config_text, edits, Strip::kNone);
  if (!doc.ok()) {
    row.status = "refused";
    row.reason = doc.error().message;
    return;
  }
  YAML::Emitter emitter;
  emitter << *doc;
  CompareRequest request;
  request.schedules = plan.grid.compare_schedules;
  request.overrides = ov;
  const Result<CompareTable> table = Compare(emitter.c_str(), plan.config_path, request);
  if (!table.ok()) {
    row.status = "refused";
    row.reason = table.error().message;
    return;
  }
  const CompareRow* best = nullptr;
  int ran = 0;
  for (const CompareRow& r : table->rows) {
    if (!r.ran) continue;
    ++ran;
    const bool fits = r.outcome == Outcome::Ok;
    const bool best_fits = best != nullptr && best->outcome == Outcome::Ok;
    if (best == nullptr || (fits && !best_fits) ||
        (fits == best_fits && r.iteration_time < best->iteration_time)) {
      best = &r;
    }
  }
  if (best == nullptr) {
    row.status = "refused";
    row.reason = table->rows.empty() ? "no schedule to compare"
                                     : "no schedule runs: " + table->rows.front().schedule + ": " +
                                           table->rows.front().reason;
    return;
  }
  row.ran = true;
  row.iteration_time = best->iteration_time;
  row.bubble = best->bubble_fraction;
  row.peak_memory = best->max_peak;
  row.peak_rank = best->max_peak_rank;
  row.peak_capacity = best->max_peak_capacity;
  row.fits = best->outcome == Outcome::Ok;
  row.status = StatusOf(best->outcome);
  std::vector<int> lps = best->layers_per_stage;
  std::string counts;
  for (size_t i = 0; i < lps.size(); ++i) counts += (i ? "," : "") + std::to_string(lps[i]);
  row.strategy =
      fmt::format("{} v={} | layers per stage {} | recompute {} layer{}", best->schedule, best->v,
                  counts, best->recomputed_layers, best->recomputed_layers == 1 ? "" : "s");
  row.proof = fmt::format("compared: fastest {} of {} schedules that ran",
                          row.fits ? "fitting" : "(none fits)", ran);
}

}  // namespace

SweepRow EvaluatePoint(const SweepPlan& plan, const SweepPoint& point) {
  SweepRow row;
  row.point = point.index;
  row.points = plan.grid.points();
  row.config_hash = plan.config_hash;
  const SweepRun run = plan.grid.runs[static_cast<size_t>(point.run)];
  row.run = SweepRunName(run);
  row.settings = plan.settings[static_cast<size_t>(point.run)];
  CliOverrides ov;
  for (size_t k = 0; k < plan.axes.size(); ++k) {
    const PlanAxis& a = plan.axes[k];
    row.values.emplace_back(a.axis.given.key, point.values[k]);
    if (a.type == PlanAxis::Type::Schedule) ov.schedule = point.values[k];
    if (a.type != PlanAxis::Type::PipelineInt) continue;
    const auto at =
        std::find(a.axis.given.values.begin(), a.axis.given.values.end(), point.values[k]);
    const int x = a.ints[static_cast<size_t>(at - a.axis.given.values.begin())];
    if (a.pipeline_key == "stages") ov.stages = x;
    if (a.pipeline_key == "microbatches") ov.microbatches = x;
    if (a.pipeline_key == "virtual_stages") ov.virtual_stages = x;
    if (a.pipeline_key == "microbatch_group") ov.microbatch_group = x;
  }
  try {
    if (run == SweepRun::Compare) {
      RunCompare(plan, point, ov, row);
      return row;
    }
    if (run == SweepRun::Search) {
      ov.time_limit = plan.grid.time_limit;
      ov.node_limit = plan.grid.node_limit;
      ov.threads = plan.grid.search_threads;
      ov.seed = plan.grid.seed;
      ov.top = 1;
    }
    std::optional<RunConfig> config = LoadPoint(plan, point, ov, row);
    if (!config) {
      row.status = "refused";
      return row;
    }
    row.reason.clear();
    if (run == SweepRun::Search) {
      RunSearch(*config, row);
    } else {
      Simulate(*config, row);
    }
  } catch (const std::exception& e) {
    SweepRow fresh;
    fresh.point = row.point;
    fresh.points = row.points;
    fresh.config_hash = row.config_hash;
    fresh.run = row.run;
    fresh.settings = row.settings;
    fresh.values = row.values;
    row = std::move(fresh);
    row.status = "refused";
    row.reason = std::string("internal error evaluating the point: ") + e.what();
  }
  return row;
}

}  // namespace ppb
