// ForEachLine: the lines of a text, one at a time, for the readers of
// launch scripts, logs and emitted flags (apps/input/megatron_*.cpp,
// launch_script.cpp, apps/commands/from_launch.cpp).
#pragma once

#include <cstddef>
#include <string_view>

namespace ppb {

// Calls fn(line, number) for each line of `text` in order: without its
// '\n', numbered from 1; a last line without '\n' counts, an empty text has
// none. fn returns false to stop.
template <class Fn>
void ForEachLine(std::string_view text, Fn fn) {
  size_t pos = 0;
  int number = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    if (!fn(text.substr(pos, nl - pos), ++number)) return;
    pos = nl + 1;
  }
}

}  // namespace ppb
