// Measured steps of the user's own job, for `ppb-sim calibrate --runs`
// (issue 33): each a run config with the step model (hardware.gpu) and its
// measured iteration time (optionally its largest per-rank peak memory),
// and the coefficients to fit. The fit: least squares on the log of each
// run's time ratio, one coefficient at a time by golden-section search
// within its bounds, sweeping until a sweep changes nothing; deterministic. Errors read
// "file:line: key: message"; the command exits 2 on them.
//
//   runs:
//     - config: tp4-pp8.yaml       # relative to this file
//       iteration_time: 21.3s
//       peak_memory: 61GiB         # optional: reported beside the model's
//     - log: run.log               # or a Megatron-LM training log: its
//       cluster: h100.yaml         # arguments block is the run (with this
//       warmup: 2                  # hardware: block); its iteration lines
//                                  # after `warmup` give the time (median)
//   fit: [matmul_efficiency, collective_efficiency]   # optional
//
// FP8 and FP4 runs fit their own GEMM share (fp8_matmul_efficiency,
// fp4_matmul_efficiency): a BF16 run and an FP8 run of the same job
// separate the two.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/architecture.h"
#include "core/result.h"
#include "core/types.h"

namespace ppb {

// A coefficient calibrate may fit: a hardware key of the step model.
enum class StepCoefficient {
  MatmulEfficiency,     // hardware.matmul_efficiency
  AttentionEfficiency,  // hardware.attention_efficiency
  HbmEfficiency,        // hardware.hbm_efficiency
  CollectiveEfficiency, // hardware.collective_efficiency
  IntraNodeBandwidth,   // hardware.intra_node.bandwidth
  InterNodeBandwidth,   // hardware.inter_node.bandwidth
  Fp8MatmulEfficiency,  // hardware.fp8_matmul_efficiency (low-precision GEMMs)
  Fp4MatmulEfficiency,  // hardware.fp4_matmul_efficiency
  LaunchOverhead,       // hardware.launch_overhead (ns)
  LayerOverhead,        // hardware.layer_overhead (ns)
  MicrobatchOverhead,   // hardware.microbatch_overhead (ns)
};
const char* StepCoefficientName(StepCoefficient c);
// A link bandwidth (fitted in log space, printed in GB/s) rather than a share.
bool IsBandwidth(StepCoefficient c);
// A host time in ns (fitted linearly from 0 up to DurationCeiling).
bool IsDuration(StepCoefficient c);
double DurationCeiling(StepCoefficient c);
// Every coefficient, in the order above.
std::vector<StepCoefficient> AllStepCoefficients();
// Its value in a loaded config (bandwidths in B/s, host times in ns).
double StepCoefficientValue(StepCoefficient c, const Hardware& h);
// Writes `value` as the coefficient's key into a config document's
// hardware block (which must exist).
void ApplyStepCoefficient(YAML::Node& root, StepCoefficient c, double value);

struct StepRun {
  std::string config;  // as written
  std::string path;    // resolved against the runs file
  int line = 0;        // of its config key in the runs file (0: unknown)
  YAML::Node document; // the config, loaded
  Nanos measured = 0;
  std::optional<Bytes> peak_memory;
  // A run given as a Megatron-LM log (`log: FILE`, with `cluster: FILE`
  // and optionally `gpus: N`, `warmup: N`): `measured` is the median of
  // its logged iterations after the warm-up; `document` is left for the
  // command to fill from the log's arguments (apps/commands/from_launch.h).
  bool from_log = false;
  std::string log_cluster;  // resolved against the runs file
  std::optional<int> log_gpus;
  int log_iterations = 0;   // iterations the median is over
  // peak_memory is the allocator's max reserved (a log's memory report
  // without the device's total): the fit adds the process's fixed bytes.
  bool peak_reserved = false;
};

struct StepRuns {
  std::string path;
  std::vector<StepRun> runs;
  std::vector<StepCoefficient> fit;  // default: matmul, collective,
                                     // inter-node bandwidth, at most as
                                     // many as distinct configs
  // Distinct configs among the runs (one config measured twice is one
  // measurement of the fit's unknowns): at least as many as coefficients.
  size_t distinct = 0;
  bool fit_given = false;  // the file's `fit:` (else the defaults above)
  // Refit without each run in turn to predict it (StepFit::loo): one more
  // fit per run. A caller that wants the fit alone (a test) turns it off.
  bool leave_one_out = true;
};

Result<StepRuns> LoadStepRuns(const std::string& path);

struct StepRunResult {
  Nanos before = 0, after = 0;  // predicted with the config's and the fit's
  Bytes peak_before = 0, peak_after = 0;
  bool fits_after = true;
};
struct StepFit {
  // The coefficients fitted: StepRuns::fit, less (for the default list) those
  // no run's time depends on or that the runs cannot tell apart from an
  // earlier one (a named `fit:` list with such a coefficient is refused).
  std::vector<StepCoefficient> fit;
  std::vector<double> before, after;  // per `fit`, in its order
  std::vector<StepRunResult> runs;
  double rms_before = 0, rms_after = 0;  // of the relative time errors
  // Leave-one-out: each run predicted by the coefficients fitted to the
  // others (0 when fewer other runs than coefficients), and its rms.
  std::vector<Nanos> loo;
  double rms_loo = 0;
  int loo_runs = 0;  // runs with a leave-one-out prediction
  // hardware.memory_fragmentation fitted to the measured peaks (the
  // process: tensors / (1 - f) + NCCL, context and workspaces), when runs
  // give peaks and the share lands in [0, 0.5]; -1 otherwise.
  double fragmentation_before = 0, fragmentation_after = -1;
  int peak_runs = 0;
  std::string memory_note;  // why the fragmentation was not fitted
  std::string gpu;                       // every run's preset
  std::int64_t simulations = 0;
  // A coefficient that ended at a bound of its search, or runs the fit
  // cannot explain (rms error above 10 %): the hardware block is offered
  // with these warnings only.
  std::vector<std::string> warnings;
};

// Fits StepRuns::fit to the measured times, then each run again without it
// (leave-one-out), and the allocator's fragmentation to measured peaks.
// Errors (exit 2) when a run's config does not load, has no hardware.gpu,
// runs on another GPU preset than the first run (fit each machine on its
// own), or does not run; and when a named coefficient cannot be determined
// by the runs (no run's time moves with it, or it moves every run's time
// as the ones before it do: the runs' sensitivities, d log T / d log c,
// are linearly dependent), naming it.
Result<StepFit> FitStepRuns(const StepRuns& runs);

}  // namespace ppb
