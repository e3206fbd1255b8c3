// What the critical path (CriticalPath, core/engine.h) spends its time on:
// per stage, the time of its ops on the path; the messages in flight on it;
// and the waits between steps that are neither (a paired op's joint start,
// an op that waits on its own rank's previous op only by program order).
// Contract: stages are listed by time on the path (largest first; ties:
// lower stage), with every stage that has an op on the path; compute +
// messages + waits equals the path's span (its last end less its first
// start) exactly, integer ns.
#pragma once

#include <vector>

#include "core/engine.h"

namespace ppb {

struct CriticalPathSummary {
  struct Stage {
    int stage = 0;
    int rank = 0;
    int chunk = 0;  // the stage's place among its rank's stages
    int ops = 0;
    Nanos time = 0;
  };
  Nanos span = 0;
  std::vector<Stage> stages;
  Nanos compute = 0;  // sum of stages' time
  int messages = 0;
  Nanos message_time = 0;
  Nanos waits = 0;
};

// REQUIRES: path from CriticalPath on `spec` (first to last).
CriticalPathSummary SummarizeCriticalPath(const PipelineSpec& spec,
                                          const std::vector<CriticalStep>& path);

}  // namespace ppb
