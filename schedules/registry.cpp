// The table of schedules. Adding a schedule: write its generator in its own
// file, declare it in schedule.h, and add one line here.
#include <array>

#include "schedules/schedule.h"

namespace ppb {
namespace {

constexpr std::array<ScheduleInfo, 10> kSchedules{{
    {"gpipe", "GPipe: all forwards, then all backwards (v = 1)",
     &GenerateGPipe, "GPipe", StagePlacement::Loop, &CheckGPipe, true},
    {"1f1b",
     "1F1B / PipeDream-Flush: warm-up forwards, then one forward "
     "and one backward in turn (v = 1)",
     &Generate1F1B, "1F1B", StagePlacement::Loop, &Check1F1B, true},
    {"interleaved",
     "interleaved 1F1B: v chunks per rank, microbatches in "
     "groups (Megatron-LM / PyTorch rules by flavor)",
     &GenerateInterleaved, "Interleaved1F1B", StagePlacement::Loop, &CheckInterleaved},
    {"looped-bfs",
     "looped BFS: v chunks per rank, each chunk's forwards for all "
     "microbatches, then the backwards in reverse (PyTorch)",
     &GenerateLoopedBFS, "LoopedBFS", StagePlacement::Loop, &CheckLoopedBFS},
    {"interleaved-zero-bubble",
     "zero bubble (ZB-H1 for v = 1): interleaved 1F1B with split backward, "
     "weight gradients filling the bubbles (PyTorch)",
     &GenerateInterleavedZeroBubble, "InterleavedZeroBubble", StagePlacement::Loop,
     &CheckInterleavedZeroBubble},
    {"zbv-zero-bubble",
     "ZB-V: two chunks per rank in a V (rank r holds stages r and 2p-1-r), "
     "split backward; zero bubble when F = I = W (PyTorch, v = 2)",
     &GenerateZBVZeroBubble, "ZBVZeroBubble", StagePlacement::V, &CheckZBVZeroBubble},
    {"dualpipev",
     "DualPipeV: V placement, a forward and another micro-batch's backward "
     "overlapped as one op in the steady state (PyTorch, v = 2, m >= 2p)",
     &GenerateDualPipeV, "DualPipeV", StagePlacement::V, &CheckDualPipeV},
    {"zb-1p",
     "ZB-1p (Zero Bubble, adaptive): split backward, the F/I/W order with "
     "the shortest simulated iteration within 1F1B's activation memory (v = 1)",
     &GenerateZB1P, "", StagePlacement::Loop, nullptr, true},
    {"zb-2p",
     "ZB-2p (Zero Bubble, adaptive): as zb-1p within twice 1F1B's "
     "activation memory (v = 1)",
     &GenerateZB2P, "", StagePlacement::Loop, nullptr, true},
    {"zb-v",
     "ZB-V (Zero Bubble, adaptive): V placement, split backward, the F/I/W "
     "order with the shortest simulated iteration within 1F1B's activation "
     "memory (v = 2)",
     &GenerateZBV, "", StagePlacement::V},
}};

char LowerChar(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerChar(a[i]) != LowerChar(b[i])) return false;
  }
  return true;
}

}  // namespace

std::span<const ScheduleInfo> ScheduleRegistry() { return kSchedules; }

const ScheduleInfo* FindSchedule(std::string_view name) {
  for (const ScheduleInfo& info : kSchedules) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

int FixedChunksPerRank(std::string_view name) {
  const ScheduleInfo* info = FindSchedule(name);
  if (info == nullptr) return 0;
  if (info->one_stage_per_rank) return 1;
  return info->placement == StagePlacement::V ? 2 : 0;
}

const ScheduleInfo* FindScheduleByAnyName(std::string_view name) {
  constexpr std::string_view kClassPrefix = "Schedule";
  for (const ScheduleInfo& info : kSchedules) {
    if (EqualsIgnoringCase(name, info.name)) return &info;
    if (info.torch_name.empty()) continue;  // torch has no such schedule
    if (EqualsIgnoringCase(name, info.torch_name)) return &info;
    if (name.size() > kClassPrefix.size() &&
        EqualsIgnoringCase(name.substr(0, kClassPrefix.size()), kClassPrefix) &&
        EqualsIgnoringCase(name.substr(kClassPrefix.size()), info.torch_name)) {
      return &info;
    }
  }
  return nullptr;
}

Status CheckSchedule(const std::string& schedule, int p, int v, int m,
                     const ScheduleParams& params) {
  const ScheduleInfo* info = FindSchedule(schedule);
  if (info == nullptr) {
    return Error{"pipeline.schedule",
                 "must name a registered schedule; got " + schedule};
  }
  PipelineSpec spec = PipelineSpec::Uniform(p, v, m, 1, 1);
  if (info->placement == StagePlacement::V && v == 2) {
    spec.placement = StagePlacement::V;
    spec.stage_device = StagePlacementDevices(StagePlacement::V, p, v);
  }
  // Generating is O(p v m) (10^5 micro-batches: a third of a second); a
  // schedule whose refusals depend on the shape alone says so in O(p v).
  if (info->check != nullptr) return info->check(spec, params);
  Result<Program> program = info->generate(spec, params);
  if (!program.ok()) return program.error();
  return Status();
}

}  // namespace ppb
