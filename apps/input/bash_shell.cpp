// Shell (apps/input/bash_shell.h): bash's expansions (man bash
// "EXPANSION") over the subset's variables.
#include "apps/input/bash_shell.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "apps/input/path_commands.h"
#include "core/result.h"

namespace ppb::bash_detail {
namespace {

void SkipSpaces(const std::string& s, size_t& pos) {
  while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
}

// The most characters one expansion may give, and the most words a
// variable may hold: far above any launch (the shipped ones stay under
// 4 KB and 200 words); an array that doubles itself line by line is
// refused instead of filling memory.
constexpr size_t kMaxExpansion = size_t{1} << 22;
constexpr size_t kMaxWords = 100000;
constexpr size_t kMaxScriptExpansion = size_t{1} << 26;

// A field being built by an expansion.
}  // namespace

struct Shell::Fields {
  std::vector<LaunchWord> out;
  LaunchWord cur;
  bool has = false;  // cur exists (a quoted "" makes an empty field)
  int line = 0;
  size_t total = 0;  // characters added

  void Add(std::string_view text, bool split, bool unknown) {
    total += text.size();
    if (total > kMaxExpansion) {
      Refuse(line, fmt::format("an expansion: must give at most {} characters", kMaxExpansion));
    }
    for (char c : text) {
      if (split && (c == ' ' || c == '\t' || c == '\n')) {
        Close();
        continue;
      }
      cur.text += c;
      has = true;
    }
    if (unknown) {
      cur.unknown = true;
      has = true;
    }
  }
  void MarkQuoted() { has = true; }
  void Close() {
    if (has) {
      if (cur.line == 0) cur.line = line;
      out.push_back(cur);
    }
    cur = LaunchWord{};
    has = false;
  }
};

namespace {

// Whether the pattern element at p[i] (?, [...] or a character) matches
// `c`; `len` is the element's length.
bool MatchOne(std::string_view p, size_t i, char c, size_t& len) {
  len = 1;
  if (p[i] == '?') return true;
  if (p[i] == '[') {
    const size_t close = p.find(']', i + 1);
    if (close != std::string_view::npos) {
      len = close - i + 1;
      const std::string_view set = p.substr(i + 1, close - i - 1);
      for (size_t k = 0; k < set.size(); ++k) {
        if (k + 2 < set.size() && set[k + 1] == '-') {
          if (c >= set[k] && c <= set[k + 2]) return true;
          k += 2;
        } else if (c == set[k]) {
          return true;
        }
      }
      return false;
    }
  }
  return p[i] == c;
}

}  // namespace

// A glob pattern with * ? and [...] (bash's pattern matching), literal
// else; the greedy match with one backtrack point, O(|p| |s|).
bool GlobMatch(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    size_t len = 0;
    if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (pi < p.size() && MatchOne(p, pi, s[si], len)) {
      pi += len;
      ++si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

// ---- expansion ---------------------------------------------------------

void Shell::Note(const std::string& name) {
  if (!name.empty() && IsNameStart(name[0])) env_.insert(name);
}

const Shell::Var* Shell::Get(const std::string& name) {
  auto it = vars_.find(name);
  if (it != vars_.end()) return &it->second;
  // bash's dynamic variables (man bash, "Shell Variables"): a new value at
  // each read that ppb, running nothing, cannot know (MASTER_PORT=$((
  // $RANDOM + 1024)) in Megatron-LM's examples).
  static const std::set<std::string> kDynamic = {"RANDOM",       "SRANDOM",       "SECONDS",
                                                 "EPOCHSECONDS", "EPOCHREALTIME", "BASHPID"};
  if (kDynamic.count(name) != 0) {
    static const Var unknown{{LaunchWord{"", 0, true}}};
    return &unknown;
  }
  Note(name);
  return nullptr;
}

std::string Shell::Joined(const Var& v) {
  std::string s;
  for (size_t k = 0; k < v.values.size(); ++k) {
    if (k > 0) s += ' ';
    s += v.values[k].text;
  }
  return s;
}

bool Shell::AnyUnknown(const Var& v) {
  return std::any_of(v.values.begin(), v.values.end(),
                     [](const LaunchWord& w) { return w.unknown; });
}

// The whole expansion of `w` as one string (assignments, case, [[ ]]).
std::string Shell::Scalar(const RawWord& w, std::string_view what, bool* unknown) {
  std::vector<LaunchWord> f;
  Expand(w, false, f);
  std::string s;
  bool u = false;
  for (size_t k = 0; k < f.size(); ++k) {
    if (k > 0) s += ' ';
    s += f[k].text;
    u = u || f[k].unknown;
  }
  if (unknown != nullptr) {
    *unknown = u;
  } else if (u) {
    Refuse(w.line, fmt::format("{}: must use values the script sets; got the output of a "
                               "command ppb does not run",
                               what));
  }
  return s;
}

// Appends the fields of `w` to `out` (split: word splitting of unquoted
// expansions, as in a command's arguments).
void Shell::Expand(const RawWord& w, bool split, std::vector<LaunchWord>& out) {
  // "$@" (the script's arguments) is no word at all: none are given.
  if (w.text == "\"$@\"" || w.text == "\"${@}\"" || w.text == "${@}") return;
  Fields f;
  f.line = w.line;
  ExpandInto(w.text, w.line, split, false, f);
  f.Close();
  expanded_ += f.total;
  if (expanded_ > kMaxScriptExpansion) {
    Refuse(w.line, fmt::format("the script's expansions: must give at most {} characters in "
                               "all",
                               kMaxScriptExpansion));
  }
  for (LaunchWord& x : f.out) out.push_back(std::move(x));
}

void Shell::ExpandInto(std::string_view s, int line, bool split, bool in_quotes, Fields& f) {
  Deeper d(*this, line);
  size_t j = 0;
  while (j < s.size()) {
    const char c = s[j];
    if (c == '\'' && !in_quotes) {
      size_t close = s.find('\'', j + 1);
      if (close == std::string_view::npos) close = s.size();
      f.MarkQuoted();
      f.Add(s.substr(j + 1, close - j - 1), false, false);
      j = close + 1;
    } else if (c == '"' && !in_quotes) {
      size_t k = j + 1;
      const size_t end = MatchingQuote(s, k);
      f.MarkQuoted();
      ExpandInto(s.substr(k, end - k), line, split, true, f);
      j = end + 1;
    } else if (c == '\\' && j + 1 < s.size()) {
      const char n = s[j + 1];
      if (n == '\n') {
        // A line continuation, quoted or not, is removed (man bash,
        // QUOTING: "A \<newline> pair is treated as a line continuation").
      } else if (!in_quotes || n == '$' || n == '`' || n == '"' || n == '\\') {
        f.Add(std::string_view(&s[j + 1], 1), false, false);
      } else {
        f.Add(s.substr(j, 2), false, false);
      }
      j += 2;
    } else if (c == '`') {
      const size_t close = s.find('`', j + 1);
      const size_t end = close == std::string_view::npos ? s.size() : close;
      Substitute(s.substr(j + 1, end - j - 1), line, split && !in_quotes, f);
      j = close == std::string_view::npos ? s.size() : close + 1;
    } else if (c == '$') {
      j = Dollar(s, j, line, split && !in_quotes, in_quotes, f);
    } else {
      f.Add(std::string_view(&s[j], 1), false, false);
      ++j;
    }
  }
}

// A command substitution's value: a path command's output
// (apps/input/path_commands.h) when its words are known, else unknown. Its
// text is read as one simple command; anything else (a pipe, a list, a
// second line) is unknown, as a command ppb does not run.
void Shell::Substitute(std::string_view inner, int line, bool split, Fields& f) {
  std::vector<std::string> words;
  bool known = true;
  try {
    const std::vector<Token> toks = Tokenize(inner);
    bool ended = false;  // a newline ends the command: nothing may follow
    for (const Token& t : toks) {
      if (t.kind == Tok::End) break;
      if (t.kind == Tok::Newline) {
        ended = true;
        continue;
      }
      if (t.kind != Tok::Word || ended) {
        known = false;
        break;
      }
      std::vector<LaunchWord> fields;
      Expand(RawWord{t.text, line}, true, fields);
      for (const LaunchWord& w : fields) {
        known = known && !w.unknown;
        words.push_back(w.text);
      }
    }
  } catch (const Refusal&) {
    known = false;  // what ppb cannot read there is a command it does not run
  }
  const std::optional<std::string> out = known ? PathCommand(words) : std::nullopt;
  if (out) {
    f.Add(*out, split, false);
  } else {
    f.Add("", false, true);
  }
}

std::string Shell::HereDocument(std::string_view s, int first, std::vector<int>& lines) {
  std::string out;
  int line = first;
  lines.assign(1, first);
  auto emit = [&](std::string_view text) {
    for (char c : text) {
      out += c;
      if (c == '\n') lines.push_back(line);
    }
    expanded_ += text.size();
    if (out.size() > kMaxExpansion || expanded_ > kMaxScriptExpansion) {
      Refuse(line, fmt::format("a here-document: must expand to at most {} characters",
                               kMaxExpansion));
    }
  };
  size_t j = 0;
  while (j < s.size()) {
    const char c = s[j];
    if (c == '\\' && j + 1 < s.size() &&
        (s[j + 1] == '$' || s[j + 1] == '`' || s[j + 1] == '\\' || s[j + 1] == '\n')) {
      if (s[j + 1] == '\n') {
        // A line continuation: kept for the script read from the body,
        // which removes it, so that its lines stay the file's.
        emit("\\");
        ++line;
        emit("\n");
      } else {
        emit(s.substr(j + 1, 1));
      }
      j += 2;
    } else if (c == '`' || (c == '$' && j + 1 < s.size() && s[j + 1] == '(' &&
                            (j + 2 >= s.size() || s[j + 2] != '('))) {
      // A command substitution: kept as written.
      const size_t close = c == '`' ? s.find('`', j + 1) : MatchingClose(s, j + 1);
      const size_t end = close == std::string_view::npos ? s.size() : std::min(close + 1, s.size());
      for (; j < end; ++j) {
        if (s[j] == '\n') ++line;
        emit(s.substr(j, 1));
      }
    } else if (c == '$') {
      Fields f;
      f.line = line;
      const size_t next = Dollar(s, j, line, false, true, f);
      f.Close();
      bool unknown = false;
      std::string value;
      for (size_t k = 0; k < f.out.size(); ++k) {
        if (k > 0) value += ' ';
        value += f.out[k].text;
        unknown = unknown || f.out[k].unknown;
      }
      if (unknown) {
        for (; j < next; ++j) {
          if (s[j] == '\n') ++line;
          emit(s.substr(j, 1));
        }
      } else {
        emit(value);
        for (; j < next; ++j) line += s[j] == '\n' ? 1 : 0;
      }
    } else {
      if (c == '\n') ++line;
      emit(s.substr(j, 1));
      ++j;
    }
  }
  return out;
}

size_t Shell::MatchingQuote(std::string_view s, size_t k) {
  while (k < s.size() && s[k] != '"') {
    if (s[k] == '\\') {
      ++k;
    } else if (s[k] == '$' && k + 1 < s.size() && (s[k + 1] == '(' || s[k + 1] == '{')) {
      k = MatchingClose(s, k + 1);
    }
    ++k;
  }
  return std::min(k, s.size());
}

// The index of the bracket closing the one at s[k] ('(' or '{').
size_t Shell::MatchingClose(std::string_view s, size_t k) {
  const char open = s[k];
  const char close = open == '(' ? ')' : '}';
  int depth = 0;
  for (; k < s.size(); ++k) {
    if (s[k] == '\'' ) {
      const size_t q = s.find('\'', k + 1);
      k = q == std::string_view::npos ? s.size() : q;
      continue;
    }
    if (s[k] == '"') {
      k = MatchingQuote(s, k + 1);
      continue;
    }
    if (s[k] == '\\') {
      ++k;
      continue;
    }
    if (s[k] == open) ++depth;
    if (s[k] == close && --depth == 0) return k;
  }
  return s.size();
}

// Expands the $-expression at s[j]; returns the index after it.
size_t Shell::Dollar(std::string_view s, size_t j, int line, bool split, bool in_quotes, Fields& f) {
  if (j + 1 >= s.size()) {
    f.Add("$", false, false);
    return j + 1;
  }
  const char n = s[j + 1];
  if (n == '(' && j + 2 < s.size() && s[j + 2] == '(') {
    const size_t close = MatchingClose(s, j + 1);
    const std::string_view inner = s.substr(j + 3, close >= j + 4 ? close - j - 4 : 0);
    bool unknown = false;
    const std::string text = Scalar(RawWord{std::string(inner), line}, "$((...))", &unknown);
    if (unknown) {
      f.Add("", false, true);
    } else {
      size_t pos = 0;
      const std::int64_t v = Arith(text, pos, line);
      SkipSpaces(text, pos);
      if (pos != text.size()) {
        Refuse(line, fmt::format("$((...)): must be arithmetic on + - * / % ( ); got '{}'",
                                 Abbreviate(text)));
      }
      f.Add(std::to_string(v), split, false);
    }
    return close + 1;
  }
  if (n == '(') {
    const size_t close = MatchingClose(s, j + 1);
    Substitute(s.substr(j + 2, std::min(close, s.size()) - std::min(j + 2, s.size())), line,
               split, f);
    return close + 1;
  }
  if (n == '{') {
    const size_t close = MatchingClose(s, j + 1);
    if (close >= s.size()) Refuse(line, "${: must be closed with '}'");
    Brace(s.substr(j + 2, close - j - 2), line, split, in_quotes, f);
    return close + 1;
  }
  if (IsNameStart(n)) {
    size_t k = j + 1;
    while (k < s.size() && IsNameChar(s[k])) ++k;
    const std::string name(s.substr(j + 1, k - j - 1));
    if (const Var* v = Get(name)) {
      if (!v->values.empty()) {
        f.Add(v->values.front().text, split, v->values.front().unknown);
      }
    }
    return k;
  }
  if (std::isdigit(static_cast<unsigned char>(n))) {
    if (n == '0') f.Add(path_, split, false);
    return j + 2;  // $1..$9: no arguments are given
  }
  if (n == '#' || n == '?') {
    f.Add("0", split, false);
    return j + 2;
  }
  if (n == '@' || n == '*') return j + 2;
  if (n == '$' || n == '!') {
    Refuse(line, fmt::format("${}: must not be used in a launch ppb reads", n));
  }
  f.Add("$", false, false);
  return j + 1;
}

// ${...}
void Shell::Brace(std::string_view e, int line, bool split, bool in_quotes, Fields& f) {
  auto bad = [&]() {
    Refuse(line, fmt::format("${{{}}}: must be a form ppb evaluates (${{X}}, ${{X:-w}}, "
                             "${{X-w}}, ${{X:=w}}, ${{X:+w}}, ${{#X}}, ${{X[@]}}, "
                             "${{#X[@]}}, ${{X[i]}})",
                             Abbreviate(e)));
  };
  bool length = false;
  if (!e.empty() && e[0] == '#' && e.size() > 1) {
    length = true;
    e.remove_prefix(1);
  }
  size_t k = 0;
  std::string name;
  if (!e.empty() && std::isdigit(static_cast<unsigned char>(e[0]))) {
    while (k < e.size() && std::isdigit(static_cast<unsigned char>(e[k]))) ++k;
    name = std::string(e.substr(0, k));  // a positional parameter: unset
  } else {
    if (e.empty() || !IsNameStart(e[0])) bad();
    while (k < e.size() && IsNameChar(e[k])) ++k;
    name = std::string(e.substr(0, k));
  }
  const bool positional = std::isdigit(static_cast<unsigned char>(name[0])) != 0;
  const Var* v = positional ? nullptr : Get(name);
  std::string_view rest = e.substr(k);
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) bad();
    const std::string_view index = rest.substr(1, close - 1);
    if (close + 1 != rest.size()) bad();
    if (index == "@" || index == "*") {
      if (length) {
        f.Add(std::to_string(v != nullptr ? v->values.size() : 0), split, false);
        return;
      }
      if (v == nullptr) return;
      for (size_t x = 0; x < v->values.size(); ++x) {
        const LaunchWord& w = v->values[x];
        if (index == "@" && in_quotes) {
          if (x > 0) f.Close();
          f.MarkQuoted();
          f.Add(w.text, false, w.unknown);
          f.cur.line = w.line;
        } else {
          if (x > 0) f.Add(" ", split, false);
          const size_t before = f.out.size();
          f.Add(w.text, split, w.unknown);
          for (size_t y = before; y < f.out.size(); ++y) f.out[y].line = w.line;
          if (f.has) f.cur.line = w.line;
        }
      }
      return;
    }
    std::int64_t i = 0;
    auto [p, ec] = std::from_chars(index.data(), index.data() + index.size(), i);
    if (ec != std::errc() || p != index.data() + index.size() || i < 0) bad();
    if (length) bad();
    if (v != nullptr && static_cast<size_t>(i) < v->values.size()) {
      const LaunchWord& w = v->values[static_cast<size_t>(i)];
      f.Add(w.text, split, w.unknown);
    }
    return;
  }
  const bool set = v != nullptr;
  const std::string value = set ? Joined(*v) : "";
  const bool unknown = set && AnyUnknown(*v);
  if (rest.empty()) {
    if (length) {
      f.Add(std::to_string(value.size()), split, unknown);
    } else {
      f.Add(value, split, unknown);
    }
    return;
  }
  if (length) bad();
  const bool colon = rest[0] == ':';
  if (colon) rest.remove_prefix(1);
  if (rest.empty()) bad();
  const char op = rest[0];
  const std::string_view word = rest.substr(1);
  const bool use_value = colon ? (set && !value.empty()) : set;
  auto expand_word = [&]() {
    ExpandInto(word, line, split, in_quotes, f);
  };
  switch (op) {
    case '-':
      if (use_value) {
        f.Add(value, split, unknown);
      } else {
        expand_word();
      }
      return;
    case '=':
      if (use_value) {
        f.Add(value, split, unknown);
      } else {
        if (positional) bad();
        bool u = false;
        const std::string w = Scalar(RawWord{std::string(word), line}, "${X:=w}", &u);
        vars_[name] = Var{{LaunchWord{w, line, u}}};
        f.Add(w, split, u);
      }
      return;
    case '+':
      if (use_value) expand_word();
      return;
    default:
      bad();
  }
}

// ---- arithmetic: + - * / % ( ) over int64, variables by name ----------


std::int64_t Shell::Arith(const std::string& s, size_t& pos, int line) {
  Deeper d(*this, line);
  std::int64_t r = ArithTerm(s, pos, line);
  while (true) {
    SkipSpaces(s, pos);
    if (pos >= s.size() || (s[pos] != '+' && s[pos] != '-')) return r;
    const char op = s[pos++];
    const std::int64_t x = ArithTerm(s, pos, line);
    std::int64_t out = 0;
    if (op == '+' ? __builtin_add_overflow(r, x, &out) : __builtin_sub_overflow(r, x, &out)) {
      Refuse(line, "$((...)): must stay within 64-bit integers");
    }
    r = out;
  }
}

std::int64_t Shell::ArithTerm(const std::string& s, size_t& pos, int line) {
  std::int64_t r = ArithUnary(s, pos, line);
  while (true) {
    SkipSpaces(s, pos);
    if (pos >= s.size() || (s[pos] != '*' && s[pos] != '/' && s[pos] != '%')) return r;
    const char op = s[pos++];
    const std::int64_t x = ArithUnary(s, pos, line);
    if (op == '*') {
      if (__builtin_mul_overflow(r, x, &r)) {
        Refuse(line, "$((...)): must stay within 64-bit integers");
      }
    } else {
      if (x == 0) Refuse(line, "$((...)): must not divide by zero");
      if (r == INT64_MIN && x == -1) Refuse(line, "$((...)): must stay within 64-bit integers");
      r = op == '/' ? r / x : r % x;
    }
  }
}

std::int64_t Shell::ArithUnary(const std::string& s, size_t& pos, int line) {
  Deeper d(*this, line);
  SkipSpaces(s, pos);
  if (pos >= s.size()) Refuse(line, "$((...)): must not end after an operator");
  if (s[pos] == '-' || s[pos] == '+') {
    const char op = s[pos++];
    const std::int64_t x = ArithUnary(s, pos, line);
    if (op == '-' && x == INT64_MIN) Refuse(line, "$((...)): must stay within 64-bit integers");
    return op == '-' ? -x : x;
  }
  if (s[pos] == '(') {
    ++pos;
    const std::int64_t x = Arith(s, pos, line);
    SkipSpaces(s, pos);
    if (pos >= s.size() || s[pos] != ')') Refuse(line, "$((...)): must close '('");
    ++pos;
    return x;
  }
  if (IsNameStart(s[pos])) {
    size_t k = pos;
    while (k < s.size() && IsNameChar(s[k])) ++k;
    const std::string name = s.substr(pos, k - pos);
    pos = k;
    const Var* v = Get(name);
    if (v == nullptr || v->values.empty() || v->values.front().text.empty()) return 0;
    return Integer(v->values.front().text, line);
  }
  size_t k = pos;
  while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
  if (k == pos) {
    Refuse(line, fmt::format("$((...)): must be arithmetic on + - * / % ( ); got '{}'",
                             Abbreviate(s)));
  }
  const std::int64_t x = Integer(s.substr(pos, k - pos), line);
  pos = k;
  return x;
}

// ---- assignments -------------------------------------------------------

void Shell::Assign(const RawWord& w) {
  size_t eq = 0;
  IsAssignment(w.text, eq);
  const bool append = w.text[eq] == '+';
  const std::string name = w.text.substr(0, eq);
  const std::string raw = w.text.substr(eq + (append ? 2 : 1));
  bool unknown = false;
  const std::string value = Scalar(RawWord{raw, w.line}, name, &unknown);
  Var& v = vars_[name];
  if (append && !v.values.empty()) {
    if (v.values.front().text.size() + value.size() > kMaxExpansion) {
      Refuse(w.line, fmt::format("{}: must hold at most {} characters", name, kMaxExpansion));
    }
    v.values.front().text += value;
    v.values.front().unknown = v.values.front().unknown || unknown;
    return;
  }
  if (v.values.empty()) v.values.resize(1);
  v.values.front() = LaunchWord{value, w.line, unknown};
}

void Shell::AssignArray(const Token& t) {
  std::vector<LaunchWord> values;
  for (const RawWord& e : t.elements) Expand(e, true, values);
  Var& v = vars_[t.text];
  if (!t.append) v.values.clear();
  if (v.values.size() + values.size() > kMaxWords) {
    Refuse(t.line, fmt::format("array {}: must hold at most {} words", t.text, kMaxWords));
  }
  for (LaunchWord& x : values) v.values.push_back(std::move(x));
}

bool Shell::IsAssignment(std::string_view w, size_t& eq) {
  if (w.empty() || !IsNameStart(w[0])) return false;
  size_t k = 1;
  while (k < w.size() && IsNameChar(w[k])) ++k;
  if (k < w.size() && w[k] == '=') {
    eq = k;
    return true;
  }
  if (k + 1 < w.size() && w[k] == '+' && w[k + 1] == '=') {
    eq = k;
    return true;
  }
  return false;
}

std::int64_t Shell::Integer(const std::string& s, int line) {
  std::int64_t x = 0;
  const char* b = s.data();
  const char* e = b + s.size();
  if (!s.empty() && s[0] == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, x);
  if (s.empty() || ec != std::errc() || p != e) {
    Refuse(line, fmt::format("a number: must be an integer; got '{}'", Abbreviate(s)));
  }
  return x;
}

}  // namespace ppb::bash_detail
