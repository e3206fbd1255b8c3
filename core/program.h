// Program: the explicit per-device op lists the engine executes. A schedule
// generator produces one; the engine runs each device's list strictly in
// order and holds no schedule policy of its own.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "core/types.h"

namespace ppb {

struct Program {
  // ops[d] = the compute ops device d executes, in order.
  std::vector<std::vector<Op>> ops;
  // Where the order came from, when its generator chose among candidate
  // orders (the adaptive zero-bubble schedules: which family's order was
  // kept, and when it is the fixed schedule they generalise, that the
  // planned orders were no faster); empty otherwise. The engine ignores it;
  // simulate shows it.
  std::string origin;

  size_t total_ops() const {
    size_t n = 0;
    for (const auto& d : ops) n += d.size();
    return n;
  }
};

// torch action string for an op: "<stage><T><mb>", e.g. "2F0".
std::string ActionString(const Op& op);

// Parses a torch action string ("2F0", "0B12", "3I1", "3W1").
Result<Op> ParseAction(std::string_view text);

}  // namespace ppb
