// ppb-sim plan: the fastest whole-job layout on plan.gpus GPUs
// (apps/commands/plan_run.h), written as a table or JSON (ppb.plan/1), with
// --emit the launch configuration of the best layout each framework can run.
// Progress on stderr when it is a terminal (or --progress), never with
// --quiet. Exit 0 (nothing fitting is an answer), 2 bad input, 1 a file that
// cannot be written.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "apps/commands/commands.h"
#include "apps/commands/common.h"
#include "apps/commands/plan_run.h"
#include "apps/commands/search_mpi.h"
#include "apps/commands/sweep_mpi.h"
#include "apps/input/config_reader.h"
#include "apps/input/json_text.h"
#include "apps/input/search_problem.h"
#include "apps/output/output.h"
#include "apps/output/plan_output.h"
#include "apps/output/report.h"
#include "apps/output/uncertainty_output.h"
#include "core/engine.h"
#include "schedules/schedule.h"
#include "search/deployable.h"

namespace ppb::commands {

namespace {

// Whether framework `f` runs entry `e` as simulated: its schedule (Megatron
// runs 1F1B and interleaved 1F1B only) and its split and recompute
// (search/deployable.h).
bool Runs(Framework f, const PlanEntry& e) {
  const DeployTarget t = TargetOf(f);
  const PlanLayout& l = e.layout;
  if (!TargetRunsSchedule(t, l.schedule)) return false;
  return Deployable(t, e.problem->layers, e.best->strategy, l.p, l.v, PlacementOf(l.schedule, l.v) == StagePlacement::V);
}

std::string ProgressLine(const PlanProgress& p) {
  return fmt::format("plan: {}/{} layouts settled, {} pruned, best {}, gap {:.1f} %, {:.1f} s",
                     p.done, p.total, p.pruned,
                     p.best >= 0 ? fmt::format("{:.1f} ms", ToMs(p.best)) : std::string("-"),
                     100.0 * p.gap, p.elapsed_s);
}

}  // namespace

// Under mpirun: rank 0 settles its share of the layouts on a thread while
// it grants the others theirs (apps/commands/search_mpi.h), then merges
// every part; ranks > 0 settle theirs and send their part.
Result<PlanResult> RunShared(const MpiWorld& world, const std::string& text,
                             const std::string& path, PlanOptions options) {
  const auto start = std::chrono::steady_clock::now();
  if (!world.serialized) options.threads = 1;  // only this thread may ask rank 0
  if (world.rank > 0) {
    options.progress = nullptr;
    MpiSearchWork(world, [&](const SearchShare& share) {
      PlanOptions o = options;
      o.share = &share;
      std::string part;
      o.part = &part;
      Result<PlanResult> r = ppb::RunPlan(text, path, o);
      return r.ok() ? part : std::string("error: ") + r.error().message;
    });
    return PlanResult{};
  }
  std::string own_part;
  Result<PlanResult> own = Error{};
  const std::vector<std::string> texts = MpiSearchLead(world, [&](const SearchShare& share) {
    PlanOptions o = options;
    o.share = &share;
    o.part = &own_part;
    own = ppb::RunPlan(text, path, o);
  });
  if (!own.ok()) return own.error();
  std::vector<std::string> parts{own_part};
  for (const std::string& t : texts) {
    if (t.rfind("error: ", 0) == 0) return Error{"plan", t.substr(7)};
    parts.push_back(t);
  }
  options.progress = nullptr;
  Result<PlanResult> merged = MergePlan(text, path, options, parts);
  if (merged.ok()) {
    // The anytime profile is the lead's own; the time is the whole run's.
    merged->processes = world.size;
    merged->first_answer_s = own->first_answer_s;
    merged->incumbents = own->incumbents;
    merged->solve_time_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return merged;
}

int RunPlan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description opts("plan options");
  // clang-format off
  opts.add_options()
      ("help,h", "this help")
      ("config,c", po::value<std::string>(), "job config with a plan block (YAML); required")
      ("format", po::value<std::string>()->default_value("text"), "output: text | json")
      ("time-limit", po::value<std::string>(),
       "stop after this long: 30s, 500ms or seconds (default plan.time_limit, 60s; 0: none)")
      ("top", po::value<std::string>(), "layouts to report (default plan.top, 10)")
      ("threads", po::value<std::string>(),
       "layouts loaded and searched at once (default search.threads, else every hardware thread)")
      ("node-limit", po::value<std::string>(),
       "branch-and-bound nodes per layout's search (default none)")
      ("target", po::value<std::string>(),
       "only layouts this framework can run: any, megatron, mindformers, torchtitan, deepspeed "
       "(overrides plan.target; default any)")
      ("report", po::value<std::string>(),
       "write an HTML page: the top layouts, step time by (t, p), the best layout's timeline")
      ("quiet", "no progress on stderr")
      ("progress", "report progress on stderr even when it is not a terminal");
  // clang-format on
  AddEmitOptions(opts);
  AddUncertaintyOptions(opts);
  po::variables_map vm;
  if (auto done = ParseArgs("plan", args, opts, vm, out, err)) return *done;
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json") {
    err << "ppb-sim: --format: expected text or json; got '" << format << "'\n";
    return kExitBadInput;
  }
  const std::optional<UncertaintyRequest> uncertainty = UncertaintyFlags(vm, err);
  if (!uncertainty) return kExitBadInput;
  PlanOptions options;
  CliOverrides& ov = options.overrides;
  auto str = [&](const char* name) { return vm[name].as<std::string>(); };
  if (vm.count("time-limit")) {
    auto t = TimeLimitFlag("--time-limit", str("time-limit"));
    if (!Check(t, err)) return kExitBadInput;
    ov.time_limit = *t;
  }
  if (vm.count("top")) {
    auto x = PositiveInt("--top", str("top"));
    if (!Check(x, err)) return kExitBadInput;
    ov.top = *x;
  }
  if (vm.count("threads")) {
    auto x = PositiveInt("--threads", str("threads"));
    if (!Check(x, err)) return kExitBadInput;
    options.threads = *x;
  }
  if (vm.count("node-limit")) {
    auto n = IntFlag<std::int64_t>("--node-limit", str("node-limit"), 1, "a positive integer");
    if (!Check(n, err)) return kExitBadInput;
    options.node_limit = *n;
  }
  if (vm.count("target")) {
    const std::optional<DeployTarget> t = TargetFlag(str("target"), err);
    if (!t) return kExitBadInput;
    ov.target = *t;
  }
  // Under mpirun every rank settles its share of the layouts; rank 0
  // reports (the others' errors stay quiet: rank 0 reports the same).
  const std::optional<MpiWorld> started = StartMpiOrReport(err);
  if (!started) return kExitBadInput;
  const MpiWorld world = *started;
  const MpiStop stop{world};
  std::ostringstream quiet;
  std::ostream& report_err = world.rank > 0 ? quiet : err;
  std::optional<EmitRequest> emit = ReadEmitFlags(vm, report_err);
  if (!emit) return kExitBadInput;
  const std::string path = str("config");
  std::string text;
  // The loader's reader: a directory or an unreadable file is refused as
  // simulate and search refuse it (never an uncaught stream exception).
  if (!config_detail::ReadFile(path, text)) {
    report_err << path << ": must be a readable config file; got " << SystemReason() << "\n";
    return kExitBadInput;
  }
  const bool tty = err.rdbuf() == std::cerr.rdbuf() && isatty(STDERR_FILENO);
  bool reported = false;
  if (!vm.count("quiet") && (tty || vm.count("progress")) && world.rank == 0) {
    options.progress = [&err, &reported, tty](const PlanProgress& p) {
      reported = true;
      if (tty) {
        err << "\r" << ProgressLine(p) << "\x1b[K" << std::flush;
      } else {
        err << ProgressLine(p) << "\n";
      }
    };
  }
  Result<PlanResult> plan = world.size > 1 ? RunShared(world, text, path, options)
                                            : ppb::RunPlan(text, path, options);
  if (tty && reported) err << "\r\x1b[K" << std::flush;
  if (!plan.ok()) {
    report_err << plan.error().message << "\n";
    return kExitBadInput;
  }
  if (world.rank > 0) return kExitOk;
  // --emit: the best layout each framework runs as simulated.
  if (!emit->frameworks.empty() && plan->top.empty()) {
    err << "ppb-sim: --emit: no layout fits in memory; nothing emitted\n";
  }
  for (Framework f : plan->top.empty() ? std::vector<Framework>{} : emit->frameworks) {
    const PlanEntry* e = nullptr;
    for (const PlanEntry& x : plan->top) {
      if (Runs(f, x)) {
        e = &x;
        break;
      }
    }
    if (e == nullptr) {
      err << "ppb-sim: --emit " << FrameworkName(f)
          << ": no layout among the top it can run as simulated; run the plan with target: "
          << TargetName(TargetOf(f)) << "; nothing emitted\n";
      continue;
    }
    std::optional<Emission> emitted = EmitOne(f, EntryConfig(*e), err);
    if (!emitted) return kExitBadInput;
    Emission& em = *emitted;
    if (e != &plan->top.front()) {
      em.text += fmt::format(
          "# ppb: the best layout ({:.3f} ms) is not one {} runs as simulated; this is the best "
          "that is: {:.3f} ms\n",
          ToMs(plan->top.front().best->makespan), FrameworkName(f), ToMs(e->best->makespan));
    }
    emit->emissions.push_back(std::move(em));
  }
  // --uncertainty: the reported layouts on drawn machines.
  std::optional<UncertaintySummary> summary;
  if (uncertainty->spread > 0) {
    Result<UncertaintySummary> s = PlanUncertainty(text, path, *plan, *uncertainty);
    if (!s.ok()) {
      err << "ppb-sim: " << s.error().message << "\n";
      return kExitBadInput;
    }
    summary = std::move(*s);
  }
  if (format == "json") {
    out << EmitJson(WithUncertaintyJson(FormatPlanJson(*plan), summary), *emit);
  } else {
    out << FormatPlanText(*plan);
    if (summary) out << "\n" << FormatUncertaintyText(*summary);
    out << EmitText(*emit);
  }
  if (!emit->file.empty() && !emit->emissions.empty() &&
      !WriteFile(emit->file, FormatEmissionsText(emit->emissions), err)) {
    return kExitIo;
  }
  if (vm.count("report")) {
    // The best layout simulated in full, drawn under the table.
    std::optional<RunConfig> best_config;
    std::optional<PreparedRun> run;
    SimResult sim;
    SimulatedRun shown;
    if (!plan->top.empty()) {
      const PlanEntry& e = plan->top.front();
      best_config = EntryConfig(e);
      if (auto prepared = Prepare(*best_config); prepared.ok()) {
        run = std::move(*prepared);
        SimOptions so;
        so.record_ops = true;
        so.record_memory = true;
        Engine engine;
        sim = engine.Run(run->spec, run->program, so);
        shown = SimulatedRun{&*best_config, &*run, &sim};
      }
    }
    if (!WriteFile(vm["report"].as<std::string>(), FormatPlanReport(*plan, shown), err)) {
      return kExitIo;
    }
  }
  return kExitOk;
}

}  // namespace ppb::commands
