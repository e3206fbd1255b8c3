// DefaultParts (apps/input/torchtitan_job.h).
#include "apps/input/torchtitan_job.h"

namespace ppb::torchtitan_detail {

std::vector<std::vector<std::string>> DefaultParts(Job& job, std::int64_t stages,
                                                   std::int64_t layers, std::int64_t in,
                                                   std::int64_t out, const std::string& why) {
  std::vector<std::vector<std::string>> parts;
  auto name = [](std::int64_t i) { return fmt::format("layers.{}", i); };
  if (stages == 1) {
    std::vector<std::string> all{"tok_embeddings"};
    for (std::int64_t i = 0; i < layers; ++i) all.push_back(name(i));
    all.emplace_back("norm");
    all.emplace_back("output");
    parts.push_back(std::move(all));
    return parts;
  }
  const std::int64_t effective = layers + in + out;
  const std::string where = job.Line("parallelism.pipeline_parallel_degree");
  if (stages > effective) {
    Fail(
        fmt::format("{}: {}: Number of stages ({}) cannot be greater than effective layers "
                    "({}) (torchtitan's generate_llm_fqn_per_model_part)",
                    where, why, stages, effective));
  }
  const std::int64_t per = effective / stages;
  const std::int64_t extra = effective % stages;
  if (in > per || out > per) {
    Fail(
        fmt::format("{}: parallelism.pipeline_parallel_{}_stage_less_layers ({}) exceeds "
                    "minimum layers per stage ({}) (torchtitan's "
                    "generate_llm_fqn_per_model_part)",
                    job.Line(in > per ? "parallelism.pipeline_parallel_first_stage_less_layers"
                                      : "parallelism.pipeline_parallel_last_stage_less_layers"),
                    in > per ? "first" : "last", in > per ? in : out, per));
  }
  std::int64_t next = 0;
  for (std::int64_t s = 0; s < stages; ++s) {
    std::vector<std::string> part;
    std::int64_t n = per + (s < extra ? 1 : 0);
    if (s == 0) {
      part.emplace_back("tok_embeddings");
      n -= in;
    } else if (s == stages - 1) {
      n -= out;
    }
    for (std::int64_t k = 0; k < n && next < layers; ++k) part.push_back(name(next++));
    if (s == stages - 1) {
      part.emplace_back("norm");
      part.emplace_back("output");
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace ppb::torchtitan_detail
