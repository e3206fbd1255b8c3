// Ops named as the reference order files (schedules-p4.jsonl,
// schedules-zb-p4.jsonl) name them: "<T><mb>.<stage>", e.g. "F3.1" or "I3.1".
// Included only by the Catch2 test files: a malformed token fails the test.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "core/types.h"

namespace ppb::test {

inline Op OpFromReferenceToken(const std::string& token) {
  OpKind kind = OpKind::F;
  switch (token.at(0)) {
    case 'F':
      kind = OpKind::F;
      break;
    case 'B':
      kind = OpKind::B;
      break;
    case 'I':
      kind = OpKind::I;
      break;
    case 'W':
      kind = OpKind::W;
      break;
    default:
      FAIL("bad token " << token);
  }
  const size_t dot = token.find('.');
  REQUIRE(dot != std::string::npos);
  return Op{kind, StageId(std::stoi(token.substr(dot + 1))),
            MicrobatchId(std::stoi(token.substr(1, dot - 1)))};
}

}  // namespace ppb::test
