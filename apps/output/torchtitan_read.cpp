// ParseTorchtitan (apps/output/emit.h): the two torchtitan forms that
// apps/output/emit_torchtitan.cpp writes (apps/output/torchtitan_form.h),
// read back as the strategy by torchtitan's rules: the module names of
// each model part in order, the schedule, and the activation checkpoint.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/output/emit.h"
#include "apps/output/emit_common.h"
#include "apps/output/torchtitan_form.h"
#include "core/strategy.h"
#include "schedules/schedule.h"

namespace ppb {

using namespace emit_detail;  // NOLINT: the helpers of emit_common.h

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

namespace {

// The Trainer.Config fields (torchtitan main at b5bcd76c) the Python form's
// reader takes; any other is refused, as the reader reads what ppb writes.
constexpr const char* kMainFields[] = {
    "parallelism.pipeline_parallel_degree",   "parallelism.pipeline_parallel_schedule",
    "parallelism.pipeline_parallel_schedule_csv", "parallelism.module_fqns_per_model_part",
    "parallelism.num_pp_microbatches",        "training.num_tokens_per_microbatch_per_dp_rank",
    "training.max_context_length",            "training.disable_cuda_graphs",
    "parallelism.tensor_parallel_degree",     "parallelism.enable_sequence_parallel",
    "parallelism.context_parallel_degree",    "parallelism.expert_parallel_degree",
    "parallelism.data_parallel_shard_degree", "parallelism.data_parallel_replicate_degree",
    "training.num_tokens_per_train_step",     "activation_checkpoint",
    "parallelism.fsdp_reshard_after_forward", "training.enable_cpu_offload"};

// The Python form without its import lines ("from M import A, B", blanked
// so that line numbers stay) and its model_spec line, and the names
// imported from kAcModule.
Result<std::pair<std::string, std::vector<std::string>>> StripImports(std::string_view text) {
  std::string body;
  std::vector<std::string> ac_names;
  size_t pos = 0;
  int line_no = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = Trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line.rfind("import ", 0) == 0) {
      return Error{"", fmt::format("line {}: ppb reads only \"from {} import ...\"; got '{}'",
                                   line_no, kAcModule, line)};
    }
    // The model_spec (MainModelSpec) and its imports: the model, which the
    // strategy read here does not hold.
    if (line.rfind("config.model_spec = model_registry(", 0) == 0 ||
        (line.rfind("from torchtitan.models.", 0) == 0 &&
         line.find(" import model_registry") != std::string_view::npos) ||
        line.rfind("from torchtitan.components.quantization import ", 0) == 0) {
      body += '\n';
      continue;
    }
    if (line.rfind("from ", 0) != 0) {
      body.append(line);
      body += '\n';
      continue;
    }
    const std::string prefix = fmt::format("from {} import ", kAcModule);
    if (line.rfind(prefix, 0) != 0) {
      return Error{"", fmt::format("line {}: ppb reads only \"{}...\"; got '{}'", line_no, prefix,
                                   line)};
    }
    std::string_view names = line.substr(prefix.size());
    while (!names.empty()) {
      const size_t comma = names.find(',');
      const std::string_view name = Trim(names.substr(0, comma));
      if (name != "FullAC" && name != "SelectiveAC" && name != "MemoryBudgetAC") {
        return Error{"", fmt::format("line {}: {} has no policy '{}' (FullAC, SelectiveAC, "
                                     "MemoryBudgetAC)",
                                     line_no, kAcModule, name)};
      }
      ac_names.emplace_back(name);
      names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
    }
    body += '\n';
  }
  return std::make_pair(std::move(body), std::move(ac_names));
}

}  // namespace

Result<EmittedPlan> ParseTorchtitan(Framework f, std::string_view text,
                                    const std::vector<Layer>& layers) {
  const TorchtitanForm& form = FormOf(f);
  std::string body(text);
  std::vector<std::string> ac_names;
  if (form.python) {
    auto stripped = StripImports(text);
    if (!stripped.ok()) return stripped.error();
    body = std::move(stripped->first);
    ac_names = std::move(stripped->second);
  }
  auto read = ReadAssignments(body);
  if (!read.ok()) return read.error();
  // The Python form's "config.section.key" = the TOML form's "section.key".
  std::map<std::string, Value> assigned;
  for (auto& [key, value] : *read) {
    const bool dotted = key.rfind("config.", 0) == 0;
    if (dotted != form.python) {
      return Error{"", fmt::format("{}: not a key of {}", key, form.version)};
    }
    const std::string field = dotted ? key.substr(7) : key;
    if (form.python) {
      if (field == "activation_checkpoint.mode") {
        return Error{"", fmt::format("{}: torchtitan main has no field mode: its "
                                     "activation_checkpoint is a policy object "
                                     "(None or FullAC.Config(); pytorch/torchtitan#3674)",
                                     key)};
      }
      if (std::find_if(std::begin(kMainFields), std::end(kMainFields), [&](const char* k) {
            return field == k;
          }) == std::end(kMainFields)) {
        return Error{"", fmt::format("{}: not a Trainer.Config field ppb reads", key)};
      }
    }
    assigned[field] = std::move(value);
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
  if ((name == "ZBVZeroBubble" || name == "DualPipeV") && plan.v != 2) {
    return Error{"", fmt::format("{} places two stages per rank in a V (torchtitan's v "
                                 "style); got {} per rank",
                                 name, plan.v)};
  }
  plan.strategy.layers_per_stage = std::move(*counts);
  plan.strategy.recompute.assign(layers.size(), 0);
  bool full = false;
  if (form.python) {
    // Trainer.Config.__post_init__: num_pp_microbatches > 0 (default 1), and
    // _validate_cuda_graphs: pipeline parallelism needs CUDA graphs off.
    if (a->count("parallelism.num_pp_microbatches") != 0) {
      Result<std::int64_t> m = IntAt(*a, "parallelism.num_pp_microbatches", 1);
      if (!m.ok()) return m.error();
      plan.m = static_cast<int>(*m);
    } else {
      plan.m = 1;
    }
    for (const char* key :
         {"training.num_tokens_per_microbatch_per_dp_rank", "training.max_context_length"}) {
      if (a->count(key) != 0) {
        if (Result<std::int64_t> n = IntAt(*a, key, 1); !n.ok()) return n.error();
      }
    }
    auto graphs = a->find("training.disable_cuda_graphs");
    if (graphs != a->end() && graphs->second.kind != Value::Kind::Bool) {
      return Error{"", "training.disable_cuda_graphs: must be True or False"};
    }
    if (plan.p > 1 && (graphs == a->end() || !graphs->second.b)) {
      return Error{"", "CUDA graphs do not support pipeline parallelism yet (torchtitan "
                       "main): set training.disable_cuda_graphs = True"};
    }
    auto ac = a->find("activation_checkpoint");
    if (ac == a->end()) {
      return Error{"", "activation_checkpoint: missing; torchtitan main's default is "
                       "SelectiveAC.Config(), which ppb does not read (set None or "
                       "FullAC.Config())"};
    }
    if (ac->second.kind == Value::Kind::Call && ac->second.s == "FullAC.Config") {
      if (std::find(ac_names.begin(), ac_names.end(), "FullAC") == ac_names.end()) {
        return Error{"", fmt::format("activation_checkpoint: FullAC is not imported (from {} "
                                     "import FullAC)",
                                     kAcModule)};
      }
      full = true;
    } else if (ac->second.kind != Value::Kind::None) {
      return Error{"", "activation_checkpoint: ppb reads None or FullAC.Config()"};
    }
  } else {
    auto mode = a->find("activation_checkpoint.mode");
    if (mode != a->end()) {
      if (mode->second.kind != Value::Kind::String ||
          (mode->second.s != "none" && mode->second.s != "full")) {
        return Error{"",
                     "activation_checkpoint.mode: ppb reads \"none\" or "
                     "\"full\""};
      }
      full = mode->second.s == "full";
    }
  }
  if (full) {
    if (Status st = SetOnDecoders(layers, "full", plan.strategy.recompute); !st.ok()) {
      return st.error();
    }
  }
  return plan;
}

}  // namespace ppb
