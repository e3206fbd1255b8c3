// ppb-sim search: loads the config and its search block (flags override
// it), searches the split, recompute and choice with the shortest iteration
// that fits, and writes the report (text or JSON) on `out`; progress on
// stderr when it is a terminal (or --progress). Exit 0 (nothing fitting is
// an answer), 2 bad input, 1 a file that cannot be written.
#include "apps/commands/commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "apps/commands/common.h"
#include "apps/input/search_problem.h"
#include "apps/output/report.h"
#include "apps/output/search_output.h"
#include "core/engine.h"
#include "search/search.h"

namespace ppb::commands {

namespace {

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

}  // namespace

int RunSearch(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  // The time limit counts from here: loading, the search, the baselines.
  const auto start = std::chrono::steady_clock::now();
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
  // The search ends a little before the limit (5 %, at most 1 s) so that
  // simulating its answers and the baselines fits in the limit too; a
  // baseline past the limit is not simulated (and says so).
  auto end = std::chrono::steady_clock::time_point::max();
  if (options.time_limit_s > 0) {
    using Dur = std::chrono::steady_clock::duration;
    const double reserve = std::min(0.05 * options.time_limit_s, 1.0);
    end = start + std::chrono::duration_cast<Dur>(
                      std::chrono::duration<double>(options.time_limit_s));
    options.deadline = start + std::chrono::duration_cast<Dur>(std::chrono::duration<double>(
                                   options.time_limit_s - reserve));
  }
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
  // A baseline must end one simulation's time before the limit: the
  // report and freeing what was built come after.
  const auto one_simulation = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(result->simulation_s));
  report.baselines = Baselines(*problem, result->found ? result->best.choice : 0,
                               end == std::chrono::steady_clock::time_point::max()
                                   ? end
                                   : end - one_simulation,
                               result->simulation_s);
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

}  // namespace ppb::commands
