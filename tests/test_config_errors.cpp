// The config loader's validation errors (apps/config.h), one per rule.
//
// Most tests edit one line of kBase (tests/config_text.h, line numbers in its
// comments) and check that the error starts with the exact
// "run.yaml:<line>: <key>: " prefix and states what was expected.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/config.h"
#include "tests/app_helpers.h"
#include "tests/config_text.h"

namespace ppb {
namespace {

using test::Edit;
using test::kBase;
using test::Parse;
using test::ParseError;
using test::PrepareError;
using test::WithoutStrategy;

struct ErrorCase {
  std::vector<std::pair<std::string, std::string>> edits;
  std::string prefix;  // exact start of the message
};

void CheckErrors(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    DYNAMIC_SECTION(c.prefix) {
      const std::string message = ParseError(Edit(c.edits));
      INFO(message);
      CHECK(message.rfind(c.prefix, 0) == 0);
    }
  }
}

// ---- validation errors, one per rule
// -----------------------------------------

TEST_CASE("config errors: YAML and structure", "[config]") {
  CHECK(ParseError("model: [\n")
            .rfind("run.yaml:2: must be valid YAML; got a "
                   "syntax error",
                   0) == 0);
  CHECK(ParseError("") ==
        "run.yaml: must be a map with model, cluster, pipeline and optional "
        "strategy and search; got an empty file");
  // A document that is not a map has no key to name: its line instead.
  CHECK(ParseError("- a\n- b\n") ==
        "run.yaml:1: must be a map with keys model, cluster, pipeline, "
        "strategy, search, training, hardware, plan; got a list of 2");
  CHECK(ParseError("# a comment\n\n42\n") ==
        "run.yaml:3: must be a map with keys model, cluster, pipeline, "
        "strategy, search, training, hardware, plan; got 42");
  CHECK(ParseError(std::string(kBase) + "extra: 1\n") ==
        "run.yaml:55: extra: unknown key; expected one of model, cluster, "
        "pipeline, strategy, search, training, hardware, plan");
  CHECK(ParseError(
            WithoutStrategy().substr(WithoutStrategy().find("cluster:"))) ==
        "run.yaml: model: must be given (a map with layers); got nothing");
  const std::string no_cluster =
      std::string(kBase).substr(0, std::string(kBase).find("cluster:"));
  CHECK(ParseError(no_cluster + "pipeline: {stages: 1, microbatches: 1}\n") ==
        "run.yaml: cluster: must be given (a map with devices); got nothing");
  CHECK(ParseError(
            "model: {layers: []}\npipeline: {stages: 1, microbatches: 1}\n") ==
        "run.yaml:1: model.layers: must be a non-empty list of layers; got an "
        "empty list");
  CheckErrors({
      {{{"      output: 0B", "      outptu: 0B"}},
       "run.yaml:31: model.layers[2].outptu: unknown key; expected one of "
       "name, "
       "kind, repeat, forward, backward, backward_input, backward_weight, "
       "static_memory, activation, activation_after_input_grad, workspace, "
       "output, recompute"},
      {{{"virtual_stages: 1", "stages: 4"}},
       "run.yaml:44: pipeline.stages: must be given once; got it again (first "
       "on line 42)"},
      {{{"  flavor: megatron", "  flavour: megatron"}},
       "run.yaml:46: pipeline.flavour: unknown key; expected one of stages, "},
      {{{"  link: {latency: 10us, bandwidth: 50GB/s}",
         "  link: {latency: 10us, bandwidth: 50GB/s, mtu: 1B}"}},
       "run.yaml:38: cluster.link.mtu: unknown key"},
      {{{"layers_per_chunk", "layers_per_stage"}},
       "run.yaml:49: strategy.layers_per_stage: unknown key; expected one of "
       "layers_per_chunk, layout, offset, allow_empty_chunks, recompute"},
  });
}

TEST_CASE("config errors: pipeline", "[config]") {
  CheckErrors({
      {{{"microbatches: 8", "microbatches: -3"}},
       "run.yaml:43: pipeline.microbatches: must be a positive integer; got "
       "-3"},
      {{{"stages: 4", "stages: 0"}},
       "run.yaml:42: pipeline.stages: must be a positive integer; got 0"},
      {{{"stages: 4", "stages: four"}},
       "run.yaml:42: pipeline.stages: must be a positive integer; got four"},
      {{{"stages: 4", "stages: 4.5"}},
       "run.yaml:42: pipeline.stages: must be a positive integer; got 4.5"},
      {{{"stages: 4", "stages: 99999999999"}},
       "run.yaml:42: pipeline.stages: must be a positive integer (at most "
       "2147483647); got 99999999999"},
      {{{"  stages: 4\n", "  # stages: 4\n"}},
       "run.yaml:41: pipeline.stages: must be given (a positive integer); got "
       "nothing"},
      {{{"virtual_stages: 1", "virtual_stages: 0"}},
       "run.yaml:44: pipeline.virtual_stages: must be a positive integer; got "
       "0"},
      {{{"flavor: megatron", "microbatch_group: 0"}},
       "run.yaml:46: pipeline.microbatch_group: must be a positive integer; "
       "got "
       "0"},
      {{{"schedule: 1f1b", "schedule: zb"}},
       "run.yaml:45: pipeline.schedule: must be one of gpipe, 1f1b, "
       "interleaved, looped-bfs, interleaved-zero-bubble, zbv-zero-bubble, "
       "dualpipev, zb-1p, zb-2p, zb-v, custom; got zb"},
      {{{"communication: overlapped",
          "communication: overlapped\n  activation_limit: 0p"}},
       "run.yaml:48: pipeline.activation_limit: must be a size (e.g. 24GiB) "
       "or kp with k a positive integer (1p, 2p); got 0p"},
      {{{"communication: overlapped",
          "communication: overlapped\n  activation_limit: lots"}},
       "run.yaml:48: pipeline.activation_limit: must be a size (e.g. 24GiB) "
       "or kp with k a positive integer (1p, 2p); got lots"},
      {{{"flavor: megatron", "flavor: nvidia"}},
       "run.yaml:46: pipeline.flavor: must be one of megatron, pytorch; got "
       "nvidia"},
      {{{"communication: overlapped", "communication: async"}},
       "run.yaml:47: pipeline.communication: must be one of overlapped, "
       "blocking; got async"},
      {{{"schedule: 1f1b", "schedule: custom"}},
       "run.yaml:41: pipeline.schedule_csv: must be given for schedule custom"},
      {{{"communication: overlapped", "schedule_csv: mine.csv"}},
       "run.yaml:47: pipeline.schedule_csv: must only be given with schedule "
       "custom; got mine.csv with schedule 1f1b"},
  });
}

TEST_CASE("config errors: layers", "[config]") {
  CheckErrors({
      {{{"    - name: head", "    - repeat: 1"}},
       "run.yaml:24: model.layers[2].name: must be given (a unique layer "
       "name); got nothing"},
      {{{"    - name: head", "    - name: decoder.3"}},
       "run.yaml:24: model.layers[2].name: must be unique after repeat "
       "expansion; got decoder.3, also the name of a layer of model.layers[1]"},
      {{{"kind: head", "kind: loss"}},
       "run.yaml:25: model.layers[2].kind: must be one of embedding, decoder, "
       "moe, head, mtp, other; got loss"},
      {{{"repeat: 8", "repeat: 0"}},
       "run.yaml:13: model.layers[1].repeat: must be a positive integer up to "
       "100000; got 0"},
      {{{"forward: 0.5ms", "forward: 0ms"}},
       "run.yaml:26: model.layers[2].forward: must be a positive duration; got "
       "0ms"},
      {{{"forward: 0.5ms", "forward: -1ms"}},
       "run.yaml:26: model.layers[2].forward: must be a positive duration; got "
       "-1ms"},
      {{{"forward: 0.5ms", "forward: 3.2"}},
       "run.yaml:26: model.layers[2].forward: must be a duration with a unit "
       "(ns, us, ms, s); got 3.2 (no unit)"},
      {{{"forward: 0.5ms", "forward: 1min"}},
       "run.yaml:26: model.layers[2].forward: must be a duration with a unit "
       "(ns, us, ms, s); got 1min (unknown unit \"min\")"},
      {{{"forward: 0.5ms", "forward: [1ms]"}},
       "run.yaml:26: model.layers[2].forward: must be a duration with a unit "
       "(ns, us, ms, s); got a list of 1"},
      {{{"      forward: 0.5ms\n", ""}},
       "run.yaml:24: model.layers[2].forward: must be given (a positive "
       "duration); got nothing"},
      {{{"      backward: 1ms\n", "\n"}},
       "run.yaml:24: model.layers[2].backward: must be given (a positive "
       "duration), or backward_input and backward_weight; got nothing"},
      {{{"backward: 1ms", "backward: 0ns"}},
       "run.yaml:27: model.layers[2].backward: must be a positive duration; "
       "got 0ns"},
      {{{"static_memory: 2GiB", "backward: 2ms"}},
       "run.yaml:15: model.layers[1].backward_input: must not be given with "
       "backward (give backward, or backward_input and backward_weight); got "
       "both"},
      {{{"      backward_weight: 1ms\n", "\n"}},
       "run.yaml:11: model.layers[1].backward_weight: must be given with "
       "backward_input; got nothing"},
      {{{"      backward_input: 1ms\n", "\n"}},
       "run.yaml:11: model.layers[1].backward_input: must be given with "
       "backward_weight; got nothing"},
      {{{"backward_input: 1ms", "backward_input: 0ms"}},
       "run.yaml:15: model.layers[1].backward_input: must be a positive "
       "duration; got 0ms"},
      {{{"backward_weight: 1ms", "backward_weight: -1ms"}},
       "run.yaml:16: model.layers[1].backward_weight: must be a non-negative "
       "duration; got -1ms"},
      {{{"static_memory: 2GiB", "static_memory: -2GiB"}},
       "run.yaml:17: model.layers[1].static_memory: must be a non-negative "
       "size; got -2GiB"},
      {{{"activation: 256MiB", "activation: lots"}},
       "run.yaml:29: model.layers[2].activation: must be a size with a unit "
       "(B, "
       "KB, MB, GB, TB, KiB, MiB, GiB, TiB); got lots"},
      {{{"workspace: 2GiB", "workspace: 2G"}},
       "run.yaml:30: model.layers[2].workspace: must be a size with a unit"},
      {{{"output: 0B", "output: 0"}},
       "run.yaml:31: model.layers[2].output: must be a size with a unit (B, "
       "KB, "
       "MB, GB, TB, KiB, MiB, GiB, TiB); got 0 (no unit)"},
      {{{"selective: {activation: 600MiB", "none: {activation: 600MiB"}},
       "run.yaml:23: model.layers[1].recompute.none: must not be declared "
       "(\"none\" is always offered); got a mode named none"},
      {{{"selective: {activation: 600MiB", "layers: {activation: 600MiB"}},
       "run.yaml:23: model.layers[1].recompute.layers: must not be named "
       "layers (strategy.recompute uses that key for per-layer choices); got a "
       "mode named layers"},
      {{{"full: {activation: 16MiB, time: 1ms}", "full: {activation: 16MiB}"}},
       "run.yaml:22: model.layers[1].recompute.full.time: must be given (extra "
       "time before the backward); got nothing"},
      {{{"full: {activation: 16MiB, time: 1ms}", "full: {time: 1ms}"}},
       "run.yaml:22: model.layers[1].recompute.full.activation: must be given "
       "(bytes kept per micro-batch); got nothing"},
      {{{"full: {activation: 16MiB, time: 1ms}",
         "full: {activation: 2GiB, time: 1ms}"}},
       "run.yaml:22: model.layers[1].recompute.full.activation: must be at "
       "most the layer's activation (1GiB); got 2GiB"},
      {{{"full: {activation: 16MiB, time: 1ms}",
         "full: {activation: 16MiB, time: 1ms, memory: 1B}"}},
       "run.yaml:22: model.layers[1].recompute.full.memory: unknown key; "
       "expected one of activation, time"},
      {{{"full: {activation: 16MiB, time: 1ms}", "full: 16MiB"}},
       "run.yaml:22: model.layers[1].recompute.full: must be a map with keys "
       "activation, time; got 16MiB"},
  });
}

TEST_CASE("config errors: cluster", "[config]") {
  CheckErrors({
      {{{"memory: 80GiB", "memory: 0GiB"}},
       "run.yaml:34: cluster.devices.memory: must be a positive size; got "
       "0GiB"},
      {{{"    memory: 80GiB\n", "\n"}},
       "run.yaml:33: cluster.devices.memory: must be given (a positive size, "
       "e.g. 80GiB); got nothing"},
      {{{"speed: 1.0", "speed: 0"}},
       "run.yaml:35: cluster.devices.speed: must be a positive number; got 0"},
      {{{"speed: 1.0", "speed: fast"}},
       "run.yaml:35: cluster.devices.speed: must be a positive number; got "
       "fast"},
      {{{"{rank: 3, memory: 40GiB", "{rank: 4, memory: 40GiB"}},
       "run.yaml:37: cluster.devices.overrides[0].rank: must be a rank in 0 .. "
       "3 (pipeline.stages = 4); got 4"},
      {{{"      - {rank: 3, memory: 40GiB, speed: 2.0}",
         "      - {rank: 3, memory: 40GiB}\n      - {rank: 3, speed: 2.0}"}},
       "run.yaml:38: cluster.devices.overrides[1].rank: must name each rank "
       "once; got rank 3 again (also cluster.devices.overrides[0].rank)"},
      {{{"      - {rank: 3, memory: 40GiB, speed: 2.0}",
         "      - {memory: 40GiB, speed: 2.0}"}},
       "run.yaml:37: cluster.devices.overrides[0].rank: must be given (0 .. "
       "3); got nothing"},
      {{{"  devices:\n    memory: 80GiB\n    speed: 1.0\n    overrides:\n"
         "      - {rank: 3, memory: 40GiB, speed: 2.0}\n",
         "  devices:\n    - {memory: 80GiB}\n    - {memory: 80GiB}\n"
         "    - {memory: 80GiB}\n\n\n"}},
       "run.yaml:33: cluster.devices: must list one device per rank "
       "(pipeline.stages = 4); got 3"},
      {{{"  devices:\n    memory: 80GiB\n    speed: 1.0\n    overrides:\n"
         "      - {rank: 3, memory: 40GiB, speed: 2.0}\n",
         "  devices: 80GiB\n\n\n\n\n"}},
       "run.yaml:33: cluster.devices: must be a map (every rank alike) or a "
       "list of one device per rank; got 80GiB"},
      {{{"bandwidth: 50GB/s}", "bandwidth: 0GB/s}"}},
       "run.yaml:38: cluster.link.bandwidth: must be a positive bandwidth; got "
       "0GB/s"},
      {{{"bandwidth: 50GB/s}", "bandwidth: 50GB}"}},
       "run.yaml:38: cluster.link.bandwidth: must be a bandwidth with a unit"},
      {{{"{latency: 10us, bandwidth: 50GB/s}", "{latency: 10us}"}},
       "run.yaml:38: cluster.link.bandwidth: must be given (a positive "
       "bandwidth); got nothing"},
      {{{"latency: 10us,", "latency: -10us,"}},
       "run.yaml:38: cluster.link.latency: must be a non-negative duration; "
       "got -10us"},
      {{{"{rank: 1, latency: 20us", "{rank: -1, latency: 20us"}},
       "run.yaml:40: cluster.links[0].rank: must be a rank in 0 .. 3 "
       "(pipeline.stages = 4); got -1"},
      {{{"bandwidth: 25GB/s}", "bandwidth: 25Gb/s}"}},
       "run.yaml:40: cluster.links[0].bandwidth: must be a bandwidth with a "
       "unit (B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s, Kbit/s, "
       "Mbit/s, Gbit/s, Tbit/s); got 25Gb/s (unknown unit \"Gb/s\")"},
  });
}

TEST_CASE("config errors: strategy", "[config]") {
  CheckErrors({
      {{{"[[3, 2, 2, 3]]", "[[3, 2, 2, 2]]"}},
       "run.yaml:49: strategy.layers_per_chunk: must add up to the model's 10 "
       "layers (after repeat); got 9 (3+2+2+2), which would drop layers"},
      {{{"[[3, 2, 2, 3]]", "[[3, 2, 2, 4]]"}},
       "run.yaml:49: strategy.layers_per_chunk: must add up to the model's 10 "
       "layers (after repeat); got 11 (3+2+2+4)"},
      {{{"[[3, 2, 2, 3]]", "[[3, 2, 5]]"}},
       "run.yaml:49: strategy.layers_per_chunk[0]: must be a list of 4 "
       "integers, one per rank (pipeline.stages = 4); got a list of 3"},
      {{{"[[3, 2, 2, 3]]", "[[3, 2], [2, 3]]"}},
       "run.yaml:49: strategy.layers_per_chunk: must be a list of 1 list of 4 "
       "integers ([chunk][rank], pipeline.stages = 4) or a flat list of 4; got "
       "a list of 2 lists"},
      {{{"[[3, 2, 2, 3]]", "[3, 2, 5]"}},
       "run.yaml:49: strategy.layers_per_chunk: must be a list of 1 list of 4 "
       "integers ([chunk][rank], pipeline.stages = 4) or a flat list of 4; got "
       "a list of 3"},
      {{{"[[3, 2, 2, 3]]", "[[3, 0, 4, 3]]"}},
       "run.yaml:49: strategy.layers_per_chunk[0][1]: must be positive (chunk "
       "0 of rank 1 would be empty; set strategy.allow_empty_chunks to allow "
       "it); got 0"},
      {{{"[[3, 2, 2, 3]]", "[[3, -1, 5, 3]]"}},
       "run.yaml:49: strategy.layers_per_chunk[0][1]: must be a non-negative "
       "integer; got -1"},
      {{{"  allow_empty_chunks: false", "  layout: \"Et*2|t*2|t*2|t*2L\""}},
       "run.yaml:50: strategy.layout: must not be given with "
       "strategy.layers_per_chunk (give one of layers_per_chunk, layout, "
       "offset); got both"},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "layout: \"Et*2|t*2|t*x|t*2L\""}},
       "run.yaml:49: strategy.layout: position 12: '*' must be followed by a "
       "repeat count; got \"Et*2|t*2|t*x|t*2L\""},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "layout: \"Et*2|t*2|t*4L\""}},
       "run.yaml:49: strategy.layout: must have p*v = 4 stages (p=4, v=1) "
       "separated by '|'; got 3 in \"Et*2|t*2|t*4L\""},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "layout: \"Et*2|t*2|t*2|t*3L\""}},
       "run.yaml:49: strategy.layout: position 14: expected 'L' (loss/head) "
       "for layer 9 (head); got 't' (decoder layer) in "
       "\"Et*2|t*2|t*2|t*3L\""},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "layout: \"Et*2|t*6||L\""}},
       "run.yaml:49: strategy.layout: must give every stage a layer (set "
       "strategy.allow_empty_chunks to allow empty ones); got stage 2 (chunk 0 "
       "of rank 2) empty in \"Et*2|t*6||L\""},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "offset: [1, 0, 0, 0]"}},
       "run.yaml:49: strategy.offset: must add up to 0 (the 8 decoder layers "
       "mod p*v = 4, pipeline.stages = 4); got 1"},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "offset: [-3, 3, 0, 0]"}},
       "run.yaml:49: strategy.offset[0]: must be at least -2 (chunk 0 of rank "
       "0 gets 2 + offset decoder layers); got -3"},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "offset: [0, -2, 2, 0]"}},
       "run.yaml:49: strategy.offset[1]: must leave chunk 0 of rank 1 at "
       "least one layer (set strategy.allow_empty_chunks to allow empty "
       "chunks); got -2 (2 + offset = 0)"},
      {{{"layers_per_chunk: [[3, 2, 2, 3]]", "offset: [0, x, 0, 0]"}},
       "run.yaml:49: strategy.offset[1]: must be an integer; got x"},
      {{{"allow_empty_chunks: false", "allow_empty_chunks: maybe"}},
       "run.yaml:50: strategy.allow_empty_chunks: must be true or false; got "
       "maybe"},
      {{{"full: [2, 1, 0, 0]", "full: [4, 1, 0, 0]"}},
       "run.yaml:52: strategy.recompute.full[0]: must be at most the 3 layers "
       "of stage 0 (chunk 0 of rank 0); got 4"},
      {{{"full: [2, 1, 0, 0]", "full: [2, 1, 0]"}},
       "run.yaml:52: strategy.recompute.full: must be a list of 1 list of 4 "
       "integers ([chunk][rank], pipeline.stages = 4) or a flat list of 4, or "
       "one integer; got a list of 3"},
      {{{"full: [2, 1, 0, 0]", "full: [2, -1, 0, 0]"}},
       "run.yaml:52: strategy.recompute.full[1]: must be a non-negative "
       "integer; got -1"},
      {{{"full: [2, 1, 0, 0]", "fancy: [2, 1, 0, 0]"}},
       "run.yaml:52: strategy.recompute.fancy: must name a recompute mode some "
       "layer offers (full, selective) or be layers; got fancy"},
      {{{"kind: head", "kind: other"},
        {"full: [2, 1, 0, 0]", "full: [0, 0, 0, 3]"}},
       "run.yaml:52: strategy.recompute.full: stage 3: the first 3 layers must "
       "offer recompute mode \"full\"; got layer head, which offers none"},
      {{{"decoder.7: full", "decoder.9: full"}},
       "run.yaml:54: strategy.recompute.layers.decoder.9: must name a layer of "
       "the model (after repeat, e.g. head); got decoder.9"},
      {{{"decoder.7: full", "head: full"}},
       "run.yaml:54: strategy.recompute.layers.head: must be a recompute mode "
       "head offers (none); got full"},
      {{{"decoder.7: full", "decoder.7: partial"}},
       "run.yaml:54: strategy.recompute.layers.decoder.7: must be a recompute "
       "mode decoder.7 offers (none, full, selective); got partial"},
  });
}

TEST_CASE("config errors: the default split must fill every stage",
          "[config]") {
  CHECK(ParseError(Edit({{"stages: 4", "stages: 16"},
                         {"{rank: 3, memory", "{rank: 13, memory"}},
                        WithoutStrategy())) ==
        "run.yaml:3: model.layers: must fill all 16 stages (pipeline.stages = "
        "16) for the default even split; got 10 layers, which leave chunk 0 of "
        "rank 9 empty (give strategy.layers_per_chunk or set "
        "strategy.allow_empty_chunks)");
  Result<RunConfig> allowed =
      Parse(Edit({{"stages: 4", "stages: 16"},
                  {"{rank: 3, memory", "{rank: 13, memory"}},
                 WithoutStrategy()) +
            "strategy:\n  allow_empty_chunks: true\n");
  REQUIRE(allowed.ok());
  CHECK(allowed->strategy.layers_per_stage ==
        std::vector<int>{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1});
}

TEST_CASE("config errors: Prepare places schedule errors", "[config]") {
  const std::string interleaved =
      Edit({{"virtual_stages: 1", "virtual_stages: 2"},
            {"schedule: 1f1b", "schedule: interleaved"}},
           WithoutStrategy());
  REQUIRE(Parse(interleaved).ok());
  CHECK(Prepare(*Parse(interleaved)).ok());
  CHECK(
      PrepareError(Edit({{"microbatches: 8", "microbatches: 3"}}, interleaved))
          .rfind("run.yaml:43: pipeline.microbatches: must ", 0) == 0);
  CHECK(PrepareError(
            Edit({{"flavor: megatron", "microbatch_group: 3"}}, interleaved))
            .rfind("run.yaml:46: pipeline.microbatch_group: must ", 0) == 0);
  CHECK(PrepareError(Edit({{"virtual_stages: 1", "virtual_stages: 2"}},
                          WithoutStrategy()))
            .rfind("run.yaml:44: pipeline.virtual_stages: ", 0) == 0);
  CHECK(PrepareError(Edit({{"schedule: 1f1b",
                            "schedule: custom\n"
                            "  schedule_csv: no-such.csv"}}))
            .rfind("run.yaml:46: pipeline.schedule_csv: must name a readable "
                   "schedule CSV; got no-such.csv (no-such.csv: ",
                   0) == 0);
}

}  // namespace
}  // namespace ppb
