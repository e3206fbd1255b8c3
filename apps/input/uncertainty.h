// Ranking with its uncertainty (`--uncertainty SPREAD` on compare and
// rank; issue 45): the step model's coefficients are guesses (core/gpu.h),
// so each is drawn, independently per sample, uniformly within +-SPREAD of
// its value (the config's or the preset's; 10 % by default, or the rms
// error `calibrate --runs` reports after a fit), and every candidate is
// simulated on the same drawn machine. From the samples: each candidate's
// band of step time (p10, median, p90), the share of samples in which it is
// the fastest (ties share the sample), the robust choice (the most often
// fastest; ties: the lower p90, then the nominal order) and the pairs whose
// order flips in at least a tenth of the samples (printed by
// apps/output/uncertainty_output.h).
//
// Deterministic: a SplitMix64 stream from the seed (printed), the draws in
// coefficient order per sample. Efficiencies stay at most 1 and host times
// at least 0; a coefficient at 0 (no layer overhead) stays 0.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "apps/input/config.h"
#include "apps/input/step_runs.h"
#include "core/architecture.h"
#include "core/result.h"
#include "core/types.h"

namespace ppb {

struct UncertaintyRequest {
  double spread = 0;        // 0: off
  int samples = 32;
  std::uint64_t seed = 1;
};

// "10%", "0.1": a share in (0, 0.5]. `flag` names the option in errors.
Result<double> ParseSpread(std::string_view text, std::string_view flag);

// One drawn machine: a multiplier per coefficient (AllStepCoefficients'
// order).
struct DrawnMachine {
  std::vector<double> factor;
};
std::vector<DrawnMachine> DrawMachines(const UncertaintyRequest& request);

// Writes the drawn values (base value x factor, clamped) into a config
// document's hardware block. `base` is the loaded config's hardware.
void ApplyMachine(YAML::Node& root, const Hardware& base, const DrawnMachine& machine);

// Loads the config file `path` once per drawn machine (its hardware block
// drawn from `base`, `overrides` applied) and calls `each` on it, in draw
// order; the first error (a drawn config that does not load, or `each`'s)
// ends it, its message starting "--uncertainty: ".
Status ForEachDrawnConfig(const std::string& path, const Hardware& base,
                          const UncertaintyRequest& request, const CliOverrides& overrides,
                          const std::function<Status(const RunConfig&)>& each);

struct UncertainRow {
  std::string name;
  Nanos nominal = 0;        // 0: refused or out of memory (never fastest)
  bool ranked = true;       // false: no time to compare
  Nanos p10 = 0, p50 = 0, p90 = 0;
  double p_fastest = 0;
};
struct FlipPair {
  size_t faster = 0, slower = 0;  // nominal order: faster first
  double share = 0;               // samples where slower beats faster
};
struct UncertaintySummary {
  UncertaintyRequest request;
  std::vector<UncertainRow> rows;
  size_t nominal_best = 0, robust = 0;
  std::vector<FlipPair> flips;  // most frequent first
};

// `times[k][i]`: candidate i's time on machine k (0: did not run or did
// not fit). `nominal[i]` the same on the config's own machine.
UncertaintySummary Summarize(const UncertaintyRequest& request,
                             const std::vector<std::string>& names,
                             const std::vector<Nanos>& nominal,
                             const std::vector<std::vector<Nanos>>& times);

}  // namespace ppb
