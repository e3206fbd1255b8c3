// A transformer's architecture, its training setup and its device, as plain
// values: what the symbolic cost model (core/cost_model.h) turns into the
// per-layer costs of core/model.h. Filled by apps/hf_config.h from a
// HuggingFace config.json or by hand (tests).
#pragma once

#include <cstdint>
#include <vector>

#include "core/gpu.h"
#include "core/moe.h"
#include "core/offload.h"
#include "core/precision.h"
#include "core/sharding.h"

namespace ppb {

// Which decoder layers have a mixture-of-experts MLP. The HuggingFace
// families spell it differently (conventions.md "HuggingFace config.json"):
//   DeepSeek: layer i is MoE iff i >= first_k_dense && i % moe_layer_freq == 0
//   Qwen-MoE: layer i is MoE iff i not in mlp_only_layers &&
//             (i + 1) % decoder_sparse_step == 0
// Both rules are applied (their neutral values leave the other's alone).
struct MoeLayout {
  int first_k_dense = 0;             // first_k_dense_replace
  int moe_layer_freq = 1;            // DeepSeek moe_layer_freq (>= 1)
  int decoder_sparse_step = 1;       // Qwen decoder_sparse_step (>= 1)
  std::vector<int> mlp_only_layers;  // Qwen mlp_only_layers (0-based)
};

// How a decoder layer mixes tokens: softmax attention, Mamba-2's state-
// space scan (Dao & Gu 2024), gated DeltaNet's linear attention (Yang et
// al. 2024), or nothing (Nemotron-H's MLP-only blocks). core/mixers.h
// prices each.
enum class Mixer : std::uint8_t { Attention, Mamba2, GatedDeltaNet, None };
// The keys an attention layer's queries see: every earlier one, the last
// `sliding_window` (GPT-OSS "sliding_attention"), or those of the query's
// own `attention_chunk` (Llama 4's chunked layers).
enum class Span : std::uint8_t { Full, Sliding, Chunked };
// A layer's MLP: by the MoeLayout rule (Auto), or fixed by the layer
// pattern (Nemotron-H's "-" dense and "E" MoE blocks, none in "M", "*").
enum class MlpKind : std::uint8_t { Auto, Dense, Moe, None };

// One decoder layer of a hybrid model. A layer with both a mixer and an
// MLP has two norms (pre-mixer, pre-MLP); Nemotron-H's blocks hold one of
// the two and one norm.
struct LayerBlock {
  Mixer mixer = Mixer::Attention;
  Span span = Span::Full;
  MlpKind mlp = MlpKind::Auto;
  bool operator==(const LayerBlock&) const = default;
};

// Mamba-2 mixer shapes [HF modeling_nemotron_h.py NemotronHMamba2Mixer;
// mamba_ssm mamba2.py]: heads x head_dim = the inner width d_i.
struct Mamba2Shape {
  std::int64_t heads = 0;     // mamba_num_heads
  std::int64_t head_dim = 0;  // mamba_head_dim
  std::int64_t state = 0;     // ssm_state_size N
  std::int64_t groups = 1;    // n_groups (B and C are shared per group)
  std::int64_t conv = 4;      // conv_kernel
  std::int64_t chunk = 128;   // chunk_size of the SSD scan
  bool conv_bias = true;      // use_conv_bias
  bool proj_bias = false;     // use_bias (in_proj, out_proj)
  std::int64_t inner() const { return heads * head_dim; }
  bool operator==(const Mamba2Shape&) const = default;
};

// Gated DeltaNet shapes [HF modeling_qwen3_next.py Qwen3NextGatedDeltaNet].
struct DeltaNetShape {
  std::int64_t key_heads = 0;    // linear_num_key_heads
  std::int64_t value_heads = 0;  // linear_num_value_heads
  std::int64_t key_dim = 0;      // linear_key_head_dim
  std::int64_t value_dim = 0;    // linear_value_head_dim
  std::int64_t conv = 4;         // linear_conv_kernel_dim
  std::int64_t chunk = 64;       // the chunked kernel's block (fla)
  std::int64_t keys() const { return key_heads * key_dim; }
  std::int64_t values() const { return value_heads * value_dim; }
  bool operator==(const DeltaNetShape&) const = default;
};

// The model. Sizes are element counts, not bytes.
struct Architecture {
  std::int64_t hidden = 0;    // h
  int layers = 0;             // decoder layers L (MTP layers not included)
  int heads = 0;              // a, attention (query) heads
  int kv_heads = 0;           // key/value heads (GQA); = heads for MHA
  std::int64_t head_dim = 0;  // per head; usually h / a
  std::int64_t ffn = 0;       // dense MLP width
  std::int64_t vocab = 0;     // V
  bool tied_embeddings = false;  // LM head shares the embedding matrix
  bool gated_mlp = true;         // SwiGLU (gate, up, down) vs two matrices
  bool qkv_bias = false;         // biases on Q, K, V (Qwen2)
  bool qk_norm = false;          // RMSNorm on each head's Q and K (Qwen3)
  // GPT-2/3 style: LayerNorm with weight and bias, biases on every linear
  // (QKV, attention output, both MLP matrices). Otherwise RMSNorm (weight
  // only) and no linear biases besides qkv_bias.
  bool layernorm_with_bias = false;
  std::int64_t learned_positions = 0;  // learned positional embedding rows

  // Mixture of experts (experts == 0: every layer dense).
  int experts = 0;                 // routed experts
  int top_k = 0;                   // experts per token
  std::int64_t expert_ffn = 0;     // width of one routed expert
  std::int64_t shared_ffn = 0;     // total width of the shared expert(s)
  bool shared_expert_gate = false;  // Qwen-MoE: a sigmoid gate (h x 1)
  bool router_bias = false;         // DeepSeek-V3 e_score_correction_bias
  // Latent MoE (Megatron-LM core 0.20 moe_latent_size, Nemotron 3 Super):
  // the routed experts work at this width, between a down projection
  // (h x latent) before the dispatch and an up projection after the
  // combine, each whole on every TP rank (TELinear "duplicated"); the router
  // and the shared expert read the hidden states. 0: the hidden width.
  std::int64_t moe_latent = 0;
  MoeLayout moe_layout;

  // Multi-head latent attention (DeepSeek-V2/V3); used when kv_lora_rank > 0.
  std::int64_t q_lora_rank = 0;  // 0: a plain q_proj
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;

  int mtp_layers = 0;  // multi-token-prediction layers (DeepSeek-V3: 1)

  // Hybrid and windowed models: one entry per decoder layer, or empty
  // (every layer full attention with the MoeLayout's MLP).
  std::vector<LayerBlock> blocks;
  std::int64_t sliding_window = 0;   // keys of a Span::Sliding layer
  std::int64_t attention_chunk = 0;  // tokens of a Span::Chunked chunk
  bool attention_sinks = false;   // GPT-OSS: one learned logit per head
  bool attention_out_gate = false;  // Qwen3-Next: q_proj also emits a gate
  bool out_bias = false;          // a bias on the attention output (GPT-OSS)
  bool expert_bias = false;       // biases on every expert's linears (GPT-OSS)
  Mamba2Shape mamba;
  DeltaNetShape deltanet;

  bool mla() const { return kv_lora_rank > 0; }
  // Whether any decoder layer's block (Block(i), i < layers) has mixer `m`,
  // or attention over span `s`.
  bool HasMixer(Mixer m) const;
  bool HasSpan(Span s) const;
  bool IsMoeLayer(int i) const;  // 0-based decoder layer index
  // The MoE layers among decoder layers 0 .. i-1 (i past the last: all):
  // the row of measured expert loads layer i takes (core/moe.h).
  int MoeLayersBefore(int i) const;
  // Layer i's block (the default for i outside `blocks`: the MTP layer).
  LayerBlock Block(int i) const {
    if (i >= 0 && i < static_cast<int>(blocks.size())) return blocks[i];
    return LayerBlock{};
  }
  // Whether layer i has an MLP (every layer but Nemotron-H's "M" and "*").
  bool HasMlp(int i) const { return Block(i).mlp != MlpKind::None; }
};

// Whether `a` and `b` give the same model (what the cost model reads): the
// same shapes, and layer by layer the same mixer, span and MLP kind. A
// field no layer uses is not compared (the dense width of a model whose
// every MLP is routed, a window no layer slides in, the Mamba shape of an
// attention-only model), nor how the MoE layers are spelt (DeepSeek's
// first_k_dense or Qwen's sparse step), only which they are.
bool SameLayers(const Architecture& a, const Architecture& b);

// Layer i as a symbol of Megatron-LM's hybrid pattern (core 0.20,
// hybrid_layer_allocation.py Symbols; HuggingFace Nemotron-H's
// hybrid_override_pattern): 'M' a Mamba-2 mixer alone, 'G' a gated DeltaNet
// alone, '*' full attention alone ('+' when the model's attention is MLA),
// '-' a dense MLP alone, 'E' experts alone; 0 for any other block (a
// transformer layer with both, a windowed one).
char HybridSymbol(const Architecture& a, int i);

// Per-head widths of the attention core: Q and K (MLA: nope + rope), V.
inline std::int64_t QkDim(const Architecture& a) {
  return a.mla() ? a.qk_nope_head_dim + a.qk_rope_head_dim : a.head_dim;
}
inline std::int64_t VDim(const Architecture& a) {
  return a.mla() ? a.v_head_dim : a.head_dim;
}
// K heads of the attention core: MLA expands the latent to every head.
inline std::int64_t KvHeads(const Architecture& a) {
  return a.mla() ? a.heads : a.kv_heads;
}
// The width of the tokens a routed expert takes and gives back (and the
// dispatcher moves): the latent width of a latent MoE, else the hidden.
inline std::int64_t ExpertWidth(const Architecture& a) {
  return a.moe_latent > 0 ? a.moe_latent : a.hidden;
}

// The optimizer, which sets the bytes of optimizer state per parameter
// (core/cost_model.h BytesPerParam).
enum class Optimizer {
  Adam,  // Adam / AdamW: fp32 m + v (+ fp32 master weight in mixed precision)
  Sgd,   // SGD with momentum: fp32 momentum (+ fp32 master weight)
};

// A floating-point format of weights, gradients or activations.
enum class Dtype { Bf16, Fp16, Fp32 };
inline int DtypeBytes(Dtype d) { return d == Dtype::Fp32 ? 4 : 2; }
inline const char* DtypeName(Dtype d) {
  return d == Dtype::Bf16 ? "bf16" : d == Dtype::Fp16 ? "fp16" : "fp32";
}
// Megatron-LM's gradient precision for a training dtype when none is asked
// (megatron/training/arguments.py, validate_args): bf16 forces
// accumulate_allreduce_grads_in_fp32 (fp32 main_grad); fp16 keeps the
// gradients in fp16 (accumulate_allreduce_grads_in_fp32 defaults to False);
// fp32 training has fp32 gradients.
inline Dtype DefaultGradDtype(Dtype d) {
  return d == Dtype::Fp16 ? Dtype::Fp16 : Dtype::Fp32;
}

// How the model is trained: the parallel layout of one pipeline rank.
struct Training;
// Megatron's expert tensor-parallel size: training.moe.expert_tensor_parallel,
// else the tensor-parallel size (arguments.py's default).
int ExpertTp(const Training& t);

struct Training {
  std::int64_t seq = 0;          // s, tokens per sequence
  std::int64_t micro_batch = 1;  // b, sequences per micro-batch
  int activation_bytes = 2;      // bytes per activation element (bf16: 2)
  Dtype dtype = Dtype::Bf16;       // weights (training.dtype)
  Dtype grad_dtype = Dtype::Fp32;  // gradient buffer (training.grad_dtype)
  // Pipeline ranks p. With tied embeddings and p > 1 the last stage keeps
  // its own copy of the word embeddings for the LM head (Megatron).
  int pp = 1;
  int tp = 1;                    // tensor parallel size t
  bool sp = false;               // sequence parallel (needs tp > 1 to matter)
  int cp = 1;                    // context parallel size
  int ep = 1;                    // expert parallel size
  int dp = 1;                    // data parallel size
  // Shard optimizer state over dp x cp: sharding.strategy optim or more
  // (Megatron's --use-distributed-optimizer; kept equal by the config).
  bool distributed_optimizer = false;
  // training.data_parallel_sharding, fsdp, data_parallel_shard,
  // reshard_after_forward (core/sharding.h).
  Sharding sharding;
  // training.offload (core/offload.h). Needs the step model.
  Offload offload;
  Optimizer optimizer = Optimizer::Adam;
  // Sequences per step (0: not given; then pipeline.microbatches is m).
  std::int64_t global_batch = 0;
  // Megatron-LM's flags (megatron/training/arguments.py, core 0.20: each
  // store_true, default False).
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool tp_comm_overlap = false;
  // training.tp_across_nodes: the tensor-parallel group may span nodes.
  bool tp_across_nodes = false;
  // The busiest expert-parallel rank's tokens over the mean (1: balanced
  // routing); multiplies the expert GEMMs and the all-to-alls.
  double routing_skew = 1.0;
  // training.moe (core/moe.h): dispatcher, expert TP, capacity, balance.
  MoeSettings moe;
  // The attention core stores no s^2 tensor (FlashAttention, as Megatron
  // with Transformer Engine runs it): on with the step model.
  bool flash_attention = false;
  // The linear layers' low-precision recipe (training.fp8, training.fp4;
  // core/precision.h). Needs the step model.
  LowPrecision low;
};

// One device.
struct Hardware {
  double peak_tflops = 0;           // dense 16-bit peak, TFLOP/s
  double achievable_fraction = 1;   // of the peak reached on matmuls (0, 1]
  std::int64_t memory_bytes = 0;    // capacity
  // The step model (hardware.gpu given): each layer's kernels priced by
  // shape (core/layer_kernels.h), its TP/CP/EP collectives on their group's
  // link (core/rank_layout.h), and the step's tail (core/step_tail.h).
  // Without it: every FLOP at peak x achievable_fraction, nothing else.
  bool step_model = false;
  // With the step model, achievable_fraction given explicitly replaces the
  // GEMM efficiency curve (and the attention efficiency) by that constant.
  bool fraction_given = false;
  Gpu gpu;                          // its peak_tflops is peak_tflops
  std::int64_t memory_reserve = 0;  // kept free on every device
  // The peers one rank's NCCL connects to (core/process_memory.h
  // CountNcclPeers), set with the step model once the job is placed.
  NcclPeers nccl_peers;
};

}  // namespace ppb
