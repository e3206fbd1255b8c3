// ReadToml: the TOML 1.0 that job configs are written in (torchtitan's
// train_configs/*.toml), each value with the line it was written on.
//
// Read: comments; [table] and [a."b".c] headers; bare, quoted and dotted
// keys; basic strings ("..." with \" \\ \b \t \n \f \r \uXXXX and
// \UXXXXXXXX escapes) and literal strings ('...'); integers (decimal with
// '_' between digits, 0x / 0o / 0b); floats (fractions, exponents, inf,
// nan, signed); true / false; arrays (across lines, with comments and a
// trailing comma) and one-line inline tables { k = v, ... }, flattened into
// dotted keys. Refused at their line, saying so: multi-line strings,
// arrays of tables ([[x]]), dates and times. As TOML requires: a key given
// twice, a table header given twice, a key that is both a value and a
// table, a leading zero, a bare newline in a string are errors. Arrays nest
// at most 64 deep.
//
// Errors are "PATH:LINE: KEY: what was expected; got what was given".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace ppb {

struct TomlValue {
  enum class Kind : std::uint8_t { String, Int, Float, Bool, Array };
  Kind kind = Kind::Int;
  std::string s;
  std::int64_t i = 0;
  double f = 0;
  bool b = false;
  std::vector<TomlValue> items;
  int line = 0;  // where the value starts
};

// What a value is, for messages: "the string \"x\"", "the integer 3",
// "an array of 2", ...
std::string DescribeToml(const TomlValue& v);

struct TomlDocument {
  // Every value by its full dotted key ("parallelism.tensor_parallel_degree"),
  // quoted key parts unquoted.
  std::map<std::string, TomlValue> values;
  // Every table header by its dotted name, with its line.
  std::map<std::string, int> tables;
};

Result<TomlDocument> ReadToml(const std::string& path, std::string_view text);

}  // namespace ppb
