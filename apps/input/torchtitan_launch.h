// A torchtitan v0.2.2 job config (a train_configs/*.toml, read with
// apps/input/toml_reader.h) as a ppb config, by torchtitan v0.2.2's field
// names and defaults (torchtitan/config/job_config.py):
// - [model] name and flavor: the flavour's shape (torchtitan_models.h);
//   converters "quantize.linear.float8" ([quantize.linear.float8]
//   recipe_name: none or tensorwise; enable_fsdp_float8_all_gather) and
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

#include <string>
#include <string_view>

#include "apps/input/launch_run.h"
#include "core/result.h"

namespace ppb {

Result<LaunchRun> ReadTorchtitanLaunch(const std::string& path, std::string_view text,
                                       const LaunchInputs& inputs);

}  // namespace ppb
