// The bash subset's tokens (apps/input/launch_script.h says what is read):
// words as written (quotes, $(...), ${...} kept whole and balanced),
// operators, newlines, NAME=( ... ) arrays with their words, and
// here-documents (<<WORD or <<-WORD: the lines after the command's line up
// to WORD alone on a line), each with its line. A redirection's file
// descriptor number (the 2 of 2>&1) is no word. Refusals are thrown as Refusal{line, message} and placed by the
// caller. Internal to apps/input.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ppb::bash_detail {

// The deepest nesting of compound commands, expansions and arithmetic read
// (the shipped launches nest 3 deep); deeper input is refused, not recursed.
inline constexpr int kMaxDepth = 64;

// A refusal, caught where a script is read and returned as an Error.
struct Refusal {
  int line;
  std::string message;
};

[[noreturn]] void Refuse(int line, std::string message);

enum class Tok { Word, Op, Newline, Array, HereDoc, End };

struct RawWord {
  std::string text;  // as written, quotes included
  int line = 0;
};

struct Token {
  Token() = default;
  Token(Tok k, std::string t, int l) : kind(k), text(std::move(t)), line(l) {}
  Tok kind = Tok::End;
  std::string text;  // word as written; operator; array name; here-document body
  int line = 0;
  // HereDoc: the delimiter was quoted (the body is not expanded), and the
  // line of the body's first line.
  bool quoted = false;
  int body_line = 0;
  bool append = false;             // Array: NAME+=( )
  std::vector<RawWord> elements;   // Array: its words
};

bool IsNameStart(char c);
bool IsNameChar(char c);

// The tokens of `text`, ending with Tok::End.
std::vector<Token> Tokenize(std::string_view text);

}  // namespace ppb::bash_detail
