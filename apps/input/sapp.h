// MindSpore SAPP (MindFormers' pipeline balancer, toolkit/pipeline_balance)
// inputs, read as they are so that SAPP users switch without rewriting:
//
// * the layer-description JSON (`layers_description`: HEAD / BODY / TAIL
//   entries with time, nb_layer, memory_parameter, memory_activation,
//   memory_select_rec, memory_select_comm, memory_both_comm_select,
//   memory_recompute, *_coef), turned into ppb layers; used by
//   `model: {sapp_layers: file.json, sapp_units: {time: 1ms, memory: 1MiB}}`.
// * the dry-run memory YAML (pipeline_config, recompute_config,
//   memory_usage, optional time_config), turned into calibration
//   measurements (apps/calibrate.h).
//
// SAPP's numbers carry no unit; the user states them (`sapp_units`, or
// --memory-unit / --time-unit for calibrate) and nothing is guessed.
//
// Mapping of a SAPP layer description onto ppb layers, as MindFormers'
// SAPP reads it (toolkit/pipeline_balance/utils/layer.py
// generate_layers_list and Layer.compute_internal_time, recompute.py; r1.5.0
// unless said):
// * HEAD entries -> kind embedding, first; BODY entries -> kind decoder,
//   nb_layer times (named NAME.0 ..), in file order; TAIL -> kind head, last.
//   name, type, nb_layer, time and memory_parameter are required (SAPP reads
//   the first four with layer_data["..."]).
// * `time`: its meaning changed with MindFormers commit 959a2451
//   (2025-02-24). SappTime::Forward (r1.5.0 and later): forward f = time,
//   backward base B = 2 x time. SappTime::ForwardBackward (before):
//   f = time / 3, B = 2 x time / 3. Which one is used comes from
//   model.sapp_time, else the file's top-level "sapp_time" (a ppb key SAPP
//   ignores), else Forward; the choice is reported (SappModel::time_note).
//   `forward_time`, when given, replaces f.
// * Backward of each variant (SAPP's Recompute.TYPE NONE, SLCT, COMM, BOTH,
//   FULL): its absolute key (backward_time, select_rec_time,
//   select_comm_time, both_comm_select_time, recompute_time) when given and
//   non-zero, else (1 + coef) x B with coef = the entry's backward_coef,
//   select_rec_coef, select_comm_coef, both_comm_select_coef,
//   recompute_coef, else SAPP's defaults 0, 0.04, 0.125, 0.165, 0.5
//   (Recompute.DEFAULT_COEF). ppb's backward is the NONE one; a recompute
//   mode's extra time is its backward minus that (refused when negative).
// * memory_parameter -> static_memory; memory_activation -> activation.
//   SAPP considers a variant only when its memory key is present and > 0
//   (Layer.find_recompute_considered): a recompute mode with memory 0 is not
//   offered, and a BODY entry without a positive memory_activation is
//   refused (SAPP would forbid leaving its layers un-recomputed, which ppb
//   cannot express). The modes in ppb names:
//     selective        memory_select_rec        (select_recompute)
//     select_comm      memory_select_comm       (select_comm_recompute)
//     both_comm_select memory_both_comm_select  (both lists)
//     full             memory_recompute         (recompute)
// * stage_const_mem (top level, SAPP's per-stage constant memory, written by
//   its init path): SappModel::stage_constant, memory every stage holds
//   besides its layers; the config takes it off each device's capacity. It
//   may be negative (a dry-run decomposition can give that).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/types.h"

namespace ppb {

// What SAPP's `time` of a layer is (see above).
enum class SappTime {
  Forward,          // MindFormers r1.5.0 and later (since 959a2451)
  ForwardBackward,  // before 959a2451: forward + backward
};
// "forward" or "forward+backward" (the model.sapp_time values).
const char* SappTimeName(SappTime t);

// What one SAPP number means.
struct SappUnits {
  Nanos time = 0;    // one SAPP time unit, ns (0: not given)
  Bytes memory = 0;  // one SAPP memory unit, bytes (0: not given)
  // The meaning of `time` when the caller states it (model.sapp_time).
  std::optional<SappTime> time_meaning;
};

// A layer description read: the layers, the per-stage constant and what
// was assumed.
struct SappModel {
  std::vector<Layer> layers;
  Bytes stage_constant = 0;  // stage_const_mem; may be negative
  SappTime time_meaning = SappTime::Forward;
  std::string time_note;     // which meaning of `time`, and from where
};

// SAPP's recompute modes in ppb names, their SAPP YAML list key and JSON
// memory / coefficient keys, and the default coefficient.
struct SappMode {
  const char* name;       // ppb mode name
  const char* yaml_list;  // recompute_config key ("" for both)
  const char* memory_key;
  const char* coef_key;
  double default_coef;
};
const std::vector<SappMode>& SappModes();

// Reads the layer-description JSON at `path` (errors:
// "path:line: key: ..."). The Layers forms drop all but the layers.
Result<SappModel> LoadSappModel(const std::string& path,
                                const SappUnits& units);
Result<SappModel> ParseSappModel(std::string_view text,
                                 std::string_view filename,
                                 const SappUnits& units);
Result<std::vector<Layer>> LoadSappLayers(const std::string& path,
                                          const SappUnits& units);
Result<std::vector<Layer>> ParseSappLayers(std::string_view text,
                                           std::string_view filename,
                                           const SappUnits& units);

}  // namespace ppb
