// The token mixers beside softmax attention over every earlier key, and
// attention's narrower spans: what each costs per layer (parameters,
// FLOPs, saved activations, kernels). core/cost_model.cpp (with
// layer_params.cpp, layer_memory.cpp) and core/layer_kernels.cpp take a layer's block (core/architecture.h
// LayerBlock) and ask here for the parts that differ from a full-attention
// layer.
//
// Sources:
//   [M2]   Dao & Gu, "Transformers are SSMs" (Mamba-2), 2024, §6 (the SSD
//          algorithm: per chunk of Q tokens, C B^T and its product with X
//          in the diagonal blocks, chunk states B^T X, and the states'
//          output C h).
//   [MSSM] mamba_ssm mamba2.py / ssd_combined.py (what the scan saves for
//          its backward: x, dt, dA_cumsum, B, C, z; states recomputed);
//          HF modeling_nemotron_h.py (parameter shapes).
//   [GDN]  Yang, Kautz & Hatamizadeh, "Gated Delta Networks", 2024, §3
//          (the chunkwise WY form of the gated delta rule, chunk C = 64 in
//          flash-linear-attention's chunk_gated_delta_rule); HF
//          modeling_qwen3_next.py (parameter shapes).
//   [SWA]  HF modeling_gpt_oss.py (sliding_window, sinks) and
//          modeling_llama4.py (attention_chunk_size on the RoPE layers).
//   [MLM]  Megatron-LM megatron/core/ssm/mamba_mixer.py: heads and groups
//          split over tensor parallelism (each must divide by t).
#pragma once

#include <cstdint>

#include "core/architecture.h"

namespace ppb {

// Of the causal s^2/2 query-key pairs, the share a layer of `span`
// computes for sequences of `s` tokens: 1 for full attention;
// (w s - w^2/2) / (s^2/2) for a sliding window of w < s keys;
// (s c / 2) / (s^2/2) = c / s for chunks of c < s tokens.
double SpanShare(const Architecture& a, Span span, std::int64_t s);

// Parameters of a Mamba-2 or gated DeltaNet mixer (its norm excluded).
//   Mamba-2     in_proj h x (2 d_i + 2 G N + H), conv1d (d_i + 2 G N) x k
//               (+ bias), dt_bias, A_log, D (H each), the gated RMSNorm
//               d_i, out_proj d_i x h (+ biases with use_bias)
//   DeltaNet    in_proj_qkvz h x (2 K + 2 V), in_proj_ba h x 2 H_v,
//               conv1d (2 K + V) x k, dt_bias, A_log (H_v each), the
//               gated RMSNorm d_v, out_proj V x h
std::int64_t MixerParams(const Architecture& a, Mixer m);
// The weights one token multiplies in the mixer's projections.
std::int64_t MixerWeights(const Architecture& a, Mixer m);
// Forward FLOPs per token of the mixer's scan (no weights):
//   Mamba-2     2 Q N G + H (2 Q P + 4 N P) + 2 k (d_i + 2 G N) [M2 §6]
//   DeltaNet    H_v (2 C (3 d_k + 2 d_v) + 6 d_k d_v) + 2 k (2 K + V)
//               [GDN §3: intra-chunk K K^T, Q K^T, the WY products with
//               K and V; inter-chunk W S, Q S, K^T U]
double ScanFlopsPerToken(const Architecture& a, Mixer m);

// Bytes per token the mixer saves for its backward, split as
// core/layer_memory.cpp's terms: `replicated` (the norm's input and output,
// the whole hidden width on every TP rank without sequence parallelism)
// and `split` (divided by t: the projections' outputs, the conv's output,
// the scan's output, the gated norm's output, fp32 gates) [MSSM, GDN].
struct MixerActivation {
  std::int64_t replicated = 0;
  std::int64_t split = 0;
};
MixerActivation MixerSaved(const Architecture& a, Mixer m, int bytes);

// The mixer's width per tensor-parallel rank must be whole: Megatron
// splits Mamba-2's heads and groups, DeltaNet's key and value heads over t
// [MLM]. 0 when `tp` divides them, else the first count it does not.
std::int64_t MixerTpRemainder(const Architecture& a, Mixer m, int tp);

}  // namespace ppb
