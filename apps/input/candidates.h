// The candidates file of `ppb-sim rank`: strategies to simulate and rank
// under one run config (apps/input/config.h). Errors are formatted like the
// config's: "file:line: candidates[i].key: must be ...; got ...".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "apps/input/config.h"
#include "core/result.h"

namespace ppb {

// One strategy of a candidates file (ppb-sim rank): a name, the pipeline
// configuration it runs under and its complete strategy.
struct RankCandidate {
  std::string name;
  std::string schedule;   // registry name (default: the config's)
  int v = 1;              // chunks per rank (default: the config's; 1 when
                          // the candidate names gpipe or 1f1b)
  ScheduleParams params;  // the config's flavor; group from the candidate
  Strategy strategy;      // complete, for v
  bool allow_empty_chunks = false;
  int line = 0;  // 1-based line of the candidate in its file
};

// Reads a candidates file for `config`:
//   candidates:
//     - {name: even, layers_per_chunk: [[5, 5]], recompute: {full: [1, 0]}}
// Each candidate takes the keys of the config's `strategy` section (one of
// layers_per_chunk, layout, offset or none for the even split; recompute;
// allow_empty_chunks) plus name, schedule, virtual_stages and
// microbatch_group. Errors read "cands.yaml:3: candidates[0].layout: ...".
// `text` overload: parse YAML given as a string against `filename`.
Result<std::vector<RankCandidate>> LoadCandidates(const std::string& path,
                                                  const RunConfig& config);
Result<std::vector<RankCandidate>> ParseCandidates(std::string_view text,
                                                   std::string_view filename,
                                                   const RunConfig& config);

}  // namespace ppb
