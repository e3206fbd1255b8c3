#include "core/step_metrics.h"

namespace ppb {

StepMetrics ComputeStepMetrics(const std::vector<DerivedLayer>& layers,
                               const std::vector<std::uint8_t>& recompute,
                               const Training& t, const Hardware& h, int m,
                               Nanos iteration) {
  StepMetrics s;
  s.gpus = static_cast<std::int64_t>(t.tp) * t.cp * t.pp * t.dp;
  const double micro_batches = static_cast<double>(t.dp) * m;
  s.tokens_per_step = micro_batches * static_cast<double>(t.micro_batch) *
                      static_cast<double>(t.seq);
  double model = 0, extra = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const DerivedLayer& d = layers[i];
    // Causal: half of the attention core.
    const double core = 0.5 * d.flops.attention;
    model += 3 * (d.flops.matmul + core);
    const std::uint8_t c = i < recompute.size() ? recompute[i] : 0;
    if (c > 0 && c <= d.layer.recompute.size()) {
      extra += d.layer.recompute[c - 1].name == "selective"
                   ? core
                   : d.flops.matmul + core;
    }
  }
  s.model_flops = model * micro_batches;
  s.hardware_flops = (model + extra) * micro_batches;
  if (iteration <= 0 || s.gpus <= 0) return s;
  const double seconds = static_cast<double>(iteration) / 1e9;
  const double gpus = static_cast<double>(s.gpus);
  s.tokens_per_s = s.tokens_per_step / seconds;
  s.tokens_per_s_per_gpu = s.tokens_per_s / gpus;
  s.model_tflops_per_gpu = s.model_flops / seconds / gpus / 1e12;
  if (h.peak_tflops > 0) {
    s.mfu = s.model_tflops_per_gpu / h.peak_tflops;
    s.hfu = s.hardware_flops / seconds / gpus / 1e12 / h.peak_tflops;
  }
  return s;
}

}  // namespace ppb
