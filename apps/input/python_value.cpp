// Flatten (apps/input/python_value.h).
#include "apps/input/python_value.h"

#include <fmt/format.h>

namespace ppb::python_detail {
namespace {

constexpr int kMaxDepth = 64;

}  // namespace

void Flatten(const std::string& key, const Value& v, PythonConfig& out, int depth) {
  auto put = [&](TomlValue t) {
    t.line = v.line;
    out.values.values[key] = std::move(t);
  };
  if (depth > kMaxDepth) {
    out.unknown[key] = PythonConfig::Unknown{v.line, "a value nested too deep"};
    return;
  }
  switch (v.kind) {
    case Value::Kind::Bool: {
      TomlValue t;
      t.kind = TomlValue::Kind::Bool;
      t.b = v.b;
      put(t);
      return;
    }
    case Value::Kind::Int: {
      TomlValue t;
      t.i = v.i;
      put(t);
      return;
    }
    case Value::Kind::Float: {
      TomlValue t;
      t.kind = TomlValue::Kind::Float;
      t.f = v.f;
      put(t);
      return;
    }
    case Value::Kind::Str: {
      TomlValue t;
      t.kind = TomlValue::Kind::String;
      t.s = v.s;
      put(t);
      return;
    }
    case Value::Kind::None: {
      TomlValue t;
      t.kind = TomlValue::Kind::String;
      t.s = "None";
      put(t);
      return;
    }
    case Value::Kind::Object: {
      TomlValue t;
      t.kind = TomlValue::Kind::String;
      t.s = v.s;
      put(t);
      for (const auto& [k, f] : v.fields) Flatten(key + "." + k, *f, out, depth + 1);
      return;
    }
    case Value::Kind::List: {
      TomlValue t;
      t.kind = TomlValue::Kind::Array;
      for (size_t k = 0; k < v.items.size(); ++k) {
        const Value& item = *v.items[k];
        if (item.kind == Value::Kind::Object) {
          // The object's type in the list, its fields at key.k.field.
          TomlValue type;
          type.kind = TomlValue::Kind::String;
          type.s = item.s;
          type.line = item.line;
          t.items.push_back(type);
          for (const auto& [k2, f] : item.fields) {
            Flatten(fmt::format("{}.{}.{}", key, k, k2), *f, out, depth + 1);
          }
          continue;
        }
        PythonConfig inner;
        Flatten("x", item, inner, depth + 1);
        if (!inner.unknown.empty() || inner.values.values.count("x") == 0) {
          out.unknown[key] = PythonConfig::Unknown{
              item.line,
              inner.unknown.empty() ? "a list item" : inner.unknown.begin()->second.expression};
          return;
        }
        t.items.push_back(inner.values.values.at("x"));
      }
      put(t);
      return;
    }
    case Value::Kind::Dict:
    case Value::Kind::Name:
    case Value::Kind::Function:
    case Value::Kind::Unknown:
      out.unknown[key] =
          PythonConfig::Unknown{v.line, v.kind == Value::Kind::Unknown ? v.s
                                        : v.kind == Value::Kind::Dict  ? std::string("a dict")
                                                                       : v.s};
      return;
  }
}

}  // namespace ppb::python_detail
