// When a time-limited tree search hands the rest of its time to the
// open-tree bound (TreeHandsOver, search/context.h): at 90 % of the limit,
// or from half of it on once its incumbent has not moved for more than a
// quarter of the limit. Pure arithmetic, no clock.
#include <catch2/catch.hpp>

#include "search/context.h"

namespace ppb::search_detail {
namespace {

TEST_CASE("the tree hands over to the open-tree bound", "[search][time]") {
  // Limit 10 s. Before half of it, never (whatever the incumbent did).
  CHECK_FALSE(TreeHandsOver(4.99, 10, 0.0));
  CHECK_FALSE(TreeHandsOver(0.1, 10, 0.0));
  // From 5 s on, when the last improvement is more than 2.5 s back.
  CHECK(TreeHandsOver(5.0, 10, 0.01));
  CHECK(TreeHandsOver(6.0, 10, 3.4));
  CHECK_FALSE(TreeHandsOver(6.0, 10, 3.5));  // exactly a quarter: not more
  CHECK_FALSE(TreeHandsOver(8.9, 10, 7.0));  // still improving
  // At 90 % in any case.
  CHECK(TreeHandsOver(9.0, 10, 8.99));
  CHECK(TreeHandsOver(9.5, 10, 9.5));
  // The same shares of another limit.
  CHECK(TreeHandsOver(30.0, 60, 14.9));
  CHECK_FALSE(TreeHandsOver(30.0, 60, 15.0));
  CHECK(TreeHandsOver(54.0, 60, 53.0));
}

}  // namespace
}  // namespace ppb::search_detail
