#include "apps/input/uncertainty.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

namespace ppb {
namespace {

// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): the same stream on every platform.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t Next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1): the top 53 bits.
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
};

// The q-quantile of sorted `v` (nearest rank, q in [0, 1]).
Nanos Quantile(const std::vector<Nanos>& v, double q) {
  if (v.empty()) return 0;
  const auto n = static_cast<double>(v.size());
  const auto i = static_cast<size_t>(std::clamp(std::ceil(q * n) - 1, 0.0, n - 1));
  return v[i];
}

}  // namespace

Result<double> ParseSpread(std::string_view text, std::string_view flag) {
  std::string_view t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.remove_suffix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc() && end == t.data() + t.size() && !t.empty()) {
    if (percent) v /= 100;
    if (v > 0 && v <= 0.5) return v;
  }
  return Error{std::string(flag),
               fmt::format("{}: expected the coefficients' spread, a share in (0, 0.5] like "
                           "10% or 0.1; got '{}'",
                           flag, text)};
}

std::vector<DrawnMachine> DrawMachines(const UncertaintyRequest& request) {
  SplitMix64 rng{request.seed};
  const size_t n = AllStepCoefficients().size();
  std::vector<DrawnMachine> out(static_cast<size_t>(request.samples));
  for (DrawnMachine& m : out) {
    m.factor.resize(n);
    for (double& f : m.factor) f = 1 + request.spread * (2 * rng.Unit() - 1);
  }
  return out;
}

void ApplyMachine(YAML::Node& root, const Hardware& base, const DrawnMachine& machine) {
  const std::vector<StepCoefficient> all = AllStepCoefficients();
  for (size_t k = 0; k < all.size(); ++k) {
    const StepCoefficient c = all[k];
    const double v = StepCoefficientValue(c, base);
    if (v <= 0) continue;  // absent (no FP4 peak share, no layer overhead)
    double drawn = v * machine.factor[k];
    if (!IsBandwidth(c) && !IsDuration(c)) drawn = std::min(1.0, drawn);
    ApplyStepCoefficient(root, c, drawn);
  }
}

Status ForEachDrawnConfig(const std::string& path, const Hardware& base,
                          const UncertaintyRequest& request, const CliOverrides& overrides,
                          const std::function<Status(const RunConfig&)>& each) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Error{"--uncertainty", "--uncertainty: " + path + ": " + e.what()};
  }
  for (const DrawnMachine& m : DrawMachines(request)) {
    YAML::Node drawn = YAML::Clone(doc);
    ApplyMachine(drawn, base, m);
    Result<RunConfig> cfg = ParseConfigYaml(drawn, path, overrides);
    if (!cfg.ok()) {
      return Error{"--uncertainty",
                   "--uncertainty: a drawn machine does not load: " + cfg.error().message};
    }
    if (Status s = each(*cfg); !s.ok()) return s;
  }
  return Status{};
}

UncertaintySummary Summarize(const UncertaintyRequest& request,
                             const std::vector<std::string>& names,
                             const std::vector<Nanos>& nominal,
                             const std::vector<std::vector<Nanos>>& times) {
  UncertaintySummary s;
  s.request = request;
  const size_t n = names.size();
  s.rows.resize(n);
  std::vector<double> wins(n, 0);
  std::vector<std::vector<Nanos>> per(n);
  for (const std::vector<Nanos>& sample : times) {
    Nanos best = 0;
    for (size_t i = 0; i < n; ++i) {
      if (sample[i] > 0 && (best == 0 || sample[i] < best)) best = sample[i];
    }
    size_t tied = 0;
    for (size_t i = 0; i < n; ++i) tied += best > 0 && sample[i] == best;
    for (size_t i = 0; i < n; ++i) {
      if (sample[i] > 0) per[i].push_back(sample[i]);
      if (best > 0 && sample[i] == best) wins[i] += 1.0 / static_cast<double>(tied);
    }
  }
  const auto samples = static_cast<double>(std::max<size_t>(1, times.size()));
  for (size_t i = 0; i < n; ++i) {
    UncertainRow& r = s.rows[i];
    r.name = names[i];
    r.nominal = nominal[i];
    r.ranked = nominal[i] > 0 && !per[i].empty();
    std::sort(per[i].begin(), per[i].end());
    r.p10 = Quantile(per[i], 0.1);
    r.p50 = Quantile(per[i], 0.5);
    r.p90 = Quantile(per[i], 0.9);
    r.p_fastest = wins[i] / samples;
  }
  // The nominal best and the robust choice among the ranked rows.
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    if (!s.rows[i].ranked) continue;
    if (!any || s.rows[i].nominal < s.rows[s.nominal_best].nominal) s.nominal_best = i;
    if (!any) s.robust = i;
    const UncertainRow& a = s.rows[i];
    const UncertainRow& b = s.rows[s.robust];
    if (a.p_fastest > b.p_fastest + 1e-12 ||
        (std::abs(a.p_fastest - b.p_fastest) <= 1e-12 &&
         (a.p90 < b.p90 || (a.p90 == b.p90 && a.nominal < b.nominal)))) {
      s.robust = i;
    }
    any = true;
  }
  // Pairs whose order flips in at least a tenth of the samples.
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i == j || !s.rows[i].ranked || !s.rows[j].ranked) continue;
      const bool first = s.rows[i].nominal < s.rows[j].nominal ||
                         (s.rows[i].nominal == s.rows[j].nominal && i < j);
      if (!first) continue;
      int flipped = 0, both = 0;
      for (const std::vector<Nanos>& sample : times) {
        if (sample[i] <= 0 || sample[j] <= 0) continue;
        ++both;
        flipped += sample[j] < sample[i];
      }
      const double share = both > 0 ? flipped / static_cast<double>(both) : 0;
      if (share >= 0.1) s.flips.push_back({i, j, share});
    }
  }
  std::stable_sort(s.flips.begin(), s.flips.end(),
                   [](const FlipPair& a, const FlipPair& b) { return a.share > b.share; });
  return s;
}

}  // namespace ppb
