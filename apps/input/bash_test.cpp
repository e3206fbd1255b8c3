#include "apps/input/bash_test.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

namespace ppb::bash_detail {
namespace {

// The grammar by precedence: or, and, not, a primary (which may hold a
// parenthesised or).
bool TestOr(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell);
bool TestAnd(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell);
bool TestNot(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell);
bool TestPrimary(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell);

bool IsOr(const TestItem& it, bool dbl) {
  return dbl ? (it.op && it.text == "||") : (!it.op && it.value == "-o");
}
bool IsAnd(const TestItem& it, bool dbl) {
  return dbl ? (it.op && it.text == "&&") : (!it.op && it.value == "-a");
}

bool TestOr(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell) {
  Shell::Deeper d(shell, v.empty() ? 0 : v.front().line);
  bool r = TestAnd(v, pos, dbl, shell);
  while (pos < v.size() && IsOr(v[pos], dbl)) {
    ++pos;
    const bool rhs = TestAnd(v, pos, dbl, shell);
    r = r || rhs;
  }
  return r;
}

bool TestAnd(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell) {
  bool r = TestNot(v, pos, dbl, shell);
  while (pos < v.size() && IsAnd(v[pos], dbl)) {
    ++pos;
    const bool rhs = TestNot(v, pos, dbl, shell);
    r = r && rhs;
  }
  return r;
}

bool TestNot(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell) {
  Shell::Deeper d(shell, v.empty() ? 0 : v.front().line);
  if (pos < v.size() && !v[pos].op && v[pos].text == "!") {
    ++pos;
    return !TestNot(v, pos, dbl, shell);
  }
  return TestPrimary(v, pos, dbl, shell);
}

bool TestPrimary(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell) {
  const int line = v.empty() ? 0 : v.front().line;
  if (pos >= v.size()) Refuse(line, "a test: must not end after an operator");
  const TestItem& a = v[pos];
  if (a.op && a.text == "(") {
    ++pos;
    const bool r = TestOr(v, pos, dbl, shell);
    if (pos >= v.size() || !(v[pos].op && v[pos].text == ")")) {
      Refuse(line, "a test: must close '('");
    }
    ++pos;
    return r;
  }
  if (a.op) Refuse(line, fmt::format("a test: must not hold '{}' here", a.text));
  static const std::set<std::string> kUnary = {"-z", "-n", "-f", "-d", "-e",
                                               "-r", "-s", "-x", "-w", "-L"};
  // word binop word
  if (pos + 2 < v.size()) {
    const TestItem& op = v[pos + 1];
    const std::string& o = op.op ? op.text : op.value;
    static const std::set<std::string> kBinary = {"==", "=",   "!=",  "-eq", "-ne", "-lt",
                                                  "-le", "-gt", "-ge", "<",   ">",   "=~"};
    if (kBinary.count(o) != 0) {
      const std::string& l = a.value;
      const std::string& r = v[pos + 2].value;
      pos += 3;
      if (o == "=~") Refuse(line, "a test: =~ must not be used in a launch ppb reads");
      if (o == "==" || o == "=") return dbl ? GlobMatch(r, l) : l == r;
      if (o == "!=") return dbl ? !GlobMatch(r, l) : l != r;
      if (o == "<") return l < r;
      if (o == ">") return l > r;
      // [[ ]] reads -eq's operands as arithmetic, where an empty one is 0
      // (an unset BATCH in `[[ $BATCH -eq 0 ]]`); [ ] refuses it.
      const std::int64_t x = dbl && l.empty() ? 0 : Shell::Integer(l, line);
      const std::int64_t y = dbl && r.empty() ? 0 : Shell::Integer(r, line);
      if (o == "-eq") return x == y;
      if (o == "-ne") return x != y;
      if (o == "-lt") return x < y;
      if (o == "-le") return x <= y;
      if (o == "-gt") return x > y;
      return x >= y;
    }
  }
  if (kUnary.count(a.value) != 0 && pos + 1 < v.size() && !v[pos + 1].op) {
    const std::string& w = v[pos + 1].value;
    const std::string& o = a.value;
    pos += 2;
    if (o == "-z") return w.empty();
    if (o == "-n") return !w.empty();
    return true;  // a file test: the launch's files are taken to exist
  }
  ++pos;
  return !a.value.empty();
}

}  // namespace

bool EvalTest(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell) {
  return TestOr(v, pos, dbl, shell);
}

}  // namespace ppb::bash_detail
