// The calibrate command's output (apps/output/calibration.h).
#include "apps/output/calibration.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "apps/input/sapp.h"
#include "apps/input/json_text.h"

namespace ppb {
namespace {

std::string MiB(double b) { return fmt::format("{:.3f} MiB", b / 1048576.0); }
std::string Ms(double ns) { return fmt::format("{:.4f} ms", ns / 1e6); }

double ExtraTimeCoef(const std::string& mode) {
  for (const SappMode& m : SappModes()) {
    if (mode == m.name) return m.default_coef;
  }
  return 0;
}

}  // namespace

std::string NegativeConstantText(const CalibrationResult& fit) {
  return fmt::format(
      "per-stage constant {} is negative; accepted as SAPP does (its "
      "ComputeMemory plans with it). It is not memory a stage frees: the "
      "linear fit gives each layer more than its marginal cost over the "
      "layer counts measured, and the constant takes the surplus back once "
      "per stage. Use it only with these per-layer terms: the layer costs "
      "below leave it out, so give each device {} more memory "
      "(cluster.devices.memory + |C|) to plan as SAPP does",
      MiB(fit.constant), MiB(-fit.constant));
}

Result<std::string> FormatCalibratedModel(const Measurements& m,
                                          const CalibrationResult& fit,
                                          const std::string& source) {
  double body = 0, head = 0, tail = 0;
  if (fit.has_time) {
    body = fit.layer_time;
    head = fit.first_time;
    tail = fit.last_time;
  } else if (m.body_time) {
    body = *m.body_time;
    head = m.head_time.value_or(0);
    tail = m.tail_time.value_or(0);
  } else {
    return Error{"calibrate",
                 "no layer time is known: measure per-stage `time` in some run "
                 "or give layer_times: {decoder: ..} (SAPP: time_config)"};
  }
  // time = F + B per micro-batch; F = time / 3, B = 2 F. Every layer needs
  // F, B > 0: a zero fit becomes 1 ns.
  auto fwd = [](double t) { return std::max<long long>(1, std::llround(t / 3)); };
  auto bwd = [](double t) {
    return std::max<long long>(1, std::llround(t) - std::llround(t / 3));
  };
  auto bytes = [](double b) { return std::max<long long>(0, std::llround(b)); };
  std::string y;
  y += "# Layer costs fitted by `ppb-sim calibrate` from " + source + ".\n";
  y += "# Times: forward = 1/3 and backward = 2/3 of the fitted F+B.\n";
  if (fit.constant > 0.5) {
    y += fmt::format(
        "# Per-stage constant {} B ({}): not a layer cost; subtract it from "
        "cluster.devices.memory.\n",
        bytes(fit.constant), MiB(fit.constant));
  } else if (fit.constant < -0.5) {
    y += fmt::format(
        "# Per-stage constant {} B ({}), negative: the fitted layer costs "
        "overstate each stage by that much; add {} B to "
        "cluster.devices.memory to plan as SAPP does.\n",
        std::llround(fit.constant), MiB(fit.constant),
        std::llround(-fit.constant));
  }
  y += "model:\n  name: calibrated\n  layers:\n";
  y += fmt::format(
      "    - {{name: embedding, kind: embedding, forward: {}ns, backward: {}ns, "
      "static_memory: {}B}}\n",
      fwd(head), bwd(head), bytes(fit.first_extra));
  const long long b = bwd(body);
  y += fmt::format(
      "    - name: decoder\n      kind: decoder\n      repeat: {}\n"
      "      forward: {}ns\n      backward: {}ns\n      static_memory: {}B\n"
      "      activation: {}B\n",
      m.decoder_layers, fwd(body), b, bytes(fit.static_per_layer),
      bytes(fit.activation[0]));
  bool any = false;
  for (size_t i = 1; i < m.problem.modes.size(); ++i) {
    if (!fit.fitted_modes[i]) continue;
    if (!any) y += "      recompute:\n";
    any = true;
    y += fmt::format("        {}: {{activation: {}B, time: {}ns}}\n",
                     m.problem.modes[i], bytes(fit.activation[i]),
                     std::llround(ExtraTimeCoef(m.problem.modes[i]) * b));
  }
  y += fmt::format(
      "    - {{name: head, kind: head, forward: {}ns, backward: {}ns, "
      "static_memory: {}B}}\n",
      fwd(tail), bwd(tail), bytes(fit.last_extra));
  return y;
}

std::string FormatCalibrationText(const Measurements& m,
                                  const CalibrationResult& fit) {
  std::string t;
  t += fmt::format("calibration ({} input, {} memory measurements{})\n",
                   m.sapp ? "SAPP" : "ppb", fit.memory_rows.size(),
                   fit.has_time ? fmt::format(", {} time measurements", fit.time_rows.size()) : "");
  if (!m.time_note.empty()) t += m.time_note + "\n";
  t += "memory coefficients:\n";
  t += fmt::format("  static per layer           {}\n", MiB(fit.static_per_layer));
  for (size_t i = 0; i < m.problem.modes.size(); ++i) {
    t += fmt::format("  activation ({:<16}) {}\n", m.problem.modes[i],
                     fit.fitted_modes[i] ? MiB(fit.activation[i])
                                         : std::string("not fitted (no run uses it)"));
  }
  t += fmt::format("  per-stage constant         {}{}\n", MiB(fit.constant),
                   m.problem.fit_constant ? "" : " (not fitted)");
  if (fit.constant < -0.5) t += "  warning: " + NegativeConstantText(fit) + "\n";
  t += fmt::format("  first stage extra          {}\n", MiB(fit.first_extra));
  t += fmt::format("  last stage extra           {}\n", MiB(fit.last_extra));
  t += fmt::format("  condition number           {:.4g}\n", fit.memory_condition);
  t += "memory residuals (measured - fitted):\n";
  for (size_t i = 0; i < fit.memory_rows.size(); ++i) {
    const StageMeasurement& s = m.problem.stages[fit.memory_rows[i]];
    t += fmt::format("  {:<24} {:>14}  residual {}\n", s.label, MiB(*s.memory),
                     MiB(fit.memory_residuals[i]));
  }
  if (fit.has_time) {
    t += "time coefficients (forward + backward per micro-batch):\n";
    t += fmt::format("  per layer                  {}\n", Ms(fit.layer_time));
    t += fmt::format("  first stage extra          {}\n", Ms(fit.first_time));
    t += fmt::format("  last stage extra           {}\n", Ms(fit.last_time));
    t += fmt::format("  condition number           {:.4g}\n", fit.time_condition);
    t += "time residuals (measured - fitted):\n";
    for (size_t i = 0; i < fit.time_rows.size(); ++i) {
      const StageMeasurement& s = m.problem.stages[fit.time_rows[i]];
      t += fmt::format("  {:<24} {:>14}  residual {}\n", s.label, Ms(*s.time),
                       Ms(fit.time_residuals[i]));
    }
  }
  return t;
}

std::string FormatCalibrationJson(const Measurements& m,
                                  const CalibrationResult& fit) {
  nlohmann::ordered_json j;
  j["schema"] = "ppb.calibrate/1";
  j["input"] = m.sapp ? "sapp" : "ppb";
  if (!m.time_note.empty()) j["time_note"] = m.time_note;
  nlohmann::ordered_json mem;
  mem["static_per_layer_bytes"] = fit.static_per_layer;
  nlohmann::ordered_json act = nlohmann::ordered_json::object();
  for (size_t i = 0; i < m.problem.modes.size(); ++i) {
    if (fit.fitted_modes[i]) act[m.problem.modes[i]] = fit.activation[i];
  }
  mem["activation_bytes"] = act;
  mem["constant_bytes"] = fit.constant;
  mem["constant_fitted"] = m.problem.fit_constant;
  if (fit.constant < -0.5) mem["constant_warning"] = NegativeConstantText(fit);
  mem["first_extra_bytes"] = fit.first_extra;
  mem["last_extra_bytes"] = fit.last_extra;
  mem["condition"] = fit.memory_condition;
  nlohmann::ordered_json res = nlohmann::ordered_json::array();
  for (size_t i = 0; i < fit.memory_rows.size(); ++i) {
    const StageMeasurement& s = m.problem.stages[fit.memory_rows[i]];
    res.push_back({{"label", s.label}, {"stage", s.stage},
                   {"measured_bytes", *s.memory},
                   {"residual_bytes", fit.memory_residuals[i]}});
  }
  mem["residuals"] = res;
  j["memory"] = mem;
  if (fit.has_time) {
    nlohmann::ordered_json t;
    t["layer_ns"] = fit.layer_time;
    t["first_extra_ns"] = fit.first_time;
    t["last_extra_ns"] = fit.last_time;
    t["condition"] = fit.time_condition;
    nlohmann::ordered_json tr = nlohmann::ordered_json::array();
    for (size_t i = 0; i < fit.time_rows.size(); ++i) {
      const StageMeasurement& s = m.problem.stages[fit.time_rows[i]];
      tr.push_back({{"label", s.label}, {"stage", s.stage},
                    {"measured_ns", *s.time},
                    {"residual_ns", fit.time_residuals[i]}});
    }
    t["residuals"] = tr;
    j["time"] = t;
  }
  return JsonText(j, 2) + "\n";
}

}  // namespace ppb
