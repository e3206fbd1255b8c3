// The reference records of sail-sg zero-bubble v0.1.0 that the adaptive
// zero-bubble tests compare against (tests/data/zb-adaptive-p4.jsonl, one
// JSON object a line: test_zb_adaptive.cpp reads the ZB-1p / ZB-2p records,
// test_zb_v.cpp the ZB-V ones). Plain C++ (no Catch2): a record that does not
// have the shape the tests rely on throws, which fails the test that loads it.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"

namespace ppb::test {

struct ZbRecord {
  std::string schedule;  // "ZB-1p", "ZB-2p", "ZB-V"
  int p = 0, m = 0, v = 0;
  Nanos f = 0, i = 0, w = 0;  // T_F, T_B(I), T_W
  std::vector<std::vector<std::string>> ranks;  // per rank, ops as "F0.2"
  std::vector<std::vector<Nanos>> ends;          // upstream_end_times
  Nanos cost = 0;  // upstream_cost (the longest per-stage span); the ZB-V
                   // records have none, 0 there
  Nanos end = 0;   // the last op's end over all ranks
};

// The records of tests/data/zb-adaptive-p4.jsonl whose schedule is one of
// `schedules`, in file order. Each must have `v` chunks per rank and free
// communication (T_comm = 0); otherwise, or if the file cannot be read,
// throws std::runtime_error naming the file and the record.
std::vector<ZbRecord> LoadZbRecords(const std::vector<std::string>& schedules, int v);

// An op as the records write it: "F0.2" (kind, micro-batch . stage), "I" for
// the input-gradient half of a split backward.
std::string RecordName(const Op& op);

}  // namespace ppb::test
