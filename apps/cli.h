// The ppb-sim command line: picks the command from argv (ninja.cc's shape)
// and runs it; each command parses its own flags (apps/commands/). main()
// only forwards argv and the standard streams.
#pragma once

#include <iosfwd>

namespace ppb {

// Commands: simulate (the default), search, rank, compare, model, calibrate
// (apps/commands/). Exit status: 0 success
// (an out-of-memory simulation, or a search or ranking where nothing fits,
// is an answer), 2 bad input (config, CLI, schedule CSV, candidates file),
// 1 an output (a file, or standard output) could not be written.
int RunCli(int argc, const char* const* argv, std::ostream& out,
           std::ostream& err);

}  // namespace ppb
