// The common part of the framework emitters (apps/output/emit_common.h)
// and the public entry points of apps/output/emit.h: --emit names,
// Emit (which runs the framework's emitter, then reads its text back and
// refuses a mismatch), ParseEmission, and the text and JSON forms of the
// emissions. The emitters live in emit_megatron.cpp, emit_mindformers.cpp,
// emit_torchtitan.cpp and emit_deepspeed.cpp; Megatron's flags are read
// back in megatron_args.cpp.
#include "apps/output/emit.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/search_problem.h"
#include "apps/output/emit_common.h"
#include "apps/input/json_text.h"
#include "core/strategy.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

using Json = nlohmann::ordered_json;

}  // namespace

namespace emit_detail {

Error Fail(Framework f, const std::string& message) {
  return Error{std::string("--emit ") + FrameworkName(f), message};
}

bool IsDecoder(LayerKind k) {
  return k == LayerKind::Decoder || k == LayerKind::Moe || k == LayerKind::Other;
}

std::string ModeOf(const std::vector<Layer>& layers, const Strategy& s, size_t i) {
  const int k = s.recompute[i];
  return k == 0 ? std::string() : layers[i].recompute[k - 1].name;
}

std::uint8_t OptionIndex(const Layer& layer, std::string_view name) {
  for (size_t k = 0; k < layer.recompute.size(); ++k) {
    if (layer.recompute[k].name == name) {
      return static_cast<std::uint8_t>(k + 1);
    }
  }
  return 0;
}

Status SetOnDecoders(const std::vector<Layer>& layers, const char* mode,
                     std::vector<std::uint8_t>& recompute) {
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!IsDecoder(layers[i].kind)) continue;
    recompute[i] = OptionIndex(layers[i], mode);
    if (recompute[i] == 0) {
      return Error{"", fmt::format("layer {} offers no recompute mode {}", layers[i].name, mode)};
    }
  }
  return Status();
}

std::string JoinInts(const std::vector<int>& xs) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(xs[i]);
  }
  return out;
}

std::string StageList(const std::vector<int>& per_stage, int p, int v) {
  if (v == 1) return "[" + JoinInts(per_stage) + "]";
  std::string out = "[";
  for (int c = 0; c < v; ++c) {
    if (c > 0) out += ", ";
    const auto first = per_stage.begin() + static_cast<std::ptrdiff_t>(c) * p;
    out += '[';
    out += JoinInts(std::vector<int>(first, first + p));
    out += ']';
  }
  return out + "]";
}

std::string DescribeRun(const RunConfig& config) {
  std::string out = fmt::format("schedule {}, p={}, v={}, m={}", config.schedule, config.shape.p,
                                config.shape.v, config.shape.m);
  const int g =
      EffectiveGroup(ScheduleChoice{config.schedule, config.shape.v, config.schedule_params},
                     config.shape.p, config.shape.m);
  if (g > 0) out += fmt::format(", g={}", g);
  return out;
}

namespace {

// Per stage, how many layers use recompute mode `mode` (for notes).
std::vector<int> ModeCountsPerStage(const RunConfig& config, const std::string& mode) {
  const std::vector<size_t> starts = StageStarts(config.strategy.layers_per_stage);
  std::vector<int> out;
  for (size_t s = 0; s + 1 < starts.size(); ++s) {
    int n = 0;
    for (size_t i = starts[s]; i < starts[s + 1]; ++i) {
      n += ModeOf(config.layers, config.strategy, i) == mode ? 1 : 0;
    }
    out.push_back(n);
  }
  return out;
}

}  // namespace

std::string RecomputeSummary(const RunConfig& config) {
  std::vector<std::string> modes;
  for (size_t i = 0; i < config.layers.size(); ++i) {
    const std::string m = ModeOf(config.layers, config.strategy, i);
    if (!m.empty() && std::find(modes.begin(), modes.end(), m) == modes.end()) {
      modes.push_back(m);
    }
  }
  std::string out;
  for (const std::string& m : modes) {
    if (!out.empty()) out += ", ";
    out += m + " " + StageList(ModeCountsPerStage(config, m), config.shape.p, config.shape.v);
  }
  return out;
}

bool AnyRecompute(const Strategy& s) {
  return std::any_of(s.recompute.begin(), s.recompute.end(), [](std::uint8_t k) { return k != 0; });
}

int FirstEmptyStage(const Strategy& s) {
  for (size_t i = 0; i < s.layers_per_stage.size(); ++i) {
    if (s.layers_per_stage[i] == 0) return static_cast<int>(i);
  }
  return -1;
}

std::string StageName(int s, int p) {
  return fmt::format("stage {} (chunk {}, rank {})", s, s / p, s % p);
}

void NoteLowPrecisionNotEmitted(std::string& text, const RunConfig& config,
                                const char* framework) {
  if (!config.training.low.on()) return;
  AddNote(text, std::string("cannot express the linears' ") +
                    RecipeName(config.training.low.recipe) + ": ppb emits no " + framework +
                    " low-precision setting; set it in the framework (Transformer "
                    "Engine's recipe) by hand");
}

void NoteShardingNotEmitted(std::string& text, const RunConfig& config, const char* framework) {
  const Training& t = config.training;
  if (t.sharding.per_unit()) {
    AddNote(text, fmt::format("cannot express {} {}: ppb writes {}'s data parallelism as its "
                              "optimizer sharding (ZeRO-1) only; set the sharding in the "
                              "framework by hand",
                              FsdpTitle(t.sharding.fsdp),
                              DpShardingName(t.sharding.strategy), framework));
  }
  if (t.offload.on()) {
    AddNote(text, fmt::format("cannot express training.offload: ppb emits no {} offload "
                              "setting; set it in the framework by hand", framework));
  }
}

void NoteMoeNotEmitted(std::string& text, const RunConfig& config, const char* framework,
                       bool expert_tp_written) {
  const Training& t = config.training;
  const MoeSettings& m = t.moe;
  if (config.architecture.experts == 0 || config.derived.empty()) return;
  std::string what;
  auto add = [&](const std::string& s) { what += (what.empty() ? "" : ", ") + s; };
  if (m.dispatcher != Dispatcher::AllToAll) {
    add(std::string("the ") + DispatcherName(m.dispatcher) + " dispatcher");
  }
  if (ExpertTp(t) != t.tp && !expert_tp_written) add(fmt::format("expert TP {}", ExpertTp(t)));
  if (m.overlap_ep_comm) add("the combined 1F1B (overlap_ep_comm)");
  if (m.capacity_factor > 0) add(fmt::format("capacity factor {:g}", m.capacity_factor));
  if (m.force_balance) add("forced balance");
  if (what.empty()) return;
  AddNote(text, fmt::format("cannot express training.moe's {}: ppb emits no {} setting for "
                            "them; set them in the framework by hand",
                            what, framework));
}

void AddNote(std::string& text, const std::string& note) {
  const size_t width = 72;
  size_t pos = 0;
  while (pos < note.size()) {
    size_t end = note.size();
    if (end - pos > width) {
      end = note.rfind(' ', pos + width);
      if (end == std::string::npos || end <= pos) end = note.find(' ', pos + width);
      if (end == std::string::npos) end = note.size();
    }
    text += "# ppb: " + note.substr(pos, end - pos) + "\n";
    pos = end;
    while (pos < note.size() && note[pos] == ' ') ++pos;
  }
}

Status CheckEmbeddingFirstHeadLast(Framework f, const std::vector<Layer>& layers,
                                   const char* mtp_refusal) {
  const size_t n = layers.size();
  if (n < 2 || layers.front().kind != LayerKind::Embedding ||
      layers.back().kind != LayerKind::Head) {
    return Fail(f, fmt::format("needs the model's first layer to be its embedding and "
                               "its last its head (loss); got {} ({}) first and {} ({}) "
                               "last",
                               layers.front().name, LayerKindName(layers.front().kind),
                               layers.back().name, LayerKindName(layers.back().kind)));
  }
  bool mtp_seen = false;
  for (size_t i = 1; i + 1 < n; ++i) {
    const LayerKind k = layers[i].kind;
    if (k == LayerKind::Embedding || k == LayerKind::Head) {
      return Fail(f, fmt::format("needs exactly one embedding and one head; "
                                 "got {} ({}) as layer {}",
                                 layers[i].name, LayerKindName(k), i));
    }
    if (k == LayerKind::Mtp) {
      if (mtp_refusal != nullptr) {
        return Fail(f, fmt::format("{}; got {}", mtp_refusal, layers[i].name));
      }
      mtp_seen = true;
    } else if (mtp_seen) {
      return Fail(f, fmt::format("needs the MTP layers after every decoder "
                                 "layer (Megatron-LM builds them after the "
                                 "decoder); got {} after an MTP layer",
                                 layers[i].name));
    }
  }
  return Status();
}

namespace {

class LiteralParser {
 public:
  explicit LiteralParser(std::string_view text) : text_(text) {}

  Result<Value> ParseAll() {
    Result<Value> v = Parse();
    if (!v.ok()) return v;
    Skip();
    if (pos_ != text_.size()) return Bad("unexpected text after the value");
    return v;
  }

 private:
  void Skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }

  Error Bad(const std::string& what) const {
    return Error{"", what + " in '" + std::string(text_) + "'"};
  }

  Result<Value> Parse() {
    Skip();
    if (pos_ >= text_.size()) return Bad("missing value");
    const char c = text_[pos_];
    Value v;
    if (c == '[') {
      v.kind = Value::Kind::List;
      ++pos_;
      Skip();
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return v;
      }
      while (true) {
        Result<Value> item = Parse();
        if (!item.ok()) return item;
        v.list.push_back(std::move(*item));
        Skip();
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          Skip();
          if (pos_ < text_.size() && text_[pos_] == ']') {
            ++pos_;
            return v;
          }
          continue;
        }
        if (pos_ < text_.size() && text_[pos_] == ']') {
          ++pos_;
          return v;
        }
        return Bad("expected ',' or ']'");
      }
    }
    if (c == '"' || c == '\'') {
      const size_t close = text_.find(c, pos_ + 1);
      if (close == std::string_view::npos) return Bad("unterminated string");
      v.kind = Value::Kind::String;
      v.s = std::string(text_.substr(pos_ + 1, close - pos_ - 1));
      pos_ = close + 1;
      return v;
    }
    size_t end = pos_;
    while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) ||
                                  text_[end] == '-' || text_[end] == '_')) {
      ++end;
    }
    // A dotted name called with no arguments: "FullAC.Config()".
    size_t call_end = end;
    while (call_end < text_.size() && text_[call_end] == '.' && call_end + 1 < text_.size() &&
           (std::isalpha(static_cast<unsigned char>(text_[call_end + 1])) ||
            text_[call_end + 1] == '_')) {
      ++call_end;
      while (call_end < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[call_end])) ||
              text_[call_end] == '_')) {
        ++call_end;
      }
    }
    if (end > pos_ && std::isalpha(static_cast<unsigned char>(text_[pos_])) &&
        text_.substr(call_end, 2) == "()") {
      v.kind = Value::Kind::Call;
      v.s = std::string(text_.substr(pos_, call_end - pos_));
      pos_ = call_end + 2;
      return v;
    }
    const std::string_view word = text_.substr(pos_, end - pos_);
    pos_ = end;
    if (word == "None") {
      v.kind = Value::Kind::None;
      return v;
    }
    if (word == "true" || word == "True" || word == "false" || word == "False") {
      v.kind = Value::Kind::Bool;
      v.b = word[0] == 't' || word[0] == 'T';
      return v;
    }
    const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v.i);
    if (word.empty() || ec != std::errc() || ptr != word.data() + word.size()) {
      return Bad("expected a number, a string, a bool, a list, None or a call");
    }
    return v;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

namespace {

// Strips a '#' comment that is not inside a quoted string.
std::string_view StripComment(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

}  // namespace

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

Result<std::map<std::string, Value>> ReadAssignments(std::string_view text) {
  std::map<std::string, Value> out;
  std::string section, pending_key, pending;
  int depth = 0;
  size_t pos = 0;
  int line_no = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = Trim(StripComment(text.substr(pos, nl - pos)));
    pos = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    std::string_view rest = line;
    if (pending_key.empty()) {
      if (line.front() == '[') {
        if (line.back() != ']') {
          return Error{"", fmt::format("line {}: expected a [section]; got '{}'", line_no, line)};
        }
        section = std::string(Trim(line.substr(1, line.size() - 2)));
        continue;
      }
      const size_t eq = line.find('=');
      if (eq == std::string_view::npos) {
        return Error{"", fmt::format("line {}: expected key = value; got '{}'", line_no, line)};
      }
      const std::string key(Trim(line.substr(0, eq)));
      pending_key = section.empty() ? key : section + "." + key;
      rest = line.substr(eq + 1);
      pending.clear();
    }
    pending += std::string(rest) + " ";
    for (char c : rest) {
      depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    }
    if (depth > 0) continue;
    Result<Value> v = LiteralParser(pending).ParseAll();
    if (!v.ok()) {
      return Error{"", fmt::format("line {}: {}: {}", line_no, pending_key, v.error().message)};
    }
    if (out.count(pending_key) != 0) {
      return Error{"", fmt::format("line {}: {} is given twice", line_no, pending_key)};
    }
    out[pending_key] = std::move(*v);
    pending_key.clear();
    depth = 0;
  }
  if (!pending_key.empty()) {
    return Error{"", pending_key + ": unterminated list"};
  }
  return out;
}

Result<std::int64_t> IntAt(const std::map<std::string, Value>& a, const std::string& key,
                           std::int64_t min) {
  auto it = a.find(key);
  if (it == a.end()) return Error{"", key + ": missing"};
  if (it->second.kind != Value::Kind::Int || it->second.i < min || it->second.i > 1'000'000'000) {
    return Error{"", fmt::format("{}: must be an integer >= {}", key, min)};
  }
  return it->second.i;
}

}  // namespace emit_detail

using namespace emit_detail;  // NOLINT: the helpers of emit_common.h

Result<EmittedPlan> ParseEmission(Framework framework, std::string_view text,
                                  const std::vector<Layer>& layers) {
  switch (framework) {
    case Framework::Megatron:
      return ParseMegatronArgs(text, layers);
    case Framework::MindFormers:
      return ParseMindFormersYaml(text, layers);
    case Framework::Torchtitan:
    case Framework::Torchtitan022:
      return ParseTorchtitan(framework, text, layers);
    case Framework::DeepSpeed:
      return ParseDeepSpeed(text, layers);
  }
  return Error{"", "unknown framework"};
}

const char* FrameworkName(Framework f) {
  switch (f) {
    case Framework::Megatron:
      return "megatron";
    case Framework::MindFormers:
      return "mindformers";
    case Framework::Torchtitan:
      return "torchtitan";
    case Framework::Torchtitan022:
      return "torchtitan-0.2.2";
    case Framework::DeepSpeed:
      return "deepspeed";
  }
  return "?";
}

Result<std::vector<Framework>> ParseFrameworks(const std::string& flag, std::string_view text) {
  static constexpr Framework kAll[] = {Framework::Megatron, Framework::MindFormers,
                                       Framework::Torchtitan, Framework::Torchtitan022,
                                       Framework::DeepSpeed};
  std::vector<Framework> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string name(Trim(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const Framework* found = std::find_if(std::begin(kAll), std::end(kAll),
                                          [&](Framework f) { return name == FrameworkName(f); });
    if (found == std::end(kAll)) {
      return Error{flag,
                   "expected megatron, mindformers, torchtitan, "
                   "torchtitan-0.2.2 or deepspeed (or a comma-separated list); got '" +
                       std::string(text) + "'"};
    }
    if (std::find(out.begin(), out.end(), *found) == out.end()) {
      out.push_back(*found);
    }
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

DeployTarget TargetOf(Framework f) {
  switch (f) {
    case Framework::Megatron: return DeployTarget::Megatron;
    case Framework::MindFormers: return DeployTarget::MindFormers;
    case Framework::Torchtitan:
    case Framework::Torchtitan022: return DeployTarget::Torchtitan;
    case Framework::DeepSpeed: return DeployTarget::DeepSpeed;
  }
  return DeployTarget::Any;
}

Result<Emission> Emit(Framework framework, const RunConfig& config, const Program& program) {
  Result<Emission> e = Error{};
  switch (framework) {
    case Framework::Megatron:
      e = EmitMegatron(config);
      break;
    case Framework::MindFormers:
      e = EmitMindFormers(config);
      break;
    case Framework::Torchtitan:
    case Framework::Torchtitan022:
      e = EmitTorchtitan(framework, config, program);
      break;
    case Framework::DeepSpeed:
      e = EmitDeepSpeed(config);
      break;
  }
  if (!e.ok()) return e;
  // Self-check: the framework's rules read the text back as this strategy.
  Result<EmittedPlan> back = ParseEmission(framework, e->text, config.layers);
  std::string mismatch;
  if (!back.ok()) {
    mismatch = back.error().message;
  } else if (back->p != config.shape.p || back->v != config.shape.v ||
             back->strategy.layers_per_stage != config.strategy.layers_per_stage) {
    mismatch = "it reads back as another split";
  } else if (back->m != 0 && back->m != config.shape.m) {
    mismatch = "it reads back with another number of micro-batches";
  } else if (e->recompute_expressed ? back->strategy.recompute != config.strategy.recompute
                                    : AnyRecompute(back->strategy)) {
    mismatch = "it reads back with another recompute";
  } else if (e->recompute_expressed !=
             ExpressingSetting(TargetOf(framework), config.layers, config.strategy)
                 .has_value()) {
    // The search's rules (search/deployable.h, search.target) and the
    // emitter must agree on what the framework can express.
    mismatch = e->recompute_expressed
                   ? "search.target's rules say its recompute cannot be expressed"
                   : "search.target's rules say its recompute can be expressed";
  }
  if (!mismatch.empty()) {
    return Fail(framework,
                "internal error: the emitted text does not read "
                "back as the strategy (" +
                    mismatch + "):\n" + e->text);
  }
  // A heterogeneous cluster: no framework setting places ranks on devices;
  // the launcher does (rank order of the hostfile / torchrun's node ranks).
  if (config.topology) {
    e->text += "# ppb: launch pipeline rank r on device:";
    for (size_t r = 0; r < config.placement.size(); ++r) {
      e->text += " " + std::to_string(r) + ":" + DeviceLabel(*config.topology, config.placement[r]);
    }
    e->text += "\n";
  }
  return e;
}

std::string FormatEmissionsText(const std::vector<Emission>& emissions) {
  std::string out;
  for (const Emission& e : emissions) {
    out += fmt::format("==== ppb emit: {} ====\n", FrameworkName(e.framework));
    out += e.text;
    if (!e.schedule_csv.empty()) {
      out += fmt::format("==== ppb emit: {} schedule CSV ({}) ====\n", FrameworkName(e.framework),
                         kCsvName);
      out += e.schedule_csv;
    }
  }
  return out;
}

std::string AddEmissionsToJson(const std::string& json, const std::vector<Emission>& emissions) {
  Json j = Json::parse(json);
  Json emit = Json::object();
  for (const Emission& e : emissions) {
    Json one;
    one["text"] = e.text;
    one["recompute_expressed"] = e.recompute_expressed;
    if (!e.schedule_csv.empty()) {
      one["schedule_csv_name"] = kCsvName;
      one["schedule_csv"] = e.schedule_csv;
    }
    emit[FrameworkName(e.framework)] = one;
  }
  j["emit"] = emit;
  return JsonText(j, 2) + "\n";
}

}  // namespace ppb
