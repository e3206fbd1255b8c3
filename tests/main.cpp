// The Catch2 main: the only place the runner is compiled.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
