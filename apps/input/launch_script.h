// A launch script read without running it: the subset of bash that
// Megatron-LM's example launches use (examples/llama/train_llama3_8b_h100_fp8.sh,
// examples/gpt3/train_gpt3_175b_distributed.sh, examples/megatron_fsdp/
// train_llama3_8b_fsdp_h100_fp8.sh, examples/mixtral/..., examples/gptoss/
// 02_train.sh at Megatron-LM d98e8a6, core 0.20.0), evaluated to find the
// one command that starts training (`torchrun ... pretrain_*.py ARGS`,
// `python -m torch.distributed.run ...` or `python pretrain_*.py ...`).
//
// What it evaluates (bash's rules, man bash "EXPANSION"):
//   - assignments NAME=word, NAME+=word, export/local/readonly NAME=word,
//     unset NAME; arrays NAME=( words ), NAME+=( words ) over lines, with
//     comments; ${NAME[@]}, ${NAME[*]}, ${NAME[i]}, ${#NAME[@]};
//   - $NAME, ${NAME}, ${NAME:-w}, ${NAME-w}, ${NAME:=w}, ${NAME:+w},
//     ${#NAME}, $1..$9 and $# (no arguments are given: unset and 0), $0;
//     $((...)) over + - * / % and parentheses; quotes, backslashes, line
//     continuations, word splitting of unquoted expansions;
//   - if/elif/else/fi, && and || on [[ ]], [ ] and test: == = != (glob
//     patterns in [[ ]]), -z -n, -eq -ne -lt -le -gt -ge, !, and file tests
//     (-f -d -e -r -s -x), which are taken as true: the launch is read as it
//     runs where its files exist;
//   - while/until loops and case statements whose body never runs (the
//     argument loop `while [[ $# -gt 0 ]]` with no arguments), and case
//     statements on known values.
// Every other command (mkdir, echo, cd, set, exit in a branch not taken, ...)
// is not run and is taken to succeed. The script runs with no environment:
// a variable it has not set (the scheduler's SLURM_NNODES, $PWD) is read as
// unset, and listed in `environment`. A command substitution $(...) or
// `...` is not run: its value is unknown, and only an argument that ppb
// reads is refused for it; but for the commands that only name paths
// (dirname, basename, readlink -f, realpath, pwd: apps/input/
// path_commands.h), whose output ppb gives. ${BASH_SOURCE[0]} is the file
// being read.
//
// Scripts within the script, read as bash runs them:
//   - a here-document fed to sbatch, bash or sh (sbatch <<EOF ... EOF) is a
//     script; unquoted delimiters expand its body first (man bash "Here
//     Documents"); other commands' here-documents are data, not read;
//   - bash -c STRING and sh -c STRING, under srun say: STRING is a script
//     whose commands each rank starts with the words before `bash`;
//   - #SBATCH lines opening the file or sbatch's here-document (sbatch reads
//     them up to the first command) and sbatch's own options: the job's
//     size (apps/input/slurm_job.h), which sets SLURM_NNODES,
//     SLURM_JOB_NUM_NODES, SLURM_NTASKS, SLURM_NTASKS_PER_NODE and
//     SLURM_GPUS_ON_NODE for the job's commands as Slurm does;
//   - source FILE and . FILE (apps/input/sourced_file.h finds FILE): its
//     commands run in the script's shell; it must not hold the launch, and
//     its refusals are placed at the source line, naming FILE's line.
//
// Refused, naming the line: a loop whose body would run, for loops,
// functions, subshells and groups, eval, return in a sourced file, other
// ${...} forms, a test on an unknown value, no launch command or two.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace ppb {

// One word of the launch as bash passes it, with the script line where it
// was written (an array element keeps the line of its array's entry).
struct LaunchWord {
  std::string text;
  int line = 0;
  // A command substitution's value went into it: the text is not what runs.
  bool unknown = false;
};

struct LaunchCommand {
  int line = 0;                      // where the command starts
  std::vector<LaunchWord> launcher;  // the words before the training script
  std::string script;                // "pretrain_gpt.py" as written
  std::vector<LaunchWord> args;      // the training script's arguments
  // The job's #SBATCH lines ("#SBATCH --nodes=2", each word with its line)
  // and sbatch's options, when sbatch runs the launch.
  std::vector<LaunchWord> scheduler;
  std::vector<std::string> environment;  // variables read while unset, sorted
};

// An arguments file: "--flag value" lines (what `ppb-sim --emit megatron`
// writes), '#' comments, quotes and line continuations as in a script; no
// variables or commands. The result has no launcher and no script.
Result<LaunchCommand> ReadArgumentsFile(std::string_view path, std::string_view text);
// Whether `text` is an arguments file: its first word (past blank lines and
// comments) is a --flag.
bool IsArgumentsFile(std::string_view text);

// The launch command of `text` (the script at `path`, named in errors as
// "path:line: what: must be ...; got ...").
Result<LaunchCommand> ReadLaunchScript(std::string_view path, std::string_view text);

}  // namespace ppb
