// torchtitan's model flavours as data: what v0.2.2's `[model] name` and
// `flavor` select (torchtitan/models/<name>/__init__.py, <name>_args), and
// main's `model_registry(flavor)` (b5bcd76c, models/llama3/__init__.py
// llama3_configs: v0.2.2's llama3 flavours, their SwiGLU width by the same
// rule in models/common/feed_forward.py compute_ffn_hidden_dim, plus 1B
// and 3B with tied embeddings; qwen3_configs' dense and MoE flavours,
// v0.2.2's shapes; attention backend flex by default), for the decoders
// ppb reads: llama3 (model/args.py TransformerModelArgs:
// vocab_size 128256, multiple_of 256, no ffn_dim_multiplier, n_kv_heads =
// n_heads by default; the SwiGLU width of model.py FeedForward) and qwen3
// (model/args.py Qwen3ModelArgs: head_dim and hidden_dim given, qk_norm,
// enable_weight_tying on the three smallest; the MoE flavours route every
// layer's MLP, MoEArgs without shared experts) and deepseek_v3
// (model/args.py DeepSeekV3ModelArgs, main's _debugmodel ... _671b: MLA,
// n_dense_layers dense layers of inter_dim, then routed experts with
// shared ones of moe_inter_dim each) and gpt_oss (v0.2.2's
// model/args.py GptOssModelArgs and main's _debugmodel, _20b, _120b: 64
// heads of 64 with 8 KV heads, 128-key sliding windows on the even layers
// (model.py TransformerBlock use_sliding_attention = layer_id % 2 == 0;
// main's _build_gptoss_layers), every layer routed to experts of
// moe_inter_dim 2880 with biases, sinks) and v0.2.2's llama4
// (model/args.py TransformerModelArgs, llama4_args; model/model.py
// TransformerBlock: every interleave_moe_layer_step-th layer routed, the
// experts' width by the auto_scale_hidden_dim rule, one shared expert;
// iRoPE's chunked layers). Every flavour is untied
// unless it says otherwise, uses RMSNorm and rotary positions, and has no
// biases.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/architecture.h"

namespace ppb {

struct TorchtitanFlavour {
  std::string_view model;   // "llama3"
  std::string_view flavor;  // "8B"
  std::int64_t dim = 0;
  std::int64_t n_layers = 0;
  std::int64_t n_heads = 0;
  std::int64_t n_kv_heads = 0;  // 0: n_heads
  std::int64_t vocab_size = 0;
  std::int64_t head_dim = 0;    // 0: dim / n_heads
  std::int64_t ffn_hidden = 0;  // 0: from multiple_of and ffn_dim_multiplier
  std::int64_t multiple_of = 256;
  double ffn_dim_multiplier = 0;  // 0: None
  bool qk_norm = false;
  bool tied = false;
  // Routed experts on every layer (qwen3's MoE flavours; 0: dense): their
  // count, the experts a token takes and one expert's width.
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t moe_hidden = 0;
  // deepseek_v3: shared experts of moe_hidden each, the first dense layers
  // (of ffn_hidden), and multi-head latent attention (kv_lora_rank > 0).
  std::int64_t shared_experts = 0;
  std::int64_t dense_layers = 0;
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  // gpt_oss: a sliding window of this many keys on the even layers (0:
  // every layer full attention), and GPT-OSS's biases: Q, K, V and the
  // output projection biased, a learned sink logit per head, a biased
  // router and biased experts.
  std::int64_t sliding_window = 0;
  bool gpt_oss = false;
  // llama4: the MoE layers are those with (layer_id + 1) % moe_step == 0
  // (interleave_moe_layer_step; the others dense of ffn_hidden); with
  // iRoPE (every_n_layers_nope > 0) layer_id % nope_every == 0 is a NoPE
  // layer of full attention and the others attend within blocks of
  // `chunk` tokens (fixed_attn_block_size).
  std::int64_t moe_step = 1;
  std::int64_t nope_every = 0;
  std::int64_t chunk = 0;
  std::string_view attention = "sdpa";  // attn_type: sdpa | flex | varlen
  bool main = false;                    // main's registry, else v0.2.2's
};

// The SwiGLU width of llama3's FeedForward(dim, 4 * dim, multiple_of,
// ffn_dim_multiplier): int(2 * 4dim / 3), times the multiplier (truncated),
// rounded up to a multiple of multiple_of. 8B: 14,336; 70B: 28,672; 405B:
// 53,248.
std::int64_t Llama3FfnHidden(std::int64_t dim, std::int64_t multiple_of, double multiplier);

// llama4's expert width (model.py TransformerBlock, auto_scale_hidden_dim):
// int(2 * 4dim / 3), times the multiplier (truncated), divided by top_k +
// num_shared_experts (truncated), rounded up to a multiple of multiple_of.
// 17bx16e: 8,192.
std::int64_t Llama4MoeHidden(std::int64_t dim, std::int64_t multiple_of, double multiplier,
                             std::int64_t experts_a_token);

// The FFN width of a flavour (given, or Llama3FfnHidden).
std::int64_t FfnHidden(const TorchtitanFlavour& f);

// The architecture a flavour builds: what --from torchtitan writes as
// model.architecture for it (tests/test_torchtitan_round_trip.cpp checks the two
// agree on every flavour), and what --emit torchtitan matches a run's
// model against.
Architecture FlavourArchitecture(const TorchtitanFlavour& f);

// Why torchtitan v0.2.2 refuses pipeline parallelism (p > 1) or context
// parallelism (cp > 1) for flavour `f`, or "" where it runs it (and for
// main's flavours): gpt_oss's TrainSpec has no pipelining_fn (train.py:
// "Pipeline Parallel is enabled but gpt_oss does not support pipelining");
// GptOssModelArgs.update_from_config refuses CP; TransformerModelArgs.
// update_from_config refuses CP with FlexAttention (llama4's iRoPE
// flavours). --from torchtitan refuses such a job, --emit names it.
std::string V022PipelineRefusal(const TorchtitanFlavour& f);
std::string V022ContextRefusal(const TorchtitanFlavour& f);

// nullptr when `model` has no such flavour or is not a model ppb reads;
// `main` picks main's registry.
const TorchtitanFlavour* FindTorchtitanFlavour(std::string_view model, std::string_view flavor,
                                               bool main = false);

// The models ppb reads ("llama3", "qwen3", "deepseek_v3", "gpt_oss" and
// v0.2.2's "llama4"), and one
// model's flavours, in torchtitan's order.
std::vector<std::string> TorchtitanModels(bool main = false);
std::vector<std::string> TorchtitanFlavours(std::string_view model, bool main = false);

}  // namespace ppb
