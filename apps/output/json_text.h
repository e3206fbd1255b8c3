// The one way the JSON reports (apps/output/*.cpp) turn a document into
// text. A name the user gave (model, candidate, calibrate run) may hold bytes
// that are not UTF-8; nlohmann's plain dump() throws on them (type_error
// 316), so every report dumps here, with each invalid byte replaced by
// U+FFFD. Valid text is dumped exactly as dump() would. No I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ppb {

// `j` as JSON text: indented by `indent` spaces (-1: one line), invalid
// UTF-8 replaced.
template <class BasicJson>
std::string JsonText(const BasicJson& j, int indent) {
  return j.dump(indent, ' ', false, BasicJson::error_handler_t::replace);
}

}  // namespace ppb
