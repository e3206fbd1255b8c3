// The evaluator of apps/input/python_config.h, internal to apps/input:
// a walk over the tokens of a file's top-level functions that evaluates
// statements as it reads them (python_config.cpp) and expressions by
// Python's precedence (python_expressions.cpp), into the values of
// python_value.h. Errors are thrown as Bad with the whole message
// ("file:line: expected ...; got ...") and caught at the two entry points.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/python_lexer.h"
#include "apps/input/python_value.h"

namespace ppb::python_detail {

using Token = PyToken;

constexpr int kMaxCalls = 32;
// Expression levels in all, the file's calls included (each takes a few).
constexpr int kMaxNesting = 256;

struct Bad {
  std::string message;
};

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
  Evaluator(const std::string& path, std::vector<Token> tokens);

  const std::vector<Function>& functions() const { return functions_; }

  // Runs `name` with its arguments bound to its parameters (each default
  // evaluated at the call, in the module's scope: torchtitan's defaults are
  // constants). Arguments that do not bind as Python binds them are an
  // error at the call's line.
  Ref Call(const std::string& name, int line, const std::vector<Ref>& positional = {},
           const std::vector<std::pair<std::string, Ref>>& keywords = {});

 private:
  const Token& Peek(size_t k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  bool IsOp(const char* op, size_t k = 0) const {
    return Peek(k).kind == Token::Kind::Op && Peek(k).text == op;
  }
  bool IsName(const char* word) const {
    return Peek().kind == Token::Kind::Name && Peek().text == word;
  }
  const Token& Next();
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
  void SkipStatement();
  void SkipBlock();

  void ScanModule();

  // The parameter list after the '(' through its ')': each parameter's
  // name and its default's start; an annotation or a default is passed
  // over (its brackets balanced).
  void ScanParams(Function& fn);

  // from M import a, b as c / import M: each name bound to itself.
  void Import(std::map<std::string, Ref>& scope);

  // Statements until the block ends; the value of a `return`, or nullptr.
  Ref Block(bool function_body);

  Ref Statement();

  void Assign(const std::vector<std::string>& target, const Ref& value, int line);
  static std::string JoinPath(const std::vector<std::string>& parts, size_t n);
  static std::string Describe(const Value& v);

  Ref Lookup(const std::string& name, int line);

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

  Ref Expression();
  // 1 true, 0 false, -1 unknown.
  static int Truth(const Value& v);
  Ref Or();
  Ref And();
  Ref Not();
  Ref Comparison();
  static bool Numeric(const Value& v) {
    return v.kind == Value::Kind::Int || v.kind == Value::Kind::Float;
  }
  static double AsDouble(const Value& v) {
    return v.kind == Value::Kind::Int ? static_cast<double>(v.i) : v.f;
  }
  Ref Binary(const std::string& op, const Ref& a, const Ref& b, int line);
  Ref Arith();
  Ref Term();
  Ref Unary();

  Ref Primary();

  Ref CallExpr(const Ref& callee);

  Ref Atom();

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
  // Call statements not run (`enable_fused_swiglu(config)`): line, callee.
  std::vector<std::pair<int, std::string>> not_run_;
};

}  // namespace ppb::python_detail
