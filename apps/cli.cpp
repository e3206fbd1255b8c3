// argv to a command: the first argument names it (simulate when it is a
// flag or absent); the command's file in apps/commands/ does the rest.
// An unknown command is reported with the usage; exit 2.
#include "apps/cli.h"

#include <ostream>
#include <string>
#include <vector>

#include "apps/commands/commands.h"
#include "apps/commands/common.h"

namespace ppb {

int RunCli(int argc, const char* const* argv, std::ostream& out,
           std::ostream& err) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command = "simulate";
  if (!args.empty() && !args[0].empty() && args[0][0] != '-') {
    command = args[0];
    args.erase(args.begin());
  }
  if (command == "simulate") return commands::RunSimulate(args, out, err);
  if (command == "search") return commands::RunSearch(args, out, err);
  if (command == "rank") return commands::RunRank(args, out, err);
  if (command == "model") return commands::RunModel(args, out, err);
  if (command == "compare") return commands::RunCompare(args, out, err);
  if (command == "calibrate") return commands::RunCalibrate(args, out, err);
  err << "ppb-sim: unknown command '" << command
      << "'; expected simulate (the default), search, rank, compare, model "
         "or calibrate\n"
      << commands::kUsage;
  return commands::kExitBadInput;
}

}  // namespace ppb
