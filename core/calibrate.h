// Calibration: fits per-layer memory and time coefficients to measured
// per-stage peak memory (and optionally per-stage time) of a few runs with
// known layouts, by linear least squares. No I/O: apps/calibrate.cpp reads
// the measurements and writes the layer costs.
//
// Memory model of one stage s of a run with p stages (1F1B, v = 1):
//   mem(s) = C + [s = 0]·F + [s = p-1]·T + S·n(s) + Σ_mode A_mode·n_mode(s)·k(s)
// n(s): decoder layers on s; n_mode(s): those recomputing with `mode` (index
// 0 = no recompute); k(s): micro-batches in flight on s. For 1F1B k(s) =
// min(m, p - s) (formulas.md §2: forwards before the first backward); SAPP
// uses p - s (mindformers toolkit/pipeline_balance utils/stage.py,
// get_index_memory_var: diff = nb_stage - id). F and T hold everything the
// first / last stage has besides decoders (embedding, head, loss, their
// activations). C is the per-stage constant (workspace, framework).
// Time model: time(s) = t·n(s) + [s = 0]·t_F + [s = p-1]·t_T, time(s) being
// the stage's forward + backward per micro-batch without recompute.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace ppb {

// One measured stage of one run.
struct StageMeasurement {
  std::string label;  // for reports, e.g. "runs[1] stage 3"
  int stage = 0;      // 0-based
  int stages = 1;     // p of its run
  int layers = 0;     // decoder layers on the stage
  std::vector<int> per_mode;  // layers per mode (size = modes), sums to layers
  int inflight = 1;           // micro-batches in flight, k(s) above
  std::optional<double> memory;  // measured peak, bytes
  std::optional<double> time;    // measured F+B per micro-batch, ns
};

struct CalibrationProblem {
  std::vector<std::string> modes;  // modes[0] = "none"
  std::vector<StageMeasurement> stages;
  bool fit_constant = true;  // fit C (else C = 0)
  // Accept a negative C (SAPP's ComputeMemory does, and plans with it);
  // otherwise a negative C is a non-physical fit like the others.
  bool allow_negative_constant = false;
};

// The least-squares solution of A x = b.
struct LeastSquares {
  std::vector<double> x;
  std::vector<double> residuals;  // b - A x, one per row
  double condition = 0;  // 2-norm condition number of A with unit columns
};

// Solves min |A x - b| by Householder QR on the column-scaled A (rows of
// `a` are equations). Fails when a column lies in the span of the columns
// before it; the error's key is that column's index (as a string).
Result<LeastSquares> SolveLeastSquares(const std::vector<std::vector<double>>& a,
                                       const std::vector<double>& b);

struct CalibrationResult {
  // Memory, bytes. activation[i] is per layer and micro-batch for modes[i];
  // modes no measurement uses are absent from `fitted_modes`.
  double static_per_layer = 0, constant = 0, first_extra = 0, last_extra = 0;
  std::vector<double> activation;   // by mode index (0 when not fitted)
  std::vector<bool> fitted_modes;   // by mode index
  std::vector<double> memory_residuals;  // by stage with memory (bytes)
  std::vector<int> memory_rows;          // index into problem.stages
  double memory_condition = 0;
  // Time, ns (only when some stage has a time).
  bool has_time = false;
  double layer_time = 0, first_time = 0, last_time = 0;
  std::vector<double> time_residuals;
  std::vector<int> time_rows;
  double time_condition = 0;
};

// Fits the model above. Errors (key "calibrate"): no memory measurement,
// an under-determined system (the message names the coefficient that is not
// determined and the extra run that would determine it), a negative memory
// or time coefficient, or a recompute mode keeping more than no recompute.
Result<CalibrationResult> Calibrate(const CalibrationProblem& problem);

}  // namespace ppb
