// EvaluateConfigFunction (apps/input/python_config.h): the tokens of
// apps/input/python_lexer.h, then a walk over a function's statements that
// evaluates them as it reads them, into the values of python_value.h.
#include "apps/input/python_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <memory>
#include <utility>

#include "apps/input/python_lexer.h"
#include "apps/input/python_value.h"

namespace ppb {
namespace {

using namespace python_detail;  // NOLINT: the values of python_value.h

using Token = PyToken;

constexpr int kMaxCalls = 32;
// Expression levels in all, the file's calls included (each takes a few).
constexpr int kMaxNesting = 256;

struct Bad {
  std::string message;
};

// ---- the evaluator -------------------------------------------------------------

// A parameter of a top-level function: its name and where its default's
// expression starts (0: none).
struct Param {
  std::string name;
  size_t default_at = 0;
};

struct Function {
  std::string name;
  // The parameters, when each is plain (NAME, NAME: T, NAME = default;
  // not *args, **kwargs or the / and * markers); else a call with
  // arguments is unknown.
  std::vector<Param> params;
  bool plain_params = true;
  bool takes_arguments() const { return !params.empty() || !plain_params; }
  size_t body = 0;  // the token after the ':'
  int line = 0;
};

class Evaluator {
 public:
  Evaluator(const std::string& path, std::vector<Token> tokens)
      : path_(path), t_(std::move(tokens)) {
    ScanModule();
  }

  const std::vector<Function>& functions() const { return functions_; }

  // Runs `name` with its arguments bound to its parameters (each default
  // evaluated at the call, in the module's scope: torchtitan's defaults are
  // constants). Arguments that do not bind as Python binds them are an
  // error at the call's line.
  Ref Call(const std::string& name, int line, const std::vector<Ref>& positional = {},
           const std::vector<std::pair<std::string, Ref>>& keywords = {}) {
    const Function* fn = nullptr;
    for (const Function& f : functions_) {
      if (f.name == name) fn = &f;
    }
    if (fn == nullptr)
      throw Bad{fmt::format("{}:{}: expected a function {}; got none", path_, line, name)};
    if (!fn->plain_params) return MakeUnknown(line, name + "(...)");
    if (positional.size() > fn->params.size()) {
      throw Bad{fmt::format("{}:{}: {}: expected at most {} positional arguments; got {}", path_,
                            line, name, fn->params.size(), positional.size())};
    }
    std::map<std::string, Ref> bound;
    for (size_t k = 0; k < positional.size(); ++k) bound[fn->params[k].name] = positional[k];
    for (const auto& keyword : keywords) {
      const std::string& key = keyword.first;
      const Ref& value = keyword.second;
      const bool known = std::any_of(fn->params.begin(), fn->params.end(),
                                     [&](const Param& p) { return p.name == key; });
      if (!known || bound.count(key) != 0) {
        throw Bad{fmt::format("{}:{}: {}: expected {}; got the argument {}", path_, line, name,
                              known ? "each argument once" : "arguments it takes", key)};
      }
      bound[key] = value;
    }
    if (++calls_ > kMaxCalls) {
      throw Bad{
          fmt::format("{}:{}: {}: expected at most {} nested calls of the file's "
                      "functions; got more (recursion?)",
                      path_, line, name, kMaxCalls)};
    }
    const size_t saved = pos_;
    std::map<std::string, Ref> saved_locals = std::move(locals_);
    locals_.clear();
    for (const Param& p : fn->params) {
      if (bound.count(p.name) != 0) continue;
      if (p.default_at == 0) {
        throw Bad{fmt::format("{}:{}: {}: expected the argument {}; got none", path_, line, name,
                              p.name)};
      }
      pos_ = p.default_at;
      bound[p.name] = Expression();
    }
    locals_ = std::move(bound);
    pos_ = fn->body;
    Ref result = Block(true);
    pos_ = saved;
    locals_ = std::move(saved_locals);
    --calls_;
    return result != nullptr ? result : Make(Value::Kind::None, fn->line);
  }

 private:
  const Token& Peek(size_t k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  bool IsOp(const char* op, size_t k = 0) const {
    return Peek(k).kind == Token::Kind::Op && Peek(k).text == op;
  }
  bool IsName(const char* word) const {
    return Peek().kind == Token::Kind::Name && Peek().text == word;
  }
  const Token& Next() {
    const Token& tok = t_[pos_];
    if (pos_ + 1 < t_.size()) ++pos_;
    return tok;
  }
  [[noreturn]] void Fail(const std::string& what) const {
    const Token& tok = Peek();
    const std::string got = tok.kind == Token::Kind::Newline  ? "the end of the line"
                            : tok.kind == Token::Kind::End    ? "the end of the file"
                            : tok.kind == Token::Kind::Indent ? "an indent"
                            : tok.kind == Token::Kind::Dedent ? "a dedent"
                                                              : "'" + tok.text + "'";
    throw Bad{fmt::format("{}:{}: expected {}; got {}", path_, tok.line, what, got)};
  }
  void Expect(const char* op) {
    if (!IsOp(op)) Fail(fmt::format("'{}'", op));
    Next();
  }

  // Past the rest of the logical line, and any block it opens.
  void SkipStatement() {
    while (Peek().kind != Token::Kind::Newline && Peek().kind != Token::Kind::End) Next();
    if (Peek().kind == Token::Kind::Newline) Next();
    if (Peek().kind == Token::Kind::Indent) SkipBlock();
  }
  void SkipBlock() {
    int depth = 0;
    do {
      if (Peek().kind == Token::Kind::Indent) ++depth;
      if (Peek().kind == Token::Kind::Dedent) --depth;
      if (Peek().kind == Token::Kind::End) return;
      Next();
    } while (depth > 0);
  }

  void ScanModule() {
    while (Peek().kind != Token::Kind::End) {
      if (Peek().kind == Token::Kind::Newline) {
        Next();
        continue;
      }
      if (IsName("def")) {
        Function fn;
        fn.line = Peek().line;
        Next();
        if (Peek().kind != Token::Kind::Name) Fail("a function name");
        fn.name = Next().text;
        Expect("(");
        ScanParams(fn);
        while (!IsOp(":") && Peek().kind != Token::Kind::Newline &&
               Peek().kind != Token::Kind::End) {
          Next();
        }
        Expect(":");
        fn.body = pos_;
        functions_.push_back(fn);
        globals_[fn.name] = Make(Value::Kind::Function, fn.line);
        globals_[fn.name]->s = fn.name;
        SkipStatement();
        continue;
      }
      if (IsName("from") || IsName("import")) {
        Import(globals_);
        continue;
      }
      // A module constant: NAME = expr; other statements are passed over.
      if (Peek().kind == Token::Kind::Name && IsOp("=", 1)) {
        const std::string name = Next().text;
        Next();
        const size_t start = pos_;
        try {
          globals_[name] = Expression();
        } catch (const Bad&) {
          pos_ = start;
          nesting_ = 0;
          globals_[name] = MakeUnknown(Peek().line, name);
        }
      }
      SkipStatement();
    }
  }

  // The parameter list after the '(' through its ')': each parameter's
  // name and its default's start; an annotation or a default is passed
  // over (its brackets balanced).
  void ScanParams(Function& fn) {
    int depth = 1;
    bool at_start = true;  // at the start of a parameter
    bool in_default = false;
    while (depth > 0 && Peek().kind != Token::Kind::End) {
      if (depth == 1 && at_start) {
        at_start = false;
        in_default = false;
        if (Peek().kind == Token::Kind::Name) {
          fn.params.push_back(Param{Peek().text, 0});
        } else if (!IsOp(")")) {
          fn.plain_params = false;  // *args, **kwargs, / or *
        }
      } else if (depth == 1 && IsOp("=") && !in_default && !fn.params.empty()) {
        Next();
        fn.params.back().default_at = pos_;
        in_default = true;
        continue;
      } else if (depth == 1 && IsOp(",")) {
        at_start = true;
      }
      if (IsOp("(") || IsOp("[") || IsOp("{")) ++depth;
      if (IsOp(")") || IsOp("]") || IsOp("}")) --depth;
      Next();
    }
  }

  // from M import a, b as c / import M: each name bound to itself.
  void Import(std::map<std::string, Ref>& scope) {
    const bool from = IsName("from");
    Next();
    if (from) {
      while (!IsName("import") && Peek().kind != Token::Kind::Newline) Next();
      if (!IsName("import")) Fail("'import'");
      Next();
    }
    if (IsOp("(")) Next();
    while (Peek().kind == Token::Kind::Name) {
      std::string name = Next().text;
      while (IsOp(".")) {
        Next();
        name += "." + Next().text;
      }
      std::string bound = name;
      if (IsName("as")) {
        Next();
        bound = Next().text;
      }
      Ref v = Make(Value::Kind::Name, Peek().line);
      v->s = name;
      scope[bound] = v;
      if (IsOp(",")) Next();
      if (IsOp(")")) Next();
    }
    SkipStatement();
  }

  // Statements until the block ends; the value of a `return`, or nullptr.
  Ref Block(bool function_body) {
    bool indented = false;
    if (Peek().kind == Token::Kind::Newline) {
      Next();
      if (Peek().kind != Token::Kind::Indent) Fail("an indented block");
      Next();
      indented = true;
    }
    (void)function_body;
    bool first = true;
    while (true) {
      const Token& tok = Peek();
      if (tok.kind == Token::Kind::Dedent || tok.kind == Token::Kind::End) return nullptr;
      if (tok.kind == Token::Kind::Newline) {
        Next();
        if (!indented) return nullptr;
        continue;
      }
      if (tok.kind == Token::Kind::String && first) {  // a docstring
        SkipStatement();
        first = false;
        continue;
      }
      first = false;
      if (Ref r = Statement(); r != nullptr) return r;
      if (!indented) return nullptr;
    }
  }

  Ref Statement() {
    const Token& tok = Peek();
    if (tok.kind == Token::Kind::Name) {
      const std::string& w = tok.text;
      if (w == "return") {
        Next();
        Ref v =
            Peek().kind == Token::Kind::Newline ? Make(Value::Kind::None, tok.line) : Expression();
        return_line_ = tok.line;
        return v;
      }
      if (w == "assert" || w == "pass" || w == "global" || w == "nonlocal") {
        SkipStatement();
        return nullptr;
      }
      if (w == "from" || w == "import") {
        Import(locals_);
        return nullptr;
      }
      if (w == "def" || w == "class") {
        // A nested function or class: not run here; calling one is unknown.
        Next();
        Ref v = Make(Value::Kind::Name, tok.line);
        v->s = Peek().text;
        locals_[Peek().text] = v;
        SkipStatement();
        return nullptr;
      }
      if (w == "if" || w == "for" || w == "while" || w == "with" || w == "try" || w == "match" ||
          w == "del" || w == "raise" || w == "yield" || w == "async") {
        Fail(
            "a straight-line statement (an assignment or return: ppb reads config functions "
            "as data, not as programs)");
      }
    }
    if (tok.kind == Token::Kind::Op && tok.text == "@") {
      SkipStatement();
      return nullptr;
    }
    // An assignment: targets (a name or a.b.c) then '='.
    const size_t start = pos_;
    std::vector<std::string> target;
    if (Peek().kind == Token::Kind::Name) {
      target.push_back(Next().text);
      while (IsOp(".") && Peek(1).kind == Token::Kind::Name) {
        Next();
        target.push_back(Next().text);
      }
      if (IsOp(":") && target.size() == 1) {  // an annotation: x: T = v
        Next();
        Expression();
      }
    }
    if (target.empty() || !IsOp("=")) {
      pos_ = start;
      Fail("an assignment (name = value or a.b = value), a return or an import");
    }
    Next();
    Ref value = Expression();
    if (Peek().kind != Token::Kind::Newline && Peek().kind != Token::Kind::End) {
      Fail("the end of the statement");
    }
    Assign(target, value, tok.line);
    return nullptr;
  }

  void Assign(const std::vector<std::string>& target, const Ref& value, int line) {
    if (target.size() == 1) {
      locals_[target[0]] = value;
      return;
    }
    Ref obj = Lookup(target[0], line);
    for (size_t k = 1; k + 1 < target.size(); ++k) {
      if (obj->kind != Value::Kind::Object) {
        throw Bad{fmt::format("{}:{}: expected {} to be an object ppb built; got {}", path_, line,
                              JoinPath(target, k), Describe(*obj))};
      }
      Ref next = obj->Field(target[k]);
      if (next == nullptr || next->kind == Value::Kind::None) {
        // A field left at its default: a default-built object of its own.
        next = Make(Value::Kind::Object, line);
        next->s = "(default " + target[k] + ")";
        obj->Set(target[k], next);
      }
      obj = next;
    }
    if (obj->kind != Value::Kind::Object) {
      throw Bad{fmt::format("{}:{}: expected {} to be an object ppb built; got {}", path_, line,
                            JoinPath(target, target.size() - 1), Describe(*obj))};
    }
    obj->Set(target.back(), value);
  }
  static std::string JoinPath(const std::vector<std::string>& parts, size_t n) {
    std::string out;
    for (size_t k = 0; k < n; ++k) out += (k == 0 ? "" : ".") + parts[k];
    return out;
  }
  static std::string Describe(const Value& v) {
    switch (v.kind) {
      case Value::Kind::Unknown:
        return "the value of " + v.s + ", which ppb does not evaluate";
      case Value::Kind::None:
        return "None";
      case Value::Kind::Object:
        return "a " + v.s;
      case Value::Kind::Name:
        return v.s;
      case Value::Kind::Function:
        return "the function " + v.s;
      default:
        return "a plain value";
    }
  }

  Ref Lookup(const std::string& name, int line) {
    if (auto it = locals_.find(name); it != locals_.end()) return it->second;
    if (auto it = globals_.find(name); it != globals_.end()) return it->second;
    if (name == "True" || name == "False") {
      Ref v = Make(Value::Kind::Bool, line);
      v->b = name == "True";
      return v;
    }
    if (name == "None") return Make(Value::Kind::None, line);
    Ref v = Make(Value::Kind::Name, line);  // a builtin or an undefined name
    v->s = name;
    return v;
  }

  // ---- expressions (Python's precedence) ----
  // Counts the expressions being read, to bound the recursion of nested
  // brackets, unary operators and chained conditionals alike.
  struct Depth {
    explicit Depth(Evaluator& e) : e_(e) {
      if (++e_.nesting_ > kMaxNesting) e_.Fail("expressions nested at most 256 deep");
    }
    ~Depth() { --e_.nesting_; }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;
    Evaluator& e_;
  };

  Ref Expression() {
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
  // 1 true, 0 false, -1 unknown.
  static int Truth(const Value& v) {
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
  Ref Or() {
    Ref v = And();
    while (IsName("or")) {
      Next();
      Ref r = And();
      const int t = Truth(*v);
      v = t < 0 ? MakeUnknown(v->line, "an 'or'") : t != 0 ? v : r;
    }
    return v;
  }
  Ref And() {
    Ref v = Not();
    while (IsName("and")) {
      Next();
      Ref r = Not();
      const int t = Truth(*v);
      v = t < 0 ? MakeUnknown(v->line, "an 'and'") : t == 0 ? v : r;
    }
    return v;
  }
  Ref Not() {
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
  Ref Comparison() {
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
  static bool Numeric(const Value& v) {
    return v.kind == Value::Kind::Int || v.kind == Value::Kind::Float;
  }
  static double AsDouble(const Value& v) {
    return v.kind == Value::Kind::Int ? static_cast<double>(v.i) : v.f;
  }
  Ref Binary(const std::string& op, const Ref& a, const Ref& b, int line) {
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
  Ref Arith() {
    Ref v = Term();
    while (IsOp("+") || IsOp("-")) {
      const Token& op = Next();
      v = Binary(op.text, v, Term(), op.line);
    }
    return v;
  }
  Ref Term() {
    Ref v = Unary();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%") || IsOp("@")) {
      const Token& op = Next();
      v = Binary(op.text, v, Unary(), op.line);
    }
    return v;
  }
  Ref Unary() {
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

  Ref Primary() {
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

  Ref CallExpr(const Ref& callee) {
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

  Ref Atom() {
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

  const std::string& path_;
  std::vector<Token> t_;
  size_t pos_ = 0;
  std::vector<Function> functions_;
  std::map<std::string, Ref> globals_;
  std::map<std::string, Ref> locals_;
  int calls_ = 0;
  int nesting_ = 0;

 public:
  int return_line_ = 0;
};

}  // namespace

Result<std::vector<std::string>> ConfigFunctions(const std::string& path, std::string_view text) {
  try {
    Result<std::vector<Token>> tokens = TokenizePython(path, text);
    if (!tokens.ok()) return tokens.error();
    Evaluator e(path, std::move(*tokens));
    std::vector<std::string> out;
    for (const Function& f : e.functions()) {
      if (!f.takes_arguments()) out.push_back(f.name);
    }
    return out;
  } catch (const Bad& b) {
    return Error{"", b.message};
  }
}

Result<PythonConfig> EvaluateConfigFunction(const std::string& path, std::string_view text,
                                            const std::string& function) {
  try {
    Result<std::vector<Token>> tokens = TokenizePython(path, text);
    if (!tokens.ok()) return tokens.error();
    Evaluator e(path, std::move(*tokens));
    bool found = false;
    std::vector<std::string> names;
    for (const Function& f : e.functions()) {
      if (!f.takes_arguments()) names.push_back(f.name);
      found = found || (f.name == function && !f.takes_arguments());
    }
    if (!found) {
      return Error{"", fmt::format("{}: {}: must be a function of the file that takes no "
                                   "arguments ({}); got none by that name",
                                   path, function, fmt::join(names, ", "))};
    }
    Ref v = e.Call(function, 0);
    if (v->kind != Value::Kind::Object) {
      return Error{"", fmt::format("{}:{}: {}: must return a Trainer.Config(...) ppb can read; "
                                   "got {}",
                                   path, e.return_line_, function,
                                   v->kind == Value::Kind::Unknown ? v->s : "another value")};
    }
    PythonConfig out;
    out.type = v->s;
    out.return_line = e.return_line_;
    for (const auto& [k, f] : v->fields) Flatten(k, *f, out, 0);
    return out;
  } catch (const Bad& b) {
    return Error{"", b.message};
  }
}

}  // namespace ppb
