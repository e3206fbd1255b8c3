#include "apps/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/calibrate.h"
#include "apps/compare.h"
#include "apps/input/config.h"
#include "apps/emit.h"
#include "apps/output.h"
#include "apps/model_output.h"
#include "apps/report.h"
#include "apps/search_cli.h"
#include "apps/search_output.h"
#include "apps/svg.h"
#include "apps/input/units.h"
#include "core/engine.h"
#include "search/search.h"

namespace ppb {
namespace {

namespace po = boost::program_options;

constexpr int kExitOk = 0;
constexpr int kExitIo = 1;
constexpr int kExitBadInput = 2;

constexpr const char* kUsage =
    "usage: ppb-sim [simulate] --config FILE [options]\n"
    "       ppb-sim search --config FILE [options]\n"
    "       ppb-sim rank --config FILE --candidates FILE [options]\n"
    "       ppb-sim compare --config FILE [--schedules A,B] [--vary KEY=V1,V2]\n"
    "       ppb-sim model --config FILE [--format text|json]\n"
    "       ppb-sim calibrate --measurements FILE [options]\n"
    "\n"
    "simulate: simulates one training iteration of a pipeline-parallel\n"
    "  schedule and reports iteration time, bubble and peak memory per "
    "device.\n"
    "search: finds the layers per (chunk, rank) and the recompute per layer\n"
    "  (and on a cluster of device types and nodes, the device of each rank)\n"
    "  with the shortest simulated iteration that fits in memory.\n"
    "rank: simulates the strategies of a candidates file and ranks them.\n"
    "compare: one table of time, bubble, peak memory and OOM per schedule\n"
    "  and per variant of numeric config keys (--vary).\n"
    "model: the per-layer costs derived from model.hf_config or\n"
    "  model.architecture (with training and hardware), with sources.\n"
    "calibrate: fits per-layer costs to measured per-stage memory/time.\n"
    "'ppb-sim COMMAND --help' lists a command's options.\n";

// An integer option value in [min, max], or an error naming the flag.
template <class T>
Result<T> IntFlag(const std::string& flag, const std::string& text, T min,
                  std::string_view expected) {
  T value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min) {
    return Error{flag,
                 "expected " + std::string(expected) + "; got '" + text + "'"};
  }
  return value;
}

Result<int> PositiveInt(const std::string& flag, const std::string& text) {
  return IntFlag<int>(flag, text, 1, "a positive integer");
}

// A comma-separated list of positive integers ("1,2,4").
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

// A comma-separated list of names ("1f1b,interleaved"); names are checked
// by the config loader.
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

// "30s", "500ms" or plain seconds ("30", "1.5"); 0 means no limit.
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
  std::ofstream f(path, std::ios::binary);
  if (f) f << text;
  if (!f) {
    err << "ppb-sim: cannot write " << path << "\n";
    return false;
  }
  return true;
}

// Options every command takes: the config and the pipeline overrides.
void AddRunOptions(po::options_description& opts) {
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("config,c", po::value<std::string>(), "run config (YAML); required")
      ("schedule", po::value<std::string>(),
       "schedule: gpipe | 1f1b | interleaved | custom (overrides pipeline.schedule)")
      ("stages", po::value<std::string>(), "pipeline stages p (overrides pipeline.stages)")
      ("microbatches", po::value<std::string>(), "micro-batches m (overrides pipeline.microbatches)")
      ("virtual-stages", po::value<std::string>(), "chunks per rank v (overrides pipeline.virtual_stages)")
      ("microbatch-group", po::value<std::string>(),
       "Megatron micro-batch group size g for interleaved (overrides pipeline.microbatch_group)")
      ("format", po::value<std::string>()->default_value("text"), "output: text | json");
  // clang-format on
}

// --svg and --report, taken by simulate and search.
void AddPictureOptions(po::options_description& opts) {
  // clang-format off
  opts.add_options()
      ("svg", po::value<std::string>(),
       "write the timeline and memory per rank as one SVG picture")
      ("report", po::value<std::string>(),
       "write a self-contained HTML report (summary, bubble breakdown, devices, picture)");
  // clang-format on
}

// Writes the --svg and --report files of `vm` for the simulation `sim`
// (`report_html` is the page, built by the caller); false (reported) when
// one cannot be written.
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

// Parses `args` into `vm`. Returns an exit status when the command is done
// (help printed, or bad input reported), nullopt to go on.
std::optional<int> ParseArgs(const std::vector<std::string>& args,
                             const po::options_description& opts,
                             po::variables_map& vm, std::ostream& out,
                             std::ostream& err, bool csv = false) {
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
    err << "ppb-sim: --config: required; give the run config (YAML)\n"
        << kUsage;
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

// Reports a bad flag value; returns false when `r` is an error.
template <class T>
bool Check(const Result<T>& r, std::ostream& err) {
  if (r.ok()) return true;
  err << "ppb-sim: " << r.error().key << ": " << r.error().message << "\n";
  return false;
}

// ---- --emit (apps/emit.h) --------------------------------------------------

// What --emit asked for, and what was emitted.
struct EmitRequest {
  std::vector<Framework> frameworks;  // empty: no --emit
  std::string file;                   // --emit-file; empty: with the report
  std::vector<Emission> emissions;
};

void AddEmitOptions(po::options_description& opts) {
  // clang-format off
  opts.add_options()
      ("emit", po::value<std::vector<std::string>>(),
       "framework output: megatron | mindformers | torchtitan | deepspeed "
       "(comma-separated or repeated); after a text report, as \"emit\" in JSON")
      ("emit-file", po::value<std::string>(), "write the --emit output to FILE instead");
  // clang-format on
}

// The --emit flags; nullopt after reporting a bad one.
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

// Emits `config` for every framework asked; false after reporting a refusal.
bool RunEmit(EmitRequest& req, const RunConfig& config, const Program& program,
             std::ostream& err) {
  for (Framework f : req.frameworks) {
    Result<Emission> e = Emit(f, config, program);
    if (!Check(e, err)) return false;
    req.emissions.push_back(std::move(*e));
  }
  return true;
}

// The JSON report with an "emit" object when the output goes with it.
std::string EmitJson(const std::string& json, const EmitRequest& req) {
  if (req.emissions.empty() || !req.file.empty()) return json;
  return AddEmissionsToJson(json, req.emissions);
}

// The text that follows a text report ("" when there is none to print).
std::string EmitText(const EmitRequest& req) {
  if (req.emissions.empty() || !req.file.empty()) return "";
  std::string text = "\n";
  text += FormatEmissionsText(req.emissions);
  return text;
}

// The pipeline overrides of AddRunOptions (and --schedule-csv when given).
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
  if (vm.count("schedule")) ov.schedule = vm["schedule"].as<std::string>();
  if (vm.count("schedule-csv"))
    ov.schedule_csv = vm["schedule-csv"].as<std::string>();
  return ov;
}

// The config with `ov` applied; prints the error and returns nullopt when it
// does not load.
std::optional<RunConfig> Load(const po::variables_map& vm,
                              const CliOverrides& ov, std::ostream& err) {
  auto config = LoadConfig(vm["config"].as<std::string>(), ov);
  if (!config.ok()) {
    err << config.error().message << "\n";
    return std::nullopt;
  }
  return std::move(*config);
}

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
  if (auto done = ParseArgs(args, opts, vm, out, err)) return *done;
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
    if (want_path) out << "\n" << FormatCriticalPath(path);
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

// The --svg / --report files of a search: the recommendation simulated in
// full, or when nothing fits the first baseline that runs (it shows what
// does not fit).
int WriteSearchPictures(const po::variables_map& vm, const RunConfig& config,
                        const SearchReport& report, std::ostream& err) {
  if (!vm.count("svg") && !vm.count("report")) return kExitOk;
  const SearchResult& result = *report.result;
  const Candidate* shown = result.found ? &result.best : nullptr;
  std::string note = "search recommendation";
  for (const Baseline& b : report.baselines) {
    if (shown != nullptr) break;
    if (!b.applicable) continue;
    shown = &b.candidate;
    note = "nothing fits; shown: baseline " + b.name;
  }
  std::optional<RunConfig> shown_config;
  std::optional<PreparedRun> run;
  SimResult sim_result;
  SimulatedRun sim;
  if (shown != nullptr) {
    shown_config = CandidateConfig(config, *report.problem, *shown);
    auto prepared = Prepare(*shown_config);
    if (!prepared.ok()) {
      err << "ppb-sim: search: cannot simulate the strategy to draw: "
          << prepared.error().message << "\n";
      return kExitBadInput;
    }
    run = std::move(*prepared);
    SimOptions options;
    options.record_ops = true;
    options.record_memory = true;
    Engine engine;
    sim_result = engine.Run(run->spec, run->program, options);
    sim = SimulatedRun{&*shown_config, &*run, &sim_result};
  } else if (vm.count("svg")) {
    err << "ppb-sim: --svg: nothing to draw: no strategy fits and no baseline runs\n";
    return kExitBadInput;
  }
  const std::string html =
      vm.count("report") ? FormatSearchReport(config, report, sim, note) : std::string();
  if (shown == nullptr) {
    return WriteFile(vm["report"].as<std::string>(), html, err) ? kExitOk : kExitIo;
  }
  return WritePictures(vm, sim, note, html, err) ? kExitOk : kExitIo;
}

// The search flags into `ov`; false (reported) on a bad value.
bool SearchOverrides(const po::variables_map& vm, CliOverrides& ov,
                     std::ostream& err) {
  auto str = [&](const char* name) { return vm[name].as<std::string>(); };
  if (vm.count("time-limit")) {
    auto t = TimeLimitFlag("--time-limit", str("time-limit"));
    if (!Check(t, err)) return false;
    ov.time_limit = *t;
  }
  if (vm.count("node-limit")) {
    auto n = IntFlag<std::int64_t>("--node-limit", str("node-limit"), 1,
                                   "a positive integer");
    if (!Check(n, err)) return false;
    ov.node_limit = *n;
  }
  if (vm.count("seed")) {
    auto s = IntFlag<std::uint64_t>("--seed", str("seed"), 0,
                                    "a non-negative integer");
    if (!Check(s, err)) return false;
    ov.seed = *s;
  }
  for (const auto& [name, slot] :
       {std::pair{"threads", &ov.threads}, std::pair{"top", &ov.top}}) {
    if (!vm.count(name)) continue;
    auto x = PositiveInt(std::string("--") + name, str(name));
    if (!Check(x, err)) return false;
    *slot = *x;
  }
  if (vm.count("schedules")) {
    auto names = NameList("--schedules", str("schedules"));
    if (!Check(names, err)) return false;
    ov.schedules = *names;
  }
  for (const auto& [name, slot] :
       {std::pair{"virtual-stages-list", &ov.virtual_stages_list},
        std::pair{"microbatch-groups", &ov.microbatch_groups}}) {
    if (!vm.count(name)) continue;
    auto xs = PositiveIntList(std::string("--") + name, str(name));
    if (!Check(xs, err)) return false;
    *slot = *xs;
  }
  return true;
}

int RunSearch(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  po::options_description opts("search options");
  AddRunOptions(opts);
  // clang-format off
  opts.add_options()
      ("time-limit", po::value<std::string>(),
       "stop after this long: 30s, 500ms or seconds (default search.time_limit, 60s; 0: none)")
      ("node-limit", po::value<std::string>(), "stop after N branch-and-bound nodes (default none)")
      ("threads", po::value<std::string>(), "search threads (default: every hardware thread)")
      ("seed", po::value<std::string>(), "seed of the local-search restarts (default 1)")
      ("top", po::value<std::string>(), "alternatives to report (default 5)")
      ("schedules", po::value<std::string>(),
       "schedules to search, comma-separated: gpipe, 1f1b, interleaved (overrides search.schedules)")
      ("virtual-stages-list", po::value<std::string>(),
       "v values to search for interleaved, comma-separated (overrides search.virtual_stages)")
      ("microbatch-groups", po::value<std::string>(),
       "g values to search for interleaved, comma-separated (overrides search.microbatch_groups)")
      ("progress", "report progress on stderr even when it is not a terminal");
  AddPictureOptions(opts);
  // clang-format on
  AddEmitOptions(opts);
  po::variables_map vm;
  if (auto done = ParseArgs(args, opts, vm, out, err)) return *done;
  std::optional<CliOverrides> ov = RunOverrides(vm, err);
  if (!ov || !SearchOverrides(vm, *ov, err)) return kExitBadInput;
  std::optional<EmitRequest> emit = ReadEmitFlags(vm, err);
  if (!emit) return kExitBadInput;
  const std::optional<RunConfig> config = Load(vm, *ov, err);
  if (!config) return kExitBadInput;
  const Result<SearchProblem> problem = BuildSearchProblem(*config);
  if (!problem.ok()) {
    err << problem.error().message << "\n";
    return kExitBadInput;
  }

  SearchOptions options = MakeSearchOptions(config->search);
  // On a terminal the report rewrites one line; elsewhere (--progress) it
  // appends lines. Test output stays clean: string streams are no terminal.
  const bool tty = err.rdbuf() == std::cerr.rdbuf() && isatty(STDERR_FILENO);
  bool reported = false;
  if (tty || vm.count("progress")) {
    options.progress = [&err, &reported, tty](const SearchProgress& p) {
      reported = true;
      if (tty) {
        err << "\r" << FormatProgress(p) << "\x1b[K" << std::flush;
      } else {
        err << FormatProgress(p) << "\n";
      }
    };
  }
  const Result<SearchResult> result = Search(*problem, options);
  if (tty && reported) err << "\r\x1b[K" << std::flush;
  if (!result.ok()) {
    err << "ppb-sim: search: " << result.error().message << "\n";
    return kExitBadInput;
  }

  SearchReport report;
  report.problem = &*problem;
  report.options = &options;
  report.result = &*result;
  report.baselines =
      Baselines(*problem, result->found ? result->best.choice : 0);
  // --emit: the recommendation under the schedule, v and g it chose.
  if (!emit->frameworks.empty() && result->found) {
    const RunConfig best = CandidateConfig(*config, *problem, result->best);
    auto run = Prepare(best);
    if (!run.ok()) {
      err << run.error().message << "\n";
      return kExitBadInput;
    }
    if (!RunEmit(*emit, best, run->program, err)) return kExitBadInput;
  } else if (!emit->frameworks.empty()) {
    err << "ppb-sim: --emit: no strategy fits in memory; nothing emitted\n";
  }
  if (vm["format"].as<std::string>() == "json") {
    out << EmitJson(FormatSearchJson(*config, report), *emit);
  } else {
    out << FormatSearchText(*config, report);
    out << EmitText(*emit);
  }
  if (!emit->file.empty() && !emit->emissions.empty() &&
      !WriteFile(emit->file, FormatEmissionsText(emit->emissions), err)) {
    return kExitIo;
  }
  return WriteSearchPictures(vm, *config, report, err);
}

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

int RunModel(const std::vector<std::string>& args, std::ostream& out,
             std::ostream& err) {
  po::options_description opts("model options");
  AddRunOptions(opts);
  po::variables_map vm;
  if (auto done = ParseArgs(args, opts, vm, out, err)) return *done;
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

int RunCompare(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  po::options_description opts("compare options");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("config,c", po::value<std::string>(), "run config (YAML); required")
      ("schedules", po::value<std::string>(),
       "schedules to compare, comma-separated (default: gpipe,1f1b,interleaved)")
      ("vary", po::value<std::vector<std::string>>()->composing(),
       "KEY=V1,V2,...: a numeric config key and its values (units as in the "
       "file, or factors x0.5); repeatable (rows: the cross product)")
      ("stages", po::value<std::string>(), "pipeline stages p (overrides pipeline.stages)")
      ("microbatches", po::value<std::string>(), "micro-batches m (overrides pipeline.microbatches)")
      ("virtual-stages", po::value<std::string>(),
       "chunks per rank v for interleaved (default: the config's if >= 2, else 2)")
      ("microbatch-group", po::value<std::string>(),
       "Megatron micro-batch group size g for interleaved (overrides pipeline.microbatch_group)")
      ("format", po::value<std::string>()->default_value("text"), "output: text | json | csv");
  // clang-format on
  po::variables_map vm;
  if (auto done = ParseArgs(args, opts, vm, out, err, true)) return *done;
  const std::optional<CliOverrides> ov = RunOverrides(vm, err);
  if (!ov) return kExitBadInput;
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
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in) {
    err << path << ": must be a readable config file; got "
        << std::strerror(errno) << "\n";
    return kExitBadInput;
  }
  const Result<CompareTable> table = Compare(text.str(), path, request);
  if (!table.ok()) {
    const bool flag = table.error().key.rfind("--", 0) == 0;
    err << (flag ? "ppb-sim: " : "") << table.error().message << "\n";
    return kExitBadInput;
  }
  const std::string format = vm["format"].as<std::string>();
  out << (format == "json"   ? FormatCompareJson(*table)
          : format == "csv" ? FormatCompareCsv(*table)
                            : FormatCompareText(*table));
  return kExitOk;
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
  if (command == "simulate") return RunSimulate(args, out, err);
  if (command == "search") return RunSearch(args, out, err);
  if (command == "rank") return RunRank(args, out, err);
  if (command == "model") return RunModel(args, out, err);
  if (command == "compare") return RunCompare(args, out, err);
  if (command == "calibrate") return RunCalibrate(args, out, err);
  err << "ppb-sim: unknown command '" << command
      << "'; expected simulate (the default), search, rank, compare, model "
         "or calibrate\n"
      << kUsage;
  return kExitBadInput;
}

}  // namespace ppb
