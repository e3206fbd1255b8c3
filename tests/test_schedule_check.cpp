// ScheduleInfo::check, the refusals of a generator without its program
// (loading a config checks each schedule choice with it: generating is
// O(p v m), 2.4 million ops at 10^5 micro-batches). Its contract is
// "check is ok exactly when generate is, with the same key and words": here
// both are run over every shape and parameter in a grid around each rule's
// edges (p, v, m, group, flavor, placement) and must agree on each.
#include <catch2/catch.hpp>
#include <string>

#include "core/program.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

PipelineSpec GridShape(int p, int v, int m, StagePlacement placement) {
  PipelineSpec spec;
  spec.p = p;
  spec.v = v;
  spec.m = m;
  spec.placement = placement;
  spec.stage_device = placement == StagePlacement::V && v == 2
                          ? StagePlacementDevices(StagePlacement::V, p, v)
                          : DefaultPlacement(p, v);
  return spec;
}

TEST_CASE("each schedule's check refuses exactly what its generator refuses",
          "[schedules][check]") {
  int with_check = 0;
  for (const ScheduleInfo& info : ScheduleRegistry()) {
    if (info.check == nullptr) continue;
    ++with_check;
    int agreed = 0, refused = 0;
    for (int p = 1; p <= 5; ++p) {
      for (int v = 1; v <= 4; ++v) {
        for (int m = 0; m <= 13; ++m) {
          for (int group = -1; group <= 7; ++group) {
            for (Flavor flavor : {Flavor::Megatron, Flavor::PyTorch}) {
              for (StagePlacement placement : {StagePlacement::Loop, StagePlacement::V}) {
                if (placement == StagePlacement::V && v != 2) continue;
                const PipelineSpec spec = GridShape(p, v, m, placement);
                ScheduleParams params;
                params.flavor = flavor;
                params.group = group;
                INFO(info.name << " p=" << p << " v=" << v << " m=" << m << " group=" << group
                               << " placement=" << StagePlacementName(placement));
                const Status checked = info.check(spec, params);
                const Result<Program> generated = info.generate(spec, params);
                REQUIRE(checked.ok() == generated.ok());
                if (!checked.ok()) {
                  CHECK(checked.error().key == generated.error().key);
                  CHECK(checked.error().message == generated.error().message);
                  ++refused;
                }
                ++agreed;
              }
            }
          }
        }
      }
    }
    INFO(info.name);
    // The grid crosses each schedule's rules: some shapes pass, some not.
    CHECK(refused > 0);
    CHECK(refused < agreed);
  }
  // Every schedule whose refusals depend on the shape alone has one; the
  // adaptive zero-bubble plans (zb-1p, zb-2p, zb-v) simulate to decide.
  CHECK(with_check == 7);
  CHECK(FindSchedule("zb-1p")->check == nullptr);
  CHECK(FindSchedule("1f1b")->check != nullptr);
}

}  // namespace
}  // namespace ppb
