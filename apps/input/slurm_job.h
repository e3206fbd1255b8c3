// The size of a Slurm job, read from the words that set it: sbatch's
// #SBATCH lines and command line, and srun's options (Slurm 24.05's sbatch
// and srun manuals): -N/--nodes, -n/--ntasks, --ntasks-per-node,
// --gpus-per-node (N or TYPE:N), --gres=gpu[:TYPE]:N and -G/--gpus. A word
// of an #SBATCH line is written "#SBATCH --nodes=2". Within apps/input:
// the launch script reader sets SLURM's variables from them, the Megatron
// reader the world size of an srun launch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/input/launch_script.h"

namespace ppb {

// One option that sizes the job, as written.
struct JobOption {
  std::string key;     // nodes, ntasks, ntasks-per-node, gpus-per-node, gpus
  std::string option;  // as the user wrote it: "#SBATCH --nodes", "srun -N"
  std::string value;   // its value; for gpus-per-node and --gres the count
  int line = 0;
  bool unknown = false;  // a command's output went into it
  // The value as a positive integer, or nullopt.
  std::optional<std::int64_t> Count() const;
};

// The sizing options among `words`, in order; `program` ("srun") names
// words that are not #SBATCH lines. Scanning stops at the first word that
// is neither an option nor an option's value (srun's command).
std::vector<JobOption> JobOptions(const std::vector<LaunchWord>& words,
                                  const std::string& program);

// The last value of each option that is a positive integer.
struct JobSize {
  std::optional<std::int64_t> nodes, tasks, tasks_per_node, gpus_per_node, gpus;
};
JobSize ReadJobSize(const std::vector<JobOption>& options);

}  // namespace ppb
