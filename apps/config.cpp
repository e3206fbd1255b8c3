// The run config loader: YAML (configs/README-format.yaml) to RunConfig, with
// every error placed at the file line of the key it concerns.
//
// Errors leave this file as Error{key, message} where message is already the
// complete "file:line: key: expected; got given" text (FormatError).
#include "apps/config.h"

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
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "apps/hf_config.h"
#include "apps/sapp.h"
#include "apps/units.h"
#include "core/strategy.h"
#include "core/validate.h"

namespace ppb {
namespace {

// Returns the error of a failed Status or Result from the enclosing function.
#define PPB_RETURN_IF_ERROR(expr)                       \
  do {                                                  \
    if (auto ppb_status_ = (expr); !ppb_status_.ok()) { \
      return ppb_status_.error();                       \
    }                                                   \
  } while (0)

// Most layers a model may have after `repeat` expansion (guards memory).
constexpr int kMaxLayers = 100000;

// One entry of a YAML map, in file order.
struct Entry {
  std::string key;
  std::string path;  // full key, e.g. "model.layers[2].forward"
  YAML::Node value;
};
using Entries = std::vector<Entry>;

const Entry* Find(const Entries& entries, std::string_view key) {
  for (const Entry& e : entries) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

// How a value appears in "; got ..." when it is not what was expected.
std::string Given(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsScalar()) {
    return node.Scalar().empty() ? "an empty string" : node.Scalar();
  }
  if (node.IsSequence()) {
    return "a list of " + std::to_string(node.size());
  }
  return "a map";
}

std::string Join(std::initializer_list<std::string_view> words) {
  return fmt::format("{}", fmt::join(words, ", "));
}

std::string Join(const std::vector<std::string>& words) {
  return fmt::format("{}", fmt::join(words, ", "));
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// "chunk 1 of rank 2" for global stage s = chunk * p + rank.
std::string StageName(int s, int p) {
  return "chunk " + std::to_string(s / p) + " of rank " + std::to_string(s % p);
}

// The command-line flag that sets a config key, or empty.
std::string_view FlagFor(std::string_view key) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"pipeline.stages", "--stages"},
      {"pipeline.microbatches", "--microbatches"},
      {"pipeline.virtual_stages", "--virtual-stages"},
      {"pipeline.microbatch_group", "--microbatch-group"},
      {"pipeline.schedule", "--schedule"},
      {"pipeline.schedule_csv", "--schedule-csv"},
      {"search.schedules", "--schedules"},
      {"search.virtual_stages", "--virtual-stages-list"},
      {"search.microbatch_groups", "--microbatch-groups"},
      {"search.time_limit", "--time-limit"},
      {"search.node_limit", "--node-limit"},
      {"search.seed", "--seed"},
      {"search.threads", "--threads"},
      {"search.top", "--top"},
  };
  for (const auto& [k, flag] : kFlags) {
    if (k == key) return flag;
  }
  return {};
}

// The parent of a key path: "a.b[2]" -> "a.b", "a.b" -> "a", "a" -> "".
std::string ParentKey(const std::string& key) {
  if (!key.empty() && key.back() == ']') {
    const size_t open = key.rfind('[');
    if (open != std::string::npos) return key.substr(0, open);
  }
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? std::string() : key.substr(0, dot);
}

// Per-global-stage integers read from a [chunk][rank] list, a flat list by
// global stage, or one scalar for every stage; with the key path of each.
struct StageInts {
  std::vector<int> values;
  std::vector<std::string> paths;
};

// Parses one config. Holds the RunConfig under construction so that errors
// can be placed with the key lines recorded so far.
class Parser {
 public:
  Parser(std::string_view filename, const CliOverrides& cli) : cli_(cli) {
    cfg_.path = std::string(filename);
  }
  // Candidates mode: the model, cluster and pipeline of `base`; errors are
  // placed in `filename`.
  Parser(std::string_view filename, const CliOverrides& cli,
         const RunConfig& base)
      : cli_(cli), cfg_(base) {
    cfg_.path = std::string(filename);
    cfg_.key_lines.clear();
  }

  Result<RunConfig> Parse(std::string_view text) {
    return WithYaml<RunConfig>(
        text, [&](const YAML::Node& root) { return ParseNode(root); });
  }

  // The config of an already loaded YAML document (its marks give lines).
  Result<RunConfig> ParseNode(const YAML::Node& root) {
    try {
      PPB_RETURN_IF_ERROR(ParseRoot(root));
      return std::move(cfg_);
    } catch (const YAML::Exception& e) {
      return Error{"", At(e.mark) + ": must be readable YAML; got an error (" +
                           e.msg + ")"};
    }
  }

  Result<std::vector<RankCandidate>> Candidates(std::string_view text) {
    return WithYaml<std::vector<RankCandidate>>(
        text, [&](const YAML::Node& root) { return ParseCandidates(root); });
  }

 private:
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

  Error Fail(const std::string& key, const std::string& message) const {
    return Error{key, FormatError(cfg_, Error{key, message})};
  }

  // "file:line" of a mark ("file" when the mark has no line).
  std::string At(const YAML::Mark& mark) const {
    return mark.line < 0 ? cfg_.path
                         : cfg_.path + ":" + std::to_string(mark.line + 1);
  }

  void Mark(const std::string& path, const YAML::Mark& mark) {
    if (mark.line >= 0) cfg_.key_lines[path] = mark.line + 1;
  }

  // "pipeline.stages = 4" or "--stages 4", for messages about shapes.
  std::string StagesNote() const {
    const std::string p = std::to_string(cfg_.shape.p);
    std::string note = cli_.stages ? "--stages " + p : "pipeline.stages = " + p;
    if (cfg_.shape.v > 1) {
      const std::string v = std::to_string(cfg_.shape.v);
      if (!v_key_.empty()) {
        note += ", " + v_key_ + " = " + v;
      } else {
        note += cli_.virtual_stages ? ", --virtual-stages " + v
                                    : ", pipeline.virtual_stages = " + v;
      }
    }
    return note;
  }

  // ---- structure --------------------------------------------------------

  // The entries of the map `node` at `path`, recording each key's line.
  // Keys outside `allowed` (unless it is empty) and repeated keys are errors.
  Result<Entries> Map(const YAML::Node& node, const std::string& path,
                      std::initializer_list<std::string_view> allowed) {
    if (!node.IsMap()) {
      std::string expected = "must be a map";
      if (allowed.size() > 0) expected += " with keys " + Join(allowed);
      return Fail(path, expected + "; got " + Given(node));
    }
    Entries entries;
    for (const auto& kv : node) {
      const std::string prefix = path.empty() ? "" : path + ".";
      if (!kv.first.IsScalar()) {
        Mark(prefix + "?", kv.first.Mark());
        return Fail(prefix + "?",
                    "must be a plain key name; got " + Given(kv.first));
      }
      Entry e{kv.first.Scalar(), prefix + kv.first.Scalar(), kv.second};
      if (Find(entries, e.key) != nullptr) {
        const int first = cfg_.key_lines[e.path];
        Mark(e.path, kv.first.Mark());
        return Fail(e.path, "must be given once; got it again (first on line " +
                                std::to_string(first) + ")");
      }
      Mark(e.path, kv.first.Mark());
      if (allowed.size() > 0 &&
          std::find(allowed.begin(), allowed.end(), e.key) == allowed.end()) {
        return Fail(e.path, "unknown key; expected one of " + Join(allowed));
      }
      entries.push_back(std::move(e));
    }
    return entries;
  }

  // The items of the list `node` at `path` (item i at "path[i]"), recording
  // each item's line.
  Result<std::vector<Entry>> List(const YAML::Node& node,
                                  const std::string& path,
                                  std::string_view expected) {
    if (!node.IsSequence()) {
      return Fail(path,
                  "must be " + std::string(expected) + "; got " + Given(node));
    }
    std::vector<Entry> items;
    for (size_t i = 0; i < node.size(); ++i) {
      Entry e{std::to_string(i), path + "[" + std::to_string(i) + "]", node[i]};
      Mark(e.path, node[i].Mark());
      items.push_back(std::move(e));
    }
    return items;
  }

  // The items of the list `key` among `entries` (at `path`), which must be
  // given and non-empty; `noun` names its items ("layers").
  Result<std::vector<Entry>> RequiredList(const Entries& entries,
                                          std::string_view key,
                                          const std::string& path,
                                          const std::string& noun) {
    const Entry* list = Find(entries, key);
    if (list == nullptr) {
      return Fail(path, "must be given (a list of " + noun + "); got nothing");
    }
    Result<std::vector<Entry>> items =
        List(list->value, list->path, "a non-empty list of " + noun);
    if (!items.ok()) return items.error();
    if (items->empty()) {
      return Fail(list->path, "must be a non-empty list of " + noun +
                                  "; got an empty list");
    }
    return items;
  }

  // ---- scalars ----------------------------------------------------------

  // An integer in [min, max]; errors say "must be <expected>; got ...",
  // where `expected` states the range ("a positive integer" for [1, INT_MAX]:
  // a value above INT_MAX adds "(at most 2147483647)").
  Result<std::int64_t> Integer(const YAML::Node& node, const std::string& path,
                               std::int64_t min, std::int64_t max,
                               std::string_view expected) {
    const std::string want = "must be " + std::string(expected);
    if (!node.IsScalar()) return Fail(path, want + "; got " + Given(node));
    const std::string& s = node.Scalar();
    std::int64_t x = 0;
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, x);
    if (s.empty() || ec == std::errc::invalid_argument || ptr != end) {
      return Fail(path, want + "; got " + Given(node));
    }
    if (ec == std::errc::result_out_of_range || x > max) {
      const std::string note =
          max == INT_MAX ? " (at most " + std::to_string(max) + ")" : "";
      return Fail(path, want + note + "; got " + s);
    }
    if (x < min) return Fail(path, want + "; got " + s);
    return x;
  }

  Result<int> PositiveInt(const YAML::Node& node, const std::string& path) {
    Result<std::int64_t> r =
        Integer(node, path, 1, INT_MAX, "a positive integer");
    if (!r.ok()) return r.error();
    return static_cast<int>(*r);
  }

  Result<std::string> String(const YAML::Node& node, const std::string& path,
                             std::string_view expected) {
    if (!node.IsScalar() || node.Scalar().empty()) {
      return Fail(path,
                  "must be " + std::string(expected) + "; got " + Given(node));
    }
    return node.Scalar();
  }

  // The index of the value in `choices` (the value lowercased).
  Result<size_t> Choice(const YAML::Node& node, const std::string& path,
                        std::initializer_list<std::string_view> choices) {
    const std::string want = "must be one of " + Join(choices);
    if (!node.IsScalar()) return Fail(path, want + "; got " + Given(node));
    const std::string value = Lower(node.Scalar());
    size_t i = 0;
    for (std::string_view c : choices) {
      if (c == value) return i;
      ++i;
    }
    return Fail(path, want + "; got " + Given(node));
  }

  Result<bool> Bool(const YAML::Node& node, const std::string& path) {
    if (node.IsScalar()) {
      const std::string value = Lower(node.Scalar());
      if (value == "true") return true;
      if (value == "false") return false;
    }
    return Fail(path, "must be true or false; got " + Given(node));
  }

  Result<double> PositiveNumber(const YAML::Node& node,
                                const std::string& path) {
    const std::string want = "must be a positive number";
    if (!node.IsScalar()) return Fail(path, want + "; got " + Given(node));
    const std::string& s = node.Scalar();
    double x = 0;
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, x);
    if (s.empty() || ec != std::errc() || ptr != end || !std::isfinite(x) ||
        !(x > 0)) {
      return Fail(path, want + "; got " + Given(node));
    }
    return x;
  }

  // A unit value parsed by `parse`; positive or non-negative.
  template <class Parse>
  Result<std::int64_t> UnitValue(const YAML::Node& node,
                                 const std::string& path, Parse parse,
                                 std::string_view noun, bool positive) {
    if (!node.IsScalar()) {
      // Given() ("a map", "nothing") is never a number, so the parser's own
      // "must be a <noun> with a unit (...); got <given>" message results.
      return Fail(path, parse(Given(node)).error().message);
    }
    const std::string& text = node.Scalar();
    const size_t first = text.find_first_not_of(" \t");
    if (positive && first != std::string::npos && text[first] == '-') {
      return Fail(path,
                  "must be a positive " + std::string(noun) + "; got " + text);
    }
    Result<std::int64_t> r = parse(text);
    if (!r.ok()) return Fail(path, r.error().message);
    if (positive && *r == 0) {
      return Fail(path, "must be a positive " + std::string(noun) + "; got " +
                            node.Scalar());
    }
    return *r;
  }
  Result<Nanos> Duration(const YAML::Node& node, const std::string& path,
                         bool positive) {
    return UnitValue(node, path, ParseDuration, "duration", positive);
  }
  Result<Bytes> Size(const YAML::Node& node, const std::string& path,
                     bool positive) {
    return UnitValue(node, path, ParseBytes, "size", positive);
  }
  Result<BytesPerSec> Bandwidth(const YAML::Node& node,
                                const std::string& path) {
    return UnitValue(node, path, ParseBandwidth, "bandwidth", true);
  }

  // ---- sections ---------------------------------------------------------

  Status ParseRoot(const YAML::Node& root) {
    if (!root.IsDefined() || root.IsNull()) {
      return Error{"", cfg_.path +
                           ": must be a map with model, cluster, pipeline and "
                           "optional strategy and search; got an empty file"};
    }
    Result<Entries> top =
        Map(root, "", {"model", "cluster", "pipeline", "strategy", "search",
                       "training", "hardware"});
    if (!top.ok()) return top.error();
    // The pipeline first: the shapes of the other sections depend on p, v.
    const Entry* pipeline = Find(*top, "pipeline");
    PPB_RETURN_IF_ERROR(ParsePipeline(pipeline));
    const Entry* model = Find(*top, "model");
    if (model == nullptr) {
      return Fail("model", "must be given (a map with layers); got nothing");
    }
    PPB_RETURN_IF_ERROR(ParseModel(model->value, Find(*top, "training"),
                                   Find(*top, "hardware")));
    const Entry* cluster = Find(*top, "cluster");
    if (cluster == nullptr && !hardware_memory_) {
      return Fail("cluster", "must be given (a map with devices); got nothing");
    }
    PPB_RETURN_IF_ERROR(ParseCluster(cluster != nullptr
                                         ? cluster->value
                                         : YAML::Node(YAML::NodeType::Map)));
    PPB_RETURN_IF_ERROR(ParseStrategy(Find(*top, "strategy")));
    return ParseSearch(Find(*top, "search"));
  }

  // An integer of the pipeline section: from the command line, the file, or
  // the default (nullopt: required).
  Result<int> PipelineInt(const Entries& entries, std::string_view name,
                          std::optional<int> from_cli,
                          std::optional<int> default_value) {
    const std::string path = "pipeline." + std::string(name);
    if (from_cli) {
      cfg_.key_lines[path] = 0;
      if (*from_cli < 1) {
        return Fail(path, "must be a positive integer; got " +
                              std::to_string(*from_cli));
      }
      return *from_cli;
    }
    if (const Entry* e = Find(entries, name)) {
      return PositiveInt(e->value, path);
    }
    if (default_value) return *default_value;
    return Fail(path, "must be given (a positive integer); got nothing");
  }

  Status ParsePipeline(const Entry* section) {
    Entries e;
    if (section != nullptr) {
      Result<Entries> r =
          Map(section->value, "pipeline",
              {"stages", "microbatches", "virtual_stages", "schedule", "flavor",
               "microbatch_group", "communication", "schedule_csv"});
      if (!r.ok()) return r.error();
      e = std::move(*r);
    }
    Result<int> p = PipelineInt(e, "stages", cli_.stages, std::nullopt);
    if (!p.ok()) return p.error();
    Result<int> m =
        PipelineInt(e, "microbatches", cli_.microbatches, std::nullopt);
    if (!m.ok()) return m.error();
    Result<int> v = PipelineInt(e, "virtual_stages", cli_.virtual_stages, 1);
    if (!v.ok()) return v.error();
    Result<int> g =
        PipelineInt(e, "microbatch_group", cli_.microbatch_group, 0);
    if (!g.ok()) return g.error();
    if (static_cast<std::int64_t>(*p) * *v > kMaxLayers) {
      return Fail("pipeline.virtual_stages",
                  "must give at most " + std::to_string(kMaxLayers) +
                      " stages x virtual_stages; got " + std::to_string(*p) +
                      " x " + std::to_string(*v));
    }
    cfg_.shape.p = *p;
    cfg_.shape.m = *m;
    cfg_.shape.v = *v;
    cfg_.schedule_params.group = *g;

    if (const Entry* f = Find(e, "flavor")) {
      Result<size_t> i = Choice(f->value, f->path, {"megatron", "pytorch"});
      if (!i.ok()) return i.error();
      cfg_.schedule_params.flavor =
          *i == 0 ? Flavor::Megatron : Flavor::PyTorch;
    }
    if (const Entry* c = Find(e, "communication")) {
      Result<size_t> i = Choice(c->value, c->path, {"overlapped", "blocking"});
      if (!i.ok()) return i.error();
      cfg_.shape.comm = *i == 0 ? CommMode::Overlapped : CommMode::Blocking;
    }
    return ParseScheduleChoice(e);
  }

  // pipeline.schedule and pipeline.schedule_csv, with --schedule and
  // --schedule-csv (which implies schedule custom).
  Status ParseScheduleChoice(const Entries& e) {
    const std::vector<std::string> names = ScheduleNames(true);
    const std::string want = "must be one of " + Join(names);

    if (cli_.schedule) {
      cfg_.key_lines["pipeline.schedule"] = 0;
      cfg_.schedule = NormalizeSchedule(*cli_.schedule, true);
      if (cfg_.schedule.empty()) {
        return Fail("pipeline.schedule", want + "; got " + *cli_.schedule);
      }
    } else if (const Entry* s = Find(e, "schedule")) {
      Result<std::string> name = String(s->value, s->path, "a schedule name");
      if (!name.ok()) return Fail(s->path, want + "; got " + Given(s->value));
      cfg_.schedule = NormalizeSchedule(*name, true);
      if (cfg_.schedule.empty()) {
        return Fail(s->path, want + "; got " + *name);
      }
    }

    if (cli_.schedule_csv) {
      cfg_.key_lines["pipeline.schedule_csv"] = 0;
      if (cli_.schedule && cfg_.schedule != "custom") {
        return Fail("pipeline.schedule",
                    "must be custom when --schedule-csv is given; got " +
                        *cli_.schedule);
      }
      if (cli_.schedule_csv->empty()) {
        return Fail("pipeline.schedule_csv",
                    "must be a CSV file path; got an empty string");
      }
      cfg_.schedule = "custom";
      cfg_.schedule_csv = *cli_.schedule_csv;
      return Status();
    }
    const Entry* csv = Find(e, "schedule_csv");
    if (cfg_.schedule == "custom") {
      if (csv == nullptr) {
        return Fail("pipeline.schedule_csv",
                    "must be given for schedule custom (a torch schedule CSV, "
                    "relative to the config file); got nothing");
      }
      Result<std::string> path = String(csv->value, csv->path, "a file path");
      if (!path.ok()) return path.error();
      cfg_.schedule_csv = *path;
    } else if (csv != nullptr && !cli_.schedule) {
      return Fail(csv->path, "must only be given with schedule custom; got " +
                                 Given(csv->value) + " with schedule " +
                                 cfg_.schedule);
    }
    return Status();
  }

  // The registered schedule names, then "custom" if `with_custom`.
  static std::vector<std::string> ScheduleNames(bool with_custom) {
    std::vector<std::string> names;
    for (const ScheduleInfo& info : ScheduleRegistry()) {
      names.emplace_back(info.name);
    }
    if (with_custom) names.emplace_back("custom");
    return names;
  }

  // A schedule name as given (any case; torch's Interleaved1F1B is
  // interleaved) to its registry name, or "" when there is none.
  static std::string NormalizeSchedule(const std::string& given,
                                       bool with_custom) {
    std::string name = Lower(given);
    if (name == "interleaved1f1b") name = "interleaved";  // torch's name
    const std::vector<std::string> names = ScheduleNames(with_custom);
    return std::find(names.begin(), names.end(), name) == names.end()
               ? std::string()
               : name;
  }

  Status ParseModel(const YAML::Node& node, const Entry* training,
                    const Entry* hardware) {
    Result<Entries> e =
        Map(node, "model", {"name", "layers", "hf_config", "architecture",
                            "sapp_layers", "sapp_units"});
    if (!e.ok()) return e.error();
    if (const Entry* name = Find(*e, "name")) {
      Result<std::string> s = String(name->value, name->path, "a string");
      if (!s.ok()) return s.error();
      cfg_.model_name = *s;
    }
    const Entry* hf = Find(*e, "hf_config");
    const Entry* inline_arch = Find(*e, "architecture");
    if (hf != nullptr && inline_arch != nullptr) {
      return Fail(inline_arch->path,
                  "must not be given with model.hf_config (give the "
                  "architecture one way); got both");
    }
    if (const Entry* source = hf != nullptr ? hf : inline_arch) {
      for (std::string_view other : {"layers", "sapp_layers", "sapp_units"}) {
        if (const Entry* x = Find(*e, other)) {
          return Fail(x->path, "must not be given with " + source->path +
                                   " (the layers are derived from it); got "
                                   "both");
        }
      }
      return ParseDerivedModel(*source, training, hardware);
    }
    if (Find(*e, "sapp_layers") || Find(*e, "sapp_units")) {
      return ParseSappModel(*e);
    }
    for (const Entry* x : {training, hardware}) {
      if (x != nullptr) {
        return Fail(x->path,
                    "must only be given with model.hf_config or "
                    "model.architecture; got " +
                        Given(x->value) + " with model.layers");
      }
    }
    Result<std::vector<Entry>> items =
        RequiredList(*e, "layers", "model.layers", "layers");
    if (!items.ok()) return items.error();
    std::map<std::string, std::string> defined_by;  // name -> layer path
    for (const Entry& item : *items) {
      PPB_RETURN_IF_ERROR(ParseLayer(item, defined_by));
    }
    return Status();
  }

  // model.hf_config or model.architecture with the training and hardware
  // sections: the layers derived by the cost model (core/cost_model.h).
  Status ParseDerivedModel(const Entry& source, const Entry* training,
                           const Entry* hardware) {
    const bool from_json = source.key == "hf_config";
    Architecture arch;
    if (from_json) {
      Result<std::string> file =
          String(source.value, source.path, "a config.json path");
      if (!file.ok()) return file.error();
      std::filesystem::path json(*file);
      if (json.is_relative()) {
        json = std::filesystem::path(cfg_.path).parent_path() / json;
      }
      cfg_.hf_config = json.string();
      Result<Architecture> a = LoadHfConfig(cfg_.hf_config);
      if (!a.ok()) {
        return Fail(source.path,
                    "must be a readable HuggingFace config.json; " +
                        FormatHfError(cfg_.hf_config, a.error()));
      }
      arch = std::move(*a);
    } else {
      Result<Architecture> a = ParseArchitecture(source);
      if (!a.ok()) return a.error();
      arch = std::move(*a);
    }
    if (training == nullptr) {
      return Fail("training", "must be given with " + source.path +
                                  " (a map with seq_length, "
                                  "micro_batch_size, ...); got nothing");
    }
    if (hardware == nullptr) {
      return Fail("hardware", "must be given with " + source.path +
                                  " (a map with peak_tflops, ...); got "
                                  "nothing");
    }
    Result<Training> t = ParseTraining(*training);
    if (!t.ok()) return t.error();
    Result<Hardware> h = ParseHardware(*hardware);
    if (!h.ok()) return h.error();
    if (Status s = ValidateCostInputs(arch, *t, *h); !s.ok()) {
      // Keys of the YAML sections (training.tp, hardware.peak_tflops) map to
      // their lines; architecture.* keys come from the JSON file, or from
      // model.architecture when given inline.
      static const std::map<std::string, std::string> kYamlKeys = {
          {"training.seq", "training.seq_length"},
          {"training.micro_batch", "training.micro_batch_size"},
          {"training.tp", "training.tensor_parallel"},
          {"training.cp", "training.context_parallel"},
          {"training.ep", "training.expert_parallel"},
          {"training.dp", "training.data_parallel"},
          {"training.activation_bytes", "training.dtype"},
          {"hardware.peak_tflops", "hardware.peak_tflops"},
          {"hardware.achievable_fraction", "hardware.achievable_fraction"}};
      static const std::map<std::string, std::string> kInlineKeys = {
          {"architecture.hidden", "hidden_size"},
          {"architecture.layers", "num_layers"},
          {"architecture.heads", "num_attention_heads"},
          {"architecture.kv_heads", "num_key_value_heads"},
          {"architecture.head_dim", "head_dim"},
          {"architecture.ffn", "ffn_hidden_size"},
          {"architecture.vocab", "vocab_size"},
          {"architecture.top_k", "moe.top_k"},
          {"architecture.expert_ffn", "moe.expert_ffn_hidden_size"},
          {"architecture.v_head_dim", "mla.v_head_dim"}};
      auto it = kYamlKeys.find(s.error().key);
      if (it != kYamlKeys.end()) return Fail(it->second, s.error().message);
      if (!from_json) {
        auto in = kInlineKeys.find(s.error().key);
        return Fail(in != kInlineKeys.end()
                        ? "model.architecture." + in->second
                        : std::string("model.architecture"),
                    s.error().message);
      }
      return Fail(source.path, cfg_.hf_config + ": " + s.error().key + ": " +
                                   s.error().message);
    }
    cfg_.derived = DeriveLayers(arch, *t, *h);
    for (const DerivedLayer& d : cfg_.derived) cfg_.layers.push_back(d.layer);
    return Status();
  }

  // A non-negative (min 0) or positive (min 1) integer of an inline
  // architecture block; absent: `fallback`, or an error when none.
  Result<std::int64_t> ArchInt(const Entries& e, std::string_view key,
                               const std::string& parent, std::int64_t min,
                               std::optional<std::int64_t> fallback) {
    const std::string want =
        min == 0 ? "a non-negative integer" : "a positive integer";
    const Entry* x = Find(e, key);
    if (x == nullptr) {
      if (fallback) return *fallback;
      return Fail(parent + "." + std::string(key),
                  "must be given (" + want + "); got nothing");
    }
    return Integer(x->value, x->path, min, INT_MAX, want);
  }

  Result<bool> ArchBool(const Entries& e, std::string_view key,
                        bool fallback) {
    const Entry* x = Find(e, key);
    if (x == nullptr) return fallback;
    return Bool(x->value, x->path);
  }

  // model.architecture: the Architecture (core/architecture.h) written
  // inline, with Megatron-style key names (configs/README-format.yaml).
  Result<Architecture> ParseArchitecture(const Entry& section) {
    const std::string& path = section.path;
    Result<Entries> r =
        Map(section.value, path,
            {"hidden_size", "num_layers", "num_attention_heads",
             "num_key_value_heads", "head_dim", "ffn_hidden_size",
             "vocab_size", "tie_embeddings", "gated_mlp", "qkv_bias",
             "qk_norm", "norm", "learned_positions", "moe", "mla",
             "mtp_layers"});
    if (!r.ok()) return r.error();
    const Entries& e = *r;
    Architecture a;
#define PPB_ARCH(lhs, expr)          \
  do {                               \
    auto r_ = (expr);                \
    if (!r_.ok()) return r_.error(); \
    lhs = *r_;                       \
  } while (false)
    PPB_ARCH(a.hidden, ArchInt(e, "hidden_size", path, 1, std::nullopt));
    PPB_ARCH(a.layers, ArchInt(e, "num_layers", path, 1, std::nullopt));
    PPB_ARCH(a.heads, ArchInt(e, "num_attention_heads", path, 1, std::nullopt));
    PPB_ARCH(a.kv_heads, ArchInt(e, "num_key_value_heads", path, 1, a.heads));
    const Entry* mla = Find(e, "mla");
    if (!Find(e, "head_dim") && mla == nullptr && a.hidden % a.heads != 0) {
      return Fail(path + ".num_attention_heads",
                  "must divide hidden_size (" + std::to_string(a.hidden) +
                      ") when head_dim is not given; got " +
                      std::to_string(a.heads));
    }
    PPB_ARCH(a.head_dim, ArchInt(e, "head_dim", path, 1, a.hidden / a.heads));
    PPB_ARCH(a.ffn, ArchInt(e, "ffn_hidden_size", path, 1, 0));
    PPB_ARCH(a.vocab, ArchInt(e, "vocab_size", path, 1, std::nullopt));
    PPB_ARCH(a.tied_embeddings, ArchBool(e, "tie_embeddings", false));
    PPB_ARCH(a.gated_mlp, ArchBool(e, "gated_mlp", true));
    PPB_ARCH(a.qkv_bias, ArchBool(e, "qkv_bias", false));
    PPB_ARCH(a.qk_norm, ArchBool(e, "qk_norm", false));
    if (const Entry* n = Find(e, "norm")) {
      Result<size_t> i = Choice(n->value, n->path, {"rmsnorm", "layernorm"});
      if (!i.ok()) return i.error();
      a.layernorm_with_bias = *i == 1;
    }
    PPB_ARCH(a.learned_positions, ArchInt(e, "learned_positions", path, 0, 0));
    PPB_ARCH(a.mtp_layers, ArchInt(e, "mtp_layers", path, 0, 0));
    if (const Entry* moe = Find(e, "moe")) {
      Result<Entries> m =
          Map(moe->value, moe->path,
              {"num_experts", "top_k", "expert_ffn_hidden_size",
               "shared_ffn_hidden_size", "shared_expert_gate", "router_bias",
               "first_k_dense", "layer_freq", "sparse_step", "dense_layers"});
      if (!m.ok()) return m.error();
      const std::string& mp = moe->path;
      PPB_ARCH(a.experts, ArchInt(*m, "num_experts", mp, 1, std::nullopt));
      PPB_ARCH(a.top_k, ArchInt(*m, "top_k", mp, 1, std::nullopt));
      if (a.top_k > a.experts) {
        return Fail(mp + ".top_k", "must be at most moe.num_experts (" +
                                       std::to_string(a.experts) + "); got " +
                                       std::to_string(a.top_k));
      }
      PPB_ARCH(a.expert_ffn,
               ArchInt(*m, "expert_ffn_hidden_size", mp, 1, std::nullopt));
      PPB_ARCH(a.shared_ffn, ArchInt(*m, "shared_ffn_hidden_size", mp, 0, 0));
      PPB_ARCH(a.shared_expert_gate, ArchBool(*m, "shared_expert_gate", false));
      PPB_ARCH(a.router_bias, ArchBool(*m, "router_bias", false));
      PPB_ARCH(a.moe_layout.first_k_dense,
               ArchInt(*m, "first_k_dense", mp, 0, 0));
      PPB_ARCH(a.moe_layout.moe_layer_freq, ArchInt(*m, "layer_freq", mp, 1, 1));
      PPB_ARCH(a.moe_layout.decoder_sparse_step,
               ArchInt(*m, "sparse_step", mp, 1, 1));
      if (const Entry* d = Find(*m, "dense_layers")) {
        Result<std::vector<Entry>> items =
            List(d->value, d->path, "a list of decoder layer indices");
        if (!items.ok()) return items.error();
        for (const Entry& item : *items) {
          Result<std::int64_t> i =
              Integer(item.value, item.path, 0, a.layers - 1,
                      "a layer index in 0.." + std::to_string(a.layers - 1));
          if (!i.ok()) return i.error();
          a.moe_layout.mlp_only_layers.push_back(static_cast<int>(*i));
        }
      }
    }
    if (mla != nullptr) {
      Result<Entries> m =
          Map(mla->value, mla->path,
              {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
               "qk_rope_head_dim", "v_head_dim"});
      if (!m.ok()) return m.error();
      const std::string& mp = mla->path;
      PPB_ARCH(a.q_lora_rank, ArchInt(*m, "q_lora_rank", mp, 0, 0));
      PPB_ARCH(a.kv_lora_rank, ArchInt(*m, "kv_lora_rank", mp, 1, std::nullopt));
      PPB_ARCH(a.qk_nope_head_dim,
               ArchInt(*m, "qk_nope_head_dim", mp, 1, std::nullopt));
      PPB_ARCH(a.qk_rope_head_dim,
               ArchInt(*m, "qk_rope_head_dim", mp, 1, std::nullopt));
      PPB_ARCH(a.v_head_dim, ArchInt(*m, "v_head_dim", mp, 1, std::nullopt));
      if (const Entry* kv = Find(e, "num_key_value_heads")) {
        return Fail(kv->path,
                    "must not be given with model.architecture.mla (MLA gives "
                    "every head its own K and V); got " +
                        Given(kv->value));
      }
      a.kv_heads = a.heads;
    }
#undef PPB_ARCH
    if (a.heads % a.kv_heads != 0) {
      return Fail(path + ".num_key_value_heads",
                  "must divide num_attention_heads (" +
                      std::to_string(a.heads) + "); got " +
                      std::to_string(a.kv_heads));
    }
    return a;
  }

  // training: the parallel setup of one pipeline rank.
  Result<Training> ParseTraining(const Entry& section) {
    Result<Entries> r =
        Map(section.value, "training",
            {"seq_length", "micro_batch_size", "dtype", "tensor_parallel",
             "sequence_parallel", "context_parallel", "expert_parallel",
             "data_parallel", "distributed_optimizer", "optimizer"});
    if (!r.ok()) return r.error();
    const Entries& e = *r;
    Training t;
    struct IntField {
      std::string_view key;
      bool required;
      std::int64_t* out64;
      int* out;
    };
    for (const IntField& f :
         {IntField{"seq_length", true, &t.seq, nullptr},
          IntField{"micro_batch_size", false, &t.micro_batch, nullptr},
          IntField{"tensor_parallel", false, nullptr, &t.tp},
          IntField{"context_parallel", false, nullptr, &t.cp},
          IntField{"expert_parallel", false, nullptr, &t.ep},
          IntField{"data_parallel", false, nullptr, &t.dp}}) {
      const Entry* x = Find(e, f.key);
      if (x == nullptr) {
        if (!f.required) continue;
        return Fail("training." + std::string(f.key),
                    "must be given (a positive integer); got nothing");
      }
      Result<int> v = PositiveInt(x->value, x->path);
      if (!v.ok()) return v.error();
      if (f.out64 != nullptr) *f.out64 = *v;
      if (f.out != nullptr) *f.out = *v;
    }
    if (const Entry* x = Find(e, "dtype")) {
      Result<size_t> i = Choice(x->value, x->path, {"bf16", "fp16", "fp32"});
      if (!i.ok()) return i.error();
      t.activation_bytes = *i == 2 ? 4 : 2;
    }
    if (const Entry* x = Find(e, "sequence_parallel")) {
      Result<bool> b = Bool(x->value, x->path);
      if (!b.ok()) return b.error();
      t.sp = *b;
    }
    if (const Entry* x = Find(e, "distributed_optimizer")) {
      Result<bool> b = Bool(x->value, x->path);
      if (!b.ok()) return b.error();
      t.distributed_optimizer = *b;
    }
    if (const Entry* x = Find(e, "optimizer")) {
      // adamw keeps the same state as adam (m and v).
      Result<size_t> i = Choice(x->value, x->path, {"adam", "adamw", "sgd"});
      if (!i.ok()) return i.error();
      t.optimizer = *i == 2 ? Optimizer::Sgd : Optimizer::Adam;
    }
    return t;
  }

  // hardware: the compute rate of one device, and optionally its memory
  // and link: defaults of cluster.devices.memory and cluster.link (the
  // cluster keys, when given, win).
  Result<Hardware> ParseHardware(const Entry& section) {
    Result<Entries> r =
        Map(section.value, "hardware",
            {"peak_tflops", "achievable_fraction", "memory", "link"});
    if (!r.ok()) return r.error();
    Hardware h;
    if (const Entry* m = Find(*r, "memory")) {
      Result<Bytes> b = Size(m->value, m->path, true);
      if (!b.ok()) return b.error();
      h.memory_bytes = *b;
      hardware_memory_ = *b;
    }
    if (const Entry* l = Find(*r, "link")) {
      Result<Link> link = ParseLink(*l);
      if (!link.ok()) return link.error();
      hardware_link_ = *link;
    }
    const Entry* peak = Find(*r, "peak_tflops");
    if (peak == nullptr) {
      return Fail("hardware.peak_tflops",
                  "must be given (a positive number, TFLOP/s); got nothing");
    }
    Result<double> p = PositiveNumber(peak->value, peak->path);
    if (!p.ok()) return p.error();
    h.peak_tflops = *p;
    hardware_tflops_ = *p;
    if (const Entry* f = Find(*r, "achievable_fraction")) {
      Result<double> x = PositiveNumber(f->value, f->path);
      if (!x.ok()) return x.error();
      if (*x > 1) {
        return Fail(f->path, "must be a number in (0, 1]; got " +
                                 f->value.Scalar());
      }
      h.achievable_fraction = *x;
    }
    return h;
  }

  // model: {sapp_layers: FILE.json, sapp_units: {time: 1ms, memory: 1MiB}}
  // (apps/sapp.h); FILE is relative to the config's directory.
  Status ParseSappModel(const Entries& e) {
    if (const Entry* layers = Find(e, "layers")) {
      return Fail(layers->path, "must not be given with model.sapp_layers");
    }
    const Entry* file = Find(e, "sapp_layers");
    if (file == nullptr) {
      return Fail("model.sapp_layers",
                  "must be given with model.sapp_units (a SAPP layer JSON); "
                  "got nothing");
    }
    Result<std::string> name = String(file->value, file->path, "a file name");
    if (!name.ok()) return name.error();
    const Entry* units = Find(e, "sapp_units");
    if (units == nullptr) {
      return Fail("model.sapp_units",
                  "must be given (SAPP numbers carry no unit), e.g. "
                  "{time: 1ms, memory: 1MiB}; got nothing");
    }
    Result<Entries> u = Map(units->value, units->path, {"time", "memory"});
    if (!u.ok()) return u.error();
    const Entry* t = Find(*u, "time");
    const Entry* m = Find(*u, "memory");
    if (t == nullptr || m == nullptr) {
      return Fail(units->path + (t == nullptr ? ".time" : ".memory"),
                  "must be given (what one SAPP unit is, e.g. 1ms / 1MiB); "
                  "got nothing");
    }
    Result<std::int64_t> tv =
        UnitValue(t->value, t->path, ParseDuration, "duration", true);
    if (!tv.ok()) return tv.error();
    Result<std::int64_t> mv =
        UnitValue(m->value, m->path, ParseBytes, "size", true);
    if (!mv.ok()) return mv.error();
    std::filesystem::path fp(*name);
    if (fp.is_relative()) {
      fp = std::filesystem::path(cfg_.path).parent_path() / fp;
    }
    Result<std::vector<Layer>> layers =
        LoadSappLayers(fp.string(), SappUnits{*tv, *mv});
    if (!layers.ok()) {
      return Fail(file->path, "cannot be used: " + layers.error().message);
    }
    cfg_.layers = std::move(*layers);
    if (cfg_.model_name.empty()) cfg_.model_name = fp.stem().string();
    return Status();
  }

  // One entry of model.layers, appended to cfg_.layers (repeat expanded).
  Status ParseLayer(const Entry& item,
                    std::map<std::string, std::string>& defined_by) {
    const std::string& path = item.path;
    Result<Entries> er =
        Map(item.value, path,
            {"name", "kind", "repeat", "forward", "backward", "backward_input",
             "backward_weight", "static_memory", "activation", "workspace",
             "output", "recompute"});
    if (!er.ok()) return er.error();
    const Entries& e = *er;
    Layer layer;

    const Entry* name = Find(e, "name");
    if (name == nullptr) {
      return Fail(path + ".name",
                  "must be given (a unique layer name); got nothing");
    }
    Result<std::string> name_value = String(name->value, name->path, "a name");
    if (!name_value.ok()) return name_value.error();
    layer.name = *name_value;

    if (const Entry* kind = Find(e, "kind")) {
      Result<size_t> i =
          Choice(kind->value, kind->path,
                 {"embedding", "decoder", "moe", "head", "mtp", "other"});
      if (!i.ok()) return i.error();
      static constexpr LayerKind kKinds[] = {
          LayerKind::Embedding, LayerKind::Decoder, LayerKind::Moe,
          LayerKind::Head,      LayerKind::Mtp,     LayerKind::Other};
      layer.kind = kKinds[*i];
    }

    int repeat = 1;
    const Entry* repeat_entry = Find(e, "repeat");
    if (repeat_entry != nullptr) {
      Result<std::int64_t> r =
          Integer(repeat_entry->value, repeat_entry->path, 1, kMaxLayers,
                  "a positive integer up to " + std::to_string(kMaxLayers));
      if (!r.ok()) return r.error();
      repeat = static_cast<int>(*r);
      if (cfg_.layers.size() + repeat > static_cast<size_t>(kMaxLayers)) {
        return Fail(repeat_entry->path,
                    "must keep the model at most " +
                        std::to_string(kMaxLayers) + " layers; got " +
                        std::to_string(repeat) + " more after " +
                        std::to_string(cfg_.layers.size()));
      }
    }

    const Entry* forward = Find(e, "forward");
    if (forward == nullptr) {
      return Fail(path + ".forward",
                  "must be given (a positive duration); got nothing");
    }
    Result<Nanos> f = Duration(forward->value, forward->path, true);
    if (!f.ok()) return f.error();
    layer.forward = *f;
    PPB_RETURN_IF_ERROR(ParseBackward(e, path, layer));

    struct SizeField {
      std::string_view key;
      Bytes* out;
    };
    for (const SizeField& field :
         {SizeField{"static_memory", &layer.static_memory},
          SizeField{"activation", &layer.activation},
          SizeField{"workspace", &layer.workspace},
          SizeField{"output", &layer.output_bytes}}) {
      if (const Entry* x = Find(e, field.key)) {
        Result<Bytes> b = Size(x->value, x->path, false);
        if (!b.ok()) return b.error();
        *field.out = *b;
      }
    }
    if (const Entry* rc = Find(e, "recompute")) {
      PPB_RETURN_IF_ERROR(
          ParseLayerRecompute(*rc, Find(e, "activation"), layer));
    }

    for (int k = 0; k < repeat; ++k) {
      Layer copy = layer;
      if (repeat_entry != nullptr) copy.name += "." + std::to_string(k);
      auto [it, inserted] = defined_by.emplace(copy.name, path);
      if (!inserted) {
        return Fail(name->path,
                    "must be unique after repeat expansion; got " + copy.name +
                        ", also the name of a layer of " + it->second);
      }
      cfg_.layers.push_back(std::move(copy));
    }
    return Status();
  }

  // backward, or backward_input and backward_weight.
  Status ParseBackward(const Entries& e, const std::string& path,
                       Layer& layer) {
    const Entry* b = Find(e, "backward");
    const Entry* bi = Find(e, "backward_input");
    const Entry* bw = Find(e, "backward_weight");
    if (b != nullptr && (bi != nullptr || bw != nullptr)) {
      const Entry* other = bi != nullptr ? bi : bw;
      return Fail(other->path,
                  "must not be given with backward (give backward, or "
                  "backward_input and backward_weight); got both");
    }
    if (b != nullptr) {
      Result<Nanos> t = Duration(b->value, b->path, true);
      if (!t.ok()) return t.error();
      layer.backward_input = *t;
      return Status();
    }
    if (bi == nullptr && bw == nullptr) {
      return Fail(path + ".backward",
                  "must be given (a positive duration), or backward_input and "
                  "backward_weight; got nothing");
    }
    if (bi == nullptr) {
      return Fail(path + ".backward_input",
                  "must be given with backward_weight; got nothing");
    }
    if (bw == nullptr) {
      return Fail(path + ".backward_weight",
                  "must be given with backward_input; got nothing");
    }
    Result<Nanos> ti = Duration(bi->value, bi->path, true);
    if (!ti.ok()) return ti.error();
    Result<Nanos> tw = Duration(bw->value, bw->path, false);
    if (!tw.ok()) return tw.error();
    layer.backward_input = *ti;
    layer.backward_weight = *tw;
    layer.split_backward = true;
    return Status();
  }

  // A layer's `recompute: {mode: {activation, time}}`.
  Status ParseLayerRecompute(const Entry& rc, const Entry* activation,
                             Layer& layer) {
    Result<Entries> modes = Map(rc.value, rc.path, {});
    if (!modes.ok()) return modes.error();
    for (const Entry& mode : *modes) {
      if (Lower(mode.key) == "none") {
        return Fail(mode.path,
                    "must not be declared (\"none\" is always offered); got a "
                    "mode named " +
                        mode.key);
      }
      if (mode.key == "layers") {
        return Fail(mode.path,
                    "must not be named layers (strategy.recompute uses that "
                    "key for per-layer choices); got a mode named layers");
      }
      if (layer.recompute.size() >= 255) {
        return Fail(mode.path, "must be one of at most 255 modes; got more");
      }
      Result<Entries> fields =
          Map(mode.value, mode.path, {"activation", "time"});
      if (!fields.ok()) return fields.error();
      const Entry* act = Find(*fields, "activation");
      const Entry* time = Find(*fields, "time");
      if (act == nullptr) {
        return Fail(mode.path + ".activation",
                    "must be given (bytes kept per micro-batch); got nothing");
      }
      if (time == nullptr) {
        return Fail(
            mode.path + ".time",
            "must be given (extra time before the backward); got nothing");
      }
      RecomputeOption option;
      option.name = mode.key;
      Result<Bytes> a = Size(act->value, act->path, false);
      if (!a.ok()) return a.error();
      if (*a > layer.activation) {
        return Fail(act->path,
                    "must be at most the layer's activation (" +
                        (activation != nullptr ? activation->value.Scalar()
                                               : std::string("0B")) +
                        "); got " + act->value.Scalar());
      }
      option.retained_activation = *a;
      Result<Nanos> t = Duration(time->value, time->path, false);
      if (!t.ok()) return t.error();
      option.extra_time = *t;
      layer.recompute.push_back(std::move(option));
    }
    return Status();
  }

  // The devices and links of the cluster (p of each).
  Status ParseCluster(const YAML::Node& node) {
    Result<Entries> er =
        Map(node, "cluster",
            {"devices", "link", "links", "device_types", "nodes",
             "link_classes", "placement"});
    if (!er.ok()) return er.error();
    const Entries& e = *er;
    const int p = cfg_.shape.p;
    if (Find(e, "nodes") != nullptr || Find(e, "device_types") != nullptr) {
      return ParseTopology(e);
    }
    for (const char* key : {"link_classes", "placement"}) {
      if (const Entry* x = Find(e, key)) {
        return Fail(x->path,
                    "is only read with cluster.nodes and cluster.device_types "
                    "(a heterogeneous cluster); got it without them");
      }
    }

    const Entry* devices = Find(e, "devices");
    if (devices == nullptr && hardware_memory_) {
      Device d;
      d.memory_capacity = *hardware_memory_;
      cfg_.cluster.devices.assign(static_cast<size_t>(p), d);
    } else if (devices == nullptr) {
      return Fail("cluster.devices",
                  "must be given (a map, or a list of one device per rank, "
                  "or hardware.memory); got nothing");
    } else if (devices->value.IsSequence()) {
      Result<std::vector<Entry>> items =
          List(devices->value, devices->path, "");
      if (!items.ok()) return items.error();
      if (static_cast<int>(items->size()) != p) {
        return Fail(devices->path, "must list one device per rank (" +
                                       StagesNote() + "); got " +
                                       std::to_string(items->size()));
      }
      for (const Entry& item : *items) {
        Device d;
        PPB_RETURN_IF_ERROR(ParseDevice(item.value, item.path, d));
        cfg_.cluster.devices.push_back(d);
      }
    } else if (devices->value.IsMap()) {
      Result<Entries> fields =
          Map(devices->value, devices->path, {"memory", "speed", "overrides"});
      if (!fields.ok()) return fields.error();
      Device d;
      PPB_RETURN_IF_ERROR(ParseDeviceFields(*fields, devices->path, true, d));
      cfg_.cluster.devices.assign(static_cast<size_t>(p), d);
      if (const Entry* o = Find(*fields, "overrides")) {
        PPB_RETURN_IF_ERROR(RankOverrides(
            *o, {"rank", "memory", "speed"},
            [&](const Entries& f, const std::string& path, int rank) {
              return ParseDeviceFields(f, path, false,
                                       cfg_.cluster.devices[rank]);
            }));
      }
    } else {
      return Fail(devices->path,
                  "must be a map (every rank alike) or a list of one device "
                  "per rank; got " +
                      Given(devices->value));
    }

    // Default: hardware.link, else free (no latency, infinite bandwidth).
    Link link = hardware_link_.value_or(Link{});
    if (const Entry* l = Find(e, "link")) {
      Result<Link> given = ParseLink(*l);
      if (!given.ok()) return given.error();
      link = *given;
    }
    cfg_.cluster.links.assign(static_cast<size_t>(p), link);
    if (const Entry* ls = Find(e, "links")) {
      return RankOverrides(
          *ls, {"rank", "latency", "bandwidth"},
          [&](const Entries& fields, const std::string&, int rank) {
            return ParseLinkFields(fields, cfg_.cluster.links[rank]);
          });
    }
    return Status();
  }

  // A heterogeneous cluster (core/topology.h): device types, nodes listing
  // their devices by type name, the intra- and inter-node link classes and
  // the device of each rank (default: the devices in node order).
  Status ParseTopology(const Entries& e) {
    const int p = cfg_.shape.p;
    for (const char* key : {"devices", "link", "links"}) {
      if (const Entry* x = Find(e, key)) {
        return Fail(x->path,
                    "must not be given with cluster.nodes (devices come from "
                    "cluster.device_types and cluster.nodes, links from "
                    "cluster.link_classes)");
      }
    }
    const Entry* types = Find(e, "device_types");
    const Entry* nodes = Find(e, "nodes");
    if (types == nullptr || nodes == nullptr) {
      return Fail(types == nullptr ? "cluster.device_types" : "cluster.nodes",
                  "must be given with cluster." +
                      std::string(types == nullptr ? "nodes" : "device_types") +
                      "; got nothing");
    }
    Topology t;
    Result<std::vector<Entry>> titems =
        List(types->value, types->path, "a list of {name, speed or peak_tflops, memory}");
    if (!titems.ok()) return titems.error();
    if (titems->empty()) {
      return Fail(types->path, "must list at least one device type; got an empty list");
    }
    std::vector<std::optional<double>> tflops;
    for (const Entry& item : *titems) {
      Result<Entries> f = Map(item.value, item.path, {"name", "speed", "peak_tflops", "memory"});
      if (!f.ok()) return f.error();
      DeviceType dt;
      const Entry* name = Find(*f, "name");
      if (name == nullptr) return Fail(item.path + ".name", "must be given (a type name); got nothing");
      Result<std::string> n = String(name->value, name->path, "a type name");
      if (!n.ok()) return n.error();
      for (const DeviceType& other : t.types) {
        if (other.name == *n) return Fail(name->path, "must be unique; got '" + *n + "' again");
      }
      dt.name = *n;
      const Entry* speed = Find(*f, "speed");
      const Entry* peak = Find(*f, "peak_tflops");
      if ((speed == nullptr) == (peak == nullptr)) {
        return Fail(item.path + (speed ? ".peak_tflops" : ".speed"),
                    speed ? "must not be given with speed (give one)"
                          : "must be given (a relative speed), or peak_tflops; got neither");
      }
      if (speed != nullptr) {
        Result<double> x = PositiveNumber(speed->value, speed->path);
        if (!x.ok()) return x.error();
        dt.speed = *x;
        tflops.emplace_back();
      } else {
        Result<double> x = PositiveNumber(peak->value, peak->path);
        if (!x.ok()) return x.error();
        tflops.emplace_back(*x);
      }
      const Entry* mem = Find(*f, "memory");
      if (mem == nullptr && !hardware_memory_) {
        return Fail(item.path + ".memory", "must be given (a positive size, e.g. 80GiB); got nothing");
      }
      if (mem != nullptr) {
        Result<Bytes> b = Size(mem->value, mem->path, true);
        if (!b.ok()) return b.error();
        dt.memory_capacity = *b;
      } else {
        dt.memory_capacity = *hardware_memory_;
      }
      t.types.push_back(std::move(dt));
    }
    // peak_tflops is relative to the device the layer times are for:
    // hardware.peak_tflops with a cost model, else the first type that
    // gives peak_tflops (its layer times are then the model's).
    std::optional<double> ref = hardware_tflops_;
    for (size_t i = 0; i < tflops.size(); ++i) {
      if (!tflops[i]) continue;
      if (!ref) ref = tflops[i];
      t.types[i].speed = *tflops[i] / *ref;
    }

    Result<std::vector<Entry>> nitems =
        List(nodes->value, nodes->path, "a list of {name, devices}");
    if (!nitems.ok()) return nitems.error();
    if (nitems->empty()) return Fail(nodes->path, "must list at least one node; got an empty list");
    auto type_of = [&](const YAML::Node& v, const std::string& path) -> Result<int> {
      Result<std::string> n = String(v, path, "a device type name");
      if (!n.ok()) return n.error();
      for (size_t i = 0; i < t.types.size(); ++i) {
        if (t.types[i].name == *n) return static_cast<int>(i);
      }
      std::vector<std::string> names;
      for (const DeviceType& dt : t.types) names.push_back(dt.name);
      return Fail(path, "must name a type of cluster.device_types (" + Join(names) +
                            "); got '" + *n + "'");
    };
    for (const Entry& item : *nitems) {
      const int node = static_cast<int>(t.node_names.size());
      Result<Entries> f = Map(item.value, item.path, {"name", "devices"});
      if (!f.ok()) return f.error();
      std::string name = "node" + std::to_string(node);
      if (const Entry* n = Find(*f, "name")) {
        Result<std::string> s2 = String(n->value, n->path, "a node name");
        if (!s2.ok()) return s2.error();
        for (const std::string& other : t.node_names) {
          if (other == *s2) return Fail(n->path, "must be unique; got '" + *s2 + "' again");
        }
        name = *s2;
      }
      t.node_names.push_back(name);
      const Entry* devs = Find(*f, "devices");
      if (devs == nullptr) {
        return Fail(item.path + ".devices",
                    "must be given (a list of type names, or {type: count}); got nothing");
      }
      const size_t before = t.device_type.size();
      if (devs->value.IsSequence()) {
        Result<std::vector<Entry>> ds = List(devs->value, devs->path, "a list of type names");
        if (!ds.ok()) return ds.error();
        for (const Entry& d : *ds) {
          Result<int> ti = type_of(d.value, d.path);
          if (!ti.ok()) return ti.error();
          t.device_type.push_back(*ti);
          t.device_node.push_back(node);
        }
      } else if (devs->value.IsMap()) {
        Result<Entries> counts = Map(devs->value, devs->path, {});
        if (!counts.ok()) return counts.error();
        for (const Entry& c : *counts) {
          Result<int> ti = type_of(YAML::Node(c.key), c.path);
          if (!ti.ok()) return ti.error();
          Result<int> k = PositiveInt(c.value, c.path);
          if (!k.ok()) return k.error();
          for (int i = 0; i < *k; ++i) {
            t.device_type.push_back(*ti);
            t.device_node.push_back(node);
          }
        }
      } else {
        return Fail(devs->path, "must be a list of type names or a map {type: count}; got " +
                                    Given(devs->value));
      }
      if (t.device_type.size() == before) {
        return Fail(devs->path, "must hold at least one device; got none");
      }
    }
    if (t.num_devices() != p) {
      return Fail("cluster.nodes", "must hold one device per rank (" + StagesNote() +
                                       "); got " + std::to_string(t.num_devices()) +
                                       " devices");
    }

    // Link classes; absent ones are free (or hardware.link).
    t.intra_node = t.inter_node = hardware_link_.value_or(Link{});
    if (const Entry* lc = Find(e, "link_classes")) {
      Result<Entries> f = Map(lc->value, lc->path, {"intra_node", "inter_node"});
      if (!f.ok()) return f.error();
      for (const Entry& cls : *f) {
        Result<Link> link = ParseLink(cls);
        if (!link.ok()) return link.error();
        (cls.key == "intra_node" ? t.intra_node : t.inter_node) = *link;
      }
    }

    Placement placement(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) placement[r] = r;
    if (const Entry* pl = Find(e, "placement")) {
      Result<std::vector<Entry>> items =
          List(pl->value, pl->path, "a list of device numbers, one per rank");
      if (!items.ok()) return items.error();
      if (static_cast<int>(items->size()) != p) {
        return Fail(pl->path, "must give one device per rank (" + StagesNote() + "); got " +
                                  std::to_string(items->size()));
      }
      std::vector<int> rank_of(p, -1);
      for (int r = 0; r < p; ++r) {
        const Entry& item = (*items)[r];
        Result<std::int64_t> d = Integer(item.value, item.path, 0, p - 1,
                                         "a device number in [0, " + std::to_string(p - 1) +
                                             "] (devices are numbered in node order)");
        if (!d.ok()) return d.error();
        if (rank_of[*d] >= 0) {
          return Fail(item.path, "must name each device once; got device " +
                                     std::to_string(*d) + " again (rank " +
                                     std::to_string(rank_of[*d]) + ")");
        }
        rank_of[*d] = r;
        placement[r] = static_cast<int>(*d);
      }
    }
    cfg_.cluster = ClusterFor(t, placement);
    cfg_.topology = std::move(t);
    cfg_.placement = std::move(placement);
    return Status();
  }

  // A list of per-rank changes, each a map with `rank` (in [0, p), each rank
  // once) and other keys of `allowed`; calls apply(fields, path, rank).
  template <class Apply>
  Status RankOverrides(const Entry& list,
                       std::initializer_list<std::string_view> allowed,
                       Apply apply) {
    Result<std::vector<Entry>> items =
        List(list.value, list.path, "a list of {" + Join(allowed) + "}");
    if (!items.ok()) return items.error();
    std::map<int, std::string> seen;
    for (const Entry& item : *items) {
      Result<Entries> fields = Map(item.value, item.path, allowed);
      if (!fields.ok()) return fields.error();
      Result<int> rank = Rank(*fields, item.path, seen);
      if (!rank.ok()) return rank.error();
      PPB_RETURN_IF_ERROR(apply(*fields, item.path, *rank));
    }
    return Status();
  }

  // `rank` of an override entry: in [0, p) and not given before.
  Result<int> Rank(const Entries& fields, const std::string& path,
                   std::map<int, std::string>& seen) {
    const Entry* r = Find(fields, "rank");
    if (r == nullptr) {
      return Fail(path + ".rank", "must be given (0 .. " +
                                      std::to_string(cfg_.shape.p - 1) +
                                      "); got nothing");
    }
    Result<std::int64_t> rank =
        Integer(r->value, r->path, 0, cfg_.shape.p - 1,
                "a rank in 0 .. " + std::to_string(cfg_.shape.p - 1) + " (" +
                    StagesNote() + ")");
    if (!rank.ok()) return rank.error();
    const int k = static_cast<int>(*rank);
    auto [it, inserted] = seen.emplace(k, r->path);
    if (!inserted) {
      return Fail(r->path, "must name each rank once; got rank " +
                               std::to_string(k) + " again (also " +
                               it->second + ")");
    }
    return k;
  }

  // One entry of a devices list: memory required.
  Status ParseDevice(const YAML::Node& node, const std::string& path,
                     Device& d) {
    Result<Entries> fields = Map(node, path, {"memory", "speed"});
    if (!fields.ok()) return fields.error();
    return ParseDeviceFields(*fields, path, true, d);
  }

  Status ParseDeviceFields(const Entries& fields, const std::string& path,
                           bool memory_required, Device& d) {
    if (const Entry* m = Find(fields, "memory")) {
      Result<Bytes> b = Size(m->value, m->path, true);
      if (!b.ok()) return b.error();
      d.memory_capacity = *b;
    } else if (memory_required && hardware_memory_) {
      d.memory_capacity = *hardware_memory_;
    } else if (memory_required) {
      return Fail(path + ".memory",
                  "must be given (a positive size, e.g. 80GiB); got nothing");
    }
    if (const Entry* s = Find(fields, "speed")) {
      Result<double> x = PositiveNumber(s->value, s->path);
      if (!x.ok()) return x.error();
      d.speed = *x;
    }
    return Status();
  }

  // A link map {latency (default 0), bandwidth (required)}.
  Result<Link> ParseLink(const Entry& entry) {
    Result<Entries> fields = Map(entry.value, entry.path, {"latency", "bandwidth"});
    if (!fields.ok()) return fields.error();
    if (Find(*fields, "bandwidth") == nullptr) {
      return Fail(entry.path + ".bandwidth",
                  "must be given (a positive bandwidth); got nothing");
    }
    Link link;
    PPB_RETURN_IF_ERROR(ParseLinkFields(*fields, link));
    return link;
  }

  Status ParseLinkFields(const Entries& fields, Link& link) {
    if (const Entry* l = Find(fields, "latency")) {
      Result<Nanos> t = Duration(l->value, l->path, false);
      if (!t.ok()) return t.error();
      link.latency = *t;
    }
    if (const Entry* b = Find(fields, "bandwidth")) {
      Result<BytesPerSec> bw = Bandwidth(b->value, b->path);
      if (!bw.ok()) return bw.error();
      link.bandwidth = *bw;
    }
    return Status();
  }

  // ---- strategy ---------------------------------------------------------

  // Reads per-stage integers >= min: [v][p] lists, a flat list of p*v, or
  // (allow_scalar) one integer for every stage.
  Result<StageInts> ReadStageInts(const Entry& entry, std::int64_t min,
                                  bool allow_scalar) {
    const int p = cfg_.shape.p, v = cfg_.shape.v;
    const std::string item_want =
        min == 0 ? "a non-negative integer" : "an integer";
    StageInts out;
    const YAML::Node& node = entry.value;
    if (allow_scalar && node.IsScalar()) {
      Result<std::int64_t> x =
          Integer(node, entry.path, min, INT_MAX, item_want);
      if (!x.ok()) return x.error();
      out.values.assign(static_cast<size_t>(p) * v, static_cast<int>(*x));
      out.paths.assign(static_cast<size_t>(p) * v, entry.path);
      return out;
    }
    const std::string want =
        "must be a list of " + std::to_string(v) + " list" +
        (v > 1 ? "s" : "") + " of " + std::to_string(p) +
        " integers ([chunk][rank], " + StagesNote() + ") or a flat list of " +
        std::to_string(p * v) + (allow_scalar ? ", or one integer" : "");
    if (!node.IsSequence()) {
      return Fail(entry.path, want + "; got " + Given(node));
    }
    Result<std::vector<Entry>> items = List(node, entry.path, "");
    if (!items.ok()) return items.error();
    const bool nested = !items->empty() && (*items)[0].value.IsSequence();
    std::vector<Entry> scalars;
    if (nested) {
      if (static_cast<int>(items->size()) != v) {
        return Fail(entry.path, want + "; got a list of " +
                                    std::to_string(items->size()) + " lists");
      }
      for (const Entry& row : *items) {
        Result<std::vector<Entry>> cells = List(row.value, row.path, "a list");
        if (!cells.ok() || static_cast<int>(cells->size()) != p) {
          return Fail(row.path, "must be a list of " + std::to_string(p) +
                                    " integers, one per rank (" + StagesNote() +
                                    "); got " + Given(row.value));
        }
        scalars.insert(scalars.end(), cells->begin(), cells->end());
      }
    } else {
      if (static_cast<int>(items->size()) != p * v) {
        return Fail(entry.path, want + "; got " + Given(node));
      }
      scalars = std::move(*items);
    }
    for (const Entry& cell : scalars) {
      Result<std::int64_t> x =
          Integer(cell.value, cell.path, min, INT_MAX, item_want);
      if (!x.ok()) return x.error();
      out.values.push_back(static_cast<int>(*x));
      out.paths.push_back(cell.path);
    }
    return out;
  }

  // The optional strategy section (absent or empty: the even split).
  Status ParseStrategy(const Entry* section) {
    Entries e;
    if (section != nullptr && !section->value.IsNull()) {
      Result<Entries> r = Map(section->value, "strategy",
                              {"layers_per_chunk", "layout", "offset",
                               "allow_empty_chunks", "recompute"});
      if (!r.ok()) return r.error();
      e = std::move(*r);
    }
    return ParseStrategyEntries(e, "model.layers");
  }

  // The strategy keys among `e` (the entries of the map at strategy_path_)
  // into cfg_.strategy and cfg_.allow_empty_chunks, for cfg_.shape. Errors
  // about a default even split that leaves a chunk empty name `even_key`.
  Status ParseStrategyEntries(const Entries& e, const std::string& even_key) {
    if (const Entry* a = Find(e, "allow_empty_chunks")) {
      Result<bool> b = Bool(a->value, a->path);
      if (!b.ok()) return b.error();
      cfg_.allow_empty_chunks = *b;
    }
    const Entry* given = nullptr;
    for (const Entry& x : e) {
      if (x.key != "layers_per_chunk" && x.key != "layout" &&
          x.key != "offset") {
        continue;
      }
      if (given != nullptr) {
        return Fail(
            x.path,
            "must not be given with " + strategy_path_ + "." + given->key +
                " (give one of layers_per_chunk, layout, offset); got both");
      }
      given = &x;
    }
    if (given == nullptr) {
      PPB_RETURN_IF_ERROR(EvenSplit(even_key));
    } else if (given->key == "layers_per_chunk") {
      PPB_RETURN_IF_ERROR(LayersPerChunk(*given));
    } else if (given->key == "layout") {
      PPB_RETURN_IF_ERROR(Layout(*given));
    } else {
      PPB_RETURN_IF_ERROR(Offset(*given));
    }
    cfg_.strategy.recompute.assign(cfg_.layers.size(), 0);
    if (const Entry* rc = Find(e, "recompute")) {
      PPB_RETURN_IF_ERROR(ParseRecompute(*rc));
    }
    return Status();
  }

  Status EvenSplit(const std::string& key) {
    const int p = cfg_.shape.p, v = cfg_.shape.v;
    cfg_.strategy = EvenStrategy(cfg_.layers, p, v);
    if (cfg_.allow_empty_chunks) return Status();
    for (int s = 0; s < p * v; ++s) {
      if (cfg_.strategy.layers_per_stage[s] == 0) {
        return Fail(key, "must fill all " + std::to_string(p * v) +
                             " stages (" + StagesNote() +
                             ") for the default even split; got " +
                             std::to_string(cfg_.layers.size()) +
                             " layers, which leave " + StageName(s, p) +
                             " empty (give " + strategy_path_ +
                             ".layers_per_chunk or set " + strategy_path_ +
                             ".allow_empty_chunks)");
      }
    }
    return Status();
  }

  Status LayersPerChunk(const Entry& entry) {
    const int p = cfg_.shape.p;
    Result<StageInts> counts = ReadStageInts(entry, 0, false);
    if (!counts.ok()) return counts.error();
    std::int64_t total = 0;
    for (size_t s = 0; s < counts->values.size(); ++s) {
      const int c = counts->values[s];
      if (c == 0 && !cfg_.allow_empty_chunks) {
        return Fail(counts->paths[s],
                    "must be positive (" + StageName(static_cast<int>(s), p) +
                        " would be empty; set " + strategy_path_ +
                        ".allow_empty_chunks to allow it); got 0");
      }
      total += c;
    }
    if (total != static_cast<std::int64_t>(cfg_.layers.size())) {
      std::string sum;
      for (int c : counts->values) {
        if (!sum.empty()) sum += '+';
        sum += std::to_string(c);
      }
      return Fail(entry.path,
                  "must add up to the model's " +
                      std::to_string(cfg_.layers.size()) +
                      " layers (after repeat); got " + std::to_string(total) +
                      " (" + sum + ")" +
                      (total < static_cast<std::int64_t>(cfg_.layers.size())
                           ? ", which would drop layers"
                           : ""));
    }
    cfg_.strategy.layers_per_stage = std::move(counts->values);
    return Status();
  }

  Status Layout(const Entry& entry) {
    const int p = cfg_.shape.p, v = cfg_.shape.v;
    Result<std::string> text =
        String(entry.value, entry.path, "a Megatron layout string");
    if (!text.ok()) return text.error();
    Result<std::vector<int>> counts =
        ParseMegatronLayout(*text, cfg_.layers, p, v);
    if (!counts.ok()) {
      std::string message = counts.error().message;
      if (cli_.stages || cli_.virtual_stages) {
        message += " (" + StagesNote() + ")";
      }
      return Fail(entry.path, message);
    }
    if (!cfg_.allow_empty_chunks) {
      for (int s = 0; s < p * v; ++s) {
        if ((*counts)[s] == 0) {
          return Fail(
              entry.path,
              "must give every stage a layer (set " + strategy_path_ +
                  ".allow_empty_chunks to allow empty ones); got stage " +
                  std::to_string(s) + " (" + StageName(s, p) + ") empty in \"" +
                  *text + "\"");
        }
      }
    }
    cfg_.strategy.layers_per_stage = std::move(*counts);
    return Status();
  }

  // MindFormers offsets: stage s holds L / (p*v) + offset[s] of the L body
  // layers (those between the leading embedding layers and the trailing
  // head / MTP layers, which stay on the first and the last stage).
  Status Offset(const Entry& entry) {
    const int p = cfg_.shape.p, v = cfg_.shape.v, stages = p * v;
    Result<StageInts> offset = ReadStageInts(entry, INT_MIN, true);
    if (!offset.ok()) return offset.error();
    const Pinned pin = PinnedLayers(cfg_.layers);
    const std::int64_t body =
        static_cast<std::int64_t>(cfg_.layers.size()) - pin.lead - pin.tail;
    const std::int64_t base = body / stages, remainder = body % stages;
    std::int64_t sum = 0;
    for (int x : offset->values) sum += x;
    if (sum != remainder) {
      return Fail(entry.path,
                  "must add up to " + std::to_string(remainder) + " (the " +
                      std::to_string(body) +
                      " decoder layers mod p*v = " + std::to_string(stages) +
                      ", " + StagesNote() + "); got " + std::to_string(sum));
    }
    std::vector<int> counts(static_cast<size_t>(stages));
    for (int s = 0; s < stages; ++s) {
      const std::int64_t c = base + offset->values[s];
      if (c < 0) {
        return Fail(offset->paths[s],
                    "must be at least -" + std::to_string(base) + " (" +
                        StageName(s, p) + " gets " + std::to_string(base) +
                        " + offset decoder layers); got " +
                        std::to_string(offset->values[s]));
      }
      counts[s] = static_cast<int>(c);
    }
    counts.front() += pin.lead;
    counts.back() += pin.tail;
    if (!cfg_.allow_empty_chunks) {
      for (int s = 0; s < stages; ++s) {
        if (counts[s] == 0) {
          return Fail(offset->paths[s],
                      "must leave " + StageName(s, p) +
                          " at least one layer (set " + strategy_path_ +
                          ".allow_empty_chunks to allow empty chunks); got " +
                          std::to_string(offset->values[s]) + " (" +
                          std::to_string(base) + " + offset = 0)");
        }
      }
    }
    cfg_.strategy.layers_per_stage = std::move(counts);
    return Status();
  }

  // strategy.recompute: per-mode "first N layers of each stage" lists in file
  // order, then the per-layer choices of `layers`.
  Status ParseRecompute(const Entry& rc) {
    Result<Entries> modes = Map(rc.value, rc.path, {});
    if (!modes.ok()) return modes.error();
    std::vector<std::string> offered;
    for (const Layer& l : cfg_.layers) {
      for (const RecomputeOption& o : l.recompute) {
        if (std::find(offered.begin(), offered.end(), o.name) ==
            offered.end()) {
          offered.push_back(o.name);
        }
      }
    }
    const std::string offered_list =
        offered.empty() ? std::string("none") : Join(offered);
    const std::vector<int>& per_stage = cfg_.strategy.layers_per_stage;
    const int p = cfg_.shape.p;

    for (const Entry& mode : *modes) {
      if (mode.key == "layers") continue;
      if (std::find(offered.begin(), offered.end(), mode.key) ==
          offered.end()) {
        return Fail(mode.path,
                    "must name a recompute mode some layer offers (" +
                        offered_list + ") or be layers; got " + mode.key);
      }
      std::vector<int> counts;
      if (mode.value.IsScalar() && (Lower(mode.value.Scalar()) == "true" ||
                                    Lower(mode.value.Scalar()) == "false")) {
        // MindFormers' bool: every layer (true) or none.
        counts = per_stage;
        if (Lower(mode.value.Scalar()) == "false") {
          counts.assign(per_stage.size(), 0);
        }
      } else {
        Result<StageInts> n = ReadStageInts(mode, 0, true);
        if (!n.ok()) return n.error();
        for (size_t s = 0; s < per_stage.size(); ++s) {
          if (n->values[s] > per_stage[s]) {
            return Fail(n->paths[s],
                        "must be at most the " + std::to_string(per_stage[s]) +
                            " layers of stage " + std::to_string(s) + " (" +
                            StageName(static_cast<int>(s), p) + "); got " +
                            std::to_string(n->values[s]));
          }
        }
        counts = std::move(n->values);
      }
      Status s = ApplyFirstNRecompute(cfg_.layers, per_stage, counts, mode.key,
                                      cfg_.strategy.recompute);
      if (!s.ok()) return Fail(mode.path, s.error().message);
    }

    const Entry* layers = Find(*modes, "layers");
    if (layers == nullptr) return Status();
    Result<Entries> choices = Map(layers->value, layers->path, {});
    if (!choices.ok()) return choices.error();
    for (const Entry& choice : *choices) {
      size_t i = 0;
      while (i < cfg_.layers.size() && cfg_.layers[i].name != choice.key) ++i;
      if (i == cfg_.layers.size()) {
        return Fail(choice.path,
                    "must name a layer of the model (after repeat, e.g. " +
                        cfg_.layers.back().name + "); got " + choice.key);
      }
      const Layer& l = cfg_.layers[i];
      std::vector<std::string> modes_of_layer = {"none"};
      for (const RecomputeOption& o : l.recompute) {
        modes_of_layer.push_back(o.name);
      }
      const std::string want = "must be a recompute mode " + l.name +
                               " offers (" + Join(modes_of_layer) + ")";
      if (!choice.value.IsScalar()) {
        return Fail(choice.path, want + "; got " + Given(choice.value));
      }
      const std::string& name = choice.value.Scalar();
      auto it = std::find(modes_of_layer.begin(), modes_of_layer.end(), name);
      if (it == modes_of_layer.end()) {
        return Fail(choice.path, want + "; got " + Given(choice.value));
      }
      cfg_.strategy.recompute[i] =
          static_cast<std::uint8_t>(it - modes_of_layer.begin());
    }
    return Status();
  }

  // ---- search -------------------------------------------------------------

  // The optional search section; the CLI's search values replace the file's.
  Status ParseSearch(const Entry* section) {
    Entries e;
    if (section != nullptr && !section->value.IsNull()) {
      Result<Entries> r =
          Map(section->value, "search",
              {"schedules", "virtual_stages", "microbatch_groups", "time_limit",
               "node_limit", "seed", "threads", "top", "device_order"});
      if (!r.ok()) return r.error();
      e = std::move(*r);
    }
    SearchSettings& out = cfg_.search;
    PPB_RETURN_IF_ERROR(SearchSchedules(e));
    const std::int64_t max_v = kMaxLayers / cfg_.shape.p;
    PPB_RETURN_IF_ERROR(SearchIntList(
        e, "virtual_stages", cli_.virtual_stages_list, max_v,
        "a positive integer up to " + std::to_string(max_v) + " (" +
            std::to_string(kMaxLayers) + " stages / " + StagesNote() + ")",
        out.virtual_stages));
    PPB_RETURN_IF_ERROR(
        SearchIntList(e, "microbatch_groups", cli_.microbatch_groups, INT_MAX,
                      "a positive integer", out.microbatch_groups));

    auto positive = [&](const Entry& x) {
      return PositiveInt(x.value, x.path);
    };
    PPB_RETURN_IF_ERROR(SearchValue(
        e, "time_limit", cli_.time_limit, out.time_limit,
        [&](const Entry& x) { return Duration(x.value, x.path, false); }));
    PPB_RETURN_IF_ERROR(SearchValue(
        e, "node_limit", cli_.node_limit, out.node_limit, [&](const Entry& x) {
          return Integer(x.value, x.path, 1, INT64_MAX, "a positive integer");
        }));
    PPB_RETURN_IF_ERROR(
        SearchValue(e, "seed", cli_.seed, out.seed, [&](const Entry& x) {
          return Integer(x.value, x.path, 0, INT64_MAX,
                         "a non-negative integer");
        }));
    PPB_RETURN_IF_ERROR(
        SearchValue(e, "threads", cli_.threads, out.threads, positive));
    PPB_RETURN_IF_ERROR(SearchValue(e, "top", cli_.top, out.top, positive));
    if (const Entry* x = Find(e, "device_order")) {
      Result<size_t> i = Choice(x->value, x->path, {"search", "given"});
      if (!i.ok()) return i.error();
      if (!cfg_.topology) {
        return Fail(x->path, "needs a heterogeneous cluster (cluster.nodes and "
                             "cluster.device_types); got a cluster without nodes");
      }
      out.search_device_order = *i == 0;
    }
    return Status();
  }

  // search.<name> into `out`: the command line's value (its key recorded at
  // line 0) or the file's, read by read(entry) -> Result; `out` keeps its
  // default when neither is given.
  template <class T, class Read>
  Status SearchValue(const Entries& e, std::string_view name,
                     const std::optional<T>& cli, T& out, Read read) {
    if (cli) {
      cfg_.key_lines["search." + std::string(name)] = 0;
      out = *cli;
      return Status();
    }
    const Entry* x = Find(e, name);
    if (x == nullptr) return Status();
    auto value = read(*x);
    if (!value.ok()) return value.error();
    out = static_cast<T>(*value);
    return Status();
  }

  // search.schedules (or --schedules): registered names, no repeats.
  Status SearchSchedules(const Entries& e) {
    const std::string want =
        "must be one of " + Join(ScheduleNames(false)) +
        " (a custom schedule fixes the op order of one split)";
    std::vector<std::string>& out = cfg_.search.schedules;
    std::vector<std::pair<std::string, std::string>> given;  // (name, path)
    if (cli_.schedules) {
      cfg_.key_lines["search.schedules"] = 0;
      for (const std::string& name : *cli_.schedules) {
        given.emplace_back(name, "search.schedules");
      }
    } else if (const Entry* list = Find(e, "schedules")) {
      Result<std::vector<Entry>> items =
          List(list->value, list->path, "a list of schedule names");
      if (!items.ok()) return items.error();
      for (const Entry& item : *items) {
        Result<std::string> name = String(item.value, item.path, "a name");
        if (!name.ok())
          return Fail(item.path, want + "; got " + Given(item.value));
        given.emplace_back(*name, item.path);
      }
    } else {
      return Status();
    }
    if (given.empty()) {
      return Fail("search.schedules",
                  "must list at least one schedule; got an empty list");
    }
    for (const auto& [name, path] : given) {
      const std::string normal = NormalizeSchedule(name, false);
      if (normal.empty()) return Fail(path, want + "; got " + name);
      if (std::find(out.begin(), out.end(), normal) != out.end()) {
        return Fail(path,
                    "must name each schedule once; got " + normal + " again");
      }
      out.push_back(normal);
    }
    return Status();
  }

  // A list of distinct integers in [1, max] at search.<name>, from the
  // command line (`cli`) or the file.
  Status SearchIntList(const Entries& e, std::string_view name,
                       const std::optional<std::vector<int>>& cli,
                       std::int64_t max, const std::string& item_want,
                       std::vector<int>& out) {
    const std::string key = "search." + std::string(name);
    std::vector<std::pair<std::int64_t, std::string>> given;  // (value, path)
    if (cli) {
      cfg_.key_lines[key] = 0;
      for (int x : *cli) given.emplace_back(x, key);
    } else if (const Entry* list = Find(e, name)) {
      Result<std::vector<Entry>> items =
          List(list->value, list->path, "a list of positive integers");
      if (!items.ok()) return items.error();
      for (const Entry& item : *items) {
        Result<std::int64_t> x =
            Integer(item.value, item.path, 1, max, item_want);
        if (!x.ok()) return x.error();
        given.emplace_back(*x, item.path);
      }
    } else {
      return Status();
    }
    if (given.empty()) {
      return Fail(key, "must list at least one value; got an empty list");
    }
    for (const auto& [x, path] : given) {
      if (x < 1 || x > max) {
        return Fail(path,
                    "must be " + item_want + "; got " + std::to_string(x));
      }
      if (std::find(out.begin(), out.end(), x) != out.end()) {
        return Fail(path, "must list each value once; got " +
                              std::to_string(x) + " again");
      }
      out.push_back(static_cast<int>(x));
    }
    return Status();
  }

  // ---- candidates (ppb-sim rank) -----------------------------------------

  Result<std::vector<RankCandidate>> ParseCandidates(const YAML::Node& root) {
    if (!root.IsDefined() || root.IsNull()) {
      return Error{"", cfg_.path +
                           ": must be a map with candidates (a list of "
                           "strategies); got an empty file"};
    }
    Result<Entries> top = Map(root, "", {"candidates"});
    if (!top.ok()) return top.error();
    Result<std::vector<Entry>> items =
        RequiredList(*top, "candidates", "candidates", "strategies");
    if (!items.ok()) return items.error();
    const RunConfig base = cfg_;
    std::vector<RankCandidate> out;
    std::map<std::string, std::string> named;  // name -> candidate path
    for (size_t i = 0; i < items->size(); ++i) {
      const Entry& item = (*items)[i];
      cfg_.shape = base.shape;
      cfg_.allow_empty_chunks = base.allow_empty_chunks;
      cfg_.strategy = Strategy();
      v_key_.clear();
      strategy_path_ = item.path;
      Result<RankCandidate> c = ParseCandidate(item, base, i);
      if (!c.ok()) return c.error();
      auto [it, inserted] = named.emplace(c->name, item.path);
      if (!inserted) {
        return Fail(item.path + ".name", "must be unique; got " + c->name +
                                             ", also the name of " +
                                             it->second);
      }
      out.push_back(std::move(*c));
    }
    return out;
  }

  // One candidate: its pipeline choice, then its strategy for that v.
  Result<RankCandidate> ParseCandidate(const Entry& item, const RunConfig& base,
                                       size_t index) {
    Result<Entries> er = Map(item.value, item.path,
                             {"name", "schedule", "virtual_stages",
                              "microbatch_group", "layers_per_chunk", "layout",
                              "offset", "allow_empty_chunks", "recompute"});
    if (!er.ok()) return er.error();
    const Entries& e = *er;
    RankCandidate c;
    c.line = cfg_.key_lines[item.path];
    c.name = "candidate " + std::to_string(index + 1);
    if (const Entry* name = Find(e, "name")) {
      Result<std::string> s = String(name->value, name->path, "a name");
      if (!s.ok()) return s.error();
      c.name = *s;
    }
    c.schedule = base.schedule;
    const Entry* schedule = Find(e, "schedule");
    if (schedule != nullptr) {
      const std::string want = "must be one of " + Join(ScheduleNames(false));
      Result<std::string> s =
          String(schedule->value, schedule->path, "a schedule name");
      if (!s.ok())
        return Fail(schedule->path, want + "; got " + Given(schedule->value));
      c.schedule = NormalizeSchedule(*s, false);
      if (c.schedule.empty()) return Fail(schedule->path, want + "; got " + *s);
    } else if (c.schedule == "custom") {
      return Fail(item.path + ".schedule",
                  "must be given when the config's schedule is custom (one "
                  "of " +
                      Join(ScheduleNames(false)) + "); got nothing");
    }
    c.v = base.shape.v;
    if (const Entry* v = Find(e, "virtual_stages")) {
      const std::int64_t max_v = kMaxLayers / cfg_.shape.p;
      Result<std::int64_t> x =
          Integer(v->value, v->path, 1, max_v,
                  "a positive integer up to " + std::to_string(max_v));
      if (!x.ok()) return x.error();
      c.v = static_cast<int>(*x);
      v_key_ = v->path;
    } else if (schedule != nullptr && c.schedule != "interleaved") {
      c.v = 1;
    }
    c.params = base.schedule_params;
    if (const Entry* g = Find(e, "microbatch_group")) {
      Result<int> x = PositiveInt(g->value, g->path);
      if (!x.ok()) return x.error();
      c.params.group = *x;
    }
    cfg_.shape.v = c.v;
    Status ok =
        CheckSchedule(c.schedule, cfg_.shape.p, c.v, cfg_.shape.m, c.params);
    if (!ok.ok()) {
      // The generator names pipeline keys; the candidate sets them.
      std::string key = item.path;
      const std::string& gen_key = ok.error().key;
      if (gen_key == "pipeline.virtual_stages") {
        key = Find(e, "virtual_stages") ? item.path + ".virtual_stages"
              : Find(e, "schedule")     ? item.path + ".schedule"
                                        : item.path;
      } else if (gen_key == "pipeline.microbatch_group" &&
                 Find(e, "microbatch_group") != nullptr) {
        key = item.path + ".microbatch_group";
      }
      return Fail(key, "schedule " + c.schedule + " with v = " +
                           std::to_string(c.v) + ": " + ok.error().message);
    }
    PPB_RETURN_IF_ERROR(ParseStrategyEntries(e, item.path));
    c.strategy = cfg_.strategy;
    c.allow_empty_chunks = cfg_.allow_empty_chunks;
    return c;
  }

  const CliOverrides& cli_;
  RunConfig cfg_;
  // Where strategy keys live, for messages: "strategy", or
  // "candidates[i]" when parsing a candidates file.
  std::string strategy_path_ = "strategy";
  // The key that set the v in use when it is not pipeline.virtual_stages
  // (a candidate's virtual_stages); empty otherwise.
  std::string v_key_;
  // hardware.memory and hardware.link: the defaults of
  // cluster.devices.memory and cluster.link when those are absent.
  std::optional<Bytes> hardware_memory_;
  std::optional<Link> hardware_link_;
  std::optional<double> hardware_tflops_;  // for device_types' peak_tflops
};

#undef PPB_RETURN_IF_ERROR

// Reads a whole file; false (errno set) when it cannot be read.
bool ReadFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return false;
  out = ss.str();
  return true;
}

}  // namespace

Result<RunConfig> LoadConfig(const std::string& path,
                             const CliOverrides& overrides) {
  std::string text;
  errno = 0;
  if (!ReadFile(path, text)) {
    const std::string why = errno != 0 ? std::strerror(errno) : "read error";
    return Error{"", path + ": must be a readable config file; got " + why};
  }
  return ParseConfig(text, path, overrides);
}

Result<RunConfig> ParseConfig(std::string_view text, std::string_view filename,
                              const CliOverrides& overrides) {
  Parser parser(filename, overrides);
  return parser.Parse(text);
}

Result<RunConfig> ParseConfigYaml(const YAML::Node& root,
                                  std::string_view filename,
                                  const CliOverrides& overrides) {
  Parser parser(filename, overrides);
  return parser.ParseNode(root);
}

Result<std::vector<RankCandidate>> LoadCandidates(const std::string& path,
                                                  const RunConfig& config) {
  std::string text;
  errno = 0;
  if (!ReadFile(path, text)) {
    const std::string why = errno != 0 ? std::strerror(errno) : "read error";
    return Error{"", path + ": must be a readable candidates file; got " + why};
  }
  return ParseCandidates(text, path, config);
}

Result<std::vector<RankCandidate>> ParseCandidates(std::string_view text,
                                                   std::string_view filename,
                                                   const RunConfig& config) {
  // Messages about p and v name the flags that set them, as for the config.
  CliOverrides cli;
  auto from_cli = [&](const char* key) {
    auto it = config.key_lines.find(key);
    return it != config.key_lines.end() && it->second == 0;
  };
  if (from_cli("pipeline.stages")) cli.stages = config.shape.p;
  if (from_cli("pipeline.virtual_stages")) cli.virtual_stages = config.shape.v;
  Parser parser(filename, cli, config);
  return parser.Candidates(text);
}

Status CheckSchedule(const std::string& schedule, int p, int v, int m,
                     const ScheduleParams& params) {
  const ScheduleInfo* info = FindSchedule(schedule);
  if (info == nullptr) {
    return Error{"pipeline.schedule",
                 "must name a registered schedule; got " + schedule};
  }
  const PipelineSpec spec = PipelineSpec::Uniform(p, v, m, 1, 1);
  Result<Program> program = info->generate(spec, params);
  if (!program.ok()) return program.error();
  return Status();
}

std::string FormatError(const RunConfig& config, const Error& error) {
  if (error.key.empty()) return config.path + ": " + error.message;
  for (std::string k = error.key; !k.empty(); k = ParentKey(k)) {
    auto it = config.key_lines.find(k);
    if (it == config.key_lines.end()) continue;
    if (it->second > 0) {
      return config.path + ":" + std::to_string(it->second) + ": " + error.key +
             ": " + error.message;
    }
    const std::string_view flag = FlagFor(k);
    if (!flag.empty()) {
      return config.path + ": " + std::string(flag) + ": " + error.message;
    }
    break;
  }
  return config.path + ": " + error.key + ": " + error.message;
}

Result<PreparedRun> Prepare(const RunConfig& config) {
  const bool custom = config.schedule == "custom";
  const std::string schedule_key =
      custom ? "pipeline.schedule_csv" : "pipeline.schedule";
  // Core errors name config keys, or "schedule" / "" for the program.
  auto fail = [&](Error e) {
    if (e.key.empty() || e.key == "schedule") e.key = schedule_key;
    e.message = FormatError(config, e);
    return e;
  };

  Result<PipelineSpec> spec = Lower(config.layers, config.cluster, config.shape,
                                    config.strategy, config.allow_empty_chunks);
  if (!spec.ok()) return fail(spec.error());
  if (Status s = ValidateSpec(*spec); !s.ok()) return fail(s.error());

  Result<Program> program = Error{};
  if (custom) {
    // A path from the file is relative to the file; one from the command
    // line is relative to the working directory.
    std::filesystem::path csv = config.schedule_csv;
    auto line = config.key_lines.find("pipeline.schedule_csv");
    const bool from_cli = line != config.key_lines.end() && line->second == 0;
    if (!from_cli && csv.is_relative()) {
      csv = std::filesystem::path(config.path).parent_path() / csv;
    }
    std::string text;
    errno = 0;
    if (!ReadFile(csv.string(), text)) {
      const std::string why = errno != 0 ? std::strerror(errno) : "read error";
      return fail(Error{"pipeline.schedule_csv",
                        "must name a readable schedule CSV; got " +
                            config.schedule_csv + " (" + csv.string() + ": " +
                            why + ")"});
    }
    program = ParseScheduleCsv(text);
    if (!program.ok()) {
      return fail(Error{"pipeline.schedule_csv",
                        "must be a valid torch schedule CSV; got " +
                            csv.string() + ", " + program.error().message});
    }
  } else {
    const ScheduleInfo* info = FindSchedule(config.schedule);
    if (info == nullptr) {
      return fail(
          Error{"pipeline.schedule",
                "must name a registered schedule; got " + config.schedule});
    }
    program = info->generate(*spec, config.schedule_params);
    if (!program.ok()) return fail(program.error());
  }
  if (Status s = ValidateProgram(*spec, *program); !s.ok()) {
    return fail(s.error());
  }
  return PreparedRun{std::move(*spec), std::move(*program)};
}

}  // namespace ppb
