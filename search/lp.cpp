#include "search/lp.h"

#include <cmath>
#include <limits>

namespace ppb {
namespace {
constexpr double kCostTol = 1e-9;   // a reduced cost above this improves
constexpr double kPivotTol = 1e-9;  // smallest usable pivot element
constexpr int kDegenerateRun = 50;  // then Bland's rule until progress
}  // namespace

ColumnLp::ColumnLp(std::vector<double> rhs)
    : m_(static_cast<int>(rhs.size())),
      tab_(rhs.size()),
      binv_(rhs.size(), std::vector<double>(rhs.size(), 0.0)),
      rhs_(std::move(rhs)),
      rc_slack_(rhs_.size(), 0.0),
      basis_(rhs_.size()) {
  for (int i = 0; i < m_; ++i) {
    binv_[i][i] = 1.0;
    basis_[i] = ~i;
  }
}

int ColumnLp::AddColumn(double cost, const std::vector<double>& column) {
  // Tableau column B^-1 a; reduced cost c - pi.a with pi = -rc_slack.
  double rc = cost;
  if (pivots_ == 0) {  // B^-1 = I and the slack prices are 0
    for (int i = 0; i < m_; ++i) tab_[i].push_back(column[i]);
  } else {
    for (int k = 0; k < m_; ++k) rc += rc_slack_[k] * column[k];
    for (int i = 0; i < m_; ++i) {
      double t = 0;
      for (int k = 0; k < m_; ++k) t += binv_[i][k] * column[k];
      tab_[i].push_back(t);
    }
  }
  cost_.push_back(cost);
  rc_.push_back(rc);
  return static_cast<int>(cost_.size()) - 1;
}

void ColumnLp::Pivot(int row, int col) {
  const int n = static_cast<int>(cost_.size());
  std::vector<double> c(m_);
  for (int i = 0; i < m_; ++i) c[i] = col >= 0 ? tab_[i][col] : binv_[i][~col];
  const double f_rc = col >= 0 ? rc_[col] : rc_slack_[~col];
  const double inv = 1.0 / c[row];
  for (int j = 0; j < n; ++j) tab_[row][j] *= inv;
  for (int k = 0; k < m_; ++k) binv_[row][k] *= inv;
  rhs_[row] *= inv;
  for (int i = 0; i < m_; ++i) {
    if (i == row || c[i] == 0.0) continue;
    const double f = c[i];
    for (int j = 0; j < n; ++j) tab_[i][j] -= f * tab_[row][j];
    for (int k = 0; k < m_; ++k) binv_[i][k] -= f * binv_[row][k];
    rhs_[i] -= f * rhs_[row];
    if (rhs_[i] < 0 && rhs_[i] > -1e-12) rhs_[i] = 0;
  }
  for (int j = 0; j < n; ++j) rc_[j] -= f_rc * tab_[row][j];
  for (int k = 0; k < m_; ++k) rc_slack_[k] -= f_rc * binv_[row][k];
  objective_ += f_rc * rhs_[row];
  // The entering variable's own entries are exact by construction.
  for (int i = 0; i < m_; ++i) {
    double& e = col >= 0 ? tab_[i][col] : binv_[i][~col];
    e = i == row ? 1.0 : 0.0;
  }
  if (col >= 0) {
    rc_[col] = 0;
  } else {
    rc_slack_[~col] = 0;
  }
  basis_[row] = col;
  ++pivots_;
}

ColumnLp::Status ColumnLp::Solve(std::int64_t max_pivots) { return Solve(max_pivots, {}); }

ColumnLp::Status ColumnLp::Solve(std::int64_t max_pivots, const std::function<bool()>& stop) {
  const int n = static_cast<int>(cost_.size());
  // Variables in Bland's fixed order: structural 0..n-1, then slacks.
  auto order = [&](int var) { return var >= 0 ? var : n + ~var; };
  int degenerate = 0;
  for (std::int64_t it = 0; it < max_pivots; ++it) {
    if (stop && it % 128 == 127 && stop()) return Status::PivotLimit;
    const bool bland = degenerate >= kDegenerateRun;
    int enter = 0;
    bool found = false;
    double best = kCostTol;
    auto consider = [&](int var, double rc) {
      if (rc <= kCostTol) return;
      if (bland) {
        if (!found || order(var) < order(enter)) enter = var;
        found = true;
      } else if (rc > best) {
        best = rc;
        enter = var;
        found = true;
      }
    };
    for (int j = 0; j < n; ++j) consider(j, rc_[j]);
    for (int k = 0; k < m_; ++k) consider(~k, rc_slack_[k]);
    if (!found) return Status::Optimal;
    int leave = -1;
    double ratio = std::numeric_limits<double>::infinity();
    double leave_elem = 0;
    for (int i = 0; i < m_; ++i) {
      const double e = enter >= 0 ? tab_[i][enter] : binv_[i][~enter];
      if (e <= kPivotTol) continue;
      const double r = std::max(0.0, rhs_[i]) / e;
      bool take = false;
      if (leave < 0 || r < ratio - 1e-12) {
        take = true;
      } else if (r <= ratio + 1e-12) {
        // Ties: Bland takes the least variable; otherwise the larger pivot.
        take = bland ? order(basis_[i]) < order(basis_[leave]) : e > leave_elem;
      }
      if (take) {
        leave = i;
        ratio = std::min(ratio, r);
        leave_elem = e;
      }
    }
    if (leave < 0) return Status::Unbounded;
    degenerate = ratio <= 1e-12 ? degenerate + 1 : 0;
    Pivot(leave, enter);
  }
  return Status::PivotLimit;
}

std::vector<double> ColumnLp::Primal() const {
  std::vector<double> z(cost_.size(), 0.0);
  for (int i = 0; i < m_; ++i) {
    if (basis_[i] >= 0) z[basis_[i]] = std::max(0.0, rhs_[i]);
  }
  return z;
}

std::vector<double> ColumnLp::Duals() const {
  std::vector<double> pi(m_);
  for (int k = 0; k < m_; ++k) pi[k] = -rc_slack_[k];
  return pi;
}

}  // namespace ppb
