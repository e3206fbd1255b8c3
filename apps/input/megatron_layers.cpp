// What Megatron-LM's arguments say of each decoder layer, written as
// model.architecture's per-layer keys (apps/input/megatron_arguments.h):
// sliding windows and sinks (WriteWindows), and the hybrid models
// (HybridPattern): --hybrid-layer-pattern by core 0.20's rules
// (megatron/training/arguments.py validate_args and
// megatron/core/models/hybrid/hybrid_layer_allocation.py): one symbol a
// decoder layer (M Mamba, * attention, - MLP, E MoE; G, D and + are layers
// ppb does not model), '|' between pipeline segments (segment k is global
// stage k: vp_stage x p + pp_rank), '/' before each MTP depth's pattern.
// num_layers is the pattern's length; the Mamba shape comes from
// TransformerConfig's mamba_* fields (--mamba-state-dim, --mamba-head-dim,
// --mamba-num-groups, --mamba-num-heads).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/input/megatron_arguments.h"

namespace ppb::megatron_detail {

std::optional<HybridPattern> ReadHybridPattern(Args& a) {
  std::optional<std::string> text = a.Str("hybrid_layer_pattern", /*flatten=*/false);
  std::string dest = "hybrid_layer_pattern";
  if (a.Peek("hybrid_override_pattern") != nullptr) {
    std::optional<std::string> old = a.Str("hybrid_override_pattern", /*flatten=*/false);
    if (text && old && !a.log()) {
      Fail(fmt::format("{}: must not be given with --hybrid-layer-pattern (Megatron-LM's "
                       "assert: the deprecated flag is forwarded to it); got both",
                       a.Where("hybrid_override_pattern")));
    }
    if (!text) {
      text = old;
      dest = "hybrid_override_pattern";
    }
  }
  if (!text) return std::nullopt;
  const std::string where = a.Where(dest);
  if (text->find('/') != std::string::npos) {
    Fail(fmt::format("{}: must not hold MTP patterns after '/' (ppb models an MTP layer as "
                     "a whole decoder layer, not a hybrid depth); got \"{}\"",
                     where, Abbreviate(*text)));
  }
  HybridPattern h;
  h.dest = dest;
  h.text = *text;
  for (size_t i = 0; i < text->size(); ++i) {
    const char c = (*text)[i];
    if (c == 'M' || c == 'G' || c == '*' || c == '-' || c == 'E') {
      h.symbols += c;
    } else if (c != '|') {
      Fail(fmt::format("{}: must hold M (Mamba), G (gated DeltaNet), * (attention), - (MLP), "
                       "E (MoE) and | (ppb does not model Megatron's D and + layers); got '{}' "
                       "at position {} of \"{}\"",
                       where, std::string(1, c), i + 1, Abbreviate(*text)));
    }
  }
  if (h.symbols.empty()) {
    Fail(fmt::format("{}: must hold at least one layer; got \"{}\"", where, Abbreviate(*text)));
  }
  if (auto mtp = a.Int("mtp_num_layers", 0); mtp && *mtp > 0) {
    Fail(fmt::format("{}: must not be given with a hybrid model (ppb models an MTP layer as "
                     "a whole decoder layer, not Megatron's hybrid MTP depth); got {}",
                     a.Where("mtp_num_layers"), *mtp));
  }
  return h;
}

void WriteHybridModel(Args& a, const HybridPattern& h, ConfigWriter& o) {
  o.Text(4, "hybrid_layer_pattern", h.symbols, a.Where(h.dest));
  struct Key {
    const char* dest;
    const char* key;
  };
  // The mixers' shapes (TransformerConfig's mamba_* and linear_* fields),
  // each block written when its symbol is in the pattern and a flag given
  // (ppb's defaults are Megatron's); read either way, as a shape without
  // its layers changes nothing.
  auto shape = [&](char symbol, const char* block, std::initializer_list<Key> keys) {
    const bool used = h.symbols.find(symbol) != std::string::npos;
    bool opened = false;
    for (const Key& k : keys) {
      if (!used) {
        a.Str(k.dest);
        continue;
      }
      const std::optional<std::int64_t> v = a.Int(k.dest, 1);
      if (!v) continue;
      if (!opened) o.Line(4, std::string(block) + ":");
      opened = true;
      o.Key(6, k.key, *v, a.Where(k.dest));
    }
  };
  shape('M', "mamba",
        {Key{"mamba_num_heads", "num_heads"}, Key{"mamba_head_dim", "head_dim"},
         Key{"mamba_state_dim", "state_dim"}, Key{"mamba_num_groups", "num_groups"}});
  shape('G', "deltanet",
        {Key{"linear_num_key_heads", "key_heads"}, Key{"linear_num_value_heads", "value_heads"},
         Key{"linear_key_head_dim", "key_dim"}, Key{"linear_value_head_dim", "value_dim"},
         Key{"linear_conv_kernel_dim", "conv_kernel"}});
}

// --window-size and --window-attn-skip-freq (TransformerConfig.window_size
// and window_attn_skip_freq; core/transformer/utils.py
// is_layer_window_attention: 1-based layer n slides iff n % N != 0, or
// pattern[n - 1] == 1; every layer without a skip frequency), written as
// model.architecture's layer_types and sliding_window: TE's window (L, R)
// lets a query see itself and the L keys before it, so L + 1 keys. And
// --softmax-type (learnable: a sink logit per head, GPT-OSS's).
void WriteWindows(Args& a, ConfigWriter& o, std::vector<std::string>& notes,
                  std::int64_t layers) {
  auto where = [&](const std::string& dest) { return a.Where(dest); };
  if (std::optional<std::string> w = a.Str("window_size", /*flatten=*/false)) {
    // "127,0" on a command line; "(127, 0)" in a log's arguments block.
    std::string text;
    for (char c : *w) {
      if (c != '(' && c != ')' && c != ' ') text += c;
    }
    const size_t comma = text.find(',');
    std::int64_t left = 0, right = 0;
    const auto read = [](std::string_view x, std::int64_t& v) {
      auto [p, ec] = std::from_chars(x.data(), x.data() + x.size(), v);
      return !x.empty() && ec == std::errc() && p == x.data() + x.size();
    };
    if (comma == std::string::npos || !read(std::string_view(text).substr(0, comma), left) ||
        !read(std::string_view(text).substr(comma + 1), right) || left < -1 ||
        left > 1'000'000'000 || (right != 0 && right != -1)) {
      Fail(
          fmt::format("{}: must be LEFT,RIGHT with LEFT -1 (no window) or from 0 to "
                      "1000000000 and RIGHT 0 or -1 (a causal decoder sees no later key); "
                      "got '{}'",
                      where("window_size"), Abbreviate(*w)));
    }
    std::vector<int> slides(static_cast<size_t>(layers), 1);
    if (std::optional<std::string> skip = a.Str("window_attn_skip_freq", /*flatten=*/false)) {
      if (skip->find('[') != std::string::npos) {
        slides = MoeLayerPattern(*skip, where("window_attn_skip_freq"));
        if (static_cast<std::int64_t>(slides.size()) != layers) {
          Fail(fmt::format("{}: must list one entry a layer ({}); got {}",
                           where("window_attn_skip_freq"), layers, slides.size()));
        }
      } else if (std::optional<std::int64_t> n = a.Int("window_attn_skip_freq", 1)) {
        for (std::int64_t i = 0; i < layers; ++i) {
          slides[static_cast<size_t>(i)] = (i + 1) % *n != 0 ? 1 : 0;
        }
      }
    }
    if (left >= 0 && std::find(slides.begin(), slides.end(), 1) != slides.end()) {
      std::vector<std::string> types;
      for (int x : slides) types.emplace_back(x == 1 ? "sliding_attention" : "full_attention");
      o.Key(4, "layer_types", fmt::format("[{}]", fmt::join(types, ", ")),
            a.Peek("window_attn_skip_freq") != nullptr ? where("window_attn_skip_freq")
                                                       : where("window_size"));
      o.Key(4, "sliding_window", left + 1, where("window_size"));
    }
  }
  const std::string softmax =
      a.Choice("softmax_type", {"vanilla", "off-by-one", "learnable"}).value_or("vanilla");
  if (softmax == "learnable") o.Key(4, "attention_sinks", "true", where("softmax_type"));
  if (softmax == "off-by-one") {
    notes.push_back(
        "--softmax-type off-by-one: a fixed offset in the softmax, no "
        "parameters; simulated as the vanilla softmax");
  }
}

}  // namespace ppb::megatron_detail
