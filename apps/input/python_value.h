// The values a config function's evaluation (apps/input/python_config.cpp)
// computes, and their flattening into PythonConfig's dotted keys. Internal
// to apps/input/python_*.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/python_config.h"

namespace ppb::python_detail {

struct Value;
using Ref = std::shared_ptr<Value>;

struct Value {
  // Name: a name the file imports or does not define (its dotted path in
  // s); Function: one of the file's functions (its name in s).
  enum class Kind : std::uint8_t {
    Unknown,
    None,
    Bool,
    Int,
    Float,
    Str,
    List,
    Dict,
    Object,
    Name,
    Function
  };
  Kind kind = Kind::Unknown;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::string s;  // a string; an object's type; a name; an unknown's expression
  std::vector<Ref> items;
  std::vector<std::pair<std::string, Ref>> fields;  // an object's or a dict's
  int line = 0;

  Ref Field(const std::string& name) const {
    for (const auto& [k, v] : fields) {
      if (k == name) return v;
    }
    return nullptr;
  }
  void Set(const std::string& name, Ref v) {
    for (auto& [k, old] : fields) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    fields.emplace_back(name, std::move(v));
  }
};

inline Ref Make(Value::Kind k, int line) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  v->line = line;
  return v;
}
inline Ref MakeUnknown(int line, std::string expression) {
  Ref v = Make(Value::Kind::Unknown, line);
  v->s = std::move(expression);
  return v;
}

// `v` at `key` in `out`: a scalar as its TOML value, None as the string
// "None", an object as the string of its type with its fields below, a
// list of objects as their types with their fields at key.N.field;
// anything else (a dict, a name, an unknown) in out.unknown. At most
// `kMaxDepth` deep.
void Flatten(const std::string& key, const Value& v, PythonConfig& out, int depth);

}  // namespace ppb::python_detail
