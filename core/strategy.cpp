#include "core/strategy.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ppb {
namespace {

// The Megatron layout symbol of a layer.
char LayoutSymbol(LayerKind kind) {
  switch (kind) {
    case LayerKind::Embedding:
      return 'E';
    case LayerKind::Head:
      return 'L';
    case LayerKind::Mtp:
      return 'm';
    case LayerKind::Decoder:
    case LayerKind::Moe:
    case LayerKind::Other:
      return 't';
  }
  return 't';
}

std::string SymbolName(char symbol) {
  switch (symbol) {
    case 'E':
      return "'E' (embedding)";
    case 'L':
      return "'L' (loss/head)";
    case 'm':
      return "'m' (MTP layer)";
    default:
      return "'t' (decoder layer)";
  }
}

// Deepest nesting of parentheses a layout may have; real layouts use one or
// two levels.
constexpr int kMaxLayoutDepth = 100;

// One symbol of an expanded layout: a layer symbol or the separator '|', with
// its 1-based position in the original string.
struct Token {
  char symbol;
  size_t position;
};

// Recursive-descent expansion of a layout string:
//   sequence := item*        item := atom ('*' digits)?
//   atom     := 'E' | 't' | 'm' | 'L' | '|' | '(' sequence ')'
// with ',' and whitespace ignored between items. Expansion stops with an
// error once it yields more than `limit` tokens (a layout that matches the
// model never does), so "t*1000000000" cannot exhaust memory, and once
// parentheses nest deeper than kMaxLayoutDepth, so "((((...)))" 30,000 deep
// cannot exhaust the stack (Sequence recurses once per '(').
class LayoutExpander {
 public:
  LayoutExpander(std::string_view text, size_t limit)
      : text_(text), limit_(limit) {}

  Status Expand(std::vector<Token>& out) {
    if (Status s = Sequence(out); !s.ok()) return s;
    SkipIgnored();
    if (pos_ < text_.size()) {
      return Fail("')' without a matching '('");
    }
    return Status();
  }

 private:
  void SkipIgnored() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ',' || text_[pos_] == ' ' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }

  std::string TooLong() const {
    return "the layout must expand to at most " + std::to_string(limit_) +
           " symbols (far more than the model has)";
  }

  Error Fail(const std::string& what) const {
    return Error{"strategy.layout", "position " + std::to_string(pos_ + 1) +
                                        ": " + what + "; got \"" +
                                        Abbreviate(text_) + "\""};
  }

  Status Sequence(std::vector<Token>& out) {
    if (depth_ > kMaxLayoutDepth) {
      --pos_;  // at the '(' one level too deep
      return Fail("'(' must nest at most " + std::to_string(kMaxLayoutDepth) +
                  " deep");
    }
    while (true) {
      SkipIgnored();
      if (pos_ >= text_.size() || text_[pos_] == ')') return Status();
      const size_t start = out.size();
      const char c = text_[pos_];
      if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        out.push_back({c, pos_ + 1});
        ++pos_;
      } else if (c == '(') {
        const size_t open = pos_;
        ++pos_;
        ++depth_;
        if (Status s = Sequence(out); !s.ok()) return s;
        --depth_;
        if (pos_ >= text_.size()) {
          pos_ = open;
          return Fail("'(' is never closed");
        }
        ++pos_;  // ')'
      } else if (c == '*') {
        return Fail("'*' must follow a symbol or a ')'");
      } else {
        return Fail(std::string("expected E, t, m, L, '|', '(' or ')', not '") +
                    c + "'");
      }
      SkipIgnored();
      if (pos_ < text_.size() && text_[pos_] == '*') {
        ++pos_;
        if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
          return Fail("'*' must be followed by a repeat count");
        }
        size_t n = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' &&
               text_[pos_] <= '9') {
          n = n * 10 + static_cast<size_t>(text_[pos_] - '0');
          if (n > limit_) n = limit_ + 1;  // saturate; fails below
          ++pos_;
        }
        const size_t len = out.size() - start;
        if (n == 0) {
          out.resize(start);
        } else if (start + len * n > limit_) {
          return Fail(TooLong());
        } else {
          for (size_t k = 1; k < n; ++k) {
            for (size_t i = 0; i < len; ++i) out.push_back(out[start + i]);
          }
        }
      }
      if (out.size() > limit_) {
        return Fail(TooLong());
      }
    }
  }

  std::string_view text_;
  size_t limit_;
  size_t pos_ = 0;
  int depth_ = 0;  // the '(' open around pos_
};

}  // namespace

std::vector<size_t> StageStarts(const std::vector<int>& layers_per_stage) {
  std::vector<size_t> starts = {0};
  for (int c : layers_per_stage) starts.push_back(starts.back() + static_cast<size_t>(c));
  return starts;
}

Result<std::vector<int>> ParseMegatronLayout(std::string_view layout,
                                             const std::vector<Layer>& layers,
                                             int p, int v) {
  std::string quoted = "\"";
  quoted += Abbreviate(layout);
  quoted += '"';
  const int stages = p * v;
  std::vector<Token> tokens;
  // A layout that matches has layers + stages - 1 tokens; the slack lets the
  // checks below name the first stage or layer too many.
  LayoutExpander expander(
      layout, 4 * (layers.size() + static_cast<size_t>(stages)) + 64);
  if (Status s = expander.Expand(tokens); !s.ok()) return s.error();

  std::vector<int> counts(static_cast<size_t>(stages), 0);
  int stage = 0;
  size_t layer = 0;
  for (const Token& t : tokens) {
    const std::string at = "position " + std::to_string(t.position) + ": ";
    if (t.symbol == '|') {
      ++stage;
      if (stage >= stages) {
        return Error{"strategy.layout",
                     at + "must have p*v = " + std::to_string(stages) +
                         " stages (p=" + std::to_string(p) + ", v=" +
                         std::to_string(v) + "), this '|' starts stage " +
                         std::to_string(stage + 1) + "; got " + quoted};
      }
      continue;
    }
    if (layer >= layers.size()) {
      return Error{"strategy.layout",
                   at + SymbolName(t.symbol) + " is past the model's last " +
                       "layer (the model has " + std::to_string(layers.size()) +
                       " layers); got " + quoted};
    }
    const char want = LayoutSymbol(layers[layer].kind);
    if (t.symbol != want) {
      return Error{"strategy.layout",
                   at + "expected " + SymbolName(want) + " for layer " +
                       std::to_string(layer) + " (" + layers[layer].name +
                       "); got " + SymbolName(t.symbol) + " in " + quoted};
    }
    if (t.symbol == 'm' && stage / p != v - 1) {
      return Error{"strategy.layout",
                   at + "an MTP layer must be in a rank's last chunk (chunk " +
                       std::to_string(v - 1) + "); got it in stage " +
                       std::to_string(stage) + " (chunk " +
                       std::to_string(stage / p) + " of rank " +
                       std::to_string(stage % p) + ") in " + quoted};
    }
    ++counts[static_cast<size_t>(stage)];
    ++layer;
  }
  if (stage + 1 != stages) {
    return Error{"strategy.layout",
                 "must have p*v = " + std::to_string(stages) +
                     " stages (p=" + std::to_string(p) +
                     ", v=" + std::to_string(v) + ") separated by '|'; got " +
                     std::to_string(stage + 1) + " in " + quoted};
  }
  if (layer != layers.size()) {
    return Error{"strategy.layout",
                 "must place all " + std::to_string(layers.size()) +
                     " layers of the model; got " + std::to_string(layer) +
                     " in " + quoted + " (the next would be " +
                     SymbolName(LayoutSymbol(layers[layer].kind)) + " for " +
                     layers[layer].name + ")"};
  }
  return counts;
}

Result<int> MegatronLayoutStages(std::string_view layout,
                                 size_t max_symbols) {
  std::vector<Token> tokens;
  LayoutExpander expander(layout, max_symbols);
  if (Status s = expander.Expand(tokens); !s.ok()) return s.error();
  int stages = 1;
  for (const Token& t : tokens) stages += t.symbol == '|' ? 1 : 0;
  return stages;
}

std::string FormatMegatronLayout(const std::vector<int>& layers_per_stage,
                                 const std::vector<Layer>& layers) {
  std::string out;
  size_t layer = 0;
  for (size_t s = 0; s < layers_per_stage.size(); ++s) {
    if (s > 0) out += '|';
    const size_t end = layer + static_cast<size_t>(layers_per_stage[s]);
    while (layer < end) {
      const char symbol = LayoutSymbol(layers[layer].kind);
      size_t run = 1;
      while (layer + run < end &&
             LayoutSymbol(layers[layer + run].kind) == symbol) {
        ++run;
      }
      out += symbol;
      if (run > 1) {
        out += '*';
        out += std::to_string(run);
      }
      layer += run;
    }
  }
  return out;
}

std::string HybridPatternLayout(std::string_view pattern) {
  pattern = pattern.substr(0, pattern.find('/'));
  if (pattern.find('|') == std::string_view::npos) return "";
  std::string out = "E";
  size_t run = 0;
  auto flush = [&] {
    if (run == 1) out += 't';
    if (run > 1) out += "t*" + std::to_string(run);
    run = 0;
  };
  for (char c : pattern) {
    if (c == '|') {
      flush();
      out += '|';
    } else {
      ++run;
    }
  }
  flush();
  return out + "L";
}

Status ApplyFirstNRecompute(const std::vector<Layer>& layers,
                            const std::vector<int>& layers_per_stage,
                            const std::vector<int>& counts,
                            std::string_view option,
                            std::vector<std::uint8_t>& recompute) {
  const std::string key = "strategy.recompute." + std::string(option);
  size_t begin = 0;
  for (size_t s = 0; s < layers_per_stage.size(); ++s) {
    const size_t end = begin + static_cast<size_t>(layers_per_stage[s]);
    const int want = counts[s];
    if (want < 0 || want > layers_per_stage[s]) {
      return Error{key, "stage " + std::to_string(s) + ": must be in [0, " +
                            std::to_string(layers_per_stage[s]) +
                            "] (the layers of the stage); got " +
                            std::to_string(want)};
    }
    int done = 0;
    for (size_t i = begin; i < end && done < want; ++i) {
      const Layer& l = layers[i];
      size_t k = 0;
      while (k < l.recompute.size() && l.recompute[k].name != option) ++k;
      if (k == l.recompute.size()) {
        if (l.kind == LayerKind::Embedding || l.kind == LayerKind::Head) {
          continue;
        }
        std::string offered = "none";
        for (const RecomputeOption& o : l.recompute) offered += ", " + o.name;
        return Error{key, "stage " + std::to_string(s) + ": the first " +
                              std::to_string(want) +
                              " layers must offer recompute mode \"" +
                              std::string(option) + "\"; got layer " + l.name +
                              ", which offers " + offered};
      }
      if (recompute[i] == 0) recompute[i] = static_cast<std::uint8_t>(k + 1);
      ++done;
    }
    begin = end;
  }
  return Status();
}

Pinned PinnedLayers(const std::vector<Layer>& layers) {
  const int n = static_cast<int>(layers.size());
  Pinned pin;
  while (pin.lead < n && layers[pin.lead].kind == LayerKind::Embedding) {
    ++pin.lead;
  }
  while (pin.tail < n - pin.lead &&
         (layers[n - 1 - pin.tail].kind == LayerKind::Head ||
          layers[n - 1 - pin.tail].kind == LayerKind::Mtp)) {
    ++pin.tail;
  }
  return pin;
}

}  // namespace ppb
