// libFuzzer harness: calibrate --runs' runs file (apps/input/step_runs.cpp),
// written beside copies of the step fixtures (tests/data/step/*.yaml) so
// that its configs resolve. Any input either loads or is refused with a
// message; what loads is reported as a fit would be (text, JSON, the
// hardware block, whose warnings are YAML comments: issue 48), with the
// start values as the fit's (the fit's simulations, hundreds a runs file,
// are too slow under the sanitizers; tests/test_step_model.cpp and
// test_hardening.cpp check the fit itself).
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "apps/input/step_runs.h"
#include "apps/output/step_calibration.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

// A folder with the fixtures, made once per process.
const std::filesystem::path& Dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                    ("ppb-fuzz-runs-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    for (const auto& e : std::filesystem::directory_iterator(PPB_STEP_DIR)) {
      std::filesystem::copy_file(e.path(), d / e.path().filename(),
                                 std::filesystem::copy_options::overwrite_existing);
    }
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = (Dir() / "fuzz-runs.yaml").string();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data),
                                              static_cast<std::streamsize>(size));
  ppb::Result<ppb::StepRuns> runs = ppb::LoadStepRuns(path);
  if (!runs.ok()) {
    ppb::fuzz::FuzzCheck(!runs.error().message.empty(), "an error has a message");
    return 0;
  }
  ppb::fuzz::FuzzCheck(runs->fit.size() <= runs->distinct, "at most a coefficient a config");
  ppb::StepFit fit;
  fit.gpu = "h100-sxm";
  fit.before.assign(runs->fit.size(), 0.5);
  fit.after = fit.before;
  fit.runs.resize(runs->runs.size());
  fit.warnings = {"a warning"};
  ppb::fuzz::Consume(ppb::FormatStepFitText(*runs, fit));
  ppb::fuzz::CheckJson(ppb::FormatStepFitJson(*runs, fit), "FormatStepFitJson is JSON");
  const YAML::Node block = YAML::Load(ppb::StepFitHardwareYaml(*runs, fit));
  ppb::fuzz::FuzzCheck(block["hardware"].IsMap(), "the hardware block is YAML");
  return 0;
}
