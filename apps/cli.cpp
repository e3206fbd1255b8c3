#include "apps/cli.h"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <charconv>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "apps/config.h"
#include "apps/output.h"
#include "core/engine.h"

namespace ppb {
namespace {

namespace po = boost::program_options;

constexpr int kExitOk = 0;
constexpr int kExitIo = 1;
constexpr int kExitBadInput = 2;

constexpr const char* kUsage =
    "usage: ppb-sim [simulate] --config FILE [options]\n"
    "\n"
    "Simulates one training iteration of a pipeline-parallel schedule and\n"
    "reports iteration time, bubble and peak memory per device.\n";

// Parses a positive integer option value, or returns an error message.
Result<int> PositiveInt(const std::string& flag, const std::string& text) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < 1) {
    return Error{flag, "expected a positive integer; got '" + text + "'"};
  }
  return value;
}

bool WriteFile(const std::string& path, const std::string& text,
               std::ostream& err) {
  std::ofstream f(path, std::ios::binary);
  if (f) f << text;
  if (!f) {
    err << "ppb-sim: cannot write " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out,
           std::ostream& err) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command = "simulate";
  if (!args.empty() && !args[0].empty() && args[0][0] != '-') {
    command = args[0];
    args.erase(args.begin());
  }
  if (command != "simulate") {
    err << "ppb-sim: unknown command '" << command
        << "'; expected 'simulate' (the default)\n"
        << kUsage;
    return kExitBadInput;
  }

  po::options_description opts("options");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("config,c", po::value<std::string>(), "run config (YAML); required")
      ("schedule", po::value<std::string>(),
       "schedule: gpipe | 1f1b | interleaved | custom (overrides pipeline.schedule)")
      ("schedule-csv", po::value<std::string>(),
       "torch schedule CSV to run (implies --schedule custom)")
      ("stages", po::value<std::string>(), "pipeline stages p (overrides pipeline.stages)")
      ("microbatches", po::value<std::string>(), "micro-batches m (overrides pipeline.microbatches)")
      ("virtual-stages", po::value<std::string>(), "chunks per rank v (overrides pipeline.virtual_stages)")
      ("microbatch-group", po::value<std::string>(),
       "Megatron micro-batch group size g for interleaved (overrides pipeline.microbatch_group)")
      ("format", po::value<std::string>()->default_value("text"), "output: text | json")
      ("dump-schedule", po::value<std::string>(), "write the per-rank op order as torch schedule CSV")
      ("trace", po::value<std::string>(), "write a Chrome/Perfetto trace (JSON)")
      ("critical-path", "print the chain of ops and waits that sets the iteration time");
  // clang-format on

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "ppb-sim: " << e.what() << "\n" << kUsage;
    return kExitBadInput;
  }
  if (vm.count("help")) {
    out << kUsage << "\n" << opts;
    return kExitOk;
  }
  if (!vm.count("config")) {
    err << "ppb-sim: --config: required; give the run config (YAML)\n" << kUsage;
    return kExitBadInput;
  }
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json") {
    err << "ppb-sim: --format: expected text or json; got '" << format << "'\n";
    return kExitBadInput;
  }

  CliOverrides ov;
  const std::pair<const char*, std::optional<int>*> ints[] = {
      {"stages", &ov.stages},
      {"microbatches", &ov.microbatches},
      {"virtual-stages", &ov.virtual_stages},
      {"microbatch-group", &ov.microbatch_group}};
  for (const auto& [name, slot] : ints) {
    if (!vm.count(name)) continue;
    auto v = PositiveInt(std::string("--") + name, vm[name].as<std::string>());
    if (!v.ok()) {
      err << "ppb-sim: " << v.error().key << ": " << v.error().message << "\n";
      return kExitBadInput;
    }
    *slot = *v;
  }
  if (vm.count("schedule")) ov.schedule = vm["schedule"].as<std::string>();
  if (vm.count("schedule-csv")) ov.schedule_csv = vm["schedule-csv"].as<std::string>();

  auto config = LoadConfig(vm["config"].as<std::string>(), ov);
  if (!config.ok()) {
    err << config.error().message << "\n";
    return kExitBadInput;
  }
  auto run = Prepare(*config);
  if (!run.ok()) {
    err << run.error().message << "\n";
    return kExitBadInput;
  }

  const bool want_trace = vm.count("trace") > 0;
  const bool want_path = vm.count("critical-path") > 0;
  SimOptions options;
  options.record_ops = true;
  options.record_memory = want_trace;
  Engine engine;
  const SimResult result = engine.Run(run->spec, run->program, options);

  std::vector<CriticalStep> path;
  if (want_path && result.outcome != Outcome::Deadlock) {
    path = CriticalPath(run->spec, run->program, result);
  }
  if (format == "json") {
    out << FormatSimJson(*config, *run, result, want_path ? &path : nullptr);
  } else {
    out << FormatSimText(*config, *run, result);
    if (want_path) out << "\n" << FormatCriticalPath(path);
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
  return kExitOk;
}

}  // namespace ppb
