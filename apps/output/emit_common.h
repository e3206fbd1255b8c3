// The part the framework emitters share (apps/output/emit.cpp), for the
// emitter of each framework (apps/output/emit_<framework>.cpp): errors
// named "--emit <framework>", the layers and recompute of a config as the
// emitters describe them, the "# ppb:" notes, and a small reader of
// "key = value" fragments (TOML, Python) for the parsers. Internal to
// apps/output.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/output/emit.h"

namespace ppb::emit_detail {

Error Fail(Framework f, const std::string& message);

// A decoder layer in Megatron's sense ('t' in a layout): decoder, MoE or any
// other body layer.
bool IsDecoder(LayerKind k);

// The recompute mode layer `i` uses ("" for none).
std::string ModeOf(const std::vector<Layer>& layers, const Strategy& s, size_t i);

// The index + 1 of mode `name` among the options of `layer`, 0 if it has none.
std::uint8_t OptionIndex(const Layer& layer, std::string_view name);

// Sets recompute mode `mode` on every decoder layer (the frameworks' "every
// layer" settings); an error names a decoder layer that does not offer it.
Status SetOnDecoders(const std::vector<Layer>& layers, const char* mode,
                     std::vector<std::uint8_t>& recompute);


std::string JoinInts(const std::vector<int>& xs);

// "[1, 2]" for v = 1, "[[1, 2], [3, 4]]" ([chunk][rank]) for v > 1.
std::string StageList(const std::vector<int>& per_stage, int p, int v);

// "schedule interleaved, p=4, v=2, m=16, g=4" for headers and notes.
std::string DescribeRun(const RunConfig& config);

// "full [2, 1, 0, 0], selective [0, 1, 0, 0]" for every mode in use.
std::string RecomputeSummary(const RunConfig& config);

bool AnyRecompute(const Strategy& s);

// The stage of an empty (chunk, rank), or -1.
int FirstEmptyStage(const Strategy& s);

std::string StageName(int s, int p);

// Appends "# ppb: ..." lines, wrapping `note` at about 76 columns.
void AddNote(std::string& text, const std::string& note);
// Adds, for a low-precision job, that `framework`'s form carries no
// low-precision setting (MindFormers, DeepSpeed).
void NoteLowPrecisionNotEmitted(std::string& text, const RunConfig& config,
                                const char* framework);
// The same for sharded data parallelism past ZeRO-1 and for offload.
void NoteShardingNotEmitted(std::string& text, const RunConfig& config, const char* framework);
// The training.moe settings a form without MoE communication flags (MindFormers,
// DeepSpeed) cannot carry: the dispatcher, expert TP, the combined 1F1B,
// the capacity and forced balance, said when simulated.
// `expert_tp_written`: the form wrote the experts' TP size.
void NoteMoeNotEmitted(std::string& text, const RunConfig& config, const char* framework,
                       bool expert_tp_written = false);

// The model has exactly one embedding, first, and one head, last, with the
// decoder layers and then the MTP layers between them: Megatron-LM's layout
// rule "first symbol E, last L, exactly one of each" with its MTP block after
// the decoder (conventions.md, Megatron-LM), and torchtitan's tok_embeddings,
// layers.N, norm + the head. `mtp_refusal`: nullptr where MTP layers are
// allowed, else why they are refused (the error: "<why>; got <layer>").
Status CheckEmbeddingFirstHeadLast(Framework f, const std::vector<Layer>& layers,
                                   const char* mtp_refusal);

std::string_view Trim(std::string_view s);

// A literal: an integer, a quoted string, a bool, a list of literals,
// Python's None, or a call without arguments of a dotted name
// ("FullAC.Config()": s is "FullAC.Config").
struct Value {
  enum class Kind : std::uint8_t { Int, String, Bool, List, None, Call } kind = Kind::Int;
  std::int64_t i = 0;
  std::string s;
  bool b = false;
  std::vector<Value> list;
};

// "key = value" statements (a value may span lines while brackets are open),
// keyed "section.key" under a TOML "[section]" header. Comments ignored.
Result<std::map<std::string, Value>> ReadAssignments(std::string_view text);

Result<std::int64_t> IntAt(const std::map<std::string, Value>& a, const std::string& key,
                           std::int64_t min);

// The schedule CSV torchtitan names (emit_torchtitan.cpp) and Emit
// writes next to the fragment (emit.cpp).
inline constexpr const char* kCsvName = "ppb-schedule.csv";

// The emitters, one per framework (emit_<framework>.cpp); Emit (emit.cpp)
// checks what they write by reading it back.
// Megatron-LM's uneven split of `layers` over p ranks and v chunks with
// --decoder-first/last-pipeline-num-layers (emit_megatron.cpp says the
// rule): layers per global stage, or why Megatron would refuse it.
Result<std::vector<int>> MegatronUnevenSplit(const std::vector<Layer>& layers, int p, int v,
                                             std::optional<int> first, std::optional<int> last);
// The recompute mode Megatron gives an MTP layer under --recompute-granularity
// `granularity` and --recompute-method `method` ("" for none).
std::string MtpRecompute(const Layer& layer, const std::string& granularity,
                         const std::string& method);

// A derived model's shape as Megatron-LM's flags, one a line; `missing`
// gets what of the architecture the flags cannot say. A hybrid model's
// --hybrid-layer-pattern holds its split: '|' between the stages of
// config.strategy when there are several.
std::string MegatronModelFlags(const RunConfig& config, std::vector<std::string>& missing);
// Whether `a` is a Megatron-LM hybrid model (pretrain_hybrid.py): every
// decoder layer one block of M (a Mamba-2 mixer alone), G (a gated DeltaNet
// alone), * (full softmax attention alone; + when it is latent), - (a dense
// MLP alone) or E (experts alone), and no MTP layers.
bool MegatronHybrid(const Architecture& a);

Result<Emission> EmitMegatron(const RunConfig& config);
Result<Emission> EmitMindFormers(const RunConfig& config);
Result<Emission> EmitTorchtitan(Framework f, const RunConfig& config, const Program& program);
Result<Emission> EmitDeepSpeed(const RunConfig& config);

}  // namespace ppb::emit_detail
