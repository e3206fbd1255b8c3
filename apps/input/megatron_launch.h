// A Megatron-LM run read as a ppb config: from a launch script
// (apps/input/launch_script.h finds its `pretrain_*.py` command) or from a
// training log's arguments block (megatron/training/arguments.py
// `_print_args`: every argument with its resolved value, the exact run).
//
// Arguments are read by Megatron-LM's names and defaults (core 0.20.0,
// commit d98e8a6: arguments.py, transformer_config.py): the model shape
// (--num-layers, --hidden-size, --ffn-hidden-size (default 4h, or
// int(8h/3 / 64) * 64 with --swiglu), --num-attention-heads,
// --group-query-attention, --num-query-groups, --kv-channels (default h/a),
// --swiglu, --untie-embeddings-and-output-weights, --normalization,
// --position-embedding-type (default learned_absolute:
// --max-position-embeddings rows), --qk-layernorm, --vocab-size padded to
// --make-vocab-size-divisible-by x TP (build_tokenizer.py
// vocab_size_with_padding), the MoE flags (--num-experts,
// --moe-router-topk default 2, --moe-ffn-hidden-size, --moe-layer-freq as
// an int or a pattern, --moe-shared-expert-intermediate-size, ...), the MLA
// flags, --mtp-num-layers), the parallel sizes (data parallel = world size /
// (TP x CP x PP), Megatron's assert), the batch sizes, precision (--bf16,
// --fp16, --fp8-format/--fp8-recipe (default delayed), --fp4-format/
// --fp4-recipe), the overlap flags, the distributed optimizer and
// Megatron-FSDP, offload, the MoE dispatcher (default allgather). The
// pipeline split and recompute flags are left to ParseMegatronArgs
// (apps/output/emit.h), which applies Megatron's split rules to the layers;
// `pipeline_flags` carries them.
//
// What a launch cannot say comes from the caller: the machine (`cluster`, a
// YAML file with a hardware: block and optionally a cluster: block) and the
// world size when the scheduler sets it (`gpus`; else the log's world_size,
// else torchrun's --nproc_per_node x --nnodes, else 1 for `python
// pretrain_*.py`). Every argument ppb does not model is listed in `notes`.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/input/launch_run.h"
#include "core/result.h"

namespace ppb {

// `text` is the file at `path` (a launch script, or a log with an arguments
// block). Errors name the file, the line, the flag, what was expected and
// what was given.
Result<LaunchRun> ReadMegatronLaunch(const std::string& path, std::string_view text,
                                       const LaunchInputs& inputs);

// One iteration line of a Megatron-LM log (training.py training_log:
// " [date] iteration N/ M | consumed samples: ... | elapsed time per
// iteration (ms): T | ..."; T is the mean over the --log-interval
// iterations the line closes).
struct LoggedIteration {
  int iteration = 0;
  double ms = 0;
  int line = 0;
};
// Every iteration line of `text`, in file order; none is not an error.
Result<std::vector<LoggedIteration>> ReadMegatronIterations(const std::string& path,
                                                             std::string_view text);

// The largest memory a log's reports give (megatron/training/utils/
// common_utils.py report_memory: "[Rank R] NAME memory (MB) | allocated: A |
// max allocated: M | reserved: R | max reserved: X [| total device memory
// used: D]"), over every rank and report; nullopt when the log has none.
struct LoggedMemory {
  double max_reserved_mb = 0;  // the caching allocator's peak: tensors and
                               // their fragmentation, no NCCL or context
  std::optional<double> device_used_mb;  // the device's whole use, when logged
};
std::optional<LoggedMemory> ReadMegatronMemory(std::string_view text);

}  // namespace ppb
