// ppb-sim calibrate: reads measurements (apps/input/measurements.h), fits
// the memory and time coefficients (core/calibrate.h), writes the fit (text
// or JSON) on `out` and with --output the layer-cost YAML
// (apps/output/calibration.h). Exit 0, 2 bad input or no valid fit, 1 the
// output not writable.
#include "apps/commands/commands.h"

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <ostream>
#include <string>
#include <vector>

#include "apps/commands/common.h"
#include "apps/commands/from_launch.h"
#include "apps/input/measurements.h"
#include "apps/input/units.h"
#include "apps/output/calibration.h"
#include "apps/output/step_calibration.h"
#include "apps/input/step_runs.h"
#include "core/calibrate.h"

namespace ppb::commands {
namespace {

// calibrate --runs: the step model's coefficients from measured steps.
int RunStepCalibration(const std::string& path, const std::string& format,
                       const std::string& output, std::ostream& out, std::ostream& err) {
  Result<StepRuns> runs = LoadStepRuns(path);
  if (!runs.ok()) {
    err << runs.error().message << "\n";
    return 2;
  }
  // Runs given as Megatron-LM logs: their configs from the arguments.
  for (StepRun& run : runs->runs) {
    if (!run.from_log) continue;
    LaunchInputs in;
    in.cluster_path = run.log_cluster;
    in.gpus = run.log_gpus;
    std::string text;
    if (!ReadTextFile(run.path, text) || !ReadTextFile(run.log_cluster, in.cluster_text)) {
      err << path << ":" << run.line << ": " << run.config
          << ": must name a readable log and cluster file; got an unreadable file\n";
      return 2;
    }
    Result<LaunchConfig> launch = ReadLaunchConfig("megatron", run.path, text, in);
    if (!launch.ok()) {
      err << launch.error().message << "\n";
      return 2;
    }
    run.document = YAML::Load(launch->yaml);
    err << "ppb-sim calibrate: " << run.path << ": measured "
        << fmt::format("{:.1f}", static_cast<double>(run.measured) / 1e6)
        << " ms a step (the median of " << run.log_iterations
        << " logged iterations after the warm-up)\n";
  }
  Result<StepFit> fit = FitStepRuns(*runs);
  if (!fit.ok()) {
    err << "ppb-sim calibrate: " << fit.error().message << "\n";
    return 2;
  }
  out << (format == "json" ? FormatStepFitJson(*runs, *fit) : FormatStepFitText(*runs, *fit));
  if (!output.empty() && !WriteFile(output, StepFitHardwareYaml(*runs, *fit), err)) {
    return kExitIo;
  }
  return 0;
}

}  // namespace

int RunCalibrate(const std::vector<std::string>& args, std::ostream& out,
                 std::ostream& err) {
  namespace po = boost::program_options;
  po::options_description opts("calibrate options");
  opts.add_options()("help,h", "list the options")(
      "measurements", po::value<std::string>(),
      "measurements file: runs.yaml, or SAPP's dry-run memory YAML")(
      "runs", po::value<std::string>(),
      "measured steps of the job (each a run config with hardware.gpu and its "
      "iteration_time): fits the step model's coefficients")(
      "format", po::value<std::string>()->default_value("text"), "text | json")(
      "output,o", po::value<std::string>(), "write the layer-cost YAML here")(
      "memory-unit", po::value<std::string>(),
      "what one SAPP memory number is (e.g. 1MiB); SAPP input only")(
      "time-unit", po::value<std::string>(),
      "what one SAPP time number is (e.g. 1ms); SAPP input only")(
      "sapp-time", po::value<std::string>(),
      "what SAPP's time_config numbers are: forward (MindFormers r1.5.0, "
      "the default) or forward+backward (before commit 959a2451)")(
      "no-constant", "do not fit a per-stage constant (C = 0)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "ppb-sim calibrate: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    out << CommandHelp("calibrate") << opts;
    return 0;
  }
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json") {
    err << "ppb-sim: --format: expected text or json; got '" << format << "'\n";
    return 2;
  }
  if (vm.count("runs")) {
    if (vm.count("measurements")) {
      err << "ppb-sim: --runs: must not be given with --measurements (one "
             "calibration at a time); got both\n";
      return 2;
    }
    // --memory-unit scales SAPP's unitless memories; runs files carry units.
    if (vm.count("memory-unit")) {
      err << "ppb-sim: --memory-unit: must not be given with --runs (it reads SAPP's "
             "--measurements; a runs file writes its units); got "
          << vm["memory-unit"].as<std::string>() << "\n";
      return 2;
    }
    return RunStepCalibration(vm["runs"].as<std::string>(), format,
                              vm.count("output") ? vm["output"].as<std::string>() : "",
                              out, err);
  }
  if (!vm.count("measurements")) {
    err << "ppb-sim: --measurements: required; give the measurements file "
           "(YAML), or --runs with measured steps of the job\n";
    return 2;
  }
  SappUnits units;
  if (vm.count("memory-unit")) {
    Result<Bytes> b = ParseBytes(vm["memory-unit"].as<std::string>());
    if (!b.ok() || *b <= 0) {
      err << "ppb-sim: --memory-unit: " << (b.ok() ? "must be > 0" : b.error().message) << "\n";
      return 2;
    }
    units.memory = *b;
  }
  if (vm.count("time-unit")) {
    Result<Nanos> t = ParseDuration(vm["time-unit"].as<std::string>());
    if (!t.ok() || *t <= 0) {
      err << "ppb-sim: --time-unit: " << (t.ok() ? "must be > 0" : t.error().message) << "\n";
      return 2;
    }
    units.time = *t;
  }
  if (vm.count("sapp-time")) {
    const std::string v = vm["sapp-time"].as<std::string>();
    if (v != "forward" && v != "forward+backward") {
      err << "ppb-sim: --sapp-time: expected forward or forward+backward; "
             "got '" << v << "'\n";
      return 2;
    }
    units.time_meaning =
        v == "forward" ? SappTime::Forward : SappTime::ForwardBackward;
  }
  const std::string path = vm["measurements"].as<std::string>();
  Result<Measurements> m = LoadMeasurements(path, units);
  if (!m.ok()) {
    err << m.error().message << "\n";
    return 2;
  }
  if (vm.count("no-constant")) m->problem.fit_constant = false;
  Result<CalibrationResult> fit = Calibrate(m->problem);
  if (!fit.ok()) {
    err << path << ": " << fit.error().message << "\n";
    return 2;
  }
  // SAPP's negative per-stage constant is accepted (Calibrate refuses it
  // for ppb's own measurements); say what it means.
  if (fit->constant < -0.5) {
    err << "ppb-sim calibrate: warning: " << NegativeConstantText(*fit) << "\n";
  }
  if (format == "json") {
    out << FormatCalibrationJson(*m, *fit);
  } else {
    out << FormatCalibrationText(*m, *fit);
  }
  if (vm.count("output")) {
    Result<std::string> yaml = FormatCalibratedModel(*m, *fit, path);
    if (!yaml.ok()) {
      err << path << ": " << yaml.error().message << "\n";
      return 2;
    }
    if (!WriteFile(vm["output"].as<std::string>(), *yaml, err)) return kExitIo;
  }
  return 0;
}

}  // namespace ppb::commands
