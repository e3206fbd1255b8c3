// ppb-sim: forwards argv and the standard streams to RunCli (apps/cli.h),
// then checks that standard output reached its file (exit 1 if not).
#include <cerrno>
#include <cstdio>
#include <iostream>

#include "apps/cli.h"
#include "apps/commands/common.h"

int main(int argc, char** argv) {
  const int status = ppb::RunCli(argc, argv, std::cout, std::cerr);
  // RunCli flushed std::cout (and reported a failure); stdio's own buffer
  // (std::cout writes through it) is checked here.
  errno = 0;
  if (std::cout && (std::fflush(stdout) != 0 || std::ferror(stdout))) {
    std::cerr << "ppb-sim: cannot write standard output: "
              << ppb::commands::SystemReason() << "\n";
    return ppb::commands::kExitIo;
  }
  return status;
}
