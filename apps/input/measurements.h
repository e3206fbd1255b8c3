// Measurements for `ppb-sim calibrate`: ppb's runs.yaml (per-stage memory
// and time of measured runs) or SAPP's dry-run memory YAML, read into a
// CalibrationProblem (core/calibrate.h). Errors read
// "file:line: key: message"; the command exits 2 on them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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
  // SAPP input: how its time_config numbers were read (apps/input/sapp.h
  // SappTime), for the report.
  std::string time_note;
};

// Reads `text` (errors "file:line: key: message"). `units` applies to a SAPP
// file only (its numbers carry no unit).
Result<Measurements> ParseMeasurements(std::string_view text,
                                       std::string_view filename,
                                       const SappUnits& units);
Result<Measurements> LoadMeasurements(const std::string& path,
                                      const SappUnits& units);

}  // namespace ppb
