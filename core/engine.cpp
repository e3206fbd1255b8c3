#include "core/engine.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/breakdown.h"
#include "core/cost.h"

namespace ppb {
namespace {

constexpr Nanos kUnset = -1;
// A blocked device remembers the time it waits for by the byte holding that
// time's sign bit (set while the time is unset, -1): a spurious wake-up
// costs one byte read. A device not blocked points at a zero byte.
static_assert(std::endian::native == std::endian::little);
constexpr std::uint8_t kSignBit = 0x80;
constexpr std::uint8_t kNotBlocked = 0;
const std::uint8_t* SignByte(const Nanos& t) {
  return reinterpret_cast<const std::uint8_t*>(&t) + sizeof(Nanos) - 1;
}


template <class T>
void Fill(std::vector<T>& v, size_t n, T value) {
  v.assign(n, value);
}

// The saving of an overlapped F (of stage `s`) paired with the backward
// `next`: fb_overlap_ppm of the shorter of the two, split in proportion to
// their times. Returns the F's share; *b_share gets the backward's.
Nanos PairSaving(const PipelineSpec& spec, int s, const Op& next, Nanos* b_share) {
  const StageCost& cost = spec.stages[s];
  const StageCost& nc = spec.stages[next.stage.value];
  const Nanos bdur = nc.recompute + nc.backward_input +
                     (next.kind == OpKind::B ? nc.backward_weight : 0);
  if (spec.fb_overlap_ppm == 0 && spec.ep_overlap_ppm > 0) {
    // Combined 1F1B: the F's dispatcher collectives behind the backward's
    // compute, the backward's behind the F's; ep_overlap_ppm of what could
    // hide does.
    auto share = [&](Nanos x) {
      return static_cast<Nanos>(static_cast<Int128>(x) * spec.ep_overlap_ppm / 1'000'000);
    };
    const Nanos f_save =
        share(std::min(cost.ep_forward, std::max<Nanos>(0, bdur - nc.ep_backward)));
    *b_share = share(std::min(nc.ep_backward, std::max<Nanos>(0, cost.forward - cost.ep_forward)));
    return f_save;
  }
  const Nanos shorter = std::min(cost.forward, bdur);
  const Nanos total =
      static_cast<Nanos>(static_cast<Int128>(shorter) * spec.fb_overlap_ppm / 1'000'000);
  const Nanos both = cost.forward + bdur;
  const Nanos save =
      both > 0 ? static_cast<Nanos>(static_cast<Int128>(total) * cost.forward / both) : 0;
  *b_share = total - save;
  return save;
}

}  // namespace

double SimResult::bubble_fraction() const {
  if (makespan <= 0 || devices.empty()) return 0.0;
  long double idle = 0;
  for (const auto& d : devices) idle += static_cast<long double>(d.idle);
  return static_cast<double>(idle / (static_cast<long double>(makespan) *
                                     static_cast<long double>(devices.size())));
}

ExecutionOrder ExecutionOrder::Compile(const Program& program,
                                       const std::vector<std::int32_t>& devices) {
  ExecutionOrder out;
  const size_t p = program.ops.size();
  out.ops_per_device_.resize(p);
  for (size_t d = 0; d < p; ++d) out.ops_per_device_[d] = program.ops[d].size();
  std::vector<size_t> pc(p, 0);
  out.steps_.reserve(devices.size());
  for (const std::int32_t d : devices) {
    if (d < 0 || static_cast<size_t>(d) >= p) break;
    const size_t k = pc[static_cast<size_t>(d)]++;
    if (k >= program.ops[static_cast<size_t>(d)].size()) break;
    const Op& op = program.ops[static_cast<size_t>(d)][k];
    out.steps_.push_back(Step{d, op.stage.value, op.mb.value, op.kind, op.paired});
    out.stage_end_ = std::max(out.stage_end_, op.stage.value + 1);
    out.mb_end_ = std::max(out.mb_end_, op.mb.value + 1);
  }
  return out;
}

bool ExecutionOrder::Fits(const Program& program, int num_stages, int m) const {
  if (program.ops.size() != ops_per_device_.size()) return false;
  for (size_t d = 0; d < ops_per_device_.size(); ++d) {
    if (program.ops[d].size() != ops_per_device_[d]) return false;
  }
  return stage_end_ <= num_stages && mb_end_ <= m;
}

inline Nanos Engine::SentAt(const KeyState* keys, OpKind kind, size_t key, int s,
                           int last_stage) {
  const KeyState& ks = keys[key];
  switch (kind) {
    case OpKind::F:
      return s == 0 ? ks.fwd_ready : keys[key - 1].f_done;
    case OpKind::W:
      return ks.b_done;
    default:  // B, I: the gradient when it came last, else its own F
      return ks.bwd_ready < ks.f_done || s == last_stage ? std::max(ks.f_done, ks.bwd_ready)
                                                         : keys[key + 1].b_done;
  }
}

SimResult Engine::Run(const PipelineSpec& spec, const Program& program,
                      const SimOptions& options) {
  SimResult out;
  RunInto(spec, program, options, out);
  return out;
}

// The event loop every simulation and every search evaluation runs
// (bench/bench_engine.cpp: >= 100 M ops/s at p = 64, m = 256, v = 4). Its
// layout: one 32-byte KeyState per (stage, micro-batch) holding the four
// times the ops of that key wait for, next to the keys of the stages before
// and after it (one memset clears them; when a message left its sender is
// the sender's own end time, read from the neighbouring key only where an op
// waited), one StageRun per stage with the op durations, memory deltas and
// message routes folded once per run, and the running device's counters in
// locals that the compiler keeps in registers, written back when the device
// blocks.
namespace {

// The step after the pipeline (PipelineSpec::tail) of a complete run: each
// rank's exposed collectives (a complete run ran each (stage, micro-batch)'s
// F and its B or I once: m x its stages' sums) and its tail
// (core/step_tail.h). Returns the step's end; *sync = when every rank had
// its gradients. Kept out of RunInto so its loops stay as they were.
[[gnu::noinline]] Nanos FinishStep(const PipelineSpec& spec,
                                   const std::vector<std::pair<Nanos, Nanos>>& grad_op,
                                   const std::vector<Nanos>& ends, SimResult& out,
                                   Nanos* sync) {
  const int p = spec.p, num_stages = spec.num_stages();
  out.steps.assign(static_cast<size_t>(p), RankStep{});
  std::vector<TailStage> stages(static_cast<size_t>(num_stages));
  for (int s = 0; s < num_stages; ++s) {
    const StageCost& c = spec.stages[s];
    const int d = spec.stage_device[s].value;
    out.steps[d].collectives +=
        static_cast<Nanos>(spec.m) * (c.collective_forward + c.collective_backward);
    // A once-per-step gather runs beside the stage's first forward (torch
    // FSDP2 prefetches unit after unit): what exceeds that forward is
    // exposed.
    stages[s] = TailStage{d, grad_op[s].first, grad_op[s].second, c.grad_bytes,
                          c.expert_grad_bytes, c.optimizer,
                          std::max<Nanos>(0, c.step_gather - c.forward)};
  }
  const std::vector<TailTiming> tail = RunTail(spec.tail, stages, ends);
  Nanos end = 0;
  for (int d = 0; d < p; ++d) {
    end = std::max(end, ends[d]);
    RankStep& rs = out.steps[d];
    rs.grad_sync = tail[d].grad_sync_busy;
    rs.grad_sync_end = tail[d].grad_sync_end;
    rs.optimizer = tail[d].optimizer;
    rs.param_gather = tail[d].param_gather;
    end = std::max(end, tail[d].end);
    *sync = tail[d].sync;
  }
  return end;
}

}  // namespace

void Engine::RunInto(const PipelineSpec& spec, const Program& program,
                     const SimOptions& options, SimResult& out) {
  const int p = spec.p;
  const int m = spec.m;
  const size_t ns = static_cast<size_t>(spec.num_stages());
  const int num_stages = spec.num_stages();
  const int last_stage = num_stages - 1;
  const size_t keys = static_cast<size_t>(num_stages) * m;
  const bool record_order = options.record_order;
  const bool ordered = options.order != nullptr && !options.record_ops &&
                       !options.record_memory && !record_order;

  // Every time unset (-1, all bytes 0xff: one memset); an ordered run reads
  // no time it has not written.
  keys_.resize(keys);
  if (!ordered) std::memset(static_cast<void*>(keys_.data()), 0xff, keys * sizeof(KeyState));
  // Stage 0's inputs are there from the start; the last stage's gradient is
  // its own loss.
  for (int j = 0; j < m; ++j) {
    const size_t first = static_cast<size_t>(j) * num_stages;
    keys_[first].fwd_ready = 0;
    const size_t last = first + num_stages - 1;
    keys_[last].bwd_ready = 0;
  }
  Fill(link_free_, static_cast<size_t>(p) * p, Nanos{0});
  if (spec.tail.enabled) grad_op_.assign(ns, {0, 0});
  dev_.resize(p);
  DevState* const dev = dev_.data();
  for (int d = 0; d < p; ++d) {
    dev[d] = DevState{};
    dev[d].ops = program.ops[d].data();
    dev[d].n = program.ops[d].size();
    dev[d].wait = &kNotBlocked;
    dev[d].wait_mask = kSignBit;
  }
  Fill(queued_, static_cast<size_t>(p), char{1});
  worklist_.clear();
  for (int d = p - 1; d >= 0; --d) worklist_.push_back(d);

  out.outcome = Outcome::Ok;
  out.makespan = 0;
  out.devices.assign(p, DeviceStats{});
  out.transfers.clear();
  out.stuck.clear();
  out.order.clear();
  if (record_order) out.order.reserve(program.total_ops());
  out.timings.resize(options.record_ops ? p : 0);
  for (int d = 0; options.record_ops && d < p; ++d) {
    out.timings[d].assign(program.ops[d].size(), OpTiming{});
  }
  out.memory.resize(options.record_memory ? p : 0);
  for (auto& samples : out.memory) samples.clear();

  for (int s = 0; s < num_stages; ++s) {
    const int d = spec.stage_device[s].value;
    dev[d].mem += spec.stages[s].static_memory;
  }
  for (int d = 0; d < p; ++d) {
    DeviceStats& ds = out.devices[d];
    ds.static_memory = dev[d].mem;
    ds.peak_memory = dev[d].mem;
    ds.capacity = spec.device_capacity[d];
    if (options.record_memory) out.memory[d].push_back({0, dev[d].mem});
  }

  const bool blocking = spec.comm == CommMode::Blocking;
  const bool record_ops = options.record_ops;
  const bool record_memory = options.record_memory;
  const bool track_tail = spec.tail.enabled;

  // Per stage, once per run: durations, memory deltas and the routes of the
  // message to s+1 (activation) and to s-1 (gradient w.r.t. s's input, of
  // stage s-1's output size), each with its link occupancy.
  stage_run_.resize(num_stages);
  // The framework's work per pass that a synchronizing exchange exposes.
  const Nanos overhead = blocking && p > 1 ? spec.op_overhead : 0;
  for (int s = 0; s < num_stages; ++s) {
    const StageCost& c = spec.stages[s];
    StageRun& r = stage_run_[s];
    const int d = spec.stage_device[s].value;
    r.forward = c.forward + overhead;
    r.recompute = c.recompute;
    r.b_dur = c.recompute + c.backward_input + c.backward_weight + overhead;
    r.i_dur = c.recompute + c.backward_input + overhead;
    r.w_dur = c.backward_weight;
    r.activation = c.activation;
    r.f_during = c.activation + c.forward_transient;
    r.b_transient = c.backward_transient;
    r.i_release = c.input_grad_release;
    r.w_release = c.activation - c.input_grad_release;
    r.fwd = Route{};
    r.bwd = Route{};
    if (s + 1 < num_stages) {
      const int to = spec.stage_device[s + 1].value;
      r.fwd.exists = true;
      r.fwd.to = to;
      r.fwd.bytes = c.output_bytes;
      if (to != d) {
        const size_t l = static_cast<size_t>(d) * p + to;
        r.fwd.link = static_cast<std::int32_t>(l);
        r.fwd.occupy = LinkOccupancy(c.output_bytes, spec.link_matrix[l].bandwidth);
        r.fwd.latency = spec.link_matrix[l].latency;
      }
    }
    if (s > 0) {
      const int to = spec.stage_device[s - 1].value;
      const Bytes bytes = spec.stages[s - 1].output_bytes;
      r.bwd.exists = true;
      r.bwd.to = to;
      r.bwd.bytes = bytes;
      if (to != d) {
        const size_t l = static_cast<size_t>(d) * p + to;
        r.bwd.link = static_cast<std::int32_t>(l);
        r.bwd.occupy = LinkOccupancy(bytes, spec.link_matrix[l].bandwidth);
        r.bwd.latency = spec.link_matrix[l].latency;
      }
    }
  }

  KeyState* const key_state = keys_.data();
  const StageRun* const stage_run = stage_run_.data();
  Nanos* const link_free = link_free_.data();
  char* const queued = queued_.data();


  // Sends one message of `route` from `from` (ending at `end`); returns the
  // arrival time.
  auto send = [&](int from, const Route& route, Nanos end, const Op& producer) {
    if (route.link < 0) return end;
    Nanos& free_at = link_free[route.link];
    const Nanos leave = std::max(end, free_at);
    free_at = leave + route.occupy;
    const Nanos arrive = leave + route.occupy + route.latency;
    if (record_ops) {
      out.transfers.push_back(Transfer{DeviceId(from), DeviceId(route.to), producer,
                                       leave, arrive, route.bytes});
    }
    if (!queued[route.to]) {
      queued[route.to] = 1;
      worklist_.push_back(route.to);
    }
    return arrive;
  };

  // Deadline: checked between devices' runs once `next_check` ops ran.
  const bool has_deadline = options.deadline != SimOptions::Clock::time_point::max();
  size_t executed = 0;
  size_t next_check = kDeadlineCheckOps;

  if (ordered) {
    if (options.order->Fits(program, num_stages, m)) RunOrdered(spec, *options.order, options, out);
    worklist_.clear();
  }
  while (!worklist_.empty()) {
    if (has_deadline && executed >= next_check) {
      next_check = executed + kDeadlineCheckOps;
      if (SimOptions::Clock::now() >= options.deadline) {
        out.outcome = Outcome::Interrupted;
        break;
      }
    }
    const int d = worklist_.back();
    worklist_.pop_back();
    queued[d] = 0;
    DevState& st = dev[d];
    // Woken by a message it does not wait for yet: nothing to run.
    if (*st.wait & st.wait_mask) continue;
    const Op* const ops = st.ops;
    const size_t n = st.n;
    size_t pc = st.pc;
    if (pc >= n) continue;
    const size_t pc0 = pc;
    DeviceStats& ds = out.devices[d];
    Nanos free = st.free;
    Bytes mem = st.mem;
    int inflight = st.inflight;
    Nanos pair_save = st.pair_save;
    const std::uint8_t* wait = &kNotBlocked;
    while (pc < n) {
      const Op& op = ops[pc];
      const int s = op.stage.value;
      const size_t key = static_cast<size_t>(op.mb.value) * ns + s;
      KeyState& ks = key_state[key];

      const StageRun& sr = stage_run[s];
      Nanos ready = 0;
      switch (op.kind) {
        case OpKind::F:
          ready = ks.fwd_ready;
          wait = SignByte(ks.fwd_ready);
          break;
        case OpKind::B:
        case OpKind::I:
          if (ks.f_done == kUnset) {
            ready = kUnset;
            wait = SignByte(ks.f_done);
          } else if (ks.bwd_ready == kUnset) {
            ready = kUnset;
            wait = SignByte(ks.bwd_ready);
          } else {
            ready = std::max(ks.f_done, ks.bwd_ready);
          }
          break;
        default:  // W
          ready = ks.b_done;
          wait = SignByte(ks.b_done);
          break;
      }
      if (ready == kUnset) break;
      // An overlapped F+B (Op::paired) starts when its backward is ready
      // too; the backward then runs right after the F, both shortened by
      // their shares of the saving (set on the F, applied to both).
      Nanos save = 0;
      if (op.paired && pc + 1 < n) [[unlikely]] {
        const Op& next = ops[pc + 1];
        const size_t nkey = static_cast<size_t>(next.mb.value) * ns + next.stage.value;
        const KeyState& nks = key_state[nkey];
        const bool same = next.stage == op.stage && next.mb == op.mb;
        if (nks.f_done == kUnset && !same) {
          wait = SignByte(nks.f_done);
          break;
        }
        if (nks.bwd_ready == kUnset) {
          wait = SignByte(nks.bwd_ready);
          break;
        }
        if (!same) {
          ready = std::max({ready, nks.f_done, nks.bwd_ready});
        } else {
          ready = std::max(ready, nks.bwd_ready);
        }
        save = PairSaving(spec, s, next, &pair_save);
      } else if (pc > 0 && ops[pc - 1].paired) [[unlikely]] {
        save = pair_save;
      }

      const Nanos start = std::max(free, ready);
      if (ready > free) {
        // The part of this wait spent on a message in flight.
        ds.comm_wait += ready - std::max(SentAt(key_state, op.kind, key, s, last_stage), free);
      }
      Nanos rc = 0, dur;
      Bytes during;
      switch (op.kind) {
        case OpKind::F:
          dur = sr.forward;
          during = mem + sr.f_during;
          break;
        case OpKind::B:
          rc = sr.recompute;
          dur = sr.b_dur;
          during = mem + sr.b_transient;
          break;
        case OpKind::I:
          rc = sr.recompute;
          dur = sr.i_dur;
          during = mem + sr.b_transient;
          break;
        default:  // W
          dur = sr.w_dur;
          during = mem + sr.b_transient;
          break;
      }
      dur -= save;
      const Nanos end = start + dur;
      if (pc == 0) ds.first_start = start;
      ds.busy += dur;
      ds.recompute += rc;
      if (during > ds.peak_memory) {
        ds.peak_memory = during;
        ds.peak_time = start;
      }
      if (record_memory) out.memory[d].push_back({start, during});
      if (record_ops) out.timings[d][pc] = OpTiming{start, end, rc};

      Nanos stream_free = end;
      switch (op.kind) {
        case OpKind::F:
          mem += sr.activation;
          ds.peak_inflight = std::max(ds.peak_inflight, ++inflight);
          ks.f_done = end;
          if (sr.fwd.exists) {
            const Nanos arrive = send(d, sr.fwd, end, op);
            KeyState& to = key_state[key + 1];
            to.fwd_ready = arrive;

            if (blocking) stream_free = std::max(stream_free, arrive);
          }
          break;
        case OpKind::B:
        case OpKind::I:
          --inflight;
          ks.b_done = end;
          mem -= op.kind == OpKind::B ? sr.activation : sr.i_release;
          if (sr.bwd.exists) {
            const Nanos arrive = send(d, sr.bwd, end, op);
            KeyState& to = key_state[key - 1];
            to.bwd_ready = arrive;

            if (blocking) stream_free = std::max(stream_free, arrive);
          }
          break;
        default:  // W
          mem -= sr.w_release;
          break;
      }
      ds.comm_blocked += stream_free - end;
      ds.last_end = end;
      if (track_tail && (op.kind == OpKind::B || op.kind == OpKind::W)) {
        grad_op_[s] = {start, end};
      }
      free = stream_free;
      if (record_memory) out.memory[d].push_back({end, mem});
      ++pc;
      wait = &kNotBlocked;
    }
    if (record_order) out.order.insert(out.order.end(), pc - pc0, d);
    executed += pc - pc0;
    st.pc = pc;
    st.free = free;
    st.mem = mem;
    st.inflight = inflight;
    st.pair_save = pair_save;
    st.wait = wait;

  }

  Nanos makespan = 0;
  const bool interrupted = out.outcome == Outcome::Interrupted;
  for (int d = 0; d < p; ++d) {
    if (!interrupted && dev[d].pc < dev[d].n) {
      out.outcome = Outcome::Deadlock;
      out.stuck.push_back(program.ops[d][dev[d].pc]);
    }
    makespan = std::max(makespan, dev[d].free);
  }
  out.pipeline_end = makespan;
  Nanos tail_sync = makespan;
  const bool complete = out.outcome != Outcome::Deadlock && !interrupted;
  if (spec.tail.enabled && complete) {
    std::vector<Nanos> ends(p);
    for (int d = 0; d < p; ++d) ends[d] = dev[d].free;
    makespan = FinishStep(spec, grad_op_, ends, out, &tail_sync);
  } else {
    out.steps.clear();
  }
  out.makespan = makespan;

  for (int d = 0; d < p; ++d) {
    DeviceStats& ds = out.devices[d];
    ds.idle = makespan - ds.busy;
    ds.oom = ds.peak_memory > ds.capacity;
    if (ds.oom && out.outcome == Outcome::Ok) out.outcome = Outcome::OutOfMemory;
  }
  // One definition of the parts (core/breakdown.h) serves the engine's
  // summary and the per-device reports.
  const int bottleneck = BusiestDevice(out.devices);
  // The pipeline's parts are measured against its own end; the tail's
  // two parts follow it.
  DeviceStats pipe = out.devices[bottleneck];
  pipe.idle = out.pipeline_end - pipe.busy;
  const BubbleParts parts = DeviceBubbleParts(
      pipe, out.pipeline_end, MeanUsefulCompute(out.devices));
  BubbleBreakdown& br = out.breakdown;
  br.bottleneck = bottleneck;
  br.ideal = parts[BubbleTerm::Ideal];
  br.imbalance = parts[BubbleTerm::Imbalance];
  br.recompute = parts[BubbleTerm::Recompute];
  br.communication = parts[BubbleTerm::Communication];
  br.warmup_drain = parts[BubbleTerm::WarmupDrain];
  br.grad_sync = tail_sync - out.pipeline_end;
  br.optimizer = makespan - tail_sync;
}

// The loop of a run that follows a recorded order (SimOptions::order): the
// same op rules as RunInto's worklist loop, in the order given, one compiled
// step at a time. Every input of an op is there when it runs (the order was
// recorded by a run of this program, whose dependencies do not depend on the
// spec), so nothing is checked, nobody is woken, and the key states need no
// reset.
void Engine::RunOrdered(const PipelineSpec& spec, const ExecutionOrder& order,
                        const SimOptions& options, SimResult& out) {
  const size_t ns = static_cast<size_t>(spec.num_stages());
  const int last_stage = spec.num_stages() - 1;
  const bool blocking = spec.comm == CommMode::Blocking;
  const bool track_tail = spec.tail.enabled;
  KeyState* const key_state = keys_.data();
  const StageRun* const stage_run = stage_run_.data();
  Nanos* const link_free = link_free_.data();
  DevState* const dev = dev_.data();
  DeviceStats* const stats = out.devices.data();
  const bool has_deadline = options.deadline != SimOptions::Clock::time_point::max();
  size_t next_check = kDeadlineCheckOps;
  const ExecutionOrder::Step* const steps = order.steps_.data();
  // Compile kept the valid prefix of the recorded order, and Fits checked
  // that its ops are this program's: every step is in bounds. A prefix
  // leaves some device short of its last op, which RunInto reports.
  const size_t total = order.steps_.size();

  // One message of `route` ending at `end`: its arrival.
  auto send = [&](const Route& route, Nanos end) {
    if (route.link < 0) return end;
    Nanos& free_at = link_free[route.link];
    const Nanos leave = std::max(end, free_at);
    free_at = leave + route.occupy;
    return leave + route.occupy + route.latency;
  };

  // The clock is read once every kDeadlineCheckOps ops (as in the worklist
  // loop, a shorter run never reads it).
  for (size_t i = 0; i < total; next_check += kDeadlineCheckOps) {
    if (i > 0 && has_deadline && SimOptions::Clock::now() >= options.deadline) {
      out.outcome = Outcome::Interrupted;
      return;
    }
    const size_t stop = std::min(total, next_check);
    for (; i < stop; ++i) {
      const ExecutionOrder::Step& op = steps[i];
      const int d = op.device;
      DevState& st = dev[d];
      DeviceStats& ds = stats[d];
      const size_t pc = st.pc++;
      const int s = op.stage;
      const size_t key = static_cast<size_t>(op.mb) * ns + static_cast<size_t>(s);
      KeyState& ks = key_state[key];
      const StageRun& sr = stage_run[s];

      Nanos ready;
      if (op.kind == OpKind::F) {
        ready = ks.fwd_ready;
      } else if (op.kind == OpKind::W) {
        ready = ks.b_done;
      } else {
        ready = std::max(ks.f_done, ks.bwd_ready);
      }
      // The backward's share of its pair's saving is left for it by the F
      // (as the worklist loop reads it when the op before was paired).
      Nanos save = st.pair_save;
      st.pair_save = 0;
      if (op.paired && pc + 1 < st.n) [[unlikely]] {
        const Op& next = st.ops[pc + 1];
        const KeyState& nks = key_state[static_cast<size_t>(next.mb.value) * ns + next.stage.value];
        const bool same = next.stage.value == op.stage && next.mb.value == op.mb;
        ready =
            same ? std::max(ready, nks.bwd_ready) : std::max({ready, nks.f_done, nks.bwd_ready});
        save = PairSaving(spec, s, next, &st.pair_save);
      }

      const Nanos free = st.free;
      const Nanos start = std::max(free, ready);
      // The part of a wait spent on a message in flight, as the worklist
      // loop counts it.
      if (ready > free) {
        ds.comm_wait += ready - std::max(SentAt(key_state, op.kind, key, s, last_stage), free);
      }
      Nanos end, stream_free;
      Bytes during;
      switch (op.kind) {
        case OpKind::F: {
          end = start + sr.forward - save;
          during = st.mem + sr.f_during;
          st.mem += sr.activation;
          ds.peak_inflight = std::max(ds.peak_inflight, ++st.inflight);
          ks.f_done = end;
          stream_free = end;
          if (sr.fwd.exists) {
            const Nanos arrive = send(sr.fwd, end);
            KeyState& to = key_state[key + 1];
            to.fwd_ready = arrive;
            if (blocking) stream_free = std::max(stream_free, arrive);
          }
          break;
        }
        case OpKind::B:
        case OpKind::I: {
          const bool fused = op.kind == OpKind::B;
          end = start + (fused ? sr.b_dur : sr.i_dur) - save;
          during = st.mem + sr.b_transient;
          ds.recompute += sr.recompute;
          --st.inflight;
          ks.b_done = end;
          st.mem -= fused ? sr.activation : sr.i_release;
          stream_free = end;
          if (sr.bwd.exists) {
            const Nanos arrive = send(sr.bwd, end);
            KeyState& to = key_state[key - 1];
            to.bwd_ready = arrive;
            if (blocking) stream_free = std::max(stream_free, arrive);
          }
          break;
        }
        default:  // W
          end = start + sr.w_dur - save;
          during = st.mem + sr.b_transient;
          st.mem -= sr.w_release;
          stream_free = end;
          break;
      }
      if (pc == 0) ds.first_start = start;
      ds.busy += end - start;
      if (during > ds.peak_memory) {
        ds.peak_memory = during;
        ds.peak_time = start;
      }
      ds.comm_blocked += stream_free - end;
      ds.last_end = end;
      if (track_tail && (op.kind == OpKind::B || op.kind == OpKind::W)) {
        grad_op_[s] = {start, end};
      }
      st.free = stream_free;
    }
  }
}

}  // namespace ppb
