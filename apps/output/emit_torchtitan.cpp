// torchtitan's forms of a strategy, and their readers (conventions.md,
// torchtitan). Two versions:
// - current torchtitan (main at 0014ac2c, torchtitan/config/configs.py):
//   configs are Python functions returning a Trainer.Config, so the form is
//   assignments to its fields (config.parallelism.pipeline_parallel_degree,
//   .pipeline_parallel_schedule[_csv], .module_fqns_per_model_part,
//   config.activation_checkpoint.mode, whose default is "selective", so
//   "none" is written out); the LM head is the module lm_head.
// - torchtitan v0.2.2 ("torchtitan-0.2.2"): the TOML job config
//   ([parallelism], [activation_checkpoint] mode); the head is output.
// Both name the schedule and write a schedule CSV when the simulated order
// is not the one torch's named schedule runs. Refusals are Errors named
// "--emit torchtitan" / "--emit torchtitan-0.2.2".
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
#include "apps/output/output.h"
#include "core/strategy.h"
#include "schedules/schedule.h"

namespace ppb {

using namespace emit_detail;  // NOLINT: the helpers of emit_common.h

namespace {

// The torchtitan version a form is for: its syntax and the LM head's name.
struct TorchtitanForm {
  bool python = true;              // Trainer.Config assignments, else TOML
  const char* head = "lm_head";    // the LM head module (after norm)
  const char* version = "";        // named in the header
};
constexpr TorchtitanForm kCurrent{true, "lm_head",
                                  "current torchtitan (main at 0014ac2c; Python Trainer.Config)"};
constexpr TorchtitanForm kV022{false, "output", "torchtitan v0.2.2 (TOML job config)"};

const TorchtitanForm& FormOf(Framework f) {
  return f == Framework::Torchtitan022 ? kV022 : kCurrent;
}

// torch's name of a ppb schedule (conventions.md, torch schedule names;
// torch get_schedule_class, v2.14.1).
std::string TorchScheduleName(const std::string& schedule) {
  const ScheduleInfo* info = FindSchedule(schedule);
  return info != nullptr ? std::string(info->torch_name)
                         : std::string("PipelineScheduleMulti");
}

// torchtitan module names of each layer: tok_embeddings, layers.N, and
// norm + the head module (lm_head; output in v0.2.2) for the head.
std::vector<std::string> TorchtitanModules(const std::vector<Layer>& layers, size_t begin,
                                           size_t end, const char* head) {
  std::vector<std::string> out;
  int decoder = 0;
  for (size_t i = 0; i < end; ++i) {
    const LayerKind k = layers[i].kind;
    std::vector<std::string> names;
    if (k == LayerKind::Embedding) {
      names = {"tok_embeddings"};
    } else if (k == LayerKind::Head) {
      names = {"norm", head};
    } else {
      names = {"layers." + std::to_string(decoder++)};
    }
    if (i >= begin) out.insert(out.end(), names.begin(), names.end());
  }
  return out;
}

}  // namespace

Result<Emission> emit_detail::EmitTorchtitan(Framework f, const RunConfig& config,
                                             const Program& program) {
  const TorchtitanForm& form = FormOf(f);
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const int p = config.shape.p, v = config.shape.v, m = config.shape.m;
  if (Status st = CheckEmbeddingFirstHeadLast(f, layers, false); !st.ok()) {
    return st.error();
  }
  for (const Layer& l : layers) {
    if (l.kind == LayerKind::Other) {
      return Fail(f, "has no module name for layer " + l.name +
                         " (kind other); torchtitan's LLM modules are "
                         "tok_embeddings, layers.N, norm and " + form.head);
    }
  }
  if (const int empty = FirstEmptyStage(s); empty >= 0) {
    return Fail(f, fmt::format("would give {} no module; ppb emits no empty stage for "
                               "torchtitan (its own generate_llm_fqn_per_model_part "
                               "refuses them)",
                               StageName(empty, p)));
  }

  // The order torch's named schedule runs (its rules: conventions.md, torch;
  // docs/schedules.md, flavor pytorch); the CSV when it is not the one
  // simulated.
  std::string why_csv;
  const ScheduleInfo* info = FindSchedule(config.schedule);
  if (config.schedule == "custom") {
    why_csv = "the simulated order is a custom schedule CSV";
  } else if (info != nullptr && info->torch_name.empty()) {
    why_csv = fmt::format("torch has no schedule {}", config.schedule);
  } else {
    RunConfig torch = config;
    torch.schedule_params = ScheduleParams{Flavor::PyTorch, 0};
    Result<PreparedRun> run = Prepare(torch);
    if (!run.ok()) {
      why_csv = fmt::format("torch's {} refuses this shape ({})",
                            TorchScheduleName(config.schedule), run.error().message);
    } else if (run->program.ops != program.ops) {
      why_csv = fmt::format("torch's {} runs another order than the simulated one ({})",
                            TorchScheduleName(config.schedule), DescribeRun(config));
    }
  }

  Emission e;
  e.framework = f;
  std::string& text = e.text;
  AddNote(text, fmt::format("{} for {}: {}", form.version,
                            config.model_name.empty() ? config.path : config.model_name,
                            DescribeRun(config)));
  // "section.key = value": a Trainer.Config field, or a TOML key under its
  // [section] header.
  std::string section;
  auto set = [&](const char* sec, const char* key, const std::string& value) {
    if (form.python) {
      text += fmt::format("config.{}.{} = {}\n", sec, key, value);
      return;
    }
    if (section != sec) {
      text += fmt::format("{}[{}]\n", section.empty() ? "" : "\n", sec);
      section = sec;
    }
    text += fmt::format("{} = {}\n", key, value);
  };
  if (form.python) {
    AddNote(text, "set on the Trainer.Config your --module/--config function returns");
  }
  set("parallelism", "pipeline_parallel_degree", std::to_string(p));
  const bool csv = !why_csv.empty();
  set("parallelism", "pipeline_parallel_schedule",
      fmt::format("\"{}\"", csv ? "PipelineScheduleMulti" : TorchScheduleName(config.schedule)));
  if (csv) {
    set("parallelism", "pipeline_parallel_schedule_csv", fmt::format("\"{}\"", kCsvName));
    e.schedule_csv = DumpScheduleCsv(program);
  }
  std::string parts = "[\n";
  const std::vector<size_t> starts = StageStarts(s.layers_per_stage);
  for (size_t st = 0; st + 1 < starts.size(); ++st) {
    std::string row;
    for (const std::string& name :
         TorchtitanModules(layers, starts[st], starts[st + 1], form.head)) {
      if (!row.empty()) row += ", ";
      row += "\"" + name + "\"";
    }
    parts += "  [" + row + "],\n";
  }
  parts += "]";
  set("parallelism", "module_fqns_per_model_part", parts);

  // Activation checkpointing: torchtitan applies one mode to every
  // transformer block; ppb maps none and all-"full".
  std::string ac = "none", note;
  if (AnyRecompute(s)) {
    bool all_full = true;
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string mode = ModeOf(layers, s, i);
      const bool decoder = IsDecoder(layers[i].kind);
      if ((decoder && mode != "full") || (!decoder && !mode.empty())) {
        all_full = false;
      }
    }
    if (all_full) {
      ac = "full";
    } else {
      e.recompute_expressed = false;
      note =
          "activation checkpointing left off: torchtitan applies one mode "
          "to every transformer block, and the strategy recomputes " +
          RecomputeSummary(config);
    }
  }
  set("activation_checkpoint", "mode", fmt::format("\"{}\"", ac));
  const std::string style =
      PlacementOf(config.schedule, v) == StagePlacement::V
          ? "rank r holds stages r and 2p-1-r (torchtitan's v style, which it "
            "takes for ZBVZeroBubble and DualPipeV)"
          : "stage s = chunk * p + rank (torchtitan's loop style)";
  AddNote(text, fmt::format("{}, {} "
                            "stage(s) per rank; m = {} micro-batches: set "
                            "training.local_batch_size = {} x "
                            "parallelism.pipeline_parallel_microbatch_size",
                            style, v, m, m));
  if (csv) {
    AddNote(text, why_csv +
                      "; save the schedule CSV printed with this "
                      "fragment as " +
                      kCsvName + " (torch's _load_csv format)");
  }
  if (!note.empty()) AddNote(text, note);
  return e;
}

namespace {

// The ppb strategy of a torchtitan module list: each name must be the next
// module of the model, in order.
Result<std::vector<int>> TorchtitanCounts(const Value& parts, const std::vector<Layer>& layers,
                                          const char* head) {
  const std::vector<std::string> all = TorchtitanModules(layers, 0, layers.size(), head);
  // Owner layer of each module name.
  std::vector<size_t> owner;
  for (size_t i = 0; i < layers.size(); ++i) {
    const size_t k = TorchtitanModules(layers, i, i + 1, head).size();
    for (size_t j = 0; j < k; ++j) owner.push_back(i);
  }
  if (parts.kind != Value::Kind::List) {
    return Error{"", "module_fqns_per_model_part must be a list of lists"};
  }
  std::vector<int> counts;
  size_t next = 0;
  for (const Value& stage : parts.list) {
    if (stage.kind != Value::Kind::List) {
      return Error{"", "module_fqns_per_model_part must be a list of lists"};
    }
    int n = 0;
    for (size_t j = 0; j < stage.list.size(); ++j) {
      const Value& name = stage.list[j];
      if (name.kind != Value::Kind::String || next >= all.size() || name.s != all[next]) {
        return Error{"", fmt::format("module_fqns_per_model_part: expected \"{}\" next "
                                     "(every module once, in model order); got {}",
                                     next < all.size() ? all[next] : "nothing",
                                     name.kind == Value::Kind::String ? "\"" + name.s + "\""
                                                                      : "a non-string")};
      }
      // The modules of one layer (the head's norm and output) must be in
      // one stage.
      if (next == 0 || owner[next] != owner[next - 1]) {
        ++n;
      } else if (j == 0) {
        return Error{"", fmt::format("module_fqns_per_model_part: norm and {} must be "
                                     "in the same stage",
                                     head)};
      }
      ++next;
    }
    counts.push_back(n);
  }
  if (next != all.size()) {
    return Error{
        "", "module_fqns_per_model_part: must name every module; \"" + all[next] + "\" is missing"};
  }
  return counts;
}

}  // namespace

Result<EmittedPlan> ParseTorchtitan(Framework f, std::string_view text,
                                    const std::vector<Layer>& layers) {
  const TorchtitanForm& form = FormOf(f);
  auto read = ReadAssignments(text);
  if (!read.ok()) return read.error();
  // The Python form's "config.section.key" = the TOML form's "section.key".
  std::map<std::string, Value> assigned;
  for (auto& [key, value] : *read) {
    const bool dotted = key.rfind("config.", 0) == 0;
    if (dotted != form.python) {
      return Error{"", fmt::format("{}: not a key of {}", key, form.version)};
    }
    assigned[dotted ? key.substr(7) : key] = std::move(value);
  }
  const std::map<std::string, Value>* a = &assigned;
  EmittedPlan plan;
  Result<std::int64_t> p = IntAt(*a, "parallelism.pipeline_parallel_degree", 1);
  if (!p.ok()) return p.error();
  plan.p = static_cast<int>(*p);
  auto parts = a->find("parallelism.module_fqns_per_model_part");
  if (parts == a->end()) {
    return Error{"", "parallelism.module_fqns_per_model_part: missing"};
  }
  Result<std::vector<int>> counts = TorchtitanCounts(parts->second, layers, form.head);
  if (!counts.ok()) return counts.error();
  const int stages = static_cast<int>(counts->size());
  // torchtitan's pipeline_module_split: num_stages must be divisible by the
  // degree; single-stage schedules take one stage per rank.
  if (stages % plan.p != 0) {
    return Error{"", fmt::format("{} stages must be divisible by "
                                 "pipeline_parallel_degree {} (torchtitan)",
                                 stages, plan.p)};
  }
  plan.v = stages / plan.p;
  auto sched = a->find("parallelism.pipeline_parallel_schedule");
  const std::string name =
      sched != a->end() && sched->second.kind == Value::Kind::String ? sched->second.s : "1F1B";
  if ((name == "1F1B" || name == "GPipe") && plan.v != 1) {
    return Error{"", fmt::format("{} runs one stage per rank (torch "
                                 "PipelineScheduleSingle); got {} per rank",
                                 name, plan.v)};
  }
  plan.strategy.layers_per_stage = std::move(*counts);
  plan.strategy.recompute.assign(layers.size(), 0);
  auto mode = a->find("activation_checkpoint.mode");
  if (mode != a->end()) {
    if (mode->second.kind != Value::Kind::String ||
        (mode->second.s != "none" && mode->second.s != "full")) {
      return Error{"",
                   "activation_checkpoint.mode: ppb reads \"none\" or "
                   "\"full\""};
    }
    if (mode->second.s == "full") {
      if (Status st = SetOnDecoders(layers, "full", plan.strategy.recompute); !st.ok()) {
        return st.error();
      }
    }
  }
  return plan;
}

}  // namespace ppb
