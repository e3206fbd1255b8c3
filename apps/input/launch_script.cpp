// ReadLaunchScript (apps/input/launch_script.h): a tokenizer for the bash
// subset, and an interpreter that walks the tokens once, running what it
// evaluates where a branch is taken and only parsing the rest.
#include "apps/input/launch_script.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb {
namespace {

// The deepest nesting of compound commands, expansions and arithmetic read
// (the shipped launches nest 3 deep); deeper input is refused, not recursed.
constexpr int kMaxDepth = 64;

// A refusal, caught at ReadLaunchScript and returned as an Error.
struct Refusal {
  int line;
  std::string message;
};

[[noreturn]] void Refuse(int line, std::string message) {
  throw Refusal{line, std::move(message)};
}

// ---- tokens ---------------------------------------------------------------

enum class Tok { Word, Op, Newline, Array, End };

struct RawWord {
  std::string text;  // as written, quotes included
  int line = 0;
};

struct Token {
  Token() = default;
  Token(Tok k, std::string t, int l) : kind(k), text(std::move(t)), line(l) {}
  Tok kind = Tok::End;
  std::string text;  // word as written; operator; array name
  int line = 0;
  bool append = false;             // Array: NAME+=( )
  std::vector<RawWord> elements;   // Array: its words
};

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool IsMeta(char c) {
  return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>' ||
         c == '\n' || IsBlank(c);
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  std::vector<Token> Run() {
    std::vector<Token> out;
    while (true) {
      SkipBlanks();
      if (i_ >= s_.size()) break;
      const char c = s_[i_];
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (c == '\n') {
        out.push_back(Token{Tok::Newline, "\n", line_});
        ++i_;
        ++line_;
        continue;
      }
      if (IsMeta(c)) {
        out.push_back(Operator());
        continue;
      }
      const int line = line_;
      std::string word = Word();
      // NAME=( or NAME+=( : an array assignment.
      if (i_ < s_.size() && s_[i_] == '(' && word.size() >= 2 && word.back() == '=' &&
          IsNameStart(word[0])) {
        const bool append = word.size() >= 3 && word[word.size() - 2] == '+';
        const std::string name = word.substr(0, word.size() - (append ? 2 : 1));
        if (std::all_of(name.begin(), name.end(), IsNameChar)) {
          ++i_;
          out.push_back(ArrayBody(name, append, line));
          continue;
        }
      }
      out.push_back(Token{Tok::Word, std::move(word), line});
    }
    out.push_back(Token{Tok::End, "", line_});
    return out;
  }

 private:
  void SkipBlanks() {
    while (i_ < s_.size()) {
      if (IsBlank(s_[i_])) {
        ++i_;
      } else if (s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        i_ += 2;
        ++line_;
      } else {
        break;
      }
    }
  }

  Token Operator() {
    static const char* const kOps[] = {";;", "&&", "||", ">>", "<<", ">&", "<&", ";", "&",
                                       "|",  "(",  ")",  "<",  ">"};
    for (const char* op : kOps) {
      const std::string_view o(op);
      if (s_.substr(i_, o.size()) == o) {
        if (o == "<<") Refuse(line_, "here-document: must not be used in a launch ppb reads");
        i_ += o.size();
        return Token{Tok::Op, std::string(o), line_};
      }
    }
    Refuse(line_, fmt::format("'{}': must be an operator ppb reads", s_[i_]));
  }

  // Copies a quoted or nested span starting at s_[i_] into `out`.
  void Quoted(std::string& out, char close) {
    const int start = line_;
    out += s_[i_++];
    while (i_ < s_.size() && s_[i_] != close) {
      if (close == '"' && s_[i_] == '\\' && i_ + 1 < s_.size()) {
        if (s_[i_ + 1] == '\n') ++line_;
        out += s_[i_++];
      } else if (close == '"' && s_[i_] == '$' && i_ + 1 < s_.size() &&
                 (s_[i_ + 1] == '(' || s_[i_ + 1] == '{')) {
        Nested(out);
        continue;
      }
      if (s_[i_] == '\n') ++line_;
      out += s_[i_++];
    }
    if (i_ >= s_.size()) {
      Refuse(start, fmt::format("quote: must be closed; got {} without its closing {}", close,
                                close));
    }
    out += s_[i_++];
  }

  // $( ... ) or ${ ... }: balanced, with quotes inside.
  void Nested(std::string& out) {
    const int start = line_;
    struct Deeper {
      explicit Deeper(int& d, int line) : d_(d) {
        if (++d_ > kMaxDepth) Refuse(line, fmt::format("nesting: must be at most {} deep", kMaxDepth));
      }
      ~Deeper() { --d_; }
      int& d_;
    } deeper(depth_, line_);
    const char open = s_[i_ + 1];
    const char close = open == '(' ? ')' : '}';
    out += s_[i_++];
    out += s_[i_++];
    int depth = 1;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\'' || c == '"') {
        Quoted(out, c);
        continue;
      }
      if (c == '\\' && i_ + 1 < s_.size()) {
        out += s_[i_++];
      } else if (c == open) {
        ++depth;
      } else if (c == close && --depth == 0) {
        out += s_[i_++];
        return;
      }
      if (s_[i_] == '\n') ++line_;
      out += s_[i_++];
    }
    Refuse(start, fmt::format("${}: must be closed; got no closing {}", open, close));
  }

  std::string Word() {
    std::string out;
    while (i_ < s_.size() && !IsMeta(s_[i_])) {
      const char c = s_[i_];
      if (c == '\'' || c == '"' || c == '`') {
        Quoted(out, c);
      } else if (c == '\\' && i_ + 1 < s_.size()) {
        if (s_[i_ + 1] == '\n') {
          i_ += 2;
          ++line_;
        } else {
          out += s_[i_++];
          out += s_[i_++];
        }
      } else if (c == '$' && i_ + 1 < s_.size() && (s_[i_ + 1] == '(' || s_[i_ + 1] == '{')) {
        Nested(out);
      } else {
        out += s_[i_++];
      }
    }
    return out;
  }

  Token ArrayBody(const std::string& name, bool append, int line) {
    Token t{Tok::Array, name, line};
    t.append = append;
    while (true) {
      SkipBlanks();
      if (i_ >= s_.size()) {
        Refuse(line, fmt::format("array {}: must be closed with ')'; got the end of the file",
                                 name));
      }
      const char c = s_[i_];
      if (c == ')') {
        ++i_;
        return t;
      }
      if (c == '\n') {
        ++line_;
        ++i_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (IsMeta(c)) {
        Refuse(line_, fmt::format("array {}: must hold words; got '{}'", name, c));
      } else {
        const int at = line_;
        t.elements.push_back(RawWord{Word(), at});
      }
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
  int depth_ = 0;
};

// ---- the interpreter --------------------------------------------------------

struct Var {
  std::vector<LaunchWord> values;  // a scalar is one value
};

// The most characters one expansion may give, and the most words a
// variable may hold: far above any launch (the shipped ones stay under
// 4 KB and 200 words); an array that doubles itself line by line is
// refused instead of filling memory.
constexpr size_t kMaxExpansion = size_t{1} << 22;
constexpr size_t kMaxWords = 100000;
constexpr size_t kMaxScriptExpansion = size_t{1} << 26;

// A field being built by an expansion.
struct Fields {
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

class Interpreter {
 public:
  Interpreter(std::string_view path, std::vector<Token> toks)
      : path_(path), t_(std::move(toks)) {}

  // An arguments file: words and newlines only.
  LaunchCommand Arguments() {
    LaunchCommand c;
    for (const Token& t : t_) {
      if (t.kind == Tok::Newline || t.kind == Tok::End) continue;
      if (t.kind != Tok::Word) {
        Refuse(t.line, fmt::format("'{}': must be a --flag or its value in an arguments file",
                                   t.text));
      }
      for (char ch : t.text) {
        if (ch == '$' || ch == '`') {
          Refuse(t.line, fmt::format("'{}': must not expand anything in an arguments file",
                                     Abbreviate(t.text)));
        }
      }
      Expand(RawWord{t.text, t.line}, false, c.args);
    }
    if (!c.args.empty()) c.line = c.args.front().line;
    return c;
  }

  LaunchCommand Run() {
    List(true, {});
    if (Peek().kind != Tok::End) {
      Refuse(Peek().line, fmt::format("'{}': must not appear here", Peek().text));
    }
    if (!launch_) {
      Refuse(t_.back().line,
             "the launch: must run a training script (torchrun ... pretrain_*.py ARGS); got "
             "no such command" +
                 std::string(exited_ ? " before the script exits at line " +
                                           std::to_string(exit_line_)
                                     : ""));
    }
    launch_->environment.assign(env_.begin(), env_.end());
    return std::move(*launch_);
  }

 private:
  // ---- token access ------------------------------------------------------
  const Token& Peek() const { return t_[std::min(i_, t_.size() - 1)]; }
  bool IsWord(std::string_view w) const { return Peek().kind == Tok::Word && Peek().text == w; }
  bool IsOp(std::string_view o) const { return Peek().kind == Tok::Op && Peek().text == o; }
  void Expect(std::string_view w, std::string_view what) {
    if (!IsWord(w)) {
      Refuse(Peek().line, fmt::format("{}: must be followed by '{}'; got {}", what, w,
                                      Peek().kind == Tok::End ? "the end of the file"
                                                              : "'" + Peek().text + "'"));
    }
    ++i_;
  }
  void SkipNewlines() {
    while (Peek().kind == Tok::Newline) ++i_;
  }

  struct Depth {
    explicit Depth(Interpreter& in) : in_(in) {
      if (++in_.depth_ > kMaxDepth) {
        Refuse(in_.Peek().line, fmt::format("nesting: must be at most {} deep", kMaxDepth));
      }
    }
    ~Depth() { --in_.depth_; }
    Interpreter& in_;
  };

  // ---- grammar -----------------------------------------------------------

  // Commands until a word of `stop` in command position, ";;" or the end.
  // Returns the status of the last command run (0 when none ran).
  int List(bool active, std::initializer_list<std::string_view> stop) {
    Depth d(*this);
    int status = 0;
    while (true) {
      while (Peek().kind == Tok::Newline || IsOp(";") || IsOp("&")) ++i_;
      const Token& t = Peek();
      if (t.kind == Tok::End || IsOp(";;") || IsOp(")")) return status;
      if (t.kind == Tok::Word && std::find(stop.begin(), stop.end(), t.text) != stop.end()) {
        return status;
      }
      status = AndOr(active);
    }
  }

  int AndOr(bool active) {
    int status = Pipeline(active);
    while (IsOp("&&") || IsOp("||")) {
      const bool and_op = Peek().text == "&&";
      ++i_;
      SkipNewlines();
      const bool run = Live(active) && (and_op ? status == 0 : status != 0);
      const int next = Pipeline(run);
      if (run) status = next;
    }
    return status;
  }

  int Pipeline(bool active) {
    bool bang = false;
    if (IsWord("!")) {
      bang = true;
      ++i_;
    }
    int status = Command(active);
    while (IsOp("|")) {
      ++i_;
      SkipNewlines();
      status = Command(active);
    }
    return bang ? (status == 0 ? 1 : 0) : status;
  }

  bool Live(bool active) const { return active && !exited_; }

  int Command(bool active) {
    Depth d(*this);
    const Token& t = Peek();
    if (t.kind == Tok::Word) {
      if (t.text == "if") return If(active);
      if (t.text == "while" || t.text == "until") return While(active);
      if (t.text == "for") return For(active);
      if (t.text == "case") return Case(active);
      if (t.text == "[[") return DoubleBracket(active);
      if (t.text == "{") {
        ++i_;
        const int s = List(active, {"}"});
        Expect("}", "a group");
        return s;
      }
      if (t.text == "function" ||
          (i_ + 1 < t_.size() && t_[i_ + 1].kind == Tok::Op && t_[i_ + 1].text == "(")) {
        Refuse(t.line, "a function definition: must not be used in a launch ppb reads");
      }
    }
    if (t.kind == Tok::Op && t.text == "(") {
      if (i_ + 1 < t_.size() && t_[i_ + 1].kind == Tok::Op && t_[i_ + 1].text == "(") {
        Refuse(t.line, "((...)): must not be used in a launch ppb reads (use $((...)))");
      }
      if (Live(active)) Refuse(t.line, "a subshell ( ... ): must not be used in a launch ppb reads");
      ++i_;
      List(false, {});
      if (!IsOp(")")) Refuse(Peek().line, "a subshell: must be closed with ')'");
      ++i_;
      return 0;
    }
    if (t.kind == Tok::Array) {
      ++i_;
      if (Live(active)) AssignArray(t);
      return Simple(active, /*after_assignment=*/true);
    }
    if (t.kind != Tok::Word) {
      Refuse(t.line, fmt::format("'{}': must start a command", t.text));
    }
    return Simple(active, false);
  }

  int If(bool active) {
    const int line = Peek().line;
    ++i_;
    bool taken = false;
    int status = 0;
    const bool live = Live(active);
    int cond = List(live, {"then"});
    Expect("then", "if");
    bool run = live && cond == 0;
    int body = List(run, {"elif", "else", "fi"});
    if (run) {
      taken = true;
      status = body;
    }
    while (IsWord("elif")) {
      ++i_;
      cond = List(live && !taken, {"then"});
      Expect("then", "elif");
      run = live && !taken && cond == 0;
      body = List(run, {"elif", "else", "fi"});
      if (run) {
        taken = true;
        status = body;
      }
    }
    if (IsWord("else")) {
      ++i_;
      run = live && !taken;
      body = List(run, {"fi"});
      if (run) status = body;
    }
    if (!IsWord("fi")) {
      Refuse(line, "if: must end with 'fi'; got " +
                       (Peek().kind == Tok::End ? std::string("the end of the file")
                                                : "'" + Peek().text + "'"));
    }
    ++i_;
    return status;
  }

  int While(bool active) {
    const Token& t = Peek();
    const int line = t.line;
    const bool until = t.text == "until";
    ++i_;
    const int cond = List(Live(active), {"do"});
    Expect("do", t.text);
    if (Live(active) && ((cond == 0) != until)) {
      Refuse(line, "a loop: must not run its body in a launch ppb reads; got a condition "
                   "that holds on the first pass");
    }
    List(false, {"done"});
    Expect("done", "a loop");
    return 0;
  }

  int For(bool active) {
    const int line = Peek().line;
    if (Live(active)) Refuse(line, "a for loop: must not be used in a launch ppb reads");
    ++i_;
    while (Peek().kind != Tok::End && !IsWord("do")) ++i_;
    Expect("do", "for");
    List(false, {"done"});
    Expect("done", "a loop");
    return 0;
  }

  int Case(bool active) {
    const int line = Peek().line;
    ++i_;
    if (Peek().kind != Tok::Word) Refuse(line, "case: must name a word");
    const bool live = Live(active);
    std::string subject;
    if (live) subject = Scalar(RawWord{Peek().text, Peek().line}, "case");
    ++i_;
    SkipNewlines();
    Expect("in", "case WORD");
    bool taken = false;
    while (true) {
      SkipNewlines();
      if (IsWord("esac")) break;
      if (IsOp("(")) ++i_;
      bool match = false;
      while (true) {
        if (Peek().kind != Tok::Word) Refuse(Peek().line, "case: must list patterns before ')'");
        if (live && !taken) {
          match = match || GlobMatch(Scalar(RawWord{Peek().text, Peek().line}, "case"), subject);
        }
        ++i_;
        if (IsOp("|")) {
          ++i_;
          continue;
        }
        break;
      }
      if (!IsOp(")")) Refuse(Peek().line, "case: must close its patterns with ')'");
      ++i_;
      const bool run = live && !taken && match;
      List(run, {"esac"});
      if (run) taken = true;
      if (IsOp(";;")) ++i_;
    }
    ++i_;
    return 0;
  }

  // [[ expression ]]
  int DoubleBracket(bool active) {
    const int line = Peek().line;
    ++i_;
    std::vector<TestItem> items;
    while (!IsWord("]]")) {
      const Token& t = Peek();
      if (t.kind == Tok::End || t.kind == Tok::Newline) {
        Refuse(line, "[[: must end with ']]' on its line");
      }
      items.push_back(TestItem{t.text, t.kind == Tok::Op, line, {}});
      ++i_;
    }
    ++i_;
    if (!Live(active)) return 0;
    for (TestItem& it : items) {
      if (!it.op) it.value = ExpandForTest(RawWord{it.text, line});
    }
    size_t pos = 0;
    const bool r = TestOr(items, pos, true);
    if (pos != items.size()) Refuse(line, "[[: must hold one expression; got more");
    return r ? 0 : 1;
  }

  // ---- simple commands ---------------------------------------------------

  static bool IsAssignment(std::string_view w, size_t& eq) {
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

  int Simple(bool active, bool after_assignment) {
    const int line = Peek().line;
    std::vector<RawWord> words;
    std::vector<RawWord> assigns;
    std::vector<Token> arrays;
    while (true) {
      const Token& t = Peek();
      if (t.kind == Tok::Word) {
        if (words.empty() && (t.text == "then" || t.text == "do" || t.text == "fi" ||
                              t.text == "done" || t.text == "esac" || t.text == "elif" ||
                              t.text == "else" || t.text == "}")) {
          if (words.empty() && assigns.empty() && !after_assignment) {
            Refuse(t.line, fmt::format("'{}': must not appear here", t.text));
          }
          break;
        }
        size_t eq = 0;
        if (words.empty() && IsAssignment(t.text, eq)) {
          assigns.push_back(RawWord{t.text, t.line});
        } else {
          words.push_back(RawWord{t.text, t.line});
        }
        ++i_;
      } else if (t.kind == Tok::Array) {
        if (!words.empty()) Refuse(t.line, "an array: must be assigned before a command");
        arrays.push_back(t);
        ++i_;
      } else if (t.kind == Tok::Op && (t.text == "<" || t.text == ">" || t.text == ">>" ||
                                       t.text == ">&" || t.text == "<&")) {
        ++i_;
        if (Peek().kind != Tok::Word) Refuse(t.line, "a redirection: must name its target");
        ++i_;
      } else {
        break;
      }
    }
    if (!Live(active)) return 0;
    if (words.empty()) {
      for (const RawWord& a : assigns) Assign(a);
      for (const Token& a : arrays) AssignArray(a);
      return 0;
    }
    return Run(words, line);
  }

  int Run(const std::vector<RawWord>& words, int line) {
    const std::string& name = words.front().text;
    if (name == "export" || name == "local" || name == "readonly" || name == "declare" ||
        name == "typeset") {
      for (size_t k = 1; k < words.size(); ++k) {
        size_t eq = 0;
        if (IsAssignment(words[k].text, eq)) Assign(words[k]);
      }
      return 0;
    }
    if (name == "unset") {
      for (size_t k = 1; k < words.size(); ++k) {
        if (!words[k].text.empty() && words[k].text[0] == '-') continue;
        vars_.erase(words[k].text);
      }
      return 0;
    }
    if (name == "source" || name == "." || name == "eval" || name == "exec" ||
        name == "read" || name == "mapfile" || name == "readarray" || name == "shopt" ||
        name == "alias" || name == "let") {
      Refuse(line, fmt::format("{}: must not be run in a launch ppb reads (ppb runs nothing)",
                               name));
    }
    if (name == "exit") {
      exited_ = true;
      exit_line_ = line;
      return 0;
    }
    if (name == "true" || name == ":") return 0;
    if (name == "false") return 1;
    std::vector<LaunchWord> fields;
    for (const RawWord& w : words) Expand(w, true, fields);
    if (name == "[" || name == "test") {
      if (name == "[") {
        if (fields.empty() || fields.back().text != "]") Refuse(line, "[: must end with ']'");
        fields.pop_back();
      }
      std::vector<TestItem> items;
      for (size_t k = 1; k < fields.size(); ++k) {
        if (fields[k].unknown) {
          Refuse(line, "a test: must compare values the script sets; got the output of a "
                       "command ppb does not run");
        }
        items.push_back(TestItem{fields[k].text, false, line, fields[k].text});
      }
      if (items.empty()) return 1;
      size_t pos = 0;
      const bool r = TestOr(items, pos, false);
      if (pos != items.size()) Refuse(line, fmt::format("{}: must hold one expression", name));
      return r ? 0 : 1;
    }
    // The launch: the first word naming a pretrain_*.py script.
    for (size_t k = 0; k < fields.size(); ++k) {
      const std::string& w = fields[k].text;
      const size_t slash = w.find_last_of('/');
      const std::string base = slash == std::string::npos ? w : w.substr(slash + 1);
      if (!GlobMatch("pretrain_*.py", base)) continue;
      if (launch_) {
        Refuse(line, fmt::format("the launch: must be one command; got a second at line {} "
                                 "(the first at line {})",
                                 line, launch_->line));
      }
      LaunchCommand c;
      c.line = line;
      c.launcher.assign(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(k));
      c.script = w;
      c.args.assign(fields.begin() + static_cast<std::ptrdiff_t>(k) + 1, fields.end());
      launch_ = std::move(c);
      break;
    }
    return 0;
  }

  // ---- tests -------------------------------------------------------------

  struct TestItem {
    std::string text;  // as written
    bool op = false;   // an operator token ([[ && || ( ) < >)
    int line = 0;
    std::string value;  // expanded
  };

  static bool IsOr(const TestItem& it, bool dbl) {
    return dbl ? (it.op && it.text == "||") : (!it.op && it.value == "-o");
  }
  static bool IsAnd(const TestItem& it, bool dbl) {
    return dbl ? (it.op && it.text == "&&") : (!it.op && it.value == "-a");
  }

  bool TestOr(const std::vector<TestItem>& v, size_t& pos, bool dbl) {
    Depth d(*this);
    bool r = TestAnd(v, pos, dbl);
    while (pos < v.size() && IsOr(v[pos], dbl)) {
      ++pos;
      const bool rhs = TestAnd(v, pos, dbl);
      r = r || rhs;
    }
    return r;
  }

  bool TestAnd(const std::vector<TestItem>& v, size_t& pos, bool dbl) {
    bool r = TestNot(v, pos, dbl);
    while (pos < v.size() && IsAnd(v[pos], dbl)) {
      ++pos;
      const bool rhs = TestNot(v, pos, dbl);
      r = r && rhs;
    }
    return r;
  }

  bool TestNot(const std::vector<TestItem>& v, size_t& pos, bool dbl) {
    Depth d(*this);
    if (pos < v.size() && !v[pos].op && v[pos].text == "!") {
      ++pos;
      return !TestNot(v, pos, dbl);
    }
    return TestPrimary(v, pos, dbl);
  }

  bool TestPrimary(const std::vector<TestItem>& v, size_t& pos, bool dbl) {
    const int line = v.empty() ? 0 : v.front().line;
    if (pos >= v.size()) Refuse(line, "a test: must not end after an operator");
    const TestItem& a = v[pos];
    if (a.op && a.text == "(") {
      ++pos;
      const bool r = TestOr(v, pos, dbl);
      if (pos >= v.size() || !(v[pos].op && v[pos].text == ")")) {
        Refuse(line, "a test: must close '('");
      }
      ++pos;
      return r;
    }
    if (a.op) Refuse(line, fmt::format("a test: must not hold '{}' here", a.text));
    static const std::set<std::string> kUnary = {"-z", "-n", "-f", "-d", "-e",
                                                 "-r", "-s", "-x", "-w", "-L"};
    // word binop word
    if (pos + 2 < v.size()) {
      const TestItem& op = v[pos + 1];
      const std::string& o = op.op ? op.text : op.value;
      static const std::set<std::string> kBinary = {"==", "=",   "!=",  "-eq", "-ne", "-lt",
                                                    "-le", "-gt", "-ge", "<",   ">",   "=~"};
      if (kBinary.count(o) != 0) {
        const std::string& l = a.value;
        const std::string& r = v[pos + 2].value;
        pos += 3;
        if (o == "=~") Refuse(line, "a test: =~ must not be used in a launch ppb reads");
        if (o == "==" || o == "=") return dbl ? GlobMatch(r, l) : l == r;
        if (o == "!=") return dbl ? !GlobMatch(r, l) : l != r;
        if (o == "<") return l < r;
        if (o == ">") return l > r;
        const std::int64_t x = Integer(l, line), y = Integer(r, line);
        if (o == "-eq") return x == y;
        if (o == "-ne") return x != y;
        if (o == "-lt") return x < y;
        if (o == "-le") return x <= y;
        if (o == "-gt") return x > y;
        return x >= y;
      }
    }
    if (kUnary.count(a.value) != 0 && pos + 1 < v.size() && !v[pos + 1].op) {
      const std::string& w = v[pos + 1].value;
      const std::string& o = a.value;
      pos += 2;
      if (o == "-z") return w.empty();
      if (o == "-n") return !w.empty();
      return true;  // a file test: the launch's files are taken to exist
    }
    ++pos;
    return !a.value.empty();
  }

  std::int64_t Integer(const std::string& s, int line) const {
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

  // ---- expansion ---------------------------------------------------------

  void Note(const std::string& name) {
    if (!name.empty() && IsNameStart(name[0])) env_.insert(name);
  }

  const Var* Get(const std::string& name) {
    auto it = vars_.find(name);
    if (it != vars_.end()) return &it->second;
    Note(name);
    return nullptr;
  }

  static std::string Joined(const Var& v) {
    std::string s;
    for (size_t k = 0; k < v.values.size(); ++k) {
      if (k > 0) s += ' ';
      s += v.values[k].text;
    }
    return s;
  }

  static bool AnyUnknown(const Var& v) {
    return std::any_of(v.values.begin(), v.values.end(),
                       [](const LaunchWord& w) { return w.unknown; });
  }

  // The whole expansion of `w` as one string (assignments, case, [[ ]]).
  std::string Scalar(const RawWord& w, std::string_view what, bool* unknown = nullptr) {
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

  std::string ExpandForTest(const RawWord& w) { return Scalar(w, "a test"); }

  // Appends the fields of `w` to `out` (split: word splitting of unquoted
  // expansions, as in a command's arguments).
  void Expand(const RawWord& w, bool split, std::vector<LaunchWord>& out) {
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

  void ExpandInto(std::string_view s, int line, bool split, bool in_quotes, Fields& f) {
    Depth d(*this);
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
        if (!in_quotes || n == '$' || n == '`' || n == '"' || n == '\\') {
          f.Add(std::string_view(&s[j + 1], 1), false, false);
        } else {
          f.Add(s.substr(j, 2), false, false);
        }
        j += 2;
      } else if (c == '`') {
        const size_t close = s.find('`', j + 1);
        f.Add("", false, true);
        j = close == std::string_view::npos ? s.size() : close + 1;
      } else if (c == '$') {
        j = Dollar(s, j, line, split && !in_quotes, in_quotes, f);
      } else {
        f.Add(std::string_view(&s[j], 1), false, false);
        ++j;
      }
    }
  }

  static size_t MatchingQuote(std::string_view s, size_t k) {
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
  static size_t MatchingClose(std::string_view s, size_t k) {
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
  size_t Dollar(std::string_view s, size_t j, int line, bool split, bool in_quotes, Fields& f) {
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
      f.Add("", false, true);
      return MatchingClose(s, j + 1) + 1;
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
  void Brace(std::string_view e, int line, bool split, bool in_quotes, Fields& f) {
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

  static void SkipSpaces(const std::string& s, size_t& pos) {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
  }

  std::int64_t Arith(const std::string& s, size_t& pos, int line) {
    Depth d(*this);
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

  std::int64_t ArithTerm(const std::string& s, size_t& pos, int line) {
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

  std::int64_t ArithUnary(const std::string& s, size_t& pos, int line) {
    Depth d(*this);
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

  void Assign(const RawWord& w) {
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

  void AssignArray(const Token& t) {
    std::vector<LaunchWord> values;
    for (const RawWord& e : t.elements) Expand(e, true, values);
    Var& v = vars_[t.text];
    if (!t.append) v.values.clear();
    if (v.values.size() + values.size() > kMaxWords) {
      Refuse(t.line, fmt::format("array {}: must hold at most {} words", t.text, kMaxWords));
    }
    for (LaunchWord& x : values) v.values.push_back(std::move(x));
  }

  std::string path_;
  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  std::map<std::string, Var> vars_;
  std::set<std::string> env_;
  std::optional<LaunchCommand> launch_;
  bool exited_ = false;
  int exit_line_ = 0;
  size_t expanded_ = 0;  // characters all expansions gave
};

}  // namespace

bool IsArgumentsFile(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = text.substr(pos, nl - pos);
    pos = nl + 1;
    const size_t first = l.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || l[first] == '#') continue;
    return l.compare(first, 2, "--") == 0;
  }
  return false;
}

Result<LaunchCommand> ReadArgumentsFile(std::string_view path, std::string_view text) {
  try {
    Lexer lexer(text);
    Interpreter in(path, lexer.Run());
    return in.Arguments();
  } catch (const Refusal& r) {
    return Error{"", fmt::format("{}:{}: {}", path, r.line, r.message)};
  }
}

Result<LaunchCommand> ReadLaunchScript(std::string_view path, std::string_view text) {
  try {
    Lexer lexer(text);
    Interpreter in(path, lexer.Run());
    return in.Run();
  } catch (const Refusal& r) {
    return Error{"", fmt::format("{}:{}: {}", path, r.line, r.message)};
  }
}

}  // namespace ppb
