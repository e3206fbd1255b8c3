// TokenizePython (apps/input/python_lexer.h).
#include "apps/input/python_lexer.h"

#include <fmt/format.h>

#include <cctype>
#include <utility>

namespace ppb {
namespace {

constexpr int kMaxNesting = 64;

struct Bad {
  std::string message;
};

using Token = PyToken;

class Lexer {
 public:
  Lexer(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  std::vector<Token> Run() {
    indents_.push_back(0);
    bool line_start = true;
    while (pos_ < text_.size()) {
      if (line_start && depth_ == 0) {
        // Indentation of a logical line; blank and comment lines do not count.
        int col = 0;
        size_t k = pos_;
        while (k < text_.size() && (text_[k] == ' ' || text_[k] == '\t' || text_[k] == '\f')) {
          col = text_[k] == '\t' ? (col / 8 + 1) * 8 : col + 1;
          ++k;
        }
        if (k >= text_.size() || text_[k] == '\n' || text_[k] == '#' || text_[k] == '\r') {
          pos_ = k;
          while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
          if (pos_ < text_.size()) Newline(false);
          continue;
        }
        pos_ = k;
        if (col > indents_.back()) {
          indents_.push_back(col);
          Emit(Token::Kind::Indent, "");
        }
        while (col < indents_.back()) {
          indents_.pop_back();
          Emit(Token::Kind::Dedent, "");
        }
        if (col != indents_.back()) Fail("an indentation that matches no outer level");
        line_start = false;
      }
      const char c = text_[pos_];
      if (c == '\n') {
        Newline(depth_ == 0);
        line_start = depth_ == 0;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        ++pos_;
        continue;
      }
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') {
        pos_ += 2;
        ++line_;
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' ||
          static_cast<unsigned char>(c) >= 0x80) {
        const size_t start = pos_;
        while (pos_ < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[pos_])) != 0 || text_[pos_] == '_' ||
                static_cast<unsigned char>(text_[pos_]) >= 0x80)) {
          ++pos_;
        }
        std::string word(text_.substr(start, pos_ - start));
        if (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\'') &&
            word.size() <= 2) {
          std::string lower;
          for (char w : word)
            lower += static_cast<char>(std::tolower(static_cast<unsigned char>(w)));
          if (lower == "r" || lower == "b" || lower == "u" || lower == "f" || lower == "rb" ||
              lower == "br" || lower == "fr" || lower == "rf") {
            String(lower.find('f') != std::string::npos, lower.find('r') != std::string::npos);
            continue;
          }
        }
        Emit(Token::Kind::Name, std::move(word));
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
          (c == '.' && pos_ + 1 < text_.size() &&
           std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])) != 0)) {
        const size_t start = pos_;
        while (pos_ < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[pos_])) != 0 || text_[pos_] == '_' ||
                text_[pos_] == '.' ||
                ((text_[pos_] == '+' || text_[pos_] == '-') &&
                 (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E') &&
                 text_.substr(start, 2) != "0x" && text_.substr(start, 2) != "0X"))) {
          ++pos_;
        }
        Emit(Token::Kind::Number, std::string(text_.substr(start, pos_ - start)));
        continue;
      }
      if (c == '"' || c == '\'') {
        String(false, false);
        continue;
      }
      static const char* const kOps[] = {"**=", "//=", ">>=", "<<=", "...", "->", "**", "//",
                                         "==",  "!=",  "<=",  ">=",  ":=",  "+=", "-=", "*=",
                                         "/=",  "%=",  "&=",  "|=",  "^=",  "@=", "<<", ">>"};
      std::string op(1, c);
      for (const char* o : kOps) {
        if (text_.substr(pos_, std::char_traits<char>::length(o)) == o) {
          op = o;
          break;
        }
      }
      if (op.size() == 1 &&
          std::string_view("()[]{},:.;=+-*/%<>@&|^~").find(c) == std::string_view::npos) {
        Fail(fmt::format("a Python token; got '{}'", c));
      }
      if (op == "(" || op == "[" || op == "{") {
        if (++depth_ > kMaxNesting) Fail("brackets nested at most 64 deep");
      }
      if ((op == ")" || op == "]" || op == "}") && depth_ > 0) --depth_;
      pos_ += op.size();
      Emit(Token::Kind::Op, std::move(op));
    }
    if (!tokens_.empty() && tokens_.back().kind != Token::Kind::Newline) {
      Emit(Token::Kind::Newline, "");
    }
    while (indents_.size() > 1) {
      indents_.pop_back();
      Emit(Token::Kind::Dedent, "");
    }
    Emit(Token::Kind::End, "");
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw Bad{fmt::format("{}:{}: expected {}", path_, line_, what)};
  }
  void Emit(Token::Kind k, std::string text) {
    tokens_.push_back(Token{k, std::move(text), line_});
  }
  void Newline(bool logical) {
    if (logical && !tokens_.empty() && tokens_.back().kind != Token::Kind::Newline &&
        tokens_.back().kind != Token::Kind::Indent && tokens_.back().kind != Token::Kind::Dedent) {
      Emit(Token::Kind::Newline, "");
    }
    ++pos_;
    ++line_;
  }
  // A string literal; pos_ at its quote. Escapes are decoded for the
  // common forms; an f-string's value is not known.
  void String(bool f, bool raw) {
    const int at = line_;
    const char q = text_[pos_];
    const bool triple = text_.substr(pos_, 3) == std::string(3, q);
    pos_ += triple ? 3 : 1;
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) {
        line_ = at;
        Fail("the string to be closed; got the end of the file");
      }
      const char c = text_[pos_];
      if (triple ? text_.substr(pos_, 3) == std::string(3, q) : c == q) {
        pos_ += triple ? 3 : 1;
        break;
      }
      if (c == '\n') {
        if (!triple) {
          line_ = at;
          Fail("the string to be closed on its line; got the end of the line");
        }
        ++line_;
      }
      if (c == '\\' && pos_ + 1 < text_.size()) {
        const char e = text_[pos_ + 1];
        if (e == '\n') ++line_;
        if (raw) {
          out += c;
          out += e;
        } else {
          out += e == 'n' ? '\n' : e == 't' ? '\t' : e == '\n' ? '\0' : e;
          if (e == '\n') out.pop_back();
        }
        pos_ += 2;
        continue;
      }
      out += c;
      ++pos_;
    }
    // Adjacent literals are one string.
    if (!tokens_.empty() && (tokens_.back().kind == Token::Kind::String ||
                             tokens_.back().kind == Token::Kind::FString)) {
      if (f) tokens_.back().kind = Token::Kind::FString;
      tokens_.back().text += out;
      return;
    }
    tokens_.push_back(Token{f ? Token::Kind::FString : Token::Kind::String, std::move(out), at});
  }

  const std::string& path_;
  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int depth_ = 0;
  std::vector<int> indents_;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<PyToken>> TokenizePython(const std::string& path, std::string_view text) {
  try {
    return Lexer(path, text).Run();
  } catch (const Bad& b) {
    return Error{"", b.message};
  }
}

}  // namespace ppb
