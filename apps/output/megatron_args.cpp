// ParseMegatronArgs (apps/output/emit.h): Megatron-LM's flags read back
// with Megatron's own rules, so that `--emit megatron` round-trips and
// Megatron's own checks of a launch (arguments.py validate_args) refuse
// what it would refuse. The flags are those emit_megatron.cpp writes.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/output/emit.h"
#include "apps/output/emit_common.h"
#include "core/strategy.h"
#include "schedules/schedule.h"

namespace ppb {

using namespace emit_detail;  // NOLINT: the helpers of emit_common.h

namespace {

// One "--flag value" per token pair; lines starting with '#' are skipped; a
// value may be double-quoted; a trailing '\' is ignored.
Result<std::map<std::string, std::string>> ReadFlags(std::string_view text) {
  std::map<std::string, std::string> out;
  std::vector<std::string> tokens;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = Trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty() || line.front() == '#') continue;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) {
        ++i;
      }
      if (i >= line.size()) break;
      std::string token;
      if (line[i] == '"') {
        const size_t close = line.find('"', i + 1);
        if (close == std::string_view::npos) {
          return Error{"", "unterminated quote in '" + std::string(line) + "'"};
        }
        token = std::string(line.substr(i + 1, close - i - 1));
        i = close + 1;
      } else {
        const size_t start = i;
        while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) {
          ++i;
        }
        token = std::string(line.substr(start, i - start));
        if (token == "\\") continue;
      }
      tokens.push_back(std::move(token));
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].rfind("--", 0) != 0) {
      return Error{"", "expected a --flag; got '" + tokens[i] + "'"};
    }
    if (out.count(tokens[i]) != 0) {
      return Error{"", tokens[i] + " is given twice"};
    }
    // Megatron's store_true switches take no value.
    static const char* const kSwitches[] = {
        "--sequence-parallel",    "--bf16", "--grad-reduce-in-bf16",
        "--fp16",                 "--use-distributed-optimizer",
        "--overlap-grad-reduce",  "--overlap-param-gather",
        "--tp-comm-overlap",      "--fp8-param-gather",
        "--fp4-param-gather",     "--first-last-layers-bf16",
        "--reuse-grad-buf-for-mxfp8-param-ag", "--use-megatron-fsdp",
        "--use-torch-fsdp2",      "--no-gradient-accumulation-fusion",
        "--torch-fsdp2-no-reshard-after-forward", "--optimizer-cpu-offload",
        "--use-precision-aware-optimizer", "--overlap-cpu-optimizer-d2h-h2d",
        "--fine-grained-activation-offloading", "--overlap-moe-expert-parallel-comm",
        "--moe-pad-expert-input-to-capacity", "--moe-router-force-load-balancing",
        // The model's shape (megatron_model.cpp).
        "--group-query-attention", "--swiglu", "--untie-embeddings-and-output-weights",
        "--disable-bias-linear", "--add-qkv-bias", "--qk-layernorm",
        "--attention-output-gate", "--multi-latent-attention", "--moe-shared-expert-gate",
        "--moe-router-enable-expert-bias"};
    if (std::find_if(std::begin(kSwitches), std::end(kSwitches), [&](const char* sw) {
          return tokens[i] == sw;
        }) != std::end(kSwitches)) {
      out[tokens[i]] = "";
    } else if (tokens[i] == "--offload-modules" && i + 1 < tokens.size() &&
               tokens[i + 1].rfind("--", 0) != 0) {
      // nargs='+' (transformer_config.py's list): the names up to the next flag.
      std::string names;
      while (i + 1 < tokens.size() && tokens[i + 1].rfind("--", 0) != 0) {
        names += (names.empty() ? "" : " ") + tokens[++i];
      }
      out["--offload-modules"] = names;
    } else if (i + 1 < tokens.size() && tokens[i + 1].rfind("--", 0) != 0) {
      out[tokens[i]] = tokens[i + 1];
      ++i;
    } else {
      return Error{"", tokens[i] + " needs a value"};
    }
  }
  return out;
}

// Megatron-LM main d98e8a6's own checks of the sharding and offload flags
// (arguments.py validate_args, its argparse choices, transformer_config.py
// __post_init__, optimizer/__init__.py), as it would reject the launch.
Status CheckShardingArgs(const std::map<std::string, std::string>& flags) {
  auto has = [&](const char* name) { return flags.count(name) != 0; };
  auto value = [&](const char* name) { return flags.at(name); };
  const bool fsdp = has("--use-megatron-fsdp");
  if (has("--data-parallel-sharding-strategy")) {
    const std::string v = value("--data-parallel-sharding-strategy");
    if (v != "no_shard" && v != "optim" && v != "optim_grads" && v != "optim_grads_params") {
      return Error{"", "--data-parallel-sharding-strategy: invalid choice '" + v + "'"};
    }
    if (!fsdp) return Error{"", "--data-parallel-sharding-strategy needs --use-megatron-fsdp"};
  }
  if (fsdp) {
    if (!has("--ckpt-format") || value("--ckpt-format") != "fsdp_dtensor") {
      return Error{"", "Megatron-FSDP requires the `fsdp_dtensor` checkpointing format"};
    }
    if (!has("--use-distributed-optimizer")) {
      return Error{"", "Megatron-FSDP v1 is only compatible with --use-distributed-optimizer"};
    }
  }
  if (has("--use-torch-fsdp2")) {
    if (fsdp) return Error{"", "--use-torch-fsdp2 and --use-megatron-fsdp are exclusive"};
    const auto pp = flags.find("--pipeline-model-parallel-size");
    if (pp != flags.end() && pp->second != "1") {
      return Error{"", "--use-torch-fsdp2 is not supported with pipeline parallelism"};
    }
    const auto ep = flags.find("--expert-model-parallel-size");
    if (ep != flags.end() && ep->second != "1") {
      return Error{"", "--use-torch-fsdp2 is not supported with expert parallelism"};
    }
    if (has("--use-distributed-optimizer")) {
      return Error{"", "--use-torch-fsdp2 is not supported with MCore's distributed optimizer"};
    }
    if (!has("--no-gradient-accumulation-fusion")) {
      return Error{"", "--use-torch-fsdp2 is not supported with gradient accumulation fusion"};
    }
  }
  if (has("--torch-fsdp2-no-reshard-after-forward") && !has("--use-torch-fsdp2")) {
    return Error{"", "--torch-fsdp2-no-reshard-after-forward needs --use-torch-fsdp2"};
  }
  if (has("--optimizer-cpu-offload")) {
    if (!has("--use-precision-aware-optimizer")) {
      return Error{"", "The optimizer cpu offload must be used in conjunction with "
                       "`--use-precision-aware-optimizer`"};
    }
    if (has("--fp8-param-gather") &&
        (!has("--fp8-recipe") || value("--fp8-recipe") != "delayed")) {
      return Error{"", "When `--fp8-param-gather` is enabled, the optimizer cpu offload must "
                       "be used in conjunction with `--fp8-recipe delayed`"};
    }
  }
  if (has("--use-precision-aware-optimizer") && !has("--use-distributed-optimizer")) {
    return Error{"", "--use-precision-aware-optimizer only supported with distributed optimizer"};
  }
  if (has("--offload-modules")) {
    if (!has("--fine-grained-activation-offloading")) {
      return Error{"", "--offload-modules needs --fine-grained-activation-offloading"};
    }
    const std::string names = " " + value("--offload-modules") + " ";
    for (size_t at = 1; at < names.size();) {
      const size_t end = names.find(' ', at);
      OffloadModule mod{};
      if (!FindOffloadModule(names.substr(at, end - at), &mod)) {
        return Error{"", "Invalid choices for offload_modules: " + names.substr(at, end - at)};
      }
      at = end + 1;
    }
    if (names.find(" attn_proj ") != std::string::npos &&
        names.find(" core_attn ") == std::string::npos) {
      return Error{"", "attn_proj cannot be set to offload_modules alone without core_attn"};
    }
  } else if (has("--fine-grained-activation-offloading")) {
    return Error{"", "--fine-grained-activation-offloading needs --offload-modules"};
  }
  if (has("--cpu-offloading-num-layers")) {
    if (has("--fine-grained-activation-offloading")) {
      return Error{"", "fine_grained_activation_offloading cannot be enabled with cpu_offloading."};
    }
    const auto pp = flags.find("--pipeline-model-parallel-size");
    if (pp != flags.end() && pp->second != "1") {
      return Error{"", "Currently there is no support for Pipeline parallelism with CPU "
                       "offloading"};
    }
  }
  return Status();
}

Result<int> FlagInt(const std::map<std::string, std::string>& flags, const std::string& name,
                    int min) {
  const std::string& text = flags.at(name);
  int x = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || x < min) {
    return Error{"", fmt::format("{} must be an integer >= {}; got '{}'", name, min, text)};
  }
  return x;
}

}  // namespace

Result<EmittedPlan> ParseMegatronArgs(std::string_view text, const std::vector<Layer>& layers) {
  auto flags = ReadFlags(text);
  if (!flags.ok()) return flags.error();
  static const char* const kKnown[] = {"--pipeline-model-parallel-size",
                                       "--pipeline-model-parallel-layout",
                                       "--num-virtual-stages-per-pipeline-rank",
                                       "--decoder-first-pipeline-num-layers",
                                       "--decoder-last-pipeline-num-layers",
                                       "--microbatch-group-size-per-virtual-pipeline-stage",
                                       "--recompute-granularity",
                                       "--recompute-method",
                                       "--recompute-num-layers",
                                       "--tensor-model-parallel-size",
                                       "--sequence-parallel",
                                       "--context-parallel-size",
                                       "--expert-model-parallel-size",
                                       "--moe-token-dispatcher-type",
                                       "--moe-flex-dispatcher-backend",
                                       "--overlap-moe-expert-parallel-comm",
                                       "--expert-tensor-parallel-size",
                                       "--moe-expert-capacity-factor",
                                       "--moe-pad-expert-input-to-capacity",
                                       "--moe-router-force-load-balancing",
                                       "--seq-length",
                                       "--micro-batch-size",
                                       "--global-batch-size",
                                       "--bf16",
                                       "--grad-reduce-in-bf16",
                                       "--optimizer",
                                       "--fp16",
                                       "--use-distributed-optimizer",
                                       "--overlap-grad-reduce",
                                       "--overlap-param-gather",
                                       "--tp-comm-overlap",
                                       "--fp8-format",
                                       "--fp8-recipe",
                                       "--fp4-format",
                                       "--fp4-recipe",
                                       "--fp8-param-gather",
                                       "--fp4-param-gather",
                                       "--first-last-layers-bf16",
                                       "--reuse-grad-buf-for-mxfp8-param-ag",
                                       "--num-layers-at-start-in-bf16",
                                       "--num-layers-at-end-in-bf16",
                                       "--use-megatron-fsdp",
                                       "--data-parallel-sharding-strategy",
                                       "--ckpt-format",
                                       "--use-torch-fsdp2",
                                       "--no-gradient-accumulation-fusion",
                                       "--torch-fsdp2-no-reshard-after-forward",
                                       "--num-distributed-optimizer-instances",
                                       "--optimizer-cpu-offload",
                                       "--optimizer-offload-fraction",
                                       "--use-precision-aware-optimizer",
                                       "--overlap-cpu-optimizer-d2h-h2d",
                                       "--fine-grained-activation-offloading",
                                       "--offload-modules",
                                       "--activation-offload-fraction",
                                       "--cpu-offloading-num-layers",
                                       // The model's shape: read by --from megatron
                                       // (apps/input/megatron_launch.h), not here.
                                       "--num-layers", "--hidden-size", "--ffn-hidden-size",
                                       "--num-attention-heads", "--group-query-attention",
                                       "--num-query-groups", "--kv-channels", "--swiglu",
                                       "--untie-embeddings-and-output-weights",
                                       "--normalization", "--disable-bias-linear",
                                       "--add-qkv-bias", "--qk-layernorm",
                                       "--attention-output-gate",
                                       "--position-embedding-type",
                                       "--max-position-embeddings", "--vocab-size",
                                       "--padded-vocab-size", "--num-experts",
                                       "--moe-router-topk", "--moe-ffn-hidden-size",
                                       "--moe-shared-expert-intermediate-size",
                                       "--moe-shared-expert-gate",
                                       "--moe-router-enable-expert-bias", "--moe-layer-freq",
                                       "--moe-latent-size",
                                       "--multi-latent-attention", "--q-lora-rank",
                                       "--kv-lora-rank", "--qk-head-dim",
                                       "--qk-pos-emb-head-dim", "--v-head-dim",
                                       "--mtp-num-layers", "--window-size",
                                       "--window-attn-skip-freq", "--softmax-type",
                                       "--hybrid-layer-pattern", "--mamba-num-heads",
                                       "--mamba-head-dim", "--mamba-state-dim",
                                       "--mamba-num-groups", "--linear-num-key-heads",
                                       "--linear-num-value-heads", "--linear-key-head-dim",
                                       "--linear-value-head-dim", "--linear-conv-kernel-dim",
                                       "--experimental-attention-variant",
                                       "--linear-attention-freq"};
  for (const auto& [name, value] : *flags) {
    if (std::find(std::begin(kKnown), std::end(kKnown), name) == std::end(kKnown)) {
      return Error{"", "ppb does not read " + name};
    }
  }
  auto has = [&](const char* name) { return flags->count(name) != 0; };
  for (const char* name :
       {"--tensor-model-parallel-size", "--context-parallel-size",
        "--expert-model-parallel-size", "--seq-length", "--micro-batch-size",
        "--global-batch-size"}) {
    if (!has(name)) continue;
    Result<int> x = FlagInt(*flags, name, 1);
    if (!x.ok()) return x.error();
  }
  if (!has("--pipeline-model-parallel-size")) {
    return Error{"", "--pipeline-model-parallel-size: missing"};
  }
  if (Status st = CheckShardingArgs(*flags); !st.ok()) return st.error();
  EmittedPlan plan;
  Result<int> p = FlagInt(*flags, "--pipeline-model-parallel-size", 1);
  if (!p.ok()) return p.error();
  plan.p = *p;
  // A hybrid pattern's '|' segments are the stages (validate_args refuses
  // a layout beside them); they are read as the layout they place.
  std::string hybrid_layout;
  if (has("--hybrid-layer-pattern")) {
    hybrid_layout = HybridPatternLayout(flags->at("--hybrid-layer-pattern"));
    if (!hybrid_layout.empty() &&
        (has("--pipeline-model-parallel-layout") ||
         has("--num-virtual-stages-per-pipeline-rank") ||
         has("--decoder-first-pipeline-num-layers") || has("--decoder-last-pipeline-num-layers"))) {
      return Error{"",
                   "--hybrid-layer-pattern with '|' must not be given with "
                   "--pipeline-model-parallel-layout, --num-virtual-stages-per-pipeline-rank or "
                   "--decoder-first/last-pipeline-num-layers (Megatron-LM)"};
    }
    if (!hybrid_layout.empty()) (*flags)["--pipeline-model-parallel-layout"] = hybrid_layout;
  }
  const bool layout = has("--pipeline-model-parallel-layout");
  if (layout &&
      (has("--num-virtual-stages-per-pipeline-rank") ||
       has("--decoder-first-pipeline-num-layers") || has("--decoder-last-pipeline-num-layers"))) {
    return Error{"",
                 "--pipeline-model-parallel-layout must not be given with "
                 "--num-virtual-stages-per-pipeline-rank or "
                 "--decoder-first/last-pipeline-num-layers (Megatron-LM)"};
  }
  if (layout) {
    const std::string& str = flags->at("--pipeline-model-parallel-layout");
    Result<int> stages = MegatronLayoutStages(str, 4 * layers.size() + 64 + 4 * str.size());
    if (!stages.ok()) return stages.error();
    if (*stages % plan.p != 0) {
      return Error{"", fmt::format("the layout's {} stages must be divisible by "
                                   "--pipeline-model-parallel-size {} (Megatron-LM)",
                                   *stages, plan.p)};
    }
    plan.v = *stages / plan.p;
    Result<std::vector<int>> counts = ParseMegatronLayout(str, layers, plan.p, plan.v);
    if (!counts.ok()) return counts.error();
    // Megatron-LM's layout rule: first symbol E, last L (conventions.md).
    if (counts->front() == 0 || counts->back() == 0) {
      return Error{"",
                   "the layout must start with E and end with L "
                   "(Megatron-LM); got an empty first or last stage"};
    }
    plan.strategy.layers_per_stage = std::move(*counts);
  } else {
    if (has("--num-virtual-stages-per-pipeline-rank")) {
      Result<int> v = FlagInt(*flags, "--num-virtual-stages-per-pipeline-rank", 1);
      if (!v.ok()) return v.error();
      plan.v = *v;
    }
    std::optional<int> first, last;
    if (has("--decoder-first-pipeline-num-layers")) {
      Result<int> x = FlagInt(*flags, "--decoder-first-pipeline-num-layers", 0);
      if (!x.ok()) return x.error();
      first = *x;
    }
    if (has("--decoder-last-pipeline-num-layers")) {
      Result<int> x = FlagInt(*flags, "--decoder-last-pipeline-num-layers", 0);
      if (!x.ok()) return x.error();
      last = *x;
    }
    Result<std::vector<int>> counts = MegatronUnevenSplit(layers, plan.p, plan.v, first, last);
    if (!counts.ok()) return counts.error();
    plan.strategy.layers_per_stage = std::move(*counts);
  }
  if (has("--microbatch-group-size-per-virtual-pipeline-stage")) {
    Result<int> g = FlagInt(*flags, "--microbatch-group-size-per-virtual-pipeline-stage", 1);
    if (!g.ok()) return g.error();
    if (*g < plan.p) {
      return Error{"", fmt::format("--microbatch-group-size-per-virtual-pipeline-stage "
                                   "must be >= p = {} (Megatron-LM); got {}",
                                   plan.p, *g)};
    }
  }

  // Recompute.
  std::vector<std::uint8_t>& rc = plan.strategy.recompute;
  rc.assign(layers.size(), 0);
  // Every decoder layer, and the MTP layers as MultiTokenPredictionLayer
  // treats them (MtpRecompute).
  auto set_all = [&](const char* mode, const std::string& method) -> Status {
    if (Status st = SetOnDecoders(layers, mode, rc); !st.ok()) return st;
    for (size_t i = 0; i < layers.size(); ++i) {
      if (layers[i].kind != LayerKind::Mtp) continue;
      const std::string m = MtpRecompute(layers[i], mode, method);
      if (m.empty()) continue;
      rc[i] = OptionIndex(layers[i], m);
      if (rc[i] == 0) {
        return Error{"", fmt::format("layer {} offers no recompute mode {} (Megatron-LM "
                                     "recomputes MTP layers under uniform)",
                                     layers[i].name, m)};
      }
    }
    return Status();
  };
  if (has("--recompute-granularity")) {
    const std::string& gran = flags->at("--recompute-granularity");
    const std::string method = has("--recompute-method") ? flags->at("--recompute-method") : "";
    if (gran == "selective") {
      if (has("--recompute-method") || has("--recompute-num-layers")) {
        return Error{"",
                     "--recompute-method and --recompute-num-layers go "
                     "with --recompute-granularity full"};
      }
      if (Status st = set_all("selective", ""); !st.ok()) return st.error();
    } else if (gran == "full") {
      if (!has("--recompute-num-layers") || (method != "uniform" && method != "block")) {
        return Error{"",
                     "--recompute-granularity full needs "
                     "--recompute-method uniform|block and "
                     "--recompute-num-layers"};
      }
      Result<int> n = FlagInt(*flags, "--recompute-num-layers", 1);
      if (!n.ok()) return n.error();
      if (method == "uniform") {
        if (*n != 1) {
          return Error{"",
                       "ppb reads --recompute-method uniform only with "
                       "--recompute-num-layers 1 (every layer its own "
                       "unit)"};
        }
        if (Status st = set_all("full", "uniform"); !st.ok()) return st.error();
      } else {
        const std::vector<int>& per_stage = plan.strategy.layers_per_stage;
        const std::vector<size_t> starts = StageStarts(per_stage);
        for (size_t st = 0; st + 1 < starts.size(); ++st) {
          int done = 0;
          for (size_t i = starts[st]; i < starts[st + 1] && done < *n; ++i) {
            if (!IsDecoder(layers[i].kind)) continue;
            rc[i] = OptionIndex(layers[i], "full");
            if (rc[i] == 0) {
              return Error{"", fmt::format("layer {} offers no recompute "
                                           "mode full",
                                           layers[i].name)};
            }
            ++done;
          }
        }
      }
    } else {
      return Error{"",
                   "--recompute-granularity must be full or selective; "
                   "got '" +
                       gran + "'"};
    }
  } else if (has("--recompute-method") || has("--recompute-num-layers")) {
    return Error{"",
                 "--recompute-method and --recompute-num-layers need "
                 "--recompute-granularity full"};
  }
  return plan;
}

}  // namespace ppb
