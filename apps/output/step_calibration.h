// The report of `ppb-sim calibrate --runs`: each measured run against the
// step model before and after the fit, the fitted coefficients and the
// hardware block to paste. Pure formatting.
#pragma once

#include <string>

#include "apps/input/step_runs.h"

namespace ppb {

std::string FormatStepFitText(const StepRuns& runs, const StepFit& fit);
// "schema": "ppb.calibrate-step/1"; ends with a newline.
std::string FormatStepFitJson(const StepRuns& runs, const StepFit& fit);
// The hardware: block with the fitted values.
std::string StepFitHardwareYaml(const StepRuns& runs, const StepFit& fit);

}  // namespace ppb
