// Strategy notations users already know, turned into a core Strategy:
// Megatron layout strings, per-(chunk, rank) counts, MindFormers offsets and
// per-stage "first N layers recompute" lists.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"

namespace ppb {

// The first layer index of each global stage of `layers_per_stage`, and
// the number of layers at the end (size S + 1).
std::vector<size_t> StageStarts(const std::vector<int>& layers_per_stage);

// Megatron-LM --pipeline-model-parallel-layout: stages separated by '|',
// 'E' embedding, 't' decoder layer (decoder or moe kind), 'm' MTP layer, 'L'
// loss/head; "x*n" and "(...)*n" repeat; ',' and spaces are ignored; empty
// stages allowed; virtual stage i = chunk * p + rank. Returns layers per
// global stage (size p*v). Errors when the number of stages is not p*v or the
// symbols do not match `layers` in order (e.g. a 't' where the model has its
// head), naming the position in the string.
Result<std::vector<int>> ParseMegatronLayout(std::string_view layout,
                                             const std::vector<Layer>& layers,
                                             int p, int v);

// The number of stages of a Megatron layout string (its '|' separators + 1
// after expansion), without matching it to a model: Megatron-LM derives v
// from it (stages / p). Errors as ParseMegatronLayout's for a malformed
// string, or when it expands to more than `max_symbols` symbols.
Result<int> MegatronLayoutStages(std::string_view layout, size_t max_symbols);

// The --pipeline-model-parallel-layout placing the layers of a Megatron-LM
// --hybrid-layer-pattern's '|' segments (core 0.20,
// hybrid_layer_allocation.py select_pipeline_segment: segment k is global
// stage k; the embedding goes with the first segment, the head with the
// last): "M-*|-M|M-" gives "Et*3|t*2|t*2L". Every symbol but '|' is one
// layer; an MTP part after '/' is not read. Empty when there is no '|'.
std::string HybridPatternLayout(std::string_view pattern);

// Writes layers per stage as a Megatron layout string with the symbols of
// `layers` ("E" for embedding, "t" for decoder/moe/other, "m" MTP, "L" head),
// compressing runs "t*n". REQUIRES: counts add up to layers.size().
std::string FormatMegatronLayout(const std::vector<int>& layers_per_stage,
                                 const std::vector<Layer>& layers);

// Recompute of the first counts[s] layers of each global stage s with the
// option named `option` (e.g. "full"), like Megatron's --recompute-method
// block and MindFormers' recompute lists. Embedding and head layers that do
// not offer the option are skipped without counting; any other layer that
// lacks it is an error naming it; a count above the stage's layer count is an
// error. Layers already set (non-zero) in `recompute` are left as they are.
// REQUIRES: counts.size() == layers_per_stage.size(),
//           recompute.size() == layers.size().
Status ApplyFirstNRecompute(const std::vector<Layer>& layers,
                            const std::vector<int>& layers_per_stage,
                            const std::vector<int>& counts,
                            std::string_view option,
                            std::vector<std::uint8_t>& recompute);

// Layers pinned to the first stage (the leading embedding layers) and to the
// last stage (the trailing head / MTP layers), as EvenStrategy places them;
// MindFormers' offsets split the layers between them (its num_layers counts
// decoder layers only).
struct Pinned {
  int lead = 0;
  int tail = 0;
};
Pinned PinnedLayers(const std::vector<Layer>& layers);

}  // namespace ppb
