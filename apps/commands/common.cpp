// The shared helpers of the ppb-sim commands (apps/commands/common.h).
#include "apps/commands/common.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "apps/input/units.h"
#include "apps/output/svg.h"
#include "core/gpu.h"
#include "schedules/schedule.h"

namespace ppb::commands {

Result<int> PositiveInt(const std::string& flag, const std::string& text) {
  return IntFlag<int>(flag, text, 1, "a positive integer");
}

Result<std::vector<int>> PositiveIntList(const std::string& flag,
                                         const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma - start);
    auto x = IntFlag<int>(flag, item, 1, "a positive integer");
    if (!x.ok()) {
      return Error{flag,
                   "expected a comma-separated list of positive "
                   "integers; got '" +
                       text + "'"};
    }
    out.push_back(*x);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

Result<std::vector<std::string>> NameList(const std::string& flag,
                                          const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma - start);
    if (item.empty()) {
      return Error{
          flag, "expected a comma-separated list of names; got '" + text + "'"};
    }
    out.push_back(std::move(item));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

Result<Nanos> TimeLimitFlag(const std::string& flag, const std::string& text) {
  if (Result<Nanos> d = ParseDuration(text); d.ok()) return *d;
  double seconds = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, seconds);
  if (text.empty() || ec != std::errc() || ptr != end ||
      !std::isfinite(seconds) || seconds < 0 || seconds > 1e9) {
    return Error{
        flag,
        "expected a duration (30s, 500ms) or seconds (30); got '" + text + "'"};
  }
  return static_cast<Nanos>(std::llround(seconds * 1e9));
}

bool WriteFile(const std::string& path, const std::string& text,
               std::ostream& err) {
  // A missing folder on the way is made (as `mkdir -p`), and said.
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    if (!std::filesystem::create_directories(parent, ec) || ec) {
      err << "ppb-sim: cannot write " << path << ": cannot create the folder "
          << parent.string() << ": " << (ec ? ec.message() : "it could not be made") << "\n";
      return false;
    }
    err << "ppb-sim: created the folder " << parent.string() << " for " << path << "\n";
  }
  // A full device fails only when the buffer reaches it: the stream is
  // judged after close(), and errno then holds the system's reason.
  errno = 0;
  std::ofstream f(path, std::ios::binary);
  if (f) f << text;
  if (f.is_open()) f.close();
  if (!f) {
    err << "ppb-sim: cannot write " << path << ": " << SystemReason() << "\n";
    return false;
  }
  return true;
}

namespace {

// A command of ppb-sim: its usage lines and what it does (apps/cli.cpp
// picks the command by the same names).
struct CommandInfo {
  const char* name;
  const char* usage;    // one or more "ppb-sim NAME ..." lines, each ending in \n
  const char* summary;  // "NAME: ..." wrapped at 72 columns, ending in \n
};

constexpr CommandInfo kCommands[] = {
    {"simulate", "ppb-sim [simulate] --config FILE [options]\n",
     "simulate: simulates one training iteration of a pipeline-parallel\n"
     "  schedule and reports iteration time, bubble and peak memory per device.\n"},
    {"search", "ppb-sim search --config FILE [options]\n",
     "search: finds the layers per (chunk, rank) and the recompute per layer\n"
     "  (and on a cluster of device types and nodes, the device of each rank)\n"
     "  with the shortest simulated iteration that fits in memory.\n"},
    {"rank", "ppb-sim rank --config FILE --candidates FILE [options]\n",
     "rank: simulates the strategies of a candidates file and ranks them.\n"},
    {"compare", "ppb-sim compare --config FILE [--schedules A,B] [--vary KEY=V1,V2]\n",
     "compare: one table of time, bubble, peak memory and OOM per schedule\n"
     "  and per variant of numeric config keys (--vary).\n"},
    {"model", "ppb-sim model --config FILE [--format text|json]\n",
     "model: the per-layer costs derived from model.hf_config or\n"
     "  model.architecture (with training and hardware), with sources.\n"},
    {"calibrate",
     "ppb-sim calibrate --measurements FILE [options]\n"
     "ppb-sim calibrate --runs FILE [--format text|json] [-o hardware.yaml]\n",
     "calibrate: fits per-layer costs to measured per-stage memory/time, or\n"
     "  the step model's coefficients to measured steps (--runs).\n"},
    {"sweep",
     "ppb-sim sweep --config FILE --grid FILE [--output FILE] [options]\n"
     "ppb-sim sweep merge FILE... --output FILE\n",
     "sweep: simulates, searches or compares every point of a grid of config\n"
     "  values (resumable; threads, --shard K/N or mpirun), with a summary.\n"},
    {"plan", "ppb-sim plan --config FILE [--format text|json] [--emit megatron]\n",
     "plan: the fastest TP x CP x EP x PP x DP layout, micro-batch, schedule,\n"
     "  recompute and split of a training job on N GPUs, with its proof or gap.\n"},
};

// The run given as its framework's launch (apps/commands/from_launch.h).
constexpr const char* kFromHelp =
    "simulate, search, model and plan read a Megatron-LM launch script or\n"
    "  training log in place of --config: --from megatron FILE --cluster FILE\n"
    "  (its hardware: block) [--gpus N] [--show-config: print the config read];\n"
    "  likewise --from torchtitan JOB.toml | registry.py:FUNCTION and\n"
    "  --from mindformers RUN.yaml.\n";

// "a, b, c" wrapped after `indent` at 72 columns.
std::string WrapList(const std::vector<std::string>& names, size_t indent) {
  std::string out, line(indent, ' ');
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string word = names[i] + (i + 1 < names.size() ? "," : "");
    if (line.size() > indent && line.size() + 1 + word.size() > 72) {
      out += line + "\n";
      line.assign(indent, ' ');
    }
    if (line.size() > indent) line += ' ';
    line += word;
  }
  return out + line + "\n";
}

// A command's usage lines onto `t`: the first of `t` after "usage: ",
// the others aligned under it.
void AppendUsage(const CommandInfo& c, std::string& t) {
  std::string_view lines = c.usage;
  while (!lines.empty()) {
    const size_t nl = lines.find('\n');
    t += (t.empty() ? "usage: " : "       ") + std::string(lines.substr(0, nl + 1));
    lines.remove_prefix(nl + 1);
  }
}

}  // namespace

const std::string& Usage() {
  static const std::string text = [] {
    std::string t;
    for (const CommandInfo& c : kCommands) AppendUsage(c, t);
    t += "\n";
    for (const CommandInfo& c : kCommands) t += c.summary;
    return t + kFromHelp + "'ppb-sim COMMAND --help' lists a command's options.\n";
  }();
  return text;
}

std::string CommandHelp(std::string_view name) {
  std::string t;
  for (const CommandInfo& c : kCommands) {
    if (c.name != name) continue;
    AppendUsage(c, t);
    t += "\n" + std::string(c.summary) + "\n";
    if (name == "simulate" || name == "search" || name == "model" || name == "plan") {
      t += std::string(kFromHelp) + "\n";
    }
  }
  std::vector<std::string> schedules;
  for (const ScheduleInfo& s : ScheduleRegistry()) schedules.emplace_back(s.name);
  schedules.push_back("custom (pipeline.schedule_csv)");
  t += "schedules (pipeline.schedule):\n" + WrapList(schedules, 2);
  t += "GPU presets (hardware.gpu):\n" + WrapList(GpuNames(), 2);
  return t + "\n";
}

std::string SystemReason() {
  return errno != 0 ? std::strerror(errno) : "the write failed";
}

void AddRunOptions(po::options_description& opts) {
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("config,c", po::value<std::string>(), "run config (YAML); required")
      ("schedule", po::value<std::string>(),
       "schedule, one of those listed above (overrides pipeline.schedule)")
      ("stages", po::value<std::string>(), "pipeline stages p (overrides pipeline.stages)")
      ("microbatches", po::value<std::string>(), "micro-batches m (overrides pipeline.microbatches)")
      ("virtual-stages", po::value<std::string>(), "chunks per rank v (overrides pipeline.virtual_stages)")
      ("microbatch-group", po::value<std::string>(),
       "Megatron micro-batch group size g for interleaved (overrides pipeline.microbatch_group)")
      ("max-ops", po::value<std::string>(),
       "most ops (F, B, I, W per stage and micro-batch) one simulation may run; "
       "a larger pipeline is refused at load (default 2000000, about 0.5 GB)")
      ("format", po::value<std::string>()->default_value("text"), "output: text | json");
  // clang-format on
}

void AddPictureOptions(po::options_description& opts) {
  // clang-format off
  opts.add_options()
      ("svg", po::value<std::string>(),
       "write the timeline and memory per rank as one SVG picture")
      ("report", po::value<std::string>(),
       "write a self-contained HTML report (summary, bubble breakdown, devices, picture)");
  // clang-format on
}

bool WritePictures(const po::variables_map& vm, const SimulatedRun& sim,
                   const std::string& note, const std::string& report_html,
                   std::ostream& err) {
  if (vm.count("svg") && !WriteFile(vm["svg"].as<std::string>(),
                                    FormatSvg(*sim.config, *sim.run, *sim.result, note),
                                    err)) {
    return false;
  }
  return !vm.count("report") || WriteFile(vm["report"].as<std::string>(), report_html, err);
}

std::optional<int> ParseArgs(std::string_view command, const std::vector<std::string>& args,
                             const po::options_description& opts,
                             po::variables_map& vm, std::ostream& out,
                             std::ostream& err, bool csv) {
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "ppb-sim: " << e.what() << "\n" << Usage();
    return kExitBadInput;
  }
  if (vm.count("help")) {
    out << CommandHelp(command) << opts;
    return kExitOk;
  }
  if (!vm.count("config")) {
    err << "ppb-sim: --config: required; give the run config (YAML); got nothing\n"
        << Usage();
    return kExitBadInput;
  }
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json" && !(csv && format == "csv")) {
    err << "ppb-sim: --format: expected text" << (csv ? ", json or csv" : " or json")
        << "; got '" << format << "'\n";
    return kExitBadInput;
  }
  return std::nullopt;
}

void AddEmitOptions(po::options_description& opts) {
  // clang-format off
  opts.add_options()
      ("emit", po::value<std::vector<std::string>>(),
       "framework output: megatron | mindformers | torchtitan (current, Python "
       "config) | torchtitan-0.2.2 (TOML) | deepspeed (comma-separated or "
       "repeated); after a text report, as \"emit\" in JSON")
      ("emit-file", po::value<std::string>(), "write the --emit output to FILE instead");
  // clang-format on
}

std::optional<EmitRequest> ReadEmitFlags(const po::variables_map& vm,
                                         std::ostream& err) {
  EmitRequest req;
  if (vm.count("emit")) {
    for (const std::string& text : vm["emit"].as<std::vector<std::string>>()) {
      auto fs = ParseFrameworks("--emit", text);
      if (!Check(fs, err)) return std::nullopt;
      for (Framework f : *fs) {
        if (std::find(req.frameworks.begin(), req.frameworks.end(), f) ==
            req.frameworks.end()) {
          req.frameworks.push_back(f);
        }
      }
    }
  }
  if (vm.count("emit-file")) {
    req.file = vm["emit-file"].as<std::string>();
    if (req.frameworks.empty()) {
      err << "ppb-sim: --emit-file: needs --emit (which framework to "
             "write); got --emit-file alone\n";
      return std::nullopt;
    }
  }
  return req;
}

bool RunEmit(EmitRequest& req, const RunConfig& config, const Program& program,
             std::ostream& err) {
  for (Framework f : req.frameworks) {
    Result<Emission> e = Emit(f, config, program);
    if (!Check(e, err)) return false;
    req.emissions.push_back(std::move(*e));
  }
  return true;
}

std::optional<Emission> EmitOne(Framework f, const RunConfig& config, std::ostream& err) {
  auto run = Prepare(config);
  if (!run.ok()) {
    err << run.error().message << "\n";
    return std::nullopt;
  }
  EmitRequest one;
  one.frameworks = {f};
  if (!RunEmit(one, config, run->program, err)) return std::nullopt;
  return std::move(one.emissions.front());
}

std::string EmitJson(const std::string& json, const EmitRequest& req) {
  if (req.emissions.empty() || !req.file.empty()) return json;
  return AddEmissionsToJson(json, req.emissions);
}

std::string EmitText(const EmitRequest& req) {
  if (req.emissions.empty() || !req.file.empty()) return "";
  std::string text = "\n";
  text += FormatEmissionsText(req.emissions);
  return text;
}

std::optional<CliOverrides> RunOverrides(const po::variables_map& vm,
                                         std::ostream& err) {
  CliOverrides ov;
  const std::pair<const char*, std::optional<int>*> ints[] = {
      {"stages", &ov.stages},
      {"microbatches", &ov.microbatches},
      {"virtual-stages", &ov.virtual_stages},
      {"microbatch-group", &ov.microbatch_group}};
  for (const auto& [name, slot] : ints) {
    if (!vm.count(name)) continue;
    auto v = PositiveInt(std::string("--") + name, vm[name].as<std::string>());
    if (!Check(v, err)) return std::nullopt;
    *slot = *v;
  }
  if (vm.count("max-ops")) {
    auto v = IntFlag<std::int64_t>("--max-ops", vm["max-ops"].as<std::string>(), 1,
                                   "a positive integer (ops)");
    if (!Check(v, err)) return std::nullopt;
    ov.max_ops = *v;
  }
  if (vm.count("schedule")) ov.schedule = vm["schedule"].as<std::string>();
  if (vm.count("schedule-csv"))
    ov.schedule_csv = vm["schedule-csv"].as<std::string>();
  return ov;
}

void AddUncertaintyOptions(po::options_description& opts) {
  opts.add_options()
      ("uncertainty", po::value<std::string>(),
       "rank on machines drawn around the model: each step-model coefficient uniform "
       "within +-SPREAD of its value (10% or 0.1; needs hardware.gpu)")
      ("uncertainty-samples", po::value<std::string>(),
       "machines drawn for --uncertainty (default 32, 2 to 4096)")
      ("uncertainty-seed", po::value<std::string>(),
       "seed of the draws for --uncertainty (default 1; printed)");
}

std::optional<UncertaintyRequest> UncertaintyFlags(const po::variables_map& vm,
                                                   std::ostream& err) {
  UncertaintyRequest q;
  if (!vm.count("uncertainty")) {
    for (const char* flag : {"uncertainty-samples", "uncertainty-seed"}) {
      if (vm.count(flag)) {
        err << "ppb-sim: --" << flag << ": needs --uncertainty SPREAD; got it alone\n";
        return std::nullopt;
      }
    }
    return q;
  }
  Result<double> spread = ParseSpread(vm["uncertainty"].as<std::string>(), "--uncertainty");
  if (!spread.ok()) {
    err << "ppb-sim: " << spread.error().message << "\n";
    return std::nullopt;
  }
  q.spread = *spread;
  if (vm.count("uncertainty-samples")) {
    auto n = IntFlag<int>("--uncertainty-samples", vm["uncertainty-samples"].as<std::string>(),
                          2, "an integer from 2 to 4096", 4096);
    if (!Check(n, err)) return std::nullopt;
    q.samples = *n;
  }
  if (vm.count("uncertainty-seed")) {
    auto s = IntFlag<std::uint64_t>("--uncertainty-seed", vm["uncertainty-seed"].as<std::string>(),
                                    0, "a non-negative integer");
    if (!Check(s, err)) return std::nullopt;
    q.seed = *s;
  }
  return q;
}

std::optional<RunConfig> Load(const po::variables_map& vm,
                              const CliOverrides& ov, std::ostream& err) {
  auto config = LoadConfig(vm["config"].as<std::string>(), ov);
  if (!config.ok()) {
    err << config.error().message << "\n";
    return std::nullopt;
  }
  return std::move(*config);
}

std::optional<DeployTarget> TargetFlag(const std::string& text, std::ostream& err) {
  const std::optional<DeployTarget> t = TargetFromName(text);
  if (!t) {
    err << "ppb-sim: --target: must be any, megatron, mindformers, torchtitan or deepspeed; "
           "got '"
        << text << "'\n";
  }
  return t;
}

}  // namespace ppb::commands
