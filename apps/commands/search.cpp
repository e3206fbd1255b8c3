// ppb-sim search: loads the config and its search block (flags override
// it), searches the split, recompute and choice with the shortest iteration
// that fits, and writes the report (text or JSON) on `out`; progress on
// stderr when it is a terminal (or --progress). Exit 0 (nothing fitting is
// an answer), 2 bad input, 1 a file that cannot be written.
#include "apps/commands/commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>
#include <ostream>
#include <string>
#include <vector>

#include "apps/commands/common.h"
#include "apps/commands/search_mpi.h"
#include "apps/commands/sweep_mpi.h"
#include "apps/input/json_text.h"
#include "apps/input/search_problem.h"
#include "apps/output/output.h"
#include "apps/output/report.h"
#include "apps/output/search_output.h"
#include "apps/output/uncertainty_output.h"
#include "core/engine.h"
#include "search/context_cache.h"
#include "search/first_tries.h"
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
  if (vm.count("target")) {
    const std::optional<DeployTarget> t = TargetFlag(str("target"), err);
    if (!t) return false;
    ov.target = *t;
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

// The search ends a little before the limit (5 %, at most 1 s) so that
// simulating its answers and the baselines fits in the limit too; a
// baseline past the limit is not simulated (and says so). Returns the
// limit's instant (max: none).
std::chrono::steady_clock::time_point SetDeadline(
    SearchOptions& options, std::chrono::steady_clock::time_point start) {
  if (options.time_limit_s <= 0) return std::chrono::steady_clock::time_point::max();
  using Dur = std::chrono::steady_clock::duration;
  const double reserve = std::min(0.05 * options.time_limit_s, 1.0);
  options.deadline = start + std::chrono::duration_cast<Dur>(std::chrono::duration<double>(
                                 options.time_limit_s - reserve));
  return start + std::chrono::duration_cast<Dur>(
                     std::chrono::duration<double>(options.time_limit_s));
}

// Target any under a time limit: the recommendation's search takes 60 % of
// it, so that each framework's best deployable strategy (searched after it)
// has time too when the recommendation is not deployable.
SearchOptions MainShare(const SearchOptions& options,
                        std::chrono::steady_clock::time_point start) {
  SearchOptions main_options = options;
  if (options.target == DeployTarget::Any && options.time_limit_s > 0) {
    using Dur = std::chrono::steady_clock::duration;
    const double share = 0.6 * std::chrono::duration<double>(options.deadline - start).count();
    main_options.time_limit_s = share;
    main_options.deadline =
        start + std::chrono::duration_cast<Dur>(std::chrono::duration<double>(share));
  }
  return main_options;
}

// A rank > 0 of mpirun: loads what rank 0 loads (rank 0 reports its
// errors), searches the units rank 0 grants it and sends its part.
int SearchWorker(const po::variables_map& vm, const MpiWorld& world) {
  const auto start = std::chrono::steady_clock::now();
  std::ostringstream quiet;
  std::optional<CliOverrides> ov = RunOverrides(vm, quiet);
  if (!ov || !SearchOverrides(vm, *ov, quiet)) return kExitBadInput;
  const std::optional<RunConfig> config = Load(vm, *ov, quiet);
  if (!config) return kExitBadInput;
  const Result<SearchProblem> problem = BuildSearchProblem(*config);
  if (!problem.ok()) return kExitBadInput;
  SearchOptions options = MakeSearchOptions(config->search);
  SetDeadline(options, start);
  options = MainShare(options, start);
  if (!world.serialized) options.threads = 1;  // only this thread may ask rank 0
  int code = kExitOk;
  MpiSearchWork(world, [&](const SearchShare& share) {
    SearchOptions o = options;
    o.share = &share;
    const Result<SearchResult> r = Search(*problem, o);
    if (!r.ok()) code = kExitBadInput;
    return r.ok() ? EncodePart(*r) : std::string("error: ") + r.error().message;
  });
  return code;
}

// Rank 0 of mpirun: its own share of the search, the others' parts, merged.
Result<SearchResult> SearchLead(const SearchProblem& problem, SearchOptions options,
                                const MpiWorld& world,
                                std::chrono::steady_clock::time_point start) {
  if (!world.serialized) options.threads = 1;
  Result<SearchResult> own = Error{};
  const std::vector<std::string> texts = MpiSearchLead(world, [&](const SearchShare& share) {
    SearchOptions o = options;
    o.share = &share;
    own = Search(problem, o);
  });
  if (!own.ok()) return own;
  std::vector<SearchResult> parts{*own};
  for (const std::string& text : texts) {
    Result<SearchResult> part = DecodePart(problem, text);
    if (!part.ok()) return part.error();
    parts.push_back(std::move(part).value());
  }
  Result<SearchResult> merged = MergeParts(problem, options, parts);
  if (merged.ok()) {
    merged->solve_time_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return merged;
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
      ("target", po::value<std::string>(),
       "search only what this framework can deploy: any, megatron, mindformers, torchtitan, "
       "deepspeed (overrides search.target; default any)")
      ("schedules", po::value<std::string>(),
       "schedules to search, comma-separated, from those listed above (overrides "
       "search.schedules)")
      ("virtual-stages-list", po::value<std::string>(),
       "v values to search for interleaved, comma-separated (overrides search.virtual_stages)")
      ("microbatch-groups", po::value<std::string>(),
       "g values to search for interleaved, comma-separated (overrides search.microbatch_groups)")
      ("progress", "report progress on stderr even when it is not a terminal");
  AddPictureOptions(opts);
  AddUncertaintyOptions(opts);
  // clang-format on
  AddEmitOptions(opts);
  po::variables_map vm;
  if (auto done = ParseArgs("search", args, opts, vm, out, err)) return *done;
  // Under mpirun every rank searches its share; rank 0 reports.
  const std::optional<MpiWorld> started = StartMpiOrReport(err);
  if (!started) return kExitBadInput;
  const MpiWorld world = *started;
  const MpiStop stop{world};
  if (world.rank > 0) return SearchWorker(vm, world);
  std::optional<CliOverrides> ov = RunOverrides(vm, err);
  if (!ov || !SearchOverrides(vm, *ov, err)) return kExitBadInput;
  std::optional<EmitRequest> emit = ReadEmitFlags(vm, err);
  if (!emit) return kExitBadInput;
  const std::optional<UncertaintyRequest> uncertainty = UncertaintyFlags(vm, err);
  if (!uncertainty) return kExitBadInput;
  const std::optional<RunConfig> config = Load(vm, *ov, err);
  if (!config) return kExitBadInput;
  if (uncertainty->spread > 0 && !config->hardware.step_model) {
    err << "ppb-sim: --uncertainty: needs hardware.gpu (it draws the step model's "
           "coefficients); got a config without it\n";
    return kExitBadInput;
  }
  const Result<SearchProblem> problem = BuildSearchProblem(*config);
  if (!problem.ok()) {
    err << problem.error().message << "\n";
    return kExitBadInput;
  }

  SearchOptions options = MakeSearchOptions(config->search);
  // One set of schedule-choice contexts (programs, memory profiles) for the
  // main search and each framework's deployable search after it.
  options.contexts = NewContextCache();
  const auto end = SetDeadline(options, start);
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
  // Each framework's best deployable strategy, searched by itself until
  // `until` (its own target's search; under a time limit, an equal share of
  // what is left over the `shares` still to come).
  auto search_target = [&](DeployTarget t, int shares,
                           std::chrono::steady_clock::time_point until) {
    DeployableBest d;
    d.target = t;
    SearchOptions o = options;
    o.target = t;
    o.progress = nullptr;
    if (options.time_limit_s > 0) {
      o.deadline = std::min(options.deadline, until);
      const double left =
          std::chrono::duration<double>(o.deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0.01) return d;
      o.time_limit_s = left / std::max(1, shares);
    }
    Result<SearchResult> r = Search(*problem, o);
    if (r.ok()) {
      d.searched = true;
      d.result = std::move(*r);
    }
    if (d.searched && !d.result.found && !d.result.proved_infeasible) {
      // Not proved: say which of the framework's defaults were simulated,
      // and take one that fits (a search stopped before its first tries).
      for (TriedDefault& x : TryDefaults(*problem, t, options.deadline)) {
        if (x.candidate.feasible) {
          if (!d.result.found || Better(x.candidate, d.result.best)) {
            d.result.found = true;
            d.result.best = std::move(x.candidate);
            d.result.top = {d.result.best};
          }
          continue;
        }
        int worst = 0;
        for (size_t k = 0; k < x.candidate.devices.size(); ++k) {
          const DeviceStats& a = x.candidate.devices[k];
          const DeviceStats& w = x.candidate.devices[static_cast<size_t>(worst)];
          if (a.peak_memory - a.capacity > w.peak_memory - w.capacity) worst = static_cast<int>(k);
        }
        const DeviceStats& w = x.candidate.devices[static_cast<size_t>(worst)];
        d.defaults_tried.push_back(
            fmt::format("{} ({}): peak {} on rank {} of {}", x.name,
                        DescribeChoice(*problem, problem->choices[static_cast<size_t>(x.choice)]),
                        FormatBytes(w.peak_memory), worst, FormatBytes(w.capacity)));
      }
      if (d.result.found) d.defaults_tried.clear();
    }
    return d;
  };
  // Target any under a time limit, in one process: the frameworks'
  // searches come first, in 40 % of the time (what one does not use flows
  // to the next), and the recommendation's search gets all that is left,
  // less the baselines' simulations. Searched after it (as without a
  // limit), they would have to be given their 40 % before knowing whether
  // the recommendation needs them, and it would sit idle when it does not
  // (issue 46: a 30 s search stopped after 14.4 s). Without a limit, or
  // under mpirun (the other processes start the recommendation's search at
  // once), they follow it, and only where it is not deployable.
  const bool frameworks_first =
      options.target == DeployTarget::Any && options.time_limit_s > 0 && world.size == 1;
  std::vector<DeployableBest> searched_first;
  double frameworks_s = 0;
  SearchOptions main_options = MainShare(options, start);
  if (frameworks_first) {
    using Dur = std::chrono::steady_clock::duration;
    const auto t0 = std::chrono::steady_clock::now();
    const auto until =
        t0 + std::chrono::duration_cast<Dur>(0.4 * (options.deadline - std::min(options.deadline, t0)));
    const std::vector<DeployTarget>& all = FrameworkTargets();
    for (size_t k = 0; k < all.size(); ++k) {
      searched_first.push_back(search_target(all[k], static_cast<int>(all.size() - k), until));
    }
    const auto now = std::chrono::steady_clock::now();
    frameworks_s = std::chrono::duration<double>(now - t0).count();
    // The baselines (about eight simulations) follow the recommendation.
    const double sim = options.contexts->SimulationSeconds(*problem);
    main_options = options;
    main_options.deadline =
        options.deadline - std::chrono::duration_cast<Dur>(std::chrono::duration<double>(8 * sim));
    main_options.time_limit_s =
        std::max(1e-3, std::chrono::duration<double>(main_options.deadline - now).count());
  }
  const Result<SearchResult> result = world.size > 1
                                          ? SearchLead(*problem, main_options, world, start)
                                          : Search(*problem, main_options);
  if (tty && reported) err << "\r\x1b[K" << std::flush;
  if (!result.ok()) {
    err << "ppb-sim: search: " << result.error().message << "\n";
    return kExitBadInput;
  }

  SearchReport report;
  report.processes = world.size;
  report.problem = &*problem;
  report.options = &options;
  report.result = &*result;
  report.frameworks_first_s = frameworks_s;
  // A baseline must end one simulation's time before the limit: the
  // report and freeing what was built come after.
  const auto one_simulation = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(result->simulation_s));
  report.baselines = Baselines(*problem, result->found ? result->best.choice : 0,
                               end == std::chrono::steady_clock::time_point::max()
                                   ? end
                                   : end - one_simulation,
                               result->simulation_s, result->first_tries);
  // Target any: each framework's best deployable strategy beside the
  // recommendation (the recommendation itself where it is deployable): the
  // one searched first, else searched now in equal shares of the time left;
  // --emit of a framework not covered there searches its target the same
  // way.
  auto deployable_best = [&](DeployTarget t, int shares) {
    DeployableBest d;
    d.target = t;
    const ScheduleChoice* ch = result->found ? &problem->choices[result->best.choice] : nullptr;
    if (ch != nullptr &&
        Deployable(t, problem->layers, result->best.strategy, problem->p, ch->v,
                   PlacementOf(ch->schedule, ch->v) == StagePlacement::V)) {
      d.searched = true;
      d.is_recommendation = true;
      d.result = *result;
      return d;
    }
    bool found_first = false;
    for (DeployableBest& x : searched_first) {
      if (x.target == t) {
        d = std::move(x);
        found_first = true;
      }
    }
    if (!found_first) d = search_target(t, shares, options.deadline);
    if (ch != nullptr) {
      d.split_refusal =
          SplitRefusal(t, problem->layers, result->best.strategy.layers_per_stage, problem->p,
                       ch->v, PlacementOf(ch->schedule, ch->v) == StagePlacement::V);
    }
    return d;
  };
  if (options.target == DeployTarget::Any) {
    const std::vector<DeployTarget>& all = FrameworkTargets();
    for (size_t k = 0; k < all.size(); ++k) {
      report.deployable.push_back(deployable_best(all[k], static_cast<int>(all.size() - k)));
    }
  }
  // --emit: the recommendation under the schedule, v and g it chose when
  // the framework can deploy it; else the best strategy it can express,
  // named as such.
  if (!emit->frameworks.empty() && !result->found) {
    err << "ppb-sim: --emit: no strategy fits in memory; nothing emitted\n";
  }
  for (Framework f : result->found ? emit->frameworks : std::vector<Framework>{}) {
    const DeployTarget t = TargetOf(f);
    const DeployableBest* d = nullptr;
    for (const DeployableBest& x : report.deployable) d = x.target == t ? &x : d;
    DeployableBest own;
    if (d == nullptr) {
      own = deployable_best(t, 1);
      d = &own;
    }
    if (!d->searched || !d->result.found) {
      err << "ppb-sim: --emit " << FrameworkName(f)
          << ": no strategy it can express fits in memory"
          << (!d->searched                   ? " (not searched: time limit)"
              : d->result.proved_infeasible ? " (proved)"
                                            : " (not proved: stopped at " +
                                                  d->result.stop_reason + ")");
      for (const std::string& x : d->defaults_tried) err << "; tried " << x;
      err << "; nothing emitted\n";
      continue;
    }
    std::optional<Emission> emitted =
        EmitOne(f, CandidateConfig(*config, *problem, d->result.best), err);
    if (!emitted) return kExitBadInput;
    Emission& e = *emitted;
    if (!d->is_recommendation) {
      e.text += fmt::format(
          "# ppb: this is not the recommendation, which {} cannot express: it is the\n"
          "# ppb: best strategy {} can express{}: {:.3f} ms, peak {}, {}\n",
          TargetName(t), TargetName(t),
          d->result.proved_optimal ? " (proved)" : " that the search found",
          ToMs(d->result.best.makespan), FormatBytes(d->result.best.max_peak),
          Fits(d->result.best, problem->headroom));
    }
    emit->emissions.push_back(std::move(e));
  }
  // --uncertainty: the answer and the baselines on drawn machines.
  std::optional<UncertaintySummary> summary;
  if (uncertainty->spread > 0) {
    std::vector<std::string> names;
    std::vector<const Candidate*> rows;
    if (result->found) {
      names.push_back("ppb's answer");
      rows.push_back(&result->best);
    }
    for (const Baseline& b : report.baselines) {
      if (!b.applicable) continue;
      names.push_back(b.name);
      rows.push_back(&b.candidate);
    }
    std::vector<Nanos> nominal;
    for (const Candidate* c : rows) {
      // As the search compares them: only what keeps the memory headroom.
      nominal.push_back(c->feasible ? c->makespan : 0);
    }
    std::vector<std::vector<Nanos>> times;
    const Status drawn = ForEachDrawnConfig(
        vm["config"].as<std::string>(), config->hardware, *uncertainty, *ov,
        [&](const RunConfig& cfg) -> Status {
          Result<SearchProblem> p = BuildSearchProblem(cfg);
          if (!p.ok()) {
            return Error{"--uncertainty", "--uncertainty: a drawn machine does not load: " +
                                              p.error().message};
          }
          std::vector<Nanos> row;
          for (const Candidate* c : rows) {
            Result<Candidate> e = Evaluate(*p, c->choice, c->strategy, c->placement);
            row.push_back(e.ok() && e->feasible ? e->makespan : 0);
          }
          times.push_back(std::move(row));
          return Status{};
        });
    if (!drawn.ok()) {
      err << "ppb-sim: " << drawn.error().message << "\n";
      return kExitBadInput;
    }
    summary = Summarize(*uncertainty, names, nominal, times);
  }
  if (vm["format"].as<std::string>() == "json") {
    out << EmitJson(WithUncertaintyJson(FormatSearchJson(*config, report), summary), *emit);
  } else {
    out << FormatSearchText(*config, report);
    if (summary) out << "\n" << FormatUncertaintyText(*summary);
    out << EmitText(*emit);
  }
  if (!emit->file.empty() && !emit->emissions.empty() &&
      !WriteFile(emit->file, FormatEmissionsText(emit->emissions), err)) {
    return kExitIo;
  }
  return WriteSearchPictures(vm, *config, report, err);
}

}  // namespace ppb::commands
