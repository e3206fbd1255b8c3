// --vary: the flag's syntax (ParseVary, apps/input/vary.h) and the variant
// documents of apps/input/vary_document.h.
#include "apps/input/vary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/units.h"
#include "apps/input/vary_document.h"

namespace ppb::vary_detail {

bool WholeInt(std::string_view s, std::int64_t& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return !s.empty() && ec == std::errc() && ptr == end;
}

namespace {

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
    case Kind::Text:
      return "a value";
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

}  // namespace

Error VaryError(const std::string& key, const std::string& message) {
  return Error{"--vary", "--vary: " + key + ": " + message};
}

Result<std::string> Resolve(const std::string& key, Kind kind, const std::string& base,
                            const std::string& given) {
  if (kind == Kind::Text) return given;
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
    case Kind::Text:
      ok = true;
      break;
  }
  if (!ok) return VaryError(key, want + "; got '" + given + "'");
  return given;
}

namespace {

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

}  // namespace

// The node at `steps` under `node` (an undefined node when absent). A
// handle into the document: assigning a string to it edits the document.
// (Handles are rebound with reset(): yaml-cpp's operator= would overwrite
// the node they refer to.)
YAML::Node At(const YAML::Node& node, const std::vector<Step>& steps, size_t first) {
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

namespace {

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

}  // namespace

namespace {

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

}  // namespace

std::string JoinComma(const std::vector<std::string>& xs) {
  return fmt::format("{}", fmt::join(xs, ", "));
}

namespace {

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

}  // namespace

Result<Target> ResolveTarget(const YAML::Node& root, const std::string& key, bool text_ok) {
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
    // hardware.gpu names a preset and training.fp8.recipe / format,
    // training.fp4.recipe a low-precision recipe: compare --vary takes them
    // as text too ("does FP8 pay off here").
    const bool text_key = key == "hardware.gpu" || key == "training.fp8.recipe" ||
                          key == "training.fp8.format" || key == "training.fp4.recipe";
    if (!kind && (text_ok || text_key)) kind = Kind::Text;
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
    // "model.layers" itself is the list, not a number.
    if (steps->size() == 2) return numeric(layers, Target{});
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

}  // namespace ppb::vary_detail

namespace ppb {

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

}  // namespace ppb
