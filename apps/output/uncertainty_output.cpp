#include "apps/output/uncertainty_output.h"

#include <fmt/format.h>

#include <algorithm>

#include "apps/input/json_text.h"

namespace ppb {
namespace {

double Ms(Nanos t) { return static_cast<double>(t) / 1e6; }

std::string Coefficients() {
  std::string s;
  for (StepCoefficient c : AllStepCoefficients()) {
    s += (s.empty() ? "" : ", ") + std::string(StepCoefficientName(c));
  }
  return s;
}

}  // namespace

std::string FormatUncertaintyText(const UncertaintySummary& s) {
  const UncertaintyRequest& q = s.request;
  std::string out = fmt::format(
      "uncertainty: {} machines drawn (seed {}), each coefficient uniform within +-{:g} % of "
      "its value ({}; efficiencies at most 1, a coefficient at 0 stays 0)\n",
      q.samples, q.seed, 100 * q.spread, Coefficients());
  size_t width = 9;
  for (const UncertainRow& r : s.rows) width = std::max(width, r.name.size());
  out += fmt::format("  {:<{}} {:>12} {:>12} {:>12} {:>12} {:>10}\n", "candidate", width,
                     "nominal ms", "p10 ms", "median ms", "p90 ms", "P(fastest)");
  for (const UncertainRow& r : s.rows) {
    if (!r.ranked) {
      out += fmt::format("  {:<{}} {:>12}\n", r.name, width, "-");
      continue;
    }
    out += fmt::format("  {:<{}} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>9.1f}%\n", r.name,
                       width, Ms(r.nominal), Ms(r.p10), Ms(r.p50), Ms(r.p90),
                       100 * r.p_fastest);
  }
  const bool any = std::any_of(s.rows.begin(), s.rows.end(),
                               [](const UncertainRow& r) { return r.ranked; });
  if (!any) return out + "  no candidate ran: nothing to rank\n";
  const UncertainRow& best = s.rows[s.nominal_best];
  const UncertainRow& robust = s.rows[s.robust];
  if (s.robust == s.nominal_best) {
    out += fmt::format("  robust choice: {}, the nominal best (fastest on {:.1f} % of the machines)\n",
                       best.name, 100 * best.p_fastest);
  } else {
    out += fmt::format(
        "  robust choice: {} (fastest on {:.1f} % of the machines), not the nominal best {} "
        "({:.1f} %)\n",
        robust.name, 100 * robust.p_fastest, best.name, 100 * best.p_fastest);
  }
  if (s.flips.empty()) {
    out += "  no pair's order flips on a tenth of the machines or more\n";
  } else {
    out += "  orders that flip (nominal: the first is faster):\n";
    for (const FlipPair& f : s.flips) {
      out += fmt::format("    {} before {}: reversed on {:.1f} % of the machines\n",
                         s.rows[f.faster].name, s.rows[f.slower].name, 100 * f.share);
    }
  }
  return out;
}

nlohmann::ordered_json UncertaintyJson(const UncertaintySummary& s) {
  nlohmann::ordered_json j;
  j["samples"] = s.request.samples;
  j["seed"] = s.request.seed;
  j["spread"] = s.request.spread;
  nlohmann::ordered_json names = nlohmann::ordered_json::array();
  for (StepCoefficient c : AllStepCoefficients()) names.push_back(StepCoefficientName(c));
  j["coefficients"] = names;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const UncertainRow& r : s.rows) {
    nlohmann::ordered_json x;
    x["name"] = r.name;
    x["ranked"] = r.ranked;
    if (r.ranked) {
      x["nominal_ns"] = r.nominal;
      x["p10_ns"] = r.p10;
      x["median_ns"] = r.p50;
      x["p90_ns"] = r.p90;
      x["p_fastest"] = r.p_fastest;
    }
    rows.push_back(x);
  }
  j["candidates"] = rows;
  const bool any = std::any_of(s.rows.begin(), s.rows.end(),
                               [](const UncertainRow& r) { return r.ranked; });
  j["nominal_best"] = any ? nlohmann::ordered_json(s.rows[s.nominal_best].name) : nullptr;
  j["robust_choice"] = any ? nlohmann::ordered_json(s.rows[s.robust].name) : nullptr;
  nlohmann::ordered_json flips = nlohmann::ordered_json::array();
  for (const FlipPair& f : s.flips) {
    flips.push_back({{"faster", s.rows[f.faster].name},
                     {"slower", s.rows[f.slower].name},
                     {"reversed_share", f.share}});
  }
  j["flips"] = flips;
  return j;
}

std::string WithUncertaintyJson(const std::string& json,
                                const std::optional<UncertaintySummary>& s) {
  if (!s) return json;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(json);
  j["uncertainty"] = UncertaintyJson(*s);
  return JsonText(j, 2) + "\n";
}

}  // namespace ppb
