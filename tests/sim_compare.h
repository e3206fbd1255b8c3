// RequireSame: two simulation results agree on every figure (outcome,
// makespan, each device's counters, per-op timings, transfers, stuck ops).
// Catch2 assertions: include only from test files.
#pragma once

#include <catch2/catch.hpp>

#include "core/engine.h"

namespace ppb {

inline void RequireSame(const SimResult& a, const SimResult& b) {
  REQUIRE(a.outcome == b.outcome);
  REQUIRE(a.makespan == b.makespan);
  REQUIRE(a.devices.size() == b.devices.size());
  for (size_t d = 0; d < a.devices.size(); ++d) {
    const DeviceStats& x = a.devices[d];
    const DeviceStats& y = b.devices[d];
    INFO("device " << d);
    REQUIRE(x.busy == y.busy);
    REQUIRE(x.recompute == y.recompute);
    REQUIRE(x.comm_blocked == y.comm_blocked);
    REQUIRE(x.comm_wait == y.comm_wait);
    REQUIRE(x.idle == y.idle);
    REQUIRE(x.first_start == y.first_start);
    REQUIRE(x.last_end == y.last_end);
    REQUIRE(x.peak_memory == y.peak_memory);
    REQUIRE(x.peak_time == y.peak_time);
    REQUIRE(x.peak_inflight == y.peak_inflight);
    REQUIRE(x.static_memory == y.static_memory);
    REQUIRE(x.capacity == y.capacity);
    REQUIRE(x.oom == y.oom);
  }
  REQUIRE(a.breakdown.bottleneck == b.breakdown.bottleneck);
  REQUIRE(a.breakdown.ideal == b.breakdown.ideal);
  REQUIRE(a.breakdown.imbalance == b.breakdown.imbalance);
  REQUIRE(a.breakdown.recompute == b.breakdown.recompute);
  REQUIRE(a.breakdown.communication == b.breakdown.communication);
  REQUIRE(a.breakdown.warmup_drain == b.breakdown.warmup_drain);
  REQUIRE(a.timings.size() == b.timings.size());
  for (size_t d = 0; d < a.timings.size(); ++d) {
    REQUIRE(a.timings[d].size() == b.timings[d].size());
    for (size_t k = 0; k < a.timings[d].size(); ++k) {
      REQUIRE(a.timings[d][k].start == b.timings[d][k].start);
      REQUIRE(a.timings[d][k].end == b.timings[d][k].end);
    }
  }
  REQUIRE(a.transfers.size() == b.transfers.size());
  for (size_t t = 0; t < a.transfers.size(); ++t) {
    REQUIRE(a.transfers[t].producer == b.transfers[t].producer);
    REQUIRE(a.transfers[t].send == b.transfers[t].send);
    REQUIRE(a.transfers[t].arrive == b.transfers[t].arrive);
  }
  REQUIRE(a.stuck == b.stuck);
}

}  // namespace ppb
