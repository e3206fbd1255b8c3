// ppb-sim rank: simulates each strategy of a candidates file under the
// config and writes them best first (equal ones in file order). Errors name
// the candidates file and line; exit 2 on bad input.
#include "apps/commands/commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "apps/commands/common.h"
#include "apps/input/candidates.h"
#include "apps/input/search_problem.h"
#include "apps/input/json_text.h"
#include "apps/output/search_output.h"
#include "apps/output/uncertainty_output.h"
#include "search/search.h"

namespace ppb::commands {

int RunRank(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  po::options_description opts("rank options");
  AddRunOptions(opts);
  opts.add_options()("candidates", po::value<std::string>(),
                     "candidates file (YAML, `candidates:` list); required");
  AddUncertaintyOptions(opts);
  po::variables_map vm;
  if (auto done = ParseArgs("rank", args, opts, vm, out, err)) return *done;
  if (!vm.count("candidates")) {
    err << "ppb-sim: --candidates: required; give the candidates file (YAML)\n";
    return kExitBadInput;
  }
  const std::optional<CliOverrides> ov = RunOverrides(vm, err);
  if (!ov) return kExitBadInput;
  const std::optional<UncertaintyRequest> uncertainty = UncertaintyFlags(vm, err);
  if (!uncertainty) return kExitBadInput;
  const std::optional<RunConfig> config = Load(vm, *ov, err);
  if (!config) return kExitBadInput;
  if (uncertainty->spread > 0 && !config->hardware.step_model) {
    err << "ppb-sim: --uncertainty: needs hardware.gpu (it draws the step model's "
           "coefficients); got a config without it\n";
    return kExitBadInput;
  }
  const std::string path = vm["candidates"].as<std::string>();
  const auto candidates = LoadCandidates(path, *config);
  if (!candidates.ok()) {
    err << candidates.error().message << "\n";
    return kExitBadInput;
  }

  const RankProblem rank = BuildRankProblem(*config, *candidates);
  std::vector<RankedCandidate> ranked;
  for (size_t i = 0; i < candidates->size(); ++i) {
    const RankCandidate& c = (*candidates)[i];
    Result<Candidate> eval =
        Evaluate(rank.problem, rank.choice_of[i], c.strategy);
    if (!eval.ok()) {
      err << fmt::format("{}:{}: candidates[{}]: {}\n", path, c.line, i,
                         eval.error().message);
      return kExitBadInput;
    }
    ranked.push_back({c.name, std::move(*eval)});
  }
  // Equal candidates keep the file's order.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RankedCandidate& a, const RankedCandidate& b) {
                     return Better(a.candidate, b.candidate);
                   });
  std::optional<UncertaintySummary> summary;
  if (uncertainty->spread > 0) {
    // Each candidate on every drawn machine: the config reloaded with the
    // drawn coefficients, the candidates file read against it.
    std::vector<std::vector<Nanos>> times;
    const Status drawn = ForEachDrawnConfig(
        vm["config"].as<std::string>(), config->hardware, *uncertainty, *ov,
        [&](const RunConfig& cfg) -> Status {
          const auto cands = LoadCandidates(path, cfg);
          if (!cands.ok()) return cands.error();
          const RankProblem drawn_rank = BuildRankProblem(cfg, *cands);
          std::vector<Nanos> row(cands->size(), 0);
          for (size_t i = 0; i < cands->size(); ++i) {
            Result<Candidate> eval =
                Evaluate(drawn_rank.problem, drawn_rank.choice_of[i], (*cands)[i].strategy);
            if (eval.ok() && RunsOnGpu(*eval, drawn_rank.problem.headroom)) {
              row[i] = eval->makespan;
            }
          }
          times.push_back(std::move(row));
          return Status{};
        });
    if (!drawn.ok()) {
      err << "ppb-sim: " << drawn.error().message << "\n";
      return kExitBadInput;
    }
    // Rows in the ranked (nominal) order.
    std::vector<std::string> names;
    std::vector<Nanos> nominal;
    std::vector<std::vector<Nanos>> ordered(times.size());
    std::vector<bool> used(candidates->size(), false);
    for (const RankedCandidate& r : ranked) {
      size_t i = 0;
      while (used[i] || (*candidates)[i].name != r.name) ++i;
      used[i] = true;
      names.push_back(r.name);
      nominal.push_back(RunsOnGpu(r.candidate, rank.problem.headroom) ? r.candidate.makespan : 0);
      for (size_t k = 0; k < times.size(); ++k) ordered[k].push_back(times[k][i]);
    }
    summary = Summarize(*uncertainty, names, nominal, ordered);
  }
  if (vm["format"].as<std::string>() == "json") {
    out << WithUncertaintyJson(FormatRankJson(*config, rank.problem, ranked), summary);
  } else {
    out << FormatRankText(*config, rank.problem, ranked);
    if (summary) out << "\n" << FormatUncertaintyText(*summary);
  }
  return kExitOk;
}

}  // namespace ppb::commands
