// libFuzzer harness: --from megatron, --from torchtitan and --from mindformers
// (apps/commands/from_launch.h): each input read as a Megatron-LM launch
// script in the bash subset (or a log with an arguments block), as a
// torchtitan v0.2.2 job config (TOML) and as the function `f` of a
// torchtitan main config registry (Python read as data), and as a
// MindFormers training YAML, into a ppb config
// on an H100 machine, loaded and prepared. Any input either gives a config
// that loads again or is refused with a message that names the file.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "apps/commands/from_launch.h"
#include "apps/input/config.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

// `file` is the file `path` names (a registry's "r.py:f" names r.py).
void Check(const char* framework, const std::string& path, const std::string& file,
           const std::string& text, const ppb::LaunchInputs& in) {
  ppb::Result<ppb::commands::LaunchConfig> r =
      ppb::commands::ReadLaunchConfig(framework, path, text, in);
  if (!r.ok()) {
    ppb::fuzz::FuzzCheck(!r.error().message.empty(), "an error has a message");
    ppb::fuzz::FuzzCheck(
        r.error().message.rfind(file, 0) == 0 || r.error().message.rfind("h100.yaml", 0) == 0,
        "an error names the file");
    return;
  }
  ppb::fuzz::FuzzCheck(r->origins.size() ==
                           static_cast<size_t>(std::count(r->yaml.begin(), r->yaml.end(), '\n')),
                       "an origin a line");
  ppb::Result<ppb::RunConfig> again = ppb::ParseConfig(r->yaml, path, ppb::CliOverrides());
  ppb::fuzz::FuzzCheck(again.ok(), "the config read loads");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ppb::LaunchInputs in;
  in.cluster_path = "h100.yaml";
  in.cluster_text = "hardware:\n  gpu: h100-sxm\n";
  Check("megatron", "f.sh", "f.sh", text, in);
  // A job config does not say the world; torchtitan's default shard
  // degree needs one.
  in.gpus = 8;
  Check("torchtitan", "f.toml", "f.toml", text, in);
  Check("torchtitan", "models/llama3/r.py:f", "models/llama3/r.py", text, in);
  // MindFormers' world is its layout's product.
  in.gpus.reset();
  Check("mindformers", "f.yaml", "f.yaml", text, in);
  return 0;
}
