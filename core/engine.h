// The simulation engine: executes a Program over a PipelineSpec and measures
// iteration time, per-device busy/idle time and peak memory.
//
// Execution rules (the same as torch.distributed.pipelining and Megatron-LM):
//   - a device runs its op list strictly in order; an op starts when the
//     device is free and its inputs have arrived;
//   - F(s,j) needs F(s-1,j); B/I(s,j) needs F(s,j) and the gradient from
//     B/I(s+1,j) (the last stage needs only its own F); W(s,j) needs I(s,j);
//   - a stage with recompute runs its extra forward right before B (or I);
//   - an F paired with the next op (Op::paired, DualPipeV's overlapped F+B)
//     starts only when that backward is ready too; the two run back to back
//     and together take F + B - fb_overlap_ppm/1e6 x min(F, B), the saving
//     split between them in proportion to their times;
//   - a message between stages on different devices occupies the directed
//     link for bytes/bandwidth (messages on one direction serialize in send
//     order) and arrives latency after it leaves the link queue; with
//     CommMode::Blocking the sender's compute stream waits until arrival.
//   - memory of a device = static memory of its stages + activations stashed
//     at the end of each F and released at the end of the matching B (or,
//     split, input_grad_release of it at the end of I and the rest at the
//     end of W) + the transient working set of the op running.
//
// Every message on a directed link (a -> b) is sent by device a, whose ops
// finish in time order, so the engine can process events device by device in
// dependency order and still reproduce a time-ordered discrete-event run
// exactly: no resource is shared by two independent producers.
//
// The same argument makes the result independent of how the devices' ops
// are interleaved, as long as each op runs after its inputs: a run may
// record the order it executed the ops in (SimOptions::record_order), and
// later runs of the same program may follow it, compiled once against the
// program (ExecutionOrder, passed as SimOptions::order), with no
// readiness checks and no worklist, for the same figures bit for bit. The
// dependencies of a program do not depend on the spec's costs, memories or
// links, so one recorded order serves every spec whose stages sit on the
// devices the program's lists were made for (the same stage_device).
//
// The engine is reentrant: an Engine object holds only scratch buffers; use
// one per thread and reuse it across runs to avoid allocation.
#pragma once

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/program.h"
#include "core/spec.h"
#include "core/types.h"

namespace ppb {

enum class Outcome : std::uint8_t {
  Ok,           // ran to completion, every device fits in memory
  OutOfMemory,  // ran to completion, some device exceeded its capacity
  Deadlock,     // some device could not proceed (timings are partial)
  Interrupted,  // stopped at SimOptions::deadline (timings, makespan and
                // every figure are partial: use none of them)
};

struct OpTiming {
  Nanos start = 0;      // start of the op (including its recompute, if any)
  Nanos end = 0;        // end of the op
  Nanos recompute = 0;  // recompute part at the start of [start, end)
};

// A message between devices (recorded only with SimOptions::record_ops).
struct Transfer {
  DeviceId from, to;
  Op producer;       // the F (activation) or B/I (gradient) that sent it
  Nanos send = 0;    // when it entered the link (after queueing)
  Nanos arrive = 0;  // when the receiver has it
  Bytes bytes = 0;
};

struct MemorySample {
  Nanos time = 0;
  Bytes bytes = 0;
};

struct DeviceStats {
  Nanos busy = 0;           // compute time, recompute included
  Nanos recompute = 0;      // of which recompute
  Nanos comm_blocked = 0;   // time the stream waited on blocking sends
  Nanos comm_wait = 0;      // idle time spent waiting for messages in flight
  Nanos idle = 0;           // makespan - busy
  Nanos first_start = 0;    // start of the first op
  Nanos last_end = 0;       // end of the last op
  Bytes static_memory = 0;
  Bytes peak_memory = 0;    // static + stashed + transient, maximum
  Nanos peak_time = 0;      // when the peak first happened
  Bytes capacity = 0;
  int peak_inflight = 0;    // most stage-microbatches stashed at once
  bool oom = false;
};

// A rank's step beyond its pipeline ops (PipelineSpec::tail): kept apart
// from DeviceStats so the engine's per-op loop touches what it did.
struct RankStep {
  Nanos collectives = 0;    // of busy: exposed TP/CP/EP collectives
                            // (StageCost::collective_*)
  Nanos grad_sync = 0;      // time its gradient collectives ran
  Nanos grad_sync_end = 0;  // when its gradients were synced
  Nanos optimizer = 0;      // its optimizer step
  Nanos param_gather = 0;   // its exposed parameter all-gather
};

// Where the iteration time goes (see docs/model.md, "bubble breakdown"); the five
// parts sum to the makespan. Measured on the busiest device d*; the
// definitions, and the same parts for every device, are in core/breakdown.h.
struct BubbleBreakdown {
  Nanos ideal = 0;          // mean useful compute per device (or d*'s own,
                            // when below the mean)
  Nanos imbalance = 0;      // useful compute of d* above the mean (or its
                            // idle time for the share it lacks)
  Nanos recompute = 0;      // recompute on d*
  Nanos communication = 0;  // transfer time on the critical path (<= idle of d*)
  Nanos warmup_drain = 0;   // the rest: fill and drain of the schedule
  // The step's tail (PipelineSpec::tail), after the pipeline's end: the
  // gradient sync still running then (until every rank has its gradients)
  // and the optimizer step with any exposed parameter all-gather (of the
  // rank that ends last). The five parts above then sum to the pipeline's
  // end (SimResult::pipeline_end) and all seven to the makespan.
  Nanos grad_sync = 0;
  Nanos optimizer = 0;
  int bottleneck = 0;       // d*
};

// A recorded order (SimResult::order) compiled against the program it was
// recorded on: each op once, in the order the recording run executed them,
// as one 16-byte step. A run that follows it (SimOptions::order) reads this
// one stream front to back instead of 64 devices' op lists by turns, which
// at p = 64, m = 256, v = 4 is most of what an L2-sized cache misses.
// Compile once per (program, recorded order); it holds no pointer into
// either.
class ExecutionOrder {
 public:
  ExecutionOrder() = default;
  // The steps of `devices` (the device of each op, in order) over `program`.
  // An order of another program (a device out of range, more ops of a
  // device than it has, too few ops) compiles to its longest valid prefix;
  // a run that follows it ends as Outcome::Deadlock.
  static ExecutionOrder Compile(const Program& program,
                                const std::vector<std::int32_t>& devices);
  bool empty() const { return steps_.empty(); }
  size_t size() const { return steps_.size(); }
  // Whether this order's steps are ops of `program` at the shape of `spec`:
  // the same ops per device, every stage and micro-batch in range. A run
  // with an order that does not fit runs no step (Outcome::Deadlock).
  bool Fits(const Program& program, int num_stages, int m) const;

 private:
  friend class Engine;
  struct Step {
    std::int32_t device;
    std::int32_t stage;
    std::int32_t mb;
    OpKind kind;
    bool paired;
  };
  std::vector<Step> steps_;
  std::vector<size_t> ops_per_device_;  // of the program compiled against
  int stage_end_ = 0;                   // 1 + the largest stage of a step
  int mb_end_ = 0;                      // 1 + the largest micro-batch
};

struct SimOptions {
  using Clock = std::chrono::steady_clock;
  bool record_ops = true;      // per-op timings and transfers
  bool record_memory = false;  // memory samples per device
  // When set (not max()), the engine reads the clock every
  // Engine::kDeadlineCheckOps executed ops (between two devices' runs) and
  // stops with Outcome::Interrupted once it is reached. A run shorter than
  // that many ops never reads the clock, so it cannot be interrupted: the
  // check costs nothing measurable (about one clock read per 2 ms of work).
  Clock::time_point deadline = Clock::time_point::max();
  // Record SimResult::order (the device of each executed op, in order).
  bool record_order = false;
  // When set, the run follows this order (the search's hot path).
  // REQUIRES: compiled from SimResult::order of a run of this same program,
  // on a spec of the same stage_device, that ended Ok or OutOfMemory.
  // Ignored with record_ops, record_memory or record_order.
  // An order of another program reads and writes nothing out of bounds: it
  // ends the run as Outcome::Deadlock where it goes wrong, or at once when
  // it does not fit the program (ExecutionOrder::Fits).
  const ExecutionOrder* order = nullptr;
};

struct SimResult {
  Outcome outcome = Outcome::Ok;
  Nanos makespan = 0;      // the step: the pipeline and its tail
  Nanos pipeline_end = 0;  // the end of the last op (= makespan, no tail)
  // Per rank, with PipelineSpec::tail after a complete run; empty otherwise.
  std::vector<RankStep> steps;
  std::vector<DeviceStats> devices;
  BubbleBreakdown breakdown;
  // Filled with SimOptions::record_ops: timings[d][k] for program.ops[d][k].
  std::vector<std::vector<OpTiming>> timings;
  std::vector<Transfer> transfers;
  // Filled with SimOptions::record_memory.
  std::vector<std::vector<MemorySample>> memory;
  // Deadlock: the ops each stuck device was waiting at (empty otherwise).
  std::vector<Op> stuck;
  // With SimOptions::record_order: the device of each op in the order the
  // run executed them (every op when the run ended Ok or OutOfMemory).
  std::vector<std::int32_t> order;

  // Sum of idle over devices / (p * makespan).
  double bubble_fraction() const;
};

class Engine {
 public:
  // Ops executed between two reads of the clock when a deadline is set.
  static constexpr std::size_t kDeadlineCheckOps = 1 << 16;

  // REQUIRES: ValidateSpec(spec).ok(); program has spec.p device lists and
  // only ops of stages < spec.num_stages() and microbatches < spec.m. Programs
  // that deadlock are reported as Outcome::Deadlock, not undefined behaviour.
  SimResult Run(const PipelineSpec& spec, const Program& program,
                const SimOptions& options = {});

  // As Run, reusing `out`'s storage (no allocation once warm): the search's
  // hot path. REQUIRES as Run.
  void RunInto(const PipelineSpec& spec, const Program& program,
               const SimOptions& options, SimResult& out);

 private:
  // What the ops of one (stage s, micro-batch j) read and write, together;
  // -1 = not yet. Stored at [j * stages + s], so that an op's own key and
  // the key of the stage it sends to (s + 1 or s - 1) are neighbours.
  struct KeyState {
    Nanos fwd_ready;  // arrival of F(s,j)'s input (sent at F(s-1,j)'s f_done)
    Nanos f_done;     // end of F(s,j)
    Nanos bwd_ready;  // arrival of the gradient for B/I(s,j) (sent at
                      // B/I(s+1,j)'s b_done)
    Nanos b_done;     // end of B(s,j), or of I(s,j): what W(s,j) waits for
                      // (a key has B, or I and W: ValidateProgram)
  };
  // When the later input of op `kind` of key `key` (stage s) left its
  // sender: the end of F(s-1,j), or of B/I(s+1,j), or the input's own time
  // where it came from no message (stage 0's input, the last stage's loss,
  // the F of a B, the I of a W). REQUIRES: the op is ready.
  static Nanos SentAt(const KeyState* keys, OpKind kind, size_t key, int s, int last_stage);
  // A message route of a stage: to s+1 (fwd) or s-1 (bwd).
  struct Route {
    bool exists = false;     // there is such a stage
    std::int32_t to = 0;     // its device
    std::int32_t link = -1;  // from * p + to; -1: same device, no message
    Nanos occupy = 0;        // link occupancy of one message
    Nanos latency = 0;
    Bytes bytes = 0;
  };
  // A stage's costs folded for the loop.
  struct StageRun {
    Nanos forward, recompute, b_dur, i_dur, w_dur;
    Bytes activation, f_during, b_transient, i_release, w_release;
    Route fwd, bwd;
  };

  // RunInto's loop when it follows options.order (REQUIRES as there).
  void RunOrdered(const PipelineSpec& spec, const ExecutionOrder& order,
                  const SimOptions& options, SimResult& out);

  // Scratch, reused between runs.
  std::vector<KeyState> keys_;     // [j*stages+s]
  std::vector<StageRun> stage_run_;  // [s]
  std::vector<Nanos> link_free_;   // [from*p+to]
  // Per stage: [start, end] of its latest B or W (the step's tail).
  std::vector<std::pair<Nanos, Nanos>> grad_op_;
  // A device's progress (one cache line).
  struct DevState {
    const Op* ops = nullptr;  // its program
    size_t n = 0;
    size_t pc = 0;            // next op
    Nanos free = 0;           // its stream is free from
    Bytes mem = 0;            // static + stashed
    Nanos pair_save = 0;      // the B's share of its pair's saving
    const std::uint8_t* wait = nullptr;  // blocked: the sign byte of the
                                         // time it waits for (engine.cpp)
    int inflight = 0;
    std::uint8_t wait_mask = 1;          // blocked while *wait & wait_mask
  };
  std::vector<DevState> dev_;      // [d]
  std::vector<int> worklist_;
  std::vector<char> queued_;
};

// One step of the critical path: an op, or a wait for a transfer.
struct CriticalStep {
  int device = 0;
  Op op;
  Nanos start = 0, end = 0;
  bool is_transfer = false;  // a message from `op` on another device
};

// The chain of ops and waits that sets the iteration time, first to last.
// A longest path through the ops' dependency graph weighted by the simulated
// durations and message delays, found by walking back from the last op
// through predecessors whose ready time equals the op's start.
// REQUIRES: result came from Run with record_ops on the same spec/program,
// outcome != Deadlock.
std::vector<CriticalStep> CriticalPath(const PipelineSpec& spec,
                                       const Program& program,
                                       const SimResult& result);

}  // namespace ppb
