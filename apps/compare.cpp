#include "apps/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "apps/output/output.h"
#include "apps/input/search_problem.h"
#include "apps/input/units.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

using Json = nlohmann::ordered_json;

// ---- values -------------------------------------------------------------

// What a numeric scalar of the file holds; the values of --vary for it take
// the same form. Int: the pipeline integers (set as overrides); a number of
// the file is a Number, integer or not (the loader decides which it takes).
enum class Kind { Int, Number, Duration, Size, Bandwidth };

bool WholeInt(std::string_view s, std::int64_t& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return !s.empty() && ec == std::errc() && ptr == end;
}

bool WholeNumber(std::string_view s, double& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return !s.empty() && ec == std::errc() && ptr == end && std::isfinite(out);
}

// The kind of a scalar of the file, or nullopt when it is not numeric.
std::optional<Kind> KindOf(const std::string& text) {
  double x = 0;
  if (WholeNumber(text, x)) return Kind::Number;
  if (ParseDuration(text).ok()) return Kind::Duration;
  if (ParseBandwidth(text).ok()) return Kind::Bandwidth;
  if (ParseBytes(text).ok()) return Kind::Size;
  return std::nullopt;
}

const char* Example(Kind kind) {
  switch (kind) {
    case Kind::Int:
      return "an integer like 16";
    case Kind::Number:
      return "a number like 1.5";
    case Kind::Duration:
      return "a duration like 1.5ms";
    case Kind::Size:
      return "a size like 80GiB";
    case Kind::Bandwidth:
      return "a bandwidth like 50GB/s";
  }
  return "a number";
}

// The integer of a unit scalar (ns, bytes, bytes/s). REQUIRES: KindOf(text)
// is kind.
std::int64_t UnitInteger(Kind kind, const std::string& text) {
  switch (kind) {
    case Kind::Duration:
      return *ParseDuration(text);
    case Kind::Size:
      return *ParseBytes(text);
    case Kind::Bandwidth:
      return *ParseBandwidth(text);
    default:
      return 0;
  }
}

Error VaryError(const std::string& key, const std::string& message) {
  return Error{"--vary", "--vary: " + key + ": " + message};
}

// The text written into a scalar of kind `kind` whose current text is
// `base` for the value `given`: `given` itself when absolute (checked to be
// of the kind), or base x F for a factor "xF" (integers must stay whole;
// unit values are rounded to the nearest ns / byte / byte per second).
Result<std::string> Resolve(const std::string& key, Kind kind, const std::string& base,
                            const std::string& given) {
  const std::string want = std::string("expected ") + Example(kind) + " or a factor like x2";
  if (!given.empty() && given[0] == 'x') {
    double f = 0;
    if (!WholeNumber(std::string_view(given).substr(1), f) || !(f > 0)) {
      return VaryError(key, "expected a positive factor like x0.5; got '" + given + "'");
    }
    if (kind == Kind::Number) {
      // An integer stays an integer when the product is whole.
      double b = 0;
      WholeNumber(base, b);
      const double r = b * f;
      std::int64_t i = 0;
      if (WholeInt(base, i) && std::fabs(r) < 9e15 && r == std::nearbyint(r)) {
        return std::to_string(std::llround(r));
      }
      return fmt::format("{}", r);
    }
    const double b = kind == Kind::Int
                         ? [&] {
                             std::int64_t i = 0;
                             WholeInt(base, i);
                             return static_cast<double>(i);
                           }()
                         : static_cast<double>(UnitInteger(kind, base));
    const double r = b * f;
    if (!(std::fabs(r) < 9.2e18)) {
      return VaryError(key,
                       "expected a factor that keeps the value in 63 "
                       "bits; got " +
                           given + " of " + base);
    }
    const std::int64_t n = std::llround(r);
    if (kind == Kind::Int) {
      if (std::fabs(r - static_cast<double>(n)) > 1e-9 * std::max(1.0, r)) {
        return VaryError(key, "expected a factor that gives an integer; got " + given + " of " +
                                  base + " = " + fmt::format("{:g}", r));
      }
      return std::to_string(n);
    }
    const char* unit = kind == Kind::Duration ? "ns" : (kind == Kind::Size ? "B" : "B/s");
    return std::to_string(n) + unit;
  }
  bool ok = false;
  std::int64_t i = 0;
  double x = 0;
  switch (kind) {
    case Kind::Int:
      ok = WholeInt(given, i);
      break;
    case Kind::Number:
      ok = WholeNumber(given, x);
      break;
    case Kind::Duration:
      ok = ParseDuration(given).ok();
      break;
    case Kind::Size:
      ok = ParseBytes(given).ok();
      break;
    case Kind::Bandwidth:
      ok = ParseBandwidth(given).ok();
      break;
  }
  if (!ok) return VaryError(key, want + "; got '" + given + "'");
  return given;
}

// ---- keys ---------------------------------------------------------------

// One step of a key path: a map key, or an index into a list ("[2]").
struct Step {
  std::string key;
  int index = -1;  // >= 0: a list index
};

// "cluster.links[0].bandwidth" as steps; nullopt when malformed.
std::optional<std::vector<Step>> Steps(std::string_view key) {
  std::vector<Step> steps;
  size_t start = 0;
  while (true) {
    const size_t dot = std::min(key.find('.', start), key.size());
    std::string_view seg = key.substr(start, dot - start);
    const size_t bracket = std::min(seg.find('['), seg.size());
    if (bracket == 0) return std::nullopt;
    steps.push_back({std::string(seg.substr(0, bracket)), -1});
    seg = seg.substr(bracket);
    while (!seg.empty()) {
      const size_t close = seg.find(']');
      std::int64_t i = 0;
      if (seg[0] != '[' || close == std::string_view::npos ||
          !WholeInt(seg.substr(1, close - 1), i) || i < 0 || i > 1'000'000) {
        return std::nullopt;
      }
      steps.push_back({"", static_cast<int>(i)});
      seg = seg.substr(close + 1);
    }
    if (dot == key.size()) return steps;
    start = dot + 1;
  }
}

// The node at `steps` under `node` (an undefined node when absent). A
// handle into the document: assigning a string to it edits the document.
// (Handles are rebound with reset(): yaml-cpp's operator= would overwrite
// the node they refer to.)
YAML::Node At(const YAML::Node& node, const std::vector<Step>& steps, size_t first = 0) {
  YAML::Node n = node;
  for (size_t k = first; k < steps.size(); ++k) {
    const Step& s = steps[k];
    const YAML::Node& c = n;
    if (s.index >= 0) {
      if (!c.IsSequence() || static_cast<size_t>(s.index) >= c.size()) {
        return YAML::Node(YAML::NodeType::Undefined);
      }
      n.reset(c[static_cast<size_t>(s.index)]);
    } else {
      if (!c.IsMap() || !c[s.key]) return YAML::Node(YAML::NodeType::Undefined);
      n.reset(c[s.key]);
    }
  }
  return n;
}

// A deep copy of `node` whose nodes carry no mark (YAML::Clone marks every
// node line 1), so that errors about it take the line of the nearest key
// of the file above it.
YAML::Node Copy(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return YAML::Node(node.Scalar());
    case YAML::NodeType::Sequence: {
      YAML::Node out(YAML::NodeType::Sequence);
      for (const YAML::Node& item : node) out.push_back(Copy(item));
      return out;
    }
    case YAML::NodeType::Map: {
      YAML::Node out(YAML::NodeType::Map);
      for (const auto& kv : node) out[kv.first.Scalar()] = Copy(kv.second);
      return out;
    }
    default:
      return YAML::Node(node.Type());
  }
}

// The pipeline integers, varied through the command-line overrides.
constexpr const char* kPipelineInts[] = {"stages", "microbatches", "virtual_stages",
                                         "microbatch_group"};

// One item of the file's model.layers list.
struct LayerItem {
  std::string name;
  int repeat = 0;  // 0: no `repeat` key (one layer named `name`)
  int count() const { return repeat > 0 ? repeat : 1; }
};

std::vector<LayerItem> LayerItems(const YAML::Node& root) {
  std::vector<LayerItem> items;
  const YAML::Node layers = At(root, {{"model"}, {"layers"}});
  if (!layers.IsSequence()) return items;
  for (const YAML::Node& item : layers) {
    LayerItem li;
    if (item.IsMap() && item["name"] && item["name"].IsScalar()) {
      li.name = item["name"].Scalar();
    }
    std::int64_t r = 0;
    if (item.IsMap() && item["repeat"] && WholeInt(item["repeat"].Scalar(), r)) {
      li.repeat = static_cast<int>(r);
    }
    items.push_back(li);
  }
  return items;
}

// Where an axis's values go.
struct Target {
  enum class Type { Pipeline, Node, Layer } type = Type::Node;
  std::string pipeline_key;  // Pipeline: "stages", ...
  std::vector<Step> path;    // Node: from the root; Layer: within the item
  int item = -1;             // Layer: index into the file's model.layers
  int member = -1;           // Layer: one layer of a repeated item; -1 all
  Kind kind = Kind::Int;
};

// Numeric scalars under `node` at `path` (for the list of accepted keys).
void CollectNumeric(const YAML::Node& node, const std::string& path,
                    std::vector<std::string>& out) {
  if (node.IsScalar()) {
    if (KindOf(node.Scalar())) out.push_back(path);
  } else if (node.IsMap()) {
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) continue;
      const std::string k = kv.first.Scalar();
      const std::string sub = path.empty() ? k : path + "." + k;
      if (sub == "pipeline" || sub == "strategy" || sub == "search" || sub == "model.layers") {
        continue;
      }
      CollectNumeric(kv.second, sub, out);
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      CollectNumeric(node[i], path + "[" + std::to_string(i) + "]", out);
    }
  }
}

// The fields of a layer item that --vary can address ("forward",
// "recompute.full.time").
std::vector<std::string> LayerFields(const YAML::Node& item) {
  std::vector<std::string> fields;
  if (!item.IsMap()) return fields;
  for (const auto& kv : item) {
    const std::string k = kv.first.Scalar();
    if (k == "name" || k == "kind" || k == "repeat") continue;
    CollectNumeric(kv.second, k, fields);
  }
  return fields;
}

std::string JoinComma(const std::vector<std::string>& xs) {
  return fmt::format("{}", fmt::join(xs, ", "));
}

// What --vary accepts for this config, for the unknown-key error.
std::string AcceptedKeys(const YAML::Node& root, const std::vector<LayerItem>& items) {
  std::vector<std::string> keys;
  for (const char* k : kPipelineInts) keys.push_back("pipeline." + std::string(k));
  CollectNumeric(root, "", keys);
  std::string out = "expected one of " + JoinComma(keys);
  if (!items.empty()) {
    std::vector<std::string> names;
    int total = 0;
    for (const LayerItem& li : items) {
      names.push_back(li.repeat > 0 ? fmt::format("{} ({}.0 .. {}.{})", li.name, li.name, li.name,
                                                  li.repeat - 1)
                                    : li.name);
      total += li.count();
    }
    std::set<std::string> fields;
    for (const YAML::Node& item : At(root, {{"model"}, {"layers"}})) {
      for (const std::string& f : LayerFields(item)) fields.insert(f);
    }
    out += fmt::format(
        ", or model.layers.LAYER.FIELD with LAYER a layer name ({}), a "
        "repeated group's name for all of its layers, or a layer index 0 .. "
        "{}, and FIELD one of {}",
        JoinComma(names), total - 1,
        JoinComma(std::vector<std::string>(fields.begin(), fields.end())));
  }
  return out + " (a key must be written in the config to be varied)";
}

// The (item, member) a layer selector names: an item's name (the whole
// group), "name.j" of a repeated item, or a layer index after expansion.
std::optional<std::pair<int, int>> SelectLayer(const std::vector<LayerItem>& items,
                                               const std::string& sel) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].name == sel) return std::pair{static_cast<int>(i), -1};
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const LayerItem& li = items[i];
    if (li.repeat == 0 || sel.rfind(li.name + ".", 0) != 0) continue;
    std::int64_t j = 0;
    if (WholeInt(sel.substr(li.name.size() + 1), j) && j >= 0 && j < li.repeat &&
        std::to_string(j) == sel.substr(li.name.size() + 1)) {
      return std::pair{static_cast<int>(i), static_cast<int>(j)};
    }
  }
  std::int64_t index = 0;
  if (WholeInt(sel, index) && index >= 0) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (index < items[i].count()) {
        return std::pair{static_cast<int>(i), items[i].repeat > 0 ? static_cast<int>(index) : -1};
      }
      index -= items[i].count();
    }
  }
  return std::nullopt;
}

// The target of `key` in the document `root` of the config `base`.
Result<Target> ResolveTarget(const YAML::Node& root, const std::string& key) {
  const std::vector<LayerItem> items = LayerItems(root);
  auto unknown = [&] { return VaryError(key, "unknown key; " + AcceptedKeys(root, items)); };
  auto numeric = [&](const YAML::Node& node, Target t) -> Result<Target> {
    if (!node.IsDefined()) return unknown();
    if (!node.IsScalar()) {
      return VaryError(key, std::string("expected a numeric key (a number, "
                                        "duration, size or bandwidth); got ") +
                                (node.IsMap() ? "a map" : "a list"));
    }
    std::optional<Kind> kind = KindOf(node.Scalar());
    if (!kind) {
      return VaryError(key,
                       "expected a numeric key (a number, duration, size or "
                       "bandwidth); got '" +
                           node.Scalar() + "'");
    }
    t.kind = *kind;
    return t;
  };

  std::optional<std::vector<Step>> steps = Steps(key);
  if (!steps) return unknown();
  const std::string& top = (*steps)[0].key;
  if (top == "pipeline") {
    if (steps->size() == 2 && (*steps)[1].index < 0) {
      for (const char* k : kPipelineInts) {
        if ((*steps)[1].key == k) {
          Target t;
          t.type = Target::Type::Pipeline;
          t.pipeline_key = k;
          return t;
        }
      }
      if ((*steps)[1].key == "schedule") {
        return VaryError(key,
                         "expected a numeric key (a number, duration, size "
                         "or bandwidth); got a schedule name (compare "
                         "schedules with --schedules)");
      }
    }
    return numeric(At(root, *steps), Target{});
  }
  if (top == "strategy" || top == "search") {
    return VaryError(key,
                     "expected a key outside strategy and search (each "
                     "row uses the config's strategy when it applies, "
                     "else the even split); got a " +
                         top + " key");
  }
  if (steps->size() >= 2 && top == "model" && (*steps)[1].key == "layers" &&
      (*steps)[1].index < 0) {
    const YAML::Node layers = At(root, {{"model"}, {"layers"}});
    if (!layers.IsSequence()) {
      return VaryError(key,
                       "unknown key; the layers of this config are "
                       "derived (model.hf_config, model.architecture or "
                       "model.sapp_layers): vary the keys they are "
                       "derived from; " +
                           AcceptedKeys(root, items));
    }
    // "model.layers.SEL.FIELD": the longest SEL that names a layer.
    const std::string rest = key.substr(std::string("model.layers.").size());
    std::vector<size_t> dots;
    for (size_t i = 0; i < rest.size(); ++i) {
      if (rest[i] == '.') dots.push_back(i);
    }
    for (size_t k = dots.size(); k-- > 0;) {
      const std::string sel = rest.substr(0, dots[k]);
      auto selected = SelectLayer(items, sel);
      if (!selected) continue;
      std::optional<std::vector<Step>> field = Steps(rest.substr(dots[k] + 1));
      if (!field) return unknown();
      Target t;
      t.type = Target::Type::Layer;
      t.item = selected->first;
      t.member = selected->second;
      t.path = *field;
      const YAML::Node item = layers[static_cast<size_t>(t.item)];
      const std::string& field0 = t.path[0].key;
      const LayerItem& li = items[static_cast<size_t>(t.item)];
      std::int64_t j = 0;
      if (t.member < 0 && li.repeat > 0 && WholeInt(field0, j)) {
        return VaryError(key,
                         fmt::format("expected a layer of {} in {}.0 .. "
                                     "{}.{}; got {}.{}",
                                     li.name, li.name, li.name, li.repeat - 1, li.name, field0));
      }
      if (field0 == "name" || field0 == "kind" || field0 == "repeat") {
        return VaryError(key, "expected a cost of the layer (" + JoinComma(LayerFields(item)) +
                                  "); got its " + field0);
      }
      const YAML::Node value = At(item, t.path);
      if (!value.IsDefined()) {
        return VaryError(key, "unknown key; layer " + items[static_cast<size_t>(t.item)].name +
                                  " gives " + JoinComma(LayerFields(item)) +
                                  " (a key must be written in the config to "
                                  "be varied)");
      }
      return numeric(value, t);
    }
    return unknown();
  }
  Target t;
  t.path = *steps;
  return numeric(At(root, *steps), t);
}

// ---- variants -------------------------------------------------------------

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
                                   Strip strip) {
  YAML::Node root = YAML::Load(std::string(text));
  // Repeated items with one layer edited alone are written out as one item
  // per layer, named as `repeat` names them ("decoder.3").
  std::set<int> expand;
  for (const Edit& e : edits) {
    if (e.axis->target.type == Target::Type::Layer && e.axis->target.member >= 0) {
      expand.insert(e.axis->target.item);
    }
  }
  std::vector<std::pair<int, int>> origin;  // per item now: (item, member)
  const std::vector<LayerItem> items = LayerItems(root);
  if (!expand.empty()) {
    YAML::Node model = At(root, {{"model"}});
    const YAML::Node layers = At(root, {{"model"}, {"layers"}});
    YAML::Node seq(YAML::NodeType::Sequence);
    for (size_t i = 0; i < layers.size(); ++i) {
      const YAML::Node item = layers[i];
      if (expand.count(static_cast<int>(i)) == 0) {
        seq.push_back(item);
        origin.emplace_back(static_cast<int>(i), -1);
        continue;
      }
      for (int j = 0; j < items[i].repeat; ++j) {
        YAML::Node copy = Copy(item);
        copy.remove("repeat");
        copy["name"] = items[i].name + "." + std::to_string(j);
        seq.push_back(copy);
        origin.emplace_back(static_cast<int>(i), j);
      }
    }
    model["layers"] = seq;
  } else {
    for (size_t i = 0; i < items.size(); ++i) {
      origin.emplace_back(static_cast<int>(i), -1);
    }
  }

  auto set = [](YAML::Node node, const Edit& e) -> Status {
    Result<std::string> value =
        Resolve(e.axis->given.key, e.axis->target.kind, node.Scalar(), e.value);
    if (!value.ok()) return value.error();
    node = *value;
    return Status();
  };
  for (const Edit& e : edits) {
    const Target& t = e.axis->target;
    if (t.type == Target::Type::Node) {
      if (Status s = set(At(root, t.path), e); !s.ok()) return s.error();
    } else if (t.type == Target::Type::Layer) {
      const YAML::Node layers = At(root, {{"model"}, {"layers"}});
      for (size_t k = 0; k < origin.size(); ++k) {
        if (origin[k].first != t.item) continue;
        if (t.member >= 0 && origin[k].second != t.member) continue;
        if (Status s = set(At(layers[k], t.path), e); !s.ok()) {
          return s.error();
        }
      }
    }
  }

  const YAML::Node strategy = At(root, {{"strategy"}});
  if (strip != Strip::kNone && strategy.IsMap()) {
    YAML::Node s = strategy;
    for (const char* k : {"layers_per_chunk", "layout", "offset"}) s.remove(k);
    if (strip == Strip::kSplitAndRecompute) s.remove("recompute");
  }
  return root;
}

// The message of a loader error without its "file:line: " prefix and with
// the config key instead of the flag that set it ("pipeline.virtual_stages:
// must be >= 2 ...").
std::string Reason(std::string_view filename, const Error& e, bool v_from_flag) {
  std::string s = e.message;
  // compare sets v through --virtual-stages for every row; unless the user
  // gave that flag, name the key.
  for (size_t at = 0;
       !v_from_flag && (at = s.find("--virtual-stages ", at)) != std::string::npos;) {
    s.replace(at, 17, "virtual_stages = ");
  }
  const std::string prefix = std::string(filename) + ":";
  if (s.rfind(prefix, 0) == 0) {
    s = s.substr(prefix.size());
    size_t digits = 0;
    while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) {
      ++digits;
    }
    if (digits > 0 && digits < s.size() && s[digits] == ':') {
      s = s.substr(digits + 1);
    }
    if (!s.empty() && s[0] == ' ') s = s.substr(1);
  }
  if (!e.key.empty() && s.rfind("--", 0) == 0) {
    const size_t colon = s.find(": ");
    if (colon != std::string::npos) s = e.key + s.substr(colon);
  }
  return s;
}

bool IsStrategyError(const Error& e) {
  return e.key == "strategy" || e.key.rfind("strategy.", 0) == 0;
}

// "KEY=V, KEY2=V2" of variant edits, for messages.
std::string DescribeVariant(const std::vector<VaryAxis>& axes,
                            const std::vector<std::string>& values) {
  std::string out;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (k > 0) out += ", ";
    out += axes[k].key + "=" + values[k];
  }
  return out;
}

}  // namespace

Result<VaryAxis> ParseVary(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Error{"--vary",
                 "--vary: expected KEY=V1,V2,... (e.g. "
                 "cluster.link.bandwidth=25GB/s,50GB/s); got '" +
                     std::string(text) + "'"};
  }
  VaryAxis axis;
  axis.key = std::string(text.substr(0, eq));
  const std::string_view list = text.substr(eq + 1);
  if (list.empty()) {
    return Error{"--vary", "--vary: " + axis.key +
                               ": expected a comma-separated list of values; "
                               "got nothing"};
  }
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string item(list.substr(start, comma - start));
    if (item.empty()) {
      return Error{"--vary", "--vary: " + axis.key +
                                 ": expected a comma-separated list of "
                                 "values; got '" +
                                 std::string(list) + "' (an empty value)"};
    }
    axis.values.push_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return axis;
}

Result<CompareTable> Compare(std::string_view text, std::string_view filename,
                             const CompareRequest& request) {
  CompareTable table;
  table.config_path = std::string(filename);
  table.vary = request.vary;

  // Schedules: registry names (any case; torch's Interleaved1F1B), once each.
  std::vector<std::string> registered;
  for (const ScheduleInfo& info : ScheduleRegistry()) {
    registered.emplace_back(info.name);
  }
  if (request.schedules.empty()) table.schedules = registered;
  for (const std::string& given : request.schedules) {
    std::string name = given;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (name == "interleaved1f1b") name = "interleaved";
    if (std::find(registered.begin(), registered.end(), name) == registered.end()) {
      return Error{"--schedules",
                   "--schedules: expected a comma-separated "
                   "list of " +
                       JoinComma(registered) + "; got '" + given + "'"};
    }
    if (std::find(table.schedules.begin(), table.schedules.end(), name) != table.schedules.end()) {
      return Error{"--schedules",
                   "--schedules: expected each schedule once; got " + name + " twice"};
    }
    table.schedules.push_back(name);
  }

  // The config as given (--virtual-stages applies to interleaved rows only).
  // A strategy that does not fit --stages / --microbatches is no error here:
  // each row falls back to the even split.
  const CliOverrides& cli = request.overrides;
  CliOverrides base_cli = cli;
  base_cli.virtual_stages.reset();
  Result<RunConfig> base = ParseConfig(text, filename, base_cli);
  if (!base.ok() && IsStrategyError(base.error()) &&
      (cli.stages || cli.microbatches || cli.microbatch_group)) {
    Result<YAML::Node> doc = VariantDocument(text, {}, Strip::kSplitAndRecompute);
    if (doc.ok()) base = ParseConfigYaml(*doc, filename, base_cli);
  }
  if (!base.ok()) return base.error();
  table.model_name = base->model_name;
  const YAML::Node root = YAML::Load(std::string(text));

  // The axes: known keys, once each, values of the key's kind.
  std::vector<Axis> axes;
  axes.reserve(request.vary.size());
  for (const VaryAxis& given : request.vary) {
    for (const Axis& a : axes) {
      if (a.given.key == given.key) {
        return VaryError(given.key, "expected each key once; got it twice");
      }
    }
    Result<Target> target = ResolveTarget(root, given.key);
    if (!target.ok()) return target.error();
    axes.push_back({given, *target});
    if (target->type != Target::Type::Pipeline) {
      // Check the values against the key's value in the file (a group's
      // first layer stands for the group).
      YAML::Node node =
          target->type == Target::Type::Node
              ? At(root, target->path)
              : At(At(root, {{"model"}, {"layers"}})[static_cast<size_t>(target->item)],
                   target->path);
      for (const std::string& v : given.values) {
        Result<std::string> r = Resolve(given.key, target->kind, node.Scalar(), v);
        if (!r.ok()) return r.error();
      }
      continue;
    }
    const std::string& k = target->pipeline_key;
    const std::optional<int>& flag =
        k == "stages" ? cli.stages
                      : (k == "microbatches"
                             ? cli.microbatches
                             : (k == "virtual_stages" ? cli.virtual_stages : cli.microbatch_group));
    if (flag) {
      std::string dashed = k;
      std::replace(dashed.begin(), dashed.end(), '_', '-');
      return VaryError(given.key,
                       "expected it varied or set, not both; got "
                       "--" +
                           dashed + " too");
    }
  }

  // The pipeline integer of `key` in the base config (g: its effective
  // default p when unset), for factors.
  auto pipeline_base = [&](const std::string& key) {
    if (key == "stages") return base->shape.p;
    if (key == "microbatches") return base->shape.m;
    if (key == "virtual_stages") return base->shape.v;
    return base->schedule_params.group > 0 ? base->schedule_params.group : base->shape.p;
  };

  // Every variant: its edits and overrides, validated by loading it with
  // gpipe, v = 1 and no strategy (which accept any shape), so that a bad
  // value is an error of the command line, not a row.
  struct Variant {
    std::vector<Edit> edits;
    CliOverrides overrides;
    std::optional<int> v;  // pipeline.virtual_stages when varied
  };
  std::vector<Variant> variants;
  std::vector<size_t> index(axes.size(), 0);
  bool any = true;
  for (const Axis& a : axes) any = any && !a.given.values.empty();
  while (any) {
    Variant var;
    var.overrides = cli;
    std::vector<std::string> values;
    for (size_t k = 0; k < axes.size(); ++k) {
      const Axis& a = axes[k];
      const std::string& value = a.given.values[index[k]];
      values.push_back(value);
      if (a.target.type != Target::Type::Pipeline) {
        var.edits.push_back({&a, value});
        continue;
      }
      const std::string& pk = a.target.pipeline_key;
      Result<std::string> r =
          Resolve(a.given.key, Kind::Int, std::to_string(pipeline_base(pk)), value);
      if (!r.ok()) return r.error();
      std::int64_t n = 0;
      WholeInt(*r, n);
      if (n < 1 || n > 1'000'000) {
        return VaryError(a.given.key,
                         "expected a positive integer (at most "
                         "1000000) or a factor like x2; got '" +
                             value + "'");
      }
      const int x = static_cast<int>(n);
      if (pk == "stages") var.overrides.stages = x;
      if (pk == "microbatches") var.overrides.microbatches = x;
      if (pk == "virtual_stages") var.v = x;
      if (pk == "microbatch_group") var.overrides.microbatch_group = x;
    }
    Result<YAML::Node> doc = VariantDocument(text, var.edits, Strip::kSplitAndRecompute);
    if (!doc.ok()) return doc.error();
    CliOverrides neutral = var.overrides;
    neutral.schedule = "gpipe";
    neutral.virtual_stages = 1;
    Result<RunConfig> check = ParseConfigYaml(*doc, filename, neutral);
    if (!check.ok()) {
      return Error{"--vary", "--vary " + DescribeVariant(request.vary, values) + ": " +
                                 check.error().message};
    }
    table.variants.push_back(values);
    variants.push_back(std::move(var));
    // Next in the cross product; the last axis varies fastest.
    size_t k = axes.size();
    while (k > 0) {
      --k;
      if (++index[k] < axes[k].given.values.size()) break;
      index[k] = 0;
      if (k == 0) any = false;
    }
    if (axes.empty()) any = false;
  }

  // The v interleaved runs with when not varied.
  const bool has_interleaved = std::find(table.schedules.begin(), table.schedules.end(),
                                         "interleaved") != table.schedules.end();
  bool v_varied = false;
  for (const Axis& a : axes) {
    v_varied = v_varied || a.target.pipeline_key == "virtual_stages";
  }
  int interleaved_v = base->shape.v;
  if (has_interleaved && !v_varied && !cli.virtual_stages && base->shape.v < 2) {
    interleaved_v = 2;
    table.notes.push_back(
        "interleaved runs with v = 2: the config has v = 1 (choose v with "
        "--virtual-stages or --vary pipeline.virtual_stages=2,4)");
  }
  const bool has_flat = std::any_of(table.schedules.begin(), table.schedules.end(),
                                    [](const std::string& s) { return s != "interleaved"; });
  if (has_flat && (v_varied || cli.virtual_stages || base->shape.v > 1)) {
    table.notes.push_back(
        "gpipe and 1f1b run with v = 1 (pipeline.virtual_stages applies to "
        "interleaved only)");
  }

  const YAML::Node strategy = At(root, {{"strategy"}});
  const bool has_split = strategy.IsMap() &&
                         (strategy["layers_per_chunk"] || strategy["layout"] || strategy["offset"]);
  const bool has_recompute = strategy.IsMap() && strategy["recompute"];

  const bool v_flag = cli.virtual_stages.has_value();
  Engine engine;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const Variant& var = variants[vi];
    for (const std::string& schedule : table.schedules) {
      CompareRow row;
      row.variant = static_cast<int>(vi);
      row.schedule = schedule;
      CliOverrides ov = var.overrides;
      ov.schedule = schedule;
      const int v = schedule != "interleaved"
                        ? 1
                        : var.v.value_or(cli.virtual_stages.value_or(interleaved_v));
      ov.virtual_stages = v;
      row.v = v;
      row.p = ov.stages.value_or(base->shape.p);
      row.m = ov.microbatches.value_or(base->shape.m);

      // The config's strategy, else the even split with its recompute, else
      // without.
      std::vector<Strip> levels = {Strip::kNone};
      if (has_split) levels.push_back(Strip::kSplit);
      if (has_recompute) levels.push_back(Strip::kSplitAndRecompute);
      std::optional<RunConfig> config;
      Error error;
      for (size_t l = 0; l < levels.size(); ++l) {
        Result<YAML::Node> doc = VariantDocument(text, var.edits, levels[l]);
        if (!doc.ok()) return doc.error();
        Result<RunConfig> c = ParseConfigYaml(*doc, filename, ov);
        if (c.ok()) {
          config = std::move(*c);
          row.config_recompute = has_recompute && levels[l] != Strip::kSplitAndRecompute;
          row.config_split = has_split && levels[l] == Strip::kNone;
          row.split_fallback = has_split && levels[l] != Strip::kNone;
          row.recompute_fallback = levels[l] == Strip::kSplitAndRecompute;
          break;
        }
        error = c.error();
        if (!IsStrategyError(c.error())) {
          // Refused after falling back: say from which strategy.
          row.split_fallback = has_split && levels[l] != Strip::kNone;
          row.recompute_fallback = levels[l] == Strip::kSplitAndRecompute;
          break;
        }
        if (l == 0) row.fallback_reason = Reason(filename, c.error(), v_flag);
      }
      if (!row.split_fallback && !row.recompute_fallback) {
        row.fallback_reason.clear();
      }
      if (!config) {
        row.reason = Reason(filename, error, v_flag);
        table.rows.push_back(std::move(row));
        continue;
      }
      row.layers_per_stage = config->strategy.layers_per_stage;
      row.recomputed_layers = static_cast<int>(
          std::count_if(config->strategy.recompute.begin(), config->strategy.recompute.end(),
                        [](std::uint8_t r) { return r != 0; }));
      row.group =
          EffectiveGroup(ScheduleChoice{schedule, v, config->schedule_params}, row.p, row.m);
      Result<PreparedRun> run = Prepare(*config);
      if (!run.ok()) {
        row.reason = Reason(filename, run.error(), v_flag);
        table.rows.push_back(std::move(row));
        continue;
      }
      SimOptions options;
      options.record_ops = true;
      const SimResult r = engine.Run(run->spec, run->program, options);
      row.ran = true;
      row.outcome = r.outcome;
      row.iteration_time = r.makespan;
      row.bubble_fraction = r.bubble_fraction();
      for (size_t d = 0; d < r.devices.size(); ++d) {
        const DeviceStats& ds = r.devices[d];
        row.idle_total += ds.idle;
        if (ds.peak_memory > row.max_peak || (d == 0 && ds.peak_memory == row.max_peak)) {
          row.max_peak = ds.peak_memory;
          row.max_peak_rank = static_cast<int>(d);
          row.max_peak_capacity = ds.capacity;
        }
        if (ds.oom) row.oom_ranks.push_back(static_cast<int>(d));
      }
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

namespace {

// The row's time when it ran to completion, else 0.
Nanos Time(const CompareRow& row) {
  return row.ran && row.outcome != Outcome::Deadlock ? row.iteration_time : 0;
}

double Ratio(Nanos reference, Nanos time) {
  if (reference <= 0 || time <= 0) return 0;
  return static_cast<double>(reference) / static_cast<double>(time);
}

}  // namespace

double SpeedupVsFirstSchedule(const CompareTable& table, size_t i) {
  const size_t per = table.schedules.size();
  return Ratio(Time(table.rows[i - i % per]), Time(table.rows[i]));
}

double SpeedupVsFirstVariant(const CompareTable& table, size_t i) {
  const size_t per = table.schedules.size();
  return Ratio(Time(table.rows[i % per]), Time(table.rows[i]));
}

namespace {

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::Ok:
      return "ok";
    case Outcome::OutOfMemory:
      return "out_of_memory";
    case Outcome::Deadlock:
      return "deadlock";
  }
  return "?";
}

std::string Ranks(const std::vector<int>& ranks, const char* sep) {
  std::string out;
  for (size_t k = 0; k < ranks.size(); ++k) {
    if (k > 0) out += sep;
    out += std::to_string(ranks[k]);
  }
  return out;
}

double Gib(Bytes b) { return static_cast<double>(b) / (1 << 30); }

// Mean idle time per rank, in ms.
double BubbleMsPerRank(const CompareRow& row) {
  return row.p > 0 ? ToMs(row.idle_total) / row.p : 0.0;
}

// "config", "even" (the config has no split) or "even" after a fallback.
const char* SplitName(const CompareRow& row) { return row.config_split ? "config" : "even"; }

// The note a row refers to: why it was refused, or why the config's
// strategy was not used; empty when none.
std::string RowNote(const CompareRow& row) {
  if (!row.ran && (row.split_fallback || row.recompute_fallback)) {
    return "rejected with the even split too (the config's does not apply: " + row.fallback_reason +
           "): " + row.reason;
  }
  if (!row.ran) return "rejected: " + row.reason;
  if (row.recompute_fallback) {
    return "even split without recompute: the config's strategy does not "
           "apply (" +
           row.fallback_reason + ")";
  }
  if (row.split_fallback) {
    return std::string(row.config_recompute ? "even split (the config's recompute kept)"
                                            : "even split") +
           ": the config's split does not apply (" + row.fallback_reason + ")";
  }
  return "";
}

std::string Speedup(double x) { return x > 0 ? fmt::format("{:.2f}x", x) : std::string("-"); }

}  // namespace

std::string FormatCompareText(const CompareTable& table) {
  std::string out = fmt::format("ppb-sim compare: {} | {} schedule{} x {} variant{}\n",
                                table.model_name.empty() ? table.config_path : table.model_name,
                                table.schedules.size(), table.schedules.size() == 1 ? "" : "s",
                                table.variants.size(), table.variants.size() == 1 ? "" : "s");
  out += "\n";

  // Notes: the table's, then one number per distinct row note.
  std::vector<std::string> notes;
  std::map<std::string, size_t> note_number;
  auto note_ref = [&](const std::string& note) {
    auto [it, inserted] = note_number.emplace(note, notes.size() + 1);
    if (inserted) notes.push_back(note);
    return it->second;
  };

  struct Column {
    std::string header;
    bool left = false;
    std::vector<std::string> cells;
  };
  std::vector<Column> cols;
  for (const VaryAxis& a : table.vary) cols.push_back({a.key, true, {}});
  const size_t first = cols.size();
  const bool varied = !table.vary.empty();
  const std::string first_schedule = table.schedules.empty() ? std::string() : table.schedules[0];
  const std::string first_variant = table.vary.size() == 1 ? table.variants[0][0] : "first variant";
  for (const auto& [header, left] :
       std::vector<std::pair<std::string, bool>>{{"schedule", true},
                                                 {"v", false},
                                                 {"split", true},
                                                 {"iteration ms", false},
                                                 {"vs " + first_schedule, false},
                                                 {"vs " + first_variant, false},
                                                 {"bubble %", false},
                                                 {"bubble ms", false},
                                                 {"max peak memory", false},
                                                 {"rank", false},
                                                 {"OOM", true}}) {
    if (!varied && header == "vs " + first_variant) continue;
    cols.push_back({header, left, {}});
  }

  for (size_t i = 0; i < table.rows.size(); ++i) {
    const CompareRow& row = table.rows[i];
    for (size_t k = 0; k < table.vary.size(); ++k) {
      cols[k].cells.push_back(table.variants[row.variant][k]);
    }
    std::vector<std::string> cells = {row.schedule, std::to_string(row.v)};
    const std::string note = RowNote(row);
    const std::string ref = note.empty() ? "" : fmt::format(" [{}]", note_ref(note));
    if (!row.ran) {
      cells.push_back("rejected" + ref);
    } else {
      cells.push_back(SplitName(row) + ref);
      cells.push_back(fmt::format("{:.3f}", ToMs(row.iteration_time)));
      cells.push_back(Speedup(SpeedupVsFirstSchedule(table, i)));
      if (varied) cells.push_back(Speedup(SpeedupVsFirstVariant(table, i)));
      cells.push_back(fmt::format("{:.2f}", 100.0 * row.bubble_fraction));
      cells.push_back(fmt::format("{:.3f}", BubbleMsPerRank(row)));
      cells.push_back(FormatBytes(row.max_peak));
      cells.push_back(std::to_string(row.max_peak_rank));
      cells.push_back(row.outcome == Outcome::Deadlock
                          ? std::string("deadlock")
                          : (row.oom_ranks.empty()
                                 ? std::string("no")
                                 : "yes (rank " + Ranks(row.oom_ranks, ",") + ")"));
    }
    cells.resize(cols.size() - first);
    for (size_t c = 0; c < cells.size(); ++c) {
      cols[first + c].cells.push_back(cells[c]);
    }
  }

  auto line = [&](auto cell) {
    std::string s;
    for (size_t c = 0; c < cols.size(); ++c) {
      size_t width = cols[c].header.size();
      for (const std::string& x : cols[c].cells) width = std::max(width, x.size());
      const std::string& x = cell(c);
      s += "  ";
      s += cols[c].left ? fmt::format("{:<{}}", x, width) : fmt::format("{:>{}}", x, width);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  out += line([&](size_t c) -> const std::string& { return cols[c].header; });
  for (size_t i = 0; i < table.rows.size(); ++i) {
    out += line([&](size_t c) -> const std::string& { return cols[c].cells[i]; });
  }
  out += "\n";
  out +=
      "  split: config = the config's layers_per_chunk/layout/offset; even = "
      "the even split (the config's recompute kept unless noted)\n";
  out +=
      "  bubble ms: mean idle time per rank; max peak memory: the largest "
      "peak of any rank, on the rank shown\n";
  if (!table.notes.empty() || !notes.empty()) out += "\nnotes:\n";
  for (const std::string& n : table.notes) out += "  " + n + "\n";
  for (size_t k = 0; k < notes.size(); ++k) {
    out += fmt::format("  [{}] {}\n", k + 1, notes[k]);
  }
  return out;
}

std::string FormatCompareJson(const CompareTable& table) {
  Json j;
  j["schema"] = "ppb.compare/1";
  j["config"] = table.config_path;
  j["model"] = table.model_name;
  j["schedules"] = table.schedules;
  Json vary = Json::array();
  for (const VaryAxis& a : table.vary) {
    vary.push_back({{"key", a.key}, {"values", a.values}});
  }
  j["vary"] = vary;
  j["notes"] = table.notes;
  Json rows = Json::array();
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const CompareRow& row = table.rows[i];
    Json r;
    Json variant = Json::object();
    for (size_t k = 0; k < table.vary.size(); ++k) {
      variant[table.vary[k].key] = table.variants[row.variant][k];
    }
    r["variant"] = variant;
    r["schedule"] = row.schedule;
    r["stages"] = row.p;
    r["virtual_stages"] = row.v;
    r["microbatches"] = row.m;
    r["status"] = row.ran ? "ok" : "rejected";
    if (!row.ran) r["reason"] = row.reason;
    r["split_fallback"] = row.split_fallback;
    r["recompute_fallback"] = row.recompute_fallback;
    if (!row.fallback_reason.empty()) r["fallback_reason"] = row.fallback_reason;
    if (!row.ran) {
      rows.push_back(r);
      continue;
    }
    if (row.schedule == "interleaved") r["microbatch_group"] = row.group;
    r["split"] = SplitName(row);
    r["config_recompute"] = row.config_recompute;
    r["layers_per_stage"] = row.layers_per_stage;
    r["recomputed_layers"] = row.recomputed_layers;
    r["outcome"] = OutcomeName(row.outcome);
    r["iteration_time_ns"] = row.iteration_time;
    r["iteration_time_ms"] = ToMs(row.iteration_time);
    const double s1 = SpeedupVsFirstSchedule(table, i);
    r["speedup_vs_first_schedule"] = s1 > 0 ? Json(s1) : Json(nullptr);
    const double s2 = SpeedupVsFirstVariant(table, i);
    r["speedup_vs_first_variant"] = s2 > 0 ? Json(s2) : Json(nullptr);
    r["bubble_fraction"] = row.bubble_fraction;
    r["idle_time_ns"] = row.idle_total;
    r["bubble_ms_per_rank"] = BubbleMsPerRank(row);
    r["max_peak_memory_bytes"] = row.max_peak;
    r["max_peak_memory_gib"] = Gib(row.max_peak);
    r["max_peak_rank"] = row.max_peak_rank;
    r["max_peak_capacity_bytes"] = row.max_peak_capacity;
    r["oom"] = !row.oom_ranks.empty();
    r["oom_ranks"] = row.oom_ranks;
    rows.push_back(r);
  }
  j["rows"] = rows;
  return j.dump(2) + "\n";
}

namespace {

// One RFC 4180 field: quoted when it holds a comma, a quote or a line break.
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string FormatCompareCsv(const CompareTable& table) {
  std::vector<std::string> header;
  for (const VaryAxis& a : table.vary) header.push_back(a.key);
  for (const char* h : {"schedule",
                        "stages",
                        "virtual_stages",
                        "microbatches",
                        "microbatch_group",
                        "status",
                        "reason",
                        "split",
                        "split_fallback",
                        "recompute_fallback",
                        "fallback_reason",
                        "outcome",
                        "iteration_time_ns",
                        "iteration_time_ms",
                        "speedup_vs_first_schedule",
                        "speedup_vs_first_variant",
                        "bubble_fraction",
                        "idle_time_ns",
                        "bubble_ms_per_rank",
                        "max_peak_memory_bytes",
                        "max_peak_memory_gib",
                        "max_peak_rank",
                        "max_peak_capacity_bytes",
                        "oom",
                        "oom_ranks"}) {
    header.emplace_back(h);
  }
  auto line = [](const std::vector<std::string>& fields) {
    std::string s;
    for (size_t k = 0; k < fields.size(); ++k) {
      if (k > 0) s += ',';
      s += CsvField(fields[k]);
    }
    return s + "\r\n";
  };
  std::string out = line(header);
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const CompareRow& row = table.rows[i];
    std::vector<std::string> f = table.variants[row.variant];
    const bool ran = row.ran;
    auto speed = [](double x) { return x > 0 ? fmt::format("{:.6f}", x) : std::string(); };
    for (std::string x :
         {row.schedule, std::to_string(row.p), std::to_string(row.v), std::to_string(row.m),
          ran && row.schedule == "interleaved" ? std::to_string(row.group) : std::string(),
          std::string(ran ? "ok" : "rejected"), row.reason, std::string(ran ? SplitName(row) : ""),
          std::string(row.split_fallback ? "true" : "false"),
          std::string(row.recompute_fallback ? "true" : "false"), row.fallback_reason,
          std::string(ran ? OutcomeName(row.outcome) : "")}) {
      f.push_back(std::move(x));
    }
    if (ran) {
      for (std::string x :
           {std::to_string(row.iteration_time), fmt::format("{:.6f}", ToMs(row.iteration_time)),
            speed(SpeedupVsFirstSchedule(table, i)), speed(SpeedupVsFirstVariant(table, i)),
            fmt::format("{:.6f}", row.bubble_fraction), std::to_string(row.idle_total),
            fmt::format("{:.6f}", BubbleMsPerRank(row)), std::to_string(row.max_peak),
            fmt::format("{:.3f}", Gib(row.max_peak)), std::to_string(row.max_peak_rank),
            std::to_string(row.max_peak_capacity),
            std::string(row.oom_ranks.empty() ? "false" : "true"), Ranks(row.oom_ranks, " ")}) {
        f.push_back(std::move(x));
      }
    }
    f.resize(header.size());
    out += line(f);
  }
  return out;
}

}  // namespace ppb
