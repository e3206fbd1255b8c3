// The uncertainty section of compare's and rank's reports
// (apps/input/uncertainty.h): text and the JSON "uncertainty" object.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/input/uncertainty.h"

namespace ppb {

std::string FormatUncertaintyText(const UncertaintySummary& s);
nlohmann::ordered_json UncertaintyJson(const UncertaintySummary& s);
// A report's JSON text (2-space indent, a final newline) with the
// "uncertainty" object added when `s` is given; else `json` unchanged.
std::string WithUncertaintyJson(const std::string& json,
                                const std::optional<UncertaintySummary>& s);

}  // namespace ppb
