// A MindFormers training YAML (the run_*.yaml / pretrain_*.yaml a user
// passes to run_mindformer.py) as a ppb config, by MindFormers' own names
// and defaults (mindspore-lab/mindformers master at f52743ca,
// 2026-01-15):
// - the model: model.model_config, in either of MindFormers' forms. The
//   mcore form (use_legacy: False) names fields as HuggingFace does and
//   starts from pretrained_model_dir's config.json, which model_config's
//   keys override; the legacy form (type: LlamaConfig) names them
//   num_layers, num_heads, n_kv_heads, with the SwiGLU width from
//   intermediate_size or multiple_of / ffn_dim_multiplier, and the experts
//   in the top-level moe_config. Every alias of a field is read as
//   MindFormers' COMMON_CONFIG_MAPPING (parallel_core/
//   transformer_config_utils.py) maps it; two aliases of one field are an
//   error, as there. The shape is then read as a HuggingFace config of
//   model_type (apps/input/hf_config.h) and written as
//   model.architecture;
// - parallel_config (TransformerOpParallelConfig: data_parallel,
//   model_parallel, context_parallel, expert_parallel, pipeline_stage,
//   micro_batch_num, use_seq_parallel; 1 / False by default): the world
//   is their product (dp x mp x cp x pp), which --gpus must equal;
// - the batch by base_trainer.py's rule: a pipeline step of
//   micro_batch_num micro-batches of runner_config.batch_size x
//   micro_batch_interleave_num sequences (gradient_accumulation_steps of
//   them without a pipeline), model_config.seq_length tokens each;
// - compute_dtype (bfloat16, float16, float32); parallel.
//   enable_parallel_optimizer (MindSpore's optimizer parallel, read as
//   ppb's distributed optimizer);
// - the pipeline: parallel.pipeline_config (pipeline_interleave,
//   pipeline_scheduler 1f1b, gpipe or zero_bubble_v), pp_interleave_num,
//   offset and recompute_config's lists, left in `pipeline_flags` for
//   ParseMindFormersYaml (apps/output/emit.h), which applies LayerSetting's
//   rules once the layers are known.
// The machine comes from --cluster (a YAML does not name its accelerator).
// Keys of parallel_config and recompute_config that MindFormers does not
// have are errors at their line (its config classes refuse them); what ppb
// does not model is listed in `notes`.
#pragma once

#include <string>
#include <string_view>

#include "apps/input/launch_run.h"
#include "core/result.h"

namespace ppb {

Result<LaunchRun> ReadMindFormersLaunch(const std::string& path, std::string_view text,
                                        const LaunchInputs& inputs);

}  // namespace ppb
