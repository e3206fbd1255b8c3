// TokenizePython: the tokens of a Python source, by the lexical rules of
// docs.python.org/3/reference/lexical_analysis.html for what a config
// registry uses (apps/input/python_config.h): names, numbers, strings
// (prefixes r b u f and their pairs; triple-quoted strings across lines;
// adjacent literals joined; an f-string marked, its value not known),
// operators, and NEWLINE / INDENT / DEDENT for logical lines (brackets and
// backslashes join physical lines; blank and comment lines do not count).
// Brackets nest at most 64 deep. Errors are "PATH:LINE: expected ...".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace ppb {

struct PyToken {
  enum class Kind : std::uint8_t {
    Name,
    Number,
    String,
    FString,
    Op,
    Newline,
    Indent,
    Dedent,
    End
  };
  Kind kind = Kind::End;
  std::string text;  // a string's value; a name; an operator
  int line = 0;
};

// Ends with an End token.
Result<std::vector<PyToken>> TokenizePython(const std::string& path, std::string_view text);

}  // namespace ppb
