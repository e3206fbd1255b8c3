// Unit strings to integer units (apps/input/units.h).
#include "apps/input/units.h"

#include <cstdint>
#include <limits>
#include <span>
#include <string>

namespace ppb {
namespace {

__extension__ using U128 = unsigned __int128;

// A unit is worth num / den of the base unit (ns, B or B/s).
struct Unit {
  std::string_view name;
  std::uint64_t num;
  std::uint64_t den;
};

constexpr std::uint64_t kKi = 1024;
constexpr std::uint64_t kK = 1000;

// clang-format off
constexpr Unit kTimeUnits[] = {
    {"ns", 1, 1},
    {"us", kK, 1},
    {"\xC2\xB5s", kK, 1},  // µs (micro sign)
    {"\xCE\xBCs", kK, 1},  // μs (Greek mu)
    {"ms", kK * kK, 1},
    {"s", kK * kK * kK, 1},
};

constexpr Unit kMemoryUnits[] = {
    {"B", 1, 1},
    {"KB", kK, 1},
    {"MB", kK * kK, 1},
    {"GB", kK * kK * kK, 1},
    {"TB", kK * kK * kK * kK, 1},
    {"KiB", kKi, 1},
    {"MiB", kKi * kKi, 1},
    {"GiB", kKi * kKi * kKi, 1},
    {"TiB", kKi * kKi * kKi * kKi, 1},
};

constexpr Unit kBandwidthUnits[] = {
    {"B/s", 1, 1},
    {"KB/s", kK, 1},
    {"MB/s", kK * kK, 1},
    {"GB/s", kK * kK * kK, 1},
    {"TB/s", kK * kK * kK * kK, 1},
    {"KiB/s", kKi, 1},
    {"MiB/s", kKi * kKi, 1},
    {"GiB/s", kKi * kKi * kKi, 1},
    {"TiB/s", kKi * kKi * kKi * kKi, 1},
    {"Kbit/s", kK, 8},
    {"Mbit/s", kK * kK, 8},
    {"Gbit/s", kK * kK * kK, 8},
    {"Tbit/s", kK * kK * kK * kK, 8},
};
// clang-format on

struct Quantity {
  std::string_view noun;       // "duration"
  std::string_view unit_list;  // "ns, us, ms, s"
  std::string_view base;       // "ns"
  std::span<const Unit> units;
};

constexpr Quantity kDuration{"duration", "ns, us, ms, s", "ns", kTimeUnits};
constexpr Quantity kMemory{"size", "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB", "B",
                           kMemoryUnits};
constexpr Quantity kBandwidth{"bandwidth",
                              "B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, "
                              "GiB/s, TiB/s, Kbit/s, Mbit/s, Gbit/s, Tbit/s",
                              "B/s", kBandwidthUnits};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

Error Expected(const Quantity& q, std::string_view given,
               std::string_view why = {}) {
  std::string msg = "must be a ";
  msg += q.noun;
  msg += " with a unit (";
  msg += q.unit_list;
  msg += "); got ";
  msg += given.empty() ? std::string("an empty string") : Abbreviate(given);
  if (!why.empty()) {
    msg += " (";
    msg += why;
    msg += ")";
  }
  return Error{"", msg};
}

// A decimal number d * 10^exp10 with d < 10^19 exactly as written (digits
// beyond the 19th significant one dropped).
struct Decimal {
  std::uint64_t digits = 0;
  std::int64_t exp10 = 0;
};

// Parses [0-9]*(.[0-9]*)?([eE][+-]?[0-9]+)? at the start of `s` (at least one
// mantissa digit); advances `s` past it. False when there is no number.
bool ParseDecimal(std::string_view& s, Decimal& out) {
  std::string mantissa;  // significant digits, leading zeros removed
  std::int64_t exp10 = 0;
  size_t i = 0;
  bool any_digit = false;
  for (; i < s.size() && IsDigit(s[i]); ++i) {
    any_digit = true;
    if (mantissa.empty() && s[i] == '0') continue;
    mantissa += s[i];
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    for (; i < s.size() && IsDigit(s[i]); ++i) {
      any_digit = true;
      --exp10;
      if (mantissa.empty() && s[i] == '0') continue;
      mantissa += s[i];
    }
  }
  if (!any_digit) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    bool negative = false;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) {
      negative = s[j] == '-';
      ++j;
    }
    if (j < s.size() && IsDigit(s[j])) {
      std::int64_t e = 0;
      for (; j < s.size() && IsDigit(s[j]); ++j) {
        // Saturate: any exponent beyond 10^6 already over- or underflows.
        if (e < 1000000) e = e * 10 + (s[j] - '0');
      }
      exp10 += negative ? -e : e;
      i = j;
    }
  }
  constexpr size_t kMaxDigits = 19;  // 10^19 - 1 fits in uint64
  if (mantissa.size() > kMaxDigits) {
    exp10 += static_cast<std::int64_t>(mantissa.size() - kMaxDigits);
    mantissa.resize(kMaxDigits);
  }
  while (!mantissa.empty() && mantissa.back() == '0') {
    mantissa.pop_back();
    ++exp10;
  }
  out.digits = 0;
  for (char c : mantissa) out.digits = out.digits * 10 + (c - '0');
  out.exp10 = mantissa.empty() ? 0 : exp10;
  s.remove_prefix(i);
  return true;
}

Result<std::int64_t> ParseQuantity(std::string_view text, const Quantity& q) {
  const std::string_view given = Trim(text);
  std::string_view s = given;
  if (!s.empty() && s.front() == '-') {
    return Error{"", "must be a non-negative " + std::string(q.noun) +
                         "; got " + Abbreviate(given)};
  }
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  Decimal d;
  if (!ParseDecimal(s, d)) return Expected(q, given);
  const std::string_view unit_name = Trim(s);
  if (unit_name.empty()) return Expected(q, given, "no unit");
  const Unit* unit = nullptr;
  for (const Unit& u : q.units) {
    if (u.name == unit_name) unit = &u;
  }
  if (unit == nullptr) {
    return Expected(q, given,
                    "unknown unit \"" + Abbreviate(unit_name) + "\"");
  }

  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const Error too_large{"", "must be at most " + std::to_string(kMax) + " " +
                                std::string(q.base) + "; got " +
                                Abbreviate(given)};
  // value = digits * 10^exp10 * num / den, rounded to nearest.
  U128 n = static_cast<U128>(d.digits) * unit->num;  // < 10^19 * 2^40
  U128 den = unit->den;
  if (n == 0) return std::int64_t{0};
  if (d.exp10 >= 0) {
    const U128 cap = static_cast<U128>(kMax) * den + den;
    for (std::int64_t k = 0; k < d.exp10; ++k) {
      if (n > cap) return too_large;
      n *= 10;
    }
  } else {
    // n < 2^104 < 10^32, so a divisor of den * 10^37 or more rounds to 0;
    // den * 10^36 still fits in 128 bits.
    if (d.exp10 < -36) return std::int64_t{0};
    for (std::int64_t k = 0; k < -d.exp10; ++k) den *= 10;
  }
  const U128 rounded = (n + den / 2) / den;
  if (rounded > static_cast<U128>(kMax)) return too_large;
  return static_cast<std::int64_t>(rounded);
}

}  // namespace

Result<Nanos> ParseDuration(std::string_view text) {
  return ParseQuantity(text, kDuration);
}

Result<Bytes> ParseBytes(std::string_view text) {
  return ParseQuantity(text, kMemory);
}

Result<BytesPerSec> ParseBandwidth(std::string_view text) {
  return ParseQuantity(text, kBandwidth);
}

}  // namespace ppb
