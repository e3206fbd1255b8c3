// ReadToml (apps/input/toml_reader.h): one pass over the text, by the
// grammar of TOML 1.0 (toml.io/en/v1.0.0) for the forms the header lists.
#include "apps/input/toml_reader.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace ppb {
namespace {

constexpr int kMaxDepth = 64;

bool IsBare(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
}

class Reader {
 public:
  Reader(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  Result<TomlDocument> Read() {
    while (true) {
      SkipBlank();
      if (AtEnd()) break;
      const char c = text_[pos_];
      if (c == '\n') {
        Next();
        continue;
      }
      if (c == '#') {
        SkipComment();
        continue;
      }
      if (c == '[') {
        if (Status st = Header(); !st.ok()) return st.error();
      } else {
        if (Status st = KeyValue(table_); !st.ok()) return st.error();
      }
      if (Status st = EndOfLine(); !st.ok()) return st.error();
    }
    return std::move(doc_);
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  void Next() {
    if (text_[pos_] == '\n') ++line_;
    ++pos_;
  }
  void SkipBlank() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\r')) ++pos_;
  }
  void SkipComment() {
    while (!AtEnd() && Peek() != '\n') ++pos_;
  }
  // Blanks, newlines and comments (inside arrays).
  void SkipSpace() {
    while (!AtEnd()) {
      SkipBlank();
      if (Peek() == '#') {
        SkipComment();
      } else if (Peek() == '\n') {
        Next();
      } else {
        return;
      }
    }
  }

  Error Fail(const std::string& what) const {
    return Error{"", fmt::format("{}:{}: {}", path_, line_, what)};
  }
  Error FailKey(const std::string& key, const std::string& what) const {
    return Error{key, fmt::format("{}:{}: {}: {}", path_, line_, key, what)};
  }
  std::string Rest() const {
    size_t end = pos_;
    while (end < text_.size() && text_[end] != '\n' && end - pos_ < 40) ++end;
    return "'" + std::string(text_.substr(pos_, end - pos_)) + "'";
  }

  Status EndOfLine() {
    SkipBlank();
    if (AtEnd()) return Status();
    if (Peek() == '#') {
      SkipComment();
      return Status();
    }
    if (Peek() == '\n') return Status();
    return Fail("expected the end of the line; got " + Rest());
  }

  // key = bare | "basic" | 'literal', joined by dots.
  Result<std::vector<std::string>> Key() {
    std::vector<std::string> parts;
    while (true) {
      SkipBlank();
      const char c = Peek();
      if (c == '"' || c == '\'') {
        if (Peek(1) == c && Peek(2) == c) return Fail("a key must not be a multi-line string");
        Result<std::string> s = String("");
        if (!s.ok()) return s.error();
        parts.push_back(std::move(*s));
      } else if (IsBare(c)) {
        const size_t start = pos_;
        while (!AtEnd() && IsBare(Peek())) ++pos_;
        parts.emplace_back(text_.substr(start, pos_ - start));
      } else {
        return Fail("expected a key (letters, digits, '_', '-' or a quoted string); got " + Rest());
      }
      SkipBlank();
      if (Peek() != '.') return parts;
      ++pos_;
    }
  }

  static std::string Join(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : ".") + p;
    return out;
  }

  Status Header() {
    const int at = line_;
    ++pos_;
    if (Peek() == '[') {
      return Fail(
          "arrays of tables ([[...]]) are not read: torchtitan's job config has "
          "none; got " +
          Rest());
    }
    Result<std::vector<std::string>> key = Key();
    if (!key.ok()) return key.error();
    SkipBlank();
    if (Peek() != ']') return Fail("expected ']' to close the table header; got " + Rest());
    ++pos_;
    const std::string name = Join(*key);
    if (doc_.tables.count(name) != 0) {
      return Fail(fmt::format("[{}]: must be given once (TOML); it was also given on line {}", name,
                              doc_.tables.at(name)));
    }
    if (doc_.values.count(name) != 0) {
      return Fail(
          fmt::format("[{}]: is already a value (line {})", name, doc_.values.at(name).line));
    }
    doc_.tables[name] = at;
    table_ = name;
    return Status();
  }

  // key = value under `prefix`.
  Status KeyValue(const std::string& prefix) {
    Result<std::vector<std::string>> key = Key();
    if (!key.ok()) return key.error();
    const std::string name = (prefix.empty() ? "" : prefix + ".") + Join(*key);
    SkipBlank();
    if (Peek() != '=') return FailKey(name, "expected '=' after the key; got " + Rest());
    ++pos_;
    SkipBlank();
    if (Peek() == '{') return InlineTable(name, 0);
    Result<TomlValue> v = Value(name, 0);
    if (!v.ok()) return v.error();
    return Store(name, std::move(*v));
  }

  Status Store(const std::string& name, TomlValue v) {
    if (auto it = doc_.values.find(name); it != doc_.values.end()) {
      return FailKey(name, fmt::format("must be given once (TOML); it was also given on line {}",
                                       it->second.line));
    }
    if (doc_.tables.count(name) != 0) {
      return FailKey(name, fmt::format("is already a table (line {})", doc_.tables.at(name)));
    }
    // A value must not sit where a table is: "a = 1" then "a.b = 2".
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
      if (auto it = doc_.values.find(name.substr(0, dot)); it != doc_.values.end()) {
        return FailKey(name, fmt::format("{} is a value (line {}), not a table",
                                         name.substr(0, dot), it->second.line));
      }
    }
    doc_.values.emplace(name, std::move(v));
    return Status();
  }

  Status InlineTable(const std::string& name, int depth) {
    if (depth >= kMaxDepth) return FailKey(name, "nests more than 64 deep");
    ++pos_;
    SkipBlank();
    if (Peek() == '}') {
      ++pos_;
      doc_.tables.emplace(name, line_);
      return Status();
    }
    while (true) {
      Result<std::vector<std::string>> key = Key();
      if (!key.ok()) return key.error();
      const std::string inner = name + "." + Join(*key);
      SkipBlank();
      if (Peek() != '=') return FailKey(inner, "expected '=' after the key; got " + Rest());
      ++pos_;
      SkipBlank();
      if (Peek() == '{') {
        if (Status st = InlineTable(inner, depth + 1); !st.ok()) return st;
      } else {
        Result<TomlValue> v = Value(inner, depth + 1);
        if (!v.ok()) return v.error();
        if (Status st = Store(inner, std::move(*v)); !st.ok()) return st;
      }
      SkipBlank();
      if (Peek() == ',') {
        ++pos_;
        SkipBlank();
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return Status();
      }
      return FailKey(name, "expected ',' or '}' in the inline table (on one line); got " + Rest());
    }
  }

  Result<TomlValue> Value(const std::string& name, int depth) {
    TomlValue v;
    v.line = line_;
    const char c = Peek();
    if (AtEnd() || c == '\n' || c == '#') return FailKey(name, "expected a value; got nothing");
    if (c == '"' || c == '\'') {
      if (Peek(1) == c && Peek(2) == c) {
        return FailKey(name, "multi-line strings are not read; write the value on one line");
      }
      Result<std::string> s = String(name);
      if (!s.ok()) return s.error();
      v.kind = TomlValue::Kind::String;
      v.s = std::move(*s);
      return v;
    }
    if (c == '[') {
      if (depth >= kMaxDepth) return FailKey(name, "nests more than 64 deep");
      v.kind = TomlValue::Kind::Array;
      ++pos_;
      while (true) {
        SkipSpace();
        if (AtEnd())
          return FailKey(name, "expected ']' to close the array; got the end of the file");
        if (Peek() == ']') {
          ++pos_;
          return v;
        }
        if (Peek() == '{') return FailKey(name, "inline tables inside arrays are not read");
        Result<TomlValue> item = Value(name, depth + 1);
        if (!item.ok()) return item;
        v.items.push_back(std::move(*item));
        SkipSpace();
        if (AtEnd())
          return FailKey(name, "expected ']' to close the array; got the end of the file");
        if (Peek() == ',') {
          ++pos_;
          continue;
        }
        if (Peek() == ']') {
          ++pos_;
          return v;
        }
        return FailKey(name, "expected ',' or ']' in the array; got " + Rest());
      }
    }
    // A word: a boolean, a number, or something TOML does not have.
    const size_t start = pos_;
    while (!AtEnd() && (IsBare(Peek()) || Peek() == '+' || Peek() == '.' || Peek() == ':')) {
      ++pos_;
    }
    const std::string word(text_.substr(start, pos_ - start));
    if (word == "true" || word == "false") {
      v.kind = TomlValue::Kind::Bool;
      v.b = word == "true";
      return v;
    }
    return Number(name, word, v);
  }

  Result<TomlValue> Number(const std::string& name, const std::string& word, TomlValue v) {
    const std::string got = word.empty() ? Rest() : "'" + word + "'";
    auto bad = [&](const std::string& why) {
      return FailKey(name, "expected a string, a number, true, false or an array" +
                               (why.empty() ? "" : " (" + why + ")") + "; got " + got);
    };
    if (word.empty()) return bad("");
    if (word.find(':') != std::string::npos ||
        (word.size() >= 10 && word[4] == '-' && word[7] == '-')) {
      return bad("dates and times are not read");
    }
    size_t k = 0;
    bool negative = false;
    if (word[0] == '+' || word[0] == '-') {
      negative = word[0] == '-';
      k = 1;
    }
    const std::string body = word.substr(k);
    if (body == "inf" || body == "nan") {
      v.kind = TomlValue::Kind::Float;
      v.f = body == "inf" ? std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::quiet_NaN();
      if (negative) v.f = -v.f;
      return v;
    }
    // Underscores only between digits.
    std::string digits;
    for (size_t j = 0; j < body.size(); ++j) {
      if (body[j] == '_') {
        if (j == 0 || j + 1 == body.size() ||
            std::isalnum(static_cast<unsigned char>(body[j - 1])) == 0 ||
            std::isalnum(static_cast<unsigned char>(body[j + 1])) == 0) {
          return bad("'_' must sit between digits");
        }
        continue;
      }
      digits += body[j];
    }
    if (digits.size() > 2 && digits[0] == '0' &&
        (digits[1] == 'x' || digits[1] == 'o' || digits[1] == 'b')) {
      if (k != 0) return bad("a hexadecimal, octal or binary integer takes no sign");
      const int base = digits[1] == 'x' ? 16 : digits[1] == 'o' ? 8 : 2;
      std::uint64_t u = 0;
      const char* b = digits.data() + 2;
      const char* e = digits.data() + digits.size();
      const auto [ptr, ec] = std::from_chars(b, e, u, base);
      if (ec != std::errc() || ptr != e ||
          u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return bad(ec == std::errc::result_out_of_range || ec == std::errc() ? "out of range" : "");
      }
      v.i = static_cast<std::int64_t>(u);
      return v;
    }
    const bool is_float = digits.find_first_of(".eE") != std::string::npos;
    // No leading zeros: "07", "00.5".
    if (digits.size() > 1 && digits[0] == '0' &&
        std::isdigit(static_cast<unsigned char>(digits[1]))) {
      return bad("a leading zero");
    }
    if (!is_float) {
      for (char d : digits) {
        if (std::isdigit(static_cast<unsigned char>(d)) == 0) return bad("");
      }
      std::uint64_t u = 0;
      const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u);
      const std::uint64_t limit =
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + (negative ? 1 : 0);
      if (ec != std::errc() || ptr != digits.data() + digits.size() || u > limit) {
        return bad("outside the 64-bit integers");
      }
      v.i = negative ? static_cast<std::int64_t>(0 - u) : static_cast<std::int64_t>(u);
      return v;
    }
    // A float: digits, then .digits and/or e[+-]digits; a '.' needs digits
    // on both sides.
    size_t j = 0;
    auto run = [&]() {
      const size_t s = j;
      while (j < digits.size() && std::isdigit(static_cast<unsigned char>(digits[j])) != 0) ++j;
      return j > s;
    };
    if (!run()) return bad("");
    if (j < digits.size() && digits[j] == '.') {
      ++j;
      if (!run()) return bad("a '.' needs digits on both sides");
    }
    if (j < digits.size() && (digits[j] == 'e' || digits[j] == 'E')) {
      ++j;
      if (j < digits.size() && (digits[j] == '+' || digits[j] == '-')) ++j;
      if (!run()) return bad("");
    }
    if (j != digits.size()) return bad("");
    double x = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), x);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || !std::isfinite(x)) {
      return bad("out of range");
    }
    v.kind = TomlValue::Kind::Float;
    v.f = negative ? -x : x;
    return v;
  }

  static void PutUtf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // A one-line basic or literal string; pos_ at its opening quote. Errors
  // name `key` when it is not empty.
  Result<std::string> String(const std::string& key) {
    auto fail = [&](const std::string& what) {
      return key.empty() ? Fail(what) : FailKey(key, what);
    };
    const char q = Peek();
    ++pos_;
    std::string out;
    while (true) {
      if (AtEnd() || Peek() == '\n') {
        return fail(fmt::format("expected {} to close the string; got the end of the line", q));
      }
      const char c = Peek();
      ++pos_;
      if (c == q) return out;
      if (c != '\\' || q == '\'') {
        out += c;
        continue;
      }
      const char e = Peek();
      ++pos_;
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case 'b':
          out += '\b';
          break;
        case 't':
          out += '\t';
          break;
        case 'n':
          out += '\n';
          break;
        case 'f':
          out += '\f';
          break;
        case 'r':
          out += '\r';
          break;
        case 'u':
        case 'U': {
          const size_t n = e == 'u' ? 4 : 8;
          std::uint32_t cp = 0;
          const char* b = text_.data() + pos_;
          if (pos_ + n > text_.size()) return fail("expected hex digits after \\u; got the end");
          const auto [ptr, ec] = std::from_chars(b, b + n, cp, 16);
          if (ec != std::errc() || ptr != b + n || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
            return fail(fmt::format("expected a Unicode scalar value after \\{}; got '{}'", e,
                                    std::string_view(b, n)));
          }
          pos_ += n;
          PutUtf8(out, cp);
          break;
        }
        default:
          return fail(
              fmt::format("expected an escape (\\\" \\\\ \\b \\t \\n \\f \\r \\u \\U); "
                          "got '\\{}'",
                          e == '\n' || e == '\0' ? ' ' : e));
      }
    }
  }

  const std::string& path_;
  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  std::string table_;
  TomlDocument doc_;
};

}  // namespace

std::string DescribeToml(const TomlValue& v) {
  switch (v.kind) {
    case TomlValue::Kind::String:
      return "the string \"" + v.s + "\"";
    case TomlValue::Kind::Int:
      return fmt::format("the integer {}", v.i);
    case TomlValue::Kind::Float:
      return fmt::format("the float {}", v.f);
    case TomlValue::Kind::Bool:
      return v.b ? "true" : "false";
    case TomlValue::Kind::Array:
      return fmt::format("an array of {}", v.items.size());
  }
  return "a value";
}

Result<TomlDocument> ReadToml(const std::string& path, std::string_view text) {
  return Reader(path, text).Read();
}

}  // namespace ppb
