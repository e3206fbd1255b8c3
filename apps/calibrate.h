// `ppb-sim calibrate`: reads measurements (ppb's runs.yaml or SAPP's dry-run
// memory YAML), fits the memory and time coefficients (core/calibrate.h)
// and writes a layer-cost YAML in the run config's `model:` format.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/sapp.h"
#include "core/calibrate.h"
#include "core/result.h"

namespace ppb {

struct Measurements {
  CalibrationProblem problem;
  int decoder_layers = 0;  // decoders of the model (first run's total)
  bool sapp = false;       // read from a SAPP memory YAML
  // Layer times given directly (SAPP time_config or `layer_times`), ns of
  // forward + backward per micro-batch; used when no stage time is measured.
  std::optional<double> body_time, head_time, tail_time;
};

// Reads `text` (errors "file:line: key: message"). `units` applies to a SAPP
// file only (its numbers carry no unit).
Result<Measurements> ParseMeasurements(std::string_view text,
                                       std::string_view filename,
                                       const SappUnits& units);
Result<Measurements> LoadMeasurements(const std::string& path,
                                      const SappUnits& units);

// The layer-cost YAML (a `model:` section) of a fit. Errors when no time is
// known for the layers.
Result<std::string> FormatCalibratedModel(const Measurements& m,
                                          const CalibrationResult& fit,
                                          const std::string& source);
std::string FormatCalibrationText(const Measurements& m,
                                  const CalibrationResult& fit);
std::string FormatCalibrationJson(const Measurements& m,
                                  const CalibrationResult& fit);

// The command: `ppb-sim calibrate --measurements FILE [--format text|json]
// [--output FILE] [--memory-unit 1MiB] [--time-unit 1ms]`; returns the exit
// status (0 ok, 1 output not writable, 2 bad input or no valid fit).
int RunCalibrate(const std::vector<std::string>& args, std::ostream& out,
                 std::ostream& err);

}  // namespace ppb
