// Basic value types shared by every ppb module.
//
// Time is integer nanoseconds, memory integer bytes, bandwidth integer
// bytes/second. Only the config loader (apps/) parses unit strings; nothing in
// core/ does I/O.
#pragma once

#include <compare>
#include <cstdint>
#include <string_view>

namespace ppb {

using Nanos = std::int64_t;        // durations and instants, nanoseconds
using Bytes = std::int64_t;        // memory sizes, bytes
using BytesPerSec = std::int64_t;  // bandwidth, bytes per second

// A small strong integer id. Tag only distinguishes the kinds at compile time.
template <class Tag>
struct Id {
  std::int32_t value = 0;
  constexpr Id() = default;
  constexpr explicit Id(std::int32_t v) : value(v) {}
  constexpr auto operator<=>(const Id&) const = default;
};

using StageId = Id<struct StageTag>;            // global stage s = chunk * p + rank
using DeviceId = Id<struct DeviceTag>;          // pipeline rank / physical device
using MicrobatchId = Id<struct MicrobatchTag>;  // 0-based micro-batch index

// Kinds of compute operation a device executes (torch's action letters).
//   F: forward of one stage for one micro-batch.
//   B: full backward (input gradient and weight gradient fused).
//   I: input-gradient half of a split backward.
//   W: weight-gradient half of a split backward; needs the matching I.
enum class OpKind : std::uint8_t { F = 0, B = 1, I = 2, W = 3 };

constexpr char OpKindLetter(OpKind k) {
  switch (k) {
    case OpKind::F:
      return 'F';
    case OpKind::B:
      return 'B';
    case OpKind::I:
      return 'I';
    case OpKind::W:
      return 'W';
  }
  return '?';
}

// One compute operation of a program.
//
// `paired` joins an F to the backward (B or I) that follows it on the same
// device into one overlapped F+B op (DualPipeV, DeepSeek-V3 §3.2.1; torch's
// OVERLAP_F_B action): the two start together once both are ready and take
// F + B less PipelineSpec::fb_overlap_ppm of the shorter one. Set on the F.
struct Op {
  OpKind kind = OpKind::F;
  StageId stage;
  MicrobatchId mb;
  bool paired = false;
  constexpr bool operator==(const Op&) const = default;
};

// Nanoseconds to milliseconds for reporting only (never used in the engine).
constexpr double ToMs(Nanos t) { return static_cast<double>(t) / 1e6; }

}  // namespace ppb
