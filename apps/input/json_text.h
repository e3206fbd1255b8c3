// The one way ppb turns JSON into text: the JSON reports (apps/output/*.cpp)
// and the values the JSON readers (HF config.json, SAPP) give back in
// errors. A name the user gave (model, candidate, calibrate run) may hold
// bytes that are not UTF-8; nlohmann's plain dump() throws on them (type_error
// 316), so every report dumps here, with each invalid byte replaced by
// U+FFFD. Valid text is dumped exactly as dump() would. No I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"

namespace ppb {

// `j` as JSON text: indented by `indent` spaces (-1: one line), invalid
// UTF-8 replaced.
template <class BasicJson>
std::string JsonText(const BasicJson& j, int indent) {
  return j.dump(indent, ' ', false, BasicJson::error_handler_t::replace);
}

// A JSON value as an error gives it back after "; got ": one line,
// abbreviated (core/result.h), invalid UTF-8 replaced.
template <class BasicJson>
std::string JsonGiven(const BasicJson& j) {
  return Abbreviate(JsonText(j, -1));
}

}  // namespace ppb
