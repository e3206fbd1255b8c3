// libFuzzer harness: the run config YAML (apps/input/config*.cpp). Any
// input either loads or is refused with "file:line: key: ..."; what loads is
// simulated (small shapes) and reported in every format (fuzz_common.h).
// The file is read as if it lay in configs/, so the shipped configs' files
// (hf/, sapp/, custom-p2.csv) resolve as they do for users.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ppb::Result<ppb::RunConfig> config =
      ppb::ParseConfig(text, PPB_CONFIGS_DIR "/fuzz.yaml", ppb::CliOverrides{});
  if (!config.ok()) {
    ppb::fuzz::FuzzCheck(!config.error().message.empty(), "an error has a message");
    return 0;
  }
  ppb::fuzz::SimulateAndReport(*config);
  return 0;
}
