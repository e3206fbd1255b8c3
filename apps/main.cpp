// ppb-sim: forwards argv and the standard streams to RunCli (apps/cli.h).
#include <iostream>

#include "apps/cli.h"

int main(int argc, char** argv) {
  return ppb::RunCli(argc, argv, std::cout, std::cerr);
}
