// The table of schedules. Adding a schedule: write its generator in its own
// file, declare it in schedule.h, and add one line here.
#include <array>

#include "schedules/schedule.h"

namespace ppb {
namespace {

constexpr std::array<ScheduleInfo, 5> kSchedules{{
    {"gpipe", "GPipe: all forwards, then all backwards (v = 1)",
     &GenerateGPipe},
    {"1f1b",
     "1F1B / PipeDream-Flush: warm-up forwards, then one forward "
     "and one backward in turn (v = 1)",
     &Generate1F1B},
    {"interleaved",
     "interleaved 1F1B: v chunks per rank, microbatches in "
     "groups (Megatron-LM / PyTorch rules by flavor)",
     &GenerateInterleaved},
    {"zb-1p",
     "ZB-1p (Zero Bubble, adaptive): split backward, the F/I/W order with "
     "the shortest simulated iteration within 1F1B's activation memory (v = 1)",
     &GenerateZB1P},
    {"zb-2p",
     "ZB-2p (Zero Bubble, adaptive): as zb-1p within twice 1F1B's "
     "activation memory (v = 1)",
     &GenerateZB2P},
}};

}  // namespace

std::span<const ScheduleInfo> ScheduleRegistry() { return kSchedules; }

const ScheduleInfo* FindSchedule(std::string_view name) {
  for (const ScheduleInfo& info : kSchedules) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

}  // namespace ppb
