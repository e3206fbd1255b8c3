// ColumnLp (search/lp.h), the simplex behind the open-tree path bound: a
// textbook optimum and its shadow prices, unbounded problems, and columns
// added after a solve (random LPs from tests/random_instances.h's seeds).
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "search/lp.h"
#include "random_instances.h"

namespace ppb {

using brute::Seeds;
using brute::Uniform;

TEST_CASE("ColumnLp: a textbook LP, its optimum and shadow prices", "[search][lp]") {
  // max 3x + 5y  s.t.  x <= 4,  2y <= 12,  3x + 2y <= 18  (Hillier and
  // Lieberman's Wyndor Glass example): optimum 36 at (2, 6), prices (0, 1.5, 1).
  ColumnLp lp({4, 12, 18});
  lp.AddColumn(3, {1, 0, 3});
  lp.AddColumn(5, {0, 2, 2});
  REQUIRE(lp.Solve() == ColumnLp::Status::Optimal);
  CHECK(lp.Objective() == Approx(36));
  const std::vector<double> z = lp.Primal();
  CHECK(z[0] == Approx(2));
  CHECK(z[1] == Approx(6));
  const std::vector<double> pi = lp.Duals();
  CHECK(pi[0] == Approx(0).margin(1e-12));
  CHECK(pi[1] == Approx(1.5));
  CHECK(pi[2] == Approx(1));
}

TEST_CASE("ColumnLp: a stop asked every 128 pivots keeps the basis to resume from",
          "[search][lp]") {
  // max sum z_j s.t. z_j <= 1 (j < 200): every column enters once, 200
  // pivots from the all-slack basis to the optimum 200.
  constexpr int n = 200;
  ColumnLp lp(std::vector<double>(n, 1.0));
  for (int j = 0; j < n; ++j) {
    std::vector<double> col(n, 0.0);
    col[j] = 1.0;
    lp.AddColumn(1.0, col);
  }
  int asked = 0;
  const auto stop = [&] {
    ++asked;
    return true;
  };
  CHECK(lp.Solve(100000, stop) == ColumnLp::Status::PivotLimit);
  CHECK(asked == 1);
  CHECK(lp.pivots() == 127);  // asked before the 128th
  CHECK(lp.Objective() == Approx(127));
  REQUIRE(lp.Solve(100000, [] { return false; }) == ColumnLp::Status::Optimal);
  CHECK(lp.pivots() == n);
  CHECK(lp.Objective() == Approx(n));
  // Fewer pivots than the first question: never asked.
  ColumnLp small({4, 12, 18});
  small.AddColumn(3, {1, 0, 3});
  small.AddColumn(5, {0, 2, 2});
  asked = 0;
  CHECK(small.Solve(100000, stop) == ColumnLp::Status::Optimal);
  CHECK(asked == 0);
  CHECK(small.Objective() == Approx(36));
}

TEST_CASE("ColumnLp: unbounded problems say so", "[search][lp]") {
  ColumnLp lp({1});
  lp.AddColumn(1, {-1});
  CHECK(lp.Solve() == ColumnLp::Status::Unbounded);
}

TEST_CASE("ColumnLp: columns added after a solve reach the all-at-once optimum, with a "
          "certificate",
          "[search][lp]") {
  // Random LPs with non-negative data (bounded: every column has a positive
  // entry). Optimality is checked by duality, not by trusting the solver:
  // z feasible, pi >= 0, A^T pi >= c, and c.z == b.pi.
  for (std::uint64_t seed : Seeds(8101, 40)) {
    std::mt19937_64 rng(seed);
    const int m = Uniform(rng, 1, 6), n = Uniform(rng, 1, 12);
    std::vector<double> b(m);
    for (double& x : b) x = Uniform(rng, 0, 3) == 0 ? 0.0 : Uniform(rng, 1, 20);  // degenerate rows
    std::vector<std::vector<double>> cols(n, std::vector<double>(m));
    std::vector<double> c(n);
    for (int j = 0; j < n; ++j) {
      for (double& a : cols[j]) a = Uniform(rng, 0, 2) == 0 ? 0.0 : Uniform(rng, 1, 9);
      cols[j][Uniform(rng, 0, m - 1)] += 1;
      c[j] = Uniform(rng, -3, 10);
    }
    INFO("seed " << seed << " m " << m << " n " << n);
    ColumnLp all(b), staged(b);
    for (int j = 0; j < n; ++j) all.AddColumn(c[j], cols[j]);
    REQUIRE(all.Solve() == ColumnLp::Status::Optimal);
    for (int j = 0; j < n; ++j) {
      staged.AddColumn(c[j], cols[j]);
      if (j % 3 == 0) REQUIRE(staged.Solve() == ColumnLp::Status::Optimal);
    }
    REQUIRE(staged.Solve() == ColumnLp::Status::Optimal);
    CHECK(staged.Objective() == Approx(all.Objective()).margin(1e-9));
    const std::vector<double> z = all.Primal(), pi = all.Duals();
    double primal = 0, dual = 0;
    for (int j = 0; j < n; ++j) {
      CHECK(z[j] >= 0);
      primal += c[j] * z[j];
      double reduced = 0;
      for (int i = 0; i < m; ++i) reduced += cols[j][i] * pi[i];
      CHECK(reduced >= c[j] - 1e-9);
    }
    for (int i = 0; i < m; ++i) {
      double row = 0;
      for (int j = 0; j < n; ++j) row += cols[j][i] * z[j];
      CHECK(row <= b[i] + 1e-9);
      CHECK(pi[i] >= -1e-12);
      dual += b[i] * pi[i];
    }
    CHECK(primal == Approx(all.Objective()).margin(1e-9));
    CHECK(dual == Approx(primal).margin(1e-9));
  }
}

}  // namespace ppb
