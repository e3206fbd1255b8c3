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
// Mapping of a SAPP layer description onto ppb layers:
// * HEAD entries -> kind embedding, first; BODY entries -> kind decoder,
//   nb_layer times (named NAME.0 ..), in file order; TAIL -> kind head, last.
// * time = forward + backward per micro-batch; forward = time / 3 and
//   backward = time - forward (backward = 2 x forward) unless forward_time /
//   backward_time are given.
// * memory_parameter -> static_memory; memory_activation -> activation
//   (0 when absent, as for SAPP's HEAD and TAIL).
// * Recompute modes, each offered when its memory key is present, keeping
//   that many bytes per micro-batch (SAPP's Recompute.JSON_MEMORY_NAME):
//     selective        memory_select_rec        (select_recompute)
//     select_comm      memory_select_comm       (select_comm_recompute)
//     both_comm_select memory_both_comm_select  (both lists)
//     full             memory_recompute         (recompute)
//   Its extra time = coef x backward, coef = the entry's select_rec_coef,
//   select_comm_coef, both_comm_select_coef, recompute_coef, else SAPP's
//   defaults 0.04, 0.125, 0.165, 0.5 (Recompute.DEFAULT_COEF).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/result.h"
#include "core/types.h"

namespace ppb {

// What one SAPP number means.
struct SappUnits {
  Nanos time = 0;    // one SAPP time unit, ns (0: not given)
  Bytes memory = 0;  // one SAPP memory unit, bytes (0: not given)
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

// Reads the layer-description JSON at `path` (errors: "path: key: ...").
Result<std::vector<Layer>> LoadSappLayers(const std::string& path,
                                          const SappUnits& units);
Result<std::vector<Layer>> ParseSappLayers(std::string_view text,
                                           std::string_view filename,
                                           const SappUnits& units);

}  // namespace ppb
