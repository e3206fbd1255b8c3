// argv to a command: the first argument names it (simulate when it is a
// flag or absent); the command's file in apps/commands/ does the rest.
// An unknown command is reported with the usage; exit 2. Standard output is
// flushed and checked at the end: a failed write is exit 1.
#include "apps/cli.h"

#include <cerrno>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "apps/commands/commands.h"
#include "apps/commands/common.h"
#include "apps/commands/from_launch.h"

namespace ppb {

namespace {

int RunCommand(int argc, const char* const* argv, std::ostream& out,
               std::ostream& err) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command = "simulate";
  if (!args.empty() && !args[0].empty() && args[0][0] != '-') {
    command = args[0];
    args.erase(args.begin());
  }
  // --from FRAMEWORK FILE: the run given as its framework's launch.
  std::unique_ptr<ScopedConfigText> from;
  if (command == "simulate" || command == "search" || command == "model" ||
      command == "plan") {
    if (std::optional<int> status = commands::TakeFrom(args, from, out, err)) return *status;
  }
  if (command == "simulate") return commands::RunSimulate(args, out, err);
  if (command == "search") return commands::RunSearch(args, out, err);
  if (command == "rank") return commands::RunRank(args, out, err);
  if (command == "model") return commands::RunModel(args, out, err);
  if (command == "compare") return commands::RunCompare(args, out, err);
  if (command == "calibrate") return commands::RunCalibrate(args, out, err);
  if (command == "sweep") return commands::RunSweep(args, out, err);
  if (command == "plan") return commands::RunPlan(args, out, err);
  err << "ppb-sim: unknown command '" << command
      << "'; expected simulate (the default), search, rank, compare, model, "
         "calibrate, sweep or plan\n"
      << commands::Usage();
  return commands::kExitBadInput;
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out,
           std::ostream& err) {
  errno = 0;
  const int status = RunCommand(argc, argv, out, err);
  // Standard output on a full device fails only when flushed: checked here,
  // after the command, so a report that did not arrive is not a success.
  out.flush();
  if (!out) {
    err << "ppb-sim: cannot write standard output: "
        << commands::SystemReason() << "\n";
    return commands::kExitIo;
  }
  return status;
}

}  // namespace ppb
