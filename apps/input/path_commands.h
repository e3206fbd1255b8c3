// The commands a launch script runs inside $(...) or `...` only to name
// paths, given as the words bash would pass them: `dirname P`, `basename P
// [SUFFIX]` (POSIX's string rules, coreutils 9), `readlink -f P` and
// `realpath P` (P absolute, its . and .. and links resolved where they
// exist), and `pwd` (ppb's working directory). They read nothing but paths,
// so the launch reader (apps/input/bash_shell.h) takes their output where
// bash would, as in `source "$(dirname "$(readlink -f "$0")")/env.sh"`; any
// other command's output stays unknown. Within apps/input.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ppb {

// The output of `words` (without its trailing newline), or nullopt when
// they are not one of these commands with the operands it takes.
std::optional<std::string> PathCommand(const std::vector<std::string>& words);

}  // namespace ppb
