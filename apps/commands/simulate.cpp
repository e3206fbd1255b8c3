// ppb-sim simulate (the default command): loads the config, runs one
// iteration and writes the report (text or JSON) on `out`, then the files
// asked for (--trace, --dump-schedule, --svg, --report, --emit-file).
// Exit 0 (an out-of-memory run is an answer), 2 bad input, 1 a file that
// cannot be written.
#include "apps/commands/commands.h"

#include <ostream>
#include <string>
#include <vector>

#include "apps/commands/common.h"
#include "apps/output/output.h"
#include "apps/output/report.h"
#include "apps/output/svg.h"
#include "core/engine.h"

namespace ppb::commands {

int RunSimulate(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err) {
  po::options_description opts("simulate options");
  AddRunOptions(opts);
  // clang-format off
  opts.add_options()
      ("schedule-csv", po::value<std::string>(),
       "torch schedule CSV to run (implies --schedule custom)")
      ("dump-schedule", po::value<std::string>(), "write the per-rank op order as torch schedule CSV")
      ("trace", po::value<std::string>(), "write a Chrome/Perfetto trace (JSON)")
      ("critical-path", "print the chain of ops and waits that sets the iteration time");
  AddPictureOptions(opts);
  // clang-format on
  AddEmitOptions(opts);
  po::variables_map vm;
  if (auto done = ParseArgs("simulate", args, opts, vm, out, err)) return *done;
  const std::optional<CliOverrides> ov = RunOverrides(vm, err);
  if (!ov) return kExitBadInput;
  std::optional<EmitRequest> emit = ReadEmitFlags(vm, err);
  if (!emit) return kExitBadInput;
  const std::optional<RunConfig> config = Load(vm, *ov, err);
  if (!config) return kExitBadInput;
  auto run = Prepare(*config);
  if (!run.ok()) {
    err << run.error().message << "\n";
    return kExitBadInput;
  }

  const bool want_trace = vm.count("trace") > 0;
  const bool want_path = vm.count("critical-path") > 0;
  SimOptions options;
  options.record_ops = true;
  options.record_memory = want_trace || vm.count("svg") || vm.count("report");
  Engine engine;
  const SimResult result = engine.Run(run->spec, run->program, options);

  std::vector<CriticalStep> path;
  if (want_path && result.outcome != Outcome::Deadlock) {
    path = CriticalPath(run->spec, run->program, result);
  }
  if (!RunEmit(*emit, *config, run->program, err)) return kExitBadInput;
  if (vm["format"].as<std::string>() == "json") {
    out << EmitJson(
        FormatSimJson(*config, *run, result, want_path ? &path : nullptr),
        *emit);
  } else {
    out << FormatSimText(*config, *run, result);
    if (want_path) {
      out << "\n"
          << FormatCriticalPathSummary(SummarizeCriticalPath(run->spec, path)) << "\n"
          << FormatCriticalPath(path);
    }
    out << EmitText(*emit);
  }
  if (!emit->file.empty() &&
      !WriteFile(emit->file, FormatEmissionsText(emit->emissions), err)) {
    return kExitIo;
  }
  if (vm.count("dump-schedule") &&
      !WriteFile(vm["dump-schedule"].as<std::string>(),
                 DumpScheduleCsv(run->program), err)) {
    return kExitIo;
  }
  if (want_trace && !WriteFile(vm["trace"].as<std::string>(),
                               FormatChromeTrace(*config, *run, result), err)) {
    return kExitIo;
  }
  const SimulatedRun sim{&*config, &*run, &result};
  if (!WritePictures(vm, sim, "",
                     vm.count("report") ? FormatSimReport(sim) : std::string(), err)) {
    return kExitIo;
  }
  return kExitOk;
}

}  // namespace ppb::commands
