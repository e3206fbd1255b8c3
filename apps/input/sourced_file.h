// The file a launch script's `source FILE` (or `. FILE`) reads, found as
// bash finds it: FILE itself when absolute; else relative to the working
// directory, ppb's own (the script run as `bash PATH` from where ppb runs,
// so that $0 is PATH as given), or failing that the script's folder (the
// script run from there). bash would search PATH first for a name without
// a slash; ppb gives the script no PATH. Within apps/input: the launch
// script reader (apps/input/launch_script.cpp) runs the file's commands in
// the script's shell.
#pragma once

#include <string>

#include <cstdint>

#include "core/result.h"

namespace ppb {

struct SourcedFile {
  std::string path;  // as found: FILE, or the script's folder joined with it
  std::string text;
};

// The largest file sourced (a launch's environment file is a few KiB).
inline constexpr std::uintmax_t kMaxSourcedBytes = 1 << 20;

// The file `name` names for the script at `script_path`, when it is a
// regular file of at most kMaxSourcedBytes that can be read; else an error
// message (no key, no place: the caller puts it at the source command)
// naming the paths tried and why.
Result<SourcedFile> ReadSourcedFile(const std::string& script_path, const std::string& name);

}  // namespace ppb
