// The --vary flag of `ppb-sim compare`: "KEY=V1,V2,..." — a numeric config
// key and the values it takes (absolute, in the file's units, or factors
// "x0.5"). ParseVary checks the syntax only; the key and values are checked
// against the config when the variants are built (apps/input/vary_document.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace ppb {

// One --vary axis: a config key and the values it takes.
struct VaryAxis {
  std::string key;                  // dotted key as given
  std::vector<std::string> values;  // as given: "25GB/s" or a factor "x0.5"
};

// Parses "KEY=V1,V2,..." (the syntax only; keys and values are checked by
// Compare). Errors read "--vary: expected KEY=V1,V2,...; got 'foo'".
Result<VaryAxis> ParseVary(std::string_view text);

}  // namespace ppb
