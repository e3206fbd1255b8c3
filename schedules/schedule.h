// Schedule generators: pure functions from a pipeline shape to a Program.
// Adding a schedule is one file plus one line in the registry (registry.cpp).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/program.h"
#include "core/result.h"
#include "core/spec.h"

namespace ppb {

// Whose rules a schedule follows where PyTorch and Megatron-LM differ.
//   Megatron: 1F1B accepts m < p; interleaved needs v >= 2, p <= g <= m and
//             m mod g == 0 or >= p, g defaults to p.
//   PyTorch:  1F1B needs m >= p; interleaved uses g = m / max(1, m / p)
//             ("microbatches per round") and needs m divisible by the number
//             of rounds max(1, m / p); v = 1 is allowed.
enum class Flavor : std::uint8_t { Megatron, PyTorch };

struct ScheduleParams {
  Flavor flavor = Flavor::Megatron;
  int group = 0;  // Megatron microbatch_group_size_per_vp_stage; 0 = default
  // pipeline.activation_limit, for the adaptive schedules (zb-1p, zb-2p):
  // stashed activation bytes a rank may hold. activation_bytes > 0 gives it
  // in bytes; otherwise activation_multiple k > 0 gives k * p micro-batches of
  // the rank's stage ("1p", "2p"); both 0: the schedule's own default.
  int activation_multiple = 0;
  Bytes activation_bytes = 0;
  // Megatron's combined 1F1B (--overlap-moe-expert-parallel-comm;
  // pipeline_parallel/combined_1f1b.py, schedules.py main d98e8a6): one
  // more warm-up forward, then each steady-state F runs paired (Op::paired)
  // with the backward of an earlier micro-batch. 1f1b (p = 1: Megatron's
  // no-pipelining path) and interleaved take it; the others ignore it.
  bool combined_1f1b = false;
};

using GenerateFn = Result<Program> (*)(const PipelineSpec&,
                                       const ScheduleParams&);
// What the generator would refuse, without building the program (O(p v) at
// most, where generating is O(p v m)).
using CheckFn = Status (*)(const PipelineSpec&, const ScheduleParams&);

struct ScheduleInfo {
  std::string_view name;         // "gpipe", "1f1b", "interleaved"
  std::string_view description;  // one line for --help and the README
  GenerateFn generate;
  // torch's name (get_schedule_class: "1F1B", "LoopedBFS"; the class is
  // "Schedule" + it); the config accepts either, in any case. Empty when
  // torch has no such schedule (zb-1p, zb-2p): emitted as a schedule CSV.
  std::string_view torch_name;
  // Where the schedule puts the stages (Lower's PipelineShape::placement).
  StagePlacement placement = StagePlacement::Loop;
  // The generator's refusals, exactly: check(spec, params) is ok if and only
  // if generate(spec, params) is. nullptr where the verdict depends on the
  // stage costs (zb-1p, zb-2p, zb-v plan their order by simulating it): only
  // generating tells.
  CheckFn check = nullptr;
  // Runs one stage per rank only (v = 1 whatever the config's v): gpipe,
  // 1f1b, zb-1p, zb-2p.
  bool one_stage_per_rank = false;
};

// All registered schedules, in a fixed order.
std::span<const ScheduleInfo> ScheduleRegistry();

// nullptr when no schedule has that name.
const ScheduleInfo* FindSchedule(std::string_view name);

// Whether schedule `schedule` (a registry name) accepts p ranks, v chunks per
// rank, m micro-batches and `params` (its constraints depend on nothing
// else; the V schedules' placement at v = 2). Errors are the generator's:
// keys "pipeline.schedule" (no such schedule), "pipeline.virtual_stages",
// "pipeline.microbatches", "pipeline.microbatch_group".
Status CheckSchedule(const std::string& schedule, int p, int v, int m,
                     const ScheduleParams& params);

// The chunks per rank a schedule always runs: 1 where it runs one stage per
// rank (ScheduleInfo::one_stage_per_rank), 2 for the V placement; 0 where
// the config's v applies (interleaved, looped-bfs, interleaved-zero-bubble,
// custom).
int FixedChunksPerRank(std::string_view name);

// The schedule a user's name means: a registry name or torch's name or class
// name ("Interleaved1F1B", "ScheduleLoopedBFS"), in any case; nullptr when
// none.
const ScheduleInfo* FindScheduleByAnyName(std::string_view name);

// Each generator: errors name the key they concern ("pipeline.microbatches",
// "pipeline.microbatch_group", "pipeline.virtual_stages") and the constraint.
// Each CheckX is GenerateX's refusals without the program (ScheduleInfo::check).
Status CheckGPipe(const PipelineSpec& spec, const ScheduleParams& params);
Status Check1F1B(const PipelineSpec& spec, const ScheduleParams& params);
Status CheckInterleaved(const PipelineSpec& spec, const ScheduleParams& params);
Status CheckLoopedBFS(const PipelineSpec& spec, const ScheduleParams& params);
Status CheckInterleavedZeroBubble(const PipelineSpec& spec, const ScheduleParams& params);
Status CheckZBVZeroBubble(const PipelineSpec& spec, const ScheduleParams& params);
Status CheckDualPipeV(const PipelineSpec& spec, const ScheduleParams& params);
Result<Program> GenerateGPipe(const PipelineSpec& spec,
                              const ScheduleParams& params);
Result<Program> Generate1F1B(const PipelineSpec& spec,
                             const ScheduleParams& params);
Result<Program> GenerateInterleaved(const PipelineSpec& spec,
                                    const ScheduleParams& params);
Result<Program> GenerateLoopedBFS(const PipelineSpec& spec,
                                  const ScheduleParams& params);
Result<Program> GenerateInterleavedZeroBubble(const PipelineSpec& spec,
                                              const ScheduleParams& params);
Result<Program> GenerateZBVZeroBubble(const PipelineSpec& spec,
                                      const ScheduleParams& params);
Result<Program> GenerateDualPipeV(const PipelineSpec& spec,
                                  const ScheduleParams& params);
// The Zero Bubble paper's adaptive schedules (Qi et al., ICLR 2024, §3):
// the order of F, I and W ops with the shortest simulated iteration found
// under an activation limit per rank (default 1p resp. 2p; see
// zb_adaptive.cpp). v must be 1 ("pipeline.virtual_stages"); a limit below
// one micro-batch of a stage is refused ("pipeline.activation_limit").
Result<Program> GenerateZB1P(const PipelineSpec& spec,
                             const ScheduleParams& params);
Result<Program> GenerateZB2P(const PipelineSpec& spec,
                             const ScheduleParams& params);
// ZB-V adaptive (zb_v.cpp): v = 2 in the V placement, limit default 1p of
// the rank's two stages.
Result<Program> GenerateZBV(const PipelineSpec& spec, const ScheduleParams& params);

// torch schedule CSV: one row per rank, comma-separated actions ("0F0",
// "2B1", "2I1", "2W1", the overlapped "(4F4;3B0)OVERLAP_F_B", read as a
// paired F and its B); empty cells are idle steps and are skipped; the
// communication actions SEND_F/RECV_F/SEND_B/RECV_B ("0SEND_F1" etc.) are
// accepted and ignored (the engine derives messages from dependencies).
// Errors name the row (1-based line) and column of the bad cell. The result is
// not yet validated against a spec: run ValidateProgram.
Result<Program> ParseScheduleCsv(std::string_view text);

// The inverse of ParseScheduleCsv for compute ops; ends with a newline.
std::string DumpScheduleCsv(const Program& program);

}  // namespace ppb
