// libFuzzer harness: the Megatron layout string parser (core/strategy.cpp).
// The first four bytes choose p (1..8), v (1..4), the decoders (1..32) and
// the MTP layers (0..2) of a model E, t.., m.., L; the rest is the layout.
// What parses must hold every layer once, and its canonical form
// (FormatMegatronLayout) must parse back to the same split; that form is
// then run as the `strategy.layout` of a config, simulated and reported
// (fuzz_common.h).
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "core/strategy.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

ppb::Layer MakeLayer(const std::string& name, ppb::LayerKind kind) {
  ppb::Layer l;
  l.name = name;
  l.kind = kind;
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const int p = data[0] % 8 + 1;
  const int v = data[1] % 4 + 1;
  const int decoders = data[2] % 32 + 1;
  const int mtp = data[3] % 3;
  const std::string_view layout(reinterpret_cast<const char*>(data) + 4, size - 4);

  std::vector<ppb::Layer> layers{MakeLayer("embedding", ppb::LayerKind::Embedding)};
  for (int i = 0; i < decoders; ++i) {
    layers.push_back(MakeLayer("decoder." + std::to_string(i), ppb::LayerKind::Decoder));
  }
  for (int i = 0; i < mtp; ++i) {
    layers.push_back(MakeLayer("mtp." + std::to_string(i), ppb::LayerKind::Mtp));
  }
  layers.push_back(MakeLayer("head", ppb::LayerKind::Head));

  ppb::Result<int> stages = ppb::MegatronLayoutStages(layout, 100000);
  ppb::Result<std::vector<int>> split = ppb::ParseMegatronLayout(layout, layers, p, v);
  if (!split.ok()) {
    ppb::fuzz::FuzzCheck(!split.error().message.empty(), "an error has a message");
    return 0;
  }
  ppb::fuzz::FuzzCheck(stages.ok() && *stages == p * v,
                       "MegatronLayoutStages agrees with ParseMegatronLayout");
  ppb::fuzz::FuzzCheck(static_cast<int>(split->size()) == p * v, "p*v stages");
  ppb::fuzz::FuzzCheck(
      std::accumulate(split->begin(), split->end(), std::size_t{0}) == layers.size(),
      "every layer once");
  const std::string canonical = ppb::FormatMegatronLayout(*split, layers);
  ppb::Result<std::vector<int>> again = ppb::ParseMegatronLayout(canonical, layers, p, v);
  ppb::fuzz::FuzzCheck(again.ok() && *again == *split,
                       "FormatMegatronLayout parses back to the same split");

  const int m = 2 * p;
  std::string yaml =
      "model:\n  layers:\n"
      "    - {name: embedding, kind: embedding, forward: 1ms, backward: 2ms, "
      "static_memory: 1GiB, activation: 10MiB, output: 1MiB}\n"
      "    - {name: decoder, kind: decoder, repeat: " + std::to_string(decoders) +
      ", forward: 2ms, backward: 4ms, static_memory: 1GiB, activation: 100MiB, output: 1MiB}\n";
  if (mtp > 0) {
    yaml += "    - {name: mtp, kind: mtp, repeat: " + std::to_string(mtp) +
            ", forward: 2ms, backward: 4ms, static_memory: 1GiB, activation: 100MiB, "
            "output: 1MiB}\n";
  }
  yaml +=
      "    - {name: head, kind: head, forward: 1ms, backward: 2ms, static_memory: 1GiB, "
      "activation: 10MiB}\n"
      "cluster: {devices: {memory: 80GiB}, link: {latency: 10us, bandwidth: 50GB/s}}\n"
      "pipeline: {stages: " + std::to_string(p) + ", virtual_stages: " + std::to_string(v) +
      ", microbatches: " + std::to_string(m) + ", schedule: " +
      (v > 1 ? "interleaved" : "1f1b") + "}\n"
      "strategy: {allow_empty_chunks: true, layout: \"" + canonical + "\"}\n";
  ppb::Result<ppb::RunConfig> config = ppb::ParseConfig(yaml, "fuzz.yaml", ppb::CliOverrides{});
  ppb::fuzz::FuzzCheck(config.ok(), "a config with a parsed layout loads");
  ppb::fuzz::SimulateAndReport(*config);
  return 0;
}
