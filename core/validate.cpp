#include "core/validate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "core/cost.h"
#include "core/op_index.h"

namespace ppb {
namespace {

std::string Str(long long x) { return std::to_string(x); }

// Built only for a program that has a cycle, to name it (ValidateProgram
// first orders the ops by Kahn's rule on plain arrays: a program of
// thousands of ops is validated on every Prepare, e.g. each step of
// calibrate's fit).
using Graph = boost::compressed_sparse_row_graph<boost::directedS>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

// DFS visitor that records tree parents and the first back edge (a cycle).
struct CycleFinder : boost::default_dfs_visitor {
  std::vector<Vertex>* parent;
  std::pair<Vertex, Vertex>* back;
  bool* found;
  void tree_edge(boost::graph_traits<Graph>::edge_descriptor e,
                 const Graph& g) const {
    (*parent)[boost::target(e, g)] = boost::source(e, g);
  }
  void back_edge(boost::graph_traits<Graph>::edge_descriptor e,
                 const Graph& g) const {
    if (!*found) {
      *found = true;
      *back = {boost::source(e, g), boost::target(e, g)};
    }
  }
};

// The engine adds times and bytes in int64. Every time it computes is at
// most one iteration's work done one op after another: every op and every
// transfer (at the slowest link) of every micro-batch; every memory figure
// is at most every stage's bytes with all micro-batches in flight. Both are
// summed exactly (128 bits) and must stay within 2^62, so no engine sum can
// overflow. The config loader bounds each value (apps/input/
// config_reader.h), so only a huge micro-batch count reaches this.
Status CheckTotals(const PipelineSpec& spec) {
  constexpr Int128 kLimit = Int128{1} << 62;
  Nanos latency = 0;
  BytesPerSec bandwidth = 0;  // the slowest finite one; 0: all infinite
  for (const Link& l : spec.link_matrix) {
    latency = std::max(latency, l.latency);
    if (l.bandwidth > 0 && (bandwidth == 0 || l.bandwidth < bandwidth)) {
      bandwidth = l.bandwidth;
    }
  }
  Int128 work = 0, bytes = 0;
  for (const StageCost& c : spec.stages) {
    const Int128 transfer = latency + LinkOccupancyExact(c.output_bytes, bandwidth);
    work += spec.m * (static_cast<Int128>(c.forward) + c.backward_input +
                      c.backward_weight + c.recompute + 2 * transfer);
    bytes += static_cast<Int128>(c.static_memory) + c.forward_transient +
             c.backward_transient +
             spec.m * (static_cast<Int128>(c.activation) + 2 * c.output_bytes);
  }
  if (work > kLimit || bytes > kLimit) {
    std::ostringstream got;
    got << std::setprecision(3) << "m = " << spec.m << " with "
        << static_cast<double>(work) / 1e9 << " s of work and "
        << static_cast<double>(bytes) << " bytes";
    return Error{"pipeline.microbatches",
                 "must keep one iteration's work (every op and transfer of "
                 "every micro-batch) under 2^62 ns (146 years) and its "
                 "memory under 2^62 bytes; got " + got.str()};
  }
  return {};
}

}  // namespace

Status ValidateSpec(const PipelineSpec& spec) {
  if (spec.p < 1 || spec.v < 1 || spec.m < 1) {
    return Error{"pipeline", "p, v and m must be >= 1; got p=" + Str(spec.p) +
                                 ", v=" + Str(spec.v) + ", m=" + Str(spec.m)};
  }
  const size_t stages = static_cast<size_t>(spec.p) * spec.v;
  if (spec.stages.size() != stages || spec.stage_device.size() != stages) {
    return Error{"pipeline", "spec needs " + Str(static_cast<long long>(stages)) +
                                 " stages; got " +
                                 Str(static_cast<long long>(spec.stages.size()))};
  }
  if (spec.device_capacity.size() != static_cast<size_t>(spec.p) ||
      spec.link_matrix.size() != static_cast<size_t>(spec.p) * spec.p) {
    return Error{"cluster", "spec needs " + Str(spec.p) +
                                " devices and a " + Str(spec.p) + "x" +
                                Str(spec.p) + " link matrix"};
  }
  for (size_t s = 0; s < stages; ++s) {
    const int d = spec.stage_device[s].value;
    if (d < 0 || d >= spec.p) {
      return Error{"placement", "stage " + Str(static_cast<long long>(s)) +
                                    " is placed on device " + Str(d) +
                                    "; expected a device in [0, " +
                                    Str(spec.p - 1) + "]"};
    }
    const StageCost& c = spec.stages[s];
    if (c.forward < 0 || c.backward_input < 0 || c.backward_weight < 0 ||
        c.recompute < 0 || c.static_memory < 0 || c.activation < 0 ||
        c.forward_transient < 0 || c.backward_transient < 0 ||
        c.output_bytes < 0) {
      return Error{"model", "stage " + Str(static_cast<long long>(s)) +
                                " has a negative time or memory value"};
    }
    if (c.input_grad_release < 0 || c.input_grad_release > c.activation) {
      return Error{"model", "stage " + Str(static_cast<long long>(s)) +
                                " frees " + Str(c.input_grad_release) +
                                " bytes at the end of I; expected 0 to its "
                                "activation, " + Str(c.activation)};
    }
  }
  for (const Link& l : spec.link_matrix) {
    if (l.latency < 0 || l.bandwidth < 0) {
      return Error{"cluster.link", "latency and bandwidth must be >= 0"};
    }
  }
  return CheckTotals(spec);
}

Status ValidateProgram(const PipelineSpec& spec, const Program& program) {
  if (program.ops.size() != static_cast<size_t>(spec.p)) {
    return Error{"schedule", "program has " +
                                 Str(static_cast<long long>(program.ops.size())) +
                                 " ranks; expected " + Str(spec.p)};
  }
  const int stages = spec.num_stages();
  // Range and placement of every op.
  for (int d = 0; d < spec.p; ++d) {
    for (const Op& op : program.ops[d]) {
      const int s = op.stage.value, j = op.mb.value;
      if (s < 0 || s >= stages || j < 0 || j >= spec.m) {
        return Error{"schedule",
                     "rank " + Str(d) + " runs " + ActionString(op) +
                         "; expected stages in [0, " + Str(stages - 1) +
                         "] and microbatches in [0, " + Str(spec.m - 1) + "]"};
      }
      if (spec.stage_device[s].value != d) {
        return Error{"schedule", "rank " + Str(d) + " runs " +
                                     ActionString(op) + " but stage " + Str(s) +
                                     " is placed on rank " +
                                     Str(spec.stage_device[s].value)};
      }
    }
  }
  // An overlapped pair is an F followed by a B or I (Op::paired).
  for (int d = 0; d < spec.p; ++d) {
    const std::vector<Op>& ops = program.ops[d];
    for (size_t k = 0; k < ops.size(); ++k) {
      if (!ops[k].paired) continue;
      if (ops[k].kind != OpKind::F || k + 1 == ops.size() ||
          (ops[k + 1].kind != OpKind::B && ops[k + 1].kind != OpKind::I) ||
          ops[k + 1].paired) {
        return Error{"schedule",
                     "rank " + Str(d) + " overlaps " + ActionString(ops[k]) +
                         " with the next op; expected an F followed by a B "
                         "or I"};
      }
    }
  }
  // Every op exactly once: F once, and B once xor (I once and W once).
  const size_t keys = static_cast<size_t>(stages) * spec.m;
  std::vector<std::array<int, 4>> count(keys, {0, 0, 0, 0});
  for (int d = 0; d < spec.p; ++d) {
    for (const Op& op : program.ops[d]) {
      ++count[static_cast<size_t>(op.stage.value) * spec.m + op.mb.value]
             [static_cast<int>(op.kind)];
    }
  }
  for (int s = 0; s < stages; ++s) {
    for (int j = 0; j < spec.m; ++j) {
      const auto& c = count[static_cast<size_t>(s) * spec.m + j];
      const int f = c[0], b = c[1], i = c[2], w = c[3];
      const bool fused = b == 1 && i == 0 && w == 0;
      const bool split = b == 0 && i == 1 && w == 1;
      if (f == 1 && (fused || split)) continue;
      const std::string at =
          " for stage " + Str(s) + ", microbatch " + Str(j);
      if (f != 1) {
        return Error{"schedule", "expected exactly one F" + at + "; got " +
                                     Str(f)};
      }
      if (!fused && !split) {
        return Error{"schedule", "expected exactly one B, or one I and one W" +
                                     at + "; got " + Str(b) + " B, " + Str(i) +
                                     " I, " + Str(w) + " W"};
      }
    }
  }

  // Deadlock: program order plus data dependencies must be acyclic.
  const internal::OpIndex ix = internal::OpIndex::Build(spec, program);
  const size_t n = static_cast<size_t>(ix.offset.back());
  std::vector<std::pair<std::int32_t, std::int32_t>> edges;
  edges.reserve(3 * n);
  std::vector<Op> ops_by_vertex(ix.offset.back());
  std::vector<int> device_of(ix.offset.back());
  for (int d = 0; d < spec.p; ++d) {
    for (size_t k = 0; k < program.ops[d].size(); ++k) {
      const std::int32_t v = ix.offset[d] + static_cast<std::int32_t>(k);
      ops_by_vertex[v] = program.ops[d][k];
      device_of[v] = d;
      if (k > 0) edges.emplace_back(v - 1, v);
      internal::ForEachOpDependency(spec, ix, program.ops[d], k, v,
                                    [&](std::int32_t u, std::int32_t w) {
                                      edges.emplace_back(u, w);
                                    });
    }
  }
  // Kahn's order over compressed rows: every op reached means no cycle (the
  // common case, cheap); otherwise a depth-first search names one.
  {
    std::vector<std::int32_t> start(n + 1, 0), indegree(n, 0), next(edges.size());
    for (const auto& [u, w] : edges) {
      ++start[static_cast<size_t>(u) + 1];
      ++indegree[static_cast<size_t>(w)];
    }
    for (size_t v = 0; v < n; ++v) start[v + 1] += start[v];
    std::vector<std::int32_t> fill(start.begin(), start.end() - 1);
    for (const auto& [u, w] : edges) next[static_cast<size_t>(fill[static_cast<size_t>(u)]++)] = w;
    std::vector<std::int32_t> ready;
    ready.reserve(n);
    for (size_t v = 0; v < n; ++v) {
      if (indegree[v] == 0) ready.push_back(static_cast<std::int32_t>(v));
    }
    for (size_t head = 0; head < ready.size(); ++head) {
      const auto u = static_cast<size_t>(ready[head]);
      for (std::int32_t e = start[u]; e < start[u + 1]; ++e) {
        const auto w = static_cast<size_t>(next[static_cast<size_t>(e)]);
        if (--indegree[w] == 0) ready.push_back(static_cast<std::int32_t>(w));
      }
    }
    if (ready.size() == n) return {};
  }
  const Graph g(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), n);
  std::vector<Vertex> parent(boost::num_vertices(g));
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  std::pair<Vertex, Vertex> back{0, 0};
  bool found = false;
  CycleFinder vis;
  vis.parent = &parent;
  vis.back = &back;
  vis.found = &found;
  boost::depth_first_search(g, boost::visitor(vis));
  if (found) {
    // back = (u -> v) with v an ancestor of u: the cycle is v ... u -> v.
    std::vector<Vertex> cycle;
    for (Vertex x = back.first; x != back.second; x = parent[x]) {
      cycle.push_back(x);
    }
    cycle.push_back(back.second);
    std::string text;
    const size_t shown = std::min<size_t>(cycle.size(), 12);
    for (size_t i = 0; i < shown; ++i) {
      const Vertex x = cycle[cycle.size() - 1 - i];
      if (i) text += " -> ";
      text += ActionString(ops_by_vertex[x]) + "@rank" + Str(device_of[x]);
    }
    if (shown < cycle.size()) {
      text += " -> ... (" + Str(static_cast<long long>(cycle.size())) + " ops)";
    }
    text += " -> " + ActionString(ops_by_vertex[back.second]);
    return Error{"schedule", "the program deadlocks: in this cycle each op "
                             "must finish before the next can start (program "
                             "order or data): " +
                                 text};
  }
  return {};
}

}  // namespace ppb
