// torch action strings for ops (torch.distributed.pipelining's _Action
// notation "<stage><T><microbatch>", e.g. "2F0").
#include "core/program.h"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace ppb {
namespace {

// Reads a run of decimal digits from the front of `text` into `out` and
// removes it. False when there is no digit or the number overflows int32.
bool ConsumeNumber(std::string_view& text, std::int32_t& out) {
  size_t n = 0;
  while (n < text.size() && text[n] >= '0' && text[n] <= '9') ++n;
  if (n == 0) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + n, out);
  if (ec != std::errc() || ptr != text.data() + n) return false;
  text.remove_prefix(n);
  return true;
}

bool KindFromLetter(char c, OpKind& kind) {
  switch (c) {
    case 'F':
      kind = OpKind::F;
      return true;
    case 'B':
      kind = OpKind::B;
      return true;
    case 'I':
      kind = OpKind::I;
      return true;
    case 'W':
      kind = OpKind::W;
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string ActionString(const Op& op) {
  std::string s = std::to_string(op.stage.value);
  s += OpKindLetter(op.kind);
  s += std::to_string(op.mb.value);
  return s;
}

Result<Op> ParseAction(std::string_view text) {
  Error bad{"",
            "expected an action like 0F1 (stage, F/B/I/W, microbatch); "
            "got '" +
                std::string(text) + "'"};
  std::string_view rest = text;
  std::int32_t stage = 0;
  std::int32_t mb = 0;
  OpKind kind = OpKind::F;
  if (!ConsumeNumber(rest, stage)) return bad;
  if (rest.empty() || !KindFromLetter(rest.front(), kind)) return bad;
  rest.remove_prefix(1);
  if (!ConsumeNumber(rest, mb) || !rest.empty()) return bad;
  return Op{kind, StageId(stage), MicrobatchId(mb)};
}

}  // namespace ppb
