// A sweep's plan: the grid resolved against its base config
// (apps/input/grid_plan.h).
#include "apps/input/grid_plan.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "schedules/schedule.h"

namespace ppb {

using namespace vary_detail;  // NOLINT: the variant documents

namespace {

constexpr const char* kPipelineInts[] = {"stages", "microbatches", "virtual_stages",
                                         "microbatch_group"};

// "grid.yaml:LINE: vary.KEY: MESSAGE".
Error GridError(const Grid& grid, int line, const std::string& key, const std::string& message) {
  return Error{"vary." + key, fmt::format("{}:{}: vary.{}: {}", grid.path, line, key, message)};
}

// The message of a vary_detail error without its "--vary: KEY: " prefix.
std::string VaryMessage(const Error& e, const std::string& key) {
  const std::string prefix = "--vary: " + key + ": ";
  if (e.message.rfind(prefix, 0) == 0) return e.message.substr(prefix.size());
  return e.message;
}

}  // namespace

std::string ContentHash(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

Result<SweepPlan> PlanSweep(Grid grid, const std::string& config_text,
                            const std::string& config_path) {
  SweepPlan plan;
  plan.config_path = config_path;
  plan.config_text = config_text;
  plan.config_hash = ContentHash(config_text);
  Result<RunConfig> base = ParseConfig(config_text, config_path, {});
  if (!base.ok()) return base.error();
  const YAML::Node root = YAML::Load(config_text);
  const bool compare =
      std::find(grid.runs.begin(), grid.runs.end(), SweepRun::Compare) != grid.runs.end();
  std::vector<std::string> registered;
  for (const ScheduleInfo& info : ScheduleRegistry()) registered.emplace_back(info.name);

  plan.axes.reserve(grid.axes.size());
  for (const GridAxis& g : grid.axes) {
    PlanAxis pa;
    pa.axis.given = VaryAxis{g.key, g.values};
    const bool pipeline_int =
        std::any_of(std::begin(kPipelineInts), std::end(kPipelineInts),
                    [&](const char* k) { return g.key == std::string("pipeline.") + k; });
    if (pipeline_int) {
      pa.type = PlanAxis::Type::PipelineInt;
      pa.pipeline_key = g.key.substr(9);
      const std::string& k = pa.pipeline_key;
      const int b =
          k == "stages"         ? base->shape.p
          : k == "microbatches" ? base->shape.m
          : k == "virtual_stages"
              ? base->shape.v
              : (base->schedule_params.group > 0 ? base->schedule_params.group : base->shape.p);
      for (size_t i = 0; i < g.values.size(); ++i) {
        Result<std::string> r = Resolve(g.key, Kind::Int, std::to_string(b), g.values[i]);
        std::int64_t n = 0;
        if (!r.ok() || !WholeInt(*r, n) || n < 1 || n > 1'000'000) {
          return GridError(grid, g.value_lines[i], g.key,
                           "expected a positive integer (at most 1000000) or a factor like "
                           "x2; got '" +
                               g.values[i] + "'");
        }
        pa.ints.push_back(static_cast<int>(n));
      }
    } else if (g.key == "pipeline.schedule") {
      pa.type = PlanAxis::Type::Schedule;
      if (compare) {
        return GridError(grid, g.line, g.key,
                         "expected no schedule axis with run: compare (compare runs the "
                         "schedules of compare.schedules at every point); got one");
      }
      for (size_t i = 0; i < g.values.size(); ++i) {
        if (std::find(registered.begin(), registered.end(), g.values[i]) == registered.end()) {
          return GridError(
              grid, g.value_lines[i], g.key,
              "expected one of " + JoinComma(registered) + "; got '" + g.values[i] + "'");
        }
      }
    } else {
      Result<Target> target = ResolveTarget(root, g.key, /*text_ok=*/true);
      if (!target.ok()) {
        return GridError(grid, g.line, g.key, VaryMessage(target.error(), g.key));
      }
      pa.axis.target = *target;
      const YAML::Node node =
          target->type == Target::Type::Node
              ? At(root, target->path)
              : At(At(root, {{"model"}, {"layers"}})[static_cast<size_t>(target->item)],
                   target->path);
      for (size_t i = 0; i < g.values.size(); ++i) {
        Result<std::string> r = Resolve(g.key, target->kind, node.Scalar(), g.values[i]);
        if (!r.ok()) {
          return GridError(grid, g.value_lines[i], g.key, VaryMessage(r.error(), g.key));
        }
      }
    }
    plan.axes.push_back(std::move(pa));
  }
  // Text values (paths, names): each loaded once with the base config, so
  // that a missing file is an error of the grid, not a row.
  for (size_t a = 0; a < plan.axes.size(); ++a) {
    const PlanAxis& pa = plan.axes[a];
    if (pa.type != PlanAxis::Type::Document || pa.axis.target.kind != Kind::Text) continue;
    for (size_t i = 0; i < pa.axis.given.values.size(); ++i) {
      const std::vector<Edit> edits = {Edit{&pa.axis, pa.axis.given.values[i]}};
      Result<YAML::Node> doc = VariantDocument(config_text, edits, Strip::kSplitAndRecompute);
      CliOverrides neutral;
      neutral.schedule = "gpipe";
      neutral.virtual_stages = 1;
      Result<RunConfig> c =
          doc.ok() ? ParseConfigYaml(*doc, config_path, neutral) : Result<RunConfig>(doc.error());
      if (!c.ok() &&
          (c.error().key == pa.axis.given.key ||
           c.error().key.rfind(pa.axis.given.key + ".", 0) == 0 || c.error().key.empty())) {
        return GridError(grid, grid.axes[a].value_lines[i], pa.axis.given.key,
                         "expected a value the base config loads with; got '" +
                             pa.axis.given.values[i] + "': " + c.error().message);
      }
    }
  }
  for (SweepRun run : grid.runs) plan.settings.push_back(RunSettings(grid, run));
  plan.grid = std::move(grid);
  return plan;
}

SweepPoint PointAt(const SweepPlan& plan, std::int64_t index) {
  SweepPoint p;
  p.index = index;
  std::int64_t rest = index;
  const auto runs = static_cast<std::int64_t>(plan.grid.runs.size());
  p.run = static_cast<int>(rest % runs);
  rest /= runs;
  p.values.resize(plan.axes.size());
  for (size_t k = plan.axes.size(); k-- > 0;) {
    const auto n = static_cast<std::int64_t>(plan.axes[k].axis.given.values.size());
    p.values[k] = plan.axes[k].axis.given.values[static_cast<size_t>(rest % n)];
    rest /= n;
  }
  return p;
}

}  // namespace ppb
