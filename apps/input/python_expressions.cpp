// The expressions of the evaluator (apps/input/python_evaluator.h), by
// Python's precedence: conditionals and lambdas, or/and/not, comparisons,
// arithmetic, unary operators, calls, attributes, subscripts and atoms.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <memory>
#include <utility>

#include "apps/input/python_evaluator.h"

namespace ppb::python_detail {

Ref Evaluator::Expression() {
  const Depth depth(*this);
  if (IsName("lambda")) {
    const int line = Next().line;
    while (!IsOp(":")) {
      if (Peek().kind == Token::Kind::Newline || Peek().kind == Token::Kind::End) Fail("':'");
      Next();
    }
    Next();
    Expression();
    return MakeUnknown(line, "a lambda");
  }
  Ref v = Or();
  if (IsName("if")) {
    Next();
    Ref cond = Or();
    if (!IsName("else")) Fail("'else'");
    Next();
    Ref other = Expression();
    const int truth = Truth(*cond);
    if (truth < 0) return MakeUnknown(cond->line, "a conditional expression");
    return truth != 0 ? v : other;
  }
  return v;
}

int Evaluator::Truth(const Value& v) {
  switch (v.kind) {
    case Value::Kind::None:
      return 0;
    case Value::Kind::Bool:
      return v.b ? 1 : 0;
    case Value::Kind::Int:
      return v.i != 0 ? 1 : 0;
    case Value::Kind::Float:
      return v.f != 0 ? 1 : 0;
    case Value::Kind::Str:
      return v.s.empty() ? 0 : 1;
    case Value::Kind::List:
    case Value::Kind::Dict:
      return v.items.empty() && v.fields.empty() ? 0 : 1;
    case Value::Kind::Object:
    case Value::Kind::Function:
      return 1;
    default:
      return -1;
  }
}

Ref Evaluator::Or() {
  Ref v = And();
  while (IsName("or")) {
    Next();
    Ref r = And();
    const int t = Truth(*v);
    v = t < 0 ? MakeUnknown(v->line, "an 'or'") : t != 0 ? v : r;
  }
  return v;
}

Ref Evaluator::And() {
  Ref v = Not();
  while (IsName("and")) {
    Next();
    Ref r = Not();
    const int t = Truth(*v);
    v = t < 0 ? MakeUnknown(v->line, "an 'and'") : t == 0 ? v : r;
  }
  return v;
}

Ref Evaluator::Not() {
  const Depth depth(*this);
  if (IsName("not")) {
    const int line = Next().line;
    Ref v = Not();
    const int t = Truth(*v);
    if (t < 0) return MakeUnknown(line, "a 'not'");
    Ref b = Make(Value::Kind::Bool, line);
    b->b = t == 0;
    return b;
  }
  return Comparison();
}

Ref Evaluator::Comparison() {
  Ref v = Arith();
  while (true) {
    const bool op = Peek().kind == Token::Kind::Op &&
                    (Peek().text == "==" || Peek().text == "!=" || Peek().text == "<" ||
                     Peek().text == ">" || Peek().text == "<=" || Peek().text == ">=");
    const bool word = IsName("in") || IsName("is") || (IsName("not") && Peek(1).text == "in");
    if (!op && !word) return v;
    const int line = Peek().line;
    if (IsName("not") || IsName("is")) {
      Next();
      if (IsName("not") || IsName("in")) Next();
    } else {
      Next();
    }
    Arith();
    v = MakeUnknown(line, "a comparison");
  }
}

Ref Evaluator::Binary(const std::string& op, const Ref& a, const Ref& b, int line) {
  if (op == "+" && a->kind == Value::Kind::Str && b->kind == Value::Kind::Str) {
    Ref r = Make(Value::Kind::Str, line);
    r->s = a->s + b->s;
    return r;
  }
  if (!Numeric(*a) || !Numeric(*b)) return MakeUnknown(line, "an arithmetic of " + op);
  const bool ints = a->kind == Value::Kind::Int && b->kind == Value::Kind::Int;
  if (ints && op != "/" && op != "**") {
    std::int64_t x = a->i, y = b->i, r = 0;
    bool overflow = false;
    if (op == "+")
      overflow = __builtin_add_overflow(x, y, &r);
    else if (op == "-")
      overflow = __builtin_sub_overflow(x, y, &r);
    else if (op == "*")
      overflow = __builtin_mul_overflow(x, y, &r);
    else if (y == 0)
      return MakeUnknown(line, "a division by zero");
    else if (op == "//")
      r = x / y - ((x % y != 0 && ((x < 0) != (y < 0))) ? 1 : 0);
    else if (op == "%")
      r = x % y + ((x % y != 0 && ((x < 0) != (y < 0))) ? y : 0);
    else
      return MakeUnknown(line, "an arithmetic of " + op);
    if (overflow) return MakeUnknown(line, "an integer past 64 bits");
    Ref v = Make(Value::Kind::Int, line);
    v->i = r;
    return v;
  }
  const double x = AsDouble(*a), y = AsDouble(*b);
  double r = 0;
  if (op == "+")
    r = x + y;
  else if (op == "-")
    r = x - y;
  else if (op == "*")
    r = x * y;
  else if (op == "/" && y != 0)
    r = x / y;
  else if (op == "**")
    r = std::pow(x, y);
  else if (op == "//" && y != 0)
    r = std::floor(x / y);
  else if (op == "%" && y != 0)
    r = x - y * std::floor(x / y);
  else
    return MakeUnknown(line, "an arithmetic of " + op);
  if (!std::isfinite(r)) return MakeUnknown(line, "a number past the floats");
  if (ints && op == "**" && r >= 0 && r < 9.0e15 && b->i >= 0) {
    Ref v = Make(Value::Kind::Int, line);
    v->i = static_cast<std::int64_t>(r);
    return v;
  }
  Ref v = Make(Value::Kind::Float, line);
  v->f = r;
  return v;
}

Ref Evaluator::Arith() {
  Ref v = Term();
  while (IsOp("+") || IsOp("-")) {
    const Token& op = Next();
    v = Binary(op.text, v, Term(), op.line);
  }
  return v;
}

Ref Evaluator::Term() {
  Ref v = Unary();
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%") || IsOp("@")) {
    const Token& op = Next();
    v = Binary(op.text, v, Unary(), op.line);
  }
  return v;
}

Ref Evaluator::Unary() {
  const Depth depth(*this);
  if (IsOp("-") || IsOp("+") || IsOp("~")) {
    const Token& op = Next();
    Ref v = Unary();
    if (op.text == "+" && Numeric(*v)) return v;
    if (op.text == "-" && v->kind == Value::Kind::Int && v->i != INT64_MIN) {
      Ref r = Make(Value::Kind::Int, op.line);
      r->i = -v->i;
      return r;
    }
    if (op.text == "-" && v->kind == Value::Kind::Float) {
      Ref r = Make(Value::Kind::Float, op.line);
      r->f = -v->f;
      return r;
    }
    return MakeUnknown(op.line, "a unary " + op.text);
  }
  Ref v = Primary();
  if (IsOp("**")) {
    const Token& op = Next();
    v = Binary("**", v, Unary(), op.line);
  }
  return v;
}

Ref Evaluator::Primary() {
  Ref v = Atom();
  while (true) {
    if (IsOp(".")) {
      Next();
      if (Peek().kind != Token::Kind::Name) Fail("an attribute name");
      const Token& name = Next();
      if (v->kind == Value::Kind::Object) {
        Ref f = v->Field(name.text);
        v = f != nullptr ? f : MakeUnknown(name.line, "the default of ." + name.text);
      } else if (v->kind == Value::Kind::Name) {
        Ref n = Make(Value::Kind::Name, name.line);
        n->s = v->s + "." + name.text;
        v = n;
      } else {
        v = MakeUnknown(name.line, "." + name.text);
      }
    } else if (IsOp("(")) {
      v = CallExpr(v);
    } else if (IsOp("[")) {
      const int line = Next().line;
      Ref index = Expression();
      while (IsOp(":") || IsOp(",")) {
        Next();
        if (!IsOp("]")) Expression();
      }
      Expect("]");
      if (v->kind == Value::Kind::List && index->kind == Value::Kind::Int && index->i >= 0 &&
          static_cast<size_t>(index->i) < v->items.size()) {
        v = v->items[static_cast<size_t>(index->i)];
      } else {
        v = MakeUnknown(line, "a subscript");
      }
    } else {
      return v;
    }
  }
}

Ref Evaluator::CallExpr(const Ref& callee) {
  const int line = Next().line;  // '('
  std::vector<Ref> positional;
  std::vector<std::pair<std::string, Ref>> keywords;
  while (!IsOp(")")) {
    if (IsOp("*") || IsOp("**"))
      Fail("named or positional arguments (ppb does not expand * or **)");
    if (Peek().kind == Token::Kind::Name && IsOp("=", 1)) {
      std::string key = Next().text;
      Next();
      keywords.emplace_back(std::move(key), Expression());
    } else {
      Ref arg = Expression();
      if (IsName("for")) Fail("a call without a generator");
      positional.push_back(std::move(arg));
    }
    if (!IsOp(",")) break;
    Next();
  }
  Expect(")");
  if (callee->kind == Value::Kind::Function) return Call(callee->s, line, positional, keywords);
  const std::string name = callee->kind == Value::Kind::Name ? callee->s : "";
  const bool config = name.size() >= 6 && name.compare(name.size() - 6, 6, "Config") == 0;
  if (config || name == "model_registry") {
    Ref obj = Make(Value::Kind::Object, line);
    obj->s = name;
    for (size_t k = 0; k < positional.size(); ++k) {
      obj->Set(name == "model_registry" && k == 0 ? "flavor" : std::to_string(k), positional[k]);
    }
    for (auto& [k, v] : keywords) obj->Set(k, v);
    return obj;
  }
  return MakeUnknown(line, (name.empty() ? std::string("a call") : name) + "(...)");
}

Ref Evaluator::Atom() {
  const Token& tok = Peek();
  switch (tok.kind) {
    case Token::Kind::Name: {
      Next();
      return Lookup(tok.text, tok.line);
    }
    case Token::Kind::Number: {
      Next();
      std::string digits;
      for (char c : tok.text) {
        if (c != '_') digits += c;
      }
      Ref v = Make(Value::Kind::Int, tok.line);
      int base = 10;
      size_t skip = 0;
      if (digits.size() > 2 && digits[0] == '0' &&
          std::isalpha(static_cast<unsigned char>(digits[1]))) {
        const char b = static_cast<char>(std::tolower(static_cast<unsigned char>(digits[1])));
        base = b == 'x' ? 16 : b == 'o' ? 8 : b == 'b' ? 2 : 0;
        skip = 2;
      }
      if (base != 0) {
        const auto [p, ec] =
            std::from_chars(digits.data() + skip, digits.data() + digits.size(), v->i, base);
        if (ec == std::errc() && p == digits.data() + digits.size()) return v;
      }
      double x = 0;
      const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), x);
      if (ec == std::errc() && p == digits.data() + digits.size() && std::isfinite(x)) {
        v->kind = Value::Kind::Float;
        v->f = x;
        return v;
      }
      return MakeUnknown(tok.line, "the number " + tok.text);
    }
    case Token::Kind::String: {
      Next();
      Ref v = Make(Value::Kind::Str, tok.line);
      v->s = tok.text;
      return v;
    }
    case Token::Kind::FString:
      Next();
      return MakeUnknown(tok.line, "an f-string");
    case Token::Kind::Op:
      if (tok.text == "(" || tok.text == "[") {
        const std::string close = tok.text == "(" ? ")" : "]";
        Next();
        Ref list = Make(Value::Kind::List, tok.line);
        bool tuple = tok.text == "[";
        while (!IsOp(close.c_str())) {
          list->items.push_back(Expression());
          if (IsName("for")) Fail("a literal (ppb does not evaluate comprehensions)");
          if (!IsOp(",")) break;
          tuple = true;
          Next();
        }
        Expect(close.c_str());
        if (!tuple && list->items.size() == 1) return list->items[0];  // (x)
        return list;
      }
      if (tok.text == "{") {
        Next();
        Ref dict = Make(Value::Kind::Dict, tok.line);
        while (!IsOp("}")) {
          Ref key = Expression();
          if (IsOp(":")) {
            Next();
            Ref value = Expression();
            dict->fields.emplace_back(key->kind == Value::Kind::Str ? key->s : "?", value);
          }
          if (IsName("for")) Fail("a literal (ppb does not evaluate comprehensions)");
          if (!IsOp(",")) break;
          Next();
        }
        Expect("}");
        return dict;
      }
      if (tok.text == "...") {
        Next();
        return MakeUnknown(tok.line, "...");
      }
      break;
    default:
      break;
  }
  Fail("a value");
}

}  // namespace ppb::python_detail
