#include "core/engine.h"

#include <algorithm>

#include "core/breakdown.h"
#include "core/cost.h"

namespace ppb {
namespace {

constexpr Nanos kUnset = -1;


template <class T>
void Fill(std::vector<T>& v, size_t n, T value) {
  v.assign(n, value);
}

}  // namespace

double SimResult::bubble_fraction() const {
  if (makespan <= 0 || devices.empty()) return 0.0;
  long double idle = 0;
  for (const auto& d : devices) idle += static_cast<long double>(d.idle);
  return static_cast<double>(idle / (static_cast<long double>(makespan) *
                                     static_cast<long double>(devices.size())));
}

SimResult Engine::Run(const PipelineSpec& spec, const Program& program,
                      const SimOptions& options) {
  SimResult out;
  RunInto(spec, program, options, out);
  return out;
}

// One function of about 240 lines on purpose: it is the event loop every
// simulation and every search evaluation runs (bench/bench_engine.cpp), and
// its state (ready times, link queues, memory counters) lives in locals the
// compiler keeps in registers.
void Engine::RunInto(const PipelineSpec& spec, const Program& program,
                     const SimOptions& options, SimResult& out) {
  const int p = spec.p;
  const int m = spec.m;
  const int num_stages = spec.num_stages();
  const size_t keys = static_cast<size_t>(num_stages) * m;

  Fill(fwd_ready_, keys, kUnset);
  Fill(bwd_ready_, keys, kUnset);
  Fill(f_done_, keys, kUnset);
  Fill(i_done_, keys, kUnset);
  Fill(fwd_sent_, keys, kUnset);
  Fill(bwd_sent_, keys, kUnset);
  // Stage 0's inputs are there from the start; the last stage's gradient is
  // its own loss.
  for (int j = 0; j < m; ++j) {
    fwd_ready_[j] = 0;
    fwd_sent_[j] = 0;
    const size_t last = static_cast<size_t>(num_stages - 1) * m + j;
    bwd_ready_[last] = 0;
    bwd_sent_[last] = 0;
  }
  Fill(link_free_, static_cast<size_t>(p) * p, Nanos{0});
  Fill(pc_, static_cast<size_t>(p), size_t{0});
  Fill(dev_free_, static_cast<size_t>(p), Nanos{0});
  Fill(mem_now_, static_cast<size_t>(p), Bytes{0});
  Fill(inflight_, static_cast<size_t>(p), 0);
  Fill(pair_save_, static_cast<size_t>(p), Nanos{0});
  Fill(queued_, static_cast<size_t>(p), char{1});
  worklist_.clear();
  for (int d = p - 1; d >= 0; --d) worklist_.push_back(d);

  out.outcome = Outcome::Ok;
  out.makespan = 0;
  out.devices.assign(p, DeviceStats{});
  out.transfers.clear();
  out.stuck.clear();
  out.timings.resize(options.record_ops ? p : 0);
  for (int d = 0; options.record_ops && d < p; ++d) {
    out.timings[d].assign(program.ops[d].size(), OpTiming{});
  }
  out.memory.resize(options.record_memory ? p : 0);
  for (auto& samples : out.memory) samples.clear();

  for (int s = 0; s < num_stages; ++s) {
    const int d = spec.stage_device[s].value;
    mem_now_[d] += spec.stages[s].static_memory;
  }
  for (int d = 0; d < p; ++d) {
    DeviceStats& ds = out.devices[d];
    ds.static_memory = mem_now_[d];
    ds.peak_memory = mem_now_[d];
    ds.capacity = spec.device_capacity[d];
    if (options.record_memory) out.memory[d].push_back({0, mem_now_[d]});
  }

  const bool blocking = spec.comm == CommMode::Blocking;

  // Link occupancy of the message from stage s to s+1 (activation) and back
  // (gradient, same size): computed once per run, not per message.
  occupancy_.resize(num_stages);
  for (int s = 0; s + 1 < num_stages; ++s) {
    const int a = spec.stage_device[s].value, b = spec.stage_device[s + 1].value;
    const Bytes bytes = spec.stages[s].output_bytes;
    occupancy_[s] = {LinkOccupancy(bytes, spec.link_matrix[static_cast<size_t>(a) * p + b].bandwidth),
                     LinkOccupancy(bytes, spec.link_matrix[static_cast<size_t>(b) * p + a].bandwidth)};
  }

  // Sends one message from `from` (ending at `end`) to the device of stage
  // `to_stage`; returns the arrival time and the sender's stream release.
  auto send = [&](int from, int to_stage, Nanos end, Bytes bytes, Nanos occupy,
                  const Op& producer, Nanos& arrive) {
    const int to = spec.stage_device[to_stage].value;
    if (to == from) {
      arrive = end;
      return;
    }
    const Link& link = spec.link_matrix[static_cast<size_t>(from) * p + to];
    Nanos& free_at = link_free_[static_cast<size_t>(from) * p + to];
    const Nanos leave = std::max(end, free_at);
    free_at = leave + occupy;
    arrive = leave + occupy + link.latency;
    if (options.record_ops) {
      out.transfers.push_back(
          Transfer{DeviceId(from), DeviceId(to), producer, leave, arrive, bytes});
    }
    if (!queued_[to]) {
      queued_[to] = 1;
      worklist_.push_back(to);
    }
  };

  while (!worklist_.empty()) {
    const int d = worklist_.back();
    worklist_.pop_back();
    queued_[d] = 0;
    const std::vector<Op>& ops = program.ops[d];
    DeviceStats& ds = out.devices[d];
    size_t& pc = pc_[d];
    while (pc < ops.size()) {
      const Op& op = ops[pc];
      const int s = op.stage.value;
      const size_t key = static_cast<size_t>(s) * m + op.mb.value;
      const StageCost& cost = spec.stages[s];
      Nanos ready = 0, sent = 0;
      switch (op.kind) {
        case OpKind::F:
          ready = fwd_ready_[key];
          sent = fwd_sent_[key];
          break;
        case OpKind::B:
        case OpKind::I:
          if (f_done_[key] == kUnset || bwd_ready_[key] == kUnset) {
            ready = kUnset;
          } else {
            ready = std::max(f_done_[key], bwd_ready_[key]);
            sent = bwd_ready_[key] >= f_done_[key] ? bwd_sent_[key] : ready;
          }
          break;
        case OpKind::W:
          ready = i_done_[key];
          sent = ready;
          break;
      }
      if (ready == kUnset) break;
      // An overlapped F+B (Op::paired) starts when its backward is ready
      // too; the backward then runs right after the F, both shortened by
      // their shares of the saving (set on the F, applied to both).
      Nanos save = 0;
      if (op.paired && pc + 1 < ops.size()) {
        const Op& next = ops[pc + 1];
        const size_t nkey = static_cast<size_t>(next.stage.value) * m + next.mb.value;
        if (f_done_[nkey] == kUnset && !(next.stage == op.stage && next.mb == op.mb)) break;
        if (bwd_ready_[nkey] == kUnset) break;
        if (!(next.stage == op.stage && next.mb == op.mb)) {
          ready = std::max({ready, f_done_[nkey], bwd_ready_[nkey]});
        } else {
          ready = std::max(ready, bwd_ready_[nkey]);
        }
        const StageCost& nc = spec.stages[next.stage.value];
        const Nanos bdur = nc.recompute + nc.backward_input +
                           (next.kind == OpKind::B ? nc.backward_weight : 0);
        const Nanos shorter = std::min(cost.forward, bdur);
        const Nanos total =
            static_cast<Nanos>(static_cast<Int128>(shorter) * spec.fb_overlap_ppm / 1'000'000);
        const Nanos both = cost.forward + bdur;
        // The F's share of the saving, in proportion to its time.
        save = both > 0 ? static_cast<Nanos>(static_cast<Int128>(total) * cost.forward / both) : 0;
        pair_save_[d] = total - save;
      } else if (pc > 0 && ops[pc - 1].paired) {
        save = pair_save_[d];
      }

      const Nanos free = dev_free_[d];
      const Nanos start = std::max(free, ready);
      if (ready > free) {
        // The part of this wait spent on a message in flight.
        ds.comm_wait += std::min(ready - free, ready - std::max(sent, free));
      }
      Nanos rc = 0, dur = 0;
      Bytes during = mem_now_[d];
      switch (op.kind) {
        case OpKind::F:
          dur = cost.forward;
          during += cost.activation + cost.forward_transient;
          break;
        case OpKind::B:
          rc = cost.recompute;
          dur = rc + cost.backward_input + cost.backward_weight;
          during += cost.backward_transient;
          break;
        case OpKind::I:
          rc = cost.recompute;
          dur = rc + cost.backward_input;
          during += cost.backward_transient;
          break;
        case OpKind::W:
          dur = cost.backward_weight;
          during += cost.backward_transient;
          break;
      }
      dur -= save;
      const Nanos end = start + dur;
      if (pc == 0) ds.first_start = start;
      ds.last_end = end;
      ds.busy += dur;
      ds.recompute += rc;
      if (during > ds.peak_memory) {
        ds.peak_memory = during;
        ds.peak_time = start;
      }
      if (options.record_memory) out.memory[d].push_back({start, during});
      if (options.record_ops) out.timings[d][pc] = OpTiming{start, end, rc};

      Nanos stream_free = end;
      Nanos arrive = 0;
      switch (op.kind) {
        case OpKind::F: {
          mem_now_[d] += cost.activation;
          ds.peak_inflight = std::max(ds.peak_inflight, ++inflight_[d]);
          f_done_[key] = end;
          if (s + 1 < num_stages) {
            send(d, s + 1, end, cost.output_bytes, occupancy_[s].first, op, arrive);
            fwd_ready_[key + m] = arrive;
            fwd_sent_[key + m] = end;
            if (blocking) stream_free = std::max(stream_free, arrive);
          }
          break;
        }
        case OpKind::B:
        case OpKind::I: {
          --inflight_[d];
          if (op.kind == OpKind::B) {
            mem_now_[d] -= cost.activation;
          } else {
            mem_now_[d] -= cost.input_grad_release;
            i_done_[key] = end;
          }
          if (s > 0) {
            // The gradient w.r.t. stage s's input has stage s-1's output size.
            send(d, s - 1, end, spec.stages[s - 1].output_bytes,
                 occupancy_[s - 1].second, op, arrive);
            bwd_ready_[key - m] = arrive;
            bwd_sent_[key - m] = end;
            if (blocking) stream_free = std::max(stream_free, arrive);
          }
          break;
        }
        case OpKind::W:
          mem_now_[d] -= cost.activation - cost.input_grad_release;
          break;
      }
      ds.comm_blocked += stream_free - end;
      dev_free_[d] = stream_free;
      if (options.record_memory) out.memory[d].push_back({end, mem_now_[d]});
      ++pc;
    }
  }

  Nanos makespan = 0;
  for (int d = 0; d < p; ++d) {
    if (pc_[d] < program.ops[d].size()) {
      out.outcome = Outcome::Deadlock;
      out.stuck.push_back(program.ops[d][pc_[d]]);
    }
    makespan = std::max(makespan, dev_free_[d]);
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
  const BubbleParts parts = DeviceBubbleParts(
      out.devices[bottleneck], makespan, MeanUsefulCompute(out.devices));
  BubbleBreakdown& br = out.breakdown;
  br.bottleneck = bottleneck;
  br.ideal = parts[BubbleTerm::Ideal];
  br.imbalance = parts[BubbleTerm::Imbalance];
  br.recompute = parts[BubbleTerm::Recompute];
  br.communication = parts[BubbleTerm::Communication];
  br.warmup_drain = parts[BubbleTerm::WarmupDrain];
}

}  // namespace ppb
