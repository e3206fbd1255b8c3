// A torchtitan v0.2.2 job config (a train_configs/*.toml, read with
// apps/input/toml_reader.h) as a ppb config, by torchtitan v0.2.2's field
// names and defaults (torchtitan/config/job_config.py):
// - [model] name and flavor: the flavour's shape (torchtitan_models.h);
//   converters "quantize.linear.float8" ([quantize.linear.float8]
//   recipe_name: none or tensorwise; rowwise and rowwise_with_gw_hp as
//   ppb's fp8-blockwise, said so; enable_fsdp_float8_all_gather) and
//   "quantize.linear.mx" (mxfp8);
// - [training] local_batch_size (8), global_batch_size (-1: local x the
//   data-parallel degree), seq_len (2048), mixed_precision_param
//   (bfloat16), mixed_precision_reduce (float32), enable_cpu_offload;
// - [parallelism]: the degrees (data_parallel_shard_degree -1 takes what
//   the world leaves; ParallelDims' check that their product is the world
//   size), FSDP2 when the shard degree is above 1 (HSDP with replicas),
//   DDP otherwise, fsdp_reshard_after_forward, enable_async_tensor_parallel
//   (as ppb's tp_comm_overlap), and the pipeline: the schedule by torch's
//   name, pipeline_parallel_microbatch_size (1), the split by
//   module_fqns_per_model_part or else pipeline_llm's rule
//   (pipeline_parallel_layers_per_stage, or 1 stage a rank for single-stage
//   schedules and 2 for the others; generate_llm_fqn_per_model_part with
//   pipeline_parallel_first/last_stage_less_layers);
// - [activation_checkpoint] mode (selective by default, with
//   selective_ac_option "2": full recompute on every second block of each
//   rank), "op" read as ppb's selective recompute, full, none.
// The split goes to ParseTorchtitan (apps/output/emit.h) in `pipeline_flags`.
// The machine comes from --cluster and the world size from --gpus (a TOML
// does not say them). Fields of the read sections that torchtitan v0.2.2
// does not have are errors at their line; sections and fields ppb does not
// model are listed in `notes`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "apps/input/launch_run.h"
#include "core/result.h"

namespace ppb {

// "registry.py:FUNCTION": a path split at its last colon when ".py" stands
// right before it; nullopt for any other path (a TOML).
struct RegistryFunction {
  std::string file;
  std::string function;
};
std::optional<RegistryFunction> SplitRegistryFunction(const std::string& path);

// The file `path` names: the registry of "registry.py:FUNCTION", else the
// path itself.
std::string TorchtitanFile(const std::string& path);

// `path` is a v0.2.2 TOML, or "registry.py:FUNCTION" (ReadTorchtitanFunction).
Result<LaunchRun> ReadTorchtitanLaunch(const std::string& path, std::string_view text,
                                       const LaunchInputs& inputs);

// A config function of torchtitan main's registry (b5bcd76c,
// torchtitan/models/<model>/config_registry.py; read as data by
// apps/input/python_config.h), its model the registry's folder: the same
// translation by main's names and defaults (config/configs.py
// TrainingConfig, ParallelismConfig; trainer.py): micro-batches of
// training.num_tokens_per_microbatch_per_dp_rank tokens in sequences of
// max_context_length, parallelism.num_pp_microbatches of them a pipeline
// step, num_tokens_per_train_step (-1: one round on every rank),
// enable_sequence_parallel (True), compile.enable_async_tensor_parallel,
// activation_checkpoint a policy (SelectiveAC.Config() by default, read as
// ppb's selective; FullAC.Config(); None), the converters passed to
// model_registry (Float8LinearConverter rowwise by default, MXFP8, NVFP4),
// CUDA graphs off under pipeline parallelism (Trainer.Config's check).
Result<LaunchRun> ReadTorchtitanFunction(const std::string& path, std::string_view text,
                                         const std::string& function, const LaunchInputs& inputs);

}  // namespace ppb
