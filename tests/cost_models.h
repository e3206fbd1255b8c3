// Reference architectures of conventions.md ("Reference model shapes"),
// written out as core values for the cost-model tests.
#pragma once

#include "core/architecture.h"

namespace ppb::test {

// A device with the step model on: the preset `gpu` (core/gpu.h) as given.
inline Hardware StepHardware(const char* gpu) {
  Hardware h;
  h.step_model = true;
  h.gpu = *FindGpu(gpu);
  h.peak_tflops = h.gpu.peak_tflops;
  h.memory_bytes = h.gpu.memory;
  return h;
}

inline Architecture Dense(std::int64_t h, int layers, int heads, int kv,
                          std::int64_t ffn, std::int64_t vocab) {
  Architecture a;
  a.hidden = h;
  a.layers = layers;
  a.heads = heads;
  a.kv_heads = kv;
  a.head_dim = h / heads;
  a.ffn = ffn;
  a.vocab = vocab;
  return a;
}

inline Architecture Llama2_7B() { return Dense(4096, 32, 32, 32, 11008, 32000); }
inline Architecture Llama2_70B() { return Dense(8192, 80, 64, 8, 28672, 32000); }
inline Architecture Llama3_8B() { return Dense(4096, 32, 32, 8, 14336, 128256); }
inline Architecture Llama3_70B() {
  return Dense(8192, 80, 64, 8, 28672, 128256);
}
inline Architecture Llama31_405B() {
  return Dense(16384, 126, 128, 8, 53248, 128256);
}
inline Architecture Qwen25_72B() {
  Architecture a = Dense(8192, 80, 64, 8, 29568, 152064);
  a.qkv_bias = true;
  return a;
}
inline Architecture Gpt3_175B() {
  Architecture a = Dense(12288, 96, 96, 96, 49152, 50257);
  a.tied_embeddings = true;
  a.gated_mlp = false;
  a.layernorm_with_bias = true;
  a.learned_positions = 2048;
  return a;
}
inline Architecture Mixtral_8x7B() {
  Architecture a = Dense(4096, 32, 32, 8, 14336, 32000);
  a.experts = 8;
  a.top_k = 2;
  a.expert_ffn = 14336;
  return a;
}
inline Architecture DeepSeekV3() {
  Architecture a = Dense(7168, 61, 128, 128, 18432, 129280);
  a.experts = 256;
  a.top_k = 8;
  a.expert_ffn = 2048;
  a.shared_ffn = 2048;  // one shared expert
  a.router_bias = true;
  a.moe_layout.first_k_dense = 3;
  a.q_lora_rank = 1536;
  a.kv_lora_rank = 512;
  a.qk_nope_head_dim = 128;
  a.qk_rope_head_dim = 64;
  a.v_head_dim = 128;
  a.mtp_layers = 1;
  return a;
}

}  // namespace ppb::test
