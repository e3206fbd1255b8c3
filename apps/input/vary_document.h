// The config document of one `ppb-sim compare` variant: where each --vary
// key points in the parsed YAML (a pipeline integer, a node, or fields of a
// model.layers item), its values resolved against the file's (factors
// applied, units kept), and the document with a variant's edits applied.
// Errors read "--vary: KEY: expected ...; got '...'" (exit 2). Internal to
// the compare command (apps/commands/compare_run.cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/vary.h"
#include "core/result.h"

namespace ppb::vary_detail {

// What a numeric scalar of the file holds; the values of --vary for it take
// the same form. Int: the pipeline integers (set as overrides); a number of
// the file is a Number, integer or not (the loader decides which it takes).
// Text: a non-numeric scalar (a path such as model.hf_config, a name),
// written as given; only `ppb-sim sweep` grids vary those (the loader checks
// the value).
enum class Kind { Int, Number, Duration, Size, Bandwidth, Text };

bool WholeInt(std::string_view s, std::int64_t& out);

Error VaryError(const std::string& key, const std::string& message);

// The text written into a scalar of kind `kind` whose current text is
// `base` for the value `given`: `given` itself when absolute (checked to be
// of the kind), or base x F for a factor "xF" (integers must stay whole;
// unit values are rounded to the nearest ns / byte / byte per second).
Result<std::string> Resolve(const std::string& key, Kind kind, const std::string& base,
                            const std::string& given);

// One step of a key path: a map key, or an index into a list ("[2]").
struct Step {
  std::string key;
  int index = -1;  // >= 0: a list index
};

// The node at `steps` under `node` (an undefined node when absent). A
// handle into the document: assigning a string to it edits the document.
// (Handles are rebound with reset(): yaml-cpp's operator= would overwrite
// the node they refer to.)
YAML::Node At(const YAML::Node& node, const std::vector<Step>& steps, size_t first = 0);

// Where an axis's values go.
struct Target {
  enum class Type { Pipeline, Node, Layer } type = Type::Node;
  std::string pipeline_key;  // Pipeline: "stages", ...
  std::vector<Step> path;    // Node: from the root; Layer: within the item
  int item = -1;             // Layer: index into the file's model.layers
  int member = -1;           // Layer: one layer of a repeated item; -1 all
  Kind kind = Kind::Int;
};

std::string JoinComma(const std::vector<std::string>& xs);

// The target of `key` in the document `root` of the config `base`. With
// `text_ok`, a non-numeric scalar is a target of Kind::Text (sweep grids);
// without, it is an error (compare --vary).
Result<Target> ResolveTarget(const YAML::Node& root, const std::string& key,
                             bool text_ok = false);

struct Axis {
  VaryAxis given;
  Target target;
};

// One edit of a variant: axis `axis` set to `value` (as given).
struct Edit {
  const Axis* axis;
  std::string value;
};

// How much of the config's strategy a document keeps.
enum class Strip { kNone, kSplit, kSplitAndRecompute };

// The document of `text` with `edits` applied (pipeline edits excluded) and
// the strategy stripped as asked. Errors: a factor that does not resolve.
Result<YAML::Node> VariantDocument(std::string_view text, const std::vector<Edit>& edits,
                                   Strip strip);

}  // namespace ppb::vary_detail
