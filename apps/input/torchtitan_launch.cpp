// ReadTorchtitanLaunch (apps/input/torchtitan_launch.h): a v0.2.2 job
// config's fields, by their TOML keys, written out as a ppb config whose
// every line remembers the key it came from.
#include "apps/input/torchtitan_launch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "apps/input/toml_reader.h"
#include "apps/input/torchtitan_models.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

struct Bad {
  std::string message;
};
[[noreturn]] void Fail(std::string message) { throw Bad{std::move(message)}; }

constexpr const char* kVersion = "torchtitan v0.2.2";

// The fields of the sections ppb reads (job_config.py at v0.2.2); a field
// not here is not torchtitan's.
struct Section {
  const char* name;
  std::vector<const char*> fields;
};
const std::vector<Section>& ReadSections() {
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

// The job config, each field read at most once, with its line.
class Job {
 public:
  Job(const std::string& path, TomlDocument doc) : path_(path), doc_(std::move(doc)) {}

  const TomlValue* Get(const std::string& key) {
    auto it = doc_.values.find(key);
    if (it == doc_.values.end()) return nullptr;
    read_.insert(key);
    return &it->second;
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
    if (doc_.values.count(key) == 0) return std::nullopt;
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
  void CheckFields() const {
    for (const auto& [key, value] : doc_.values) {
      const size_t dot = key.find('.');
      const std::string section = key.substr(0, dot);
      const Section* s = nullptr;
      for (const Section& x : ReadSections()) {
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
                         key, kVersion, section, fmt::join(names, ", "), field));
      }
    }
  }
  // The keys of the file not read: other sections, fields ppb does not
  // model, and fields their settings leave unused.
  std::vector<std::string> Unread() const {
    std::vector<std::string> out;
    for (const auto& kv : doc_.values) {
      if (read_.count(kv.first) == 0) out.push_back(kv.first);
    }
    return out;
  }

  const std::string& path() const { return path_; }

 private:
  const std::string& path_;
  TomlDocument doc_;
  std::set<std::string> read_;
};

std::string Bool(bool b) { return b ? "true" : "false"; }

// torchtitan v0.2.2 generate_llm_fqn_per_model_part: the layers of each
// stage when module_fqns_per_model_part is not given (the embedding and the
// head weigh `in` and `out` layers).
std::vector<std::vector<std::string>> DefaultParts(Job& job, std::int64_t stages,
                                                   std::int64_t layers, std::int64_t in,
                                                   std::int64_t out, const std::string& why) {
  std::vector<std::vector<std::string>> parts;
  auto name = [](std::int64_t i) { return fmt::format("layers.{}", i); };
  if (stages == 1) {
    std::vector<std::string> all{"tok_embeddings"};
    for (std::int64_t i = 0; i < layers; ++i) all.push_back(name(i));
    all.emplace_back("norm");
    all.emplace_back("output");
    parts.push_back(std::move(all));
    return parts;
  }
  const std::int64_t effective = layers + in + out;
  const std::string where = job.Line("parallelism.pipeline_parallel_degree");
  if (stages > effective) {
    Fail(
        fmt::format("{}: {}: Number of stages ({}) cannot be greater than effective layers "
                    "({}) (torchtitan's generate_llm_fqn_per_model_part)",
                    where, why, stages, effective));
  }
  const std::int64_t per = effective / stages;
  const std::int64_t extra = effective % stages;
  if (in > per || out > per) {
    Fail(
        fmt::format("{}: parallelism.pipeline_parallel_{}_stage_less_layers ({}) exceeds "
                    "minimum layers per stage ({}) (torchtitan's "
                    "generate_llm_fqn_per_model_part)",
                    job.Line(in > per ? "parallelism.pipeline_parallel_first_stage_less_layers"
                                      : "parallelism.pipeline_parallel_last_stage_less_layers"),
                    in > per ? "first" : "last", in > per ? in : out, per));
  }
  std::int64_t next = 0;
  for (std::int64_t s = 0; s < stages; ++s) {
    std::vector<std::string> part;
    std::int64_t n = per + (s < extra ? 1 : 0);
    if (s == 0) {
      part.emplace_back("tok_embeddings");
      n -= in;
    } else if (s == stages - 1) {
      n -= out;
    }
    for (std::int64_t k = 0; k < n && next < layers; ++k) part.push_back(name(next++));
    if (s == stages - 1) {
      part.emplace_back("norm");
      part.emplace_back("output");
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

LaunchRun Translate(Job& job, const LaunchInputs& in) {
  LaunchRun run;
  ConfigWriter o;
  std::vector<std::string>& notes = run.notes;
  const std::string& path = job.path();
  auto where = [&](const std::string& key) { return job.Where(key); };
  // Unknown fields first: a misspelt key is the error, not what follows.
  job.CheckFields();

  // ---- the model ---------------------------------------------------------
  const std::string model = job.Str("model.name", "llama3");
  const std::vector<std::string> models = TorchtitanModels();
  if (std::find(models.begin(), models.end(), model) == models.end()) {
    Fail(
        fmt::format("{}: model.name: must be a model whose flavours ppb knows ({}; "
                    "torchtitan's MoE and other models are not read yet); got \"{}\"",
                    job.Line("model.name"), fmt::join(models, ", "), model));
  }
  const std::string flavor = job.Str("model.flavor", "debugmodel");
  const TorchtitanFlavour* f = FindTorchtitanFlavour(model, flavor);
  if (f == nullptr) {
    Fail(fmt::format("{}: model.flavor: must be a {} flavour of {} ({}); got \"{}\"",
                     job.Line("model.flavor"), model, kVersion,
                     fmt::join(TorchtitanFlavours(model), ", "), flavor));
  }
  const std::string shape = where("model.flavor");
  o.Line(0, fmt::format("# ppb config read from {} ({} job config)", path, kVersion));
  o.Line(0, "model:");
  o.Text(2, "name", fmt::format("{} {}", model, flavor), where("model.name"));
  o.Line(2, "architecture:");
  o.Key(4, "hidden_size", f->dim, shape);
  o.Key(4, "num_layers", f->n_layers, shape);
  o.Key(4, "num_attention_heads", f->n_heads, shape);
  o.Key(4, "num_key_value_heads", f->n_kv_heads > 0 ? f->n_kv_heads : f->n_heads, shape);
  o.Key(4, "head_dim", f->head_dim > 0 ? f->head_dim : f->dim / f->n_heads, shape);
  o.Key(4, "ffn_hidden_size", FfnHidden(*f), shape);
  o.Key(4, "vocab_size", f->vocab_size, shape);
  o.Key(4, "tie_embeddings", Bool(f->tied), shape);
  o.Key(4, "gated_mlp", "true", shape);
  o.Key(4, "norm", "rmsnorm", shape);
  if (f->qk_norm) o.Key(4, "qk_norm", "true", shape);
  if (f->attention != "sdpa") {
    notes.push_back(
        fmt::format("model.flavor {}: attention {} with its block-causal mask is "
                    "simulated as causal attention over the whole sequence",
                    flavor, f->attention));
  }

  // ---- the world and the degrees (ParallelDims) --------------------------
  const std::string want_degree = "an integer >= 1";
  const std::int64_t rep = job.Int("parallelism.data_parallel_replicate_degree", 1, 1, want_degree);
  const TomlValue* shard_v = job.Get("parallelism.data_parallel_shard_degree");
  std::int64_t shard = -1;
  if (shard_v != nullptr) {
    if (shard_v->kind != TomlValue::Kind::Int || (shard_v->i != -1 && shard_v->i < 1) ||
        shard_v->i > (1 << 30)) {
      job.Wrong("parallelism.data_parallel_shard_degree",
                "-1 (what the world leaves) or an integer >= 1");
    }
    shard = shard_v->i;
  }
  const std::int64_t tp = job.Int("parallelism.tensor_parallel_degree", 1, 1, want_degree);
  const std::int64_t pp = job.Int("parallelism.pipeline_parallel_degree", 1, 1, want_degree);
  const std::int64_t cp = job.Int("parallelism.context_parallel_degree", 1, 1, want_degree);
  const std::int64_t ep = job.Int("parallelism.expert_parallel_degree", 1, 1, want_degree);
  const std::int64_t etp = job.Int("parallelism.expert_tensor_parallel_degree", 1, 1, want_degree);
  if (ep != 1 || etp != 1) {
    const std::string key = ep != 1 ? "parallelism.expert_parallel_degree"
                                    : "parallelism.expert_tensor_parallel_degree";
    job.Wrong(key, fmt::format("1 for {} {} (a dense model: no experts)", model, flavor));
  }
  const std::int64_t others = rep * cp * tp * pp;
  std::int64_t world = 0;
  std::string world_origin;
  if (in.gpus) {
    world = *in.gpus;
    world_origin = "--gpus";
  }
  if (shard == -1) {
    if (world == 0) {
      Fail(
          fmt::format("{}: the world size: must be given with --gpus N "
                      "(parallelism.data_parallel_shard_degree is -1: it takes what the "
                      "world leaves, and a job config does not say the world); got nothing",
                      path));
    }
    shard = world / others;
    if (shard < 1) {
      Fail(fmt::format(
          "{}: Invalid parallel dims: dp_replicate({}) * cp({}) * tp({}) * "
          "pp({}) = {}: must be at most the world size (torchtitan's "
          "ParallelDims); got --gpus {}",
          job.Line("parallelism.tensor_parallel_degree"), rep, cp, tp, pp, others, world));
    }
  } else if (world == 0) {
    world = shard * others;
    world_origin = job.Line("parallelism.data_parallel_shard_degree") + ": the degrees' product";
  }
  if (shard * others != world) {
    Fail(
        fmt::format("{}: Invalid parallel dims: dp_replicate({}) * dp_shard({}) * cp({}) * "
                    "tp({}) * pp({}) != WORLD_SIZE({}) (torchtitan's ParallelDims): must be "
                    "equal; got {}",
                    job.Line("parallelism.data_parallel_shard_degree"), rep, shard, cp, tp, pp,
                    world, shard * others));
  }
  const std::string world_where = world_origin == "--gpus" ? path + ": --gpus" : world_origin;
  const std::int64_t dp = rep * shard;

  // ---- batch and sequence ------------------------------------------------
  const std::int64_t local = job.Int("training.local_batch_size", 8, 1, "an integer >= 1");
  const std::int64_t seq = job.Int("training.seq_len", 2048, 1, "an integer >= 1");
  std::int64_t global = local * dp;
  if (const TomlValue* g = job.Get("training.global_batch_size")) {
    if (g->kind != TomlValue::Kind::Int || (g->i != -1 && g->i < 1) || g->i > (1 << 30)) {
      job.Wrong("training.global_batch_size",
                "-1 (local_batch_size x the data-parallel "
                "degree) or an integer >= 1");
    }
    if (g->i > 0) global = g->i;
  }
  if (global % (local * dp) != 0) {
    Fail(
        fmt::format("{}: training.global_batch_size: must be a multiple of local_batch_size "
                    "x the data-parallel degree ({} x {} = {}; torchtitan's train.py); got {}",
                    job.Line("training.global_batch_size"), local, dp, local * dp, global));
  }
  const std::int64_t accumulation = global / (local * dp);
  std::int64_t mbs = local;
  std::string mbs_origin = where("training.local_batch_size");
  const std::int64_t pp_mbs =
      job.Int("parallelism.pipeline_parallel_microbatch_size", 1, 1, "an integer >= 1");
  if (pp > 1) {
    if (local % pp_mbs != 0) {
      Fail(
          fmt::format("{}: parallelism.pipeline_parallel_microbatch_size: must divide "
                      "training.local_batch_size ({}); got {}",
                      job.Line("parallelism.pipeline_parallel_microbatch_size"), local, pp_mbs));
    }
    mbs = pp_mbs;
    mbs_origin = where("parallelism.pipeline_parallel_microbatch_size");
    if (accumulation > 1) {
      notes.push_back(fmt::format(
          "{} gradient-accumulation steps each run the pipeline on {} micro-batches; ppb "
          "simulates one pipeline of {} micro-batches, with one fill and drain",
          accumulation, local / pp_mbs, accumulation * (local / pp_mbs)));
    }
  }

  // ---- precision -----------------------------------------------------------
  const std::string param =
      job.Choice("training.mixed_precision_param", "bfloat16", {"bfloat16", "float32"});
  const std::string reduce = job.Choice("training.mixed_precision_reduce", "float32", {"float32"});
  const std::string dtype = job.Choice("training.dtype", "float32", {"bfloat16", "float32"});
  const bool fsdp = shard > 1;
  std::vector<std::string> converters = job.Strings("model.converters");
  std::string fp8_recipe;
  std::string fp8_origin;
  for (std::string& c : converters) {
    // torchtitan v0.1's names, which v0.2.2's own llama3_405b.toml still
    // writes (v0.2.2 registers only the quantize.* names and would raise
    // KeyError): read as the converter they named, and said so.
    if (c == "float8" || c == "mx") {
      notes.push_back(
          fmt::format("model.converters: \"{}\" is torchtitan v0.1's name; "
                      "v0.2.2 registers it as \"quantize.linear.{}\", and is read "
                      "as that",
                      c, c));
      c = "quantize.linear." + c;
    }
    if (c == "quantize.linear.float8") {
      const std::string recipe = job.Str("quantize.linear.float8.recipe_name", "tensorwise");
      if (recipe != "tensorwise") {
        job.Wrong("quantize.linear.float8.recipe_name",
                  "\"tensorwise\" or absent: ppb's FP8 recipes are delayed, tensorwise, "
                  "blockwise and mxfp8, and torchao's rowwise scaling is none of them");
      }
      if (job.Bool("quantize.linear.float8.emulate", false)) {
        notes.push_back(
            "quantize.linear.float8.emulate: the FP8 casts are emulated in high "
            "precision, so the GEMMs are simulated in BF16");
        continue;
      }
      fp8_recipe = "tensorwise";
      fp8_origin = where("model.converters");
    } else if (c == "quantize.linear.mx") {
      const std::string recipe = job.Str("quantize.linear.mx.recipe_name", "mxfp8_cublas");
      if (recipe.rfind("mxfp8", 0) != 0) {
        job.Wrong("quantize.linear.mx.recipe_name",
                  "an MXFP8 recipe (\"mxfp8_cublas\", torchtitan's default)");
      }
      fp8_recipe = "mxfp8";
      fp8_origin = where("model.converters");
    } else if (c == "quantize.grouped_mm.float8" || c == "quantize.grouped_mm.mx") {
      notes.push_back(
          fmt::format("model.converters: {} converts grouped experts, which {} {} "
                      "does not have",
                      c, model, flavor));
    } else {
      Fail(
          fmt::format("{}: model.converters: must name {}'s converters "
                      "(quantize.linear.float8, quantize.linear.mx, "
                      "quantize.grouped_mm.float8, quantize.grouped_mm.mx); got \"{}\"",
                      job.Line("model.converters"), kVersion, c));
    }
  }
  const bool fp8_gather = !fp8_recipe.empty() && fp8_recipe == "tensorwise" &&
                          job.Bool("quantize.linear.float8.enable_fsdp_float8_all_gather", false);

  // ---- training -------------------------------------------------------------
  o.Line(0, "training:");
  o.Key(2, "seq_length", seq, where("training.seq_len"));
  o.Key(2, "micro_batch_size", mbs, mbs_origin);
  o.Key(2, "global_batch_size", global,
        job.Get("training.global_batch_size") != nullptr &&
                job.Get("training.global_batch_size")->i > 0
            ? where("training.global_batch_size")
            : where("training.local_batch_size"));
  // FSDP2's MixedPrecisionPolicy: compute in mixed_precision_param,
  // gradients reduced in mixed_precision_reduce (float32). Without FSDP the
  // parameters stay in training.dtype and autocast computes in bf16.
  const bool bf16 = fsdp ? param == "bfloat16" : true;
  o.Key(2, "dtype", bf16 ? "bf16" : "fp32",
        fsdp ? where("training.mixed_precision_param") : where("training.dtype"));
  o.Key(2, "grad_dtype", "fp32", where("training.mixed_precision_reduce"));
  o.Key(2, "tensor_parallel", tp, where("parallelism.tensor_parallel_degree"));
  // torchtitan's TP plans shard the norms' activations along the sequence
  // (SequenceParallel) whenever TP is on.
  o.Key(2, "sequence_parallel", Bool(tp > 1), where("parallelism.tensor_parallel_degree"));
  if (job.Bool("parallelism.enable_async_tensor_parallel", false)) {
    o.Key(2, "tp_comm_overlap", "true", where("parallelism.enable_async_tensor_parallel"));
  }
  o.Key(2, "context_parallel", cp, where("parallelism.context_parallel_degree"));
  o.Key(2, "data_parallel", dp,
        shard_v != nullptr ? where("parallelism.data_parallel_shard_degree")
                           : world_where + " / the other degrees");
  const std::string reshard = job.Choice("parallelism.fsdp_reshard_after_forward", "default",
                                         {"default", "always", "never"});
  const bool offload = job.Bool("training.enable_cpu_offload", false);
  if (fsdp) {
    o.Key(2, "fsdp", "torch", where("parallelism.data_parallel_shard_degree"));
    if (rep > 1) {
      o.Key(2, "data_parallel_shard", shard, where("parallelism.data_parallel_shard_degree"));
    }
    if (reshard != "default") {
      o.Key(2, "reshard_after_forward", reshard, where("parallelism.fsdp_reshard_after_forward"));
    }
    if (offload) {
      o.Line(2, "offload: {optimizer: 1}", where("training.enable_cpu_offload"));
    }
  } else {
    if (offload) {
      job.Wrong("training.enable_cpu_offload",
                "false without FSDP (torchtitan's CPU offload is FSDP2's CPUOffloadPolicy; "
                "data_parallel_shard_degree is 1)");
    }
    if (cp > 1) {
      notes.push_back(
          "torchtitan shards the parameters over the CP group (FSDP on the "
          "dp_shard_cp mesh); ppb simulates them replicated there");
    }
  }
  if (!fp8_recipe.empty()) {
    o.Line(2, fmt::format("fp8: {{recipe: {}}}", fp8_recipe), fp8_origin);
    if (fp8_gather && fsdp) {
      o.Key(2, "fp8_param_gather", "true",
            where("quantize.linear.float8.enable_fsdp_float8_all_gather"));
    }
  }

  // ---- the pipeline ----------------------------------------------------------
  std::string schedule = job.Str("parallelism.pipeline_parallel_schedule", "1F1B");
  const ScheduleInfo* info = FindScheduleByAnyName(schedule);
  if (info == nullptr || info->torch_name.empty()) {
    std::vector<std::string> names;
    for (const ScheduleInfo& s : ScheduleRegistry()) {
      if (!s.torch_name.empty()) names.emplace_back(s.torch_name);
    }
    Fail(fmt::format(
        "{}: parallelism.pipeline_parallel_schedule: must be one of torch's "
        "schedules ppb simulates ({}); got \"{}\"",
        job.Line("parallelism.pipeline_parallel_schedule"), fmt::join(names, ", "), schedule));
  }
  schedule = std::string(info->torch_name);
  const std::string csv = job.Str("parallelism.pipeline_parallel_schedule_csv", "");
  if (!csv.empty() && pp > 1) {
    job.Wrong("parallelism.pipeline_parallel_schedule_csv",
              "empty: ppb does not read a schedule CSV as input");
  }
  const std::int64_t first_less =
      job.Int("parallelism.pipeline_parallel_first_stage_less_layers", 1, 0, "an integer >= 0");
  const std::int64_t last_less =
      job.Int("parallelism.pipeline_parallel_last_stage_less_layers", 1, 0, "an integer >= 0");
  const std::optional<std::int64_t> layers_per_stage =
      job.OptInt("parallelism.pipeline_parallel_layers_per_stage", 1, "an integer >= 1");
  std::vector<std::vector<std::string>> parts;
  const bool single = info->one_stage_per_rank;
  std::string split_origin = where("parallelism.pipeline_parallel_degree");
  if (pp == 1) {
    schedule = "1F1B";
    parts = DefaultParts(job, 1, f->n_layers, first_less, last_less, "");
  } else if (const TomlValue* given = job.Get("parallelism.module_fqns_per_model_part")) {
    split_origin = where("parallelism.module_fqns_per_model_part");
    if (given->kind != TomlValue::Kind::Array) {
      job.Wrong("parallelism.module_fqns_per_model_part", "an array of arrays of module names");
    }
    for (const TomlValue& part : given->items) {
      std::vector<std::string> names;
      if (part.kind != TomlValue::Kind::Array) {
        job.Wrong("parallelism.module_fqns_per_model_part", "an array of arrays of module names");
      }
      for (const TomlValue& n : part.items) {
        if (n.kind != TomlValue::Kind::String) {
          job.Wrong("parallelism.module_fqns_per_model_part", "an array of arrays of module names");
        }
        names.push_back(n.s);
      }
      parts.push_back(std::move(names));
    }
  } else {
    // pipeline_llm: the number of stages.
    std::int64_t stages = 0;
    const std::string info_text = layers_per_stage
                                      ? fmt::format(
                                            "Model has {} layers with pipeline_parallel_layers_per_"
                                            "stage={}",
                                            f->n_layers, *layers_per_stage)
                                      : "";
    if (layers_per_stage) {
      split_origin = where("parallelism.pipeline_parallel_layers_per_stage");
      stages = (f->n_layers + first_less + last_less + *layers_per_stage - 1) / *layers_per_stage;
      const std::string line = job.Line("parallelism.pipeline_parallel_layers_per_stage");
      if (stages % pp != 0) {
        Fail(
            fmt::format("{}: parallelism.pipeline_parallel_layers_per_stage: Number of "
                        "virtual stages ({}) must be divisible by pipeline parallel size ({}). "
                        "{} (torchtitan's pipeline_llm)",
                        line, stages, pp, info_text));
      }
      if (single && stages / pp != 1) {
        Fail(
            fmt::format("{}: parallelism.pipeline_parallel_layers_per_stage: Single stage "
                        "schedule requires exactly 1 stage per rank, but got {} stages per "
                        "rank. {} (torchtitan's pipeline_llm)",
                        line, stages / pp, info_text));
      }
      if (!single && stages / pp < 2) {
        Fail(
            fmt::format("{}: parallelism.pipeline_parallel_layers_per_stage: Multi-stage "
                        "schedule requires at least 2 stages per rank, but got {} stages per "
                        "rank. {} (torchtitan's pipeline_llm)",
                        line, stages / pp, info_text));
      }
    } else {
      stages = pp * (single ? 1 : 2);
    }
    parts = DefaultParts(job, stages, f->n_layers, first_less, last_less,
                         "parallelism.pipeline_parallel_degree");
  }
  // The fragment ParseTorchtitan reads: the split and the schedule.
  std::string fragment = "[parallelism]\n";
  fragment += fmt::format("pipeline_parallel_degree = {}\n", pp);
  fragment += fmt::format("pipeline_parallel_schedule = \"{}\"\n", schedule);
  fragment += "module_fqns_per_model_part = [\n";
  for (const auto& part : parts) {
    std::vector<std::string> quoted;
    for (const std::string& n : part) quoted.push_back("\"" + n + "\"");
    fragment += fmt::format("  [{}],\n", fmt::join(quoted, ", "));
  }
  fragment += "]\n";

  // ---- activation checkpointing (activation_checkpoint.py) ----------------
  const std::string mode = job.Choice("activation_checkpoint.mode", "selective",
                                      {"selective", "full", "memory_budget", "none"});
  run.recompute_origin = where("activation_checkpoint.mode");
  bool full = mode == "full";
  if (mode == "memory_budget") {
    job.Wrong("activation_checkpoint.mode",
              "selective, full or none: memory_budget leaves the choice to torch.compile's "
              "min-cut partitioner, which ppb does not model");
  }
  if (mode == "selective") {
    const std::string option = job.Str("activation_checkpoint.selective_ac_option", "2");
    run.recompute_origin = where("activation_checkpoint.selective_ac_option");
    if (option == "op") {
      run.recompute_all = "selective";
      notes.push_back(
          "activation_checkpoint: op-level selective AC (torchtitan saves every "
          "other matmul's output and recomputes the rest) is simulated as ppb's "
          "selective recompute (attention's core recomputed)");
    } else {
      std::int64_t every = -1;
      const bool digits =
          !option.empty() && option.size() <= 9 &&
          std::all_of(option.begin(), option.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) every = std::stoll(option);
      if (every < 0) {
        job.Wrong("activation_checkpoint.selective_ac_option",
                  "\"op\" or a whole number (full recompute on every N-th block; torchtitan's "
                  "_apply_layer_sac)");
      }
      // "not ac_freq or count % ac_freq == 0": 0 and 1 recompute every block.
      if (every <= 1) {
        full = true;
      } else {
        run.recompute_every = static_cast<int>(every);
      }
    }
  }
  fragment += fmt::format("[activation_checkpoint]\nmode = \"{}\"\n", full ? "full" : "none");
  run.pipeline_flags = fragment;
  run.pipeline_origins["split"] = split_origin;

  o.Line(0, "pipeline:");
  o.Key(2, "stages", pp, where("parallelism.pipeline_parallel_degree"));
  o.Key(2, "schedule", schedule, pp > 1 ? where("parallelism.pipeline_parallel_schedule") : "");
  const std::int64_t v = static_cast<std::int64_t>(parts.size()) / pp;
  if (v > 1) o.Key(2, "virtual_stages", v, split_origin);
  o.Line(0, "plan:");
  o.Key(2, "gpus", world, world_where);
  if (Status st = WriteCluster(o, in, path); !st.ok()) Fail(st.error().message);

  // ---- what was not read -------------------------------------------------
  (void)dtype;
  (void)reduce;
  const std::vector<std::string> ignored = job.Unread();
  if (!ignored.empty()) {
    notes.push_back(fmt::format("ignored (ppb does not model them): {}", fmt::join(ignored, " ")));
  }
  run.yaml = std::move(o.yaml_);
  run.origins = std::move(o.origins_);
  return run;
}

}  // namespace

Result<LaunchRun> ReadTorchtitanLaunch(const std::string& path, std::string_view text,
                                       const LaunchInputs& inputs) {
  Result<TomlDocument> doc = ReadToml(path, text);
  if (!doc.ok()) return doc.error();
  try {
    Job job(path, std::move(*doc));
    return Translate(job, inputs);
  } catch (const Bad& b) {
    return Error{"", b.message};
  }
}

}  // namespace ppb
