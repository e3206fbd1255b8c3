// The output of `ppb-sim calibrate`: the fit as text or JSON, and the
// layer-cost YAML (a run config `model:` section) of the fitted
// coefficients.
#pragma once

#include <string>

#include "apps/input/measurements.h"
#include "core/calibrate.h"
#include "core/result.h"

namespace ppb {

// The layer-cost YAML (a `model:` section) of a fit. Errors when no time is
// known for the layers.
Result<std::string> FormatCalibratedModel(const Measurements& m,
                                          const CalibrationResult& fit,
                                          const std::string& source);
std::string FormatCalibrationText(const Measurements& m,
                                  const CalibrationResult& fit);
std::string FormatCalibrationJson(const Measurements& m,
                                  const CalibrationResult& fit);

// Why a negative per-stage constant (accepted for SAPP input, as SAPP does)
// is no contradiction, and what to do with it. REQUIRES: fit.constant < 0.
std::string NegativeConstantText(const CalibrationResult& fit);

}  // namespace ppb
