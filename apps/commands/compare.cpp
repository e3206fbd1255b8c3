// ppb-sim compare: one table (text, JSON or CSV) of time, bubble, peak
// memory and OOM per schedule and per variant of numeric config keys
// (--vary). The config is read here as text: each variant edits the YAML
// document before it is loaded (apps/commands/compare_run.h). Exit 2 on bad input.
#include "apps/commands/commands.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/commands/common.h"
#include "apps/commands/compare_run.h"
#include "apps/input/config_reader.h"
#include "apps/input/json_text.h"
#include "apps/output/uncertainty_output.h"

namespace ppb::commands {

int RunCompare(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  po::options_description opts("compare options");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("config,c", po::value<std::string>(), "run config (YAML); required")
      ("schedules", po::value<std::string>(),
       "schedules to compare, comma-separated, from those listed above (default: "
       "gpipe,1f1b,interleaved)")
      ("vary", po::value<std::vector<std::string>>()->composing(),
       "KEY=V1,V2,...: a numeric config key and its values (units as in the "
       "file, or factors x0.5); repeatable (rows: the cross product)")
      ("stages", po::value<std::string>(), "pipeline stages p (overrides pipeline.stages)")
      ("microbatches", po::value<std::string>(), "micro-batches m (overrides pipeline.microbatches)")
      ("virtual-stages", po::value<std::string>(),
       "chunks per rank v for interleaved (default: the config's if >= 2, else 2)")
      ("microbatch-group", po::value<std::string>(),
       "Megatron micro-batch group size g for interleaved (overrides pipeline.microbatch_group)")
      ("max-ops", po::value<std::string>(),
       "most ops one simulation may run (default 2000000; see --help of simulate)")
      ("format", po::value<std::string>()->default_value("text"), "output: text | json | csv");
  // clang-format on
  AddUncertaintyOptions(opts);
  po::variables_map vm;
  if (auto done = ParseArgs("compare", args, opts, vm, out, err, true)) return *done;
  const std::optional<CliOverrides> ov = RunOverrides(vm, err);
  if (!ov) return kExitBadInput;
  const std::optional<UncertaintyRequest> uncertainty = UncertaintyFlags(vm, err);
  if (!uncertainty) return kExitBadInput;
  if (uncertainty->spread > 0 && vm["format"].as<std::string>() == "csv") {
    err << "ppb-sim: --uncertainty: needs --format text or json (the CSV holds one row per "
           "candidate); got csv\n";
    return kExitBadInput;
  }
  CompareRequest request;
  request.overrides = *ov;
  if (vm.count("schedules")) {
    auto names = NameList("--schedules", vm["schedules"].as<std::string>());
    if (!Check(names, err)) return kExitBadInput;
    request.schedules = *names;
  }
  if (vm.count("vary")) {
    for (const std::string& text : vm["vary"].as<std::vector<std::string>>()) {
      Result<VaryAxis> axis = ParseVary(text);
      if (!axis.ok()) {
        err << "ppb-sim: " << axis.error().message << "\n";
        return kExitBadInput;
      }
      request.vary.push_back(std::move(*axis));
    }
  }
  const std::string path = vm["config"].as<std::string>();
  std::string text;
  errno = 0;
  if (!config_detail::ReadFile(path, text)) {
    err << path << ": must be a readable config file; got "
        << (errno != 0 ? std::strerror(errno) : "read error") << "\n";
    return kExitBadInput;
  }
  const Result<CompareTable> table = Compare(text, path, request);
  if (!table.ok()) {
    const bool flag = table.error().key.rfind("--", 0) == 0;
    err << (flag ? "ppb-sim: " : "") << table.error().message << "\n";
    return kExitBadInput;
  }
  const std::string format = vm["format"].as<std::string>();
  std::optional<UncertaintySummary> summary;
  if (uncertainty->spread > 0) {
    Result<UncertaintySummary> s = CompareUncertainty(text, path, request, *table,
                                                      *uncertainty);
    if (!s.ok()) {
      err << "ppb-sim: " << s.error().message << "\n";
      return kExitBadInput;
    }
    summary = std::move(*s);
  }
  if (format == "json") {
    out << WithUncertaintyJson(FormatCompareJson(*table), summary);
  } else if (format == "csv") {
    out << FormatCompareCsv(*table);
  } else {
    out << FormatCompareText(*table);
    if (summary) out << "\n" << FormatUncertaintyText(*summary);
  }
  return kExitOk;
}

}  // namespace ppb::commands
