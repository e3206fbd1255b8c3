// What the torchtitan readers (apps/input/torchtitan_launch.cpp) share: a
// job config's fields by dotted key, each read at most once and placed at
// its line, and torchtitan's default pipeline split. Internal to
// apps/input/torchtitan_*.cpp.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/toml_reader.h"

namespace ppb::torchtitan_detail {

struct Bad {
  std::string message;
};
[[noreturn]] inline void Fail(std::string message) { throw Bad{std::move(message)}; }

constexpr const char* kVersion = "torchtitan v0.2.2";
constexpr const char* kMainVersion = "torchtitan main at b5bcd76c";

// The fields of the sections ppb reads; a field not here is not
// torchtitan's.
struct Section {
  const char* name;
  std::vector<const char*> fields;
};
// v0.2.2's job_config.py.
inline const std::vector<Section>& ReadSections() {
  static const std::vector<Section> sections = {
      {"model",
       {"name", "flavor", "hf_assets_path", "tokenizer_path", "converters",
        "print_after_conversion"}},
      {"training",
       {"dataset", "dataset_path", "local_batch_size", "global_batch_size", "seq_len", "max_norm",
        "steps", "enable_cpu_offload", "dtype", "mixed_precision_param", "mixed_precision_reduce",
        "gc_freq", "gc_debug", "dataloader.num_workers", "dataloader.persistent_workers",
        "dataloader.pin_memory", "dataloader.prefetch_factor"}},
      {"parallelism",
       {"data_parallel_replicate_degree",
        "data_parallel_shard_degree",
        "fsdp_reshard_after_forward",
        "tensor_parallel_degree",
        "disable_loss_parallel",
        "enable_async_tensor_parallel",
        "pipeline_parallel_degree",
        "module_fqns_per_model_part",
        "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_layers_per_stage",
        "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv",
        "pipeline_parallel_microbatch_size",
        "pipeline_parallel_expert_parallel_overlap",
        "context_parallel_degree",
        "context_parallel_load_balancer",
        "context_parallel_rotate_method",
        "expert_parallel_degree",
        "expert_tensor_parallel_degree",
        "expert_parallel_comm_backend"}},
      {"activation_checkpoint",
       {"mode", "selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns", "early_stop",
        "memory_budget", "visualize_memory_budget_pareto", "preserve_rng_state",
        "determinism_check", "debug"}},
      {"compile", {"enable", "components", "backend"}},
      {"quantize",
       {"linear.float8.enable_fsdp_float8_all_gather",
        "linear.float8.precompute_float8_dynamic_scale_for_fsdp", "linear.float8.recipe_name",
        "linear.float8.filter_fqns", "linear.float8.emulate",
        "linear.mx.mxfp8_dim1_cast_kernel_choice", "linear.mx.recipe_name", "linear.mx.filter_fqns",
        "grouped_mm.float8.fqns", "grouped_mm.mx.recipe_name", "grouped_mm.mx.fqns"}},
  };
  return sections;
}

// main's TrainingConfig and ParallelismConfig (torchtitan/config/
// configs.py at b5bcd76c), the dataclasses a config function builds.
inline const std::vector<Section>& MainSections() {
  static const std::vector<Section> sections = {
      {"training",
       {"num_tokens_per_microbatch_per_dp_rank", "num_tokens_per_train_step", "max_context_length",
        "max_norm", "steps", "enable_cpu_offload", "disable_cuda_graphs", "dtype",
        "mixed_precision_param", "mixed_precision_reduce", "gc_freq", "gc_debug"}},
      {"parallelism",
       {"data_parallel_replicate_degree", "data_parallel_shard_degree",
        "fsdp_reshard_after_forward", "enable_fsdp_symm_mem", "tensor_parallel_degree",
        "enable_sequence_parallel", "spmd_backend", "pipeline_parallel_degree",
        "module_fqns_per_model_part", "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers", "pipeline_parallel_layers_per_stage",
        "pipeline_parallel_schedule", "pipeline_parallel_schedule_csv", "num_pp_microbatches",
        "context_parallel_degree", "context_parallel_load_balancer",
        "context_parallel_ptrr_mask_key", "expert_parallel_degree"}},
  };
  return sections;
}

// A value a config function computes in a way ppb does not evaluate.
struct Unevaluated {
  int line = 0;
  std::string expression;
};

// The job config, each field read at most once, with its line. For a
// Python config (`python`), a None is the field's default and a value ppb
// did not evaluate is an error where it is read.
class Job {
 public:
  Job(const std::string& path, TomlDocument doc, std::map<std::string, Unevaluated> unknown = {},
      bool python = false)
      : path_(path), doc_(std::move(doc)), unknown_(std::move(unknown)), python_(python) {}

  const TomlValue* Get(const std::string& key) {
    if (auto u = unknown_.find(key); u != unknown_.end()) {
      read_.insert(key);
      Fail(
          fmt::format("{}:{}: {}: must be a value ppb reads without running Python (a "
                      "literal, a name bound to one, arithmetic); got {}",
                      path_, u->second.line, key, u->second.expression));
    }
    auto it = doc_.values.find(key);
    if (it == doc_.values.end()) return nullptr;
    read_.insert(key);
    if (python_ && it->second.kind == TomlValue::Kind::String && it->second.s == "None") {
      return nullptr;
    }
    return &it->second;
  }
  // The value as written, a None included.
  const TomlValue* Raw(const std::string& key) {
    const TomlValue* v = Get(key);
    if (v == nullptr && doc_.values.count(key) != 0) return &doc_.values.at(key);
    return v;
  }
  bool Has(const std::string& key) const {
    return doc_.values.count(key) != 0 || unknown_.count(key) != 0;
  }
  // "run.toml:12: parallelism.tensor_parallel_degree", or where the
  // default stands.
  std::string Where(const std::string& key) const {
    auto it = doc_.values.find(key);
    if (it == doc_.values.end()) return fmt::format("{}: {} (default)", path_, key);
    return fmt::format("{}:{}: {}", path_, it->second.line, key);
  }
  std::string Line(const std::string& key) const {
    auto it = doc_.values.find(key);
    if (it == doc_.values.end()) return path_;
    return fmt::format("{}:{}", path_, it->second.line);
  }
  [[noreturn]] void Wrong(const std::string& key, const std::string& want) const {
    auto it = doc_.values.find(key);
    Fail(fmt::format("{}: {}: must be {}; got {}", Line(key), key, want,
                     it == doc_.values.end() ? "nothing" : DescribeToml(it->second)));
  }

  std::int64_t Int(const std::string& key, std::int64_t def, std::int64_t min,
                   const std::string& want) {
    const TomlValue* v = Get(key);
    if (v == nullptr) return def;
    if (v->kind != TomlValue::Kind::Int || v->i < min || v->i > (std::int64_t{1} << 30)) {
      Wrong(key, want);
    }
    return v->i;
  }
  std::optional<std::int64_t> OptInt(const std::string& key, std::int64_t min,
                                     const std::string& want) {
    // Absent or None: no value. A value ppb did not evaluate fails in Get.
    if (!Has(key) || Get(key) == nullptr) return std::nullopt;
    return Int(key, 0, min, want);
  }
  bool Bool(const std::string& key, bool def) {
    const TomlValue* v = Get(key);
    if (v == nullptr) return def;
    if (v->kind != TomlValue::Kind::Bool) Wrong(key, "true or false");
    return v->b;
  }
  std::string Choice(const std::string& key, const std::string& def,
                     const std::vector<std::string>& choices) {
    const TomlValue* v = Get(key);
    if (v == nullptr) return def;
    if (v->kind != TomlValue::Kind::String ||
        std::find(choices.begin(), choices.end(), v->s) == choices.end()) {
      Wrong(key, fmt::format("one of \"{}\"", fmt::join(choices, "\", \"")));
    }
    return v->s;
  }
  std::string Str(const std::string& key, const std::string& def) {
    const TomlValue* v = Get(key);
    if (v == nullptr) return def;
    if (v->kind != TomlValue::Kind::String) Wrong(key, "a string");
    return v->s;
  }
  std::vector<std::string> Strings(const std::string& key) {
    const TomlValue* v = Get(key);
    std::vector<std::string> out;
    if (v == nullptr) return out;
    if (v->kind != TomlValue::Kind::Array) Wrong(key, "an array of strings");
    for (const TomlValue& item : v->items) {
      if (item.kind != TomlValue::Kind::String) Wrong(key, "an array of strings");
      out.push_back(item.s);
    }
    return out;
  }

  // Every key of the file that is not a field of a section ppb reads is an
  // error.
  void CheckFields(const std::vector<Section>& sections, const char* version) const {
    for (const auto& [key, value] : doc_.values) {
      const size_t dot = key.find('.');
      const std::string section = key.substr(0, dot);
      const Section* s = nullptr;
      for (const Section& x : sections) {
        if (section == x.name) s = &x;
      }
      if (s == nullptr || dot == std::string::npos) continue;
      const std::string field = key.substr(dot + 1);
      auto f = std::find_if(s->fields.begin(), s->fields.end(),
                            [&](const char* x) { return field == x; });
      if (f == s->fields.end()) {
        std::vector<std::string> names;
        for (const char* x : s->fields) names.emplace_back(x);
        Fail(fmt::format("{}:{}: {}: must be a field of {}'s [{}] ({}); got {}", path_, value.line,
                         key, version, section, fmt::join(names, ", "), field));
      }
    }
  }
  // The keys of the file not read: other sections, fields ppb does not
  // model, and fields their settings leave unused.
  std::vector<std::string> Unread() const {
    std::set<std::string> all;
    for (const auto& kv : doc_.values) all.insert(kv.first);
    for (const auto& kv : unknown_) all.insert(kv.first);
    // An object's type is not listed where it has fields (a Python
    // config's "parallelism" = "ParallelismConfig").
    std::vector<std::string> out;
    for (const std::string& key : all) {
      auto next = all.upper_bound(key + ".");
      const bool parent = all.count(key + ".") != 0 ||
                          (next != all.end() && next->compare(0, key.size() + 1, key + ".") == 0);
      if (read_.count(key) == 0 && !parent) out.push_back(key);
    }
    return out;
  }

  const std::string& path() const { return path_; }

 private:
  const std::string& path_;
  TomlDocument doc_;
  std::map<std::string, Unevaluated> unknown_;
  bool python_ = false;
  std::set<std::string> read_;
};

inline std::string Bool(bool b) { return b ? "true" : "false"; }

// torchtitan's generate_llm_fqn_per_model_part (v0.2.2 and main alike):
// the modules of each of `stages` stages when module_fqns_per_model_part is
// not given; the embedding and the head weigh `in` and `out` layers. The
// head is "output" (ParseTorchtitan's v0.2.2 names).
std::vector<std::vector<std::string>> DefaultParts(Job& job, std::int64_t stages,
                                                   std::int64_t layers, std::int64_t in,
                                                   std::int64_t out, const std::string& why);

}  // namespace ppb::torchtitan_detail
