// The bash subset's variables and expansions (apps/input/launch_script.h
// says what is read): assignments and arrays, $NAME and the ${...} forms,
// $((...)), quotes, word splitting, and glob patterns for case and [[ ]].
// A script runs with no environment and no arguments: what it reads unset
// is recorded (Environment). Output is bounded (kMaxExpansion a word,
// kMaxWords an array, kMaxScriptExpansion in all); refusals are thrown as
// bash_detail::Refusal. Internal to apps/input.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/bash_lexer.h"
#include "apps/input/launch_script.h"

namespace ppb::bash_detail {

// A glob pattern with * ? and [...] (bash's pattern matching), literal
// else; O(|p| |s|).
bool GlobMatch(std::string_view p, std::string_view s);

class Shell {
 public:
  explicit Shell(std::string path) : path_(std::move(path)) {}

  // Nesting, shared by the interpreter's grammar and the expansions.
  class Deeper {
   public:
    Deeper(Shell& s, int line) : s_(s) {
      if (++s_.depth_ > kMaxDepth) {
        Refuse(line, "nesting: must be at most " + std::to_string(kMaxDepth) + " deep");
      }
    }
    ~Deeper() { --s_.depth_; }
    Deeper(const Deeper&) = delete;
    Deeper& operator=(const Deeper&) = delete;

   private:
    Shell& s_;
  };

  // Appends the fields of `w` to `out` (split: word splitting of unquoted
  // expansions, as in a command's arguments).
  void Expand(const RawWord& w, bool split, std::vector<LaunchWord>& out);
  // The whole expansion of `w` as one string (assignments, case, [[ ]]);
  // with `unknown` null, a command substitution's value is refused.
  std::string Scalar(const RawWord& w, std::string_view what, bool* unknown = nullptr);
  // An unquoted here-document's body as bash expands it (man bash "Here
  // Documents": parameter and arithmetic expansion, \$ \` \\ escaped,
  // quotes literal; \<newline> is kept for the script read from it to
  // remove, so that its lines stay the file's). An expansion ppb cannot know (a
  // command substitution, a value set from one) is kept as written, so that
  // the body read as a script finds it unknown again. `lines` gets, for each
  // line of the result, the line of the body it came from (`first`: the
  // body's first).
  std::string HereDocument(std::string_view body, int first, std::vector<int>& lines);
  // NAME=value, set by ppb (the scheduler's variables).
  void Define(const std::string& name, const std::string& value, int line) {
    vars_[name].values = {LaunchWord{value, line, false}};
  }
  // NAME=word or NAME+=word (IsAssignment true).
  void Assign(const RawWord& w);
  // NAME=( ... ) or NAME+=( ... ).
  void AssignArray(const Token& t);
  void Unset(const std::string& name) { vars_.erase(name); }
  // Whether `w` is NAME=... or NAME+=...; `eq` is where the name ends.
  static bool IsAssignment(std::string_view w, size_t& eq);
  // A decimal integer, or a refusal at `line`.
  static std::int64_t Integer(const std::string& s, int line);
  // The variables read while unset, sorted.
  std::vector<std::string> Environment() const { return {env_.begin(), env_.end()}; }

 private:
  struct Var {
    std::vector<LaunchWord> values;  // a scalar is one value
  };
  struct Fields;

  void Note(const std::string& name);
  const Var* Get(const std::string& name);
  static std::string Joined(const Var& v);
  static bool AnyUnknown(const Var& v);
  void ExpandInto(std::string_view s, int line, bool split, bool in_quotes, Fields& f);
  static size_t MatchingQuote(std::string_view s, size_t k);
  static size_t MatchingClose(std::string_view s, size_t k);
  size_t Dollar(std::string_view s, size_t j, int line, bool split, bool in_quotes, Fields& f);
  void Substitute(std::string_view inner, int line, bool split, Fields& f);
  void Brace(std::string_view e, int line, bool split, bool in_quotes, Fields& f);
  std::int64_t Arith(const std::string& s, size_t& pos, int line);
  std::int64_t ArithTerm(const std::string& s, size_t& pos, int line);
  std::int64_t ArithUnary(const std::string& s, size_t& pos, int line);

  std::string path_;
  int depth_ = 0;
  std::map<std::string, Var> vars_;
  std::set<std::string> env_;
  size_t expanded_ = 0;  // characters all expansions gave
};

}  // namespace ppb::bash_detail
