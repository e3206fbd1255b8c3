// EvaluateConfigFunction and ConfigFunctions (apps/input/python_config.h)
// over the evaluator of apps/input/python_evaluator.h: its module scan,
// calls and statements here, its expressions in python_expressions.cpp.
#include "apps/input/python_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "apps/input/python_evaluator.h"

namespace ppb {
namespace python_detail {

Evaluator::Evaluator(const std::string& path, std::vector<Token> tokens)
    : path_(path), t_(std::move(tokens)) {
  ScanModule();
}

Ref Evaluator::Call(const std::string& name, int line, const std::vector<Ref>& positional,
                    const std::vector<std::pair<std::string, Ref>>& keywords) {
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
      throw Bad{
          fmt::format("{}:{}: {}: expected the argument {}; got none", path_, line, name, p.name)};
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

const Token& Evaluator::Next() {
  const Token& tok = t_[pos_];
  if (pos_ + 1 < t_.size()) ++pos_;
  return tok;
}

void Evaluator::SkipStatement() {
  while (Peek().kind != Token::Kind::Newline && Peek().kind != Token::Kind::End) Next();
  if (Peek().kind == Token::Kind::Newline) Next();
  if (Peek().kind == Token::Kind::Indent) SkipBlock();
}

void Evaluator::SkipBlock() {
  int depth = 0;
  do {
    if (Peek().kind == Token::Kind::Indent) ++depth;
    if (Peek().kind == Token::Kind::Dedent) --depth;
    if (Peek().kind == Token::Kind::End) return;
    Next();
  } while (depth > 0);
}

void Evaluator::ScanModule() {
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
      while (!IsOp(":") && Peek().kind != Token::Kind::Newline && Peek().kind != Token::Kind::End) {
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

void Evaluator::ScanParams(Function& fn) {
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

void Evaluator::Import(std::map<std::string, Ref>& scope) {
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

Ref Evaluator::Block(bool function_body) {
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

Ref Evaluator::Statement() {
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
  // A call as a statement (a helper that changes the config in place,
  // torchtitan's enable_fused_swiglu(config)): its body may hold anything,
  // so it is not run, and said so.
  if (!target.empty() && IsOp("(")) {
    std::string callee;
    for (const std::string& part : target) callee += (callee.empty() ? "" : ".") + part;
    not_run_.emplace_back(tok.line, callee + "(...)");
    SkipStatement();
    return nullptr;
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

void Evaluator::Assign(const std::vector<std::string>& target, const Ref& value, int line) {
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

std::string Evaluator::JoinPath(const std::vector<std::string>& parts, size_t n) {
  std::string out;
  for (size_t k = 0; k < n; ++k) out += (k == 0 ? "" : ".") + parts[k];
  return out;
}

std::string Evaluator::Describe(const Value& v) {
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

Ref Evaluator::Lookup(const std::string& name, int line) {
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

}  // namespace python_detail

using namespace python_detail;  // NOLINT: the evaluator of python_evaluator.h

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
    for (const auto& [line, call] : e.not_run_) out.not_run.push_back({line, call});
    for (const auto& [k, f] : v->fields) Flatten(k, *f, out, 0);
    return out;
  } catch (const Bad& b) {
    return Error{"", b.message};
  }
}

}  // namespace ppb
