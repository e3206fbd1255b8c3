// MegatronModelFlags (apps/output/emit_common.h): a derived model's shape as
// Megatron-LM's arguments (core 0.20.0, d98e8a6: arguments.py and
// transformer_config.py), which `--from megatron` reads back with
// Megatron's defaults (apps/input/megatron_launch.h), so that the flags
// name the model that was simulated and nothing else.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "apps/output/emit_common.h"

namespace ppb::emit_detail {
namespace {

// "([0]*3+[1]*58)": a per-layer 0/1 pattern run-length written as
// Megatron's list expressions (arguments.py moe_freq_type, which reads
// --moe-layer-freq and --window-attn-skip-freq).
std::string RunLengthPattern(const std::vector<int>& bits) {
  std::string out;
  for (size_t i = 0; i < bits.size();) {
    size_t k = i;
    while (k < bits.size() && bits[k] == bits[i]) ++k;
    out += fmt::format("{}[{}]*{}", out.empty() ? "" : "+", bits[i], k - i);
    i = k;
  }
  return "(" + out + ")";
}

// A per-layer 0/1 pattern with some 0 as Megatron's int-or-list arguments
// read it (window_attn_skip_freq, linear_attention_freq): the integer N
// when the 0s are exactly every Nth layer, (i + 1) % N == 0; else the
// pattern run-length written, quoted.
std::string EveryNthOrList(const std::vector<int>& bits) {
  const int layers = static_cast<int>(bits.size());
  for (int n = 2; n <= layers; ++n) {
    bool every = true;
    for (int i = 0; i < layers && every; ++i) every = bits[i] == ((i + 1) % n != 0 ? 1 : 0);
    if (every) return std::to_string(n);
  }
  return "\"" + RunLengthPattern(bits) + "\"";
}

// Megatron's --moe-layer-freq pattern, 1 for an MoE layer.
std::string MoePattern(const Architecture& a) {
  std::vector<int> moe;
  for (int i = 0; i < a.layers; ++i) moe.push_back(a.IsMoeLayer(i) ? 1 : 0);
  return RunLengthPattern(moe);
}

// TransformerConfig's linear_* fields for the gated DeltaNet of `a`; the
// chunked kernel's block is fla's 64.
std::string DeltaNetFlags(const Architecture& a, std::vector<std::string>& missing) {
  if (a.deltanet.chunk != DeltaNetShape{}.chunk) {
    missing.emplace_back("the gated DeltaNet's chunk (Megatron runs fla's chunks of 64)");
  }
  return fmt::format(
      "--linear-num-key-heads {}\n--linear-num-value-heads {}\n--linear-key-head-dim {}\n"
      "--linear-value-head-dim {}\n--linear-conv-kernel-dim {}\n",
      a.deltanet.key_heads, a.deltanet.value_heads, a.deltanet.key_dim, a.deltanet.value_dim,
      a.deltanet.conv);
}

// Megatron's window flags for the sliding layers of `a` (TransformerConfig
// window_size (w - 1, 0): a query sees itself and w - 1 keys before it;
// window_attn_skip_freq: an integer N when the full layers are every N-th
// (1-based), else the per-layer pattern run-length written, 1 sliding;
// core/transformer/utils.py is_layer_window_attention). Empty when no
// layer slides.
std::string WindowFlags(const Architecture& a) {
  std::vector<int> slides;
  for (int i = 0; i < a.layers; ++i) slides.push_back(a.Block(i).span == Span::Sliding ? 1 : 0);
  if (a.sliding_window <= 0 || std::find(slides.begin(), slides.end(), 1) == slides.end()) {
    return "";
  }
  std::string text = fmt::format("--window-size {},0\n", a.sliding_window - 1);
  if (std::find(slides.begin(), slides.end(), 0) == slides.end()) return text;
  return text + "--window-attn-skip-freq " + EveryNthOrList(slides) + "\n";
}

// --hybrid-layer-pattern: one symbol a decoder layer, '|' between the
// stages (segment k is global stage k, as the layout's).
std::string HybridPatternFlag(const RunConfig& config) {
  const Architecture& a = config.architecture;
  const std::vector<int>& per_stage = config.strategy.layers_per_stage;
  std::string out;
  int decoder = 0;
  size_t layer = 0;
  for (size_t s = 0; s < per_stage.size(); ++s) {
    if (s > 0) out += '|';
    for (int k = 0; k < per_stage[s] && layer < config.layers.size(); ++k, ++layer) {
      if (IsDecoder(config.layers[layer].kind)) out += HybridSymbol(a, decoder++);
    }
  }
  return fmt::format("--hybrid-layer-pattern \"{}\"\n", out);
}

}  // namespace

bool MegatronHybrid(const Architecture& a) {
  if (a.blocks.empty() || a.mtp_layers > 0) return false;
  for (int i = 0; i < a.layers; ++i) {
    if (HybridSymbol(a, i) == 0) return false;
  }
  return true;
}

std::string MegatronModelFlags(const RunConfig& config, std::vector<std::string>& missing) {
  const Architecture& a = config.architecture;
  const Training& t = config.training;
  std::string text;
  text += fmt::format("--num-layers {}\n--hidden-size {}\n", a.layers, a.hidden);
  if (a.ffn > 0) text += fmt::format("--ffn-hidden-size {}\n", a.ffn);
  text += fmt::format("--num-attention-heads {}\n", a.heads);
  if (a.mla()) {
    text += "--multi-latent-attention\n";
    if (a.q_lora_rank > 0) text += fmt::format("--q-lora-rank {}\n", a.q_lora_rank);
    text += fmt::format(
        "--kv-lora-rank {}\n--qk-head-dim {}\n--qk-pos-emb-head-dim {}\n--v-head-dim {}\n",
        a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim);
  } else {
    if (a.kv_heads != a.heads) {
      text += fmt::format("--group-query-attention\n--num-query-groups {}\n", a.kv_heads);
    }
    text += fmt::format("--kv-channels {}\n", a.head_dim);
  }
  if (a.gated_mlp) text += "--swiglu\n";
  if (!a.tied_embeddings) text += "--untie-embeddings-and-output-weights\n";
  // ppb's norms: LayerNorm with biases on every linear (GPT-2/3); RMSNorm
  // with biases on Q, K, V, the attention output and every routed expert,
  // on a model whose every MLP is routed (GPT-OSS): Megatron's
  // add_bias_linear, its default; or RMSNorm with none besides Q, K, V's.
  bool all_routed = a.experts > 0 && a.shared_ffn == 0;
  for (int i = 0; i < a.layers && all_routed; ++i) all_routed = a.IsMoeLayer(i);
  const bool rms_biases =
      !a.layernorm_with_bias && a.qkv_bias && a.out_bias && a.expert_bias && all_routed;
  text += a.layernorm_with_bias ? "--normalization LayerNorm\n"
          : rms_biases          ? "--normalization RMSNorm\n"
                                : "--normalization RMSNorm\n--disable-bias-linear\n";
  if (a.qkv_bias && !rms_biases) text += "--add-qkv-bias\n";
  if (a.qk_norm) text += "--qk-layernorm\n";
  if (a.attention_out_gate) text += "--attention-output-gate\n";
  text += WindowFlags(a);
  if (a.attention_sinks) text += "--softmax-type learnable\n";
  if (a.learned_positions > 0) {
    text += fmt::format("--position-embedding-type learned_absolute\n"
                        "--max-position-embeddings {}\n",
                        a.learned_positions);
  } else {
    text += fmt::format("--position-embedding-type rope\n--max-position-embeddings {}\n", t.seq);
  }
  // Megatron pads the vocabulary to a multiple of 128 x TP
  // (build_tokenizer.py vocab_size_with_padding); the simulated one is
  // given as the padded size where that padding would change it.
  text += fmt::format("--vocab-size {}\n", a.vocab);
  const std::int64_t multiple = std::int64_t{128} * t.tp;
  if ((a.vocab + multiple - 1) / multiple * multiple != a.vocab) {
    text += fmt::format("--padded-vocab-size {}\n", a.vocab);
  }
  if (a.experts > 0) {
    text += fmt::format("--num-experts {}\n--moe-router-topk {}\n--moe-ffn-hidden-size {}\n",
                        a.experts, a.top_k, a.expert_ffn);
    if (a.shared_ffn > 0) {
      text += fmt::format("--moe-shared-expert-intermediate-size {}\n", a.shared_ffn);
    }
    if (a.shared_expert_gate) text += "--moe-shared-expert-gate\n";
    if (a.router_bias) text += "--moe-router-enable-expert-bias\n";
    if (a.moe_latent > 0) text += fmt::format("--moe-latent-size {}\n", a.moe_latent);
    bool all = true;
    for (int i = 0; i < a.layers; ++i) all = all && a.IsMoeLayer(i);
    // A hybrid model's MoE layers are its pattern's E layers.
    if (!all && !MegatronHybrid(a)) {
      text += fmt::format("--moe-layer-freq \"{}\"\n", MoePattern(a));
    }
  }
  if (a.mtp_layers > 0) text += fmt::format("--mtp-num-layers {}\n", a.mtp_layers);
  if (MegatronHybrid(a)) {
    // pretrain_hybrid.py: the pattern, and TransformerConfig's Mamba shape;
    // MambaMixer fixes the convolution's width and bias, the scan's chunk
    // and no projection bias.
    text += HybridPatternFlag(config);
    if (a.HasMixer(Mixer::Mamba2)) {
      text += fmt::format(
          "--mamba-num-heads {}\n--mamba-head-dim {}\n--mamba-state-dim {}\n"
          "--mamba-num-groups {}\n",
          a.mamba.heads, a.mamba.head_dim, a.mamba.state, a.mamba.groups);
      const Mamba2Shape fixed;
      if (a.mamba.conv != fixed.conv || a.mamba.chunk != fixed.chunk || !a.mamba.conv_bias ||
          a.mamba.proj_bias) {
        missing.emplace_back(
            "the Mamba convolution width, scan chunk or biases (Megatron's MambaMixer "
            "fixes a 4-wide biased convolution, chunks of 128 and unbiased projections)");
      }
    }
    if (a.HasMixer(Mixer::GatedDeltaNet)) text += DeltaNetFlags(a, missing);
  } else {
    // A gated DeltaNet beside its MLP (Qwen3-Next's layers) is the GPT
    // model's experimental attention variant (TransformerConfig
    // experimental_attention_variant 'gdn', linear_attention_freq: N when
    // the full attention layers are every Nth, (i + 1) % N == 0; else the
    // per-layer list, 1 linear). What these flags cannot say: a Mamba
    // mixer beside an MLP, or a pattern Megatron's hybrid symbols cannot
    // write.
    std::vector<int> linear;
    bool other = false;
    for (int i = 0; i < a.layers; ++i) {
      const LayerBlock b = a.Block(i);
      const bool delta = b.mixer == Mixer::GatedDeltaNet && b.mlp == MlpKind::Auto;
      linear.push_back(delta ? 1 : 0);
      other = other || (b.mixer != Mixer::Attention && !delta);
    }
    if (other) {
      missing.emplace_back("the Mamba and linear-attention mixers");
    } else if (std::find(linear.begin(), linear.end(), 1) != linear.end()) {
      text += "--experimental-attention-variant gdn\n--linear-attention-freq " +
              EveryNthOrList(linear) + "\n";
      text += DeltaNetFlags(a, missing);
    }
  }
  for (int i = 0; i < a.layers; ++i) {
    if (a.Block(i).span == Span::Chunked) {
      missing.emplace_back("the chunked attention (Llama 4's)");
      break;
    }
  }
  if ((a.out_bias || a.expert_bias) && !rms_biases) {
    missing.emplace_back(
        "biases on the attention output or the experts alone (Megatron's "
        "add_bias_linear puts them on every linear)");
  }
  return text;
}

}  // namespace ppb::emit_detail
