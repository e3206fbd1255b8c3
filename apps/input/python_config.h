// EvaluateConfigFunction: a function of a Python config registry
// (torchtitan main's torchtitan/models/<model>/config_registry.py, whose
// functions return a Trainer.Config) read as data, without running Python.
//
// The subset read: top-level `def NAME(...) -> T:` functions (others,
// imports, docstrings and constants of the module are taken in passing)
// whose bodies are straight-line statements: `x = expr`, `a.b.c = expr`,
// `return expr`, `assert ...`, imports and docstrings (skipped), and call
// statements (`helper(config)`), which are not run and are listed in
// `not_run`. The
// expressions: int, float, string (concatenated; f-strings are unknown),
// True, False, None, lists, tuples, dicts, names, attributes, subscripts,
// + - * / // % ** on numbers, `and`, `or`, `not`, comparisons, `x if c
// else y`, lambdas (unknown), and calls with positional and keyword
// arguments. A call of another function of the file runs it (a fresh
// object each time, as Python builds one), its arguments bound to its
// parameters as Python binds them (positional, then by keyword, then the
// defaults, evaluated at the call in the module's scope); a function
// with *args, **kwargs or the / and * markers called with arguments is an
// unknown value. A call whose callee ends in
// "Config" (Trainer.Config, TrainingConfig, FullAC.Config) or is
// `model_registry` builds an object of that type with its keyword
// arguments as fields (model_registry's first argument is its `flavor`).
// Any other call, and what cannot be known without running Python
// (DATASETS["c4"], len(...)), is an unknown value: an error only where it
// is read. Refused at their line: control flow (if, for, while, with,
// try), nested functions called, `*`/`**` arguments, recursion deeper
// than 32 calls.
//
// The result is the returned object flattened: each field at its dotted
// path ("parallelism.tensor_parallel_degree"), an object field as the
// string of its type with its own fields below it
// ("activation_checkpoint" = "FullAC.Config"), a list of objects as an
// array of type strings with fields at "key.N.field"; each value with the
// line it was written on. Unknown values are listed apart, with the text
// of their expression.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/toml_reader.h"
#include "core/result.h"

namespace ppb {

struct PythonConfig {
  TomlDocument values;  // the flattened object (TomlDocument.tables unused)
  struct Unknown {
    int line = 0;
    std::string expression;
  };
  std::map<std::string, Unknown> unknown;  // by dotted path
  std::vector<Unknown> not_run;            // call statements, not run
  std::string type;                        // the returned object's type
  int return_line = 0;
};

// The functions of `text` that take no arguments, in file order.
Result<std::vector<std::string>> ConfigFunctions(const std::string& path, std::string_view text);

// `function`'s returned object. Errors are "PATH:LINE: what was expected;
// got what was given".
Result<PythonConfig> EvaluateConfigFunction(const std::string& path, std::string_view text,
                                            const std::string& function);

}  // namespace ppb
