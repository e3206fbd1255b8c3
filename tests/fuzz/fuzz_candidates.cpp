// libFuzzer harness: the candidates file of `ppb-sim rank`
// (apps/input/candidates.cpp) under configs/example.yaml (32 decoders,
// p = 4, m = 16). What loads is evaluated and ranked as `ppb-sim rank` does
// (text and JSON), and the best candidate is simulated and reported
// as a run of its own (fuzz_common.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "apps/input/candidates.h"
#include "apps/input/search_problem.h"
#include "apps/output/search_output.h"
#include "search/search.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

const ppb::RunConfig& BaseConfig() {
  static const ppb::RunConfig config = [] {
    ppb::Result<ppb::RunConfig> c =
        ppb::LoadConfig(PPB_CONFIGS_DIR "/example.yaml", ppb::CliOverrides{});
    ppb::fuzz::FuzzCheck(c.ok(), "configs/example.yaml loads");
    return *c;
  }();
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ppb::RunConfig& base = BaseConfig();
  ppb::Result<std::vector<ppb::RankCandidate>> candidates =
      ppb::ParseCandidates(text, "candidates.yaml", base);
  if (!candidates.ok()) {
    ppb::fuzz::FuzzCheck(!candidates.error().message.empty(), "an error has a message");
    return 0;
  }
  if (candidates->size() > 16) return 0;
  // Up to v = 4 (p * v * m = 256 ops of each kind) is evaluated.
  for (const ppb::RankCandidate& c : *candidates) {
    if (c.v > 4) return 0;
  }
  const ppb::RankProblem rank = ppb::BuildRankProblem(base, *candidates);
  std::vector<ppb::RankedCandidate> ranked;
  for (std::size_t i = 0; i < candidates->size(); ++i) {
    ppb::Result<ppb::Candidate> eval =
        ppb::Evaluate(rank.problem, rank.choice_of[i], (*candidates)[i].strategy);
    if (!eval.ok()) return 0;  // `ppb-sim rank` exits 2 with the message
    ranked.push_back({(*candidates)[i].name, std::move(*eval)});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const ppb::RankedCandidate& a, const ppb::RankedCandidate& b) {
                     return ppb::Better(a.candidate, b.candidate);
                   });
  ppb::fuzz::Consume(ppb::FormatRankText(base, rank.problem, ranked));
  ppb::fuzz::CheckJson(ppb::FormatRankJson(base, rank.problem, ranked), "FormatRankJson is JSON");
  for (std::size_t i = 0; i < ranked.size() && i < 1; ++i) {
    ppb::fuzz::SimulateAndReport(
        ppb::CandidateConfig(base, rank.problem, ranked[i].candidate));
  }
  return 0;
}
