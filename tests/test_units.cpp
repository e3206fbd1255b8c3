// Unit strings (apps/units.h): durations, sizes and bandwidths parsed to
// exact integers, and errors that state what was expected and given.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "apps/input/units.h"

namespace ppb {
namespace {


// ---- units -----------------------------------------------------------------

TEST_CASE("units: exact values", "[config][units]") {
  CHECK(*ParseBytes("1.5GiB") == 1610612736);
  CHECK(*ParseBandwidth("200GB/s") == 200000000000);
  CHECK(*ParseDuration("850us") == 850000);
  CHECK(*ParseBandwidth("25Gbit/s") == 3125000000);
  CHECK(*ParseDuration("3.2ms") == 3200000);
  CHECK(*ParseDuration("0.2ms") == 200000);
  CHECK(*ParseDuration("1s") == 1000000000);
  CHECK(*ParseDuration("7ns") == 7);
  CHECK(*ParseDuration("850 us") == 850000);
  CHECK(*ParseDuration(" 1.5 s ") == 1500000000);
  CHECK(*ParseDuration("850\xC2\xB5s") == 850000);  // µs
  CHECK(*ParseDuration("1e3us") == 1000000);
  CHECK(*ParseDuration("2.5E-3s") == 2500000);
  CHECK(*ParseDuration(".5ms") == 500000);
  CHECK(*ParseDuration("0.5ns") == 1);  // halves round up
  CHECK(*ParseDuration("0.4999ns") == 0);
  CHECK(*ParseDuration("0ms") == 0);
  CHECK(*ParseBytes("0B") == 0);
  CHECK(*ParseBytes("80GiB") == 85899345920);
  CHECK(*ParseBytes("64MiB") == 67108864);
  CHECK(*ParseBytes("1TB") == 1000000000000);
  CHECK(*ParseBytes("1KiB") == 1024);
  CHECK(*ParseBytes("0.1KB") == 100);
  CHECK(*ParseBytes("1.000000000000000000001GiB") == 1073741824);
}

TEST_CASE("units: more bandwidths and limits", "[config][units]") {
  CHECK(*ParseBandwidth("50GB/s") == 50000000000);
  CHECK(*ParseBandwidth("1GiB/s") == 1073741824);
  CHECK(*ParseBandwidth("100Gbit/s") == 12500000000);
  CHECK(*ParseBandwidth("1Kbit/s") == 125);
  CHECK(*ParseBandwidth("1B/s") == 1);
  CHECK(*ParseDuration("9223372036854775807ns") == 9223372036854775807);
  CHECK(*ParseDuration("9223372036.854775807s") == 9223372036854775807);
}

TEST_CASE("units: errors state expected and given", "[config][units]") {
  auto message = [](Result<std::int64_t> r) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().key.empty());
    return r.error().message;
  };
  CHECK(message(ParseDuration("3.2")) ==
        "must be a duration with a unit (ns, us, ms, s); got 3.2 (no unit)");
  CHECK(message(ParseDuration("3min")) ==
        "must be a duration with a unit (ns, us, ms, s); got 3min (unknown "
        "unit \"min\")");
  CHECK(message(ParseDuration("-3ms")) ==
        "must be a non-negative duration; got -3ms");
  CHECK(message(ParseDuration("9223372036854775808ns")) ==
        "must be at most 9223372036854775807 ns; got 9223372036854775808ns");
  CHECK(message(ParseDuration("1e30s")) ==
        "must be at most 9223372036854775807 ns; got 1e30s");
  CHECK(message(ParseDuration("fast")) ==
        "must be a duration with a unit (ns, us, ms, s); got fast");
  CHECK(message(ParseDuration("")) ==
        "must be a duration with a unit (ns, us, ms, s); got an empty string");
  CHECK(message(ParseBytes("3mb")) ==
        "must be a size with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB); "
        "got 3mb (unknown unit \"mb\")");
  CHECK(message(ParseBytes("24")).find("got 24 (no unit)") !=
        std::string::npos);
  CHECK(message(ParseBandwidth("25Gb/s")).find("(unknown unit \"Gb/s\")") !=
        std::string::npos);
  CHECK(message(ParseBandwidth("50GB")).find("(unknown unit \"GB\")") !=
        std::string::npos);
  CHECK(message(ParseBytes("1.2.3GB")).find("(unknown unit \".3GB\")") !=
        std::string::npos);
}

}  // namespace
}  // namespace ppb
