// The ppb-sim command line. All argument parsing lives here (ninja.cc's
// shape); main() only forwards argv and the standard streams.
#pragma once

#include <iosfwd>

namespace ppb {

// Exit status: 0 success, 2 bad input (config, CLI, schedule CSV), 1 an
// output file could not be written.
int RunCli(int argc, const char* const* argv, std::ostream& out,
           std::ostream& err);

}  // namespace ppb
