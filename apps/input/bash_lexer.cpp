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

  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
  int depth_ = 0;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view text) { return Lexer(text).Run(); }

}  // namespace ppb::bash_detail
