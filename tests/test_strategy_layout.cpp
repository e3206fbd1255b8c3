// The strategy notations (core/strategy.h): Megatron layout strings (parsed,
// formatted, refused with the position) and first-N recompute.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/config.h"
#include "core/strategy.h"
#include "tests/app_helpers.h"
#include "tests/config_text.h"

namespace ppb {
namespace {

using test::ParseError;
using test::WithoutStrategy;

std::vector<Layer> Kinds(std::string_view symbols) {
  std::vector<Layer> layers;
  int t = 0;
  for (char c : symbols) {
    Layer l;
    switch (c) {
      case 'E':
        l.kind = LayerKind::Embedding;
        l.name = "embedding";
        break;
      case 'L':
        l.kind = LayerKind::Head;
        l.name = "head";
        break;
      case 'm':
        l.kind = LayerKind::Mtp;
        l.name = "mtp";
        break;
      default:
        l.kind = LayerKind::Decoder;
        l.name = "decoder." + std::to_string(t++);
    }
    layers.push_back(l);
  }
  return layers;
}

// ---- Megatron layouts and first-N recompute --------------------------------

TEST_CASE("strategy: Megatron layout strings", "[config][strategy]") {
  // DeepSeek-V3: 61 decoder layers + MTP, p = 16, v = 2.
  const std::vector<Layer> ds = Kinds("E" + std::string(61, 't') + "mL");
  Result<std::vector<int>> r =
      ParseMegatronLayout("Et*3|(tt|)*29,m|L", ds, 16, 2);
  REQUIRE(r.ok());
  std::vector<int> want = {4};
  for (int i = 0; i < 29; ++i) want.push_back(2);
  want.push_back(1);
  want.push_back(1);
  CHECK(*r == want);
  CHECK(FormatMegatronLayout(*r, ds) == "Et*3|" + [] {
    std::string s;
    for (int i = 0; i < 29; ++i) s += "t*2|";
    return s;
  }() + "m|L");
  Result<std::vector<int>> again =
      ParseMegatronLayout(FormatMegatronLayout(*r, ds), ds, 16, 2);
  REQUIRE(again.ok());
  CHECK(*again == *r);

  const std::vector<Layer> small = Kinds("EttttL");
  CHECK(*ParseMegatronLayout("Et|tt|tL", small, 3, 1) ==
        std::vector<int>{2, 2, 2});
  CHECK(*ParseMegatronLayout(" E , t | ((t)*2) | t L ", small, 3, 1) ==
        std::vector<int>{2, 2, 2});
  CHECK(*ParseMegatronLayout("E|t*4||L", small, 2, 2) ==
        std::vector<int>{1, 4, 0, 1});
  CHECK(FormatMegatronLayout({1, 4, 0, 1}, small) == "E|t*4||L");
  CHECK(*ParseMegatronLayout("Et*0tttt|L", small, 2, 1) ==
        std::vector<int>{5, 1});
}

TEST_CASE("strategy: bad Megatron layouts name the position",
          "[config][strategy]") {
  const std::vector<Layer> ds = Kinds("E" + std::string(61, 't') + "mL");
  const std::vector<Layer> small = Kinds("EttttL");
  auto message = [](Result<std::vector<int>> r) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().key == "strategy.layout");
    return r.error().message;
  };
  CHECK(message(ParseMegatronLayout("Et*3|(tt|)*29,m|L", ds, 16, 1)) ==
        "position 9: must have p*v = 16 stages (p=16, v=1), this '|' starts "
        "stage 17; got \"Et*3|(tt|)*29,m|L\"");
  CHECK(message(ParseMegatronLayout("Et*3|(tt|*29,m|L", ds, 16, 2)) ==
        "position 6: '(' is never closed; got \"Et*3|(tt|*29,m|L\"");
  CHECK(message(ParseMegatronLayout("Et)|tt|tL", small, 3, 1)) ==
        "position 3: ')' without a matching '('; got \"Et)|tt|tL\"");
  CHECK(message(ParseMegatronLayout("Ex|tt|tL", small, 3, 1)) ==
        "position 2: expected E, t, m, L, '|', '(' or ')', not 'x'; got "
        "\"Ex|tt|tL\"");
  CHECK(message(ParseMegatronLayout("*3E", small, 3, 1)) ==
        "position 1: '*' must follow a symbol or a ')'; got \"*3E\"");
  CHECK(message(ParseMegatronLayout("tE|tt|tL", small, 3, 1)) ==
        "position 1: expected 'E' (embedding) for layer 0 (embedding); got "
        "'t' (decoder layer) in \"tE|tt|tL\"");
  CHECK(message(ParseMegatronLayout("Et|tt|tLt", small, 3, 1)) ==
        "position 9: 't' (decoder layer) is past the model's last layer (the "
        "model has 6 layers); got \"Et|tt|tLt\"");
  CHECK(message(ParseMegatronLayout("Et|tt|t", small, 3, 1)) ==
        "must place all 6 layers of the model; got 5 in \"Et|tt|t\" (the next "
        "would be 'L' (loss/head) for head)");
  CHECK(message(ParseMegatronLayout("t*1000000000", small, 3, 1)) ==
        "position 13: the layout must expand to at most 100 symbols (far more "
        "than the model has); got \"t*1000000000\"");
  const std::vector<Layer> mtp = Kinds("EttmL");
  CHECK(
      message(ParseMegatronLayout("Et|tm||L", mtp, 2, 2)) ==
      "position 5: an MTP layer must be in a rank's last chunk (chunk 1); got "
      "it in stage 1 (chunk 0 of rank 1) in \"Et|tm||L\"");
  CHECK(*ParseMegatronLayout("Et|t|m|L", mtp, 2, 2) ==
        std::vector<int>{2, 1, 1, 1});
}

TEST_CASE("strategy: a layout nested 30,000 deep is refused, not a crash",
          "[config][strategy]") {
  const std::vector<Layer> small = Kinds("EttttL");
  const std::string deep =
      std::string(30000, '(') + "Ett|ttL" + std::string(30000, ')');
  Result<std::vector<int>> r = ParseMegatronLayout(deep, small, 2, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "position 101: '(' must nest at most 100 deep; got \"" +
            std::string(60, '(') + "... (60007 characters)\"");
  CHECK(MegatronLayoutStages(deep, 1000).error().message ==
        r.error().message);
  // 100 levels are accepted.
  CHECK(*ParseMegatronLayout(std::string(100, '(') + "Ett|ttL" +
                                 std::string(100, ')'),
                             small, 2, 1) == std::vector<int>{3, 3});
  // Through the config: file, line, key; the value abbreviated.
  const std::string message = ParseError(
      WithoutStrategy() + "strategy:\n  layout: \"" + deep + "\"\n");
  CHECK(message.find(": strategy.layout: position 101: '(' must nest at most "
                     "100 deep; got \"((((") != std::string::npos);
  CHECK(message.rfind("run.yaml:", 0) == 0);
  CHECK(message.size() < 300);
}
TEST_CASE("strategy: a hybrid pattern's segments as a Megatron layout",
          "[config][strategy]") {
  // Segment k is global stage k; the embedding goes with segment 0, the
  // head with the last; an empty segment is an empty stage.
  CHECK(HybridPatternLayout("M-*|-M|M-") == "Et*3|t*2|t*2L");
  CHECK(HybridPatternLayout("M|*-M-||E") == "Et|t*4||tL");
  CHECK(HybridPatternLayout("M-M-/MM/MM").empty());  // no '|'; MTP not read
  CHECK(HybridPatternLayout("M-|M-/MM") == "Et*2|t*2L");
  Result<int> stages = MegatronLayoutStages(HybridPatternLayout("M|*-M-||E"), 100);
  REQUIRE(stages.ok());
  CHECK(*stages == 4);
}

TEST_CASE("strategy: first-N recompute", "[config][strategy]") {
  std::vector<Layer> layers = Kinds("EttttL");
  for (Layer& l : layers) {
    if (l.kind == LayerKind::Decoder) {
      l.recompute = {{"full", 0, 1}, {"selective", 0, 1}};
    }
  }
  std::vector<std::uint8_t> rc(layers.size(), 0);
  // Stages [E t t] [t t L]: the embedding is skipped without counting.
  REQUIRE(ApplyFirstNRecompute(layers, {3, 3}, {1, 3}, "full", rc).ok());
  CHECK(rc == std::vector<std::uint8_t>{0, 1, 0, 1, 1, 0});
  REQUIRE(ApplyFirstNRecompute(layers, {3, 3}, {2, 1}, "selective", rc).ok());
  CHECK(rc == std::vector<std::uint8_t>{0, 1, 2, 1, 1, 0});

  Status over = ApplyFirstNRecompute(layers, {3, 3}, {4, 0}, "full", rc);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().key == "strategy.recompute.full");
  CHECK(over.error().message ==
        "stage 0: must be in [0, 3] (the layers of the stage); got 4");

  layers[4].recompute.clear();
  Status lacks = ApplyFirstNRecompute(layers, {3, 3}, {0, 2}, "full", rc);
  REQUIRE_FALSE(lacks.ok());
  CHECK(lacks.error().message ==
        "stage 1: the first 2 layers must offer recompute mode \"full\"; got "
        "layer decoder.3, which offers none");
}

}  // namespace
}  // namespace ppb
