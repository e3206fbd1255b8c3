// Tokenize (apps/input/bash_lexer.h).
#include "apps/input/bash_lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

namespace ppb::bash_detail {

void Refuse(int line, std::string message) {
  throw Refusal{line, std::move(message)};
}

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
namespace {

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
        Bodies(out);
        continue;
      }
      if (s_.substr(i_, 2) == "<<" && s_.substr(i_, 3) != "<<<") {
        HereDoc(out);
        continue;
      }
      if (IsMeta(c)) {
        out.push_back(Operator());
        continue;
      }
      const int line = line_;
      std::string word = Word();
      // The file descriptor of a redirection (2>&1, 1>log) is no word.
      if (i_ < s_.size() && (s_[i_] == '<' || s_[i_] == '>') && !word.empty() &&
          std::all_of(word.begin(), word.end(),
                      [](char d) { return std::isdigit(static_cast<unsigned char>(d)); })) {
        continue;
      }
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
    if (!pending_.empty()) Bodies(out);
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

  // <<WORD or <<-WORD: the token now, its body once the line ends (bash:
  // "the lines following the command", man bash "Here Documents").
  void HereDoc(std::vector<Token>& out) {
    const int line = line_;
    i_ += 2;
    const bool strip = i_ < s_.size() && s_[i_] == '-';
    if (strip) ++i_;
    SkipBlanks();
    if (i_ >= s_.size() || IsMeta(s_[i_])) {
      Refuse(line, "here-document: must name its delimiter after <<");
    }
    const std::string word = Word();
    // Quote removal on the delimiter; any quote means an unexpanded body.
    std::string delim;
    bool quoted = false;
    for (size_t k = 0; k < word.size(); ++k) {
      const char q = word[k];
      if (q == '\\' && k + 1 < word.size()) {
        quoted = true;
        delim += word[++k];
      } else if (q == '\'' || q == '"') {
        quoted = true;
      } else {
        delim += q;
      }
    }
    Token t{Tok::HereDoc, "", line};
    t.quoted = quoted;
    out.push_back(std::move(t));
    pending_.push_back(Pending{out.size() - 1, delim, strip, line});
  }

  // The bodies of the here-documents opened on the line just ended.
  void Bodies(std::vector<Token>& out) {
    for (const Pending& p : pending_) {
      Token& t = out[p.token];
      t.body_line = line_;
      bool closed = false;
      while (i_ < s_.size()) {
        const size_t end = std::min(s_.find('\n', i_), s_.size());
        std::string_view l = s_.substr(i_, end - i_);
        i_ = std::min(end + 1, s_.size());
        ++line_;
        if (p.strip) {
          while (!l.empty() && l.front() == '\t') l.remove_prefix(1);
        }
        if (l == p.delim) {
          closed = true;
          break;
        }
        t.text += l;
        t.text += '\n';
      }
      if (!closed) {
        Refuse(p.line, fmt::format("here-document: must end with a line holding only '{}'; "
                                   "got the end of the file",
                                   p.delim));
      }
    }
    pending_.clear();
  }

  Token Operator() {
    static const char* const kOps[] = {";;", "&&", "||", "&>>", "&>", ">>", "<<<", ">&", "<&",
                                       ";",  "&",  "|",  "(",   ")",  "<",  ">"};
    for (const char* op : kOps) {
      const std::string_view o(op);
      if (s_.substr(i_, o.size()) == o) {
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
        // The escaped character too, so an escaped newline counts once.
        if (s_[i_ + 1] == '\n') ++line_;
        out += s_[i_++];
        out += s_[i_++];
        continue;
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

  struct Pending {
    size_t token;  // the HereDoc token in the output
    std::string delim;
    bool strip;  // <<-: leading tabs removed
    int line;
  };

  std::string_view s_;
  std::vector<Pending> pending_;
  size_t i_ = 0;
  int line_ = 1;
  int depth_ = 0;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view text) { return Lexer(text).Run(); }

}  // namespace ppb::bash_detail
