// torchtitan's forms of a strategy (conventions.md,
// torchtitan). Two versions:
// - torchtitan main at b5bcd76c (2026-08-21; torchtitan/config/configs.py,
//   torchtitan/trainer.py, torchtitan/distributed/activation_checkpoint.py
//   and pipeline_parallel.py): configs are Python functions returning a
//   Trainer.Config, so the form is assignments to its fields
//   (config.parallelism.pipeline_parallel_degree,
//   .pipeline_parallel_schedule[_csv], .module_fqns_per_model_part,
//   .num_pp_microbatches; config.training.disable_cuda_graphs, which
//   Trainer.Config.__post_init__ requires under pipeline parallelism
//   (#3559), and the token counts of a micro-batch; config.
//   activation_checkpoint, a policy object since #3674: None or
//   FullAC.Config(), whose default is SelectiveAC.Config(), so None is
//   written out). The LM head is the module lm_head.
// - torchtitan v0.2.2 ("torchtitan-0.2.2"): the TOML job config
//   ([parallelism], [activation_checkpoint] mode); the head is output.
// Both name the schedule and write a schedule CSV when the simulated order
// is not the one torch's named schedule runs. Refusals are Errors named
// "--emit torchtitan" / "--emit torchtitan-0.2.2". The two forms' shared
// names are in torchtitan_form.h; their reader is torchtitan_read.cpp.
#include "apps/output/emit.h"

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

#include "apps/input/search_problem.h"
#include "apps/input/torchtitan_models.h"
#include "apps/output/emit_common.h"
#include "apps/output/output.h"
#include "apps/output/torchtitan_form.h"
#include "core/strategy.h"
#include "schedules/schedule.h"

namespace ppb {

using namespace emit_detail;  // NOLINT: the helpers of emit_common.h

namespace {

// torch's name of a ppb schedule (conventions.md, torch schedule names;
// torch get_schedule_class, v2.14.1).
std::string TorchScheduleName(const std::string& schedule) {
  const ScheduleInfo* info = FindSchedule(schedule);
  return info != nullptr ? std::string(info->torch_name)
                         : std::string("PipelineScheduleMulti");
}

}  // namespace

std::vector<std::string> emit_detail::TorchtitanModules(const std::vector<Layer>& layers,
                                                       size_t begin, size_t end,
                                                       const char* head) {
  std::vector<std::string> out;
  int decoder = 0, mtp = 0;
  for (size_t i = 0; i < end; ++i) {
    const LayerKind k = layers[i].kind;
    std::vector<std::string> names;
    if (k == LayerKind::Embedding) {
      names = {"tok_embeddings"};
    } else if (k == LayerKind::Head) {
      names = {"norm", head};
    } else if (k == LayerKind::Mtp) {
      // main's MTPDecoder.mtp_layers (deepseek_v3/mtp.py).
      names = {"mtp_layers." + std::to_string(mtp++)};
    } else {
      names = {"layers." + std::to_string(decoder++)};
    }
    if (i >= begin) out.insert(out.end(), names.begin(), names.end());
  }
  return out;
}

// The low-precision recipe as torchtitan's quantization converters
// (torchtitan main b5bcd76c, torchtitan/components/quantization:
// Float8LinearConverter recipe_name tensorwise | rowwise, with
// Float8GroupedExpertsConverter for MoE experts; MXFP8LinearConverter and
// MXFP8GroupedExpertsConverter; NVFP4LinearConverter), passed to the
// model's model_registry(..., converters=[...]); or what it cannot express.
static std::string TorchtitanPrecision(const RunConfig& config, bool python) {
  const LowPrecision& low = config.training.low;
  const bool moe = config.architecture.experts > 0;
  std::string converters;
  switch (low.recipe) {
    case Recipe::Fp8Tensorwise:
      if (python) {
        // main's Float8LinearConverter.Config.recipe_name is Literal["rowwise",
        // "rowwise_with_gw_hp"] (components/quantization/float8.py at
        // b5bcd76c): tensorwise is gone.
        return "cannot express fp8-tensorwise: torchtitan main's Float8LinearConverter "
               "scales per row only (recipe_name rowwise | rowwise_with_gw_hp); the nearest "
               "is Float8LinearConverter.Config(recipe_name=\"rowwise\"), which ppb "
               "simulates as fp8-blockwise";
      }
      converters = "Float8LinearConverter.Config(recipe_name=\"tensorwise\", "
                   "filter_fqns=[\"lm_head\", \"router.gate\"])";
      if (moe) converters += ", Float8GroupedExpertsConverter.Config()";
      break;
    case Recipe::Mxfp8:
      converters = "MXFP8LinearConverter.Config(fqns=[\"attention\", "
                   "\"feed_forward\", \"shared_experts\"])";
      if (moe) converters += ", MXFP8GroupedExpertsConverter.Config(pad_multiple=128)";
      break;
    case Recipe::Nvfp4:
      converters = "NVFP4LinearConverter.Config() (torchao's NVFP4 training is "
                   "a prototype)";
      break;
    case Recipe::Fp8Delayed:
      return "cannot express fp8-delayed: torchtitan's Float8 scales "
             "currently (tensorwise, rowwise), it has no delayed scaling; "
             "the nearest is Float8LinearConverter.Config(recipe_name="
             "\"tensorwise\")";
    case Recipe::Fp8Blockwise:
      if (python) {
        // --from torchtitan reads main's rowwise as fp8-blockwise, its
        // nearest: the same pair both ways.
        converters = "Float8LinearConverter.Config(recipe_name=\"rowwise\", "
                     "filter_fqns=[\"lm_head\", \"router.gate\"]) (per-row scales: ppb's "
                     "nearest to its 1x128 blocks)";
        if (moe) converters += ", Float8GroupedExpertsConverter.Config()";
        break;
      }
      return "cannot express fp8-blockwise: torchtitan's Float8 converters "
             "scale per tensor or per row, not in 1x128 / 128x128 blocks";
    case Recipe::None:
      return "";
  }
  std::string note = "quantization: converters=[" + converters + "]";
  note += python ? " in the model_spec's model_registry(...)"
                 : " (torchtitan 0.2.2 names them in [model] converters)";
  if (low.bf16_start + low.bf16_end > 0) {
    note += fmt::format("; keep the first {} and last {} blocks in bf16 with the "
                        "converter's fqns filter",
                        low.bf16_start, low.bf16_end);
  }
  if (low.param_gather) {
    note += "; fp8_param_gather is enable_fsdp_float8_all_gather=True on "
            "Float8LinearConverter (tensorwise only)";
  }
  return note;
}

namespace {

// "" when torchtitan main (b5bcd76) runs the job's data parallelism as ppb
// simulated it, else why not. torchtitan shards with FSDP2 over dp_shard x
// cp whenever either is above 1 (parallel_dims.fsdp_enabled) and runs DDP
// only with no other dimension (models/llama3/infra/parallelize.py: "DDP
// has not supported > 1D parallelism"); it has no ZeRO-1.
std::string TorchtitanDataParallel(const RunConfig& config) {
  const Training& t = config.training;
  if (t.sharding.fsdp == Fsdp::Torch) return "";
  if (t.dp == 1 && t.cp == 1) return "";
  const std::string simulated =
      t.sharding.fsdp == Fsdp::Megatron
          ? fmt::format("Megatron-FSDP {}", DpShardingName(t.sharding.strategy))
          : t.distributed_optimizer ? std::string("the distributed optimizer (ZeRO-1)")
                                    : std::string("DDP");
  if (t.cp > 1) {
    return fmt::format("cannot express {} with context parallelism: torchtitan shards the "
                       "parameters over dp_shard x cp with FSDP2 (simulate training.fsdp: "
                       "torch)", simulated);
  }
  if (t.sharding.strategy == DpSharding::NoShard && t.tp == 1 && t.ep == 1 &&
      config.shape.p == 1) {
    return "";
  }
  if (t.sharding.strategy == DpSharding::NoShard) {
    return "cannot express DDP beside other parallelism: torchtitan's DDP \"has not supported "
           "> 1D parallelism\" (parallelize.py; simulate training.fsdp: torch)";
  }
  return fmt::format("cannot express {}: torchtitan runs data parallelism as FSDP2 or HSDP "
                     "(simulate training.fsdp: torch) or as DDP, and has no ZeRO-1 or "
                     "Megatron-FSDP", simulated);
}

}  // namespace

namespace {

// The torchtitan v0.2.2 flavour (apps/input/torchtitan_models.h) that
// builds the model `a` (core/architecture.h SameLayers), or nullptr; of a
// shape several flavours build (8B, 8B_flex, 8B_varlen), the first with
// sdpa attention (ppb simulates the others' masks as causal attention).
// With `main`, main's flavours, whose deepseek_v3 takes its MTP layers as
// model_registry's num_mtp_layers.
const TorchtitanFlavour* FlavourOf(const Architecture& a, bool main = false) {
  const TorchtitanFlavour* found = nullptr;
  for (const std::string& model : TorchtitanModels(main)) {
    for (const std::string& name : TorchtitanFlavours(model, main)) {
      const TorchtitanFlavour* f = FindTorchtitanFlavour(model, name, main);
      Architecture built = FlavourArchitecture(*f);
      if (main && f->model == "deepseek_v3") built.mtp_layers = a.mtp_layers;
      if (!SameLayers(built, a)) continue;
      if (f->attention == "sdpa") return f;
      if (found == nullptr) found = f;
    }
  }
  return found;
}

// main's model_spec for the simulated model: model_registry("FLAVOR", ...)
// of the flavour whose layers are the run's (models/<model>/__init__.py at
// b5bcd76c), with the precision's converters (components/quantization:
// Float8LinearConverter rowwise for ppb's fp8-blockwise, its nearest;
// MXFP8LinearConverter; NVFP4LinearConverter; the grouped-experts
// converters for MoE), the flex dispatcher's moe_comm_backend and
// deepseek_v3's num_mtp_layers; the import lines it needs. Empty `call`
// when no flavour of main builds the model.
struct MainSpec {
  std::string imports;
  std::string call;
};

MainSpec MainModelSpec(const RunConfig& config) {
  MainSpec spec;
  const TorchtitanFlavour* f = FlavourOf(config.architecture, /*main=*/true);
  if (f == nullptr) return spec;
  const bool moe = config.architecture.experts > 0;
  std::vector<std::string> converters;
  switch (config.training.low.recipe) {
    case Recipe::Fp8Blockwise:
      converters.push_back(
          "Float8LinearConverter.Config(recipe_name=\"rowwise\", filter_fqns=[\"lm_head\", "
          "\"router.gate\"])");
      if (moe) converters.push_back("Float8GroupedExpertsConverter.Config()");
      break;
    case Recipe::Mxfp8:
      converters.push_back(
          "MXFP8LinearConverter.Config(fqns=[\"attention\", \"feed_forward\", "
          "\"shared_experts\"])");
      if (moe) converters.push_back("MXFP8GroupedExpertsConverter.Config(pad_multiple=128)");
      break;
    case Recipe::Nvfp4:
      converters.push_back("NVFP4LinearConverter.Config()");
      break;
    default:
      break;  // none, or what main cannot express (said in the notes)
  }
  spec.imports = fmt::format("from torchtitan.models.{} import model_registry\n", f->model);
  if (!converters.empty()) {
    std::vector<std::string> names;
    for (const std::string& c : converters) names.push_back(c.substr(0, c.find('.')));
    spec.imports += fmt::format("from torchtitan.components.quantization import {}\n",
                                fmt::join(names, ", "));
  }
  spec.call = fmt::format("model_registry(\"{}\"", f->flavor);
  if (!converters.empty()) {
    spec.call += fmt::format(", converters=[{}]", fmt::join(converters, ", "));
  }
  const MoeSettings& mo = config.training.moe;
  if (moe && mo.dispatcher == Dispatcher::Flex && ExpertTp(config.training) == 1) {
    spec.call += fmt::format(", moe_comm_backend=\"{}\"", FlexBackendName(mo.backend));
  }
  if (f->model == "deepseek_v3" && config.architecture.mtp_layers > 0) {
    spec.call += fmt::format(", num_mtp_layers={}", config.architecture.mtp_layers);
  }
  spec.call += ")";
  return spec;
}

// The data-parallel degrees as simulated, in both forms: FSDP2 (or HSDP
// with replicas) under training.fsdp: torch, else DDP (TorchtitanDataParallel
// refused what torchtitan cannot run); whether it is FSDP.
template <class Set>
bool SetDataParallel(const Training& t, Set& set) {
  const Sharding& sh = t.sharding;
  const bool fsdp = sh.fsdp == Fsdp::Torch;
  const int shard = !fsdp ? 1 : sh.shard > 0 ? sh.shard : t.dp;
  set("parallelism", "data_parallel_shard_degree", std::to_string(shard));
  set("parallelism", "data_parallel_replicate_degree", std::to_string(t.dp / shard));
  if (fsdp && sh.reshard != Reshard::Default) {
    set("parallelism", "fsdp_reshard_after_forward",
        fmt::format("\"{}\"", ReshardName(sh.reshard)));
  }
  return fsdp;
}

// The experts' degrees and dispatch, in both forms (ParallelismConfig and
// DebugConfig of v0.2.2 and of main at b5bcd76c):
// expert_parallel_degree, expert_tensor_parallel_degree where it differs
// from TP, expert_parallel_comm_backend standard (all-to-all), deepep or
// hybridep (not with expert TP), debug.moe_force_load_balance.
// torchtitan's MoE is dropless and has no combined 1F1B nor an all-gather
// dispatcher: said, not written (debug.moe_force_load_balance is the
// caller's, ForceBalance). The TOML form of a dense model writes
// none of them; `python` picks the form's literals.
template <class Set>
void WriteMoe(const RunConfig& config, Set& set, std::string& text, bool python) {
  const Training& t = config.training;
  if (python || config.architecture.experts > 0) {
    set("parallelism", "expert_parallel_degree", std::to_string(t.ep));
  }
  if (config.architecture.experts > 0) {
    const MoeSettings& mo = t.moe;
    if (ExpertTp(t) != t.tp) {
      set("parallelism", "expert_tensor_parallel_degree", std::to_string(ExpertTp(t)));
    }
    if (mo.dispatcher == Dispatcher::Flex && ExpertTp(t) > 1) {
      AddNote(text,
              "cannot express the flex dispatcher with expert tensor parallelism: "
              "torchtitan's DeepEP and HybridEP refuse expert TP");
    } else if (mo.dispatcher == Dispatcher::Flex && !python) {
      set("parallelism", "expert_parallel_comm_backend",
          fmt::format("\"{}\"", FlexBackendName(mo.backend)));
    }
    // main: model_registry's moe_comm_backend (MainModelSpec).
    // debug.moe_force_load_balance: set by the caller, after its
    // [parallelism] keys (a TOML table is written once).
    if (mo.dispatcher == Dispatcher::AllGather) {
      AddNote(text,
              "cannot express training.moe.dispatcher allgather: torchtitan "
              "dispatches by all-to-all (expert_parallel_comm_backend standard)");
    }
    if (mo.overlap_ep_comm) {
      AddNote(text,
              "cannot express training.moe.overlap_ep_comm: torchtitan has no "
              "combined 1F1B; the simulated step hid all-to-alls it will expose");
    }
    if (mo.capacity_factor > 0) {
      AddNote(text,
              "cannot express training.moe.capacity_factor: torchtitan's MoE is "
              "dropless");
    }
  }
}

// debug.moe_force_load_balance (DebugConfig, v0.2.2 and main) for a run
// whose experts are forced to balance.
template <class Set>
void ForceBalance(const RunConfig& config, Set& set, bool python) {
  if (config.architecture.experts > 0 && config.training.moe.force_balance) {
    set("debug", "moe_force_load_balance", python ? "True" : "true");
  }
}

// The rest of a v0.2.2 job config for a model from an architecture
// (job_config.py at v0.2.2; apps/input/torchtitan_launch.h reads it back):
// [parallelism] degrees, [training] batch and sequence, [model] flavour
// and converters. A rank's local batch is its micro-batches of one step:
// m micro-batches of pipeline_parallel_microbatch_size under pipeline
// parallelism, else one micro-batch with m - 1 more accumulated.
template <class Set>
void WriteV022Job(const RunConfig& config, Set& set, int m, std::string& text) {
  const Training& t = config.training;
  const bool pp = config.shape.p > 1;
  if (pp) set("parallelism", "pipeline_parallel_microbatch_size", std::to_string(t.micro_batch));
  set("parallelism", "tensor_parallel_degree", std::to_string(t.tp));
  if (t.tp > 1 && !t.sp) {
    AddNote(text, "cannot express tensor parallelism without sequence parallelism: "
                  "torchtitan v0.2.2's TP plans always shard the norms along the sequence");
  }
  if (t.tp > 1 && t.tp_comm_overlap) set("parallelism", "enable_async_tensor_parallel", "true");
  set("parallelism", "context_parallel_degree", std::to_string(t.cp));
  WriteMoe(config, set, text, false);
  const bool fsdp = SetDataParallel(t, set);
  const std::int64_t local = pp ? t.micro_batch * m : t.micro_batch;
  set("training", "local_batch_size", std::to_string(local));
  set("training", "global_batch_size", std::to_string(local * t.dp * (pp ? 1 : m)));
  if (config.training.seq > 0) set("training", "seq_len", std::to_string(config.training.seq));
  if (t.dtype == Dtype::Fp32) set("training", "mixed_precision_param", "\"float32\"");
  if (t.dtype == Dtype::Fp16) {
    AddNote(text, "cannot express training.dtype fp16: torchtitan v0.2.2's "
                  "mixed_precision_param is bfloat16 or float32");
  }
  if (t.grad_dtype != Dtype::Fp32) {
    AddNote(text, "cannot express training.grad_dtype bf16: torchtitan v0.2.2 reduces "
                  "gradients in float32 (mixed_precision_reduce)");
  }
  if (fsdp && t.offload.optimizer > 0) set("training", "enable_cpu_offload", "true");
  if (!fsdp && t.offload.optimizer > 0) {
    AddNote(text, "cannot express training.offload.optimizer without FSDP: torchtitan's CPU "
                  "offload is FSDP2's CPUOffloadPolicy");
  }
  const TorchtitanFlavour* f = FlavourOf(config.architecture);
  if (f == nullptr) {
    AddNote(text, "no torchtitan v0.2.2 flavour has this model's shape: set [model] name and "
                  "flavor to a flavour of yours");
  } else {
    set("model", "name", fmt::format("\"{}\"", f->model));
    set("model", "flavor", fmt::format("\"{}\"", f->flavor));
    // What v0.2.2 refuses for these models (--from torchtitan refuses it
    // too).
    if (const std::string why = V022PipelineRefusal(*f); config.shape.p > 1 && !why.empty()) {
      AddNote(text, fmt::format("cannot express pipeline parallelism for {} {} in torchtitan "
                                "v0.2.2: {}",
                                f->model, f->flavor, why));
    }
    if (const std::string why = V022ContextRefusal(*f); t.cp > 1 && !why.empty()) {
      AddNote(text, fmt::format("cannot express context parallelism for {} {} in torchtitan "
                                "v0.2.2: {}",
                                f->model, f->flavor, why));
    }
  }
  const LowPrecision& low = t.low;
  if (low.recipe == Recipe::Fp8Tensorwise) {
    set("model", "converters", "[\"quantize.linear.float8\"]");
    if (low.param_gather && fsdp) {
      set("quantize.linear.float8", "enable_fsdp_float8_all_gather", "true");
    }
  } else if (low.recipe == Recipe::Mxfp8) {
    set("model", "converters", "[\"quantize.linear.mx\"]");
  }
  ForceBalance(config, set, false);
}

}  // namespace

Result<Emission> emit_detail::EmitTorchtitan(Framework f, const RunConfig& config,
                                             const Program& program) {
  const TorchtitanForm& form = FormOf(f);
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const int p = config.shape.p, v = config.shape.v, m = config.shape.m;
  if (Status st = CheckEmbeddingFirstHeadLast(f, layers, form.mtp); !st.ok()) {
    return st.error();
  }
  for (const Layer& l : layers) {
    if (l.kind == LayerKind::Other) {
      return Fail(f, "has no module name for layer " + l.name +
                         " (kind other); torchtitan's LLM modules are "
                         "tok_embeddings, layers.N, norm and " + form.head);
    }
  }
  if (!config.derived.empty()) {
    if (std::string why = TorchtitanDataParallel(config); !why.empty()) return Fail(f, why);
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

  // Activation checkpointing: torchtitan applies one policy to every
  // transformer block; ppb maps none and all-"full".
  bool full = false;
  std::string ac_note;
  if (AnyRecompute(s)) {
    full = true;
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string mode = ModeOf(layers, s, i);
      const bool decoder = IsDecoder(layers[i].kind);
      if ((decoder && mode != "full") || (!decoder && !mode.empty())) full = false;
    }
    if (!full) {
      ac_note =
          fmt::format("activation checkpointing left off: torchtitan applies one {} "
                      "to every transformer block, and the strategy recomputes ",
                      form.python ? "policy" : "mode") +
          RecomputeSummary(config);
    }
  }

  Emission e;
  e.framework = f;
  e.recompute_expressed = !AnyRecompute(s) || full;
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
  MainSpec spec;
  if (form.python) {
    AddNote(text, "set on the Trainer.Config your --module/--config function returns");
    if (full) text += fmt::format("from {} import FullAC\n", kAcModule);
    if (!config.derived.empty()) spec = MainModelSpec(config);
    text += spec.imports;
    if (!spec.call.empty()) text += "config.model_spec = " + spec.call + "\n";
  }
  set("parallelism", "pipeline_parallel_degree", std::to_string(p));
  const bool csv = !why_csv.empty();
  // With a CSV, torchtitan runs _PipelineScheduleRuntime on the CSV's order
  // and takes only the ranks' stages from the named schedule
  // (pipeline_parallel.py, _get_pp_rank_to_stage_indices_mapping: the v
  // style for ZBVZeroBubble and DualPipeV, else the loop style), so a V
  // placement names a V schedule.
  const bool v_style = PlacementOf(config.schedule, v) == StagePlacement::V;
  std::string named = TorchScheduleName(config.schedule);
  if (csv) {
    named = !v_style                                  ? "PipelineScheduleMulti"
            : named == "ZBVZeroBubble" || named == "DualPipeV" ? named
                                                       : "ZBVZeroBubble";
  }
  set("parallelism", "pipeline_parallel_schedule", fmt::format("\"{}\"", named));
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
  const std::int64_t seq = config.training.seq;
  const std::int64_t mbs = config.training.micro_batch;
  if (form.python) {
    // main: pipeline micro-batches per data-parallel rank, and the tokens of
    // one of them (num_tokens_per_microbatch_per_dp_rank = micro-batch size
    // x sequence length; the trainer takes num_pp_microbatches times that
    // per rank and step); CUDA graphs refuse pipeline parallelism.
    set("parallelism", "num_pp_microbatches", std::to_string(m));
    if (seq > 0) {
      set("training", "num_tokens_per_microbatch_per_dp_rank", std::to_string(mbs * seq));
      set("training", "max_context_length", std::to_string(seq));
    }
    if (p > 1) set("training", "disable_cuda_graphs", "True");
    if (!config.derived.empty()) {
      // The job's other dimensions (ParallelismConfig, TrainingConfig at
      // b5bcd76c): torchtitan's world is dp_replicate x dp_shard x cp x tp
      // x pp; its data parallelism shards (FSDP) as the distributed
      // optimizer does, else replicates (DDP); the step's tokens are
      // global batch x sequence.
      const Training& t = config.training;
      set("parallelism", "tensor_parallel_degree", std::to_string(t.tp));
      set("parallelism", "enable_sequence_parallel", t.sp && t.tp > 1 ? "True" : "False");
      set("parallelism", "context_parallel_degree", std::to_string(t.cp));
      WriteMoe(config, set, text, true);
      ForceBalance(config, set, true);
      // FSDP2 (or HSDP) as simulated; else DDP (TorchtitanDataParallel
      // refused what torchtitan cannot run).
      const bool fsdp = SetDataParallel(t, set);
      if (fsdp && t.offload.optimizer > 0) set("training", "enable_cpu_offload", "True");
      if (t.global_batch > 0 && seq > 0) {
        set("training", "num_tokens_per_train_step", std::to_string(t.global_batch * seq));
      }
    }
    text += fmt::format("config.activation_checkpoint = {}\n", full ? "FullAC.Config()" : "None");
  } else {
    if (!config.derived.empty()) WriteV022Job(config, set, m, text);
    set("activation_checkpoint", "mode", full ? "\"full\"" : "\"none\"");
  }
  const std::string style =
      v_style
          ? "rank r holds stages r and 2p-1-r (torchtitan's v style, which it "
            "takes for ZBVZeroBubble and DualPipeV)"
          : "stage s = chunk * p + rank (torchtitan's loop style)";
  if (form.python) {
    AddNote(text, fmt::format("{}, {} stage(s) per rank", style, v));
    if (seq <= 0) {
      AddNote(text, "set training.num_tokens_per_microbatch_per_dp_rank to the tokens of "
                    "one micro-batch (micro-batch size x sequence length) and "
                    "training.max_context_length to the sequence length; the config "
                    "gives no training.seq_length");
    }
  } else if (config.derived.empty()) {
    AddNote(text, fmt::format("{}, {} stage(s) per rank; m = {} micro-batches: set "
                              "training.local_batch_size = {} x "
                              "parallelism.pipeline_parallel_microbatch_size",
                              style, v, m, m));
  } else {
    AddNote(text, fmt::format("{}, {} stage(s) per rank", style, v));
  }
  if (csv) {
    AddNote(text, why_csv +
                      "; save the schedule CSV printed with this "
                      "fragment as " +
                      kCsvName + " (torch's _load_csv format)");
  }
  if (!ac_note.empty()) AddNote(text, ac_note);
  // The v0.2.2 job config of a derived model names its Float8 and MX
  // converters itself (WriteV022Job).
  const Recipe recipe = config.training.low.recipe;
  const bool written = !form.python && !config.derived.empty() &&
                       (recipe == Recipe::Fp8Tensorwise || recipe == Recipe::Mxfp8);
  if (config.training.low.on() && !written) {
    AddNote(text, TorchtitanPrecision(config, form.python));
  }
  if (form.python && !config.derived.empty() && spec.call.empty()) {
    std::string note = "no torchtitan main flavour builds this model: keep your function's "
                       "model_spec";
    const MoeSettings& mo = config.training.moe;
    if (config.architecture.experts > 0 && mo.dispatcher == Dispatcher::Flex &&
        ExpertTp(config.training) == 1) {
      note += fmt::format(", with moe_comm_backend=\"{}\" in its model_registry(...)",
                          FlexBackendName(mo.backend));
    }
    AddNote(text, note);
  }
  return e;
}

}  // namespace ppb
