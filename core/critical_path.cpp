// Critical path: the chain of ops and message waits that sets the iteration
// time. The engine starts each op at the latest of its predecessors' ready
// times (program order: the previous op's end, or a blocking send's
// arrival; data edges: the producer's end, or its message's arrival on
// another rank), so each op's simulated start is the longest path to it
// through the dependency graph. Walking back from the last-finishing op to
// a predecessor whose ready time equals the op's start (ties: the lowest
// vertex) until an op starts with none (at time 0) gives such a longest
// path, in time linear in its length.
#include <algorithm>
#include <vector>

#include "core/critical_path.h"
#include "core/engine.h"
#include "core/op_index.h"

namespace ppb {

std::vector<CriticalStep> CriticalPath(const PipelineSpec& spec,
                                       const Program& program,
                                       const SimResult& result) {
  const internal::OpIndex ix = internal::OpIndex::Build(spec, program);
  const int n = ix.offset.back();
  std::vector<OpTiming> timing(n);
  std::vector<int> device_of(n);
  std::vector<Op> op_of(n);
  for (int d = 0; d < spec.p; ++d) {
    for (size_t k = 0; k < program.ops[d].size(); ++k) {
      const int v = ix.offset[d] + static_cast<int>(k);
      timing[v] = result.timings[d][k];
      device_of[v] = d;
      op_of[v] = program.ops[d][k];
    }
  }
  // Arrival time of each message, keyed by its producer.
  std::vector<Nanos> arrival(n, -1);
  for (const Transfer& t : result.transfers) {
    const int u = ix.Find(t.producer.kind, t.producer.stage.value,
                          t.producer.mb.value);
    if (u >= 0) arrival[u] = t.arrive;
  }
  // The op with the latest end (ties: the lowest vertex).
  int last = -1;
  for (int v = 0; v < n; ++v) {
    if (last < 0 || timing[v].end > timing[last].end) last = v;
  }
  std::vector<int> chain;
  for (int v = last; v >= 0;) {
    chain.push_back(v);
    int best = -1;
    Nanos best_ready = -1;
    auto consider = [&](int u, Nanos ready) {
      if (ready > best_ready || (ready == best_ready && u < best)) {
        best = u;
        best_ready = ready;
      }
    };
    const int d = device_of[v];
    if (v > ix.offset[d]) {
      Nanos ready = timing[v - 1].end;
      if (spec.comm == CommMode::Blocking && arrival[v - 1] >= 0) {
        ready = std::max(ready, arrival[v - 1]);
      }
      consider(v - 1, ready);
    }
    const size_t k = static_cast<size_t>(v - ix.offset[d]);
    internal::ForEachOpDependency(
        spec, ix, program.ops[d], k, v, [&](std::int32_t u, std::int32_t w) {
          Nanos ready = timing[u].end;
          if (device_of[u] != device_of[w] && arrival[u] >= 0) ready = arrival[u];
          consider(u, ready);
        });
    // No predecessor holds the op back: it starts the path.
    if (best < 0 || best_ready < timing[v].start || timing[v].start == 0) break;
    v = best;
  }
  std::vector<CriticalStep> steps;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const int v = *it;
    if (!steps.empty()) {
      // A wait between two chain ops is the previous op's message in flight:
      // to another rank, or (same rank) a blocking send holding the stream.
      const int u = *(it - 1);
      if (timing[v].start > timing[u].end && arrival[u] > timing[u].end) {
        steps.push_back(CriticalStep{device_of[u], op_of[u], timing[u].end,
                                     arrival[u], true});
      }
    }
    steps.push_back(CriticalStep{device_of[v], op_of[v], timing[v].start,
                                 timing[v].end, false});
  }
  return steps;
}

CriticalPathSummary SummarizeCriticalPath(const PipelineSpec& spec,
                                          const std::vector<CriticalStep>& path) {
  CriticalPathSummary out;
  if (path.empty()) return out;
  Nanos first = path.front().start, last = path.front().end;
  std::vector<CriticalPathSummary::Stage> by_stage(static_cast<size_t>(spec.num_stages()));
  std::vector<char> seen(by_stage.size(), 0);
  for (const CriticalStep& s : path) {
    first = std::min(first, s.start);
    last = std::max(last, s.end);
    const Nanos t = s.end - s.start;
    if (s.is_transfer) {
      ++out.messages;
      out.message_time += t;
      continue;
    }
    const auto st = static_cast<size_t>(s.op.stage.value);
    if (st >= by_stage.size()) continue;
    CriticalPathSummary::Stage& x = by_stage[st];
    x.stage = s.op.stage.value;
    x.rank = s.device;
    ++x.ops;
    x.time += t;
    out.compute += t;
    seen[st] = 1;
  }
  for (size_t st = 0; st < by_stage.size(); ++st) {
    if (!seen[st]) continue;
    by_stage[st].chunk = ChunkOnRank(spec.stage_device, static_cast<int>(st));
    out.stages.push_back(by_stage[st]);
  }
  std::stable_sort(out.stages.begin(), out.stages.end(),
                   [](const CriticalPathSummary::Stage& a, const CriticalPathSummary::Stage& b) {
                     return a.time > b.time;
                   });
  out.span = last - first;
  out.waits = out.span - out.compute - out.message_time;
  return out;
}

}  // namespace ppb
