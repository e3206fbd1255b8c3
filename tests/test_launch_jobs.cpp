// --from megatron on launches that Slurm runs (issue 47): here-documents
// fed to sbatch, bash -c STRING under srun, #SBATCH lines and the world
// size of an srun launch (apps/input/launch_script.h, slurm_job.h).
// Megatron-LM's examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh (commit
// d98e8a6) reads as the run it submits.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "apps/commands/from_launch.h"
#include "apps/input/config.h"
#include "apps/input/launch_script.h"
#include "apps/input/slurm_job.h"
#include "tests/launch_helpers.h"

namespace ppb {
namespace {

std::vector<std::string> Texts(const std::vector<LaunchWord>& words) {
  std::vector<std::string> out;
  for (const LaunchWord& w : words) out.push_back(w.text);
  return out;
}

std::string Refused(const std::string& text) {
  Result<LaunchCommand> c = ReadLaunchScript("t.sh", text);
  REQUIRE_FALSE(c.ok());
  return c.error().message;
}

// The simulation of a launch given as text.
std::string TextJson(const std::string& text, std::optional<int> gpus = std::nullopt) {
  Result<commands::LaunchConfig> launch =
      commands::ReadLaunchConfig("megatron", "run.sh", text, test::H100(gpus));
  if (!launch.ok()) FAIL(launch.error().message);
  Result<RunConfig> c = ParseConfig(launch->yaml, "run.sh", CliOverrides());
  REQUIRE(c.ok());
  return test::SimJson(*c);
}

const char* const kArgs =
    "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 1024 "
    "--max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 32 "
    "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2";

}  // namespace

TEST_CASE("launch script: a here-document is a script for sbatch and bash, data elsewhere") {
  const std::string text =
      "A=7\n"                                                   // 1
      "cat > notes.txt <<EOF\n"                                 // 2
      "torchrun pretrain_gpt.py --never\n"                      // 3
      "EOF\n"                                                   // 4
      "sbatch <<EOF\n"                                          // 5
      "#!/bin/bash\n"                                           // 6
      "#SBATCH --nodes=2 --ntasks-per-node=8\n"                 // 7
      "#SBATCH --gres=gpu:h100:8   # a comment\n"               // 8
      "\n"                                                      // 9
      "B=\\$SLURM_NNODES\n"                                     // 10
      "torchrun --nnodes \\$B --nproc_per_node \\$SLURM_GPUS_ON_NODE \\\n"  // 11
      "  pretrain_gpt.py --a $A --b \"q\" --c '\\$A' --d x\\\\\\\\y 2>&1 | tee log\n"  // 12
      "#SBATCH --nodes=9\n"                                     // 13
      "EOF\n"                                                   // 14
      "echo done\n";                                            // 15
  Result<LaunchCommand> c = ReadLaunchScript("t.sh", text);
  if (!c.ok()) FAIL(c.error().message);
  // The outer shell expands $A and \$ -> $; quotes are literal in the body
  // and read by the job's shell; 2 of 2>&1 is no argument.
  CHECK(c->line == 11);
  CHECK(Texts(c->launcher) ==
        std::vector<std::string>{"torchrun", "--nnodes", "2", "--nproc_per_node", "8"});
  CHECK(Texts(c->args) ==
        std::vector<std::string>{"--a", "7", "--b", "q", "--c", "$A", "--d", "x\\y"});
  CHECK(c->args[1].line == 12);
  // Directives stop at the first command: line 13's is a comment.
  CHECK(Texts(c->scheduler) ==
        std::vector<std::string>{"#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=8",
                                 "#SBATCH --gres=gpu:h100:8"});
  CHECK(c->scheduler[2].line == 8);
  // The job's SLURM variables are set there, not in the submitting script.
  CHECK(c->environment.empty());

  // A quoted delimiter: the body as written; <<- drops leading tabs.
  Result<LaunchCommand> q = ReadLaunchScript(
      "t.sh", "X=1\nbash <<-'END'\n\tY=${X:-unset}\n\ttorchrun pretrain_gpt.py --y $Y\n\tEND\n");
  if (!q.ok()) FAIL(q.error().message);
  CHECK(Texts(q->args) == std::vector<std::string>{"--y", "1"});
  CHECK(q->line == 4);

  CHECK(Refused("sbatch <<EOF\ntorchrun pretrain_gpt.py\n") ==
        "t.sh:1: here-document: must end with a line holding only 'EOF'; got the end of the "
        "file");
  // A refusal inside the body names its line in the file.
  CHECK(Refused("sbatch <<EOF\nA=1\nfor i in 1; do :; done\nEOF\n") ==
        "t.sh:3: a for loop: must not be used in a launch ppb reads");
}

TEST_CASE("launch script: bash -c STRING under srun runs STRING with srun's words first") {
  const std::string text =
      "ARGS=(--x 1\n"                                            // 1
      "  --y 2)\n"                                               // 2
      "CMD=\"cd /w; export P=1; python /w/pretrain_gpt.py ${ARGS[@]}\"\n"  // 3
      "srun -N 2 --ntasks-per-node 4 --container-image=i bash -x -c \"$CMD\" 2>&1\n";  // 4
  Result<LaunchCommand> c = ReadLaunchScript("t.sh", text);
  if (!c.ok()) FAIL(c.error().message);
  CHECK(Texts(c->launcher) == std::vector<std::string>{"srun", "-N", "2", "--ntasks-per-node",
                                                       "4", "--container-image=i", "python"});
  CHECK(c->script == "/w/pretrain_gpt.py");
  CHECK(Texts(c->args) == std::vector<std::string>{"--x", "1", "--y", "2"});
  CHECK(c->line == 4);
  CHECK(Refused("X=$(hostname)\nbash -c \"$X\"\n") ==
        "t.sh:2: bash -c: must run a string the script sets; got the output of a command ppb "
        "does not run");
}

TEST_CASE("launch script: a launcher of another script is named when no launch is found") {
  // Megatron-LM's examples/mimo/scripts/run_mock_train.sh runs
  // examples/mimo/train.py, a multimodal model.
  CHECK(Refused("D=(--nproc_per_node 8)\necho hi\ntorchrun ${D[@]} examples/mimo/train.py "
                "--x 1\npython3 tools/b.py\n") ==
        "t.sh:3: the launch: must run a training script (torchrun ... pretrain_*.py ARGS); got "
        "torchrun ... examples/mimo/train.py (ppb simulates Megatron-LM's pretrain_gpt.py, "
        "pretrain_hybrid.py and pretrain_mamba.py)");
}

TEST_CASE("slurm job: the options that size a job, as sbatch and srun spell them") {
  std::vector<LaunchWord> words;
  for (const char* w : {"#SBATCH -N", "#SBATCH 4", "#SBATCH --gpus-per-node=h100:8",
                        "#SBATCH --job-name=x", "-n", "12", "--ntasks-per-node=3",
                        "--gres=nic:1,gpu:2", "-G8", "python", "-n", "5"}) {
    words.push_back(LaunchWord{w, 1, false});
  }
  const std::vector<JobOption> o = JobOptions(words, "srun");
  REQUIRE(o.size() == 6);
  CHECK(o[0].option == "#SBATCH -N");
  CHECK(o[0].value == "4");
  CHECK(o[1].key == "gpus-per-node");
  CHECK(o[1].value == "8");
  CHECK(o[2].option == "srun -n");
  CHECK(o[4].value == "2");  // --gres's GPUs
  CHECK(o[5].option == "srun -G");
  const JobSize s = ReadJobSize(o);
  CHECK(*s.nodes == 4);
  CHECK(*s.tasks == 12);  // -n wins over nodes x per node
  CHECK(*s.tasks_per_node == 3);
  CHECK(*s.gpus_per_node == 2);
  CHECK(*s.gpus == 8);
  CHECK_FALSE(JobOption{"nodes", "-N", "2-4", 1, false}.Count().has_value());
}

TEST_CASE("from megatron: an sbatch here-document and an srun launch are the torchrun run") {
  const std::string torchrun =
      "torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py " + std::string(kArgs) + "\n";
  const std::string expected = TextJson(torchrun);
  // srun starting 16 ranks itself: its tasks are the world.
  const std::string srun = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
                           "srun python pretrain_gpt.py " + std::string(kArgs) + "\n";
  CHECK(TextJson(srun) == expected);
  CHECK(TextJson("srun -n 16 python pretrain_gpt.py " + std::string(kArgs) + "\n") == expected);
  // The training command a string run by bash -c under srun in sbatch's
  // here-document, as Megatron-LM's megatron_fsdp example writes it.
  const std::string nested = "CMD=\"python pretrain_gpt.py " + std::string(kArgs) +
                             "\"\n"
                             "sbatch <<EOF\n"
                             "#SBATCH --nodes=2\n"
                             "#SBATCH --ntasks-per-node=8\n"
                             "srun --mpi=pmix bash -c \"${CMD}\" | tee \\${SLURM_JOB_ID}.log\n"
                             "EOF\n";
  CHECK(TextJson(nested) == expected);
  // torchrun under sbatch: --nnodes from SLURM_NNODES, which #SBATCH sets.
  CHECK(TextJson("#SBATCH -N 2\ntorchrun --nproc_per_node 8 --nnodes $SLURM_NNODES "
                 "pretrain_gpt.py " + std::string(kArgs) + "\n") == expected);

  // An srun whose tasks are not counted needs --gpus.
  Result<commands::LaunchConfig> none = commands::ReadLaunchConfig(
      "megatron", "run.sh", "srun python pretrain_gpt.py " + std::string(kArgs) + "\n",
      test::H100());
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().message ==
        "run.sh:1: srun: must give its tasks (-n/--ntasks or --ntasks-per-node, on its line or "
        "by #SBATCH), or give --gpus N (the world size); got neither");
  CHECK(TextJson("srun python pretrain_gpt.py " + std::string(kArgs) + "\n", 16) == expected);
}

TEST_CASE("from megatron: Megatron-LM's sbatch_mfsdp_deepseek_v3.sh reads as its job") {
  const std::string file =
      std::string(PPB_TEST_DATA_DIR) + "/megatron/sbatch_mfsdp_deepseek_v3.sh";
  const std::string text = test::ReadAll(file);
  // Its #SBATCH lines hold placeholders: the world comes from --gpus.
  Result<commands::LaunchConfig> as_is =
      commands::ReadLaunchConfig("megatron", file, text, test::H100());
  REQUIRE_FALSE(as_is.ok());
  CHECK(as_is.error().message ==
        file + ":208: #SBATCH --nodes: must be a positive integer (the ranks srun starts), or "
               "give --gpus N (the world size); got 'your_own_num_nodes'");
  Result<commands::LaunchConfig> run =
      commands::ReadLaunchConfig("megatron", file, text, test::H100(256));
  if (!run.ok()) FAIL(run.error().message);
  Result<RunConfig> c = ParseConfig(run->yaml, file, CliOverrides());
  if (!c.ok()) FAIL(c.error().message);
  // DeepSeek-V3 as the script's flags give it: 61 layers, 3 dense, MLA,
  // 256 experts of 2048 with one shared, top 8, one MTP layer; the
  // tokenizer's vocabulary padded to 129280.
  const Architecture& a = c->architecture;
  CHECK(a.layers == 61);
  CHECK(a.hidden == 7168);
  CHECK(a.experts == 256);
  CHECK(a.top_k == 8);
  CHECK(a.expert_ffn == 2048);
  CHECK(a.shared_ffn == 2048);
  CHECK(a.kv_lora_rank == 512);
  CHECK(a.q_lora_rank == 1536);
  CHECK(a.mtp_layers == 1);
  CHECK(a.vocab == 129280);
  CHECK_FALSE(a.IsMoeLayer(2));
  CHECK(a.IsMoeLayer(3));
  // Its parallel sizes and batch: EP 8 on 256 GPUs, 2048 samples of 4.
  CHECK(c->training.ep == 8);
  CHECK(c->training.tp == 1);
  CHECK(c->training.micro_batch == 4);
  CHECK(c->training.global_batch == 2048);
  CHECK(run->yaml.find("optim_grads_params") != std::string::npos);
}

}  // namespace ppb
