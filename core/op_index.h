// Internal: maps (kind, stage, microbatch) to the op's position in a program,
// shared by validation and the critical path. Not part of the public API.
#pragma once

#include <cstdint>
#include <vector>

#include "core/program.h"
#include "core/spec.h"

namespace ppb::internal {

// Vertex numbering: device d's k-th op is vertex offset[d] + k.
struct OpIndex {
  std::vector<std::int32_t> offset;  // size p + 1
  std::vector<std::int32_t> vertex;  // [(s*m + j)*4 + kind] -> vertex or -1
  int m = 0;

  static OpIndex Build(const PipelineSpec& spec, const Program& program) {
    OpIndex ix;
    ix.m = spec.m;
    ix.offset.assign(program.ops.size() + 1, 0);
    for (size_t d = 0; d < program.ops.size(); ++d) {
      ix.offset[d + 1] =
          ix.offset[d] + static_cast<std::int32_t>(program.ops[d].size());
    }
    ix.vertex.assign(static_cast<size_t>(spec.num_stages()) * spec.m * 4, -1);
    for (size_t d = 0; d < program.ops.size(); ++d) {
      for (size_t k = 0; k < program.ops[d].size(); ++k) {
        const Op& op = program.ops[d][k];
        ix.vertex[ix.Slot(op.kind, op.stage.value, op.mb.value)] =
            ix.offset[d] + static_cast<std::int32_t>(k);
      }
    }
    return ix;
  }
  size_t Slot(OpKind kind, int s, int j) const {
    return (static_cast<size_t>(s) * m + j) * 4 + static_cast<size_t>(kind);
  }
  std::int32_t Find(OpKind kind, int s, int j) const {
    return vertex[Slot(kind, s, j)];
  }
  // The op that produces the gradient for stage s's backward: B or I of s.
  std::int32_t Backward(int s, int j) const {
    const std::int32_t b = Find(OpKind::B, s, j);
    return b >= 0 ? b : Find(OpKind::I, s, j);
  }
};

// Calls edge(u, v) for every data dependency u -> v of op v = (d, k):
// F(s-1,j) -> F(s,j); F(s,j) -> B/I(s,j); B/I(s+1,j) -> B/I(s,j);
// I(s,j) -> W(s,j). Missing producers (invalid programs) are skipped.
template <class Fn>
void ForEachDependency(const PipelineSpec& spec, const OpIndex& ix,
                       const Op& op, std::int32_t v, Fn&& edge) {
  const int s = op.stage.value, j = op.mb.value;
  auto add = [&](std::int32_t u) {
    if (u >= 0) edge(u, v);
  };
  switch (op.kind) {
    case OpKind::F:
      if (s > 0) add(ix.Find(OpKind::F, s - 1, j));
      break;
    case OpKind::B:
    case OpKind::I:
      add(ix.Find(OpKind::F, s, j));
      if (s + 1 < spec.num_stages()) add(ix.Backward(s + 1, j));
      break;
    case OpKind::W:
      add(ix.Find(OpKind::I, s, j));
      break;
  }
}

// ForEachDependency of device d's k-th op (vertex v), plus, for an F paired
// with the next op (Op::paired), that op's dependencies as edges into v: the
// overlapped pair starts only when both halves are ready.
template <class Fn>
void ForEachOpDependency(const PipelineSpec& spec, const OpIndex& ix,
                         const std::vector<Op>& device_ops, size_t k,
                         std::int32_t v, Fn&& edge) {
  ForEachDependency(spec, ix, device_ops[k], v, edge);
  if (device_ops[k].paired && k + 1 < device_ops.size()) {
    ForEachDependency(spec, ix, device_ops[k + 1], v + 1,
                      [&](std::int32_t u, std::int32_t) {
                        if (u != v) edge(u, v);
                      });
  }
}

}  // namespace ppb::internal
