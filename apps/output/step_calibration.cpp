#include "apps/output/step_calibration.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/input/json_text.h"

namespace ppb {
namespace {

using Json = nlohmann::ordered_json;

double Ms(Nanos t) { return static_cast<double>(t) / 1e6; }
double Err(Nanos predicted, Nanos measured) {
  return 100.0 * (static_cast<double>(predicted) - static_cast<double>(measured)) /
         static_cast<double>(measured);
}
std::string Value(StepCoefficient c, double v) {
  if (IsDuration(c)) return fmt::format("{:.1f}us", v / 1e3);
  return IsBandwidth(c) ? fmt::format("{:.3f}GB/s", v / 1e9) : fmt::format("{:.4f}", v);
}

}  // namespace

std::string StepFitHardwareYaml(const StepRuns& /*runs*/, const StepFit& fit) {
  std::string s;
  for (const std::string& w : fit.warnings) s += "# WARNING: " + w + "\n";
  s += "hardware:\n";
  s += fmt::format("  gpu: {}\n", fit.gpu);
  for (size_t k = 0; k < fit.fit.size(); ++k) {
    const StepCoefficient c = fit.fit[k];
    if (c == StepCoefficient::IntraNodeBandwidth) {
      s += fmt::format("  intra_node: {{bandwidth: {}}}\n", Value(c, fit.after[k]));
    } else if (c == StepCoefficient::InterNodeBandwidth) {
      s += fmt::format("  inter_node: {{bandwidth: {}}}\n", Value(c, fit.after[k]));
    } else {
      s += fmt::format("  {}: {}\n", StepCoefficientName(c), Value(c, fit.after[k]));
    }
  }
  if (fit.fragmentation_after >= 0) {
    s += fmt::format("  memory_fragmentation: {:.4f}\n", fit.fragmentation_after);
  }
  return s;
}

std::string FormatStepFitText(const StepRuns& runs, const StepFit& fit) {
  std::string names;
  for (StepCoefficient c : fit.fit) names += (names.empty() ? "" : ", ") + std::string(StepCoefficientName(c));
  std::string s = fmt::format(
      "ppb-sim calibrate: {} measured run(s) on {}; fitting {} (least squares on "
      "the log of each run's time ratio; {} simulations)\n\n",
      runs.runs.size(), fit.gpu, names, fit.simulations);
  const bool loo = fit.loo_runs > 0;
  s += fmt::format("  {:<32} {:>13} {:>13} {:>8} {:>13} {:>8}{}  {}\n", "run", "measured ms",
                   "before ms", "error", "after ms", "error",
                   loo ? fmt::format(" {:>13} {:>8}", "left out ms", "error") : std::string(),
                   "peak memory");
  for (size_t i = 0; i < runs.runs.size(); ++i) {
    const StepRun& run = runs.runs[i];
    const StepRunResult& r = fit.runs[i];
    std::string peak = fmt::format("{:.2f} GiB{}", static_cast<double>(r.peak_after) / (1 << 30),
                                   r.fits_after ? "" : " (does not fit)");
    if (run.peak_memory) {
      peak = fmt::format("measured {:.2f} GiB, model {}",
                         static_cast<double>(*run.peak_memory) / (1 << 30), peak);
    }
    std::string left;
    if (loo) {
      left = fit.loo[i] > 0 ? fmt::format(" {:>13.3f} {:>+7.1f}%", Ms(fit.loo[i]),
                                          Err(fit.loo[i], run.measured))
                            : fmt::format(" {:>13} {:>8}", "-", "-");
    }
    s += fmt::format("  {:<32} {:>13.3f} {:>13.3f} {:>+7.1f}% {:>13.3f} {:>+7.1f}%{}  {}\n",
                     run.config, Ms(run.measured), Ms(r.before), Err(r.before, run.measured),
                     Ms(r.after), Err(r.after, run.measured), left, peak);
  }
  s += fmt::format("\n  rms error {:.2f} % before, {:.2f} % after", 100 * fit.rms_before,
                   100 * fit.rms_after);
  s += loo ? fmt::format(", {:.2f} % left out (each run predicted by the fit to the others)\n",
                         100 * fit.rms_loo)
           : std::string(", no leave-one-out (fewer other runs than coefficients)\n");
  s += "  fitted:";
  for (size_t k = 0; k < fit.fit.size(); ++k) {
    s += fmt::format("{} {} {} (was {})", k ? "," : "", StepCoefficientName(fit.fit[k]),
                     Value(fit.fit[k], fit.after[k]), Value(fit.fit[k], fit.before[k]));
  }
  if (fit.fragmentation_after >= 0) {
    s += fmt::format("\n  memory_fragmentation {:.4f} (was {:.4f}) from {} measured peak(s)",
                     fit.fragmentation_after, fit.fragmentation_before, fit.peak_runs);
  }
  if (!fit.memory_note.empty()) s += "\n  " + fit.memory_note;
  for (const std::string& w : fit.warnings) s += "\n  WARNING: " + w;
  s += fit.warnings.empty()
           ? "\n\npaste into each run config (it replaces the preset's guesses):\n"
           : "\n\nonly after checking the warnings above, paste into each run config:\n";
  s += StepFitHardwareYaml(runs, fit);
  return s;
}

std::string FormatStepFitJson(const StepRuns& runs, const StepFit& fit) {
  Json j;
  j["schema"] = "ppb.calibrate-step/1";
  j["runs_file"] = runs.path;
  j["gpu"] = fit.gpu;
  j["simulations"] = fit.simulations;
  Json coeffs = Json::object();
  for (size_t k = 0; k < fit.fit.size(); ++k) {
    coeffs[StepCoefficientName(fit.fit[k])] = {{"before", fit.before[k]}, {"after", fit.after[k]}};
  }
  j["coefficients"] = coeffs;
  Json rs = Json::array();
  for (size_t i = 0; i < runs.runs.size(); ++i) {
    const StepRun& run = runs.runs[i];
    const StepRunResult& r = fit.runs[i];
    Json rj = {{"config", run.config},
               {"measured_ns", run.measured},
               {"before_ns", r.before},
               {"after_ns", r.after},
               {"error_before", (static_cast<double>(r.before) - run.measured) / run.measured},
               {"error_after", (static_cast<double>(r.after) - run.measured) / run.measured},
               {"peak_memory_bytes", r.peak_after},
               {"fits", r.fits_after}};
    if (run.peak_memory) rj["measured_peak_memory_bytes"] = *run.peak_memory;
    if (fit.loo_runs > 0 && fit.loo[i] > 0) {
      rj["left_out_ns"] = fit.loo[i];
      rj["error_left_out"] = (static_cast<double>(fit.loo[i]) - run.measured) / run.measured;
    }
    rs.push_back(rj);
  }
  j["runs"] = rs;
  j["rms_error_before"] = fit.rms_before;
  j["rms_error_after"] = fit.rms_after;
  if (fit.loo_runs > 0) j["rms_error_left_out"] = fit.rms_loo;
  if (fit.fragmentation_after >= 0) {
    j["memory_fragmentation"] = {{"before", fit.fragmentation_before},
                                 {"after", fit.fragmentation_after},
                                 {"measured_peaks", fit.peak_runs}};
  }
  if (!fit.memory_note.empty()) j["memory_note"] = fit.memory_note;
  j["distinct_configs"] = runs.distinct;
  j["warnings"] = fit.warnings;
  j["hardware_yaml"] = StepFitHardwareYaml(runs, fit);
  return JsonText(j, 2) + "\n";
}

}  // namespace ppb
