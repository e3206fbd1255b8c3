// DeepSpeed's form of a strategy: the Python assignments of its pipeline
// module (num_stages, parts, activation_checkpoint_interval,
// gradient_accumulation_steps), and ParseDeepSpeed, which reads them back
// (conventions.md, DeepSpeed). Refusals are Errors named "--emit deepspeed".
#include "apps/output/emit.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/search_problem.h"
#include "apps/output/emit_common.h"
#include "core/strategy.h"
#include "schedules/schedule.h"

namespace ppb {

using namespace emit_detail;  // NOLINT: the helpers of emit_common.h

Result<Emission> emit_detail::EmitDeepSpeed(const RunConfig& config) {
  const Framework f = Framework::DeepSpeed;
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const int p = config.shape.p, v = config.shape.v, m = config.shape.m;
  if (v != 1) {
    return Fail(f, fmt::format("runs one stage per rank (PipelineModule "
                               "num_stages = pipeline ranks, no "
                               "interleaving); got v = {}",
                               v));
  }
  if (const int empty = FirstEmptyStage(s); empty >= 0) {
    return Fail(f, fmt::format("would give {} no layer; ppb emits no empty "
                               "DeepSpeed stage (its optimizer would get no "
                               "parameters)",
                               StageName(empty, p)));
  }
  // conventions.md, DeepSpeed: only a global activation_checkpoint_interval
  // (1 = every layer checkpointed on its own).
  int interval = 0;
  std::string note;
  if (AnyRecompute(s)) {
    bool all_full = true;
    for (size_t i = 0; i < layers.size(); ++i) {
      const bool offers = OptionIndex(layers[i], "full") != 0;
      if (ModeOf(layers, s, i) != (offers ? "full" : "")) all_full = false;
    }
    if (all_full) {
      interval = 1;
    } else {
      note =
          "activation_checkpoint_interval 0: DeepSpeed has only a global "
          "interval (no per-stage or per-layer choice), and the strategy "
          "recomputes " +
          RecomputeSummary(config);
    }
  }
  Emission e;
  e.framework = f;
  e.recompute_expressed = note.empty();
  std::string& text = e.text;
  AddNote(text, fmt::format("DeepSpeed PipelineModule settings for {}: {}",
                            config.model_name.empty() ? config.path : config.model_name,
                            DescribeRun(config)));
  std::vector<int> parts = {0};
  for (int c : s.layers_per_stage) parts.push_back(parts.back() + c);
  text += fmt::format("num_stages = {}\n", p);
  text += "parts = [" + JoinInts(parts) + "]\n";
  text += fmt::format("activation_checkpoint_interval = {}\n", interval);
  text += fmt::format("gradient_accumulation_steps = {}\n", m);
  AddNote(text, fmt::format("stage s holds layers[parts[s]:parts[s+1]] of the "
                            "PipelineModule's layer list, one entry per ppb layer in "
                            "order ({} first, {} last); partition_method "
                            "'parameters', 'uniform' and 'type:<regex>' compute their "
                            "own boundaries, so set PipelineModule.parts to these; "
                            "gradient_accumulation_steps (DeepSpeed config) = "
                            "micro-batches per step",
                            layers.front().name, layers.back().name));
  if (interval == 1) {
    AddNote(text,
            "at interval 1 DeepSpeed checkpoints every layer with parameters; "
            "PipelineModule's checkpointable_layers (class names) keeps it to "
            "the layers ppb recomputes (those offering full)");
  }
  if (config.schedule != "1f1b") {
    AddNote(text,
            "DeepSpeed runs its own 1F1B-style TrainSchedule; simulated "
            "under schedule " +
                config.schedule);
  }
  if (!note.empty()) AddNote(text, note);
  NoteLowPrecisionNotEmitted(text, config, "DeepSpeed");
  NoteShardingNotEmitted(text, config, "DeepSpeed");
  NoteMoeNotEmitted(text, config, "DeepSpeed");
  return e;
}

namespace {

Result<std::vector<int>> IntList(const std::map<std::string, Value>& a, const std::string& key) {
  auto it = a.find(key);
  if (it == a.end()) return Error{"", key + ": missing"};
  if (it->second.kind != Value::Kind::List) {
    return Error{"", key + ": must be a list of integers"};
  }
  std::vector<int> out;
  for (const Value& x : it->second.list) {
    if (x.kind != Value::Kind::Int) {
      return Error{"", key + ": must be a list of integers"};
    }
    out.push_back(static_cast<int>(x.i));
  }
  return out;
}

}  // namespace

Result<EmittedPlan> ParseDeepSpeed(std::string_view text, const std::vector<Layer>& layers) {
  auto a = ReadAssignments(text);
  if (!a.ok()) return a.error();
  EmittedPlan plan;
  Result<std::int64_t> p = IntAt(*a, "num_stages", 1);
  if (!p.ok()) return p.error();
  plan.p = static_cast<int>(*p);
  Result<std::vector<int>> parts = IntList(*a, "parts");
  if (!parts.ok()) return parts.error();
  if (parts->size() != static_cast<size_t>(plan.p) + 1 || parts->front() != 0 ||
      parts->back() != static_cast<int>(layers.size())) {
    return Error{"", fmt::format("parts must have num_stages + 1 = {} "
                                 "boundaries from 0 to the {} layers",
                                 plan.p + 1, layers.size())};
  }
  for (size_t s = 0; s + 1 < parts->size(); ++s) {
    const int c = (*parts)[s + 1] - (*parts)[s];
    if (c <= 0) {
      return Error{"", fmt::format("parts must increase; stage {} gets {} "
                                   "layers",
                                   s, c)};
    }
    plan.strategy.layers_per_stage.push_back(c);
  }
  if (a->count("gradient_accumulation_steps") != 0) {
    Result<std::int64_t> m = IntAt(*a, "gradient_accumulation_steps", 1);
    if (!m.ok()) return m.error();
    plan.m = static_cast<int>(*m);
  }
  plan.strategy.recompute.assign(layers.size(), 0);
  Result<std::int64_t> interval = IntAt(*a, "activation_checkpoint_interval", 0);
  if (!interval.ok()) return interval.error();
  if (*interval > 1) {
    return Error{"", "activation_checkpoint_interval: ppb reads 0 or 1"};
  }
  if (*interval == 1) {
    for (size_t i = 0; i < layers.size(); ++i) {
      plan.strategy.recompute[i] = OptionIndex(layers[i], "full");
    }
  }
  return plan;
}

}  // namespace ppb
