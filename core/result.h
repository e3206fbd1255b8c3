// Result<T>: either a value or an error message. Used at module edges instead
// of exceptions (LevelDB's Status idea). "Did the call work" is the Result;
// "what is the answer" is the value (which may itself describe an OOM or a
// deadlock as an outcome).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ppb {

// How a value the user gave appears after "; got " in an error message:
// whole when it has at most kMaxShown characters (bytes), else its first
// kShownPrefix and "... (N characters)", cut before a UTF-8 continuation
// byte, so a 60 KB layout or a binary blob is not echoed whole.
inline constexpr size_t kMaxShown = 80;
inline constexpr size_t kShownPrefix = 60;
inline std::string Abbreviate(std::string_view text) {
  if (text.size() <= kMaxShown) return std::string(text);
  size_t n = kShownPrefix;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return std::string(text.substr(0, n)) + "... (" +
         std::to_string(text.size()) + " characters)";
}

// An error with the config key it concerns (empty when none) and a message
// that states what was expected and what was given.
struct Error {
  std::string key;      // e.g. "pipeline.microbatch_group"; may be empty
  std::string message;  // e.g. "must be >= stages (4); got 2"
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // REQUIRES: ok()
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // REQUIRES: !ok()
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result without a value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : ok_(false), e_(std::move(e)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return e_; }

 private:
  bool ok_ = true;
  Error e_;
};

}  // namespace ppb
