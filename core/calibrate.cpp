#include "core/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

namespace ppb {
namespace {

// A column whose part orthogonal to the columns before it is below this
// fraction of its norm is taken as dependent on them.
constexpr double kRankTolerance = 1e-9;

// Eigenvalues of the symmetric matrix m (cyclic Jacobi rotations; k <= ~10).
std::vector<double> SymmetricEigenvalues(std::vector<std::vector<double>> m) {
  const size_t k = m.size();
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (size_t i = 0; i < k; ++i)
      for (size_t j = i + 1; j < k; ++j) off += m[i][j] * m[i][j];
    if (off < 1e-30) break;
    for (size_t p = 0; p < k; ++p) {
      for (size_t q = p + 1; q < k; ++q) {
        if (std::abs(m[p][q]) < 1e-300) continue;
        const double theta = (m[q][q] - m[p][p]) / (2 * m[p][q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) /
                         (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (size_t r = 0; r < k; ++r) {  // m = m J
          const double mp = m[r][p], mq = m[r][q];
          m[r][p] = c * mp - s * mq;
          m[r][q] = s * mp + c * mq;
        }
        for (size_t r = 0; r < k; ++r) {  // m = J^T m
          const double mp = m[p][r], mq = m[q][r];
          m[p][r] = c * mp - s * mq;
          m[q][r] = s * mp + c * mq;
        }
      }
    }
  }
  std::vector<double> ev(k);
  for (size_t i = 0; i < k; ++i) ev[i] = m[i][i];
  return ev;
}

std::string Num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string Mib(double bytes) { return Num(bytes / 1048576.0) + " MiB"; }

}  // namespace

Result<LeastSquares> SolveLeastSquares(
    const std::vector<std::vector<double>>& a, const std::vector<double>& b) {
  const size_t n = a.size();
  const size_t k = n == 0 ? 0 : a[0].size();
  // Scale columns to unit norm: the rank test and the condition number are
  // then independent of the units of each coefficient.
  std::vector<double> scale(k, 0);
  for (size_t j = 0; j < k; ++j) {
    for (size_t i = 0; i < n; ++i) scale[j] += a[i][j] * a[i][j];
    scale[j] = std::sqrt(scale[j]);
    if (scale[j] == 0) return Error{std::to_string(j), "zero column"};
  }
  std::vector<std::vector<double>> r(n, std::vector<double>(k));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < k; ++j) r[i][j] = a[i][j] / scale[j];
  std::vector<double> qb = b;
  // Householder QR: column j is reflected onto e_j over rows j..n-1.
  for (size_t j = 0; j < k; ++j) {
    if (j >= n) return Error{std::to_string(j), "more unknowns than rows"};
    double norm = 0;
    for (size_t i = j; i < n; ++i) norm += r[i][j] * r[i][j];
    norm = std::sqrt(norm);
    if (norm < kRankTolerance) {
      return Error{std::to_string(j), "dependent column"};
    }
    const double alpha = r[j][j] > 0 ? -norm : norm;
    std::vector<double> v(n, 0);
    for (size_t i = j; i < n; ++i) v[i] = r[i][j];
    v[j] -= alpha;
    double vv = 0;
    for (size_t i = j; i < n; ++i) vv += v[i] * v[i];
    if (vv > 0) {
      for (size_t c = j; c < k; ++c) {
        double d = 0;
        for (size_t i = j; i < n; ++i) d += v[i] * r[i][c];
        for (size_t i = j; i < n; ++i) r[i][c] -= 2 * d / vv * v[i];
      }
      double d = 0;
      for (size_t i = j; i < n; ++i) d += v[i] * qb[i];
      for (size_t i = j; i < n; ++i) qb[i] -= 2 * d / vv * v[i];
    }
  }
  LeastSquares out;
  out.x.assign(k, 0);
  for (size_t jj = k; jj-- > 0;) {
    double s = qb[jj];
    for (size_t c = jj + 1; c < k; ++c) s -= r[jj][c] * out.x[c];
    out.x[jj] = s / r[jj][jj];
  }
  // Condition: singular values of R are the square roots of the
  // eigenvalues of R^T R.
  std::vector<std::vector<double>> rtr(k, std::vector<double>(k, 0));
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j)
      for (size_t l = 0; l <= std::min(i, j); ++l) rtr[i][j] += r[l][i] * r[l][j];
  const std::vector<double> ev = SymmetricEigenvalues(rtr);
  const auto [lo, hi] = std::minmax_element(ev.begin(), ev.end());
  out.condition = *lo > 0 ? std::sqrt(*hi / *lo) : INFINITY;
  for (size_t j = 0; j < k; ++j) out.x[j] /= scale[j];
  out.residuals.resize(n);
  for (size_t i = 0; i < n; ++i) {
    double ax = 0;
    for (size_t j = 0; j < k; ++j) ax += a[i][j] * out.x[j];
    out.residuals[i] = b[i] - ax;
  }
  return out;
}

namespace {

// What a coefficient is and which extra measurement would determine it.
struct Unknown {
  std::string what;
  std::string fix;
};

Error Underdetermined(const Unknown& u, size_t rows, size_t unknowns,
                      const std::string& kind) {
  return Error{"calibrate",
               "under-determined " + kind + " fit (" + std::to_string(rows) +
                   " measurements, " + std::to_string(unknowns) +
                   " unknowns): " + u.what +
                   " is not determined by the measurements; add " + u.fix};
}

}  // namespace

Result<CalibrationResult> Calibrate(const CalibrationProblem& problem) {
  const size_t nm = problem.modes.size();
  CalibrationResult out;
  out.activation.assign(nm, 0);
  out.fitted_modes.assign(nm, false);
  if (nm > 0) out.fitted_modes[0] = true;  // no recompute is always fitted
  for (const StageMeasurement& s : problem.stages) {
    if (!s.memory) continue;
    for (size_t i = 0; i < nm && i < s.per_mode.size(); ++i)
      if (s.per_mode[i] > 0) out.fitted_modes[i] = true;
  }
  // Memory columns, in this order (a dependent column is blamed on the
  // later one): S, A_mode..., C, F, T.
  std::vector<Unknown> unknowns;
  unknowns.push_back({"the static memory per layer",
                      "a run with a different number of layers on some stage"});
  std::vector<size_t> mode_of_column;
  for (size_t i = 0; i < nm; ++i) {
    if (!out.fitted_modes[i]) continue;
    const std::string m = problem.modes[i];
    unknowns.push_back(
        {"the activation per layer with " +
             (i == 0 ? std::string("no recompute") : "recompute '" + m + "'"),
         "a run with a different number of " +
             (i == 0 ? std::string("non-recomputed") : "'" + m + "'-recompute") +
             " layers on some stage (or the same layers on a stage with a "
             "different number of micro-batches in flight)"});
    mode_of_column.push_back(i);
  }
  if (problem.fit_constant) {
    unknowns.push_back({"the per-stage constant",
                        "a run whose middle stages hold different numbers of "
                        "layers (an offset), or set constant: false"});
  }
  unknowns.push_back({"the extra memory of the first stage",
                      "a measurement of stage 0 in some run"});
  unknowns.push_back({"the extra memory of the last stage",
                      "a measurement of the last stage in some run"});
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  for (size_t r = 0; r < problem.stages.size(); ++r) {
    const StageMeasurement& s = problem.stages[r];
    if (!s.memory) continue;
    std::vector<double> row;
    row.push_back(s.layers);
    for (size_t i : mode_of_column)
      row.push_back(static_cast<double>(s.per_mode[i]) * s.inflight);
    if (problem.fit_constant) row.push_back(1);
    row.push_back(s.stage == 0 ? 1 : 0);
    row.push_back(s.stage == s.stages - 1 ? 1 : 0);
    a.push_back(std::move(row));
    b.push_back(*s.memory);
    out.memory_rows.push_back(static_cast<int>(r));
  }
  if (a.empty()) {
    return Error{"calibrate",
                 "needs at least one measured per-stage memory; got none"};
  }
  Result<LeastSquares> mem = SolveLeastSquares(a, b);
  if (!mem.ok()) {
    return Underdetermined(unknowns[std::stoul(mem.error().key)], a.size(),
                           unknowns.size(), "memory");
  }
  size_t c = 0;
  out.static_per_layer = mem->x[c++];
  for (size_t i : mode_of_column) out.activation[i] = mem->x[c++];
  if (problem.fit_constant) out.constant = mem->x[c++];
  out.first_extra = mem->x[c++];
  out.last_extra = mem->x[c++];
  out.memory_residuals = mem->residuals;
  out.memory_condition = mem->condition;

  // Non-physical fits. Half a byte of rounding is tolerated.
  auto negative = [](double x) { return x < -0.5; };
  std::vector<std::pair<std::string, double>> checks = {
      {"static memory per layer", out.static_per_layer},
      {"extra memory of the first stage", out.first_extra},
      {"extra memory of the last stage", out.last_extra}};
  for (size_t i : mode_of_column) {
    checks.push_back({"activation per layer with " +
                          (i == 0 ? std::string("no recompute")
                                  : "recompute '" + problem.modes[i] + "'"),
                      out.activation[i]});
  }
  if (!problem.allow_negative_constant) {
    checks.push_back({"per-stage constant", out.constant});
  }
  for (const auto& [what, value] : checks) {
    if (negative(value)) {
      return Error{"calibrate",
                   "non-physical fit: " + what + " = " + Mib(value) +
                       " (negative); the measurements contradict the memory "
                       "model (check the layouts, recompute lists and "
                       "micro-batches of the runs)"};
    }
  }
  if (out.fitted_modes[0]) {
    for (size_t i : mode_of_column) {
      if (i != 0 && out.activation[i] > out.activation[0] + 0.5) {
        return Error{"calibrate",
                     "non-physical fit: recompute '" + problem.modes[i] +
                         "' keeps " + Mib(out.activation[i]) +
                         " per layer and micro-batch, more than no recompute (" +
                         Mib(out.activation[0]) + ")"};
      }
    }
  }

  // Time.
  std::vector<std::vector<double>> ta;
  std::vector<double> tb;
  for (size_t r = 0; r < problem.stages.size(); ++r) {
    const StageMeasurement& s = problem.stages[r];
    if (!s.time) continue;
    ta.push_back({static_cast<double>(s.layers), s.stage == 0 ? 1.0 : 0.0,
                  s.stage == s.stages - 1 ? 1.0 : 0.0});
    tb.push_back(*s.time);
    out.time_rows.push_back(static_cast<int>(r));
  }
  if (!ta.empty()) {
    const std::vector<Unknown> tu = {
        {"the time per layer",
         "a stage time of a run with a different number of layers on some "
         "stage"},
        {"the extra time of the first stage",
         "a time measurement of stage 0 in some run"},
        {"the extra time of the last stage",
         "a time measurement of the last stage in some run"}};
    Result<LeastSquares> t = SolveLeastSquares(ta, tb);
    if (!t.ok()) {
      return Underdetermined(tu[std::stoul(t.error().key)], ta.size(), 3,
                             "time");
    }
    out.has_time = true;
    out.layer_time = t->x[0];
    out.first_time = t->x[1];
    out.last_time = t->x[2];
    out.time_residuals = t->residuals;
    out.time_condition = t->condition;
    const std::vector<std::pair<std::string, double>> tchecks = {
        {"time per layer", out.layer_time},
        {"extra time of the first stage", out.first_time},
        {"extra time of the last stage", out.last_time}};
    for (const auto& [what, value] : tchecks) {
      if (value < -0.5) {
        return Error{"calibrate", "non-physical fit: " + what + " = " +
                                      Num(value / 1e6) +
                                      " ms (negative); the stage times "
                                      "contradict the time model"};
      }
    }
  }
  return out;
}

}  // namespace ppb
