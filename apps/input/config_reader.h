// The one helper every config reader uses (apps/input/config_*.cpp and
// candidates.cpp): it reads YAML maps, lists and scalars at a key path,
// records the line of each key it sees (RunConfig::key_lines), and formats
// every error once as
//   file:line: key: must be <expected>; got <given>
// (FormatError, apps/input/config.h). yaml-cpp's exceptions stop at WithYaml.
// A new config key is read with these helpers in its section's file
// (config_pipeline.cpp, config_model.cpp, config_training.cpp, config_hardware.cpp,
// config_cluster.cpp, config_strategy.cpp, config_search.cpp); its errors
// then need no formatting of their own. Internal to apps/input.
#pragma once


#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/config.h"
#include "apps/input/status_macros.h"
#include "apps/input/units.h"

namespace ppb::config_detail {

// Most layers a model may have in all (after `repeat` expansion, from a
// HuggingFace config.json, model.architecture or a SAPP layer JSON): guards
// memory and the bounds below; checked before the layers are built.
inline constexpr int kMaxLayers = 100000;

// The most ops one simulation may run unless --max-ops raises it. An op is
// one F, B, I or W of one stage and micro-batch; a schedule runs at most 3
// per (stage, micro-batch), so p * v * m * 3 bounds the ops, and the
// simulator's memory and time grow with them (measured on a Release build:
// about kBytesPerOp bytes and kSecondsPerOp seconds per op, reports
// included). 2 * 10^6 ops: about 0.5 GB and 4 s; the shipped configs need at
// most 5 * 10^4.
inline constexpr std::int64_t kDefaultMaxOps = 2'000'000;
inline constexpr std::int64_t kOpKindsBound = 3;
inline constexpr double kBytesPerOp = 250;
inline constexpr double kSecondsPerOp = 2e-6;

// Bounds on one value, chosen so that the simulator's integer sums cannot
// overflow int64 (9.2e18): a stage adds up at most kMaxLayers (1e5) layer
// times of at most kMaxDuration (1e12 ns = 1000 s) and divides by a speed
// of at least kMinSpeed (0.1): 1e18 ns; sizes of at most kMaxSize (2^40 B =
// 1 TiB) add up to at most 2^57 B per stage. Sums over micro-batches and
// stages are checked after lowering (core/validate.cpp). Real values are
// milliseconds and gigabytes.
inline constexpr Nanos kMaxDuration = 1'000'000'000'000;  // 1000 s
inline constexpr Bytes kMaxSize = Bytes{1} << 40;           // 1 TiB
inline constexpr double kMinSpeed = 0.1;
inline constexpr double kMaxSpeed = 1000;
// The bounds as messages write them.
inline constexpr std::string_view kMaxDurationText = "1000s";
inline constexpr std::string_view kMaxSizeText = "1TiB";
inline constexpr std::string_view kSpeedRangeText = "[0.1, 1000]";

// One entry of a YAML map, in file order.
struct Entry {
  std::string key;
  std::string path;  // full key, e.g. "model.layers[2].forward"
  YAML::Node value;
};
using Entries = std::vector<Entry>;

const Entry* Find(const Entries& entries, std::string_view key);

// How a value appears in "; got ..." when it is not what was expected.
std::string Given(const YAML::Node& node);

std::string Join(std::initializer_list<std::string_view> words);
std::string Join(const std::vector<std::string>& words);
std::string Lower(std::string s);

// Reads a whole file; false (errno set) when it cannot be read.
bool ReadFile(const std::string& path, std::string& out);

// The config under construction (its path and the key lines recorded so
// far place every error) and the readers of its keys.
class ConfigReader {
 protected:
  // Errors are placed in `filename`; `base` gives the config to start from
  // (its key lines are dropped).
  ConfigReader(std::string_view filename, RunConfig base);

  // Loads `text` as YAML and runs parse(root). yaml-cpp reports errors by
  // exception; they stop here, placed at their line.
  template <class T, class ParseFn>
  Result<T> WithYaml(std::string_view text, ParseFn parse) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return Error{"", At(e.mark) +
                           ": must be valid YAML; got a syntax error (" +
                           e.msg + ")"};
    }
    try {
      return parse(root);
    } catch (const YAML::Exception& e) {
      return Error{"", At(e.mark) + ": must be readable YAML; got an error (" +
                           e.msg + ")"};
    }
  }

  // ---- errors and key lines -------------------------------------------

  Error Fail(const std::string& key, const std::string& message) const;
  // "file:line" of a mark ("file" when the mark has no line).
  std::string At(const YAML::Mark& mark) const;
  void Mark(const std::string& path, const YAML::Mark& mark);

  // ---- structure --------------------------------------------------------

  // The entries of the map `node` at `path`, recording each key's line.
  // Keys outside `allowed` (unless it is empty) and repeated keys are errors.
  Result<Entries> Map(const YAML::Node& node, const std::string& path,
                      std::initializer_list<std::string_view> allowed);
  // The items of the list `node` at `path` (item i at "path[i]"), recording
  // each item's line.
  Result<std::vector<Entry>> List(const YAML::Node& node,
                                  const std::string& path,
                                  std::string_view expected);
  // The items of the list `key` among `entries` (at `path`), which must be
  // given and non-empty; `noun` names its items ("layers").
  Result<std::vector<Entry>> RequiredList(const Entries& entries,
                                          std::string_view key,
                                          const std::string& path,
                                          const std::string& noun);

  // ---- scalars ----------------------------------------------------------

  // An integer in [min, max]; errors say "must be <expected>; got ...",
  // where `expected` states the range ("a positive integer" for [1, INT_MAX]:
  // a value above INT_MAX adds "(at most 2147483647)").
  Result<std::int64_t> Integer(const YAML::Node& node, const std::string& path,
                               std::int64_t min, std::int64_t max,
                               std::string_view expected);
  Result<int> PositiveInt(const YAML::Node& node, const std::string& path);
  Result<std::string> String(const YAML::Node& node, const std::string& path,
                             std::string_view expected);
  // The index of the value in `choices` (the value lowercased).
  Result<size_t> Choice(const YAML::Node& node, const std::string& path,
                        std::initializer_list<std::string_view> choices);
  // The same over names known only at run time (a registry's).
  Result<size_t> Choice(const YAML::Node& node, const std::string& path,
                        const std::vector<std::string>& choices);
  Result<bool> Bool(const YAML::Node& node, const std::string& path);
  Result<double> PositiveNumber(const YAML::Node& node,
                                const std::string& path);
  // A number in [0, max]; errors say "must be <expected>; got ...".
  Result<double> Share(const YAML::Node& node, const std::string& path, double max,
                       std::string_view expected);
  // A relative device speed in [kMinSpeed, kMaxSpeed].
  Result<double> Speed(const YAML::Node& node, const std::string& path);
  // A unit value parsed by `parse`; positive or non-negative; at most
  // `max` (`max_text` says it with its unit).
  template <class Parse>
  Result<std::int64_t> UnitValue(const YAML::Node& node,
                                 const std::string& path, Parse parse,
                                 std::string_view noun, bool positive,
                                 std::int64_t max, std::string_view max_text) {
    if (!node.IsScalar()) {
      // Given() ("a map", "nothing") is never a number, so the parser's own
      // "must be a <noun> with a unit (...); got <given>" message results.
      return Fail(path, parse(Given(node)).error().message);
    }
    const std::string& text = node.Scalar();
    const size_t first = text.find_first_not_of(" \t");
    if (positive && first != std::string::npos && text[first] == '-') {
      return Fail(path, "must be a positive " + std::string(noun) +
                            "; got " + Abbreviate(text));
    }
    Result<std::int64_t> r = parse(text);
    if (!r.ok()) return Fail(path, r.error().message);
    if (positive && *r == 0) {
      return Fail(path, "must be a positive " + std::string(noun) +
                            "; got " + Abbreviate(node.Scalar()));
    }
    if (*r > max) {
      return Fail(path, "must be a " + std::string(noun) + " of at most " +
                            std::string(max_text) + "; got " +
                            Abbreviate(node.Scalar()));
    }
    return *r;
  }
  // At most kMaxDuration, or `max` (`max_text`) when given.
  Result<Nanos> Duration(const YAML::Node& node, const std::string& path,
                         bool positive, Nanos max = kMaxDuration,
                         std::string_view max_text = kMaxDurationText);
  Result<Bytes> Size(const YAML::Node& node, const std::string& path,
                     bool positive);
  Result<BytesPerSec> Bandwidth(const YAML::Node& node,
                                const std::string& path);

  RunConfig cfg_;
};

}  // namespace ppb::config_detail
