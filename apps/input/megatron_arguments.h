// Megatron-LM's arguments by their argparse destination names, as
// apps/input/megatron_launch.cpp reads them: from a launch command's words
// (ReadCommandArgs: "--flag v1 v2" or "--flag=v", the last of a repeated
// flag wins, as argparse) or from a log's arguments block (ReadLogArgs:
// megatron/training/arguments.py `_print_args`). Every reader marks the
// argument read, so what nothing read can be listed as ignored. Errors are
// thrown as Bad (caught at ReadMegatronLaunch) with the whole message:
// "file:line: --flag: must be ...; got ...". Internal to apps/input.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/input/launch_script.h"
#include "apps/input/megatron_launch.h"
#include "core/result.h"

namespace ppb::megatron_detail {

// An argument Megatron-LM would not accept as ppb reads it.
struct Bad {
  std::string message;
};

[[noreturn]] inline void Fail(std::string message) { throw Bad{std::move(message)}; }

// The title line of `_print_args("arguments", args)`.
inline constexpr std::string_view kArgsHeader =
    "------------------------ arguments ------------------------";
inline constexpr std::string_view kArgsFooter =
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
inline std::string DestOf(std::string flag) {
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

// The world size and where it came from: --gpus, else a log's
// world_size, else torchrun's --nproc_per_node x --nnodes, else one
// process; an arguments file needs --gpus. A --gpus that differs from the
// file is noted in `notes`.
struct World {
  std::int64_t gpus = 1;
  std::string origin;  // where the number came from
  std::string text;    // how it reads in messages
};

World WorldSize(Args& args, const LaunchCommand* launch, const std::string& path,
                const LaunchInputs& in, std::vector<std::string>& notes);

// A launch command's arguments into `args`.
void ReadCommandArgs(const std::string& path, const std::vector<LaunchWord>& words, Args& args);
// The first arguments block of a log into `args`; false when there is none.
bool ReadLogArgs(const std::string& path, std::string_view text, Args& args);
// --moe-layer-freq as a list pattern ("([0]*3+[1]*58)", "[0, 1, 1]";
// arguments.py moe_freq_type): 1 for an MoE layer; `where` places errors.
std::vector<int> MoeLayerPattern(std::string_view text, const std::string& where);
// --window-size and --window-attn-skip-freq, and --experimental-attention-
// variant gdn with --linear-attention-freq and the --linear-* shape, as
// model.architecture's layer_types, sliding_window and deltanet, and
// --softmax-type's sinks, for a model of `layers` decoder layers
// (apps/input/megatron_layers.cpp); a hybrid model's DeltaNet layers are
// its pattern's.
void WriteWindows(Args& args, ConfigWriter& o, std::vector<std::string>& notes,
                  std::int64_t layers, bool hybrid);

// --hybrid-layer-pattern (or the deprecated --hybrid-override-pattern):
// Megatron-LM's hybrid model (pretrain_hybrid.py), read by
// apps/input/megatron_layers.cpp.
struct HybridPattern {
  std::string symbols;  // one per decoder layer, without '|'
  std::string dest;     // the argument it came from
  std::string text;     // as given
  // The '|'-separated segments (Megatron's pipeline stages when above 1).
  std::int64_t Segments() const {
    return 1 + static_cast<std::int64_t>(std::count(text.begin(), text.end(), '|'));
  }
};
// The pattern, or nullopt when the run gives none; refuses what ppb cannot
// model (MTP depths after '/', D layers) at its line.
std::optional<HybridPattern> ReadHybridPattern(Args& args);
// model.architecture's hybrid_layer_pattern and mamba (the --mamba-* shape
// arguments given) at indent 4.
void WriteHybridModel(Args& args, const HybridPattern& h, ConfigWriter& o);

// A file `ppb-sim --emit megatron --emit-file` wrote: its megatron section
// with every other line (the "==== ppb emit: NAME ====" headers, other
// frameworks' sections) made a comment, so lines keep their numbers; empty
// when the file has no such header.
std::string EmittedSection(std::string_view text);

}  // namespace ppb::megatron_detail
