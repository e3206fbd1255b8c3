#include <iostream>

#include "apps/cli.h"

int main(int argc, char** argv) {
  return ppb::RunCli(argc, argv, std::cout, std::cerr);
}
