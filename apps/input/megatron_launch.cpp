// ReadMegatronLaunch (apps/input/megatron_launch.h): Megatron-LM's
// arguments, from a launch script's command or a log's arguments block, by
// their argparse destination names, written out as a ppb config whose every
// line remembers the argument it came from.
#include "apps/input/megatron_launch.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

#include "apps/input/launch_script.h"
#include "apps/input/megatron_arguments.h"
#include "apps/input/text_lines.h"
#include "core/strategy.h"

namespace ppb {
namespace {

using namespace megatron_detail;  // NOLINT: the arguments of megatron_arguments.h

std::string Bool(bool b) { return b ? "true" : "false"; }

// ---- the translation --------------------------------------------------------

// What the sections of the config being written share: the arguments,
// the text, the notes, the parallel sizes and the world.
struct Job {
  Args& a;
  ConfigWriter& o;
  std::vector<std::string>& notes;
  const std::string& path;
  std::int64_t t = 1, p = 1, cp = 1, ep = 1, d = 1;
  World world;
  std::int64_t layers = 0;  // decoder layers
  std::int64_t ffn = 0;     // the dense MLP's width
  std::optional<HybridPattern> hybrid = std::nullopt;  // a hybrid model's pattern

  // An argument Megatron-LM requires.
  std::int64_t Need(const std::string& dest, std::int64_t min) {
    std::optional<std::int64_t> v = a.Int(dest, min);
    if (!v) {
      std::string f = dest;
      std::replace(f.begin(), f.end(), '_', '-');
      Fail(fmt::format("{}: --{}: must be given (Megatron-LM requires it); got nothing", path, f));
    }
    return *v;
  }
};

// The parallel sizes and the world: data parallel is what TP x CP x PP
// leaves of it.
void ReadParallel(Job& j, const LaunchCommand* launch, const LaunchInputs& in) {
  Args& a = j.a;
  [[maybe_unused]] ConfigWriter& o = j.o;
  [[maybe_unused]] std::vector<std::string>& notes = j.notes;
  [[maybe_unused]] const std::string& path = j.path;
  [[maybe_unused]] auto where = [&](const std::string& dest) { return a.Where(dest); };
  // ---- parallel sizes and the world --------------------------------------
  const std::int64_t t = j.t = a.Int("tensor_model_parallel_size", 1).value_or(1);
  const std::int64_t p = j.p = a.Int("pipeline_model_parallel_size", 1).value_or(1);
  const std::int64_t cp = j.cp = a.Int("context_parallel_size", 1).value_or(1);
  j.ep = a.Int("expert_model_parallel_size", 1).value_or(1);
  const World world = j.world = WorldSize(a, launch, path, in, notes);
  const std::int64_t model_size = t * p * cp;
  if (world.gpus % model_size != 0) {
    Fail(fmt::format("{}: --tensor-model-parallel-size {} x --pipeline-model-parallel-size {} "
                     "x --context-parallel-size {} = {}: must divide the world size "
                     "(Megatron-LM's assert); got {} ({})",
                     a.Line("tensor_model_parallel_size"), t, p, cp, model_size, world.gpus,
                     world.text));
  }
  j.d = world.gpus / model_size;

}

// model: the architecture.
void WriteModel(Job& j) {
  Args& a = j.a;
  [[maybe_unused]] ConfigWriter& o = j.o;
  [[maybe_unused]] std::vector<std::string>& notes = j.notes;
  [[maybe_unused]] const std::string& path = j.path;
  [[maybe_unused]] auto where = [&](const std::string& dest) { return a.Where(dest); };
  const std::int64_t t = j.t;
  // ---- model -------------------------------------------------------------
  // A hybrid model's layers are its pattern's (validate_args sets
  // num_layers from it, warning when --num-layers differs).
  j.hybrid = ReadHybridPattern(a);
  std::string layers_origin = where("num_layers");
  if (j.hybrid) {
    j.layers = static_cast<std::int64_t>(j.hybrid->symbols.size());
    layers_origin = where(j.hybrid->dest);
    if (auto n = a.Int("num_layers", 1); n && *n != j.layers) {
      notes.push_back(fmt::format("--num-layers {} ignored: --{} holds {} layers (Megatron-LM "
                                  "takes the pattern's)",
                                  *n, j.hybrid->dest == "hybrid_layer_pattern"
                                          ? "hybrid-layer-pattern"
                                          : "hybrid-override-pattern",
                                  j.layers));
    }
  } else {
    j.layers = j.Need("num_layers", 1);
  }
  const std::int64_t layers = j.layers;
  const std::int64_t h = j.Need("hidden_size", 1);
  const std::int64_t heads = j.Need("num_attention_heads", 1);
  const bool swiglu = a.Flag("swiglu");
  std::int64_t ffn = 0;
  std::string ffn_origin = where("ffn_hidden_size");
  if (auto f = a.Int("ffn_hidden_size", 1)) {
    ffn = *f;
  } else {
    // arguments.py validate_args: 4h, or int(4h * 2/3 / 64) * 64 with SwiGLU.
    ffn = swiglu ? static_cast<std::int64_t>((4.0 * static_cast<double>(h) * 2 / 3) / 64) * 64
                 : 4 * h;
    ffn_origin = where("hidden_size");
    notes.push_back(fmt::format("ffn_hidden_size {} (Megatron's default for --hidden-size {}{})",
                                ffn, h, swiglu ? " with --swiglu" : ""));
  }
  // validate_args sets multi_latent_attention when a hybrid pattern holds +
  // (MLA) layers; its * layers are standard attention (hybrid_layer_specs.py
  // attention_layer) whatever the flag says.
  const bool mla_flag = a.Flag("multi_latent_attention");
  const bool mla = j.hybrid ? j.hybrid->symbols.find('+') != std::string::npos : mla_flag;
  if (j.hybrid && mla_flag && !mla) {
    Fail(fmt::format("{}: must be given with + (MLA) layers in --{}, whose * layers are "
                     "standard attention (Megatron's hybrid attention_layer); got a pattern "
                     "with none",
                     where("multi_latent_attention"),
                     j.hybrid->dest == "hybrid_layer_pattern" ? "hybrid-layer-pattern"
                                                              : "hybrid-override-pattern"));
  }
  // TransformerConfig.attention_output_gate (core 0.20): a sigmoid gate on
  // the attention output, its values from linear_qkv; MLATransformerConfig
  // raises "Output gate is not supported for MLA yet".
  const bool out_gate = a.Flag("attention_output_gate");
  if (out_gate && mla) {
    Fail(fmt::format("{}: must not be given with multi-latent attention (Megatron-LM: \"Output "
                     "gate is not supported for MLA yet\"); got both",
                     where("attention_output_gate")));
  }
  const bool gqa = a.Flag("group_query_attention");
  std::optional<std::int64_t> groups = a.Int("num_query_groups", 1);
  const std::optional<std::int64_t> kv_channels = a.Int("kv_channels", 1);

  // The vocabulary: Megatron pads it to a multiple of
  // --make-vocab-size-divisible-by (default 128) x TP.
  std::int64_t vocab = 0;
  std::string vocab_origin;
  if (auto pv = a.Int("padded_vocab_size", 1)) {
    vocab = *pv;
    vocab_origin = where("padded_vocab_size");
    a.Int("vocab_size", 1);  // padded_vocab_size wins (TokenizerConfig)
  } else {
    std::optional<std::int64_t> orig = a.Int("vocab_size", 1);
    vocab_origin = where("vocab_size");
    const std::optional<std::string> tok = a.Str("tokenizer_type");
    const bool bpe_files = !tok && a.Str("vocab_file") && a.Str("merge_file");
    if (!orig && ((tok && *tok == "GPT2BPETokenizer") || bpe_files)) {
      orig = 50257;  // GPT-2's BPE vocabulary (gpt2-vocab.json)
      vocab_origin = bpe_files ? where("vocab_file") : where("tokenizer_type");
      notes.push_back(bpe_files ? "vocabulary 50257 (GPT-2's BPE, read from --vocab-file and "
                                  "--merge-file as the example's gpt2-vocab.json; the files "
                                  "are not read)"
                                : "vocabulary 50257 (GPT2BPETokenizer's)");
    } else if (!orig && tok && *tok == "Llama2Tokenizer") {
      // Llama 2's (and Mistral's, Mixtral's) SentencePiece model: 32000
      // tokens. The --tokenizer-model file itself is not read.
      orig = 32000;
      vocab_origin = where("tokenizer_type");
      notes.push_back("vocabulary 32000 (Llama2Tokenizer with Llama 2's tokenizer.model; the "
                      "file is not read)");
    }
    if (!orig && tok && *tok == "HuggingFaceTokenizer") {
      // DeepSeek-V3's tokenizer (the HF repos of V3, V3-Base, V3-0324 and
      // R1): 128,000 BPE tokens and its special tokens, which the
      // checkpoint's embedding pads to 129,280 rows (config.json
      // vocab_size), a multiple of Megatron-LM's examples' divisor 3232.
      const std::string model = a.Str("tokenizer_model").value_or("");
      const std::string name = model.substr(model.find_last_of('/') + 1);
      for (const char* known : {"DeepSeek-V3", "DeepSeek-V3-Base", "DeepSeek-V3-0324",
                                "DeepSeek-R1"}) {
        if (name != known) continue;
        orig = 129280;
        vocab_origin = where("tokenizer_model");
        notes.push_back(fmt::format("vocabulary 129280 ({}'s config.json vocab_size, its "
                                    "tokenizer's 128000 BPE and special tokens padded; the "
                                    "tokenizer is not read)",
                                    name));
      }
    }
    if (!orig) {
      Fail(fmt::format("{}: --vocab-size: must be given (ppb does not read tokenizer {}); got "
                       "nothing",
                       path, tok ? "'" + *tok + "'" : "files"));
    }
    const std::int64_t div = a.Int("make_vocab_size_divisible_by", 1).value_or(128);
    const std::int64_t multiple = div * t;
    vocab = (*orig + multiple - 1) / multiple * multiple;
    if (vocab != *orig) {
      notes.push_back(fmt::format("vocabulary {} padded to {} (a multiple of {} x TP {})", *orig,
                                  vocab, div, t));
    }
  }

  o.Line(0, "# ppb config read from " + path + " (Megatron-LM arguments, core 0.20.0)");
  o.Line(0, "model:");
  o.Text(2, "name", [&] {
    std::string n = path;
    const size_t slash = n.find_last_of('/');
    if (slash != std::string::npos) n = n.substr(slash + 1);
    return n;
  }(), "");
  o.Line(2, "architecture:");
  o.Key(4, "hidden_size", h, where("hidden_size"));
  o.Key(4, "num_layers", layers, layers_origin);
  o.Key(4, "num_attention_heads", heads, where("num_attention_heads"));
  if (!mla) {
    if (gqa && groups) {
      o.Key(4, "num_key_value_heads", *groups, where("num_query_groups"));
    } else if (gqa) {
      Fail(fmt::format("{}: --num-query-groups: must be given with --group-query-attention; "
                       "got nothing",
                       where("group_query_attention")));
    }
    if (kv_channels) o.Key(4, "head_dim", *kv_channels, where("kv_channels"));
  }
  o.Key(4, "ffn_hidden_size", ffn, ffn_origin);
  o.Key(4, "vocab_size", vocab, vocab_origin);
  o.Key(4, "tie_embeddings", Bool(!a.Flag("untie_embeddings_and_output_weights")),
        where("untie_embeddings_and_output_weights"));
  // argument_utils.py: --quick-geglu (GPT-OSS's) is a gated linear unit
  // too; the default width above follows --swiglu alone.
  const bool quick_geglu = a.Flag("quick_geglu");
  o.Key(4, "gated_mlp", Bool(swiglu || quick_geglu),
        quick_geglu ? where("quick_geglu") : where("swiglu"));
  const std::string norm =
      a.Choice("normalization", {"LayerNorm", "RMSNorm"}).value_or("LayerNorm");
  o.Key(4, "norm", norm == "RMSNorm" ? "rmsnorm" : "layernorm", where("normalization"));
  // --disable-bias-linear is add_bias_linear = False in a log.
  const bool no_bias = a.log()
                           ? (a.Peek("add_bias_linear") != nullptr && !a.Flag("add_bias_linear"))
                           : a.Flag("disable_bias_linear");
  // add_bias_linear (Megatron's default) biases linear_qkv, linear_proj, fc1
  // and fc2, every expert's too (GPT-OSS's); add_qkv_bias linear_qkv alone.
  // With LayerNorm ppb's norm already carries every linear's bias.
  const bool rms_biases = norm == "RMSNorm" && !no_bias;
  const std::string bias_origin = a.Peek("disable_bias_linear") != nullptr
                                      ? where("disable_bias_linear")
                                      : where("normalization") + " (add_bias_linear)";
  if (a.Flag("add_qkv_bias") || rms_biases) {
    o.Key(4, "qkv_bias", "true",
          a.Peek("add_qkv_bias") != nullptr ? where("add_qkv_bias") : bias_origin);
  }
  if (rms_biases) o.Key(4, "attention_out_bias", "true", bias_origin);
  if (a.Flag("qk_layernorm")) o.Key(4, "qk_norm", "true", where("qk_layernorm"));
  if (out_gate) o.Key(4, "attention_output_gate", "true", where("attention_output_gate"));
  WriteWindows(a, o, j.notes, layers, j.hybrid.has_value());
  if (j.hybrid) WriteHybridModel(a, *j.hybrid, o);
  if (norm == "LayerNorm" && no_bias) {
    notes.push_back("--disable-bias-linear: ppb puts biases on every linear with LayerNorm");
  }
  {
    const std::string pos =
        a.Str("position_embedding_type").value_or("learned_absolute");
    const bool no_pos = a.Flag("no_position_embedding") ||
                        (a.log() && a.Peek("add_position_embedding") != nullptr &&
                         a.Str("add_position_embedding") == std::optional<std::string>("False"));
    if (pos == "learned_absolute" && !no_pos) {
      const std::int64_t rows = j.Need("max_position_embeddings", 1);
      o.Key(4, "learned_positions", rows, where("max_position_embeddings"));
    } else {
      a.Int("max_position_embeddings", 1);
    }
  }
  if (auto experts = a.Int("num_experts", 1)) {
    o.Line(4, "moe:");
    o.Key(6, "num_experts", *experts, where("num_experts"));
    o.Key(6, "top_k", a.Int("moe_router_topk", 1).value_or(2), where("moe_router_topk"));
    o.Key(6, "expert_ffn_hidden_size", a.Int("moe_ffn_hidden_size", 1).value_or(ffn),
          where("moe_ffn_hidden_size"));
    if (auto s = a.Int("moe_shared_expert_intermediate_size", 1)) {
      o.Key(6, "shared_ffn_hidden_size", *s, where("moe_shared_expert_intermediate_size"));
    }
    if (a.Flag("moe_shared_expert_gate")) {
      o.Key(6, "shared_expert_gate", "true", where("moe_shared_expert_gate"));
    }
    if (rms_biases) o.Key(6, "expert_bias", "true", bias_origin);
    if (a.Flag("moe_router_enable_expert_bias")) {
      o.Key(6, "router_bias", "true", where("moe_router_enable_expert_bias"));
    }
    // TransformerConfig.moe_latent_size: the routed experts' width.
    if (auto latent = a.Int("moe_latent_size", 1)) {
      o.Key(6, "latent_size", *latent, where("moe_latent_size"));
    }
    if (auto freq = a.Str("moe_layer_freq", /*flatten=*/false); freq && j.hybrid) {
      // A hybrid model's MoE layers are its pattern's E layers.
      notes.push_back("--moe-layer-freq not read: a hybrid model's MoE layers are the E "
                      "layers of its pattern");
    } else if (freq) {
      if (freq->find('[') != std::string::npos) {
        const std::vector<int> pattern = MoeLayerPattern(*freq, where("moe_layer_freq"));
        if (static_cast<std::int64_t>(pattern.size()) != layers) {
          Fail(fmt::format("{}: must list one entry a layer ({}, Megatron-LM's check); got {}",
                           where("moe_layer_freq"), layers, pattern.size()));
        }
        std::vector<int> dense;
        for (size_t i = 0; i < pattern.size(); ++i) {
          if (pattern[i] == 0) dense.push_back(static_cast<int>(i));
        }
        o.Key(6, "dense_layers", fmt::format("[{}]", fmt::join(dense, ", ")),
              where("moe_layer_freq"));
      } else if (auto n = a.Int("moe_layer_freq", 1)) {
        o.Key(6, "layer_freq", *n, where("moe_layer_freq"));
      }
    }
  }
  if (rms_biases && (a.Peek("num_experts") == nullptr || a.Peek("moe_layer_freq") != nullptr ||
                     a.Peek("moe_shared_expert_intermediate_size") != nullptr)) {
    notes.push_back(
        "add_bias_linear (no --disable-bias-linear) with RMSNorm: the biases of a "
        "dense or shared MLP's fc1 and fc2 are not modelled (those of Q, K, V, the "
        "attention output and the routed experts are)");
  }
  if (mla) {
    o.Line(4, "mla:");
    o.Key(6, "q_lora_rank", a.Int("q_lora_rank", 1).value_or(0), where("q_lora_rank"));
    o.Key(6, "kv_lora_rank", a.Int("kv_lora_rank", 1).value_or(32), where("kv_lora_rank"));
    o.Key(6, "qk_nope_head_dim", a.Int("qk_head_dim", 1).value_or(128), where("qk_head_dim"));
    o.Key(6, "qk_rope_head_dim", a.Int("qk_pos_emb_head_dim", 0).value_or(64),
          where("qk_pos_emb_head_dim"));
    o.Key(6, "v_head_dim", a.Int("v_head_dim", 1).value_or(128), where("v_head_dim"));
  }
  if (auto mtp = a.Int("mtp_num_layers", 0)) {
    if (*mtp > 0) o.Key(4, "mtp_layers", *mtp, where("mtp_num_layers"));
  }

  j.ffn = ffn;
}

// training: batch, precision, parallel sizes, sharding, offload, MoE.
void WriteTraining(Job& j) {
  Args& a = j.a;
  [[maybe_unused]] ConfigWriter& o = j.o;
  [[maybe_unused]] std::vector<std::string>& notes = j.notes;
  [[maybe_unused]] const std::string& path = j.path;
  [[maybe_unused]] auto where = [&](const std::string& dest) { return a.Where(dest); };
  const std::int64_t t = j.t, cp = j.cp, ep = j.ep, d = j.d;
  const World& world = j.world;
  // ---- training ----------------------------------------------------------
  o.Line(0, "training:");
  o.Key(2, "seq_length", j.Need("seq_length", 1), where("seq_length"));
  const std::int64_t mbs = j.Need("micro_batch_size", 1);
  o.Key(2, "micro_batch_size", mbs, where("micro_batch_size"));
  if (auto gbs = a.Int("global_batch_size", 1)) {
    o.Key(2, "global_batch_size", *gbs, where("global_batch_size"));
  } else {
    o.Key(2, "global_batch_size", mbs * d, where("micro_batch_size"));
    notes.push_back(fmt::format("global batch {} (Megatron's default: micro-batch {} x data "
                                "parallel {})",
                                mbs * d, mbs, d));
  }
  const bool bf16 = a.Flag("bf16");
  const bool fp16 = a.Flag("fp16");
  if (bf16 && fp16) {
    Fail(fmt::format("{}: must not be given with --fp16 (Megatron-LM's check); got both",
                     where("bf16")));
  }
  o.Key(2, "dtype", bf16 ? "bf16" : fp16 ? "fp16" : "fp32",
        bf16 ? where("bf16") : where("fp16"));
  if (bf16 && a.Flag("grad_reduce_in_bf16")) {
    o.Key(2, "grad_dtype", "bf16", where("grad_reduce_in_bf16"));
  }
  o.Key(2, "tensor_parallel", t, where("tensor_model_parallel_size"));
  {
    bool sp = a.Flag("sequence_parallel");
    if (sp && t == 1) {
      sp = false;
      notes.push_back("--sequence-parallel off at TP 1 (Megatron-LM's validate_args)");
    }
    o.Key(2, "sequence_parallel", Bool(sp), where("sequence_parallel"));
  }
  o.Key(2, "context_parallel", cp, where("context_parallel_size"));
  if (ep > 1) o.Key(2, "expert_parallel", ep, where("expert_model_parallel_size"));
  o.Key(2, "data_parallel", d, world.origin);
  if (a.Flag("use_distributed_optimizer")) {
    o.Key(2, "distributed_optimizer", "true", where("use_distributed_optimizer"));
  }
  if (auto opt = a.Choice("optimizer", {"adam", "sgd"})) {
    o.Key(2, "optimizer", *opt, where("optimizer"));
  }
  for (const char* f : {"overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap"}) {
    if (a.Flag(f)) o.Key(2, f, "true", where(f));
  }
  if (auto fmt8 = a.Choice("fp8", {"e4m3", "hybrid"})) {
    const std::string recipe =
        a.Choice("fp8_recipe", {"delayed", "tensorwise", "blockwise", "mxfp8"}).value_or("delayed");
    o.Line(2, fmt::format("fp8: {{format: {}, recipe: {}}}", *fmt8, recipe), where("fp8"));
  } else {
    a.Str("fp8_recipe");
  }
  if (auto fmt4 = a.Choice("fp4", {"e2m1"})) {
    const std::string recipe = a.Choice("fp4_recipe", {"nvfp4"}).value_or("nvfp4");
    o.Line(2, fmt::format("fp4: {{format: {}, recipe: {}}}", *fmt4, recipe), where("fp4"));
  } else {
    a.Str("fp4_recipe");
  }
  if (a.Flag("fp8_param_gather")) o.Key(2, "fp8_param_gather", "true", where("fp8_param_gather"));
  if (a.Flag("first_last_layers_bf16")) {
    o.Line(2,
           fmt::format("first_last_layers_bf16: {{start: {}, end: {}}}",
                       a.Int("num_layers_at_start_in_bf16", 0).value_or(1),
                       a.Int("num_layers_at_end_in_bf16", 0).value_or(1)),
           where("first_last_layers_bf16"));
  }
  // Sharded data parallelism (Megatron-FSDP, torch FSDP2).
  const bool mfsdp = a.Flag("use_megatron_fsdp");
  const bool tfsdp = a.Flag("use_torch_fsdp2");
  const std::optional<std::string> sharding =
      a.Choice("data_parallel_sharding_strategy",
               {"no_shard", "optim", "optim_grads", "optim_grads_params"});
  if (mfsdp || tfsdp) {
    o.Key(2, "fsdp", mfsdp ? "megatron" : "torch",
          mfsdp ? where("use_megatron_fsdp") : where("use_torch_fsdp2"));
    if (mfsdp) {
      o.Key(2, "data_parallel_sharding", sharding.value_or("optim_grads_params"),
            where("data_parallel_sharding_strategy"));
    }
    // torch FSDP2 keeps its default resharding unless told not to.
    // (a log prints its destination: torch_fsdp2_reshard_after_forward False).
    const bool keep = a.log() ? (a.Peek("torch_fsdp2_reshard_after_forward") != nullptr &&
                                 !a.Flag("torch_fsdp2_reshard_after_forward"))
                              : a.Flag("torch_fsdp2_no_reshard_after_forward");
    if (tfsdp && keep) {
      o.Key(2, "reshard_after_forward", "never",
            where(a.log() ? "torch_fsdp2_reshard_after_forward"
                          : "torch_fsdp2_no_reshard_after_forward"));
    }
  }
  // HSDP: --num-distributed-optimizer-instances replicas of the shard group.
  if (auto inst = a.Int("num_distributed_optimizer_instances", 1)) {
    if (*inst > 1) {
      if (d % *inst != 0) {
        Fail(fmt::format("{}: must divide the data-parallel size {} (Megatron-LM's assert); "
                         "got {}",
                         where("num_distributed_optimizer_instances"), d, *inst));
      }
      o.Key(2, "data_parallel_shard", d / *inst, where("num_distributed_optimizer_instances"));
    }
  }
  // Offload.
  {
    const bool opt_off = a.Flag("optimizer_cpu_offload");
    const std::optional<double> frac = a.Number("optimizer_offload_fraction", 0, 1);
    const std::optional<std::int64_t> off_layers = a.Int("cpu_offloading_num_layers", 0);
    const bool cpu_offloading = a.Flag("cpu_offloading");
    const bool fine = a.Flag("fine_grained_activation_offloading");
    const std::optional<std::string> modules = a.Str("offload_modules");
    const std::optional<double> act_frac = a.Number("activation_offload_fraction", 0, 1);
    const bool overlap = a.Flag("overlap_cpu_optimizer_d2h_h2d");
    const bool layers_off = (cpu_offloading || !a.log()) && off_layers && *off_layers > 0;
    if (opt_off || layers_off || fine) {
      o.Line(2, "offload:");
      if (opt_off) {
        o.Key(4, "optimizer", frac.value_or(1.0), where("optimizer_cpu_offload"));
        if (overlap) {
          o.Key(4, "overlap_optimizer_copies", "true", where("overlap_cpu_optimizer_d2h_h2d"));
        }
      }
      if (layers_off) o.Key(4, "layers", *off_layers, where("cpu_offloading_num_layers"));
      if (fine) {
        std::string list;
        std::string m = modules.value_or("");
        std::replace(m.begin(), m.end(), ',', ' ');
        std::vector<std::string> names;
        size_t q = 0;
        while (q < m.size()) {
          const size_t e = m.find(' ', q);
          const std::string n = m.substr(q, e == std::string::npos ? std::string::npos : e - q);
          if (!n.empty()) names.push_back(n);
          if (e == std::string::npos) break;
          q = e + 1;
        }
        o.Line(4,
               fmt::format("activations: {{modules: [{}], fraction: {}}}", fmt::join(names, ", "),
                           act_frac.value_or(1.0)),
               where("fine_grained_activation_offloading"));
      }
    }
  }
  if (a.Peek("num_experts") != nullptr && a.Int("num_experts", 1)) {
    o.Line(2, "moe:");
    o.Key(4, "dispatcher",
          a.Choice("moe_token_dispatcher_type", {"allgather", "alltoall", "flex"})
              .value_or("allgather"),
          where("moe_token_dispatcher_type"));
    const std::optional<std::string> backend =
        a.Choice("moe_flex_dispatcher_backend", {"deepep", "hybridep"});
    if (a.Peek("moe_token_dispatcher_type") != nullptr &&
        a.Str("moe_token_dispatcher_type") == std::optional<std::string>("flex")) {
      o.Key(4, "backend", backend.value_or("deepep"), where("moe_flex_dispatcher_backend"));
    }
    if (a.Flag("overlap_moe_expert_parallel_comm")) {
      o.Key(4, "overlap_ep_comm", "true", where("overlap_moe_expert_parallel_comm"));
    }
    if (auto etp = a.Int("expert_tensor_parallel_size", 1)) {
      o.Key(4, "expert_tensor_parallel", *etp, where("expert_tensor_parallel_size"));
    }
    if (auto cf = a.Number("moe_expert_capacity_factor", 0, 1e6)) {
      o.Key(4, "capacity_factor", *cf, where("moe_expert_capacity_factor"));
    }
    if (a.Flag("moe_pad_expert_input_to_capacity")) {
      o.Key(4, "pad_to_capacity", "true", where("moe_pad_expert_input_to_capacity"));
    }
    if (a.Flag("moe_router_force_load_balancing")) {
      o.Key(4, "force_balance", "true", where("moe_router_force_load_balancing"));
    }
  }

}

// pipeline: p, v and the schedule; the split and recompute arguments
// carried for ParseMegatronArgs.
void WritePipeline(Job& j, LaunchRun& run) {
  Args& a = j.a;
  [[maybe_unused]] ConfigWriter& o = j.o;
  [[maybe_unused]] std::vector<std::string>& notes = j.notes;
  [[maybe_unused]] const std::string& path = j.path;
  [[maybe_unused]] auto where = [&](const std::string& dest) { return a.Where(dest); };
  const std::int64_t p = j.p, layers = j.layers;
  // ---- pipeline ----------------------------------------------------------
  std::int64_t v = 1;
  std::string v_origin = where("pipeline_model_parallel_size");
  std::string& pf = run.pipeline_flags;
  auto carry = [&](const std::string& dest, const std::string& flag, const std::string& value) {
    pf += flag + " " + value + "\n";
    run.pipeline_origins[flag] = a.Peek(dest) != nullptr ? a.Peek(dest)->where : path;
  };
  carry("pipeline_model_parallel_size", "--pipeline-model-parallel-size", std::to_string(p));
  if (!a.log()) {
    // Megatron's own checks of the sharding and offload flags
    // (CheckShardingArgs, apps/output/megatron_args.cpp) see the script's;
    // a log's run passed them already.
    for (const char* dest :
         {"use_megatron_fsdp", "use_distributed_optimizer", "use_torch_fsdp2",
          "no_gradient_accumulation_fusion", "torch_fsdp2_no_reshard_after_forward",
          "optimizer_cpu_offload", "use_precision_aware_optimizer",
          "fine_grained_activation_offloading", "fp8_param_gather"}) {
      if (a.Peek(dest) == nullptr || !a.Flag(dest)) continue;
      std::string flag = std::string("--") + dest;
      std::replace(flag.begin(), flag.end(), '_', '-');
      pf += flag + "\n";
      run.pipeline_origins[flag] = a.Peek(dest)->where;
    }
    for (const char* dest : {"data_parallel_sharding_strategy", "ckpt_format", "offload_modules",
                             "cpu_offloading_num_layers", "fp8_recipe",
                             "expert_model_parallel_size"}) {
      if (a.Peek(dest) == nullptr) continue;
      const std::optional<std::string> value = a.Str(dest);
      if (!value) continue;
      std::string flag = std::string("--") + dest;
      std::replace(flag.begin(), flag.end(), '_', '-');
      carry(dest, flag, *value);
    }
  }
  const std::optional<std::string> layout = a.Str("pipeline_model_parallel_layout");
  const std::optional<std::int64_t> group =
      a.Int("microbatch_group_size_per_virtual_pipeline_stage", 1);
  const bool hybrid_pipes = j.hybrid && j.hybrid->Segments() > 1;
  if (hybrid_pipes && !a.log()) {
    // validate_args: with '|' in the pattern its segments are the stages.
    for (const char* dest :
         {"pipeline_model_parallel_layout", "num_layers_per_virtual_pipeline_stage",
          "num_virtual_stages_per_pipeline_rank", "decoder_first_pipeline_num_layers",
          "decoder_last_pipeline_num_layers"}) {
      if (a.Peek(dest) == nullptr || a.Peek(dest)->value == "None") continue;
      Fail(fmt::format("{}: must not be given with '|' in --{} (Megatron-LM's assert: the "
                       "pattern's segments are the pipeline stages)",
                       where(dest), j.hybrid->dest == "hybrid_layer_pattern"
                                        ? "hybrid-layer-pattern"
                                        : "hybrid-override-pattern"));
    }
  }
  if (hybrid_pipes) {
    const std::int64_t segments = j.hybrid->Segments();
    if (segments % p != 0) {
      Fail(fmt::format("{}: its {} pipeline segments must be divisible by "
                       "--pipeline-model-parallel-size {} (Megatron-LM's assert)",
                       where(j.hybrid->dest), segments, p));
    }
    v = segments / p;
    v_origin = where(j.hybrid->dest);
    carry(j.hybrid->dest, "--pipeline-model-parallel-layout",
          "\"" + HybridPatternLayout(j.hybrid->text) + "\"");
  }
  if (layout && !a.log()) {
    // arguments.py: v = the layout's stages / p, which must divide.
    Result<int> stages = MegatronLayoutStages(
        *layout, 4 * static_cast<size_t>(layers) + 64 + 4 * layout->size());
    if (!stages.ok()) {
      Fail(fmt::format("{}: {}", where("pipeline_model_parallel_layout"),
                       stages.error().message));
    }
    if (*stages % p != 0) {
      Fail(fmt::format("{}: its {} stages must be divisible by --pipeline-model-parallel-size "
                       "{} (Megatron-LM's assert)",
                       where("pipeline_model_parallel_layout"), *stages, p));
    }
    v = *stages / p;
    v_origin = where("pipeline_model_parallel_layout");
  }
  if (layout) {
    std::string q = "\"";
    for (char c : *layout) {
      if (c == '"') Fail(where("pipeline_model_parallel_layout") + ": must not hold '\"'");
      q += c;
    }
    carry("pipeline_model_parallel_layout", "--pipeline-model-parallel-layout", q + "\"");
  }
  if (hybrid_pipes) {
    a.Int("virtual_pipeline_model_parallel_size", 1);  // a log's: the segments'
  } else if (a.log()) {
    if (auto vpp = a.Int("virtual_pipeline_model_parallel_size", 1)) {
      v = *vpp;
      v_origin = where("virtual_pipeline_model_parallel_size");
    }
  } else if (auto n = a.Int("num_virtual_stages_per_pipeline_rank", 1)) {
    v = *n;
    v_origin = where("num_virtual_stages_per_pipeline_rank");
  } else if (auto per = a.Int("num_layers_per_virtual_pipeline_stage", 1)) {
    // arguments.py: (layers [+1 embedding] [+1 loss]) / p / per.
    std::int64_t n_layers = layers;
    if (a.Flag("account_for_embedding_in_pipeline_split")) ++n_layers;
    if (a.Flag("account_for_loss_in_pipeline_split")) ++n_layers;
    if (n_layers % p != 0 || (n_layers / p) % *per != 0) {
      Fail(fmt::format("{}: must divide the layers per pipeline stage ({} over {} stages, "
                       "Megatron-LM's assert); got {}",
                       where("num_layers_per_virtual_pipeline_stage"), n_layers, p, *per));
    }
    v = n_layers / p / *per;
    v_origin = where("num_layers_per_virtual_pipeline_stage");
  }
  if (v > 1 && !layout && !hybrid_pipes) {
    carry(a.log() ? "virtual_pipeline_model_parallel_size" : "num_virtual_stages_per_pipeline_rank",
          "--num-virtual-stages-per-pipeline-rank", std::to_string(v));
  }
  for (const char* dest : {"decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers"}) {
    if (auto n = a.Int(dest, 0)) {
      std::string flag = std::string("--") + dest;
      std::replace(flag.begin(), flag.end(), '_', '-');
      carry(dest, flag, std::to_string(*n));
    }
  }
  std::optional<std::string> granularity = a.Choice("recompute_granularity", {"full", "selective"});
  if (a.Flag("recompute_activations")) {
    // validate_args: --recompute-activations sets the granularity to
    // selective, whatever --recompute-granularity said.
    granularity = "selective";
    carry("recompute_activations", "--recompute-granularity", "selective");
  } else if (granularity) {
    carry("recompute_granularity", "--recompute-granularity", *granularity);
  }
  if (auto g = granularity) {
    if (auto m = a.Choice("recompute_method", {"uniform", "block"})) {
      carry("recompute_method", "--recompute-method", *m);
    }
    if (auto n = a.Int("recompute_num_layers", 0)) {
      carry("recompute_num_layers", "--recompute-num-layers", std::to_string(*n));
    }
    if (*g == "selective") {
      const std::string mods = a.Str("recompute_modules").value_or("core_attn");
      if (mods != "core_attn") {
        notes.push_back("--recompute-modules " + mods +
                        ": read as ppb's selective recompute (core attention only)");
      }
    }
  } else {
    a.Str("recompute_method");
    a.Str("recompute_num_layers");
    a.Str("recompute_modules");
  }

  o.Line(0, "pipeline:");
  o.Key(2, "stages", p, where("pipeline_model_parallel_size"));
  if (v > 1) {
    o.Key(2, "virtual_stages", v, v_origin);
    o.Key(2, "schedule", "interleaved", v_origin);
    if (group) {
      o.Key(2, "microbatch_group", *group,
            where("microbatch_group_size_per_virtual_pipeline_stage"));
    }
  } else {
    o.Key(2, "schedule", "1f1b", where("pipeline_model_parallel_size"));
  }

  // `ppb-sim plan`: the layouts of the same world, its default space.
  o.Line(0, "plan:");
  o.Key(2, "gpus", j.world.gpus, j.world.origin);

}

// plan's world and the machine from --cluster.
void WriteMachine(Job& j, const LaunchInputs& in) {
  Args& a = j.a;
  [[maybe_unused]] ConfigWriter& o = j.o;
  [[maybe_unused]] std::vector<std::string>& notes = j.notes;
  [[maybe_unused]] const std::string& path = j.path;
  [[maybe_unused]] auto where = [&](const std::string& dest) { return a.Where(dest); };
  // ---- the machine -------------------------------------------------------
  if (Status st = WriteCluster(o, in, path); !st.ok()) Fail(st.error().message);

}

LaunchRun Translate(Args& a, const LaunchCommand* launch, const std::string& path,
                      const LaunchInputs& in) {
  LaunchRun run;
  ConfigWriter o;
  if (launch != nullptr && !launch->script.empty()) {
    // The decoder-only language models ppb simulates: GPT (its MoE, MLA
    // and windowed forms) and the hybrid Mamba models. BERT and T5 (an
    // encoder, an encoder-decoder) and the vision-language models are not.
    std::string base = launch->script;
    if (const size_t slash = base.find_last_of('/'); slash != std::string::npos) {
      base = base.substr(slash + 1);
    }
    if (base != "pretrain_gpt.py" && base != "pretrain_hybrid.py" &&
        base != "pretrain_mamba.py") {
      Fail(fmt::format("{}:{}: the launch: must run pretrain_gpt.py, pretrain_hybrid.py or "
                       "pretrain_mamba.py (ppb simulates decoder-only language models, not "
                       "encoders, encoder-decoders or vision-language models); got {}",
                       path, launch->line, base));
    }
  }
  Job j{a, o, run.notes, path, 1, 1, 1, 1, 1, World{}, 0, 0};
  ReadParallel(j, launch, in);
  WriteModel(j);
  WriteTraining(j);
  WritePipeline(j, run);
  WriteMachine(j, in);
  std::vector<std::string>& notes = run.notes;
  // ---- what was not read -------------------------------------------------
  // Arguments that only say how the data is read, logged, saved or
  // profiled are not named one by one for a log (it prints all of them).
  std::vector<std::string> unread = a.Unread();
  if (a.log()) {
    notes.push_back(fmt::format("{} other arguments of the log are not modelled (data, "
                                "logging, checkpointing, learning rate, ...)",
                                unread.size()));
    unread.clear();
  }
  FinishLaunch(run, o, unread);
  return run;
}

}  // namespace

Result<LaunchRun> ReadMegatronLaunch(const std::string& path, std::string_view text,
                                       const LaunchInputs& inputs) {
  try {
    Args log_args(path, true);
    if (ReadLogArgs(path, text, log_args)) {
      return Translate(log_args, nullptr, path, inputs);
    }
    const std::string section = EmittedSection(text);
    if (!section.empty()) text = section;
    const bool args_file = IsArgumentsFile(text);
    Result<LaunchCommand> launch =
        args_file ? ReadArgumentsFile(path, text) : ReadLaunchScript(path, text);
    if (!launch.ok()) return launch.error();
    Args args(path, false);
    ReadCommandArgs(path, launch->args, args);
    LaunchRun run = Translate(args, &*launch, path, inputs);
    if (!launch->environment.empty()) {
      run.notes.insert(run.notes.begin(),
                       fmt::format("read while unset (ppb gives the script no environment): {}",
                                   fmt::join(launch->environment, " ")));
    }
    return run;
  } catch (const Bad& b) {
    return Error{"", b.message};
  }
}

}  // namespace ppb
