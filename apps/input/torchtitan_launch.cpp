// ReadTorchtitanLaunch (apps/input/torchtitan_launch.h): a v0.2.2 job
// config's fields, by their TOML keys, written out as a ppb config whose
// every line remembers the key it came from.
#include "apps/input/torchtitan_launch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "apps/input/architecture_writer.h"
#include "apps/input/python_config.h"
#include "apps/input/toml_reader.h"
#include "apps/input/torchtitan_job.h"
#include "apps/input/torchtitan_models.h"
#include "schedules/schedule.h"

namespace ppb {
namespace {

using namespace torchtitan_detail;  // NOLINT: the job of torchtitan_job.h

// `main`: a config function of main's registry (its model from the
// registry's folder), else a v0.2.2 TOML.
struct MainInput {
  std::string model;
  std::string function;
};

LaunchRun Translate(Job& job, const LaunchInputs& in, const MainInput* main) {
  LaunchRun run;
  ConfigWriter o;
  std::vector<std::string>& notes = run.notes;
  const std::string& path = job.path();
  auto where = [&](const std::string& key) { return job.Where(key); };
  const char* version = main != nullptr ? kMainVersion : kVersion;
  // Unknown fields first: a misspelt key is the error, not what follows.
  job.CheckFields(main != nullptr ? MainSections() : ReadSections(), version);

  // ---- the model ---------------------------------------------------------
  const std::string name_key = main != nullptr ? "model_spec" : "model.name";
  const std::string flavor_key = main != nullptr ? "model_spec.flavor" : "model.flavor";
  const std::string model = main != nullptr ? main->model : job.Str("model.name", "llama3");
  const std::vector<std::string> models = TorchtitanModels(main != nullptr);
  if (std::find(models.begin(), models.end(), model) == models.end()) {
    if (main != nullptr) {
      Fail(
          fmt::format("{}: the model: must be one whose flavours ppb knows in {} ({}), taken "
                      "from the registry's folder (torchtitan/models/<model>/"
                      "config_registry.py); got \"{}\"",
                      path, version, fmt::join(models, ", "), model));
    }
    Fail(
        fmt::format("{}: model.name: must be a model whose flavours ppb knows ({}; "
                    "torchtitan's other models are not read yet); got "
                    "\"{}\"",
                    job.Line("model.name"), fmt::join(models, ", "), model));
  }
  if (main != nullptr) {
    const TomlValue* spec = job.Raw("model_spec");
    if (spec == nullptr || spec->kind != TomlValue::Kind::String || spec->s != "model_registry") {
      job.Wrong("model_spec", "model_registry(\"FLAVOR\", ...), the model's spec");
    }
  }
  const std::string flavor = job.Str(flavor_key, main != nullptr ? "" : "debugmodel");
  const TorchtitanFlavour* f = FindTorchtitanFlavour(model, flavor, main != nullptr);
  if (f == nullptr) {
    Fail(fmt::format("{}: {}: must be a {} flavour of {} ({}); got \"{}\"", job.Line(flavor_key),
                     flavor_key, model, version,
                     fmt::join(TorchtitanFlavours(model, main != nullptr), ", "), flavor));
  }
  std::string attention(f->attention);
  if (main != nullptr) {
    // Any of main's backends (sdpa, flex, flex_flash, varlen): only its
    // mask differs in what ppb simulates, said below.
    attention = job.Str("model_spec.attn_backend", attention);
  }
  const std::string shape = where(flavor_key);
  o.Line(0, main != nullptr
                ? fmt::format("# ppb config read from {}, {}() ({} config "
                              "registry)",
                              path, main->function, version)
                : fmt::format("# ppb config read from {} ({} job config)", path, kVersion));
  o.Line(0, "model:");
  o.Text(2, "name", fmt::format("{} {}", model, flavor), where(name_key));
  // main's deepseek_v3 model_registry(..., num_mtp_layers=N): N MTP blocks
  // after the last layer (deepseek_v3/__init__.py _build_mtp_layers: each a
  // copy of the last block with enorm, hnorm, eh_proj and mtp_norm, the
  // embedding and head shared), DeepSeek-V3's MTP modules. mtp.py refuses
  // pipeline and context parallelism with them (checked with the degrees).
  const std::int64_t mtp_layers =
      main != nullptr && f->model == "deepseek_v3"
          ? job.Int("model_spec.num_mtp_layers", 0, 0, "an integer >= 0")
          : 0;
  // The flavour's model by its modules' rules (torchtitan_models.h).
  Architecture arch = FlavourArchitecture(*f);
  arch.mtp_layers = static_cast<int>(mtp_layers);
  const std::string mtp_origin = where("model_spec.num_mtp_layers");
  if (Status st = WriteArchitecture(
          o, arch,
          [&](std::string_view key) { return key == "mtp_layers" ? mtp_origin : shape; });
      !st.ok()) {
    Fail(shape + ": " + st.error().message);
  }
  if (attention != "sdpa") {
    notes.push_back(
        fmt::format("{} {}: attention {} with its block-causal mask is "
                    "simulated as causal attention over the whole sequence",
                    flavor_key, flavor, attention));
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
  if (f->experts == 0 && (ep != 1 || etp != 1)) {
    const std::string key = ep != 1 ? "parallelism.expert_parallel_degree"
                                    : "parallelism.expert_tensor_parallel_degree";
    job.Wrong(key, fmt::format("1 for {} {} (a dense model: no experts)", model, flavor));
  }
  for (const auto& [degree, key] : {std::pair{pp, "parallelism.pipeline_parallel_degree"},
                                    std::pair{cp, "parallelism.context_parallel_degree"}}) {
    if (mtp_layers > 0 && degree > 1) {
      // deepseek_v3/mtp.py: "MTP does not support pipeline parallelism
      // yet." / "... context parallelism ...".
      job.Wrong(key,
                "1 with model_spec.num_mtp_layers > 0 (torchtitan's MTP decoder refuses "
                "pipeline and context parallelism, deepseek_v3/mtp.py)");
    }
  }
  if (const std::string why = V022PipelineRefusal(*f); pp > 1 && !why.empty()) {
    job.Wrong("parallelism.pipeline_parallel_degree",
              fmt::format("1 for {} {} in {} ({})", f->model, flavor, version, why));
  }
  if (const std::string why = V022ContextRefusal(*f); cp > 1 && !why.empty()) {
    job.Wrong("parallelism.context_parallel_degree",
              fmt::format("1 for {} {} in {} ({})", f->model, flavor, version, why));
  }
  if (ep > 1 && etp != 1 && etp != tp) {
    // ParallelDims: "Currently we only support ETP=TP or ETP=1".
    job.Wrong("parallelism.expert_tensor_parallel_degree",
              fmt::format("1 or the TP degree ({}) (torchtitan's ParallelDims)", tp));
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
  // ParallelDims' sparse mesh pp x dp_replicate x efsdp x ep x etp: the
  // expert ranks come out of dp_shard x cp x tp, efsdp = dp_shard x cp x tp
  // / (etp x ep) whole.
  const std::int64_t expert_tp = ep > 1 ? etp : tp;
  if (ep > 1 && (shard * cp * tp) % (ep * etp) != 0) {
    Fail(fmt::format(
        "{}: parallelism.expert_parallel_degree: ep x etp ({} x {}) must divide "
        "dp_shard x cp x tp ({} x {} x {}; torchtitan's ParallelDims takes the "
        "expert ranks from them); got {}",
        job.Line("parallelism.expert_parallel_degree"), ep, etp, shard, cp, tp, ep * etp));
  }

  // ---- batch and sequence ------------------------------------------------
  std::int64_t seq = 0, mbs = 0, global = 0, accumulation = 1, per_pipeline = 1;
  std::string seq_origin, mbs_origin, global_origin;
  if (main != nullptr) {
    // main's trainer.py: a micro-batch of num_tokens_per_microbatch_per_dp_rank
    // tokens packed into sequences of max_context_length; a rank runs
    // num_pp_microbatches of them per pipeline step (1 without PP); a step
    // takes num_tokens_per_train_step (-1: one round on every rank).
    const std::int64_t tokens =
        job.Int("training.num_tokens_per_microbatch_per_dp_rank", 16384, 1, "an integer >= 1");
    seq = job.Int("training.max_context_length", 2048, 1, "an integer >= 1");
    seq_origin = where("training.max_context_length");
    if (tokens % seq != 0) {
      Fail(
          fmt::format("{}: training.num_tokens_per_microbatch_per_dp_rank: must be a multiple "
                      "of training.max_context_length ({}): ppb simulates whole sequences, "
                      "the packed dataloader's; got {}",
                      job.Line("training.num_tokens_per_microbatch_per_dp_rank"), seq, tokens));
    }
    mbs = tokens / seq;
    mbs_origin = where("training.num_tokens_per_microbatch_per_dp_rank");
    const bool sp_on = job.Bool("parallelism.enable_sequence_parallel", true);
    const std::int64_t divisor = (sp_on ? tp : 1) * (cp > 1 ? 2 * cp : 1);
    if (tokens % divisor != 0) {
      Fail(
          fmt::format("{}: training.num_tokens_per_microbatch_per_dp_rank: The number of "
                      "tokens per pipeline microbatch ({}) must be divisible by {} for the "
                      "configured sequence/context parallelism (torchtitan's trainer.py)",
                      job.Line("training.num_tokens_per_microbatch_per_dp_rank"), tokens, divisor));
    }
    if (pp > 1) {
      per_pipeline = job.Int("parallelism.num_pp_microbatches", 1, 1,
                             "an integer >= 1 (parallelism.num_pp_microbatches must be greater "
                             "than 0)");
    }
    const std::int64_t per_rank = tokens * per_pipeline;
    std::int64_t step = per_rank * dp;
    global_origin = where("training.num_tokens_per_microbatch_per_dp_rank");
    if (const TomlValue* g = job.Get("training.num_tokens_per_train_step")) {
      if (g->kind != TomlValue::Kind::Int || (g->i != -1 && g->i < 1) ||
          g->i > (std::int64_t{1} << 40)) {
        job.Wrong("training.num_tokens_per_train_step", "-1 or an integer >= 1");
      }
      if (g->i > 0) {
        step = g->i;
        global_origin = where("training.num_tokens_per_train_step");
      }
    }
    if (step % (per_rank * dp) != 0) {
      Fail(
          fmt::format("{}: training.num_tokens_per_train_step ({}) must be divisible by the "
                      "number of tokens processed globally in one gradient accumulation "
                      "iteration ({}) (torchtitan's trainer.py)",
                      job.Line("training.num_tokens_per_train_step"), step, per_rank * dp));
    }
    accumulation = step / (per_rank * dp);
    global = step / seq;
  } else {
    const std::int64_t local = job.Int("training.local_batch_size", 8, 1, "an integer >= 1");
    seq = job.Int("training.seq_len", 2048, 1, "an integer >= 1");
    seq_origin = where("training.seq_len");
    global = local * dp;
    global_origin = where("training.local_batch_size");
    if (const TomlValue* g = job.Get("training.global_batch_size")) {
      if (g->kind != TomlValue::Kind::Int || (g->i != -1 && g->i < 1) || g->i > (1 << 30)) {
        job.Wrong("training.global_batch_size",
                  "-1 (local_batch_size x the data-parallel "
                  "degree) or an integer >= 1");
      }
      if (g->i > 0) {
        global = g->i;
        global_origin = where("training.global_batch_size");
      }
    }
    if (global % (local * dp) != 0) {
      Fail(
          fmt::format("{}: training.global_batch_size: must be a multiple of local_batch_size "
                      "x the data-parallel degree ({} x {} = {}; torchtitan's train.py); got {}",
                      job.Line("training.global_batch_size"), local, dp, local * dp, global));
    }
    accumulation = global / (local * dp);
    mbs = local;
    mbs_origin = where("training.local_batch_size");
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
      per_pipeline = local / pp_mbs;
    }
  }
  if (pp > 1 && accumulation > 1) {
    notes.push_back(
        fmt::format("{} gradient-accumulation steps each run the pipeline on {} micro-batches; ppb "
                    "simulates one pipeline of {} micro-batches, with one fill and drain",
                    accumulation, per_pipeline, accumulation * per_pipeline));
  }

  // ---- precision -----------------------------------------------------------
  const std::string param =
      job.Choice("training.mixed_precision_param", "bfloat16", {"bfloat16", "float32"});
  // Checked, not used: reduce has one choice, and dtype is the parameters'
  // (FP32 master weights are simulated whatever it is).
  job.Choice("training.mixed_precision_reduce", "float32", {"float32"});
  job.Choice("training.dtype", "float32", {"bfloat16", "float32"});
  const bool fsdp = shard > 1;
  std::string fp8_recipe;
  std::string fp8_origin;
  bool fp8_gather = false;
  // torchao's rowwise FP8 (a scale per row of each operand) is none of
  // ppb's recipes; the nearest in quantize and GEMM cost is blockwise (a
  // scale per 1x128 block), said so.
  auto float8 = [&](const std::string& recipe_key, const std::string& recipe,
                    const std::string& origin) {
    if (recipe == "tensorwise") {
      fp8_recipe = "tensorwise";
    } else if (recipe == "rowwise" || recipe == "rowwise_with_gw_hp") {
      fp8_recipe = "blockwise";
      notes.push_back(
          fmt::format("{}: torchao's {} FP8 scaling (a scale per row) is simulated "
                      "as ppb's fp8-blockwise (a scale per 1x128 block), the "
                      "nearest recipe ppb has",
                      recipe_key, recipe));
    } else {
      job.Wrong(recipe_key, "tensorwise, rowwise or rowwise_with_gw_hp (torchao's recipes)");
    }
    fp8_origin = origin;
  };
  if (main != nullptr) {
    // main's converters are objects passed to model_registry (components/
    // quantization at b5bcd76c): Float8LinearConverter (recipe_name rowwise
    // by default), MXFP8LinearConverter, NVFP4LinearConverter; the grouped
    // experts' converters have nothing to convert in a dense model.
    const TomlValue* list = job.Get("model_spec.converters");
    const size_t n =
        list != nullptr && list->kind == TomlValue::Kind::Array ? list->items.size() : 0;
    for (size_t k = 0; k < n; ++k) {
      const std::string type = list->items[k].s;
      const std::string at = fmt::format("model_spec.converters.{}", k);
      if (type == "Float8LinearConverter.Config") {
        if (job.Bool(at + ".emulate", false)) {
          notes.push_back(at +
                          ".emulate: the FP8 casts are emulated in high precision, so the "
                          "GEMMs are simulated in BF16");
          continue;
        }
        float8(at + ".recipe_name", job.Str(at + ".recipe_name", "rowwise"),
               where("model_spec.converters"));
      } else if (type == "MXFP8LinearConverter.Config") {
        fp8_recipe = "mxfp8";
        fp8_origin = where("model_spec.converters");
      } else if (type == "NVFP4LinearConverter.Config") {
        fp8_recipe = "nvfp4";
        fp8_origin = where("model_spec.converters");
      } else if (type == "Float8GroupedExpertsConverter.Config" ||
                 type == "MXFP8GroupedExpertsConverter.Config") {
        notes.push_back(fmt::format("{}: {} converts grouped experts, which {} {} does not have",
                                    at, type, model, flavor));
      } else {
        Fail(
            fmt::format("{}: {}: must be one of {}'s precision converters "
                        "(Float8LinearConverter, MXFP8LinearConverter, NVFP4LinearConverter); "
                        "got {}",
                        job.Line("model_spec.converters"), at, version, type));
      }
    }
  }
  std::vector<std::string> converters =
      main != nullptr ? std::vector<std::string>() : job.Strings("model.converters");
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
      if (job.Bool("quantize.linear.float8.emulate", false)) {
        notes.push_back(
            "quantize.linear.float8.emulate: the FP8 casts are emulated in high "
            "precision, so the GEMMs are simulated in BF16");
        continue;
      }
      float8("quantize.linear.float8.recipe_name", recipe, where("model.converters"));
      // FSDP2's FP8 all-gather is tensorwise only (torchao).
      fp8_gather = fp8_recipe == "tensorwise" &&
                   job.Bool("quantize.linear.float8.enable_fsdp_float8_all_gather", false);
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

  // ---- training -------------------------------------------------------------
  o.Line(0, "training:");
  o.Key(2, "seq_length", seq, seq_origin);
  o.Key(2, "micro_batch_size", mbs, mbs_origin);
  o.Key(2, "global_batch_size", global, global_origin);
  // FSDP2's MixedPrecisionPolicy: compute in mixed_precision_param,
  // gradients reduced in mixed_precision_reduce (float32). Without FSDP the
  // parameters stay in training.dtype and autocast computes in bf16.
  const bool bf16 = fsdp ? param == "bfloat16" : true;
  o.Key(2, "dtype", bf16 ? "bf16" : "fp32",
        fsdp ? where("training.mixed_precision_param") : where("training.dtype"));
  o.Key(2, "grad_dtype", "fp32", where("training.mixed_precision_reduce"));
  o.Key(2, "tensor_parallel", tp, where("parallelism.tensor_parallel_degree"));
  // v0.2.2's TP plans shard the norms' activations along the sequence
  // (SequenceParallel) whenever TP is on; main makes it a field.
  const bool sp =
      tp > 1 && (main == nullptr || job.Bool("parallelism.enable_sequence_parallel", true));
  o.Key(2, "sequence_parallel", Bool(sp),
        main != nullptr ? where("parallelism.enable_sequence_parallel")
                        : where("parallelism.tensor_parallel_degree"));
  const std::string async_key = main != nullptr ? "compile.enable_async_tensor_parallel"
                                                : "parallelism.enable_async_tensor_parallel";
  if (job.Bool(async_key, false)) o.Key(2, "tp_comm_overlap", "true", where(async_key));
  o.Key(2, "context_parallel", cp, where("parallelism.context_parallel_degree"));
  if (f->experts > 0) {
    o.Key(2, "expert_parallel", ep, where("parallelism.expert_parallel_degree"));
    // The experts' communication: all-to-all ("standard"), or DeepEP's
    // kernels (ppb's flex dispatcher).
    // v0.2.2: parallelism.expert_parallel_comm_backend; main: the
    // model_registry argument moe_comm_backend (standard, deepep, hybridep).
    const std::string backend_key = main != nullptr ? "model_spec.moe_comm_backend"
                                                    : "parallelism.expert_parallel_comm_backend";
    const std::string backend =
        main != nullptr ? job.Choice(backend_key, "standard", {"standard", "deepep", "hybridep"})
                        : job.Choice(backend_key, "standard", {"standard", "deepep"});
    std::string moe;
    if (expert_tp != tp) moe += fmt::format("expert_tensor_parallel: {}", expert_tp);
    if (backend != "standard" && ep > 1) {
      moe += std::string(moe.empty() ? "" : ", ") + "dispatcher: flex, backend: " + backend;
    }
    // DebugConfig.moe_force_load_balance (v0.2.2 and main): tokens routed
    // round-robin, every expert the same load.
    const bool balanced = job.Bool("debug.moe_force_load_balance", false);
    if (balanced) moe += std::string(moe.empty() ? "" : ", ") + "force_balance: true";
    if (!moe.empty()) {
      o.Line(2, "moe: {" + moe + "}",
             backend != "standard" ? where(backend_key)
             : balanced            ? where("debug.moe_force_load_balance")
                                   : where("parallelism.expert_tensor_parallel_degree"));
    }
  }
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
  if (fp8_recipe == "nvfp4") {
    o.Line(2, "fp4: {format: e2m1, recipe: nvfp4}", fp8_origin);
  } else if (!fp8_recipe.empty()) {
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
        // main names the head lm_head, v0.2.2 output (the fragment's).
        names.push_back(main != nullptr && n.s == "lm_head" ? "output" : n.s);
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
  // The MTP blocks (pp is 1 with them) before the final norm, under
  // MTPDecoder's mtp_layers.
  for (std::int64_t k = 0; k < mtp_layers && !parts.empty(); ++k) {
    std::vector<std::string>& last = parts.back();
    const auto norm = std::find(last.begin(), last.end(), "norm");
    last.insert(norm, "mtp_layers." + std::to_string(k));
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

  // main (Trainer.Config): CUDA graphs refuse pipeline parallelism.
  if (main != nullptr && pp > 1 && !job.Bool("training.disable_cuda_graphs", false)) {
    Fail(
        fmt::format("{}: parallelism.pipeline_parallel_degree {}: CUDA graphs do not support "
                    "pipeline parallelism yet. Set --training.disable_cuda_graphs "
                    "(torchtitan's Trainer.Config); got training.disable_cuda_graphs False",
                    job.Line("parallelism.pipeline_parallel_degree"), pp));
  }

  // ---- activation checkpointing (activation_checkpoint.py) ----------------
  std::string mode;
  if (main != nullptr) {
    // main: a policy object, SelectiveAC.Config() (op-level) by default.
    const TomlValue* ac = job.Raw("activation_checkpoint");
    const std::string policy = ac == nullptr ? "SelectiveAC.Config" : ac->s;
    mode = policy == "None"                    ? "none"
           : policy == "FullAC.Config"         ? "full"
           : policy == "SelectiveAC.Config"    ? "selective"
           : policy == "MemoryBudgetAC.Config" ? "memory_budget"
                                               : "";
    if (ac != nullptr && (ac->kind != TomlValue::Kind::String || mode.empty())) {
      job.Wrong("activation_checkpoint",
                "None, FullAC.Config(), SelectiveAC.Config() or MemoryBudgetAC.Config()");
    }
    run.recompute_origin = where("activation_checkpoint");
  } else {
    mode = job.Choice("activation_checkpoint.mode", "selective",
                      {"selective", "full", "memory_budget", "none"});
    run.recompute_origin = where("activation_checkpoint.mode");
  }
  const std::string mode_key =
      main != nullptr ? "activation_checkpoint" : "activation_checkpoint.mode";
  bool full = mode == "full";
  if (mode == "memory_budget") {
    job.Wrong(mode_key,
              "selective, full or none: memory_budget leaves the choice to torch.compile's "
              "min-cut partitioner, which ppb does not model");
  }
  if (mode == "selective") {
    const std::string option =
        main != nullptr ? "op" : job.Str("activation_checkpoint.selective_ac_option", "2");
    if (main == nullptr) run.recompute_origin = where("activation_checkpoint.selective_ac_option");
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
  FinishLaunch(run, o, job.Unread());
  return run;
}

}  // namespace

std::optional<RegistryFunction> SplitRegistryFunction(const std::string& path) {
  const size_t colon = path.rfind(':');
  if (colon == std::string::npos || colon < 3 || path.compare(colon - 3, 3, ".py") != 0) {
    return std::nullopt;
  }
  return RegistryFunction{path.substr(0, colon), path.substr(colon + 1)};
}

std::string TorchtitanFile(const std::string& path) {
  const std::optional<RegistryFunction> fn = SplitRegistryFunction(path);
  return fn ? fn->file : path;
}

Result<LaunchRun> ReadTorchtitanLaunch(const std::string& path, std::string_view text,
                                       const LaunchInputs& inputs) {
  // "registry.py:function": a config function of main's registry.
  if (const std::optional<RegistryFunction> fn = SplitRegistryFunction(path)) {
    return ReadTorchtitanFunction(fn->file, text, fn->function, inputs);
  }
  if (path.size() >= 3 && path.compare(path.size() - 3, 3, ".py") == 0) {
    Result<std::vector<std::string>> fns = ConfigFunctions(path, text);
    if (!fns.ok()) return fns.error();
    return Error{"", fmt::format("{}: the config function: must be named as FILE:FUNCTION (a "
                                 "Python registry holds many: {}); got the file alone",
                                 path, fmt::join(*fns, ", "))};
  }
  Result<TomlDocument> doc = ReadToml(path, text);
  if (!doc.ok()) return doc.error();
  try {
    Job job(path, std::move(*doc));
    return Translate(job, inputs, nullptr);
  } catch (const Bad& b) {
    return Error{"", b.message};
  }
}

Result<LaunchRun> ReadTorchtitanFunction(const std::string& path, std::string_view text,
                                         const std::string& function, const LaunchInputs& inputs) {
  // torchtitan main's models that are not decoder-only language models,
  // named before their config is read (each README at b5bcd76c): qwen3_5
  // and kimi_k2_7 run a vision encoder on multimodal data (all but
  // kimi_k2_7's moonlight_16b_a3b, "the text-only DeepSeekV3 sibling",
  // which its own checks read), flux is a diffusion model.
  const std::string folder = std::filesystem::path(path).parent_path().filename().string();
  static const std::pair<const char*, const char*> kNotLanguage[] = {
      {"qwen3_5", "a vision-language model (Qwen3.5: a vision encoder and patch merger beside "
                  "its hybrid decoder, trained on image-text data)"},
      {"kimi_k2_7", "a vision-language model (Kimi K2.5 and Kimi-VL: a vision encoder beside "
                    "the DeepSeek-V3-shaped decoder, trained on image-text data)"},
      {"flux", "a diffusion model (FLUX: an image generator with T5 and CLIP encoders)"}};
  for (const auto& [name, what] : kNotLanguage) {
    if (folder != name || function.rfind("moonlight", 0) == 0) continue;
    return Error{"", fmt::format("{}: the model: must be a decoder-only language model (ppb "
                                 "simulates those, not encoders beside them); got torchtitan's "
                                 "{}, {}",
                                 path, name, what)};
  }
  Result<PythonConfig> config = EvaluateConfigFunction(path, text, function);
  if (!config.ok()) return config.error();
  if (config->type != "Trainer.Config") {
    return Error{"", fmt::format("{}:{}: {}: must return a Trainer.Config(...); got a {}", path,
                                 config->return_line, function, config->type)};
  }
  // The model: the registry's folder (torchtitan/models/<model>/).
  std::map<std::string, Unevaluated> unknown;
  for (const auto& [key, u] : config->unknown) unknown[key] = Unevaluated{u.line, u.expression};
  try {
    Job job(path, std::move(config->values), std::move(unknown), true);
    MainInput main{folder, function};
    Result<LaunchRun> run = Translate(job, inputs, &main);
    if (run.ok()) {
      for (const PythonConfig::Unknown& c : config->not_run) {
        run->notes.push_back(fmt::format("line {}: {} is not run (ppb reads config functions "
                                         "as data, not as programs): what it changes is not "
                                         "read",
                                         c.line, c.expression));
      }
    }
    return run;
  } catch (const Bad& b) {
    return Error{"", b.message};
  }
}

}  // namespace ppb
