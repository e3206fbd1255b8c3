// ColumnLp: a small dense primal simplex for
//
//   maximize c.z  subject to  A z <= b,  z >= 0,  with b >= 0,
//
// that takes new columns after it has solved (column generation: re-solving
// starts from the last basis). Meant for tens of rows and up to a few
// thousand columns, as in the search's path bounds; a dense tableau keeps
// B^-1 in the slack columns, so a new column costs one rows x rows product.
//
// Numerics: plain doubles with fixed tolerances. Callers that need a valid
// bound must not trust Objective() blindly: take Primal() (feasible up to
// rounding) or Duals() and re-check them exactly, as the search does.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace ppb {

class ColumnLp {
 public:
  enum class Status { Optimal, Unbounded, PivotLimit };

  // One row per entry of `rhs` (every entry >= 0: the all-slack basis is
  // feasible).
  explicit ColumnLp(std::vector<double> rhs);

  // Adds a column with objective coefficient `cost` and constraint
  // coefficients `column` (one per row); returns its index. The basis stays
  // feasible (the new variable enters at 0).
  int AddColumn(double cost, const std::vector<double>& column);

  // Primal simplex from the current basis: Dantzig's rule, Bland's rule
  // after a run of degenerate pivots (no cycling).
  Status Solve(std::int64_t max_pivots = 100000);
  // The same, also stopping (PivotLimit, the basis kept) once `stop`
  // answers true; it is asked every 128 pivots.
  Status Solve(std::int64_t max_pivots, const std::function<bool()>& stop);

  double Objective() const { return objective_; }
  // Value of each column's variable at the current basis.
  std::vector<double> Primal() const;
  // Shadow price of each row (>= 0 at an optimum).
  std::vector<double> Duals() const;
  int rows() const { return m_; }
  int columns() const { return static_cast<int>(cost_.size()); }
  std::int64_t pivots() const { return pivots_; }

 private:
  void Pivot(int row, int col);  // col < 0: slack ~col

  int m_;
  std::vector<double> cost_;                   // per structural column
  std::vector<std::vector<double>> tab_;       // [row][structural column]
  std::vector<std::vector<double>> binv_;      // [row][slack column] = B^-1
  std::vector<double> rhs_;                    // basic values
  std::vector<double> rc_;                     // reduced costs, structural
  std::vector<double> rc_slack_;               // reduced costs, slacks
  std::vector<int> basis_;                     // >= 0 structural, < 0: ~slack
  double objective_ = 0;
  std::int64_t pivots_ = 0;
};

}  // namespace ppb
