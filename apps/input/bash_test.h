// The expressions of bash's [[ ]], [ ] and test in the launch subset
// (apps/input/launch_script.h says what is read): || && ! and ( ) over
// == = != (glob patterns in [[ ]]), < >, -eq ... -ge (in [[ ]] an empty
// operand is 0, as bash's arithmetic reads it), -z, -n, and the file tests,
// which hold (the launch is read as it runs where its files exist). `[ ]`
// spells or and and -o and -a. =~ is refused. Refusals are thrown as
// bash_detail::Refusal at the items' line. Internal to apps/input.
#pragma once

#include <string>
#include <vector>

#include "apps/input/bash_shell.h"

namespace ppb::bash_detail {

// One word or operator of a test.
struct TestItem {
  std::string text;  // as written
  bool op = false;   // an operator token ([[ && || ( ) < >)
  int line = 0;
  std::string value;  // expanded
};

// The expression of `v` from `pos`, which moves past it; `dbl` for [[ ]].
// Nesting counts against `shell`'s depth.
bool EvalTest(const std::vector<TestItem>& v, size_t& pos, bool dbl, Shell& shell);

}  // namespace ppb::bash_detail
