// ppb-sim model: the per-layer costs derived from model.hf_config or
// model.architecture, with their sources (text or JSON). Exit 2 when the
// config gives its layers directly (nothing is derived).
#include "apps/commands/commands.h"

#include <ostream>
#include <string>
#include <vector>

#include "apps/commands/common.h"
#include "apps/output/model_output.h"

namespace ppb::commands {

int RunModel(const std::vector<std::string>& args, std::ostream& out,
             std::ostream& err) {
  po::options_description opts("model options");
  AddRunOptions(opts);
  po::variables_map vm;
  if (auto done = ParseArgs("model", args, opts, vm, out, err)) return *done;
  const std::optional<CliOverrides> ov = RunOverrides(vm, err);
  if (!ov) return kExitBadInput;
  const std::optional<RunConfig> config = Load(vm, *ov, err);
  if (!config) return kExitBadInput;
  if (config->derived.empty()) {
    err << config->path
        << ": model.hf_config: must be given (or model.architecture) for "
           "ppb-sim model (the layers are derived from it); got "
           "model.layers\n";
    return kExitBadInput;
  }
  out << (vm["format"].as<std::string>() == "json" ? FormatModelJson(*config)
                                                   : FormatModelText(*config));
  return kExitOk;
}

}  // namespace ppb::commands
