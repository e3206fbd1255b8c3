#include "apps/emit.h"

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

#include "apps/search_cli.h"
#include "core/strategy.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

using Json = nlohmann::ordered_json;

// ---- shared ---------------------------------------------------------------

Error Fail(Framework f, const std::string& message) {
  return Error{std::string("--emit ") + FrameworkName(f), message};
}

// A decoder layer in Megatron's sense ('t' in a layout): decoder, MoE or any
// other body layer.
bool IsDecoder(LayerKind k) {
  return k == LayerKind::Decoder || k == LayerKind::Moe || k == LayerKind::Other;
}

// The recompute mode layer `i` uses ("" for none).
std::string ModeOf(const std::vector<Layer>& layers, const Strategy& s, size_t i) {
  const int k = s.recompute[i];
  return k == 0 ? std::string() : layers[i].recompute[k - 1].name;
}

// The index + 1 of mode `name` among the options of `layer`, 0 if it has none.
std::uint8_t OptionIndex(const Layer& layer, std::string_view name) {
  for (size_t k = 0; k < layer.recompute.size(); ++k) {
    if (layer.recompute[k].name == name) {
      return static_cast<std::uint8_t>(k + 1);
    }
  }
  return 0;
}

// Sets recompute mode `mode` on every decoder layer (the frameworks' "every
// layer" settings); an error names a decoder layer that does not offer it.
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

// First layer index of each global stage, plus the total at the end.
std::vector<size_t> StageStarts(const std::vector<int>& layers_per_stage) {
  std::vector<size_t> starts = {0};
  for (int c : layers_per_stage) {
    starts.push_back(starts.back() + static_cast<size_t>(c));
  }
  return starts;
}

std::string JoinInts(const std::vector<int>& xs) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(xs[i]);
  }
  return out;
}

// "[1, 2]" for v = 1, "[[1, 2], [3, 4]]" ([chunk][rank]) for v > 1.
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

// "schedule interleaved, p=4, v=2, m=16, g=4" for headers and notes.
std::string DescribeRun(const RunConfig& config) {
  std::string out = fmt::format("schedule {}, p={}, v={}, m={}", config.schedule, config.shape.p,
                                config.shape.v, config.shape.m);
  const int g =
      EffectiveGroup(ScheduleChoice{config.schedule, config.shape.v, config.schedule_params},
                     config.shape.p, config.shape.m);
  if (g > 0) out += fmt::format(", g={}", g);
  return out;
}

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

// "full [2, 1, 0, 0], selective [0, 1, 0, 0]" for every mode in use.
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

// The stage of an empty (chunk, rank), or -1.
int FirstEmptyStage(const Strategy& s) {
  for (size_t i = 0; i < s.layers_per_stage.size(); ++i) {
    if (s.layers_per_stage[i] == 0) return static_cast<int>(i);
  }
  return -1;
}

std::string StageName(int s, int p) {
  return fmt::format("stage {} (chunk {}, rank {})", s, s / p, s % p);
}

// Appends "# ppb: ..." lines, wrapping `note` at about 76 columns.
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

// The model has exactly one embedding, first, and one head, last, with the
// decoder layers and then the MTP layers between them: Megatron-LM's layout
// rule "first symbol E, last L, exactly one of each" with its MTP block after
// the decoder (conventions.md, Megatron-LM), and torchtitan's tok_embeddings,
// layers.N, norm + output.
Status CheckEmbeddingFirstHeadLast(Framework f, const std::vector<Layer>& layers, bool allow_mtp) {
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
      if (!allow_mtp) {
        return Fail(f, fmt::format("has no module name for an MTP layer (torchtitan's "
                                   "LLM modules are tok_embeddings, layers.N, norm and "
                                   "output); got {}",
                                   layers[i].name));
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

// ---- a small reader of "key = value" fragments (TOML, Python) -------------

// A literal: an integer, a quoted string, a bool, or a list of literals.
struct Value {
  enum class Kind : std::uint8_t { Int, String, Bool, List } kind = Kind::Int;
  std::int64_t i = 0;
  std::string s;
  bool b = false;
  std::vector<Value> list;
};

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
    const std::string_view word = text_.substr(pos_, end - pos_);
    pos_ = end;
    if (word == "true" || word == "True" || word == "false" || word == "False") {
      v.kind = Value::Kind::Bool;
      v.b = word[0] == 't' || word[0] == 'T';
      return v;
    }
    const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v.i);
    if (word.empty() || ec != std::errc() || ptr != word.data() + word.size()) {
      return Bad("expected a number, a string, a bool or a list");
    }
    return v;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

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

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

// "key = value" statements (a value may span lines while brackets are open),
// keyed "section.key" under a TOML "[section]" header. Comments ignored.
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

// ---- Megatron-LM ----------------------------------------------------------

// Megatron's --microbatch-group-size-per-virtual-pipeline-stage rule
// (conventions.md, Megatron-LM): p <= g <= m and m mod g is 0 or >= p.
Status CheckMegatronGroup(int p, int g, int m) {
  if (g < p || g > m || (m % g != 0 && m % g < p)) {
    return Error{"", fmt::format("--microbatch-group-size-per-virtual-pipeline-stage "
                                 "must satisfy p <= g <= m and m mod g = 0 or >= p "
                                 "(Megatron-LM); got g={}, p={}, m={}",
                                 g, p, m)};
  }
  return Status();
}

// Decoder layers per global stage.
std::vector<int> DecodersPerStage(const std::vector<Layer>& layers,
                                  const std::vector<int>& layers_per_stage) {
  const std::vector<size_t> starts = StageStarts(layers_per_stage);
  std::vector<int> out;
  for (size_t s = 0; s + 1 < starts.size(); ++s) {
    int n = 0;
    for (size_t i = starts[s]; i < starts[s + 1]; ++i) {
      n += IsDecoder(layers[i].kind) ? 1 : 0;
    }
    out.push_back(n);
  }
  return out;
}

// Megatron-LM's uneven split (get_num_layers_to_build; conventions.md,
// Megatron-LM): rank 0 holds `first` decoder layers and rank p-1 `last` (when
// set), the other ranks (num_layers - first - last) / (p - #set), which must
// divide; with v chunks each chunk of a rank holds the rank's count / v,
// which must divide; first / last must be positive. Without either flag:
// num_layers / p per rank, which must divide. Embedding on stage 0; MTP and
// head on the last stage. Returns layers per global stage.
Result<std::vector<int>> MegatronUnevenSplit(const std::vector<Layer>& layers, int p, int v,
                                             std::optional<int> first, std::optional<int> last) {
  int decoders = 0, mtp = 0;
  for (const Layer& l : layers) {
    decoders += IsDecoder(l.kind) ? 1 : 0;
    mtp += l.kind == LayerKind::Mtp ? 1 : 0;
  }
  int rest = decoders, ranks_left = p;
  for (const auto& [name, n] : {std::pair{"first", first}, std::pair{"last", last}}) {
    if (!n) continue;
    if (*n <= 0) {
      return Error{"", fmt::format("--decoder-{}-pipeline-num-layers must be "
                                   "positive (Megatron-LM); got {}",
                                   name, *n)};
    }
    if (*n % v != 0) {
      return Error{"", fmt::format("--decoder-{}-pipeline-num-layers ({}) must be "
                                   "divisible by v = {} (Megatron-LM)",
                                   name, *n, v)};
    }
    rest -= *n;
    --ranks_left;
  }
  if (p == 1 && (first || last)) {
    return Error{"", "--decoder-first/last-pipeline-num-layers need p >= 2"};
  }
  if (rest < 0) {
    return Error{"", fmt::format("--decoder-first/last-pipeline-num-layers "
                                 "exceed the {} decoder layers",
                                 decoders)};
  }
  int middle = 0;
  if (ranks_left > 0) {
    if (rest % ranks_left != 0) {
      return Error{"", fmt::format("the {} decoder layers left must divide over the "
                                   "{} other ranks (Megatron-LM: \"the left over "
                                   "layers must be divisible by left over stages\")",
                                   rest, ranks_left)};
    }
    middle = rest / ranks_left;
    if (middle % v != 0) {
      return Error{"", fmt::format("{} decoder layers per rank must be "
                                   "divisible by v = {} (Megatron-LM)",
                                   middle, v)};
    }
  } else if (rest != 0) {
    return Error{"",
                 "--decoder-first/last-pipeline-num-layers must add up "
                 "to the decoder layers when p = 2"};
  }
  std::vector<int> counts(static_cast<size_t>(p) * v, 0);
  for (int c = 0; c < v; ++c) {
    for (int r = 0; r < p; ++r) {
      int per_rank = middle;
      if (r == 0 && first) per_rank = *first;
      if (r == p - 1 && last) per_rank = *last;
      counts[static_cast<size_t>(c) * p + r] = per_rank / v;
    }
  }
  counts.front() += 1;       // E
  counts.back() += mtp + 1;  // m..., L
  return counts;
}

// The equivalent first/last flags of a split, when Megatron's uneven rule
// can express it: every decoder layer is counted per rank, each chunk of a
// rank holds the same number, the middle ranks hold the same, E is on stage
// 0, MTP and L on the last stage. nullopt when it cannot.
struct UnevenFlags {
  std::optional<int> first, last;
};
std::optional<UnevenFlags> MegatronUnevenFlags(const std::vector<Layer>& layers,
                                               const std::vector<int>& per_stage, int p, int v) {
  if (p < 2) return std::nullopt;
  const std::vector<int> t = DecodersPerStage(layers, per_stage);
  std::vector<int> per_rank(static_cast<size_t>(p), 0);
  for (int r = 0; r < p; ++r) {
    for (int c = 1; c < v; ++c) {
      if (t[static_cast<size_t>(c) * p + r] != t[static_cast<size_t>(r)]) {
        return std::nullopt;
      }
    }
    per_rank[r] = t[static_cast<size_t>(r)] * v;
  }
  UnevenFlags flags;
  if (p > 2) {
    for (int r = 2; r < p - 1; ++r) {
      if (per_rank[r] != per_rank[1]) return std::nullopt;
    }
    const int middle = per_rank[1];
    if (per_rank[0] != middle) flags.first = per_rank[0];
    if (per_rank[p - 1] != middle) flags.last = per_rank[p - 1];
  } else if (per_rank[0] != per_rank[1]) {
    flags.first = per_rank[0];
    flags.last = per_rank[1];
  }
  Result<std::vector<int>> back = MegatronUnevenSplit(layers, p, v, flags.first, flags.last);
  if (!back.ok() || *back != per_stage) return std::nullopt;
  return flags;
}

// Megatron's recompute flags for the strategy's decoder layers, or a note
// saying why they cannot express it (conventions.md, Megatron-LM:
// --recompute-method block = the first N layers of each pipeline stage, i.e.
// of each model chunk, min(N, its layers); uniform with
// --recompute-num-layers 1 = every layer; selective granularity = every
// layer). Only modes named "full" and "selective" map.
struct MegatronRecompute {
  std::vector<std::string> flags;  // "--flag value" lines
  std::string note;                // non-empty: not expressible
};
MegatronRecompute MegatronRecomputeFlags(const RunConfig& config) {
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  MegatronRecompute out;
  if (!AnyRecompute(s)) return out;
  const std::string what = "the strategy recomputes " + RecomputeSummary(config);
  std::vector<std::string> used;
  bool all_decoders_same = true;
  std::string first_mode;
  bool first_seen = false;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string m = ModeOf(layers, s, i);
    if (!IsDecoder(layers[i].kind)) {
      if (!m.empty()) {
        out.note = fmt::format(
            "no recompute flags: Megatron-LM's recompute flags cover the "
            "decoder layers only, and {} ({}) recomputes; {}",
            layers[i].name, LayerKindName(layers[i].kind), what);
        return out;
      }
      continue;
    }
    if (!first_seen) {
      first_mode = m;
      first_seen = true;
    } else if (m != first_mode) {
      all_decoders_same = false;
    }
    if (!m.empty() && std::find(used.begin(), used.end(), m) == used.end()) {
      used.push_back(m);
    }
  }
  if (used.size() == 1 && used[0] == "full" && all_decoders_same) {
    out.flags = {"--recompute-granularity full", "--recompute-method uniform",
                 "--recompute-num-layers 1"};
    return out;
  }
  if (used.size() == 1 && used[0] == "selective" && all_decoders_same) {
    out.flags = {"--recompute-granularity selective"};
    return out;
  }
  if (used.size() == 1 && used[0] == "full") {
    // block N: the first min(N, t_s) decoder layers of each stage.
    const std::vector<size_t> starts = StageStarts(s.layers_per_stage);
    std::vector<int> full(s.layers_per_stage.size(), 0);
    std::vector<int> t = DecodersPerStage(layers, s.layers_per_stage);
    bool prefix = true;
    for (size_t st = 0; st + 1 < starts.size(); ++st) {
      bool gap = false;
      for (size_t i = starts[st]; i < starts[st + 1]; ++i) {
        if (!IsDecoder(layers[i].kind)) continue;
        const bool f = ModeOf(layers, s, i) == "full";
        if (f && gap) prefix = false;
        if (!f) gap = true;
        full[st] += f ? 1 : 0;
      }
    }
    const int n = *std::max_element(full.begin(), full.end());
    bool block = prefix;
    for (size_t st = 0; block && st < full.size(); ++st) {
      block = full[st] == std::min(n, t[st]);
    }
    if (block) {
      out.flags = {"--recompute-granularity full", "--recompute-method block",
                   "--recompute-num-layers " + std::to_string(n)};
      return out;
    }
  }
  out.note = fmt::format(
      "no recompute flags: Megatron-LM cannot express this recompute "
      "(--recompute-method block recomputes the first N decoder layers of "
      "every stage, uniform and selective every decoder layer, one "
      "granularity per run); {}",
      what);
  return out;
}

Result<Emission> EmitMegatron(const RunConfig& config) {
  const Framework f = Framework::Megatron;
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const int p = config.shape.p, v = config.shape.v, m = config.shape.m;
  if (Status st = CheckEmbeddingFirstHeadLast(f, layers, true); !st.ok()) {
    return st.error();
  }
  const int stages = p * v;
  if (s.layers_per_stage.front() == 0 || s.layers_per_stage.back() == 0) {
    return Fail(f, fmt::format("needs the embedding on the first stage and the loss "
                               "on the last (Megatron-LM layout: first symbol E, last "
                               "L); got {} empty",
                               StageName(s.layers_per_stage.front() == 0 ? 0 : stages - 1, p)));
  }
  int decoders = 0, mtp = 0;
  for (const Layer& l : layers) {
    decoders += IsDecoder(l.kind) ? 1 : 0;
    mtp += l.kind == LayerKind::Mtp ? 1 : 0;
  }
  const std::vector<size_t> starts = StageStarts(s.layers_per_stage);
  for (int st = 0; st < stages; ++st) {
    for (size_t i = starts[st]; i < starts[st + 1]; ++i) {
      if (layers[i].kind == LayerKind::Mtp && st / p != v - 1) {
        return Fail(f, fmt::format("needs MTP layers in a rank's last chunk "
                                   "(Megatron-LM layout rule); got {} in {}",
                                   layers[i].name, StageName(st, p)));
      }
    }
  }

  Emission e;
  e.framework = f;
  std::string& text = e.text;
  AddNote(text, fmt::format("Megatron-LM arguments for {}: {}",
                            config.model_name.empty() ? config.path : config.model_name,
                            DescribeRun(config)));
  text += fmt::format("--pipeline-model-parallel-size {}\n", p);
  text += fmt::format("--pipeline-model-parallel-layout \"{}\"\n",
                      FormatMegatronLayout(s.layers_per_stage, layers));
  const int g = EffectiveGroup(ScheduleChoice{config.schedule, v, config.schedule_params}, p, m);
  if (config.schedule == "interleaved" && v > 1 && g != p) {
    if (Status st = CheckMegatronGroup(p, g, m); !st.ok()) {
      return Fail(f, st.error().message);
    }
    text += fmt::format("--microbatch-group-size-per-virtual-pipeline-stage {}\n", g);
  }
  const MegatronRecompute rc = MegatronRecomputeFlags(config);
  for (const std::string& flag : rc.flags) text += flag + "\n";
  e.recompute_expressed = rc.note.empty();

  std::string model = fmt::format("--num-layers {}", decoders);
  if (mtp > 0) model += fmt::format(" --mtp-num-layers {}", mtp);
  AddNote(text, fmt::format("the layout's {} stages (| in the order stage = chunk * "
                            "p + rank) set v = {}; Megatron-LM refuses "
                            "--num-virtual-stages-per-pipeline-rank with a layout. "
                            "It needs the model's {}, m = {} micro-batches = "
                            "--global-batch-size / (--micro-batch-size x data "
                            "parallel size)",
                            stages, v, model, m));
  if (config.schedule == "gpipe") {
    AddNote(text,
            "Megatron-LM has no GPipe schedule: it runs 1F1B with this "
            "split (simulated: gpipe)");
  } else if (config.schedule == "custom") {
    AddNote(text,
            "Megatron-LM runs its own 1F1B / interleaved order, not "
            "the simulated custom schedule CSV");
  } else if (config.schedule == "interleaved" && v == 1) {
    AddNote(text,
            "with v = 1 Megatron-LM runs 1F1B (simulated: torch's "
            "interleaved order with one chunk per rank)");
  }
  if (!rc.note.empty()) AddNote(text, rc.note);
  if (const auto uneven = MegatronUnevenFlags(layers, s.layers_per_stage, p, v)) {
    std::vector<std::string> flags;
    if (v > 1) {
      flags.push_back(fmt::format("--num-virtual-stages-per-pipeline-rank {}", v));
    }
    if (uneven->first) {
      flags.push_back(fmt::format("--decoder-first-pipeline-num-layers {}", *uneven->first));
    }
    if (uneven->last) {
      flags.push_back(fmt::format("--decoder-last-pipeline-num-layers {}", *uneven->last));
    }
    if (!uneven->first && !uneven->last) {
      AddNote(text,
              "equivalent without the layout: Megatron-LM's default "
              "even split" +
                  std::string(flags.empty() ? "" : " with:"));
    } else {
      AddNote(text, "equivalent without the layout (give one form, not both):");
    }
    for (const std::string& flag : flags) text += "#   " + flag + "\n";
  } else if (p > 1) {
    AddNote(text,
            "no --decoder-first/last-pipeline-num-layers form: "
            "Megatron-LM's uneven split needs equal middle ranks, equal "
            "chunks per rank and MTP on the last stage");
  }
  return e;
}

// One "--flag value" per token pair; lines starting with '#' are skipped; a
// value may be double-quoted; a trailing '\' is ignored.
Result<std::map<std::string, std::string>> ReadFlags(std::string_view text) {
  std::map<std::string, std::string> out;
  std::vector<std::string> tokens;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = Trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty() || line.front() == '#') continue;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) {
        ++i;
      }
      if (i >= line.size()) break;
      std::string token;
      if (line[i] == '"') {
        const size_t close = line.find('"', i + 1);
        if (close == std::string_view::npos) {
          return Error{"", "unterminated quote in '" + std::string(line) + "'"};
        }
        token = std::string(line.substr(i + 1, close - i - 1));
        i = close + 1;
      } else {
        const size_t start = i;
        while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) {
          ++i;
        }
        token = std::string(line.substr(start, i - start));
        if (token == "\\") continue;
      }
      tokens.push_back(std::move(token));
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].rfind("--", 0) != 0) {
      return Error{"", "expected a --flag; got '" + tokens[i] + "'"};
    }
    if (out.count(tokens[i]) != 0) {
      return Error{"", tokens[i] + " is given twice"};
    }
    if (i + 1 < tokens.size() && tokens[i + 1].rfind("--", 0) != 0) {
      out[tokens[i]] = tokens[i + 1];
      ++i;
    } else {
      return Error{"", tokens[i] + " needs a value"};
    }
  }
  return out;
}

Result<int> FlagInt(const std::map<std::string, std::string>& flags, const std::string& name,
                    int min) {
  const std::string& text = flags.at(name);
  int x = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || x < min) {
    return Error{"", fmt::format("{} must be an integer >= {}; got '{}'", name, min, text)};
  }
  return x;
}

}  // namespace

Result<EmittedPlan> ParseMegatronArgs(std::string_view text, const std::vector<Layer>& layers) {
  auto flags = ReadFlags(text);
  if (!flags.ok()) return flags.error();
  static const char* const kKnown[] = {"--pipeline-model-parallel-size",
                                       "--pipeline-model-parallel-layout",
                                       "--num-virtual-stages-per-pipeline-rank",
                                       "--decoder-first-pipeline-num-layers",
                                       "--decoder-last-pipeline-num-layers",
                                       "--microbatch-group-size-per-virtual-pipeline-stage",
                                       "--recompute-granularity",
                                       "--recompute-method",
                                       "--recompute-num-layers"};
  for (const auto& [name, value] : *flags) {
    if (std::find(std::begin(kKnown), std::end(kKnown), name) == std::end(kKnown)) {
      return Error{"", "ppb does not read " + name};
    }
  }
  auto has = [&](const char* name) { return flags->count(name) != 0; };
  if (!has("--pipeline-model-parallel-size")) {
    return Error{"", "--pipeline-model-parallel-size: missing"};
  }
  EmittedPlan plan;
  Result<int> p = FlagInt(*flags, "--pipeline-model-parallel-size", 1);
  if (!p.ok()) return p.error();
  plan.p = *p;
  const bool layout = has("--pipeline-model-parallel-layout");
  if (layout &&
      (has("--num-virtual-stages-per-pipeline-rank") ||
       has("--decoder-first-pipeline-num-layers") || has("--decoder-last-pipeline-num-layers"))) {
    return Error{"",
                 "--pipeline-model-parallel-layout must not be given with "
                 "--num-virtual-stages-per-pipeline-rank or "
                 "--decoder-first/last-pipeline-num-layers (Megatron-LM)"};
  }
  if (layout) {
    const std::string& str = flags->at("--pipeline-model-parallel-layout");
    Result<int> stages = MegatronLayoutStages(str, 4 * layers.size() + 64 + 4 * str.size());
    if (!stages.ok()) return stages.error();
    if (*stages % plan.p != 0) {
      return Error{"", fmt::format("the layout's {} stages must be divisible by "
                                   "--pipeline-model-parallel-size {} (Megatron-LM)",
                                   *stages, plan.p)};
    }
    plan.v = *stages / plan.p;
    Result<std::vector<int>> counts = ParseMegatronLayout(str, layers, plan.p, plan.v);
    if (!counts.ok()) return counts.error();
    // Megatron-LM's layout rule: first symbol E, last L (conventions.md).
    if (counts->front() == 0 || counts->back() == 0) {
      return Error{"",
                   "the layout must start with E and end with L "
                   "(Megatron-LM); got an empty first or last stage"};
    }
    plan.strategy.layers_per_stage = std::move(*counts);
  } else {
    if (has("--num-virtual-stages-per-pipeline-rank")) {
      Result<int> v = FlagInt(*flags, "--num-virtual-stages-per-pipeline-rank", 1);
      if (!v.ok()) return v.error();
      plan.v = *v;
    }
    std::optional<int> first, last;
    if (has("--decoder-first-pipeline-num-layers")) {
      Result<int> x = FlagInt(*flags, "--decoder-first-pipeline-num-layers", 0);
      if (!x.ok()) return x.error();
      first = *x;
    }
    if (has("--decoder-last-pipeline-num-layers")) {
      Result<int> x = FlagInt(*flags, "--decoder-last-pipeline-num-layers", 0);
      if (!x.ok()) return x.error();
      last = *x;
    }
    Result<std::vector<int>> counts = MegatronUnevenSplit(layers, plan.p, plan.v, first, last);
    if (!counts.ok()) return counts.error();
    plan.strategy.layers_per_stage = std::move(*counts);
  }
  if (has("--microbatch-group-size-per-virtual-pipeline-stage")) {
    Result<int> g = FlagInt(*flags, "--microbatch-group-size-per-virtual-pipeline-stage", 1);
    if (!g.ok()) return g.error();
    if (*g < plan.p) {
      return Error{"", fmt::format("--microbatch-group-size-per-virtual-pipeline-stage "
                                   "must be >= p = {} (Megatron-LM); got {}",
                                   plan.p, *g)};
    }
  }

  // Recompute.
  std::vector<std::uint8_t>& rc = plan.strategy.recompute;
  rc.assign(layers.size(), 0);
  auto set_all = [&](const char* mode) { return SetOnDecoders(layers, mode, rc); };
  if (has("--recompute-granularity")) {
    const std::string& gran = flags->at("--recompute-granularity");
    const std::string method = has("--recompute-method") ? flags->at("--recompute-method") : "";
    if (gran == "selective") {
      if (has("--recompute-method") || has("--recompute-num-layers")) {
        return Error{"",
                     "--recompute-method and --recompute-num-layers go "
                     "with --recompute-granularity full"};
      }
      if (Status st = set_all("selective"); !st.ok()) return st.error();
    } else if (gran == "full") {
      if (!has("--recompute-num-layers") || (method != "uniform" && method != "block")) {
        return Error{"",
                     "--recompute-granularity full needs "
                     "--recompute-method uniform|block and "
                     "--recompute-num-layers"};
      }
      Result<int> n = FlagInt(*flags, "--recompute-num-layers", 1);
      if (!n.ok()) return n.error();
      if (method == "uniform") {
        if (*n != 1) {
          return Error{"",
                       "ppb reads --recompute-method uniform only with "
                       "--recompute-num-layers 1 (every layer its own "
                       "unit)"};
        }
        if (Status st = set_all("full"); !st.ok()) return st.error();
      } else {
        const std::vector<int>& per_stage = plan.strategy.layers_per_stage;
        const std::vector<size_t> starts = StageStarts(per_stage);
        for (size_t st = 0; st + 1 < starts.size(); ++st) {
          int done = 0;
          for (size_t i = starts[st]; i < starts[st + 1] && done < *n; ++i) {
            if (!IsDecoder(layers[i].kind)) continue;
            rc[i] = OptionIndex(layers[i], "full");
            if (rc[i] == 0) {
              return Error{"", fmt::format("layer {} offers no recompute "
                                           "mode full",
                                           layers[i].name)};
            }
            ++done;
          }
        }
      }
    } else {
      return Error{"",
                   "--recompute-granularity must be full or selective; "
                   "got '" +
                       gran + "'"};
    }
  } else if (has("--recompute-method") || has("--recompute-num-layers")) {
    return Error{"",
                 "--recompute-method and --recompute-num-layers need "
                 "--recompute-granularity full"};
  }
  return plan;
}

namespace {

// ---- MindFormers ----------------------------------------------------------

// MindFormers' recompute lists for the body (decoder) layers of each stage,
// counted from the stage's first decoder layer (conventions.md, MindFormers:
// "full recompute: first N layers of each stage", select lists likewise;
// a layer in an earlier list keeps it): recompute = the leading "full"
// layers; then layers in both select lists ("both_comm_select"), then those
// in one ("selective" or "select_comm"). `note` says why it cannot.
struct MindFormersRecompute {
  std::vector<int> full, select, comm;
  std::string note;
};
MindFormersRecompute MindFormersLists(const RunConfig& config, const std::vector<int>& body,
                                      const Pinned& pin) {
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const size_t stages = s.layers_per_stage.size();
  MindFormersRecompute out;
  out.full.assign(stages, 0);
  out.select.assign(stages, 0);
  out.comm.assign(stages, 0);
  const std::string what = "the strategy recomputes " + RecomputeSummary(config);
  const size_t n = layers.size();
  for (size_t i = 0; i < n; ++i) {
    const bool pinned = i < static_cast<size_t>(pin.lead) || i >= n - static_cast<size_t>(pin.tail);
    if (pinned && s.recompute[i] != 0) {
      out.note = fmt::format(
          "no recompute lists: MindFormers' lists cover the decoder layers "
          "only, and {} ({}) recomputes; {}",
          layers[i].name, LayerKindName(layers[i].kind), what);
      return out;
    }
  }
  size_t i = static_cast<size_t>(pin.lead);
  for (size_t st = 0; st < stages; ++st) {
    // Phases: 0 full, 1 both, 2 one select list, 3 none.
    int phase = 0;
    std::string one;  // the mode of phase 2
    for (int k = 0; k < body[st]; ++k, ++i) {
      const std::string m = ModeOf(layers, s, i);
      int want = 3;
      if (m == "full") {
        want = 0;
      } else if (m == "both_comm_select") {
        want = 1;
      } else if (m == "selective" || m == "select_comm") {
        want = 2;
      } else if (!m.empty()) {
        out.note = fmt::format(
            "no recompute lists: MindFormers has recompute, select_recompute "
            "and select_comm_recompute (ppb modes full, selective, "
            "select_comm, both_comm_select); {} uses '{}'; {}",
            layers[i].name, m, what);
        return out;
      }
      if (want < phase || (want == 2 && phase == 2 && m != one)) {
        out.note = fmt::format(
            "no recompute lists: MindFormers recomputes the first N decoder "
            "layers of a stage per list (full first, then both select lists, "
            "then one); {} breaks that order; {}",
            StageName(static_cast<int>(st), config.shape.p), what);
        return out;
      }
      phase = want;
      if (want == 2) one = m;
      if (want == 0) {
        ++out.full[st];
        ++out.select[st];
        ++out.comm[st];
      } else if (want == 1) {
        ++out.select[st];
        ++out.comm[st];
      } else if (want == 2) {
        ++(m == "selective" ? out.select[st] : out.comm[st]);
      }
    }
  }
  // A select list that only repeats the full layers says nothing more.
  if (out.select == out.full) out.select.assign(stages, 0);
  if (out.comm == out.full) out.comm.assign(stages, 0);
  return out;
}

std::string RecomputeValue(const std::vector<int>& counts, int p, int v) {
  if (std::all_of(counts.begin(), counts.end(), [](int c) { return c == 0; })) {
    return "false";
  }
  return StageList(counts, p, v);
}

Result<Emission> EmitMindFormers(const RunConfig& config) {
  const Framework f = Framework::MindFormers;
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const int p = config.shape.p, v = config.shape.v, m = config.shape.m;
  const int stages = p * v;
  const Pinned pin = PinnedLayers(layers);
  const int n = static_cast<int>(layers.size());
  for (int i = pin.lead; i < n - pin.tail; ++i) {
    if (!IsDecoder(layers[static_cast<size_t>(i)].kind)) {
      return Fail(f, fmt::format("counts only decoder layers between the embedding and "
                                 "the head/MTP layers (num_layers); got {} ({}) among "
                                 "them",
                                 layers[static_cast<size_t>(i)].name,
                                 LayerKindName(layers[static_cast<size_t>(i)].kind)));
    }
  }
  if (const int empty = FirstEmptyStage(s); empty >= 0) {
    return Fail(f, fmt::format("would give {} no layer; ppb emits no empty "
                               "stage for MindFormers",
                               StageName(empty, p)));
  }
  if (s.layers_per_stage.front() < pin.lead || s.layers_per_stage.back() < pin.tail) {
    return Fail(f,
                "keeps the embedding on the first stage and the head and "
                "MTP layers on the last (num_layers counts the decoder "
                "layers only); the strategy moves them");
  }
  std::vector<int> body = s.layers_per_stage;
  body.front() -= pin.lead;
  body.back() -= pin.tail;
  const int decoders = n - pin.lead - pin.tail;
  const int base = decoders / stages;
  std::vector<int> offset;
  for (int b : body) offset.push_back(b - base);

  Emission e;
  e.framework = f;
  std::string& text = e.text;
  AddNote(text, fmt::format("MindFormers settings for {}: {}",
                            config.model_name.empty() ? config.path : config.model_name,
                            DescribeRun(config)));
  text += "parallel_config:\n";
  text += fmt::format("  pipeline_stage: {}\n", p);
  text += fmt::format("  micro_batch_num: {}\n", m);
  text += "model:\n  model_config:\n";
  text += fmt::format("    num_layers: {}\n", decoders);
  text += fmt::format("    pp_interleave_num: {}\n", v);
  const bool zero = std::all_of(offset.begin(), offset.end(), [](int o) { return o == 0; });
  text += fmt::format("    offset: {}\n", zero ? "0" : StageList(offset, p, v));
  const MindFormersRecompute rc = MindFormersLists(config, body, pin);
  e.recompute_expressed = rc.note.empty();
  text += "recompute_config:\n";
  const std::vector<int> none(static_cast<size_t>(stages), 0);
  text += "  recompute: " + RecomputeValue(rc.note.empty() ? rc.full : none, p, v) + "\n";
  text += "  select_recompute: " + RecomputeValue(rc.note.empty() ? rc.select : none, p, v) + "\n";
  text +=
      "  select_comm_recompute: " + RecomputeValue(rc.note.empty() ? rc.comm : none, p, v) + "\n";
  std::string pinned = fmt::format(
      "stage layers = num_layers // (p*v) + offset = {} + offset (sum(offset) "
      "= num_layers mod p*v = {}); num_layers counts decoder layers only",
      base, decoders % stages);
  if (pin.lead > 0) pinned += ", the embedding stays on stage 0";
  if (pin.tail > 0) {
    pinned += fmt::format(
        ", the last stage also holds {}",
        pin.tail == 1 ? std::string("the head") : fmt::format("the {} head/MTP layers", pin.tail));
  }
  AddNote(text, pinned);
  if (config.schedule == "gpipe" || config.schedule == "custom" ||
      (config.schedule == "interleaved" && v == 1)) {
    AddNote(text, "simulated under schedule " + config.schedule +
                      "; these keys set the split and the recompute only");
  }
  if (!rc.note.empty()) AddNote(text, rc.note);
  return e;
}

// A MindFormers per-stage value: an int (offset: every stage; a recompute
// list: not allowed), a bool (recompute lists: all or none), a list of p
// (v = 1) or a [v][p] list.
Result<std::vector<int>> StageValues(const YAML::Node& node, const std::string& key, int p, int v,
                                     bool allow_bool, const std::vector<int>& all) {
  const size_t stages = static_cast<size_t>(p) * v;
  auto bad = [&](const std::string& what) { return Error{"", key + ": must be " + what}; };
  try {
    if (node.IsScalar()) {
      const std::string text = node.Scalar();
      if (text == "true" || text == "True" || text == "false" || text == "False") {
        if (!allow_bool) return bad("an int or a list");
        return text[0] == 't' || text[0] == 'T' ? all : std::vector<int>(stages, 0);
      }
      if (allow_bool) return bad("a bool, a list of p or a [v][p] list");
      return std::vector<int>(stages, node.as<int>());
    }
    if (!node.IsSequence()) return bad("an int or a list");
    std::vector<int> out;
    if (node.size() > 0 && node[0].IsSequence()) {
      if (node.size() != static_cast<size_t>(v)) {
        return bad(fmt::format("a [v][p] list with v = {} rows", v));
      }
      for (const YAML::Node& row : node) {
        if (!row.IsSequence() || row.size() != static_cast<size_t>(p)) {
          return bad(fmt::format("a [v][p] list with p = {} columns", p));
        }
        for (const YAML::Node& x : row) out.push_back(x.as<int>());
      }
      return out;
    }
    if (v != 1 || node.size() != static_cast<size_t>(p)) {
      return bad(fmt::format("a list of p = {} (v = 1) or a [v][p] list", p));
    }
    for (const YAML::Node& x : node) out.push_back(x.as<int>());
    return out;
  } catch (const YAML::Exception&) {
    return bad("integers");
  }
}

Result<EmittedPlan> ReadMindFormers(const YAML::Node& root, const std::vector<Layer>& layers);

}  // namespace

Result<EmittedPlan> ParseMindFormersYaml(std::string_view text, const std::vector<Layer>& layers) {
  try {
    return ReadMindFormers(YAML::Load(std::string(text)), layers);
  } catch (const YAML::Exception& ex) {
    return Error{"", std::string("not the MindFormers fragment: ") + ex.what()};
  }
}

namespace {

Result<EmittedPlan> ReadMindFormers(const YAML::Node& root, const std::vector<Layer>& layers) {
  EmittedPlan plan;
  const YAML::Node model = root["model"]["model_config"];
  const YAML::Node parallel = root["parallel_config"];
  try {
    if (!parallel["pipeline_stage"]) {
      return Error{"", "parallel_config.pipeline_stage: missing"};
    }
    plan.p = parallel["pipeline_stage"].as<int>();
    if (parallel["micro_batch_num"]) {
      plan.m = parallel["micro_batch_num"].as<int>();
    }
    plan.v = model["pp_interleave_num"] ? model["pp_interleave_num"].as<int>() : 1;
  } catch (const YAML::Exception&) {
    return Error{"",
                 "pipeline_stage, micro_batch_num and pp_interleave_num "
                 "must be integers"};
  }
  if (plan.p < 1 || plan.v < 1) {
    return Error{"", "pipeline_stage and pp_interleave_num must be positive"};
  }
  const int stages = plan.p * plan.v;
  const Pinned pin = PinnedLayers(layers);
  const int decoders = static_cast<int>(layers.size()) - pin.lead - pin.tail;
  try {
    if (!model["num_layers"] || model["num_layers"].as<int>() != decoders) {
      return Error{"", fmt::format("model.model_config.num_layers must be the "
                                   "model's {} decoder layers",
                                   decoders)};
    }
  } catch (const YAML::Exception&) {
    return Error{"", "model.model_config.num_layers must be an integer"};
  }
  std::vector<int> offset(static_cast<size_t>(stages), 0);
  if (model["offset"]) {
    Result<std::vector<int>> o = StageValues(model["offset"], "offset", plan.p, plan.v, false, {});
    if (!o.ok()) return o.error();
    offset = std::move(*o);
  }
  int sum = 0;
  for (int x : offset) sum += x;
  // conventions.md, MindFormers: sum(offset) must equal L mod (p*v).
  if (sum != decoders % stages) {
    return Error{"", fmt::format("offset must add up to num_layers mod p*v = "
                                 "{} mod {} = {} (MindFormers); got {}",
                                 decoders, stages, decoders % stages, sum)};
  }
  std::vector<int> body;
  for (int s = 0; s < stages; ++s) {
    const int c = decoders / stages + offset[static_cast<size_t>(s)];
    if (c < 0) {
      return Error{"", fmt::format("offset gives stage {} {} layers", s, c)};
    }
    body.push_back(c);
  }
  plan.strategy.layers_per_stage = body;
  plan.strategy.layers_per_stage.front() += pin.lead;
  plan.strategy.layers_per_stage.back() += pin.tail;

  // Recompute: the first N decoder layers of each stage per list; a layer
  // in the recompute list is full, else in both select lists
  // both_comm_select, else in one the list's mode.
  const YAML::Node rcfg = root["recompute_config"];
  std::vector<std::vector<int>> lists;
  for (const char* key : {"recompute", "select_recompute", "select_comm_recompute"}) {
    std::vector<int> counts(static_cast<size_t>(stages), 0);
    if (rcfg && rcfg[key]) {
      Result<std::vector<int>> c = StageValues(rcfg[key], key, plan.p, plan.v, true, body);
      if (!c.ok()) return c.error();
      counts = std::move(*c);
      for (int s = 0; s < stages; ++s) {
        if (counts[s] < 0 || counts[s] > body[s]) {
          return Error{"", fmt::format("{}: stage {} has {} decoder layers; "
                                       "got {}",
                                       key, s, body[s], counts[s])};
        }
      }
    }
    lists.push_back(std::move(counts));
  }
  std::vector<std::uint8_t>& rc = plan.strategy.recompute;
  rc.assign(layers.size(), 0);
  size_t i = static_cast<size_t>(pin.lead);
  for (int s = 0; s < stages; ++s) {
    for (int k = 0; k < body[s]; ++k, ++i) {
      const bool full = k < lists[0][s], sel = k < lists[1][s], comm = k < lists[2][s];
      const char* mode = full          ? "full"
                         : sel && comm ? "both_comm_select"
                         : sel         ? "selective"
                         : comm        ? "select_comm"
                                       : nullptr;
      if (mode == nullptr) continue;
      rc[i] = OptionIndex(layers[i], mode);
      if (rc[i] == 0) {
        return Error{"", fmt::format("layer {} offers no recompute mode {}", layers[i].name, mode)};
      }
    }
  }
  return plan;
}

// ---- torchtitan -----------------------------------------------------------

constexpr const char* kCsvName = "ppb-schedule.csv";

// torch's name of a ppb schedule (conventions.md, torch schedule names).
const char* TorchScheduleName(const std::string& schedule) {
  if (schedule == "gpipe") return "GPipe";
  if (schedule == "1f1b") return "1F1B";
  if (schedule == "interleaved") return "Interleaved1F1B";
  return "PipelineScheduleMulti";
}

// torchtitan module names of each layer: tok_embeddings, layers.N, and
// norm + output for the head.
std::vector<std::string> TorchtitanModules(const std::vector<Layer>& layers, size_t begin,
                                           size_t end) {
  std::vector<std::string> out;
  int decoder = 0;
  for (size_t i = 0; i < end; ++i) {
    const LayerKind k = layers[i].kind;
    std::vector<std::string> names;
    if (k == LayerKind::Embedding) {
      names = {"tok_embeddings"};
    } else if (k == LayerKind::Head) {
      names = {"norm", "output"};
    } else {
      names = {"layers." + std::to_string(decoder++)};
    }
    if (i >= begin) out.insert(out.end(), names.begin(), names.end());
  }
  return out;
}

Result<Emission> EmitTorchtitan(const RunConfig& config, const Program& program) {
  const Framework f = Framework::Torchtitan;
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const int p = config.shape.p, v = config.shape.v, m = config.shape.m;
  if (Status st = CheckEmbeddingFirstHeadLast(f, layers, false); !st.ok()) {
    return st.error();
  }
  for (const Layer& l : layers) {
    if (l.kind == LayerKind::Other) {
      return Fail(f, "has no module name for layer " + l.name +
                         " (kind other); torchtitan's LLM modules are "
                         "tok_embeddings, layers.N, norm and output");
    }
  }
  if (const int empty = FirstEmptyStage(s); empty >= 0) {
    return Fail(f, fmt::format("would give {} no module; ppb emits no empty stage for "
                               "torchtitan (its own generate_llm_fqn_per_model_part "
                               "refuses them)",
                               StageName(empty, p)));
  }

  // The order torch's named schedule runs (its rules: conventions.md, torch;
  // README "Schedules", flavor pytorch); the CSV when it is not the one
  // simulated.
  std::string why_csv;
  if (config.schedule == "custom") {
    why_csv = "the simulated order is a custom schedule CSV";
  } else {
    RunConfig torch = config;
    torch.schedule_params = ScheduleParams{Flavor::PyTorch, 0};
    Result<PreparedRun> run = Prepare(torch);
    if (!run.ok()) {
      why_csv = fmt::format("torch's {} refuses this shape ({})",
                            TorchScheduleName(config.schedule), run.error().message);
    } else if (run->program.ops != program.ops) {
      why_csv = fmt::format("torch's {} runs another order than the simulated one ({})",
                            TorchScheduleName(config.schedule), DescribeRun(config));
    }
  }

  Emission e;
  e.framework = f;
  std::string& text = e.text;
  AddNote(text, fmt::format("torchtitan job config for {}: {}",
                            config.model_name.empty() ? config.path : config.model_name,
                            DescribeRun(config)));
  text += "[parallelism]\n";
  text += fmt::format("pipeline_parallel_degree = {}\n", p);
  const bool csv = !why_csv.empty();
  text += fmt::format("pipeline_parallel_schedule = \"{}\"\n",
                      csv ? "PipelineScheduleMulti" : TorchScheduleName(config.schedule));
  if (csv) {
    text += fmt::format("pipeline_parallel_schedule_csv = \"{}\"\n", kCsvName);
    e.schedule_csv = DumpScheduleCsv(program);
  }
  text += "module_fqns_per_model_part = [\n";
  const std::vector<size_t> starts = StageStarts(s.layers_per_stage);
  for (size_t st = 0; st + 1 < starts.size(); ++st) {
    std::string row;
    for (const std::string& name : TorchtitanModules(layers, starts[st], starts[st + 1])) {
      if (!row.empty()) row += ", ";
      row += "\"" + name + "\"";
    }
    text += "  [" + row + "],\n";
  }
  text += "]\n";

  // Activation checkpointing: torchtitan applies one mode to every
  // transformer block; ppb maps none and all-"full".
  std::string ac = "none", note;
  if (AnyRecompute(s)) {
    bool all_full = true;
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string mode = ModeOf(layers, s, i);
      const bool decoder = IsDecoder(layers[i].kind);
      if ((decoder && mode != "full") || (!decoder && !mode.empty())) {
        all_full = false;
      }
    }
    if (all_full) {
      ac = "full";
    } else {
      e.recompute_expressed = false;
      note =
          "activation checkpointing left off: torchtitan applies one mode "
          "to every transformer block, and the strategy recomputes " +
          RecomputeSummary(config);
    }
  }
  text += "\n[activation_checkpoint]\n";
  text += fmt::format("mode = \"{}\"\n", ac);
  AddNote(text, fmt::format("stage s = chunk * p + rank (torchtitan's loop style), {} "
                            "stage(s) per rank; m = {} micro-batches: set "
                            "training.local_batch_size = {} x "
                            "pipeline_parallel_microbatch_size",
                            v, m, m));
  if (csv) {
    AddNote(text, why_csv +
                      "; save the schedule CSV printed with this "
                      "fragment as " +
                      kCsvName + " (torch's _load_csv format)");
  }
  if (!note.empty()) AddNote(text, note);
  return e;
}

// The ppb strategy of a torchtitan module list: each name must be the next
// module of the model, in order.
Result<std::vector<int>> TorchtitanCounts(const Value& parts, const std::vector<Layer>& layers) {
  const std::vector<std::string> all = TorchtitanModules(layers, 0, layers.size());
  // Owner layer of each module name.
  std::vector<size_t> owner;
  for (size_t i = 0; i < layers.size(); ++i) {
    const size_t k = TorchtitanModules(layers, i, i + 1).size();
    for (size_t j = 0; j < k; ++j) owner.push_back(i);
  }
  if (parts.kind != Value::Kind::List) {
    return Error{"", "module_fqns_per_model_part must be a list of lists"};
  }
  std::vector<int> counts;
  size_t next = 0;
  for (const Value& stage : parts.list) {
    if (stage.kind != Value::Kind::List) {
      return Error{"", "module_fqns_per_model_part must be a list of lists"};
    }
    int n = 0;
    for (size_t j = 0; j < stage.list.size(); ++j) {
      const Value& name = stage.list[j];
      if (name.kind != Value::Kind::String || next >= all.size() || name.s != all[next]) {
        return Error{"", fmt::format("module_fqns_per_model_part: expected \"{}\" next "
                                     "(every module once, in model order); got {}",
                                     next < all.size() ? all[next] : "nothing",
                                     name.kind == Value::Kind::String ? "\"" + name.s + "\""
                                                                      : "a non-string")};
      }
      // The modules of one layer (the head's norm and output) must be in
      // one stage.
      if (next == 0 || owner[next] != owner[next - 1]) {
        ++n;
      } else if (j == 0) {
        return Error{"",
                     "module_fqns_per_model_part: norm and output must be "
                     "in the same stage"};
      }
      ++next;
    }
    counts.push_back(n);
  }
  if (next != all.size()) {
    return Error{
        "", "module_fqns_per_model_part: must name every module; \"" + all[next] + "\" is missing"};
  }
  return counts;
}

}  // namespace

Result<EmittedPlan> ParseTorchtitanToml(std::string_view text, const std::vector<Layer>& layers) {
  auto a = ReadAssignments(text);
  if (!a.ok()) return a.error();
  EmittedPlan plan;
  Result<std::int64_t> p = IntAt(*a, "parallelism.pipeline_parallel_degree", 1);
  if (!p.ok()) return p.error();
  plan.p = static_cast<int>(*p);
  auto parts = a->find("parallelism.module_fqns_per_model_part");
  if (parts == a->end()) {
    return Error{"", "parallelism.module_fqns_per_model_part: missing"};
  }
  Result<std::vector<int>> counts = TorchtitanCounts(parts->second, layers);
  if (!counts.ok()) return counts.error();
  const int stages = static_cast<int>(counts->size());
  // torchtitan's pipeline_module_split: num_stages must be divisible by the
  // degree; single-stage schedules take one stage per rank.
  if (stages % plan.p != 0) {
    return Error{"", fmt::format("{} stages must be divisible by "
                                 "pipeline_parallel_degree {} (torchtitan)",
                                 stages, plan.p)};
  }
  plan.v = stages / plan.p;
  auto sched = a->find("parallelism.pipeline_parallel_schedule");
  const std::string name =
      sched != a->end() && sched->second.kind == Value::Kind::String ? sched->second.s : "1F1B";
  if ((name == "1F1B" || name == "GPipe") && plan.v != 1) {
    return Error{"", fmt::format("{} runs one stage per rank (torch "
                                 "PipelineScheduleSingle); got {} per rank",
                                 name, plan.v)};
  }
  plan.strategy.layers_per_stage = std::move(*counts);
  plan.strategy.recompute.assign(layers.size(), 0);
  auto mode = a->find("activation_checkpoint.mode");
  if (mode != a->end()) {
    if (mode->second.kind != Value::Kind::String ||
        (mode->second.s != "none" && mode->second.s != "full")) {
      return Error{"",
                   "activation_checkpoint.mode: ppb reads \"none\" or "
                   "\"full\""};
    }
    if (mode->second.s == "full") {
      if (Status st = SetOnDecoders(layers, "full", plan.strategy.recompute); !st.ok()) {
        return st.error();
      }
    }
  }
  return plan;
}

namespace {

// ---- DeepSpeed ------------------------------------------------------------

Result<Emission> EmitDeepSpeed(const RunConfig& config) {
  const Framework f = Framework::DeepSpeed;
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const int p = config.shape.p, v = config.shape.v, m = config.shape.m;
  if (v != 1) {
    return Fail(f, fmt::format("runs one stage per rank (PipelineModule "
                               "num_stages = pipeline ranks, no "
                               "interleaving); got v = {}",
                               v));
  }
  if (const int empty = FirstEmptyStage(s); empty >= 0) {
    return Fail(f, fmt::format("would give {} no layer; ppb emits no empty "
                               "DeepSpeed stage (its optimizer would get no "
                               "parameters)",
                               StageName(empty, p)));
  }
  // conventions.md, DeepSpeed: only a global activation_checkpoint_interval
  // (1 = every layer checkpointed on its own).
  int interval = 0;
  std::string note;
  if (AnyRecompute(s)) {
    bool all_full = true;
    for (size_t i = 0; i < layers.size(); ++i) {
      const bool offers = OptionIndex(layers[i], "full") != 0;
      if (ModeOf(layers, s, i) != (offers ? "full" : "")) all_full = false;
    }
    if (all_full) {
      interval = 1;
    } else {
      note =
          "activation_checkpoint_interval 0: DeepSpeed has only a global "
          "interval (no per-stage or per-layer choice), and the strategy "
          "recomputes " +
          RecomputeSummary(config);
    }
  }
  Emission e;
  e.framework = f;
  e.recompute_expressed = note.empty();
  std::string& text = e.text;
  AddNote(text, fmt::format("DeepSpeed PipelineModule settings for {}: {}",
                            config.model_name.empty() ? config.path : config.model_name,
                            DescribeRun(config)));
  std::vector<int> parts = {0};
  for (int c : s.layers_per_stage) parts.push_back(parts.back() + c);
  text += fmt::format("num_stages = {}\n", p);
  text += "parts = [" + JoinInts(parts) + "]\n";
  text += fmt::format("activation_checkpoint_interval = {}\n", interval);
  text += fmt::format("gradient_accumulation_steps = {}\n", m);
  AddNote(text, fmt::format("stage s holds layers[parts[s]:parts[s+1]] of the "
                            "PipelineModule's layer list, one entry per ppb layer in "
                            "order ({} first, {} last); partition_method "
                            "'parameters', 'uniform' and 'type:<regex>' compute their "
                            "own boundaries, so set PipelineModule.parts to these; "
                            "gradient_accumulation_steps (DeepSpeed config) = "
                            "micro-batches per step",
                            layers.front().name, layers.back().name));
  if (interval == 1) {
    AddNote(text,
            "at interval 1 DeepSpeed checkpoints every layer with parameters; "
            "PipelineModule's checkpointable_layers (class names) keeps it to "
            "the layers ppb recomputes (those offering full)");
  }
  if (config.schedule != "1f1b") {
    AddNote(text,
            "DeepSpeed runs its own 1F1B-style TrainSchedule; simulated "
            "under schedule " +
                config.schedule);
  }
  if (!note.empty()) AddNote(text, note);
  return e;
}

Result<std::vector<int>> IntList(const std::map<std::string, Value>& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) return Error{"", key + ": missing"};
  if (it->second.kind != Value::Kind::List) {
    return Error{"", key + ": must be a list of integers"};
  }
  std::vector<int> out;
  for (const Value& x : it->second.list) {
    if (x.kind != Value::Kind::Int) {
      return Error{"", key + ": must be a list of integers"};
    }
    out.push_back(static_cast<int>(x.i));
  }
  return out;
}

}  // namespace

Result<EmittedPlan> ParseDeepSpeed(std::string_view text, const std::vector<Layer>& layers) {
  auto a = ReadAssignments(text);
  if (!a.ok()) return a.error();
  EmittedPlan plan;
  Result<std::int64_t> p = IntAt(*a, "num_stages", 1);
  if (!p.ok()) return p.error();
  plan.p = static_cast<int>(*p);
  Result<std::vector<int>> parts = IntList(*a, "parts");
  if (!parts.ok()) return parts.error();
  if (parts->size() != static_cast<size_t>(plan.p) + 1 || parts->front() != 0 ||
      parts->back() != static_cast<int>(layers.size())) {
    return Error{"", fmt::format("parts must have num_stages + 1 = {} "
                                 "boundaries from 0 to the {} layers",
                                 plan.p + 1, layers.size())};
  }
  for (size_t s = 0; s + 1 < parts->size(); ++s) {
    const int c = (*parts)[s + 1] - (*parts)[s];
    if (c <= 0) {
      return Error{"", fmt::format("parts must increase; stage {} gets {} "
                                   "layers",
                                   s, c)};
    }
    plan.strategy.layers_per_stage.push_back(c);
  }
  if (a->count("gradient_accumulation_steps") != 0) {
    Result<std::int64_t> m = IntAt(*a, "gradient_accumulation_steps", 1);
    if (!m.ok()) return m.error();
    plan.m = static_cast<int>(*m);
  }
  plan.strategy.recompute.assign(layers.size(), 0);
  Result<std::int64_t> interval = IntAt(*a, "activation_checkpoint_interval", 0);
  if (!interval.ok()) return interval.error();
  if (*interval > 1) {
    return Error{"", "activation_checkpoint_interval: ppb reads 0 or 1"};
  }
  if (*interval == 1) {
    for (size_t i = 0; i < layers.size(); ++i) {
      plan.strategy.recompute[i] = OptionIndex(layers[i], "full");
    }
  }
  return plan;
}

Result<EmittedPlan> ParseEmission(Framework framework, std::string_view text,
                                  const std::vector<Layer>& layers) {
  switch (framework) {
    case Framework::Megatron:
      return ParseMegatronArgs(text, layers);
    case Framework::MindFormers:
      return ParseMindFormersYaml(text, layers);
    case Framework::Torchtitan:
      return ParseTorchtitanToml(text, layers);
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
    case Framework::DeepSpeed:
      return "deepspeed";
  }
  return "?";
}

Result<std::vector<Framework>> ParseFrameworks(const std::string& flag, std::string_view text) {
  static constexpr Framework kAll[] = {Framework::Megatron, Framework::MindFormers,
                                       Framework::Torchtitan, Framework::DeepSpeed};
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
                   "expected megatron, mindformers, torchtitan or "
                   "deepspeed (or a comma-separated list); got '" +
                       std::string(text) + "'"};
    }
    if (std::find(out.begin(), out.end(), *found) == out.end()) {
      out.push_back(*found);
    }
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
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
      e = EmitTorchtitan(config, program);
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
  return j.dump(2) + "\n";
}

}  // namespace ppb
