// Megatron-LM's form of a strategy: command-line flags (layout or uneven
// first/last stages, virtual stages, recompute, micro-batch group), and
// ParseMegatronArgs, which reads them back with Megatron's rules
// (conventions.md, Megatron-LM). Refusals are Errors named "--emit megatron".
#include "apps/output/emit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/search_problem.h"
#include "apps/output/emit_common.h"
#include "apps/output/output.h"
#include "core/strategy.h"
#include "schedules/schedule.h"
#include "search/deployable.h"

namespace ppb {

using namespace emit_detail;  // NOLINT: the helpers of emit_common.h

// Megatron-LM's uneven split (get_num_layers_to_build; conventions.md,
// Megatron-LM): rank 0 holds `first` decoder layers and rank p-1 `last` (when
// set), the other ranks (num_layers - first - last) / (p - #set), which must
// divide; with v chunks each chunk of a rank holds the rank's count / v,
// which must divide; first / last must be positive. Without either flag:
// num_layers / p per rank, which must divide. Embedding on stage 0; MTP and
// head on the last stage. Returns layers per global stage.
Result<std::vector<int>> emit_detail::MegatronUnevenSplit(const std::vector<Layer>& layers,
                                                          int p, int v, std::optional<int> first,
                                                          std::optional<int> last) {
  int decoders = 0, mtp = 0;
  for (const Layer& l : layers) {
    decoders += IsDecoder(l.kind) ? 1 : 0;
    mtp += l.kind == LayerKind::Mtp ? 1 : 0;
  }
  int rest = decoders, ranks_left = p;
  for (const auto& [name, n] : {std::pair{"first", first}, std::pair{"last", last}}) {
    if (!n) continue;
    if (*n <= 0) {
      return Error{"", fmt::format("--decoder-{}-pipeline-num-layers must be "
                                   "positive (Megatron-LM); got {}",
                                   name, *n)};
    }
    if (*n % v != 0) {
      return Error{"", fmt::format("--decoder-{}-pipeline-num-layers ({}) must be "
                                   "divisible by v = {} (Megatron-LM)",
                                   name, *n, v)};
    }
    rest -= *n;
    --ranks_left;
  }
  if (p == 1 && (first || last)) {
    return Error{"", "--decoder-first/last-pipeline-num-layers need p >= 2"};
  }
  if (rest < 0) {
    return Error{"", fmt::format("--decoder-first/last-pipeline-num-layers "
                                 "exceed the {} decoder layers",
                                 decoders)};
  }
  int middle = 0;
  if (ranks_left > 0) {
    if (!first && !last && rest % ranks_left != 0) {
      // arguments.py validate_args, before get_num_layers_to_build's check.
      return Error{"", fmt::format("the {} decoder layers must divide over the {} pipeline "
                                   "ranks (Megatron-LM: \"Number of layers should be divisible "
                                   "by the pipeline-model-parallel size\")",
                                   rest, ranks_left)};
    }
    if (rest % ranks_left != 0) {
      return Error{"", fmt::format("the {} decoder layers left must divide over the "
                                   "{} other ranks (Megatron-LM: \"the left over "
                                   "layers must be divisible by left over stages\")",
                                   rest, ranks_left)};
    }
    middle = rest / ranks_left;
    if (middle % v != 0) {
      return Error{"", fmt::format("{} decoder layers per rank must be "
                                   "divisible by v = {} (Megatron-LM)",
                                   middle, v)};
    }
  } else if (rest != 0) {
    return Error{"",
                 "--decoder-first/last-pipeline-num-layers must add up "
                 "to the decoder layers when p = 2"};
  }
  std::vector<int> counts(static_cast<size_t>(p) * v, 0);
  for (int c = 0; c < v; ++c) {
    for (int r = 0; r < p; ++r) {
      int per_rank = middle;
      if (r == 0 && first) per_rank = *first;
      if (r == p - 1 && last) per_rank = *last;
      counts[static_cast<size_t>(c) * p + r] = per_rank / v;
    }
  }
  counts.front() += 1;       // E
  counts.back() += mtp + 1;  // m..., L
  return counts;
}

// The mode Megatron gives MTP layer `layer` under the flags: "full" under
// uniform, "" under block, "selective" under selective granularity when the
// layer offers it ("" when ppb's model of the layer has no such mode).
std::string emit_detail::MtpRecompute(const Layer& layer, const std::string& granularity,
                         const std::string& method) {
  if (granularity == "full") return method == "uniform" ? "full" : "";
  if (granularity == "selective") return OptionIndex(layer, "selective") != 0 ? "selective" : "";
  return "";
}

namespace {

// Decoder layers per global stage.
std::vector<int> DecodersPerStage(const std::vector<Layer>& layers,
                                  const std::vector<int>& layers_per_stage) {
  const std::vector<size_t> starts = StageStarts(layers_per_stage);
  std::vector<int> out;
  for (size_t s = 0; s + 1 < starts.size(); ++s) {
    int n = 0;
    for (size_t i = starts[s]; i < starts[s + 1]; ++i) {
      n += IsDecoder(layers[i].kind) ? 1 : 0;
    }
    out.push_back(n);
  }
  return out;
}

// The equivalent first/last flags of a split, when Megatron's uneven rule
// can express it: every decoder layer is counted per rank, each chunk of a
// rank holds the same number, the middle ranks hold the same, E is on stage
// 0, MTP and L on the last stage. nullopt when it cannot.
struct UnevenFlags {
  std::optional<int> first, last;
};
std::optional<UnevenFlags> MegatronUnevenFlags(const std::vector<Layer>& layers,
                                               const std::vector<int>& per_stage, int p, int v) {
  if (p < 2) return std::nullopt;
  const std::vector<int> t = DecodersPerStage(layers, per_stage);
  std::vector<int> per_rank(static_cast<size_t>(p), 0);
  for (int r = 0; r < p; ++r) {
    for (int c = 1; c < v; ++c) {
      if (t[static_cast<size_t>(c) * p + r] != t[static_cast<size_t>(r)]) {
        return std::nullopt;
      }
    }
    per_rank[r] = t[static_cast<size_t>(r)] * v;
  }
  UnevenFlags flags;
  if (p > 2) {
    for (int r = 2; r < p - 1; ++r) {
      if (per_rank[r] != per_rank[1]) return std::nullopt;
    }
    const int middle = per_rank[1];
    if (per_rank[0] != middle) flags.first = per_rank[0];
    if (per_rank[p - 1] != middle) flags.last = per_rank[p - 1];
  } else if (per_rank[0] != per_rank[1]) {
    flags.first = per_rank[0];
    flags.last = per_rank[1];
  }
  Result<std::vector<int>> back = MegatronUnevenSplit(layers, p, v, flags.first, flags.last);
  if (!back.ok() || *back != per_stage) return std::nullopt;
  return flags;
}

// Megatron's recompute flags for the strategy's decoder and MTP layers, or
// a note saying why they cannot express it (conventions.md, Megatron-LM:
// --recompute-method block = the first N layers of each pipeline stage, i.e.
// of each model chunk, min(N, its layers); uniform with
// --recompute-num-layers 1 = every layer; selective granularity = every
// layer). Only modes named "full" and "selective" map. MTP layers follow
// MultiTokenPredictionLayer (megatron/core/transformer/
// multi_token_prediction.py, NVIDIA/Megatron-LM at 00611e6e): under
// granularity full it checkpoints the whole MTP layer with method uniform
// (recompute-num-layers 1) and skips it, with a warning, under block; under
// selective its inner transformer layer recomputes selectively
// (MtpRecompute above).
struct MegatronRecompute {
  std::vector<std::string> flags;  // "--flag value" lines
  std::string note;                // non-empty: not expressible
};

MegatronRecompute MegatronRecomputeFlags(const RunConfig& config) {
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  MegatronRecompute out;
  if (!AnyRecompute(s)) return out;
  const std::string what = "the strategy recomputes " + RecomputeSummary(config);
  std::vector<std::string> used;
  bool all_decoders_same = true;
  std::string first_mode;
  bool first_seen = false;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string m = ModeOf(layers, s, i);
    if (!IsDecoder(layers[i].kind)) {
      if (!m.empty() && layers[i].kind != LayerKind::Mtp) {
        out.note = fmt::format(
            "no recompute flags: Megatron-LM's recompute flags cover the "
            "decoder and MTP layers only, and {} ({}) recomputes; {}",
            layers[i].name, LayerKindName(layers[i].kind), what);
        return out;
      }
      continue;
    }
    if (!first_seen) {
      first_mode = m;
      first_seen = true;
    } else if (m != first_mode) {
      all_decoders_same = false;
    }
    if (!m.empty() && std::find(used.begin(), used.end(), m) == used.end()) {
      used.push_back(m);
    }
  }
  // The MTP layers recompute what Megatron gives them under the flags.
  auto mtp_agrees = [&](const std::string& granularity, const std::string& method) {
    for (size_t i = 0; i < layers.size(); ++i) {
      if (layers[i].kind != LayerKind::Mtp) continue;
      if (ModeOf(layers, s, i) != MtpRecompute(layers[i], granularity, method)) return false;
    }
    return true;
  };
  if (used.empty()) {
    // Only MTP layers recompute: no flags reach them without the decoders.
  } else if (used.size() == 1 && used[0] == "full" && all_decoders_same &&
             mtp_agrees("full", "uniform")) {
    out.flags = {"--recompute-granularity full", "--recompute-method uniform",
                 "--recompute-num-layers 1"};
    return out;
  } else if (used.size() == 1 && used[0] == "selective" && all_decoders_same &&
             mtp_agrees("selective", "")) {
    out.flags = {"--recompute-granularity selective"};
    return out;
  } else if (used.size() == 1 && used[0] == "full" && mtp_agrees("full", "block")) {
    // block N: the first min(N, t_s) decoder layers of each stage.
    const std::vector<size_t> starts = StageStarts(s.layers_per_stage);
    std::vector<int> full(s.layers_per_stage.size(), 0);
    std::vector<int> t = DecodersPerStage(layers, s.layers_per_stage);
    bool prefix = true;
    for (size_t st = 0; st + 1 < starts.size(); ++st) {
      bool gap = false;
      for (size_t i = starts[st]; i < starts[st + 1]; ++i) {
        if (!IsDecoder(layers[i].kind)) continue;
        const bool f = ModeOf(layers, s, i) == "full";
        if (f && gap) prefix = false;
        if (!f) gap = true;
        full[st] += f ? 1 : 0;
      }
    }
    const int n = *std::max_element(full.begin(), full.end());
    bool block = prefix;
    for (size_t st = 0; block && st < full.size(); ++st) {
      block = full[st] == std::min(n, t[st]);
    }
    if (block) {
      out.flags = {"--recompute-granularity full", "--recompute-method block",
                   "--recompute-num-layers " + std::to_string(n)};
      return out;
    }
  }
  out.note = fmt::format(
      "no recompute flags: Megatron-LM cannot express this recompute "
      "(--recompute-method block recomputes the first N decoder layers of "
      "every stage and no MTP layer, uniform every decoder and MTP layer in "
      "full, selective every decoder layer and the MTP layers' inner "
      "layers, one granularity per run); {}",
      what);
  return out;
}

// Sharded data parallelism and offload (Megatron-LM main d98e8a6,
// arguments.py and transformer_config.py): Megatron-FSDP with its strategy
// (--use-megatron-fsdp --data-parallel-sharding-strategy, which requires
// the fsdp_dtensor checkpoint format), torch FSDP2 (--use-torch-fsdp2,
// without gradient-accumulation fusion), HSDP as
// --num-distributed-optimizer-instances (the replicas), the optimizer's
// host share (--optimizer-cpu-offload --optimizer-offload-fraction, with
// --use-precision-aware-optimizer), fine-grained activation offload
// (--fine-grained-activation-offloading --offload-modules
// --activation-offload-fraction) and layer-level offload
// (--cpu-offloading-num-layers).
std::string ShardingFlags(const RunConfig& config) {
  const Training& t = config.training;
  const Sharding& sh = t.sharding;
  std::string text;
  if (sh.fsdp == Fsdp::Megatron) {
    text += fmt::format("--use-megatron-fsdp\n--data-parallel-sharding-strategy {}\n"
                        "--ckpt-format fsdp_dtensor\n",
                        DpShardingName(sh.strategy));
  } else if (sh.fsdp == Fsdp::Torch) {
    text += "--use-torch-fsdp2\n--no-gradient-accumulation-fusion\n";
    if (sh.reshard == Reshard::Never) text += "--torch-fsdp2-no-reshard-after-forward\n";
  }
  if (sh.shard > 0) {
    text += fmt::format("--num-distributed-optimizer-instances {}\n", t.dp / sh.shard);
  }
  const Offload& o = t.offload;
  if (o.optimizer > 0) {
    text += fmt::format("--optimizer-cpu-offload\n--optimizer-offload-fraction {:g}\n"
                        "--use-precision-aware-optimizer\n", o.optimizer);
    if (o.overlap_optimizer_copies) text += "--overlap-cpu-optimizer-d2h-h2d\n";
  }
  if (!o.modules.empty()) {
    text += "--fine-grained-activation-offloading\n--offload-modules";
    for (OffloadModule mod : o.modules) text += std::string(" ") + OffloadModuleName(mod);
    text += fmt::format("\n--activation-offload-fraction {:g}\n", o.fraction);
  }
  if (o.layers > 0) text += fmt::format("--cpu-offloading-num-layers {}\n", o.layers);
  return text;
}

// The MoE flags of what was simulated (Megatron-LM main d98e8a6,
// transformer_config.py / arguments.py): the dispatcher always (ppb's
// default alltoall is not Megatron's allgather), its flex backend, the
// combined 1F1B, expert TP when it differs from TP, the capacity and its
// padding, forced balance.
std::string MoeFlags(const RunConfig& config) {
  const Training& t = config.training;
  if (config.architecture.experts == 0 || config.derived.empty()) return "";
  const MoeSettings& m = t.moe;
  std::string text = fmt::format("--moe-token-dispatcher-type {}\n", DispatcherName(m.dispatcher));
  if (m.dispatcher == Dispatcher::Flex) {
    text += fmt::format("--moe-flex-dispatcher-backend {}\n", FlexBackendName(m.backend));
  }
  if (m.overlap_ep_comm) text += "--overlap-moe-expert-parallel-comm\n";
  if (ExpertTp(t) != t.tp) {
    text += fmt::format("--expert-tensor-parallel-size {}\n", ExpertTp(t));
  }
  if (m.capacity_factor > 0) {
    text += fmt::format("--moe-expert-capacity-factor {:g}\n", m.capacity_factor);
    if (m.pad_to_capacity) text += "--moe-pad-expert-input-to-capacity\n";
  }
  if (m.force_balance) text += "--moe-router-force-load-balancing\n";
  if (m.overlap_ep_comm) {
    // arguments.py: the overlap needs more than one CUDA connection.
    AddNote(text, "--overlap-moe-expert-parallel-comm needs CUDA_DEVICE_MAX_CONNECTIONS > 1 "
                  "in the launch environment");
  }
  return text;
}


// The job's parallel block for a derived model (issue 33): Megatron-LM core
// 0.20's flags (megatron/training/arguments.py), switches (store_true)
// only when on. The data-parallel size is what the world size leaves.
std::string ParallelBlock(const RunConfig& config) {
  const Training& t = config.training;
  std::string text;
  text += fmt::format("--tensor-model-parallel-size {}\n", t.tp);
  if (t.sp && t.tp > 1) text += "--sequence-parallel\n";
  if (t.cp > 1) text += fmt::format("--context-parallel-size {}\n", t.cp);
  if (t.ep > 1) text += fmt::format("--expert-model-parallel-size {}\n", t.ep);
  text += MoeFlags(config);
  text += fmt::format("--seq-length {}\n", t.seq);
  text += fmt::format("--micro-batch-size {}\n", t.micro_batch);
  text += fmt::format("--global-batch-size {}\n",
                      static_cast<std::int64_t>(t.dp) * config.shape.m * t.micro_batch);
  if (t.dtype == Dtype::Bf16) text += "--bf16\n";
  if (t.dtype == Dtype::Fp16) text += "--fp16\n";
  // Gradients reduced in BF16 (--grad-reduce-in-bf16) and SGD: only where
  // they differ from Megatron's defaults (FP32 gradients, Adam).
  if (t.dtype == Dtype::Bf16 && t.grad_dtype == Dtype::Bf16) text += "--grad-reduce-in-bf16\n";
  if (t.optimizer == Optimizer::Sgd) text += "--optimizer sgd\n";
  if (t.distributed_optimizer) text += "--use-distributed-optimizer\n";
  text += ShardingFlags(config);
  if (t.overlap_grad_reduce) text += "--overlap-grad-reduce\n";
  if (t.overlap_param_gather) text += "--overlap-param-gather\n";
  if (t.tp_comm_overlap) text += "--tp-comm-overlap\n";
  // Low precision (Megatron-LM main d98e8a6, arguments.py: --fp8-format
  // {e4m3, hybrid}, --fp8-recipe {tensorwise, delayed, mxfp8, blockwise,
  // custom}, --fp4-format e2m1, --fp4-recipe {nvfp4, custom},
  // --fp8-param-gather, --first-last-layers-bf16 with
  // --num-layers-at-{start,end}-in-bf16).
  if (IsFp4(t.low.recipe)) {
    text += "--fp4-format e2m1\n--fp4-recipe nvfp4\n";
  } else if (t.low.on()) {
    text += fmt::format("--fp8-format {}\n--fp8-recipe {}\n",
                        t.low.hybrid ? "hybrid" : "e4m3", MegatronRecipe(t.low.recipe));
  }
  if (t.low.param_gather) {
    text += IsFp4(t.low.recipe) ? "--fp4-param-gather\n" : "--fp8-param-gather\n";
    // MXFP8 primaries gather through the gradient buffer
    // (megatron/core/transformer/moe/README.md: "--fp8-param-gather ...
    // except MXFP8", which needs this flag).
    if (t.low.recipe == Recipe::Mxfp8) text += "--reuse-grad-buf-for-mxfp8-param-ag\n";
  }
  if (t.low.bf16_start + t.low.bf16_end > 0) {
    text += fmt::format(
        "--first-last-layers-bf16\n--num-layers-at-start-in-bf16 {}\n"
        "--num-layers-at-end-in-bf16 {}\n",
        t.low.bf16_start, t.low.bf16_end);
  }
  AddNote(text, fmt::format("launch on {} GPUs: data parallel size {} = world size "
                            "/ (tensor {} x context {} x pipeline {})",
                            static_cast<std::int64_t>(t.tp) * t.cp * config.shape.p * t.dp,
                            t.dp, t.tp, t.cp, config.shape.p));
  return text;
}

}  // namespace

Result<Emission> emit_detail::EmitMegatron(const RunConfig& config) {
  const Framework f = Framework::Megatron;
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const int p = config.shape.p, v = config.shape.v, m = config.shape.m;
  if (config.training.sharding.fsdp == Fsdp::Torch &&
      (config.shape.p > 1 || config.training.ep > 1)) {
    // arguments.py validate_args.
    return Error{"", fmt::format("cannot express training.fsdp: torch with {}: Megatron's "
                                 "--use-torch-fsdp2 \"is not supported with {} parallelism\" "
                                 "(torchtitan runs it: --emit torchtitan)",
                                 config.shape.p > 1 ? "pipeline parallelism" : "expert parallelism",
                                 config.shape.p > 1 ? "pipeline" : "expert")};
  }
  if (config.training.sharding.fsdp == Fsdp::Torch && config.architecture.tied_embeddings) {
    return Error{"", "cannot express training.fsdp: torch with tied embeddings: Megatron's "
                     "--use-torch-fsdp2 requires --untie-embeddings-and-output-weights"};
  }
  if (config.training.offload.layers > 0) {
    for (int r : s.recompute) {
      if (r != 0) {
        return Error{"", "cannot express training.offload.layers with recompute: Megatron: "
                         "\"CPU offloading does not work when activation recomputation is "
                         "enabled\""};
      }
    }
  }
  if (Status st = CheckEmbeddingFirstHeadLast(f, layers, nullptr); !st.ok()) {
    return st.error();
  }
  const int stages = p * v;
  if (s.layers_per_stage.front() == 0 || s.layers_per_stage.back() == 0) {
    return Fail(f, fmt::format("needs the embedding on the first stage and the loss "
                               "on the last (Megatron-LM layout: first symbol E, last "
                               "L); got {} empty",
                               StageName(s.layers_per_stage.front() == 0 ? 0 : stages - 1, p)));
  }
  int decoders = 0, mtp = 0;
  for (const Layer& l : layers) {
    decoders += IsDecoder(l.kind) ? 1 : 0;
    mtp += l.kind == LayerKind::Mtp ? 1 : 0;
  }
  const std::vector<size_t> starts = StageStarts(s.layers_per_stage);
  for (int st = 0; st < stages; ++st) {
    for (size_t i = starts[st]; i < starts[st + 1]; ++i) {
      if (layers[i].kind == LayerKind::Mtp && st / p != v - 1) {
        return Fail(f, fmt::format("needs MTP layers in a rank's last chunk "
                                   "(Megatron-LM layout rule); got {} in {}",
                                   layers[i].name, StageName(st, p)));
      }
    }
  }

  if (PlacementOf(config.schedule, v) == StagePlacement::V) {
    return Fail(f, fmt::format("needs the stages on ranks as Megatron-LM places "
                               "them (stage s on rank s mod p); got schedule {}, "
                               "whose V placement puts stages r and 2p-1-r on "
                               "rank r",
                               config.schedule));
  }

  Emission e;
  e.framework = f;
  std::string& text = e.text;
  AddNote(text, fmt::format("Megatron-LM arguments for {}: {}",
                            config.model_name.empty() ? config.path : config.model_name,
                            DescribeRun(config)));
  text += fmt::format("--pipeline-model-parallel-size {}\n", p);
  // A hybrid model's stages are its pattern's '|' segments (validate_args
  // refuses a layout beside them); one stage holds every layer: no layout.
  const bool hybrid = !config.derived.empty() && MegatronHybrid(config.architecture);
  if (stages > 1 && !hybrid) {
    text += fmt::format("--pipeline-model-parallel-layout \"{}\"\n",
                        FormatMegatronLayout(s.layers_per_stage, layers));
  }
  const int g = EffectiveGroup(ScheduleChoice{config.schedule, v, config.schedule_params}, p, m);
  // Megatron runs every v > 1 interleaved, with group p unless the flag
  // gives another: its rule holds for the default too.
  if (v > 1) {
    if (const std::string why = MegatronGroupRefusal(p, g > 0 ? g : p, m); !why.empty()) {
      return Fail(f, why);
    }
  }
  if (config.schedule == "interleaved" && v > 1 && g != p) {
    text += fmt::format("--microbatch-group-size-per-virtual-pipeline-stage {}\n", g);
  }
  const MegatronRecompute rc = MegatronRecomputeFlags(config);
  for (const std::string& flag : rc.flags) text += flag + "\n";
  e.recompute_expressed = rc.note.empty();
  std::vector<std::string> missing;
  if (!config.derived.empty()) {
    text += MegatronModelFlags(config, missing);
    text += ParallelBlock(config);
  }

  std::string model = fmt::format("--num-layers {}", decoders);
  if (mtp > 0) model += fmt::format(" --mtp-num-layers {}", mtp);
  const std::string needs =
      config.derived.empty() ? fmt::format("It needs the model's {}, m = {}", model, m)
                             : fmt::format("m = {}", m);
  if (stages > 1 && hybrid) {
    AddNote(text, fmt::format("the hybrid pattern's {} segments (| in the order stage = chunk * "
                              "p + rank) are the stages and set v = {} (pretrain_hybrid.py). "
                              "{} micro-batches = --global-batch-size / "
                              "(--micro-batch-size x data parallel size)",
                              stages, v, needs, m));
  } else if (stages > 1) {
    AddNote(text, fmt::format("the layout's {} stages (| in the order stage = chunk * "
                              "p + rank) set v = {}; Megatron-LM refuses "
                              "--num-virtual-stages-per-pipeline-rank with a layout. "
                              "{} micro-batches = --global-batch-size / "
                              "(--micro-batch-size x data parallel size)",
                              stages, v, needs, m));
  } else {
    AddNote(text, fmt::format("one stage: no layout. {} micro-batches = --global-batch-size / "
                              "(--micro-batch-size x data parallel size)",
                              needs));
  }
  if (!missing.empty()) {
    AddNote(text, "not expressed by these flags: " + fmt::format("{}", fmt::join(missing, "; ")));
  }
  if (config.schedule == "gpipe") {
    AddNote(text,
            "Megatron-LM has no GPipe schedule: it runs 1F1B with this "
            "split (simulated: gpipe)");
  } else if (config.schedule == "custom") {
    AddNote(text,
            "Megatron-LM runs its own 1F1B / interleaved order, not "
            "the simulated custom schedule CSV");
  } else if (config.schedule == "interleaved" && v == 1) {
    AddNote(text,
            "with v = 1 Megatron-LM runs 1F1B (simulated: torch's "
            "interleaved order with one chunk per rank)");
  } else if (!TargetRunsSchedule(DeployTarget::Megatron, config.schedule)) {
    AddNote(text, fmt::format("Megatron-LM runs its own 1F1B / interleaved "
                              "order with this split, not the simulated {}",
                              config.schedule));
  }
  if (!rc.note.empty()) AddNote(text, rc.note);
  if (hybrid) {
    AddNote(text, "a hybrid model: run it with pretrain_hybrid.py");
  } else if (const auto uneven = MegatronUnevenFlags(layers, s.layers_per_stage, p, v)) {
    std::vector<std::string> flags;
    if (v > 1) {
      flags.push_back(fmt::format("--num-virtual-stages-per-pipeline-rank {}", v));
    }
    if (uneven->first) {
      flags.push_back(fmt::format("--decoder-first-pipeline-num-layers {}", *uneven->first));
    }
    if (uneven->last) {
      flags.push_back(fmt::format("--decoder-last-pipeline-num-layers {}", *uneven->last));
    }
    if (!uneven->first && !uneven->last) {
      AddNote(text,
              "equivalent without the layout: Megatron-LM's default "
              "even split" +
                  std::string(flags.empty() ? "" : " with:"));
    } else {
      AddNote(text, "equivalent without the layout (give one form, not both):");
    }
    for (const std::string& flag : flags) text += "#   " + flag + "\n";
  } else if (p > 1) {
    AddNote(text,
            "no --decoder-first/last-pipeline-num-layers form: "
            "Megatron-LM's uneven split needs equal middle ranks, equal "
            "chunks per rank and MTP on the last stage");
  }
  return e;
}

}  // namespace ppb
