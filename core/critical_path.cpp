// Critical path: the chain of ops and message waits that sets the iteration
// time. Each op's simulated end equals the longest path to it through the
// dependency graph when edges carry the simulated delays (message transit,
// blocking sends) and vertices their durations, because the engine starts an
// op at the latest of its predecessors' (end + delay). So the longest path
// (Boost.Graph's dag_shortest_paths on negated weights) ending at the
// last-finishing op is the critical path.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dag_shortest_paths.hpp>
#include <algorithm>
#include <limits>
#include <vector>

#include "core/engine.h"
#include "core/op_index.h"

namespace ppb {

std::vector<CriticalStep> CriticalPath(const PipelineSpec& spec,
                                       const Program& program,
                                       const SimResult& result) {
  using Graph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                            boost::no_property,
                            boost::property<boost::edge_weight_t, Nanos>>;
  using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

  const internal::OpIndex ix = internal::OpIndex::Build(spec, program);
  const int n = ix.offset.back();
  const Vertex source = static_cast<Vertex>(n);
  Graph g(static_cast<size_t>(n) + 1);

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
  auto dur = [&](int v) { return timing[v].end - timing[v].start; };
  // Weight of u -> v = -(delay + duration of v): shortest = longest path.
  for (int v = 0; v < n; ++v) {
    boost::add_edge(source, v, -dur(v), g);  // any op may start at time 0
  }
  for (int d = 0; d < spec.p; ++d) {
    for (size_t k = 1; k < program.ops[d].size(); ++k) {
      const int v = ix.offset[d] + static_cast<int>(k);
      // Program order: a blocking send keeps the stream until arrival.
      Nanos ready = timing[v - 1].end;
      if (spec.comm == CommMode::Blocking && arrival[v - 1] >= 0) {
        ready = std::max(ready, arrival[v - 1]);
      }
      boost::add_edge(v - 1, v, -((ready - timing[v - 1].end) + dur(v)), g);
    }
    for (size_t k = 0; k < program.ops[d].size(); ++k) {
      const int v = ix.offset[d] + static_cast<int>(k);
      internal::ForEachDependency(
          spec, ix, op_of[v], v, [&](std::int32_t u, std::int32_t w) {
            Nanos ready = timing[u].end;
            if (device_of[u] != device_of[w] && arrival[u] >= 0) {
              ready = arrival[u];
            }
            boost::add_edge(u, w, -((ready - timing[u].end) + dur(w)), g);
          });
    }
  }

  std::vector<Nanos> dist(static_cast<size_t>(n) + 1);
  std::vector<Vertex> pred(static_cast<size_t>(n) + 1);
  boost::dag_shortest_paths(
      g, source,
      boost::distance_map(dist.data())
          .predecessor_map(pred.data())
          .distance_inf(std::numeric_limits<Nanos>::max())
          .distance_zero(Nanos{0}));

  // The op with the latest end (ties: the lowest vertex).
  int last = -1;
  for (int v = 0; v < n; ++v) {
    if (last < 0 || timing[v].end > timing[last].end) last = v;
  }
  std::vector<int> chain;
  for (Vertex x = last; last >= 0 && x != source; x = pred[x]) {
    chain.push_back(static_cast<int>(x));
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

}  // namespace ppb
