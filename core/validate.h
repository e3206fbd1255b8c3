// Validation of a program against a spec, before it runs: every op exactly
// once, each op on the device that holds its stage, B xor (I and W) per
// (stage, mb), and no deadlock (the graph of program order plus data
// dependencies is acyclic; checked with Boost.Graph).
#pragma once

#include "core/program.h"
#include "core/result.h"
#include "core/spec.h"

namespace ppb {

// Checks the spec's own invariants (sizes, non-negative costs, placement)
// and that one iteration's total work and bytes stay under 2^62, so the
// engine's int64 sums cannot overflow (key pipeline.microbatches).
Status ValidateSpec(const PipelineSpec& spec);

// REQUIRES: ValidateSpec(spec).ok()
// On a deadlock, the error message names a cycle of ops, e.g.
// "deadlock: rank 0 waits at 1B0 for 1F0 ... ".
Status ValidateProgram(const PipelineSpec& spec, const Program& program);

}  // namespace ppb
