// The search's menu cache (RecomputeChoice::GetMenu): a layer range whose
// layers BuildMenu cannot tell from those of a range already built shares
// that menu, its layer indexes `shift` layers earlier. Checked against
// BuildMenu itself on every range of a model that repeats layers of equal
// recompute costs at other forward times, one layer of the same costs
// whose mode has another name, and stages that truncate their menu.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/model.h"
#include "search/context.h"
#include "search/driver.h"
#include "search/recompute_choice.h"
#include "search/recompute_menu.h"
#include "search/search.h"

namespace ppb {
namespace {

using search_detail::BuildMenu;
using search_detail::ChoiceProblem;
using search_detail::Menu;
using search_detail::RecomputeChoice;

constexpr Nanos kUs = 1000;
constexpr Bytes kMiB = Bytes{1} << 20;

Layer MenuLayer(const std::string& name, Nanos f, Bytes act,
                std::vector<RecomputeOption> options) {
  Layer l;
  l.name = name;
  l.forward = f;
  l.backward_input = 2 * f;
  l.activation = act;
  l.recompute = std::move(options);
  return l;
}

void RequireSameMenu(const Menu& got, const Menu& want) {
  REQUIRE(got.truncated == want.truncated);
  REQUIRE(got.exact_up_to == want.exact_up_to);
  REQUIRE(got.min_stash == want.min_stash);
  REQUIRE(got.min_remat == want.min_remat);
  REQUIRE(got.offsets == want.offsets);
  REQUIRE(got.groups.size() == want.groups.size());
  for (size_t g = 0; g < want.groups.size(); ++g) {
    INFO("group " << g);
    REQUIRE(got.groups[g].layers == want.groups[g].layers);
    REQUIRE(got.groups[g].activation == want.groups[g].activation);
    REQUIRE(got.groups[g].options.size() == want.groups[g].options.size());
    for (size_t o = 0; o < want.groups[g].options.size(); ++o) {
      REQUIRE(got.groups[g].options[o].name == want.groups[g].options[o].name);
      REQUIRE(got.groups[g].options[o].retained_activation ==
              want.groups[g].options[o].retained_activation);
      REQUIRE(got.groups[g].options[o].extra_time == want.groups[g].options[o].extra_time);
    }
  }
  REQUIRE(got.points.size() == want.points.size());
  for (size_t x = 0; x < want.points.size(); ++x) {
    INFO("point " << x);
    REQUIRE(got.points[x].stash == want.points[x].stash);
    REQUIRE(got.points[x].remat == want.points[x].remat);
    REQUIRE(got.points[x].time == want.points[x].time);
    REQUIRE(got.points[x].recomputed == want.points[x].recomputed);
    REQUIRE(got.points[x].counts == want.points[x].counts);
  }
}

TEST_CASE("menus copied for repeated layer ranges equal the menus BuildMenu builds",
          "[search][menus]") {
  const RecomputeOption full{"full", 0, 2 * kUs};
  const RecomputeOption sel{"selective", kMiB, 1 * kUs};
  const RecomputeOption sel_renamed{"select_comm", kMiB, 1 * kUs};
  SearchProblem pr;
  pr.p = 2;
  pr.m = 4;
  ScheduleChoice c;
  c.schedule = "interleaved";
  c.v = 2;
  pr.choices.push_back(c);
  // E A B A B A A B' A B C A B H, with A at three forward times and B' the
  // costs of B under another mode name; then 12 distinct layers whose
  // stash saved equals their recompute time (every subset Pareto-minimal:
  // the menus of 11 or more of them are truncated).
  pr.layers.push_back(MenuLayer("E", 1 * kUs, 1 * kMiB, {}));
  const std::string pattern = "ABABAAbABCAB";
  for (size_t x = 0; x < pattern.size(); ++x) {
    const Nanos f = (3 + x % 3) * kUs;
    const std::string name = std::string(1, pattern[x]) + std::to_string(x);
    switch (pattern[x]) {
      case 'A': pr.layers.push_back(MenuLayer(name, f, 4 * kMiB, {full, sel})); break;
      case 'B': pr.layers.push_back(MenuLayer(name, f, 2 * kMiB, {sel})); break;
      case 'b': pr.layers.push_back(MenuLayer(name, f, 2 * kMiB, {sel_renamed})); break;
      default: pr.layers.push_back(MenuLayer(name, f, 3 * kMiB, {full})); break;
    }
  }
  for (int x = 0; x < 12; ++x) {
    pr.layers.push_back(MenuLayer("D" + std::to_string(x), 2 * kUs, (Bytes{1} << x) * 1024,
                                  {{"full", 0, Nanos{1} << x}}));
  }
  pr.layers.push_back(MenuLayer("H", 2 * kUs, 1 * kMiB, {full}));
  for (int d = 0; d < pr.p; ++d) {
    pr.cluster.devices.push_back({64 * kMiB, 1.0});
    pr.cluster.links.push_back(Link{});
  }
  Result<search_detail::ChoiceContext> ctx = search_detail::MakeContext(pr, 0);
  REQUIRE(ctx.ok());
  const SearchOptions opt;
  const ChoiceProblem cp(pr, opt, std::move(ctx).value());
  RecomputeChoice rc(cp);
  const int L = static_cast<int>(pr.layers.size());
  int truncated = 0, shared = 0;
  // Longest ranges last, so that most ranges of the repeated part are
  // copies of an earlier one.
  for (int len = 1; len <= L; ++len) {
    for (int i = 0; i + len <= L; ++i) {
      INFO("layers [" << i << ", " << i + len << ")");
      int shift = -1;
      Menu got = rc.GetMenu(i, i + len, &shift);
      REQUIRE(shift >= 0);
      REQUIRE(shift <= i);
      for (search_detail::Group& g : got.groups) {
        for (int& l : g.layers) l += shift;
      }
      RequireSameMenu(got, BuildMenu(pr.layers, i, i + len));
      shared += shift > 0;
      truncated += got.truncated;
    }
  }
  CHECK(truncated > 0);
  CHECK(shared > 0);
  CHECK(rc.truncated());
}

}  // namespace
}  // namespace ppb
