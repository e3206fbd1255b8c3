// --from megatron (issue 47): the bash subset of launch scripts
// (apps/input/launch_script.h), Megatron-LM's arguments read as a ppb
// config (apps/input/megatron_launch.h) and the whole path with the split
// (apps/commands/from_launch.h). Megatron-LM's own example launches
// (tests/data/megatron/ and configs/megatron/, commit d98e8a6) simulate the same as the same runs
// written by hand; refusals name the line and the flag.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "apps/commands/from_launch.h"
#include "apps/input/config.h"
#include "apps/input/launch_script.h"
#include "apps/input/megatron_launch.h"
#include "apps/input/path_commands.h"
#include "apps/input/step_runs.h"
#include "apps/output/emit.h"
#include "apps/output/output.h"
#include "core/cost_model.h"
#include "core/engine.h"
#include "tests/launch_helpers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

namespace ppb {
namespace {

std::string Data(const std::string& name) {
  return std::string(PPB_TEST_DATA_DIR) + "/megatron/" + name;
}

// The shipped example (configs/megatron/): Megatron's Llama-3-8B launch,
// its log, the machine and the calibrate runs file.
std::string Shipped(const std::string& name) {
  return std::string(PPB_TEST_DATA_DIR) + "/../../configs/megatron/" + name;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

LaunchInputs H100(std::optional<int> gpus = std::nullopt) {
  LaunchInputs in;
  in.cluster_path = Shipped("h100.yaml");
  in.cluster_text = Slurp(in.cluster_path);
  in.gpus = gpus;
  return in;
}

using test::SimJson;

std::string LaunchJson(const std::string& path, const LaunchInputs& in) {
  return test::LaunchJson("megatron", path, in);
}

std::string ConfigJson(const std::string& file) {
  Result<RunConfig> c = LoadConfig(Data(file), CliOverrides());
  if (!c.ok()) FAIL(c.error().message);
  return SimJson(*c);
}

std::vector<std::string> Texts(const std::vector<LaunchWord>& words) {
  std::vector<std::string> out;
  for (const LaunchWord& w : words) out.push_back(w.text);
  return out;
}

// A launch of `args` (one per line after the torchrun line), with the
// fixed parts every test needs.
std::string Script(const std::string& args, int gpus = 8) {
  return "#!/bin/bash\n"
         "torchrun --nproc_per_node " +
         std::to_string(gpus) +
         " pretrain_gpt.py \\\n"
         "  --num-layers 4 --hidden-size 256 --num-attention-heads 8 \\\n"
         "  --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 \\\n"
         "  --vocab-size 1000 --bf16 \\\n" +
         args + "\n";
}

Result<commands::LaunchConfig> FromText(const std::string& text,
                                        std::optional<int> gpus = std::nullopt) {
  return commands::ReadLaunchConfig("megatron", "run.sh", text, H100(gpus));
}

}  // namespace

TEST_CASE("launch script: assignments, arrays, tests, case and arithmetic as bash does") {
  const std::string text =
      "#!/bin/bash\n"                                   // 1
      "# a comment\n"                                   // 2
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"          // 3
      "GPUS=${GPUS_PER_NODE:-4}\n"                      // 4
      "NODES=2\n"                                       // 5
      "WORLD=$(($GPUS*$NODES))\n"                       // 6
      "TP=${1:-2}\n"                                    // 7
      "HALF=$(( (WORLD + 2) / 4 ))\n"                   // 8
      "unset NODES\n"                                   // 9
      "NAME=\"a b\"\n"                                  // 10
      "ARGS=(\n"                                        // 11
      "    --num-layers 4   # four\n"                   // 12
      "    \"--hidden-size 64\"\n"                      // 13
      ")\n"                                             // 14
      "ARGS+=(--tp $TP)\n"                              // 15
      "if [[ \"$TP\" == \"2\" ]] || [[ -z \"$X\" ]]; then\n"  // 16
      "    ARGS+=(--yes)\n"                             // 17
      "elif [ \"$TP\" -gt 3 ]; then\n"                  // 18
      "    ARGS+=(--no)\n"                              // 19
      "else\n"                                          // 20
      "    ARGS+=(--never)\n"                           // 21
      "fi\n"                                            // 22
      "while [[ $# -gt 0 ]]; do\n"                      // 23
      "  case $1 in\n"                                  // 24
      "    --x) shift 2 ;;\n"                           // 25
      "    *) exit 1 ;;\n"                              // 26
      "  esac\n"                                        // 27
      "done\n"                                          // 28
      "case \"$TP\" in\n"                               // 29
      "  1|3) ARGS+=(--odd) ;;\n"                       // 30
      "  2) ARGS+=(--two) ;;\n"                         // 31
      "esac\n"                                          // 32
      "mkdir -p \"$(dirname \"$NAME\")\"\n"             // 33
      "if [ ! -f \"pretrain_gpt.py\" ]; then\n"         // 34
      "  exit 1\n"                                      // 35
      "fi\n"                                            // 36
      "exec torchrun --nproc_per_node $GPUS --nnodes ${NODES:-3} pretrain_gpt.py \\\n"  // 37
      "    ${ARGS[@]} \\\n"                             // 38
      "    --world $WORLD --half $HALF --name \"$NAME\" --count ${#ARGS[@]} \"$@\"\n";  // 39
  Result<LaunchCommand> c = ReadLaunchScript("t.sh", text);
  if (!c.ok()) FAIL(c.error().message);
  CHECK(c->line == 37);
  CHECK(c->script == "pretrain_gpt.py");
  CHECK(Texts(c->launcher) ==
        std::vector<std::string>{"torchrun", "--nproc_per_node", "4", "--nnodes", "3"});
  // The quoted element "--hidden-size 64" splits when ${ARGS[@]} is
  // unquoted; "$NAME" stays one word; ARGS holds 7 elements.
  CHECK(Texts(c->args) ==
        std::vector<std::string>{"--num-layers", "4", "--hidden-size", "64", "--tp", "2",
                                 "--yes", "--two", "--world", "8", "--half", "2", "--name",
                                 "a b", "--count", "7"});
  // Array elements keep the line where they were written.
  CHECK(c->args[0].line == 12);
  CHECK(c->args[2].line == 13);
  CHECK(c->args[4].line == 15);
  CHECK(c->args[6].line == 17);
  CHECK(c->args[8].line == 39);
  // Read while unset: the environment's GPUS_PER_NODE, and NODES after
  // its unset; X is never read ([[ ]] || stops at the first true test).
  CHECK(c->environment == std::vector<std::string>{"GPUS_PER_NODE", "NODES"});
}

TEST_CASE("launch script: a sourced file's assignments, arrays and exports hold in the script") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "ppb-test-source";
  fs::remove_all(dir);
  fs::create_directories(dir / "conf");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
  };
  write("conf/env.sh",
        "# the job's sizes\n"            // 1
        "TP=2\n"                         // 2
        "export PP=${PP:-2}\n"           // 3
        "LAYERS=$((2 * 4))\n"            // 4
        "MODEL=(--hidden-size 64)\n");   // 5
  write("conf/bad.sh", "A=1\n\n( cd x )\n");
  write("conf/launch.sh", "torchrun pretrain_gpt.py --num-layers 2\n");
  write("conf/self.sh", "source conf/self.sh\n");
  write("conf/exit.sh", "A=1\nexit 1\n");
  const std::string script = (dir / "run.sh").string();
  auto read = [&](const std::string& first) {
    return ReadLaunchScript(script, "#!/bin/bash\n" + first +
                                        "\ntorchrun pretrain_gpt.py --tp $TP --pp $PP "
                                        "--num-layers $LAYERS ${MODEL[@]}\n");
  };
  Result<LaunchCommand> c = read("source conf/env.sh");
  if (!c.ok()) FAIL(c.error().message);
  CHECK(Texts(c->args) == std::vector<std::string>{"--tp", "2", "--pp", "2", "--num-layers",
                                                   "8", "--hidden-size", "64"});
  CHECK(c->line == 3);
  // The array's words came in by the source command's line.
  CHECK(c->args[6].line == 2);
  // PP was read while unset, in the sourced file.
  CHECK(c->environment == std::vector<std::string>{"PP"});
  // `.` is `source`; an absolute path is itself.
  Result<LaunchCommand> dot = read(". " + (dir / "conf/env.sh").string());
  if (!dot.ok()) FAIL(dot.error().message);
  CHECK(Texts(dot->args) == Texts(c->args));

  auto refused = [&](const std::string& first) {
    Result<LaunchCommand> r = read(first);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(refused("source conf/missing.sh") ==
        script + ":2: source: must name a readable file (a relative path from the working "
                 "directory or the script's folder); got conf/missing.sh (conf/missing.sh from "
                 "the working directory, then " +
            (dir / "conf/missing.sh").string() + ": no such file)");
  // The idioms that name a script's folder: dirname, readlink -f and
  // BASH_SOURCE are read as bash gives them; pwd is ppb's working directory.
  for (const char* idiom : {"source \"$(dirname \"$(readlink -f \"$0\")\")/conf/env.sh\"",
                            "SCRIPT_PATH=\"${BASH_SOURCE[0]}\"; source "
                            "$(dirname $SCRIPT_PATH)/conf/env.sh",
                            ". `dirname $0`/conf/$(basename env.sh)"}) {
    INFO(idiom);
    Result<LaunchCommand> r = read(idiom);
    if (!r.ok()) FAIL(r.error().message);
    CHECK(Texts(r->args) == Texts(c->args));
  }
  CHECK_THAT(refused(". `pwd`/conf/env.sh"),
             Catch::Contains("(" + (fs::current_path() / "conf/env.sh").string() +
                             ": no such file)"));
  CHECK_THAT(refused(". /dev/null"), Catch::Contains("(/dev/null: not a regular file)"));
  CHECK(refused("source conf/bad.sh") ==
        script + ":2: source conf/bad.sh: " + (dir / "conf/bad.sh").string() +
            ":3: a subshell ( ... ): must not be used in a launch ppb reads");
  CHECK(refused("source conf/launch.sh") ==
        script + ":2: source conf/launch.sh: " + (dir / "conf/launch.sh").string() +
            ":1: the launch: must be in the script ppb reads, not in a file it sources");
  CHECK(refused("source conf/env.sh extra") ==
        script + ":2: source: must be given one file (ppb passes a sourced file no arguments); "
                 "got 2 words");
  CHECK(refused("source $(hostname)/conf/env.sh") ==
        script + ":2: source: must name a file the script sets; got the output of a command "
                 "ppb does not run");
  // exit in a sourced file ends the script, at the source command.
  CHECK_THAT(refused("source conf/exit.sh"),
             Catch::EndsWith("got no such command before the script exits at line 2"));
  // A file that sources itself stops at the nesting limit.
  CHECK(refused("source conf/self.sh") ==
        script + ":2: source conf/self.sh: " + (dir / "conf/self.sh").string() +
            ":1: source: must be nested at most 8 deep; got a file sourced at depth 9 (does a "
            "file source itself?)");
  fs::remove_all(dir);
}

TEST_CASE("launch script: the path commands read as coreutils gives them") {
  using V = std::vector<std::string>;
  CHECK(PathCommand(V{"dirname", "a/b/"}) == "a");
  CHECK(PathCommand(V{"dirname", "a//b"}) == "a");
  CHECK(PathCommand(V{"dirname", "run.sh"}) == ".");
  CHECK(PathCommand(V{"dirname", "/run.sh"}) == "/");
  CHECK(PathCommand(V{"dirname", "//"}) == "/");
  CHECK(PathCommand(V{"basename", "x/train.sh", ".sh"}) == "train");
  CHECK(PathCommand(V{"basename", ".sh", ".sh"}) == ".sh");
  CHECK(PathCommand(V{"basename", "x/y/"}) == "y");
  CHECK(PathCommand(V{"realpath", "/a/./b/../c"}) == "/a/c");
  CHECK(PathCommand(V{"readlink", "-f", "/a/b/.."}) == "/a");
  CHECK(PathCommand(V{"pwd"}) == std::filesystem::current_path().string());
  // Anything else is a command ppb does not run.
  CHECK_FALSE(PathCommand(V{"dirname", "a", "b"}));
  CHECK_FALSE(PathCommand(V{"readlink", "x"}));
  CHECK_FALSE(PathCommand(V{"hostname"}));
  CHECK_FALSE(PathCommand(V{}));
}

TEST_CASE("launch script: a line continuation is removed inside double quotes as bash does") {
  // Megatron-LM's examples/mamba/train.sh and t5/train_t5_220m_distributed.sh
  // write options="\<newline> --flag value \<newline> ..." and pass ${options}
  // unquoted: bash drops each \<newline> pair, in double quotes too (man
  // bash, QUOTING); single quotes keep it.
  const std::string text =
      "OPTS=\" \\\n"                                          // 1
      "   --num-layers 4 \\\n"                                // 2
      "   --name a\\\n"                                       // 3
      "b\"\n"                                                  // 4
      "torchrun --nproc_per_node 8 pretrain_gpt.py ${OPTS} \"x\\\ny\" 'p\\\nq'\n";  // 5
  Result<LaunchCommand> c = ReadLaunchScript("t.sh", text);
  if (!c.ok()) FAIL(c.error().message);
  CHECK(Texts(c->args) ==
        std::vector<std::string>{"--num-layers", "4", "--name", "ab", "xy", "p\\\nq"});
}

TEST_CASE("launch script: bash's dynamic variables are unknown and [[ -eq ]] reads empty as 0") {
  // Megatron-LM's academic_paper_scripts: MASTER_PORT=$(($RANDOM + 1024)),
  // SEED=$(($RANDOM)); multimodal/nvlm: [[ $BATCH -eq 0 ]] with BATCH unset.
  const std::string text =
      "PORT=$(($RANDOM + 1024))\n"
      "if [[ $BATCH -eq 0 ]]; then M=yes; else M=no; fi\n"
      "torchrun --nproc_per_node 8 pretrain_gpt.py --port $PORT --m $M\n";
  Result<LaunchCommand> c = ReadLaunchScript("t.sh", text);
  if (!c.ok()) FAIL(c.error().message);
  REQUIRE(c->args.size() == 4);
  CHECK(c->args[1].unknown);
  CHECK(c->args[3].text == "yes");
  // RANDOM is no variable read while unset; BATCH is.
  CHECK(c->environment == std::vector<std::string>{"BATCH"});
  // [ ] refuses an empty operand, as bash does.
  Result<LaunchCommand> single =
      ReadLaunchScript("t.sh", "if [ \"$BATCH\" -eq 0 ]; then M=1; fi\n"
                               "torchrun --nproc_per_node 8 pretrain_gpt.py\n");
  REQUIRE_FALSE(single.ok());
  CHECK(single.error().message == "t.sh:1: a number: must be an integer; got ''");
}

TEST_CASE("launch script: what ppb cannot evaluate is refused at its line") {
  auto refused = [](const std::string& text) {
    Result<LaunchCommand> c = ReadLaunchScript("t.sh", text);
    REQUIRE_FALSE(c.ok());
    return c.error().message;
  };
  const std::string launch = "torchrun pretrain_gpt.py --num-layers 2\n";
  CHECK(refused("A=1\nfor i in 1 2; do\n  A=2\ndone\n" + launch) ==
        "t.sh:2: a for loop: must not be used in a launch ppb reads");
  CHECK(refused("f() {\n  echo\n}\n" + launch) ==
        "t.sh:1: a function definition: must not be used in a launch ppb reads");
  CHECK(refused("\nsource env.sh\n" + launch) ==
        "t.sh:2: source: must name a readable file (a relative path from the working "
        "directory or the script's folder); got env.sh (env.sh: no such file)");
  CHECK(refused("\neval \"$X\"\n" + launch) ==
        "t.sh:2: eval: must not be run in a launch ppb reads (ppb runs nothing)");
  CHECK(refused("N=1\nwhile [[ $N -gt 0 ]]; do\n  N=0\ndone\n" + launch) ==
        "t.sh:2: a loop: must not run its body in a launch ppb reads; got a condition that "
        "holds on the first pass");
  CHECK(refused("X=$(hostname)\nif [[ \"$X\" == a ]]; then\n  Y=1\nfi\n" + launch) ==
        "t.sh:2: a test: must use values the script sets; got the output of a command ppb does "
        "not run");
  CHECK(refused("echo hi\n") ==
        "t.sh:2: the launch: must run a training script (torchrun ... pretrain_*.py ARGS); got "
        "no such command");
  CHECK(refused("exit 0\n" + launch) ==
        "t.sh:3: the launch: must run a training script (torchrun ... pretrain_*.py ARGS); got "
        "no such command before the script exits at line 1");
  CHECK(refused(launch + launch) ==
        "t.sh:2: the launch: must be one command; got a second at line 2 (the first at line 1)");
  CHECK(refused("A=${B/x/y}\n" + launch).rfind("t.sh:1: ${B/x/y}: must be a form ppb evaluates",
                                               0) == 0);
  CHECK(refused("A=$((1/0))\n" + launch) == "t.sh:1: $((...)): must not divide by zero");
  CHECK(refused("A=\"abc\n" + launch).rfind("t.sh:1: quote: must be closed", 0) == 0);
}

TEST_CASE("from megatron: the example launches simulate as the same runs written by hand") {
  // examples/llama/train_llama3_8b_h100_fp8.sh: 8 GPUs from torchrun.
  CHECK(LaunchJson(Shipped("train_llama3_8b_h100_fp8.sh"), H100()) ==
        ConfigJson("llama3_8b_h100_fp8.yaml"));
  // examples/mixtral/...: its NNODES comes from SLURM_NNODES, so --gpus.
  CHECK(LaunchJson(Data("train_mixtral_8x7b_distributed.sh"), H100(64)) ==
        ConfigJson("mixtral_8x7b_64.yaml"));
  // examples/gpt3/...: TP 8 x PP 16 needs --gpus past the script's 8.
  CHECK(LaunchJson(Data("train_gpt3_175b_distributed.sh"), H100(1024)) ==
        ConfigJson("gpt3_175b_1024.yaml"));
  // The log of the Llama run is the same run.
  CHECK(LaunchJson(Shipped("llama3_8b_h100_fp8.log"), H100()) == ConfigJson("llama3_8b_h100_fp8.yaml"));
}

TEST_CASE("from megatron: a hybrid model's pattern, Mamba shape and pipeline segments") {
  // examples/mamba/train.sh as it is: it parses through its case, its
  // options string and its pattern, then needs the vocabulary its
  // SentencePiece model holds.
  const std::string file = Data("mamba_train.sh");
  const std::string text = Slurp(file);
  Result<commands::LaunchConfig> as_is =
      commands::ReadLaunchConfig("megatron", file, text, H100());
  REQUIRE_FALSE(as_is.ok());
  CHECK_THAT(as_is.error().message,
             Catch::Contains("mamba_train.sh: --vocab-size: must be given (ppb does not read "
                             "tokenizer 'GPTSentencePieceTokenizer'); got nothing"));
  // With the vocabulary given it is the hand-written run: 48 layers from
  // the pattern, Megatron's default Mamba shape (32 heads of 64 at h 1024).
  std::string with_vocab = text;
  const std::string tok = "--tokenizer-model ${TOKENIZER_PATH} \\";
  REQUIRE(with_vocab.find(tok) != std::string::npos);
  with_vocab.replace(with_vocab.find(tok), tok.size(),
                     "--tokenizer-model ${TOKENIZER_PATH} --vocab-size 256000 \\");
  Result<commands::LaunchConfig> run =
      commands::ReadLaunchConfig("megatron", file, with_vocab, H100());
  if (!run.ok()) FAIL(run.error().message);
  Result<RunConfig> c = ParseConfig(run->yaml, file, CliOverrides());
  REQUIRE(c.ok());
  CHECK(c->architecture.layers == 48);
  CHECK(c->architecture.mamba.heads == 32);
  CHECK(SimJson(*c) == ConfigJson("mamba_800m_8.yaml"));
  // Its lines are the options string's (an escaped newline counts once).
  std::string pattern_origin;
  for (size_t i = 0, line = 0; i < run->yaml.size(); ++line) {
    const size_t end = run->yaml.find('\n', i);
    if (run->yaml.compare(i, 26, "    hybrid_layer_pattern: ") == 0) {
      pattern_origin = run->origins.at(line);
    }
    i = end == std::string::npos ? run->yaml.size() : end + 1;
  }
  CHECK_THAT(pattern_origin, Catch::EndsWith("mamba_train.sh:103: --hybrid-layer-pattern"));

  // '|' segments are the stages in Megatron's order (segment = chunk x p +
  // rank): four segments on p 2 give v 2, the embedding with segment 0 and
  // the head with segment 3; the --mamba-* arguments set the shape.
  const std::string hybrid =
      "  --hybrid-layer-pattern \"M-*-|M-*-M-|M-|*-M-\" --pipeline-model-parallel-size 2 \\\n"
      "  --mamba-num-heads 16 --mamba-head-dim 32 --mamba-state-dim 64 --mamba-num-groups 4 \\\n"
      "  --global-batch-size 8";
  Result<commands::LaunchConfig> pipes = FromText(Script(hybrid, 4));
  if (!pipes.ok()) FAIL(pipes.error().message);
  Result<RunConfig> pc = ParseConfig(pipes->yaml, "run.sh", CliOverrides());
  REQUIRE(pc.ok());
  CHECK(pc->architecture.layers == 16);
  CHECK(pc->shape.p == 2);
  CHECK(pc->shape.v == 2);
  CHECK(pc->strategy.layers_per_stage == std::vector<int>{5, 6, 2, 5});
  CHECK(pc->architecture.mamba ==
        Mamba2Shape{16, 32, 64, 4, 4, 128, true, false});
  CHECK(pc->architecture.Block(4).mixer == Mixer::Mamba2);
  CHECK_FALSE(pc->architecture.HasMlp(4));
  CHECK(pc->architecture.Block(5).mlp == MlpKind::Dense);
  CHECK(pc->architecture.Block(6).mixer == Mixer::Attention);

  auto refused = [&](const std::string& args, int gpus = 4) {
    Result<commands::LaunchConfig> r = FromText(Script(args, gpus));
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK_THAT(refused("  --hybrid-layer-pattern \"M-*-|M-*-|M-*-\" "
                     "--pipeline-model-parallel-size 2"),
             Catch::Contains("run.sh:6: --hybrid-layer-pattern: its 3 pipeline segments must be "
                             "divisible by --pipeline-model-parallel-size 2"));
  CHECK_THAT(refused("  --hybrid-layer-pattern \"M-*D\""),
             Catch::Contains("run.sh:6: --hybrid-layer-pattern: must hold M (Mamba), G (gated "
                             "DeltaNet), * (attention), + (MLA), - (MLP), E (MoE) and | (ppb "
                             "does not model Megatron's D, DeepSeek's sparse attention); got "
                             "'D' at position 4"));
  // + layers are MLA (validate_args sets --multi-latent-attention from
  // them), never beside * layers; the MLA shape is the --*-lora-rank and
  // head-dim flags' (Megatron's defaults where absent).
  Result<commands::LaunchConfig> mla = FromText(Script(
      "  --hybrid-layer-pattern \"M+M-\" --q-lora-rank 64 --kv-lora-rank 32 \\\n"
      "  --qk-head-dim 32 --qk-pos-emb-head-dim 16 --v-head-dim 32 --global-batch-size 8"));
  if (!mla.ok()) FAIL(mla.error().message);
  Result<RunConfig> mc = ParseConfig(mla->yaml, "run.sh", CliOverrides());
  if (!mc.ok()) FAIL(mc.error().message);
  CHECK(mc->architecture.mla());
  CHECK(mc->architecture.q_lora_rank == 64);
  CHECK(mc->architecture.kv_lora_rank == 32);
  CHECK(mc->architecture.qk_rope_head_dim == 16);
  CHECK(mc->architecture.Block(1).mixer == Mixer::Attention);
  CHECK_FALSE(mc->architecture.HasMlp(1));
  CHECK(HybridSymbol(mc->architecture, 1) == '+');
  CHECK_THAT(refused("  --hybrid-layer-pattern \"M*M+\""),
             Catch::Contains("run.sh:6: --hybrid-layer-pattern: must not hold both * "
                             "(attention) and + (MLA) layers (Megatron-LM: \"Not supported to "
                             "have both Attention and MLA/DSA in one model\"); got \"M*M+\""));
  CHECK_THAT(refused("  --hybrid-layer-pattern \"M*M-\" --multi-latent-attention"),
             Catch::Contains("run.sh:6: --multi-latent-attention: must be given with + (MLA) "
                             "layers in --hybrid-layer-pattern"));
  // --attention-output-gate: linear_qkv also gives a gate of heads x
  // kv_channels (32 wide a head here); not with MLA.
  Result<commands::LaunchConfig> gate = FromText(Script(
      "  --hybrid-layer-pattern \"G*G-\" --attention-output-gate --global-batch-size 8"));
  if (!gate.ok()) FAIL(gate.error().message);
  CHECK_THAT(gate->yaml, Catch::Contains("    attention_output_gate: true"));
  Result<RunConfig> gc = ParseConfig(gate->yaml, "run.sh", CliOverrides());
  if (!gc.ok()) FAIL(gc.error().message);
  CHECK(gc->architecture.attention_out_gate);
  Architecture ungated = gc->architecture;
  ungated.attention_out_gate = false;
  CHECK(DecoderLayerParams(gc->architecture, 1).total() -
            DecoderLayerParams(ungated, 1).total() ==
        256 * 8 * 32);
  CHECK_THAT(refused("  --hybrid-layer-pattern \"M+M-\" --attention-output-gate"),
             Catch::Contains("run.sh:6: --attention-output-gate: must not be given with "
                             "multi-latent attention (Megatron-LM: \"Output gate is not "
                             "supported for MLA yet\"); got both"));
  CHECK_THAT(refused("  --hybrid-layer-pattern \"M-*-/M-\""),
             Catch::Contains("run.sh:6: --hybrid-layer-pattern: must not hold MTP patterns "
                             "after '/'"));
  CHECK_THAT(refused("  --hybrid-layer-pattern \"M-|*-\" --pipeline-model-parallel-size 2 "
                     "--pipeline-model-parallel-layout \"Et|tL\""),
             Catch::Contains("run.sh:6: --pipeline-model-parallel-layout: must not be given "
                             "with '|' in --hybrid-layer-pattern"));
  CHECK_THAT(refused("  --hybrid-layer-pattern M- --hybrid-override-pattern M-"),
             Catch::Contains("--hybrid-override-pattern: must not be given with "
                             "--hybrid-layer-pattern"));
}

TEST_CASE("from megatron: the GPT model's gated DeltaNet layers by --linear-attention-freq") {
  // Megatron's functional test gpt3_mcore_te_tp2_pp1_gdn's model flags (core
  // 0.20): a DeltaNet beside each layer's MLP but every third layer's, whose
  // attention is gated.
  const std::string gdn =
      "  --experimental-attention-variant gated_delta_net --linear-attention-freq 3 \\\n"
      "  --linear-conv-kernel-dim 4 --linear-key-head-dim 64 --linear-value-head-dim 64 \\\n"
      "  --linear-num-key-heads 4 --linear-num-value-heads 8 --attention-output-gate \\\n"
      "  --tensor-model-parallel-size 2 --global-batch-size 8";
  Result<commands::LaunchConfig> run = FromText(Script(gdn));
  if (!run.ok()) FAIL(run.error().message);
  CHECK_THAT(run->yaml,
             Catch::Contains("    layer_types: [linear_attention, linear_attention, "
                             "full_attention, linear_attention]\n"));
  Result<RunConfig> c = ParseConfig(run->yaml, "run.sh", CliOverrides());
  if (!c.ok()) FAIL(c.error().message);
  const Architecture& a = c->architecture;
  CHECK(a.Block(0).mixer == Mixer::GatedDeltaNet);
  CHECK(a.HasMlp(0));
  CHECK(a.Block(2).mixer == Mixer::Attention);
  CHECK(a.deltanet.key_heads == 4);
  CHECK(a.deltanet.value_heads == 8);
  CHECK(a.deltanet.key_dim == 64);
  CHECK(a.deltanet.value_dim == 64);
  CHECK(a.attention_out_gate);
  // The same layers as a list (arguments.py la_freq_type), and as the
  // hand-written config.
  std::string listed = gdn;
  listed.replace(listed.find("--linear-attention-freq 3"), 25,
                 "--linear-attention-freq \"([1]*2+[0]*1+[1]*1)\"");
  Result<commands::LaunchConfig> run2 = FromText(Script(listed));
  if (!run2.ok()) FAIL(run2.error().message);
  Result<RunConfig> c2 = ParseConfig(run2->yaml, "run.sh", CliOverrides());
  REQUIRE(c2.ok());
  CHECK(SameLayers(c2->architecture, a));
  CHECK(SimJson(*c2) == SimJson(*c));

  auto refused = [&](const std::string& args) {
    Result<commands::LaunchConfig> r = FromText(Script(args));
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK_THAT(refused("  --experimental-attention-variant gdn"),
             Catch::Contains("run.sh:6: --linear-attention-freq: must be given with "
                             "--experimental-attention-variant gdn (Megatron-LM's assert: "
                             "\"linear_attention_freq must be set for linear gdn\"); got "
                             "nothing"));
  CHECK_THAT(refused("  --experimental-attention-variant dsa"),
             Catch::Contains("run.sh:6: --experimental-attention-variant: must be gdn (or "
                             "gated_delta_net), the variant ppb models; got 'dsa'"));
  CHECK_THAT(refused("  --experimental-attention-variant gdn --linear-attention-freq "
                     "\"[1,1,0]\""),
             Catch::Contains("run.sh:6: --linear-attention-freq: must list one entry a layer "
                             "(4, Megatron-LM's assert); got 3"));
}

TEST_CASE("from megatron: a launch of a model ppb does not simulate is refused by its script") {
  // Megatron-LM's t5/ and bert/ examples run pretrain_t5.py and
  // pretrain_bert.py: not decoder-only language models.
  Result<commands::LaunchConfig> t5 = FromText(
      "torchrun --nproc_per_node 8 pretrain_t5.py --num-layers 2 --hidden-size 64\n");
  REQUIRE_FALSE(t5.ok());
  CHECK(t5.error().message ==
        "run.sh:1: the launch: must run pretrain_gpt.py, pretrain_hybrid.py or "
        "pretrain_mamba.py (ppb simulates decoder-only language models, not encoders, "
        "encoder-decoders or vision-language models); got pretrain_t5.py");
}

TEST_CASE("from megatron: a world that cannot hold TP x PP is refused with both numbers") {
  const std::string file = Data("train_gpt3_175b_distributed.sh");
  Result<commands::LaunchConfig> r = commands::ReadLaunchConfig("megatron", file, Slurp(file), H100());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        file +
            ":56: --tensor-model-parallel-size 8 x --pipeline-model-parallel-size 16 x "
            "--context-parallel-size 1 = 128: must divide the world size (Megatron-LM's "
            "assert); got 8 (torchrun --nproc_per_node 8 x --nnodes 1 = 8 GPUs)");
  // Megatron's gpt-oss example puts PP = the world size (8) on 12 layers.
  const std::string oss = Data("02_train.sh");
  Result<commands::LaunchConfig> o = commands::ReadLaunchConfig("megatron", oss, Slurp(oss), H100());
  REQUIRE_FALSE(o.ok());
  CHECK(o.error().message ==
        oss + ":222: the 12 decoder layers must divide over the 8 pipeline ranks (Megatron-LM: "
              "\"Number of layers should be divisible by the pipeline-model-parallel size\")");
}

TEST_CASE("from megatron: Megatron's defaults and rules for what a launch leaves out") {
  // FFN: int(8h/3 / 64) * 64 with --swiglu (256 -> 640), 4h without;
  // vocabulary 1000 padded to a multiple of 128 x TP 2 = 1024.
  Result<commands::LaunchConfig> r =
      FromText(Script("  --swiglu --tensor-model-parallel-size 2 --sequence-parallel"));
  if (!r.ok()) FAIL(r.error().message);
  CHECK(r->yaml.find("    ffn_hidden_size: 640\n") != std::string::npos);
  CHECK(r->yaml.find("    vocab_size: 1024\n") != std::string::npos);
  CHECK(r->yaml.find("  data_parallel: 4\n") != std::string::npos);
  CHECK(r->yaml.find("  sequence_parallel: true\n") != std::string::npos);
  // learned_absolute is Megatron's default position embedding.
  CHECK(r->yaml.find("    learned_positions: 1024\n") != std::string::npos);
  CHECK(r->yaml.find("    gated_mlp: true\n") != std::string::npos);
  Result<commands::LaunchConfig> plain = FromText(Script("  --position-embedding-type rope"));
  REQUIRE(plain.ok());
  CHECK(plain->yaml.find("    ffn_hidden_size: 1024\n") != std::string::npos);
  CHECK(plain->yaml.find("learned_positions") == std::string::npos);
  // The global batch defaults to micro-batch x data parallel (8).
  CHECK(plain->yaml.find("  global_batch_size: 8\n") != std::string::npos);

  // MoE: the layer pattern, the router's top-2 and allgather defaults.
  Result<commands::LaunchConfig> moe =
      FromText(Script("  --num-experts 4 --moe-layer-freq \"([0]*1+[1]*3)\" "
                      "--expert-model-parallel-size 4 --global-batch-size 8"));
  if (!moe.ok()) FAIL(moe.error().message);
  CHECK(moe->yaml.find("      dense_layers: [0]\n") != std::string::npos);
  CHECK(moe->yaml.find("      top_k: 2\n") != std::string::npos);
  CHECK(moe->yaml.find("    dispatcher: allgather\n") != std::string::npos);

  // Interleaving from --num-layers-per-virtual-pipeline-stage (4 layers /
  // p 2 / 1 = v 2), and full recompute of every decoder layer.
  Result<commands::LaunchConfig> v =
      FromText(Script("  --pipeline-model-parallel-size 2 "
                      "--num-layers-per-virtual-pipeline-stage 1 --global-batch-size 8 "
                      "--recompute-granularity full --recompute-method uniform "
                      "--recompute-num-layers 1"));
  if (!v.ok()) FAIL(v.error().message);
  CHECK(v->yaml.find("  virtual_stages: 2\n  schedule: interleaved\n") != std::string::npos);
  CHECK(v->yaml.find("  layers_per_chunk: [2, 1, 1, 2]\n") != std::string::npos);
  CHECK(v->yaml.find("    layers: {decoder.0: full, decoder.1: full, decoder.2: full, "
                     "decoder.3: full}\n") != std::string::npos);
}

TEST_CASE("from megatron: errors name the launch's line and flag") {
  // Line 3 of Script() holds --num-attention-heads; TP 3 does not divide 8.
  Result<commands::LaunchConfig> r = FromText(Script("  --tensor-model-parallel-size 3"), 9);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.rfind("run.sh:6: --tensor-model-parallel-size (read as ppb "
                                "training.tensor_parallel): ",
                                0) == 0);
  Result<commands::LaunchConfig> bad = FromText(Script("  --hidden-size abc"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "run.sh:6: --hidden-size: must be an integer from 1 to 1000000000; got 'abc'");
  // A value from a command ppb does not run: refused only where read.
  Result<commands::LaunchConfig> unknown =
      FromText("H=$(cat h.txt)\nD=$(date)\n" + Script("  --save ckpt-$D --ffn-hidden-size $H"));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message ==
        "run.sh:8: --ffn-hidden-size: must be a value the script sets; got the output of a "
        "command ppb does not run");
  Result<commands::LaunchConfig> no_machine =
      commands::ReadLaunchConfig("megatron", "run.sh", Script(""), LaunchInputs{});
  REQUIRE_FALSE(no_machine.ok());
  CHECK(no_machine.error().message.rfind("run.sh: the machine: must be given with --cluster FILE",
                                         0) == 0);
  Result<commands::LaunchConfig> vocab = FromText(
      "torchrun --nproc_per_node 1 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
      "--num-attention-heads 2 --seq-length 64 --micro-batch-size 1 --tokenizer-type "
      "HuggingFaceTokenizer\n");
  REQUIRE_FALSE(vocab.ok());
  CHECK(vocab.error().message ==
        "run.sh: --vocab-size: must be given (ppb does not read tokenizer "
        "'HuggingFaceTokenizer'); got nothing");
}

TEST_CASE("from megatron: Megatron's own checks of the sharding flags refuse a script") {
  // Megatron-FSDP needs the fsdp_dtensor checkpoint format (arguments.py).
  Result<commands::LaunchConfig> r =
      FromText(Script("  --use-megatron-fsdp --use-distributed-optimizer "
                      "--data-parallel-sharding-strategy optim_grads_params"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "run.sh: Megatron-FSDP requires the `fsdp_dtensor` checkpointing format");
  Result<commands::LaunchConfig> ok =
      FromText(Script("  --use-megatron-fsdp --use-distributed-optimizer "
                      "--data-parallel-sharding-strategy optim_grads --ckpt-format fsdp_dtensor"));
  if (!ok.ok()) FAIL(ok.error().message);
  CHECK(ok->yaml.find("  fsdp: megatron\n  data_parallel_sharding: optim_grads\n") !=
        std::string::npos);
}

TEST_CASE("from megatron: every argument ppb does not model is listed") {
  Result<commands::LaunchConfig> r = FromText(Script("  --lr 1e-4 --step-batch-size-schedule x"));
  REQUIRE(r.ok());
  REQUIRE_FALSE(r->notes.empty());
  CHECK(r->notes.back() == "ignored (ppb does not model them): --lr --step-batch-size-schedule");
  // --linear-attention-freq says nothing without the gated DeltaNet variant.
  Result<commands::LaunchConfig> freq = FromText(Script("  --linear-attention-freq 3"));
  REQUIRE(freq.ok());
  REQUIRE_FALSE(freq->notes.empty());
  CHECK(freq->notes.back() == "ignored (ppb does not model them): --linear-attention-freq");
}

TEST_CASE("from megatron: sliding windows, sinks and the GLU flags by Megatron's rules") {
  // Megatron's own gpt-oss example (examples/gptoss/02_train.sh) on 4 GPUs
  // (PP = the world = 4 holds its 12 layers): --window-size 127,0 is a
  // 128-key window, --window-attn-skip-freq 2 makes every 2nd (1-based)
  // layer full, --softmax-type learnable a sink logit per head,
  // --quick-geglu a gated MLP and --recompute-activations selective
  // recompute (validate_args).
  std::string text = Slurp(Data("02_train.sh"));
  const std::string from = "GPUS_PER_NODE=8\n", to = "GPUS_PER_NODE=4\n";
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), to);
  Result<commands::LaunchConfig> oss = FromText(text);
  if (!oss.ok()) FAIL(oss.error().message);
  CHECK(oss->yaml.find("    layer_types: [sliding_attention, full_attention, sliding_attention, "
                       "full_attention, sliding_attention, full_attention, sliding_attention, "
                       "full_attention, sliding_attention, full_attention, sliding_attention, "
                       "full_attention]\n") != std::string::npos);
  CHECK(oss->yaml.find("    sliding_window: 128\n") != std::string::npos);
  CHECK(oss->yaml.find("    attention_sinks: true\n") != std::string::npos);
  CHECK(oss->yaml.find("    gated_mlp: true\n") != std::string::npos);
  CHECK(oss->yaml.find("decoder.11: selective}") != std::string::npos);
  // A pattern list: 1 slides; -1 on the left is no window at all.
  Result<commands::LaunchConfig> listed =
      FromText(Script("  --window-size 4095,0 --window-attn-skip-freq \"[1,0,0,1]\""));
  if (!listed.ok()) FAIL(listed.error().message);
  CHECK(listed->yaml.find("    layer_types: [sliding_attention, full_attention, "
                          "full_attention, sliding_attention]\n") != std::string::npos);
  CHECK(listed->yaml.find("    sliding_window: 4096\n") != std::string::npos);
  Result<commands::LaunchConfig> none = FromText(Script("  --window-size -1,0"));
  REQUIRE(none.ok());
  CHECK(none->yaml.find("layer_types") == std::string::npos);
  Result<commands::LaunchConfig> bad = FromText(Script("  --window-size 127,5"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "run.sh:6: --window-size: must be LEFT,RIGHT with LEFT -1 (no window) or from 0 to "
        "1000000000 and RIGHT 0 or -1 (a causal decoder sees no later key); got '127,5'");
  // add_bias_linear (Megatron's default) with RMSNorm: GPT-OSS's biases on
  // Q, K, V, the attention output and every expert; a dense MLP's are not
  // modelled, and the note says so.
  Result<commands::LaunchConfig> biased = FromText(
      Script("  --normalization RMSNorm --swiglu --num-experts 4 --moe-ffn-hidden-size 512"));
  if (!biased.ok()) FAIL(biased.error().message);
  CHECK(biased->yaml.find("    qkv_bias: true\n    attention_out_bias: true\n") !=
        std::string::npos);
  CHECK(biased->yaml.find("      expert_bias: true\n") != std::string::npos);
  Result<commands::LaunchConfig> dense = FromText(Script("  --normalization RMSNorm"));
  REQUIRE(dense.ok());
  CHECK(std::find(dense->notes.begin(), dense->notes.end(),
                  "add_bias_linear (no --disable-bias-linear) with RMSNorm: the biases of a "
                  "dense or shared MLP's fc1 and fc2 are not modelled (those of Q, K, V, the "
                  "attention output and the routed experts are)") != dense->notes.end());
  Result<commands::LaunchConfig> plain =
      FromText(Script("  --normalization RMSNorm --disable-bias-linear"));
  REQUIRE(plain.ok());
  CHECK(plain->yaml.find("bias") == std::string::npos);
  Result<commands::LaunchConfig> short_list =
      FromText(Script("  --window-size 127,0 --window-attn-skip-freq \"[1,0]\""));
  REQUIRE_FALSE(short_list.ok());
  CHECK(short_list.error().message ==
        "run.sh:6: --window-attn-skip-freq: must list one entry a layer (4); got 2");
}

// Windowed models through --emit megatron and back: the sliding layers as
// --window-size and --window-attn-skip-freq (an integer where the full
// layers are every N-th, else the pattern), sinks as --softmax-type.
TEST_CASE("from megatron: sliding layers and sinks emitted read back as the same run") {
  const std::string rest =
      "    num_attention_heads: 16\n    num_key_value_heads: 4\n"
      "    ffn_hidden_size: 5632\n    vocab_size: 32000\n    attention_sinks: true\n"
      "training: {seq_length: 8192, micro_batch_size: 1, global_batch_size: 64, dtype: bf16,\n"
      "           tensor_parallel: 2, data_parallel: 4, distributed_optimizer: true}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 2, schedule: 1f1b}\n";
  const std::string machine = "hardware: {gpu: h100-sxm}\n";
  for (const std::string& types :
       {std::string("[sliding_attention, sliding_attention, full_attention, sliding_attention, "
                    "sliding_attention, full_attention]"),
        std::string("[sliding_attention, full_attention, full_attention, sliding_attention, "
                    "sliding_attention, sliding_attention]")}) {
    Result<RunConfig> c = ParseConfig(
        "model:\n  name: windowed\n  architecture:\n    hidden_size: 2048\n"
        "    num_layers: 6\n    layer_types: " +
            types + "\n    sliding_window: 1024\n" + rest,
        "windowed.yaml", CliOverrides());
    if (!c.ok()) FAIL(c.error().message);
    std::string why;
    const auto [back, want] =
        test::EmitReadBack(*c, Framework::Megatron, "megatron", "emitted.txt", machine, {}, why);
    INFO(why);
    REQUIRE(!want.empty());
    CHECK(back == want);
  }
  // The flags themselves: every 3rd layer full is the integer 3.
  Result<RunConfig> c = ParseConfig(
      "model:\n  name: windowed\n  architecture:\n    hidden_size: 2048\n"
      "    num_layers: 6\n    layer_types: [sliding_attention, sliding_attention, "
      "full_attention, sliding_attention, sliding_attention, full_attention]\n"
      "    sliding_window: 1024\n" +
          rest,
      "windowed.yaml", CliOverrides());
  REQUIRE(c.ok());
  Result<PreparedRun> run = Prepare(*c);
  REQUIRE(run.ok());
  Result<Emission> e = Emit(Framework::Megatron, *c, run->program);
  REQUIRE(e.ok());
  CHECK(e->text.find("--window-size 1023,0\n--window-attn-skip-freq 3\n") != std::string::npos);
  CHECK(e->text.find("--softmax-type learnable\n") != std::string::npos);
}

TEST_CASE("from megatron: a log's iterations after the warm-up are the measured step") {
  Result<std::vector<LoggedIteration>> its =
      ReadMegatronIterations("l.log", Slurp(Shipped("llama3_8b_h100_fp8.log")));
  REQUIRE(its.ok());
  REQUIRE(its->size() == 6);
  CHECK(its->front().iteration == 1);
  CHECK(its->front().ms == Approx(15873.2));
  // calibrate --runs with log: the median of iterations 3..6 (9597.3,
  // 9598.1, 9601.9, 9603.7) is 9600.0 ms.
  Result<StepRuns> runs = LoadStepRuns(Shipped("runs-log.yaml"));
  if (!runs.ok()) FAIL(runs.error().message);
  REQUIRE(runs->runs.size() == 1);
  CHECK(runs->runs[0].from_log);
  CHECK(runs->runs[0].measured == 9'600'000'000);
  CHECK(runs->runs[0].log_iterations == 4);
  // The memory report's max reserved (78212.00 MB), to which the fit adds
  // the process's fixed bytes; a logged device total is taken as it is.
  REQUIRE(runs->runs[0].peak_memory.has_value());
  CHECK(*runs->runs[0].peak_memory == Bytes{78212} * 1024 * 1024);
  CHECK(runs->runs[0].peak_reserved);
  const std::optional<LoggedMemory> mem = ReadMegatronMemory(
      "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1.00 | max allocated: 2.00 | "
      "reserved: 3.00 | max reserved: 4.50 | total device memory used: 7.25\n"
      "[Rank 4] (after 10 iterations) memory (MB) | allocated: 1.00 | max allocated: 2.00 | "
      "reserved: 3.00 | max reserved: 5.50\n");
  REQUIRE(mem.has_value());
  CHECK(mem->max_reserved_mb == 5.5);
  CHECK(mem->device_used_mb == std::optional<double>(7.25));
  CHECK_FALSE(ReadMegatronMemory("no report\n").has_value());
  Result<std::vector<LoggedIteration>> bad =
      ReadMegatronIterations("l.log", "x\n [d] iteration 0/ 5 | elapsed time per iteration (ms): 1.0 |\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.rfind("l.log:2: an iteration line: must give", 0) == 0);
}

}  // namespace ppb

namespace ppb {

// --emit megatron, then --from megatron: every shipped config whose run
// Megatron-LM can express comes back as the same simulation. A shipped
// config is left out only for a stated reason.
TEST_CASE("from megatron: a hybrid model emitted reads back as the same run") {
  // --emit megatron writes a hybrid model's split as its pattern's '|'
  // segments (Megatron refuses a layout beside them) with the Mamba shape;
  // --from megatron reads it back as the same run.
  auto round_trip = [](const std::string& yaml, int gpus) {
    Result<RunConfig> c = ParseConfig(yaml, std::string(PPB_TEST_DATA_DIR) + "/run.yaml",
                                      CliOverrides());
    if (!c.ok()) FAIL(c.error().message);
    Result<PreparedRun> run = Prepare(*c);
    REQUIRE(run.ok());
    Result<Emission> e = Emit(Framework::Megatron, *c, run->program);
    if (!e.ok()) FAIL(e.error().message);
    INFO(e->text);
    CHECK(e->text.find("--pipeline-model-parallel-layout") == std::string::npos);
    CHECK(e->text.find("not expressed") == std::string::npos);
    LaunchInputs in = H100(gpus);
    Result<commands::LaunchConfig> back =
        commands::ReadLaunchConfig("megatron", "emitted.txt", e->text, in);
    if (!back.ok()) FAIL(back.error().message);
    Result<RunConfig> b = ParseConfig(back->yaml, "emitted.txt", CliOverrides());
    REQUIRE(b.ok());
    CHECK(b->strategy.layers_per_stage == c->strategy.layers_per_stage);
    CHECK(SimJson(*b) == SimJson(*c));
    return e->text;
  };
  const std::string hf = std::string(PPB_TEST_DATA_DIR) + "/../../configs/hf/";
  // Nemotron-H-56B, 4 ranks x 2 chunks, an uneven split of its 118 layers
  // (the embedding with the first, the head with the last).
  const std::string h56 = round_trip(
      "model: {hf_config: " + hf + "nemotron-h-56b.json}\n"
      "training: {seq_length: 8192, micro_batch_size: 1, global_batch_size: 64,\n"
      "           tensor_parallel: 8, data_parallel: 4}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 4, virtual_stages: 2, schedule: interleaved}\n"
      "strategy: {layers_per_chunk: [16, 15, 15, 15, 15, 15, 15, 14]}\n",
      128);
  CHECK_THAT(h56, Catch::Contains("--hybrid-layer-pattern \"M-M-M-M*-M-M-M-|M-M*-M-M-M-M-M*|"));
  CHECK_THAT(h56, Catch::Contains("--mamba-num-heads 256\n--mamba-head-dim 64\n"
                                  "--mamba-state-dim 256\n--mamba-num-groups 8\n"));
  // Nemotron 3 Nano: E blocks on 8-way expert parallelism, one stage.
  const std::string nano = round_trip(
      "model: {hf_config: " + hf + "nemotron-3-nano-30b-a3b.json}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 32,\n"
      "           tensor_parallel: 2, data_parallel: 8, expert_parallel: 8}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 1}\n",
      16);
  CHECK_THAT(nano, Catch::Contains("--hybrid-layer-pattern \"MEMEM*EMEMEM*E"));
  // Its MoE layers are the pattern's E layers: no --moe-layer-freq.
  CHECK(nano.find("--moe-layer-freq") == std::string::npos);
  // Models of 8 layers with MoE on 16 or 8 GPUs: `arch` the layer keys.
  auto job = [](const std::string& name, const std::string& arch, const std::string& pipeline) {
    return "model:\n  name: " + name + "\n  architecture:\n    hidden_size: 1024\n" +
           "    num_layers: 8\n    num_attention_heads: 8\n    vocab_size: 32000\n" + arch +
           "    moe: {num_experts: 16, top_k: 2, expert_ffn_hidden_size: 512}\n"
           "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 32,\n"
           "           tensor_parallel: 2, data_parallel: 4, expert_parallel: 4}\n"
           "hardware: {gpu: h100-sxm}\n" + pipeline;
  };
  // Gated DeltaNet (G) blocks with MoE, as Megatron's hybrid pattern writes
  // a Qwen3-Next-like model: the --linear-* shape flags.
  const std::string delta =
      "    num_key_value_heads: 2\n"
      "    deltanet: {key_heads: 8, value_heads: 16, key_dim: 64, value_dim: 64}\n";
  const std::string gdn =
      round_trip(job("gdn", delta + "    hybrid_layer_pattern: GEGEG*GE\n",
                     "pipeline: {stages: 2}\nstrategy: {layers_per_chunk: [5, 5]}\n"),
                 16);
  CHECK_THAT(gdn, Catch::Contains("--hybrid-layer-pattern \"GEGE|G*GE\""));
  CHECK_THAT(gdn, Catch::Contains("--linear-num-key-heads 8\n--linear-num-value-heads 16\n"
                                  "--linear-key-head-dim 64\n--linear-value-head-dim 64\n"
                                  "--linear-conv-kernel-dim 4\n"));
  // The same with a gated attention output (Qwen3-Next's, Megatron's
  // --attention-output-gate).
  const std::string gated = round_trip(
      job("gdn", delta + "    hybrid_layer_pattern: GEGEG*GE\n    attention_output_gate: true\n",
          "pipeline: {stages: 1}\n"),
      8);
  CHECK_THAT(gated, Catch::Contains("--attention-output-gate\n"));
  // MLA (+) blocks with MoE: the pattern writes them as +, with the MLA
  // flags.
  const std::string latent = round_trip(
      job("mla",
          "    hybrid_layer_pattern: M+MEM+ME\n"
          "    mla: {q_lora_rank: 256, kv_lora_rank: 128, qk_nope_head_dim: 64,\n"
          "          qk_rope_head_dim: 32, v_head_dim: 64}\n",
          "pipeline: {stages: 2}\nstrategy: {layers_per_chunk: [5, 5]}\n"),
      16);
  CHECK_THAT(latent, Catch::Contains("--hybrid-layer-pattern \"M+ME|M+ME\""));
  CHECK_THAT(latent, Catch::Contains("--multi-latent-attention\n--q-lora-rank 256\n"));
  // A gated DeltaNet beside each layer's MLP (Qwen3-Next's layers, the
  // GPT model's experimental attention variant): full attention every 4th.
  const std::string next = round_trip(
      job("next",
          delta + "    head_dim: 256\n    attention_output_gate: true\n"
                  "    layer_types: [linear_attention, linear_attention, linear_attention, "
                  "full_attention,\n                  linear_attention, linear_attention, "
                  "linear_attention, full_attention]\n",
          "pipeline: {stages: 1}\n"),
      8);
  CHECK_THAT(next, Catch::Contains("--experimental-attention-variant gdn\n"
                                   "--linear-attention-freq 4\n--linear-num-key-heads 8\n"));
  CHECK(next.find("--hybrid-layer-pattern") == std::string::npos);
  // A latent MoE (Nemotron 3 Super's moe_latent_size) with its pattern.
  const std::string super = round_trip(
      "model:\n  name: super\n  architecture:\n    hidden_size: 1024\n    num_layers: 4\n"
      "    num_attention_heads: 8\n    num_key_value_heads: 2\n    vocab_size: 32000\n"
      "    gated_mlp: false\n    hybrid_layer_pattern: ME*E\n"
      "    moe: {num_experts: 16, top_k: 4, expert_ffn_hidden_size: 512, latent_size: 256,\n"
      "          shared_ffn_hidden_size: 512}\n"
      "training: {seq_length: 4096, micro_batch_size: 1, global_batch_size: 32,\n"
      "           tensor_parallel: 2, data_parallel: 4, expert_parallel: 4}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 1}\n",
      8);
  CHECK_THAT(super, Catch::Contains("--moe-latent-size 256\n"));
  CHECK_THAT(latent, Catch::Contains("--multi-latent-attention\n--q-lora-rank 256\n"));
}

TEST_CASE("from megatron: what --emit megatron writes reads back as the same run") {
  int checked = 0;
  std::vector<std::string> skipped;
  for (const std::filesystem::path& f : test::ShippedConfigs()) {
    Result<RunConfig> c = LoadConfig(f.string(), CliOverrides());
    if (!c.ok()) continue;
    const std::string name = f.filename().string();
    if (c->derived.empty()) {
      skipped.push_back(name + ": layers not from an architecture");
      continue;
    }
    if (c->schedule != "1f1b" && c->schedule != "interleaved") {
      skipped.push_back(name + ": schedule " + c->schedule + " (Megatron runs 1F1B)");
      continue;
    }
    Result<PreparedRun> run = Prepare(*c);
    REQUIRE(run.ok());
    Result<Emission> e = Emit(Framework::Megatron, *c, run->program);
    if (!e.ok()) {
      skipped.push_back(name + ": " + e.error().message);
      continue;
    }
    if (!e->recompute_expressed || e->text.find("not expressed by these flags") != std::string::npos) {
      skipped.push_back(name + ": not expressed");
      continue;
    }
    // The machine: the config's own hardware and cluster blocks.
    LaunchInputs in;
    in.cluster_path = "machine.yaml";
    in.cluster_text = test::MachineOf(f);
    const Training& t = c->training;
    in.gpus = t.tp * t.cp * c->shape.p * t.dp;
    Result<commands::LaunchConfig> back = commands::ReadLaunchConfig("megatron", "emitted.txt", e->text, in);
    INFO(name << "\n" << e->text);
    if (!back.ok()) FAIL(back.error().message);
    Result<RunConfig> b = ParseConfig(back->yaml, "emitted.txt", CliOverrides());
    REQUIRE(b.ok());
    CHECK(SimJson(*b) == SimJson(*c));
    ++checked;
  }
  INFO(fmt::format("skipped: {}", fmt::join(skipped, "; ")));
  WARN(fmt::format("round trip: {} configs, {} left out", checked, skipped.size()));
  CHECK(checked >= 10);
}

}  // namespace ppb
