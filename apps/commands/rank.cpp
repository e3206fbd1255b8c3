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
#include "apps/output/search_output.h"
#include "search/search.h"

namespace ppb::commands {

int RunRank(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  po::options_description opts("rank options");
  AddRunOptions(opts);
  opts.add_options()("candidates", po::value<std::string>(),
                     "candidates file (YAML, `candidates:` list); required");
  po::variables_map vm;
  if (auto done = ParseArgs(args, opts, vm, out, err)) return *done;
  if (!vm.count("candidates")) {
    err << "ppb-sim: --candidates: required; give the candidates file (YAML)\n";
    return kExitBadInput;
  }
  const std::optional<CliOverrides> ov = RunOverrides(vm, err);
  if (!ov) return kExitBadInput;
  const std::optional<RunConfig> config = Load(vm, *ov, err);
  if (!config) return kExitBadInput;
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
  if (vm["format"].as<std::string>() == "json") {
    out << FormatRankJson(*config, rank.problem, ranked);
  } else {
    out << FormatRankText(*config, rank.problem, ranked);
  }
  return kExitOk;
}

}  // namespace ppb::commands
