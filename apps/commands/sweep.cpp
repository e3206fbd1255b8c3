// ppb-sim sweep: runs every point of a grid (apps/input/grid.h) over a base
// config — simulate, search or compare per point — on --threads workers,
// or on the ranks of mpirun (apps/commands/sweep_mpi.h), or a --shard K/N
// slice of it. With --output the rows are appended to a JSON-lines file as
// each point finishes and a rerun skips the points already there (keyed by
// the point's values, run and the base config's hash); the summary (best
// point per group) is printed at the end in --format text|json|csv.
// Without --output the rows go to standard output, in point order: JSON
// lines (json, the default), CSV, or a text table and the summary.
// Progress (done / total, rate, ETA) on stderr. `ppb-sim sweep merge` is
// apps/commands/sweep_merge.cpp. Exit 0, 2 bad input, 1 a file that cannot
// be written. docs/sweep.md is the user's guide.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "apps/commands/commands.h"
#include "apps/commands/common.h"
#include "apps/commands/sweep_mpi.h"
#include "apps/commands/sweep_point.h"
#include "apps/commands/sweep_results.h"
#include "apps/input/grid_plan.h"
#include "apps/output/sweep_output_summary.h"
#include "search/parallel_for.h"

namespace ppb::commands {

namespace {

using Clock = std::chrono::steady_clock;

// "K/N" with 1 <= K <= N.
Result<std::pair<int, int>> ParseShard(const std::string& text) {
  const size_t slash = text.find('/');
  const Error bad{"--shard", "expected K/N with 1 <= K <= N (e.g. 2/8); got '" + text + "'"};
  if (slash == std::string::npos) return bad;
  auto k = IntFlag<int>("--shard", text.substr(0, slash), 1, "K/N");
  auto n = IntFlag<int>("--shard", text.substr(slash + 1), 1, "K/N");
  if (!k.ok() || !n.ok() || *k > *n) return bad;
  return std::pair{*k, *n};
}

// Progress on stderr: a line rewritten on a terminal, else a line at most
// every few seconds and one at the end.
class Progress {
 public:
  Progress(std::ostream& err, std::int64_t total, std::int64_t skipped, std::int64_t todo)
      : err_(err),
        total_(total),
        skipped_(skipped),
        todo_(todo),
        start_(Clock::now()),
        last_(start_) {
    tty_ = err.rdbuf() == std::cerr.rdbuf() && isatty(STDERR_FILENO);
  }
  void Done() {
    ++done_;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::seconds(tty_ ? 1 : 5) && done_ < todo_) return;
    last_ = now;
    Print(done_ == todo_);
  }
  void Finish() {
    if (done_ == todo_ && todo_ > 0 && last_ != start_) {
      if (tty_) err_ << "\n";
      return;
    }
    Print(true);
    if (tty_) err_ << "\n";
  }

 private:
  void Print(bool final) {
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    const double rate = s > 0 ? static_cast<double>(done_) / s : 0;
    std::string line = fmt::format("sweep: {}/{} points done ({} from the results file)",
                                   skipped_ + done_, total_, skipped_);
    line += fmt::format(", {:.1f} points/s", rate);
    if (!final && rate > 0) {
      line += fmt::format(", ETA {:.0f}s", static_cast<double>(todo_ - done_) / rate);
    } else {
      line += fmt::format(", {:.1f}s", s);
    }
    err_ << (tty_ ? "\r" : "") << line << (tty_ ? "\x1b[K" : "\n") << std::flush;
  }
  std::ostream& err_;
  std::int64_t total_, skipped_, todo_, done_ = 0;
  Clock::time_point start_, last_;
  bool tty_ = false;
};

std::string ReadText(const std::string& path, const char* what, std::ostream& err, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  ok = static_cast<bool>(in);
  if (!ok) {
    err << path << ": must be a readable " << what << "; got " << std::strerror(errno) << "\n";
  }
  return text.str();
}

}  // namespace

int RunSweepMerge(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

int RunSweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (!args.empty() && args[0] == "merge") {
    return RunSweepMerge(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
  }
  po::options_description opts("sweep options");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("config,c", po::value<std::string>(), "base run config (YAML); required")
      ("grid,g", po::value<std::string>(), "grid file (YAML, docs/sweep.md): keys to vary, "
       "their values, what each point runs; required")
      ("output,o", po::value<std::string>(),
       "JSON-lines results file: appended as points finish, resumed from "
       "(default: the rows on standard output)")
      ("format", po::value<std::string>(),
       "with --output: the summary, text (default) | json | csv; without: "
       "the rows, json (default) | csv | text")
      ("threads", po::value<std::string>(), "points run at once (default: every hardware thread)")
      ("shard", po::value<std::string>(),
       "K/N: run only points i with i mod N = K-1 (job arrays; merge with 'sweep merge')");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "ppb-sim: " << e.what() << "\n" << Usage();
    return kExitBadInput;
  }
  if (vm.count("help")) {
    out << CommandHelp("sweep") << opts;
    return kExitOk;
  }
  for (const char* required : {"config", "grid"}) {
    if (!vm.count(required)) {
      err << "ppb-sim: --" << required << ": required; "
          << (std::string(required) == "config" ? "give the base run config (YAML)"
                                                : "give the grid file (YAML)")
          << "\n"
          << Usage();
      return kExitBadInput;
    }
  }
  const bool to_file = vm.count("output") > 0;
  const std::string format =
      vm.count("format") ? vm["format"].as<std::string>() : (to_file ? "text" : "json");
  if (format != "text" && format != "json" && format != "csv") {
    err << "ppb-sim: --format: expected text, json or csv; got '" << format << "'\n";
    return kExitBadInput;
  }
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (vm.count("threads")) {
    auto t = PositiveInt("--threads", vm["threads"].as<std::string>());
    if (!Check(t, err)) return kExitBadInput;
    threads = *t;
  }
  std::pair<int, int> shard{1, 1};
  if (vm.count("shard")) {
    auto s = ParseShard(vm["shard"].as<std::string>());
    if (!Check(s, err)) return kExitBadInput;
    shard = *s;
  }

  const std::optional<MpiWorld> started = StartMpiOrReport(err);
  if (!started) return kExitBadInput;
  const MpiWorld world = *started;
  const MpiStop stop{world};
  // Ranks other than 0 report nothing: rank 0 reports the same errors.
  std::ostringstream quiet;
  std::ostream& rerr = world.rank == 0 ? err : quiet;

  // The plan: config, grid, points of this shard.
  bool ok = true;
  const std::string config_path = vm["config"].as<std::string>();
  const std::string config_text = ReadText(config_path, "config file", rerr, ok);
  std::optional<SweepPlan> plan;
  if (ok) {
    Result<Grid> grid = LoadGrid(vm["grid"].as<std::string>());
    Result<SweepPlan> planned = grid.ok() ? PlanSweep(std::move(*grid), config_text, config_path)
                                          : Result<SweepPlan>(grid.error());
    if (!planned.ok()) {
      rerr << (planned.error().key.rfind("--", 0) == 0 ? "ppb-sim: " : "")
           << planned.error().message << "\n";
      ok = false;
    } else {
      plan = std::move(*planned);
    }
  }
  if (world.rank > 0) {
    // A worker rank: evaluate what rank 0 hands out. When its plan failed,
    // rank 0's failed the same way (the same files) and hands out nothing;
    // if rank 0 hands out a point all the same, the files differ between
    // ranks: stop them all.
    MpiWork([&](std::int64_t i) {
      if (!ok) MpiAbort(kExitBadInput);
      return SweepLine(EvaluatePoint(*plan, PointAt(*plan, i)));
    });
    return ok ? kExitOk : kExitBadInput;
  }
  std::vector<std::int64_t> todo;
  std::vector<SweepRow> rows;  // the rows of this shard's points: from the file and new
  std::int64_t shard_points = 0;
  std::optional<ResultsWriter> writer;
  int status = kExitOk;
  if (ok) {
    const std::int64_t total = plan->grid.points();
    std::map<std::string, std::int64_t> wanted;  // key -> point
    for (std::int64_t i = shard.first - 1; i < total; i += shard.second) {
      SweepRow key_row;
      const SweepPoint p = PointAt(*plan, i);
      key_row.config_hash = plan->config_hash;
      key_row.run = SweepRunName(plan->grid.runs[static_cast<size_t>(p.run)]);
      key_row.settings = plan->settings[static_cast<size_t>(p.run)];
      for (size_t k = 0; k < plan->axes.size(); ++k) {
        key_row.values.emplace_back(plan->axes[k].axis.given.key, p.values[k]);
      }
      wanted.emplace(SweepKey(key_row), i);
      ++shard_points;
    }
    std::set<std::int64_t> have;
    if (to_file) {
      const std::string path = vm["output"].as<std::string>();
      Result<ResultsFile> file = ReadResults(path);
      if (!file.ok()) {
        err << "ppb-sim: " << file.error().message << "\n";
        ok = false;
        status = kExitBadInput;
      } else {
        if (!file->trailing.empty()) {
          err << "sweep: " << path << ":" << file->trailing_line << ": the last line is not a "
              << "complete row (" << file->trailing << "; a run killed while writing it?): "
              << "removed, its point is redone\n";
          if (Status s = TruncateResults(path, file->good_bytes); !s.ok()) {
            err << "ppb-sim: " << s.error().message << "\n";
            ok = false;
            status = kExitIo;
          }
        }
        std::int64_t other = 0;
        for (SweepRow& r : file->rows) {
          auto it = wanted.find(SweepKey(r));
          if (it == wanted.end() || have.count(it->second)) {
            ++other;
            continue;
          }
          have.insert(it->second);
          r.point = it->second;  // the grid's numbering now
          r.points = total;
          rows.push_back(std::move(r));
        }
        if (other > 0) {
          err << "sweep: " << path << ": " << other
              << " row(s) of other points (another grid, config, run setting or shard, or "
                 "repeated) kept in the file and left out of this summary\n";
        }
        if (ok) {
          writer.emplace();
          if (Status s = writer->Open(path); !s.ok()) {
            err << "ppb-sim: " << s.error().message << "\n";
            ok = false;
            status = kExitIo;
          }
        }
      }
    }
    if (ok) {
      for (const auto& [key, i] : wanted) {
        if (!have.count(i)) todo.push_back(i);
      }
      std::sort(todo.begin(), todo.end());
    }
  } else {
    status = kExitBadInput;
  }

  const SweepTableInfo info{
      plan ? [&] {
        std::vector<std::string> axes;
        for (const PlanAxis& a : plan->axes) axes.push_back(a.axis.given.key);
        return axes;
      }()
           : std::vector<std::string>{},
      plan ? plan->grid.group_by : std::vector<std::string>{}, shard_points};

  // Each finished row: to the file (at once) or to stdout in point order.
  std::mutex mu;
  Progress progress(err, shard_points, static_cast<std::int64_t>(rows.size()),
                    static_cast<std::int64_t>(todo.size()));
  std::map<std::int64_t, SweepRow> pending;  // stdout: rows waiting for earlier points
  size_t next_out = 0;                       // index into todo of the next row to print
  bool write_failed = false;
  if (!to_file && ok) {
    if (format == "csv") out << SweepCsvHeader(info);
    if (format == "text") out << SweepTextHeader(info);
  }
  auto finished = [&](SweepRow row) {
    std::lock_guard<std::mutex> lock(mu);
    const std::string line = SweepLine(row);
    if (writer && !write_failed) {
      if (Status s = writer->Append(line); !s.ok()) {
        err << "ppb-sim: " << s.error().message << "\n";
        write_failed = true;
      }
    }
    if (!to_file) {
      pending.emplace(row.point, row);
      while (next_out < todo.size() && pending.count(todo[next_out])) {
        const SweepRow& r = pending.at(todo[next_out]);
        out << (format == "json"  ? SweepLine(r)
                : format == "csv" ? SweepCsvRow(r)
                                  : SweepTextRow(r));
        out.flush();
        pending.erase(todo[next_out]);
        ++next_out;
      }
    }
    rows.push_back(std::move(row));
    progress.Done();
  };

  if (world.size > 1) {
    MpiCoordinate(world, ok ? todo : std::vector<std::int64_t>{}, [&](const std::string& line) {
      std::string body = line;
      if (!body.empty() && body.back() == '\n') body.pop_back();
      Result<SweepRow> row = ParseSweepLine(body);
      if (row.ok()) finished(std::move(*row));
    });
  } else if (ok) {
    ForEachOnThreads(todo.size(), threads, [&](size_t k) {
      finished(EvaluatePoint(*plan, PointAt(*plan, todo[k])));
    });
  }
  if (!ok) return status;
  progress.Finish();
  if (write_failed) return kExitIo;
  if (to_file) {
    out << (format == "json"  ? FormatSweepSummaryJson(rows, info)
            : format == "csv" ? FormatSweepSummaryCsv(rows, info)
                              : FormatSweepSummaryText(rows, info));
  } else if (format == "text") {
    out << "\n" << FormatSweepSummaryText(rows, info);
  }
  return kExitOk;
}

}  // namespace ppb::commands
