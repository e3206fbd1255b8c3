// The ppb-sim commands, one file each (apps/commands/<command>.cpp): each
// takes the arguments after the command name, writes its report on `out`
// and its errors on `err`, and returns the exit status: 0 success, 2 bad
// input (config, flags, schedule CSV, candidates or measurements file), 1 an
// output file that cannot be written. apps/cli.cpp picks the command.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ppb::commands {

int RunSimulate(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err);
int RunSearch(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err);
int RunRank(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);
int RunModel(const std::vector<std::string>& args, std::ostream& out,
             std::ostream& err);
int RunCompare(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);
// `ppb-sim sweep --config FILE --grid FILE [--output FILE] [--shard K/N]
// [--threads N] [--format text|json|csv]` and `ppb-sim sweep merge FILE...
// --output FILE` (apps/commands/sweep.cpp, sweep_merge.cpp).
int RunSweep(const std::vector<std::string>& args, std::ostream& out,
             std::ostream& err);
// `ppb-sim calibrate --measurements FILE [--format text|json]
// [--output FILE] [--memory-unit 1MiB] [--time-unit 1ms]`; returns the exit
// status (0 ok, 1 output not writable, 2 bad input or no valid fit).
int RunCalibrate(const std::vector<std::string>& args, std::ostream& out,
                 std::ostream& err);
// `ppb-sim plan --config FILE [--format text|json] [--emit F] [--time-limit T]
// [--top N] [--target T] [--quiet]` (apps/commands/plan.cpp).
int RunPlan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace ppb::commands
