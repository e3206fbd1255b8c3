// ppb-sim plan --uncertainty (apps/commands/plan_run.h PlanUncertainty):
// the reported layouts on drawn machines.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "apps/commands/plan_run.h"
#include "apps/input/layout_document.h"
#include "apps/input/search_problem.h"

namespace ppb {
namespace {

// The time of `e`'s best strategy on the job `doc` (a drawn machine), or
// 0 when it does not load or run there.
Nanos DrawnTime(const YAML::Node& doc, std::string_view filename, const PlanEntry& e) {
  YAML::Emitter emit;
  emit << doc;
  const std::string text = emit.c_str();
  Result<RunConfig> cfg = Error{"", ""};
  if (e.note == "your config") {
    cfg = ParseConfigYaml(YAML::Load(text), filename, CliOverrides{});
  } else {
    cfg = ParseConfigYaml(LayoutDocument(text, e.layout), filename, CliOverrides{});
    if (!cfg.ok() && cfg.error().key == "model.layers") {
      cfg = ParseConfigYaml(
          LayoutDocument(text, e.layout, static_cast<int>(e.problem->layers.size())), filename,
          CliOverrides{});
    }
  }
  if (!cfg.ok()) return 0;
  cfg->search.memory_headroom = e.config->search.memory_headroom;
  Result<SearchProblem> problem = BuildSearchProblem(*cfg);
  if (!problem.ok()) return 0;
  Result<Candidate> c = Evaluate(*problem, e.best->choice, e.best->strategy, e.best->placement);
  if (!c.ok()) return 0;
  // Memory does not move with the drawn coefficients: the plan's verdict
  // on the layout stands.
  return c->makespan;
}

}  // namespace

Result<UncertaintySummary> PlanUncertainty(std::string_view text, std::string_view filename,
                                           const PlanResult& plan,
                                           const UncertaintyRequest& request) {
  std::vector<std::string> names;
  std::vector<Nanos> nominal;
  for (const PlanEntry& e : plan.top) {
    names.push_back(e.note == "your config" ? "your config" : DescribeLayout(e.layout));
    nominal.push_back(e.best->makespan);
  }
  std::vector<std::vector<Nanos>> times;
  if (plan.top.empty()) return Summarize(request, names, nominal, times);
  const Hardware& base = plan.top.front().config->hardware;
  if (!base.step_model) {
    return Error{"--uncertainty",
                 "--uncertainty: needs hardware.gpu (it draws the step model's coefficients); "
                 "got a config without it"};
  }
  const YAML::Node root = YAML::Load(std::string(text));
  for (const DrawnMachine& m : DrawMachines(request)) {
    YAML::Node drawn = YAML::Clone(root);
    ApplyMachine(drawn, base, m);
    std::vector<Nanos> row;
    for (const PlanEntry& e : plan.top) row.push_back(DrawnTime(drawn, filename, e));
    times.push_back(std::move(row));
  }
  return Summarize(request, names, nominal, times);
}

}  // namespace ppb
