// Memory a process really uses, per rank (core/process_memory.h): the
// tensors the engine counts, the process they make (allocator
// fragmentation, NCCL's buffers, the CUDA context and workspaces), what
// that leaves of the GPU, and the verdict against the headroom the search
// keeps free: fits, at risk (inside the headroom) or out of memory.
// Without the step model there is no process model: the verdict is the
// engine's (fits or OOM) and the text is empty.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/input/config.h"
#include "core/engine.h"
#include "core/process_memory.h"

namespace ppb {

struct RankMemory {
  int rank = 0;
  Bytes tensors = 0;   // the engine's peak
  Bytes process = 0;   // what the process holds at that peak
  Bytes gpu = 0;       // the GPU's memory less hardware.memory_reserve
  Bytes free = 0;      // gpu - process (negative: short)
  MemoryVerdict verdict = MemoryVerdict::Fits;
};

struct MemoryReport {
  bool process_model = false;  // the step model's process memory applies
  Bytes headroom = 0;          // device bytes kept free (search.memory_headroom)
  Bytes fixed = 0;             // context + workspace + NCCL per rank
  std::vector<RankMemory> ranks;
  MemoryVerdict verdict = MemoryVerdict::Fits;  // the worst rank's
  int tightest = 0;                             // the rank with the least free
};

MemoryReport ReportMemory(const RunConfig& config, const SimResult& r);

// "  process memory    ..." lines for `ppb-sim simulate` (empty without
// the step model).
std::string FormatMemoryText(const RunConfig& config, const MemoryReport& m);
nlohmann::ordered_json MemoryJson(const RunConfig& config, const MemoryReport& m);

// "rank 3", "ranks 0-2, 5" for the ranks with verdict `v`.
std::string RanksWith(const MemoryReport& m, MemoryVerdict v);

}  // namespace ppb
