// The uncertainty section of compare's and rank's reports
// (apps/input/uncertainty.h): text and the JSON "uncertainty" object.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "apps/input/uncertainty.h"

namespace ppb {

std::string FormatUncertaintyText(const UncertaintySummary& s);
nlohmann::ordered_json UncertaintyJson(const UncertaintySummary& s);

}  // namespace ppb
