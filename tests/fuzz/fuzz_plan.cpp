// libFuzzer harness: `ppb-sim plan` on a whole job file (its plan: block,
// apps/input/config_plan.cpp, search/plan/plan_space.cpp;
// apps/commands/plan_run.cpp),
// read as if it lay in configs/. Any input either plans or is refused with a
// message; a plan keeps its time limit (50 ms, 20 nodes a layout, one
// thread) and counts every combination once: refused, pruned, searched,
// left open or not loaded (issue 48). What it reports is JSON.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "apps/commands/plan_run.h"
#include "apps/output/plan_output.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ppb::PlanOptions options;
  options.overrides.time_limit = 50'000'000;  // 50 ms
  options.node_limit = 20;
  options.threads = 1;
  ppb::Result<ppb::PlanResult> plan = ppb::RunPlan(text, PPB_CONFIGS_DIR "/fuzz.yaml", options);
  if (!plan.ok()) {
    ppb::fuzz::FuzzCheck(!plan.error().message.empty(), "an error has a message");
    return 0;
  }
  std::int64_t refused = 0;
  for (const auto& [why, n] : plan->refused) refused += n;
  ppb::fuzz::FuzzCheck(refused + plan->pruned_by_memory + plan->pruned_by_bound + plan->searched +
                               plan->open + plan->not_loaded ==
                           plan->total,
                       "every combination is counted once");
  ppb::fuzz::FuzzCheck(!plan->proved_optimal || plan->not_loaded == 0,
                       "nothing is proved with layouts not loaded");
  ppb::fuzz::Consume(ppb::FormatPlanText(*plan));
  ppb::fuzz::CheckJson(ppb::FormatPlanJson(*plan), "FormatPlanJson is JSON");
  return 0;
}
