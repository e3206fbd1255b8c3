// ReadMegatronLaunch (apps/input/megatron_launch.h): Megatron-LM's
// arguments, from a launch script's command or a log's arguments block, by
// their argparse destination names, written out as a ppb config whose every
// line remembers the argument it came from.
#include "apps/input/megatron_launch.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

#include "apps/input/launch_script.h"

namespace ppb {
namespace {

// An argument Megatron-LM would not accept as ppb reads it.
struct Bad {
  std::string message;
};

[[noreturn]] void Fail(std::string message) { throw Bad{std::move(message)}; }

// The title line of `_print_args("arguments", args)`.
constexpr std::string_view kArgsHeader =
    "------------------------ arguments ------------------------";
constexpr std::string_view kArgsFooter =
    "-------------------- end of arguments ---------------------";

struct Arg {
  std::string flag;   // as written: "--hidden-size", or the log's "hidden_size"
  std::string value;  // "True" for a flag given alone; values joined by ' '
  std::string where;  // "train.sh:57"
  bool unknown = false;
  bool read = false;
};

// Megatron's destination names where the flag's own name differs
// (transformer_config.py argparse_meta arg_names).
std::string DestOf(std::string flag) {
  std::replace(flag.begin(), flag.end(), '-', '_');
  if (flag == "fp8_format") return "fp8";
  if (flag == "fp4_format") return "fp4";
  return flag;
}

class Args {
 public:
  Args(std::string path, bool log) : path_(std::move(path)), log_(log) {}

  void Set(const std::string& dest, Arg a) {
    if (by_dest_.count(dest) == 0) order_.push_back(dest);
    by_dest_[dest] = std::move(a);
  }

  // The argument when given (a log's None is not given).
  const Arg* Find(const std::string& dest) {
    auto it = by_dest_.find(dest);
    if (it == by_dest_.end()) return nullptr;
    it->second.read = true;
    if (it->second.value == "None") return nullptr;
    if (it->second.unknown) {
      Fail(fmt::format("{}: {}: must be a value the script sets; got the output of a command "
                       "ppb does not run",
                       it->second.where, it->second.flag));
    }
    return &it->second;
  }

  // "file:line" of the argument, or the file when it was not given.
  std::string Line(const std::string& dest) const {
    const Arg* a = Peek(dest);
    return a != nullptr ? a->where : path_;
  }
  std::string Where(const std::string& dest) {
    const Arg* a = Peek(dest);
    return a != nullptr ? a->where + ": " + a->flag : path_;
  }
  const Arg* Peek(const std::string& dest) const {
    auto it = by_dest_.find(dest);
    return it == by_dest_.end() ? nullptr : &it->second;
  }

  bool Flag(const std::string& dest) {
    const Arg* a = Find(dest);
    if (a == nullptr) return false;
    if (a->value == "True") return true;
    if (a->value == "False") return false;
    Fail(fmt::format("{}: {}: must be given without a value (a switch); got '{}'", a->where,
                     a->flag, Abbreviate(a->value)));
  }

  std::optional<std::int64_t> Int(const std::string& dest, std::int64_t min) {
    const Arg* a = Find(dest);
    if (a == nullptr) return std::nullopt;
    std::int64_t x = 0;
    const std::string& s = a->value;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || x < min ||
        x > 1'000'000'000) {
      Fail(fmt::format("{}: {}: must be an integer from {} to 1000000000; got '{}'", a->where,
                       a->flag, min, Abbreviate(s)));
    }
    return x;
  }

  std::optional<double> Number(const std::string& dest, double min, double max) {
    const Arg* a = Find(dest);
    if (a == nullptr) return std::nullopt;
    double x = 0;
    const std::string& s = a->value;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !(x >= min && x <= max)) {
      Fail(fmt::format("{}: {}: must be a number from {} to {}; got '{}'", a->where, a->flag,
                       min, max, Abbreviate(s)));
    }
    return x;
  }

  // A string value; a log's Python list ['a', 'b'] reads as "a b".
  std::optional<std::string> Str(const std::string& dest, bool flatten = true) {
    const Arg* a = Find(dest);
    if (a == nullptr) return std::nullopt;
    std::string s = a->value;
    if (log_ && flatten && s.size() >= 2 && s.front() == '[' && s.back() == ']') {
      std::string out;
      for (char c : s.substr(1, s.size() - 2)) {
        if (c == '\'' || c == '"') continue;
        out += c == ',' ? ' ' : c;
      }
      s.clear();
      bool space = true;
      for (char c : out) {
        if (c == ' ') {
          if (!space) s += ' ';
          space = true;
        } else {
          s += c;
          space = false;
        }
      }
      while (!s.empty() && s.back() == ' ') s.pop_back();
    }
    // A quoted value the script passed through (--split '99,1,0').
    if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) {
      s = s.substr(1, s.size() - 2);
    }
    return s;
  }

  // One of `choices`.
  std::optional<std::string> Choice(const std::string& dest,
                                    std::initializer_list<std::string_view> choices) {
    std::optional<std::string> s = Str(dest);
    if (!s) return s;
    if (std::find(choices.begin(), choices.end(), *s) == choices.end()) {
      std::vector<std::string> names(choices.begin(), choices.end());
      Fail(fmt::format("{}: must be one of {} (ppb reads these); got '{}'", Where(dest),
                       fmt::join(names, ", "), Abbreviate(*s)));
    }
    return s;
  }

  // The flags given that nothing read.
  std::vector<std::string> Unread() const {
    std::vector<std::string> out;
    for (const std::string& d : order_) {
      const Arg& a = by_dest_.at(d);
      if (!a.read) out.push_back(a.flag);
    }
    return out;
  }

  bool log() const { return log_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool log_;
  std::map<std::string, Arg> by_dest_;
  std::vector<std::string> order_;
};

// ---- reading the two forms -------------------------------------------------

// A launch command's arguments: "--flag v1 v2" or "--flag=v"; a flag given
// twice keeps its last value (argparse).
void ReadCommandArgs(const std::string& path, const std::vector<LaunchWord>& words, Args& args) {
  for (size_t k = 0; k < words.size();) {
    const LaunchWord& w = words[k];
    if (w.text.size() < 3 || w.text.compare(0, 2, "--") != 0) {
      Fail(fmt::format("{}:{}: '{}': must be a --flag or its value; got a word after no flag",
                       path, w.line, Abbreviate(w.text)));
    }
    Arg a;
    a.where = fmt::format("{}:{}", path, w.line);
    std::string flag = w.text;
    const size_t eq = flag.find('=');
    std::vector<std::string> values;
    bool unknown = w.unknown;
    if (eq != std::string::npos) {
      values.push_back(flag.substr(eq + 1));
      flag = flag.substr(0, eq);
    }
    ++k;
    while (k < words.size() && words[k].text.compare(0, 2, "--") != 0) {
      values.push_back(words[k].text);
      unknown = unknown || words[k].unknown;
      ++k;
    }
    a.flag = flag;
    a.unknown = unknown;
    if (values.empty()) {
      a.value = "True";
    } else {
      for (size_t v = 0; v < values.size(); ++v) a.value += (v > 0 ? " " : "") + values[v];
    }
    args.Set(DestOf(flag.substr(2)), std::move(a));
  }
}

// The first arguments block of a log. Lines are "  NAME DOTS VALUE" with
// 48 - len(NAME) dots (none past 48), after whatever prefix the launcher
// put before the block's title line.
bool ReadLogArgs(const std::string& path, std::string_view text, Args& args) {
  size_t pos = 0;
  int line = 0;
  bool in = false;
  std::string prefix;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (!in) {
      const size_t h = l.find(kArgsHeader);
      if (h == std::string_view::npos) continue;
      prefix = std::string(l.substr(0, h));
      in = true;
      continue;
    }
    if (l.find(kArgsFooter) != std::string_view::npos) return true;
    if (l.compare(0, prefix.size(), prefix) == 0) l.remove_prefix(prefix.size());
    if (l.size() < 3 || l.compare(0, 2, "  ") != 0) {
      Fail(fmt::format("{}:{}: the arguments block: must hold \"  NAME ... VALUE\" lines "
                       "until its end line; got '{}'",
                       path, line, Abbreviate(l)));
    }
    l.remove_prefix(2);
    const size_t sp = l.find(' ');
    if (sp == std::string_view::npos) {
      Fail(fmt::format("{}:{}: the arguments block: must give NAME and VALUE; got '{}'", path,
                       line, Abbreviate(l)));
    }
    const std::string name(l.substr(0, sp));
    const size_t dots = name.size() < 48 ? 48 - name.size() : 0;
    std::string_view rest = l.substr(sp + 1);
    if (rest.size() < dots + 1 || rest.substr(0, dots) != std::string(dots, '.') ||
        rest[dots] != ' ') {
      Fail(fmt::format("{}:{}: {}: must be followed by {} dots and its value (Megatron-LM's "
                       "_print_args); got '{}'",
                       path, line, name, dots, Abbreviate(rest)));
    }
    Arg a;
    a.flag = name;
    a.value = std::string(rest.substr(dots + 1));
    a.where = fmt::format("{}:{}", path, line);
    args.Set(name, std::move(a));
  }
  if (in) {
    Fail(fmt::format("{}: the arguments block: must end with its \"end of arguments\" line; "
                     "got the end of the file",
                     path));
  }
  return false;
}

// ---- a Python list pattern: "([0]*3+[1]*58)" -------------------------------

class Pattern {
 public:
  Pattern(std::string_view s, std::string where) : s_(s), where_(std::move(where)) {}
  std::vector<int> Run() {
    std::vector<int> v = Sum(0);
    Skip();
    if (i_ != s_.size()) Bad();
    return v;
  }

 private:
  [[noreturn]] void Bad() {
    Fail(fmt::format("{}: must be an integer or a list pattern such as ([0]*3+[1]*58) "
                     "(Megatron-LM's moe_freq_type); got '{}'",
                     where_, Abbreviate(s_)));
  }
  void Skip() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  std::vector<int> Sum(int depth) {
    if (depth > 32) Bad();
    std::vector<int> v = Product(depth);
    Skip();
    while (i_ < s_.size() && s_[i_] == '+') {
      ++i_;
      std::vector<int> w = Product(depth);
      v.insert(v.end(), w.begin(), w.end());
      if (v.size() > 100000) Bad();
      Skip();
    }
    return v;
  }
  std::vector<int> Product(int depth) {
    std::vector<int> v = Atom(depth);
    Skip();
    while (i_ < s_.size() && s_[i_] == '*') {
      ++i_;
      Skip();
      const std::int64_t n = Integer();
      if (n < 0 || static_cast<std::int64_t>(v.size()) * n > 100000) Bad();
      std::vector<int> w;
      for (std::int64_t k = 0; k < n; ++k) w.insert(w.end(), v.begin(), v.end());
      v = std::move(w);
      Skip();
    }
    return v;
  }
  std::vector<int> Atom(int depth) {
    Skip();
    if (i_ >= s_.size()) Bad();
    if (s_[i_] == '(') {
      ++i_;
      std::vector<int> v = Sum(depth + 1);
      Skip();
      if (i_ >= s_.size() || s_[i_] != ')') Bad();
      ++i_;
      return v;
    }
    if (s_[i_] != '[') Bad();
    ++i_;
    std::vector<int> v;
    Skip();
    while (i_ < s_.size() && s_[i_] != ']') {
      v.push_back(static_cast<int>(Integer()));
      if (v.back() != 0 && v.back() != 1) Bad();
      Skip();
      if (i_ < s_.size() && s_[i_] == ',') ++i_;
      Skip();
    }
    if (i_ >= s_.size()) Bad();
    ++i_;
    return v;
  }
  std::int64_t Integer() {
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + s_.size(), x);
    if (ec != std::errc()) Bad();
    i_ = static_cast<size_t>(p - s_.data());
    return x;
  }
  std::string_view s_;
  std::string where_;
  size_t i_ = 0;
};

// ---- the ppb config being written -----------------------------------------

class Out {
 public:
  void Line(int indent, const std::string& text, const std::string& origin = "") {
    yaml_ += std::string(static_cast<size_t>(indent), ' ') + text + "\n";
    origins_.push_back(origin);
  }
  template <class T>
  void Key(int indent, const std::string& key, const T& value, const std::string& origin) {
    Line(indent, fmt::format("{}: {}", key, value), origin);
  }
  void Text(int indent, const std::string& key, const std::string& value,
            const std::string& origin) {
    std::string q = "\"";
    for (char c : value) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    Line(indent, key + ": " + q + "\"", origin);
  }
  // Lines copied from another file, placed at their own lines.
  void Copy(std::string_view text, const std::string& path) {
    size_t pos = 0;
    int line = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string_view::npos) nl = text.size();
      std::string l(text.substr(pos, nl - pos));
      pos = nl + 1;
      ++line;
      if (l == "---" || l == "...") l = "# " + l;
      Line(0, l, fmt::format("{}:{}", path, line));
    }
  }
  std::string yaml_;
  std::vector<std::string> origins_;
};

std::string Bool(bool b) { return b ? "true" : "false"; }

// ---- the translation --------------------------------------------------------

struct World {
  std::int64_t gpus = 1;
  std::string origin;  // where the number came from
  std::string text;    // how it reads in messages
};

World WorldSize(Args& args, const LaunchCommand* launch, const std::string& path,
                const LaunchInputs& in, std::vector<std::string>& notes) {
  World w;
  std::optional<World> from_file;
  if (args.log()) {
    if (auto ws = args.Int("world_size", 1)) {
      from_file = World{*ws, args.Where("world_size"), fmt::format("world_size {}", *ws)};
    }
  } else if (launch != nullptr) {
    std::optional<std::int64_t> per_node;
    std::int64_t nodes = 1;
    std::string where = fmt::format("{}:{}", path, launch->line);
    bool torchrun = false;
    for (size_t k = 0; k < launch->launcher.size(); ++k) {
      const LaunchWord& x = launch->launcher[k];
      const std::string& t = x.text;
      if (t == "torchrun" || t == "torch.distributed.run" || t == "torch.distributed.launch" ||
          (t.size() >= 9 && t.compare(t.size() - 9, 9, "/torchrun") == 0)) {
        torchrun = true;
      }
      std::string name = t;
      std::string value;
      const size_t eq = t.find('=');
      if (eq != std::string::npos) {
        name = t.substr(0, eq);
        value = t.substr(eq + 1);
      } else if (k + 1 < launch->launcher.size()) {
        value = launch->launcher[k + 1].text;
      }
      const bool nproc = name == "--nproc_per_node" || name == "--nproc-per-node";
      if (!nproc && name != "--nnodes") continue;
      std::int64_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || p != value.data() + value.size() || n < 1 ||
          n > 1'000'000 || x.unknown) {
        if (in.gpus) continue;
        Fail(fmt::format("{}:{}: torchrun {}: must be a positive integer, or give --gpus N "
                         "(the world size); got '{}'",
                         path, x.line, name, Abbreviate(value)));
      }
      where = fmt::format("{}:{}", path, x.line);
      if (nproc) {
        per_node = n;
      } else {
        nodes = n;
      }
    }
    if (torchrun && per_node) {
      from_file = World{*per_node * nodes, where + ": torchrun --nproc_per_node x --nnodes",
                        fmt::format("torchrun --nproc_per_node {} x --nnodes {} = {} GPUs",
                                    *per_node, nodes, *per_node * nodes)};
    } else if (!torchrun) {
      from_file = World{1, where, "one process (no torchrun)"};
    } else if (!in.gpus) {
      Fail(fmt::format("{}:{}: torchrun: must give --nproc_per_node, or give --gpus N (the "
                       "world size); got neither",
                       path, launch->line));
    }
  }
  if (in.gpus) {
    w = World{*in.gpus, "--gpus", fmt::format("--gpus {}", *in.gpus)};
    if (from_file && from_file->gpus != *in.gpus) {
      notes.push_back(fmt::format("world size {} from --gpus (the file says {})", *in.gpus,
                                  from_file->text));
    }
    return w;
  }
  if (!from_file) {
    Fail(fmt::format("{}: the world size: must be given by world_size or --gpus N; got "
                     "neither",
                     path));
  }
  return *from_file;
}

MegatronRun Translate(Args& a, const LaunchCommand* launch, const std::string& path,
                      const LaunchInputs& in) {
  MegatronRun run;
  Out o;
  std::vector<std::string>& notes = run.notes;
  auto where = [&](const std::string& dest) { return a.Where(dest); };
  auto need_int = [&](const std::string& dest, std::int64_t min) {
    std::optional<std::int64_t> v = a.Int(dest, min);
    if (!v) {
      Fail(fmt::format("{}: --{}: must be given (Megatron-LM requires it); got nothing", path,
                       [&] {
                         std::string f = dest;
                         std::replace(f.begin(), f.end(), '_', '-');
                         return f;
                       }()));
    }
    return *v;
  };

  // ---- parallel sizes and the world --------------------------------------
  const std::int64_t t = a.Int("tensor_model_parallel_size", 1).value_or(1);
  const std::int64_t p = a.Int("pipeline_model_parallel_size", 1).value_or(1);
  const std::int64_t cp = a.Int("context_parallel_size", 1).value_or(1);
  const std::int64_t ep = a.Int("expert_model_parallel_size", 1).value_or(1);
  const World world = WorldSize(a, launch, path, in, notes);
  const std::int64_t model_size = t * p * cp;
  if (world.gpus % model_size != 0) {
    Fail(fmt::format("{}: --tensor-model-parallel-size {} x --pipeline-model-parallel-size {} "
                     "x --context-parallel-size {} = {}: must divide the world size "
                     "(Megatron-LM's assert); got {} ({})",
                     a.Line("tensor_model_parallel_size"), t, p, cp, model_size, world.gpus,
                     world.text));
  }
  const std::int64_t d = world.gpus / model_size;

  // ---- model -------------------------------------------------------------
  const std::int64_t layers = need_int("num_layers", 1);
  const std::int64_t h = need_int("hidden_size", 1);
  const std::int64_t heads = need_int("num_attention_heads", 1);
  const bool swiglu = a.Flag("swiglu");
  std::int64_t ffn = 0;
  std::string ffn_origin = where("ffn_hidden_size");
  if (auto f = a.Int("ffn_hidden_size", 1)) {
    ffn = *f;
  } else {
    // arguments.py validate_args: 4h, or int(4h * 2/3 / 64) * 64 with SwiGLU.
    ffn = swiglu ? static_cast<std::int64_t>((4.0 * static_cast<double>(h) * 2 / 3) / 64) * 64
                 : 4 * h;
    ffn_origin = where("hidden_size");
    notes.push_back(fmt::format("ffn_hidden_size {} (Megatron's default for --hidden-size {}{})",
                                ffn, h, swiglu ? " with --swiglu" : ""));
  }
  const bool mla = a.Flag("multi_latent_attention");
  const bool gqa = a.Flag("group_query_attention");
  std::optional<std::int64_t> groups = a.Int("num_query_groups", 1);
  const std::optional<std::int64_t> kv_channels = a.Int("kv_channels", 1);

  // The vocabulary: Megatron pads it to a multiple of
  // --make-vocab-size-divisible-by (default 128) x TP.
  std::int64_t vocab = 0;
  std::string vocab_origin;
  if (auto pv = a.Int("padded_vocab_size", 1)) {
    vocab = *pv;
    vocab_origin = where("padded_vocab_size");
  } else {
    std::optional<std::int64_t> orig = a.Int("vocab_size", 1);
    vocab_origin = where("vocab_size");
    const std::optional<std::string> tok = a.Str("tokenizer_type");
    const bool bpe_files = !tok && a.Str("vocab_file") && a.Str("merge_file");
    if (!orig && ((tok && *tok == "GPT2BPETokenizer") || bpe_files)) {
      orig = 50257;  // GPT-2's BPE vocabulary (gpt2-vocab.json)
      vocab_origin = bpe_files ? where("vocab_file") : where("tokenizer_type");
      notes.push_back(bpe_files ? "vocabulary 50257 (GPT-2's BPE, read from --vocab-file and "
                                  "--merge-file as the example's gpt2-vocab.json; the files "
                                  "are not read)"
                                : "vocabulary 50257 (GPT2BPETokenizer's)");
    } else if (!orig && tok && *tok == "Llama2Tokenizer") {
      // Llama 2's (and Mistral's, Mixtral's) SentencePiece model: 32000
      // tokens. The --tokenizer-model file itself is not read.
      orig = 32000;
      vocab_origin = where("tokenizer_type");
      notes.push_back("vocabulary 32000 (Llama2Tokenizer with Llama 2's tokenizer.model; the "
                      "file is not read)");
    }
    if (!orig) {
      Fail(fmt::format("{}: --vocab-size: must be given (ppb does not read tokenizer {}); got "
                       "nothing",
                       path, tok ? "'" + *tok + "'" : "files"));
    }
    const std::int64_t div = a.Int("make_vocab_size_divisible_by", 1).value_or(128);
    const std::int64_t multiple = div * t;
    vocab = (*orig + multiple - 1) / multiple * multiple;
    if (vocab != *orig) {
      notes.push_back(fmt::format("vocabulary {} padded to {} (a multiple of {} x TP {})", *orig,
                                  vocab, div, t));
    }
  }

  o.Line(0, "# ppb config read from " + path + " (Megatron-LM arguments, core 0.20.0)");
  o.Line(0, "model:");
  o.Text(2, "name", [&] {
    std::string n = path;
    const size_t slash = n.find_last_of('/');
    if (slash != std::string::npos) n = n.substr(slash + 1);
    return n;
  }(), "");
  o.Line(2, "architecture:");
  o.Key(4, "hidden_size", h, where("hidden_size"));
  o.Key(4, "num_layers", layers, where("num_layers"));
  o.Key(4, "num_attention_heads", heads, where("num_attention_heads"));
  if (!mla) {
    if (gqa && groups) {
      o.Key(4, "num_key_value_heads", *groups, where("num_query_groups"));
    } else if (gqa) {
      Fail(fmt::format("{}: --num-query-groups: must be given with --group-query-attention; "
                       "got nothing",
                       where("group_query_attention")));
    }
    if (kv_channels) o.Key(4, "head_dim", *kv_channels, where("kv_channels"));
  }
  o.Key(4, "ffn_hidden_size", ffn, ffn_origin);
  o.Key(4, "vocab_size", vocab, vocab_origin);
  o.Key(4, "tie_embeddings", Bool(!a.Flag("untie_embeddings_and_output_weights")),
        where("untie_embeddings_and_output_weights"));
  o.Key(4, "gated_mlp", Bool(swiglu), where("swiglu"));
  const std::string norm = a.Choice("normalization", {"LayerNorm", "RMSNorm"}).value_or("LayerNorm");
  o.Key(4, "norm", norm == "RMSNorm" ? "rmsnorm" : "layernorm", where("normalization"));
  if (a.Flag("add_qkv_bias")) o.Key(4, "qkv_bias", "true", where("add_qkv_bias"));
  if (a.Flag("qk_layernorm")) o.Key(4, "qk_norm", "true", where("qk_layernorm"));
  // --disable-bias-linear is add_bias_linear = False in a log.
  const bool no_bias = a.log() ? (a.Peek("add_bias_linear") != nullptr && !a.Flag("add_bias_linear"))
                               : a.Flag("disable_bias_linear");
  if (no_bias == (norm == "LayerNorm")) {
    notes.push_back(norm == "LayerNorm"
                        ? "--disable-bias-linear: ppb puts biases on every linear with LayerNorm"
                        : "biases: ppb puts none on the linears with RMSNorm");
  }
  {
    const std::string pos =
        a.Str("position_embedding_type").value_or("learned_absolute");
    const bool no_pos = a.Flag("no_position_embedding") ||
                        (a.log() && a.Peek("add_position_embedding") != nullptr &&
                         a.Str("add_position_embedding") == std::optional<std::string>("False"));
    if (pos == "learned_absolute" && !no_pos) {
      const std::int64_t rows = need_int("max_position_embeddings", 1);
      o.Key(4, "learned_positions", rows, where("max_position_embeddings"));
    } else {
      a.Int("max_position_embeddings", 1);
    }
  }
  if (auto experts = a.Int("num_experts", 1)) {
    o.Line(4, "moe:");
    o.Key(6, "num_experts", *experts, where("num_experts"));
    o.Key(6, "top_k", a.Int("moe_router_topk", 1).value_or(2), where("moe_router_topk"));
    o.Key(6, "expert_ffn_hidden_size", a.Int("moe_ffn_hidden_size", 1).value_or(ffn),
          where("moe_ffn_hidden_size"));
    if (auto s = a.Int("moe_shared_expert_intermediate_size", 1)) {
      o.Key(6, "shared_ffn_hidden_size", *s, where("moe_shared_expert_intermediate_size"));
    }
    if (a.Flag("moe_shared_expert_gate")) {
      o.Key(6, "shared_expert_gate", "true", where("moe_shared_expert_gate"));
    }
    if (a.Flag("moe_router_enable_expert_bias")) {
      o.Key(6, "router_bias", "true", where("moe_router_enable_expert_bias"));
    }
    if (auto freq = a.Str("moe_layer_freq", /*flatten=*/false)) {
      if (freq->find('[') != std::string::npos) {
        const std::vector<int> pattern = Pattern(*freq, where("moe_layer_freq")).Run();
        if (static_cast<std::int64_t>(pattern.size()) != layers) {
          Fail(fmt::format("{}: must list one entry a layer ({}, Megatron-LM's check); got {}",
                           where("moe_layer_freq"), layers, pattern.size()));
        }
        std::vector<int> dense;
        for (size_t i = 0; i < pattern.size(); ++i) {
          if (pattern[i] == 0) dense.push_back(static_cast<int>(i));
        }
        o.Key(6, "dense_layers", fmt::format("[{}]", fmt::join(dense, ", ")),
              where("moe_layer_freq"));
      } else if (auto n = a.Int("moe_layer_freq", 1)) {
        o.Key(6, "layer_freq", *n, where("moe_layer_freq"));
      }
    }
  }
  if (mla) {
    o.Line(4, "mla:");
    o.Key(6, "q_lora_rank", a.Int("q_lora_rank", 1).value_or(0), where("q_lora_rank"));
    o.Key(6, "kv_lora_rank", a.Int("kv_lora_rank", 1).value_or(32), where("kv_lora_rank"));
    o.Key(6, "qk_nope_head_dim", a.Int("qk_head_dim", 1).value_or(128), where("qk_head_dim"));
    o.Key(6, "qk_rope_head_dim", a.Int("qk_pos_emb_head_dim", 0).value_or(64),
          where("qk_pos_emb_head_dim"));
    o.Key(6, "v_head_dim", a.Int("v_head_dim", 1).value_or(128), where("v_head_dim"));
  }
  if (auto mtp = a.Int("mtp_num_layers", 0)) {
    if (*mtp > 0) o.Key(4, "mtp_layers", *mtp, where("mtp_num_layers"));
  }

  // ---- training ----------------------------------------------------------
  o.Line(0, "training:");
  o.Key(2, "seq_length", need_int("seq_length", 1), where("seq_length"));
  const std::int64_t mbs = need_int("micro_batch_size", 1);
  o.Key(2, "micro_batch_size", mbs, where("micro_batch_size"));
  if (auto gbs = a.Int("global_batch_size", 1)) {
    o.Key(2, "global_batch_size", *gbs, where("global_batch_size"));
  } else {
    o.Key(2, "global_batch_size", mbs * d, where("micro_batch_size"));
    notes.push_back(fmt::format("global batch {} (Megatron's default: micro-batch {} x data "
                                "parallel {})",
                                mbs * d, mbs, d));
  }
  const bool bf16 = a.Flag("bf16");
  const bool fp16 = a.Flag("fp16");
  if (bf16 && fp16) {
    Fail(fmt::format("{}: must not be given with --fp16 (Megatron-LM's check); got both",
                     where("bf16")));
  }
  o.Key(2, "dtype", bf16 ? "bf16" : fp16 ? "fp16" : "fp32",
        bf16 ? where("bf16") : where("fp16"));
  if (bf16 && a.Flag("grad_reduce_in_bf16")) {
    o.Key(2, "grad_dtype", "bf16", where("grad_reduce_in_bf16"));
  }
  o.Key(2, "tensor_parallel", t, where("tensor_model_parallel_size"));
  {
    bool sp = a.Flag("sequence_parallel");
    if (sp && t == 1) {
      sp = false;
      notes.push_back("--sequence-parallel off at TP 1 (Megatron-LM's validate_args)");
    }
    o.Key(2, "sequence_parallel", Bool(sp), where("sequence_parallel"));
  }
  o.Key(2, "context_parallel", cp, where("context_parallel_size"));
  if (ep > 1) o.Key(2, "expert_parallel", ep, where("expert_model_parallel_size"));
  o.Key(2, "data_parallel", d, world.origin);
  if (a.Flag("use_distributed_optimizer")) {
    o.Key(2, "distributed_optimizer", "true", where("use_distributed_optimizer"));
  }
  if (auto opt = a.Choice("optimizer", {"adam", "sgd"})) {
    o.Key(2, "optimizer", *opt, where("optimizer"));
  }
  for (const char* f : {"overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap"}) {
    if (a.Flag(f)) o.Key(2, f, "true", where(f));
  }
  if (auto fmt8 = a.Choice("fp8", {"e4m3", "hybrid"})) {
    const std::string recipe =
        a.Choice("fp8_recipe", {"delayed", "tensorwise", "blockwise", "mxfp8"}).value_or("delayed");
    o.Line(2, fmt::format("fp8: {{format: {}, recipe: {}}}", *fmt8, recipe), where("fp8"));
  } else {
    a.Str("fp8_recipe");
  }
  if (auto fmt4 = a.Choice("fp4", {"e2m1"})) {
    const std::string recipe = a.Choice("fp4_recipe", {"nvfp4"}).value_or("nvfp4");
    o.Line(2, fmt::format("fp4: {{format: {}, recipe: {}}}", *fmt4, recipe), where("fp4"));
  } else {
    a.Str("fp4_recipe");
  }
  if (a.Flag("fp8_param_gather")) o.Key(2, "fp8_param_gather", "true", where("fp8_param_gather"));
  if (a.Flag("first_last_layers_bf16")) {
    o.Line(2,
           fmt::format("first_last_layers_bf16: {{start: {}, end: {}}}",
                       a.Int("num_layers_at_start_in_bf16", 0).value_or(1),
                       a.Int("num_layers_at_end_in_bf16", 0).value_or(1)),
           where("first_last_layers_bf16"));
  }
  // Sharded data parallelism (Megatron-FSDP, torch FSDP2).
  const bool mfsdp = a.Flag("use_megatron_fsdp");
  const bool tfsdp = a.Flag("use_torch_fsdp2");
  const std::optional<std::string> sharding =
      a.Choice("data_parallel_sharding_strategy",
               {"no_shard", "optim", "optim_grads", "optim_grads_params"});
  if (mfsdp || tfsdp) {
    o.Key(2, "fsdp", mfsdp ? "megatron" : "torch",
          mfsdp ? where("use_megatron_fsdp") : where("use_torch_fsdp2"));
    if (mfsdp) {
      o.Key(2, "data_parallel_sharding", sharding.value_or("optim_grads_params"),
            where("data_parallel_sharding_strategy"));
    }
  }
  // Offload.
  {
    const bool opt_off = a.Flag("optimizer_cpu_offload");
    const std::optional<double> frac = a.Number("optimizer_offload_fraction", 0, 1);
    const std::optional<std::int64_t> off_layers = a.Int("cpu_offloading_num_layers", 0);
    const bool cpu_offloading = a.Flag("cpu_offloading");
    const bool fine = a.Flag("fine_grained_activation_offloading");
    const std::optional<std::string> modules = a.Str("offload_modules");
    const std::optional<double> act_frac = a.Number("activation_offload_fraction", 0, 1);
    const bool overlap = a.Flag("overlap_cpu_optimizer_d2h_h2d");
    const bool layers_off = (cpu_offloading || !a.log()) && off_layers && *off_layers > 0;
    if (opt_off || layers_off || fine) {
      o.Line(2, "offload:");
      if (opt_off) {
        o.Key(4, "optimizer", frac.value_or(1.0), where("optimizer_cpu_offload"));
        if (overlap) {
          o.Key(4, "overlap_optimizer_copies", "true", where("overlap_cpu_optimizer_d2h_h2d"));
        }
      }
      if (layers_off) o.Key(4, "layers", *off_layers, where("cpu_offloading_num_layers"));
      if (fine) {
        std::string list;
        std::string m = modules.value_or("");
        std::replace(m.begin(), m.end(), ',', ' ');
        std::vector<std::string> names;
        size_t q = 0;
        while (q < m.size()) {
          const size_t e = m.find(' ', q);
          const std::string n = m.substr(q, e == std::string::npos ? std::string::npos : e - q);
          if (!n.empty()) names.push_back(n);
          if (e == std::string::npos) break;
          q = e + 1;
        }
        o.Line(4,
               fmt::format("activations: {{modules: [{}], fraction: {}}}", fmt::join(names, ", "),
                           act_frac.value_or(1.0)),
               where("fine_grained_activation_offloading"));
      }
    }
  }
  if (a.Peek("num_experts") != nullptr && a.Int("num_experts", 1)) {
    o.Line(2, "moe:");
    o.Key(4, "dispatcher",
          a.Choice("moe_token_dispatcher_type", {"allgather", "alltoall", "flex"})
              .value_or("allgather"),
          where("moe_token_dispatcher_type"));
    const std::optional<std::string> backend =
        a.Choice("moe_flex_dispatcher_backend", {"deepep", "hybridep"});
    if (a.Peek("moe_token_dispatcher_type") != nullptr &&
        a.Str("moe_token_dispatcher_type") == std::optional<std::string>("flex")) {
      o.Key(4, "backend", backend.value_or("deepep"), where("moe_flex_dispatcher_backend"));
    }
    if (a.Flag("overlap_moe_expert_parallel_comm")) {
      o.Key(4, "overlap_ep_comm", "true", where("overlap_moe_expert_parallel_comm"));
    }
    if (auto etp = a.Int("expert_tensor_parallel_size", 1)) {
      o.Key(4, "expert_tensor_parallel", *etp, where("expert_tensor_parallel_size"));
    }
    if (auto cf = a.Number("moe_expert_capacity_factor", 0, 1e6)) {
      o.Key(4, "capacity_factor", *cf, where("moe_expert_capacity_factor"));
    }
    if (a.Flag("moe_pad_expert_input_to_capacity")) {
      o.Key(4, "pad_to_capacity", "true", where("moe_pad_expert_input_to_capacity"));
    }
    if (a.Flag("moe_router_force_load_balancing")) {
      o.Key(4, "force_balance", "true", where("moe_router_force_load_balancing"));
    }
  }

  // ---- pipeline ----------------------------------------------------------
  std::int64_t v = 1;
  std::string v_origin = where("pipeline_model_parallel_size");
  std::string& pf = run.pipeline_flags;
  auto carry = [&](const std::string& dest, const std::string& flag, const std::string& value) {
    pf += flag + " " + value + "\n";
    run.pipeline_origins[flag] = a.Peek(dest) != nullptr ? a.Peek(dest)->where : path;
  };
  carry("pipeline_model_parallel_size", "--pipeline-model-parallel-size", std::to_string(p));
  const std::optional<std::string> layout = a.Str("pipeline_model_parallel_layout");
  if (layout) {
    std::string q = "\"";
    for (char c : *layout) {
      if (c == '"') Fail(where("pipeline_model_parallel_layout") + ": must not hold '\"'");
      q += c;
    }
    carry("pipeline_model_parallel_layout", "--pipeline-model-parallel-layout", q + "\"");
  }
  if (a.log()) {
    if (auto vpp = a.Int("virtual_pipeline_model_parallel_size", 1)) {
      v = *vpp;
      v_origin = where("virtual_pipeline_model_parallel_size");
    }
  } else if (auto n = a.Int("num_virtual_stages_per_pipeline_rank", 1)) {
    v = *n;
    v_origin = where("num_virtual_stages_per_pipeline_rank");
  } else if (auto per = a.Int("num_layers_per_virtual_pipeline_stage", 1)) {
    // arguments.py: (layers [+1 embedding] [+1 loss]) / p / per.
    std::int64_t n_layers = layers;
    if (a.Flag("account_for_embedding_in_pipeline_split")) ++n_layers;
    if (a.Flag("account_for_loss_in_pipeline_split")) ++n_layers;
    if (n_layers % p != 0 || (n_layers / p) % *per != 0) {
      Fail(fmt::format("{}: must divide the layers per pipeline stage ({} over {} stages, "
                       "Megatron-LM's assert); got {}",
                       where("num_layers_per_virtual_pipeline_stage"), n_layers, p, *per));
    }
    v = n_layers / p / *per;
    v_origin = where("num_layers_per_virtual_pipeline_stage");
  }
  if (v > 1 && !layout) {
    carry(a.log() ? "virtual_pipeline_model_parallel_size" : "num_virtual_stages_per_pipeline_rank",
          "--num-virtual-stages-per-pipeline-rank", std::to_string(v));
  }
  for (const char* dest : {"decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers"}) {
    if (auto n = a.Int(dest, 0)) {
      std::string flag = std::string("--") + dest;
      std::replace(flag.begin(), flag.end(), '_', '-');
      carry(dest, flag, std::to_string(*n));
    }
  }
  const std::optional<std::int64_t> group =
      a.Int("microbatch_group_size_per_virtual_pipeline_stage", 1);
  if (auto g = a.Choice("recompute_granularity", {"full", "selective"})) {
    carry("recompute_granularity", "--recompute-granularity", *g);
    if (auto m = a.Choice("recompute_method", {"uniform", "block"})) {
      carry("recompute_method", "--recompute-method", *m);
    }
    if (auto n = a.Int("recompute_num_layers", 0)) {
      carry("recompute_num_layers", "--recompute-num-layers", std::to_string(*n));
    }
    if (*g == "selective") {
      const std::string mods = a.Str("recompute_modules").value_or("core_attn");
      if (mods != "core_attn") {
        notes.push_back("--recompute-modules " + mods +
                        ": read as ppb's selective recompute (core attention only)");
      }
    }
  } else {
    a.Str("recompute_method");
    a.Str("recompute_num_layers");
    a.Str("recompute_modules");
  }

  o.Line(0, "pipeline:");
  o.Key(2, "stages", p, where("pipeline_model_parallel_size"));
  if (v > 1) {
    o.Key(2, "virtual_stages", v, v_origin);
    o.Key(2, "schedule", "interleaved", v_origin);
    if (group) {
      o.Key(2, "microbatch_group", *group,
            where("microbatch_group_size_per_virtual_pipeline_stage"));
    }
  } else {
    o.Key(2, "schedule", "1f1b", where("pipeline_model_parallel_size"));
  }

  // `ppb-sim plan`: the layouts of the same world, its default space.
  o.Line(0, "plan:");
  o.Key(2, "gpus", world.gpus, world.origin);

  // ---- the machine -------------------------------------------------------
  if (in.cluster_path.empty()) {
    Fail(fmt::format("{}: the machine: must be given with --cluster FILE (a YAML file with a "
                     "hardware: block, such as \"hardware: {{gpu: h100-sxm}}\"; a launch does "
                     "not name its GPU); got nothing",
                     path));
  }
  {
    YAML::Node root;
    try {
      root = YAML::Load(in.cluster_text);
    } catch (const YAML::Exception& e) {
      Fail(fmt::format("{}:{}: must be valid YAML; got a syntax error ({})", in.cluster_path,
                       e.mark.line + 1, e.msg));
    }
    if (!root.IsMap() || !root["hardware"]) {
      Fail(fmt::format("{}: must be a map with a hardware: block (and optionally cluster:); "
                       "got {}",
                       in.cluster_path, root.IsMap() ? "no hardware key" : "no map"));
    }
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>("");
      if (key != "hardware" && key != "cluster") {
        Fail(fmt::format("{}:{}: {}: must be hardware or cluster (the rest comes from the "
                         "launch); got {}",
                         in.cluster_path, kv.first.Mark().line + 1, key, key));
      }
    }
    if (root.Style() == YAML::EmitterStyle::Flow) {
      // {hardware: {...}}: each key written again as "key: value".
      for (const auto& kv : root) {
        YAML::Emitter e;
        e << YAML::Flow << kv.second;
        o.Line(0, kv.first.as<std::string>("") + ": " + e.c_str(),
               fmt::format("{}:{}", in.cluster_path, kv.first.Mark().line + 1));
      }
    } else {
      o.Copy(in.cluster_text, in.cluster_path);
    }
  }

  // ---- what was not read -------------------------------------------------
  // Arguments that only say how the data is read, logged, saved or
  // profiled are not named one by one for a log (it prints all of them).
  std::vector<std::string> unread = a.Unread();
  if (a.log()) {
    notes.push_back(fmt::format("{} other arguments of the log are not modelled (data, "
                                "logging, checkpointing, learning rate, ...)",
                                unread.size()));
  } else if (!unread.empty()) {
    notes.push_back(fmt::format("ignored (ppb does not model them): {}", fmt::join(unread, " ")));
  }
  run.yaml = std::move(o.yaml_);
  run.origins = std::move(o.origins_);
  return run;
}

}  // namespace

Result<MegatronRun> ReadMegatronLaunch(const std::string& path, std::string_view text,
                                       const LaunchInputs& inputs) {
  try {
    Args log_args(path, true);
    if (ReadLogArgs(path, text, log_args)) {
      return Translate(log_args, nullptr, path, inputs);
    }
    Result<LaunchCommand> launch = ReadLaunchScript(path, text);
    if (!launch.ok()) return launch.error();
    Args args(path, false);
    ReadCommandArgs(path, launch->args, args);
    MegatronRun run = Translate(args, &*launch, path, inputs);
    if (!launch->environment.empty()) {
      run.notes.insert(run.notes.begin(),
                       fmt::format("read while unset (ppb gives the script no environment): {}",
                                   fmt::join(launch->environment, " ")));
    }
    return run;
  } catch (const Bad& b) {
    return Error{"", b.message};
  }
}

Result<std::vector<LoggedIteration>> ReadMegatronIterations(const std::string& path,
                                                             std::string_view text) {
  constexpr std::string_view kIteration = " iteration ";
  constexpr std::string_view kElapsed = "elapsed time per iteration (ms): ";
  std::vector<LoggedIteration> out;
  size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view l = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    const size_t e = l.find(kElapsed);
    const size_t it = l.find(kIteration);
    if (e == std::string_view::npos || it == std::string_view::npos || it > e) continue;
    auto number = [&](size_t at, auto& x) {
      while (at < l.size() && l[at] == ' ') ++at;
      auto [p, ec] = std::from_chars(l.data() + at, l.data() + l.size(), x);
      return ec == std::errc() && p != l.data() + at;
    };
    LoggedIteration li;
    li.line = line;
    if (!number(it + kIteration.size(), li.iteration) || !number(e + kElapsed.size(), li.ms) ||
        li.iteration < 1 || !(li.ms > 0 && li.ms < 1e9)) {
      return Error{"", fmt::format("{}:{}: an iteration line: must give \"iteration N/ M\" and "
                                   "\"elapsed time per iteration (ms): T\" with N >= 1 and T > 0 "
                                   "(Megatron-LM's training_log); got '{}'",
                                   path, line, Abbreviate(l))};
    }
    out.push_back(li);
  }
  return out;
}

std::string PlaceLaunchError(const MegatronRun& run, std::string_view yaml_path,
                             const std::string& message) {
  const std::string prefix = std::string(yaml_path) + ":";
  if (message.compare(0, prefix.size(), prefix) != 0) return message;
  size_t k = prefix.size();
  int line = 0;
  while (k < message.size() && std::isdigit(static_cast<unsigned char>(message[k]))) {
    line = line * 10 + (message[k] - '0');
    if (line > 1'000'000) return message;
    ++k;
  }
  if (k == prefix.size() || message.compare(k, 2, ": ") != 0) return message;
  const std::string rest = message.substr(k + 2);
  const std::string origin =
      line >= 1 && static_cast<size_t>(line) <= run.origins.size() &&
              !run.origins[static_cast<size_t>(line) - 1].empty()
          ? run.origins[static_cast<size_t>(line) - 1]
          : std::string(yaml_path);
  const size_t colon = rest.find(": ");
  if (colon == std::string::npos) return origin + ": " + rest;
  return origin + " (read as ppb " + rest.substr(0, colon) + "): " + rest.substr(colon + 2);
}

}  // namespace ppb
