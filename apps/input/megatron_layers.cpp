// What Megatron-LM's arguments say of each decoder layer, written as
// model.architecture's per-layer keys (apps/input/megatron_arguments.h):
// sliding windows, sinks and the GPT model's gated DeltaNet layers
// (WriteWindows), and the hybrid models
// (HybridPattern): --hybrid-layer-pattern by core 0.20's rules
// (megatron/training/arguments.py validate_args and
// megatron/core/models/hybrid/hybrid_layer_allocation.py): one symbol a
// decoder layer (M Mamba, G gated DeltaNet, * attention, + MLA attention,
// - MLP, E MoE; D, DeepSeek's sparse attention, ppb does not model), '|'
// between pipeline segments (segment k is global
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
    if (c == 'M' || c == 'G' || c == '*' || c == '+' || c == '-' || c == 'E') {
      h.symbols += c;
    } else if (c != '|') {
      Fail(fmt::format("{}: must hold M (Mamba), G (gated DeltaNet), * (attention), + (MLA), "
                       "- (MLP), E (MoE) and | (ppb does not model Megatron's D, DeepSeek's "
                       "sparse attention); got '{}' at position {} of \"{}\"",
                       where, std::string(1, c), i + 1, Abbreviate(*text)));
    }
  }
  // hybrid_layer_allocation.py validate_segment_layers: "Not supported to
  // have both Attention and MLA/DSA in one model".
  if (h.symbols.find('*') != std::string::npos && h.symbols.find('+') != std::string::npos) {
    Fail(fmt::format("{}: must not hold both * (attention) and + (MLA) layers (Megatron-LM: "
                     "\"Not supported to have both Attention and MLA/DSA in one model\"); got "
                     "\"{}\"",
                     where, Abbreviate(*text)));
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

namespace {

struct Key {
  const char* dest;
  const char* key;
};

// TransformerConfig's mamba_* and linear_* fields: the Mamba and gated
// DeltaNet shapes.
constexpr Key kMambaKeys[] = {{"mamba_num_heads", "num_heads"},
                              {"mamba_head_dim", "head_dim"},
                              {"mamba_state_dim", "state_dim"},
                              {"mamba_num_groups", "num_groups"}};
constexpr Key kDeltaNetKeys[] = {
    {"linear_num_key_heads", "key_heads"},     {"linear_num_value_heads", "value_heads"},
    {"linear_key_head_dim", "key_dim"},        {"linear_value_head_dim", "value_dim"},
    {"linear_conv_kernel_dim", "conv_kernel"}};

// A mixer's shape block at indent 4, `block`: the arguments of `keys`
// given (ppb's defaults are Megatron's), opened at the first. With `used`
// false (no layer has the mixer) they are only read: a shape without its
// layers changes nothing.
template <size_t N>
void WriteShape(Args& a, ConfigWriter& o, const char* block, const Key (&keys)[N], bool used) {
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
}

}  // namespace

void WriteHybridModel(Args& a, const HybridPattern& h, ConfigWriter& o) {
  o.Text(4, "hybrid_layer_pattern", h.symbols, a.Where(h.dest));
  // The mixers' shapes, each read whether or not its symbol is in the
  // pattern.
  WriteShape(a, o, "mamba", kMambaKeys, h.symbols.find('M') != std::string::npos);
  WriteShape(a, o, "deltanet", kDeltaNetKeys, h.symbols.find('G') != std::string::npos);
}

namespace {

// An argument of Megatron's that gives each of `layers` decoder layers a 1
// or a 0 (window_attn_skip_freq, linear_attention_freq): an integer N gives
// 0 at every Nth layer, (i + 1) % N == 0, and 1 elsewhere; a list
// expression (arguments.py moe_freq_type, la_freq_type) its entries, one a
// layer (`rule`, such as ", Megatron-LM's assert", follows the count in
// the refusal). nullopt when the argument is not given.
std::optional<std::vector<int>> EveryNthOrList(Args& a, const std::string& dest,
                                               std::int64_t layers, std::string_view rule) {
  const std::optional<std::string> text = a.Str(dest, /*flatten=*/false);
  if (!text) return std::nullopt;
  if (text->find('[') != std::string::npos) {
    std::vector<int> bits = MoeLayerPattern(*text, a.Where(dest));
    if (static_cast<std::int64_t>(bits.size()) != layers) {
      Fail(fmt::format("{}: must list one entry a layer ({}{}); got {}", a.Where(dest), layers,
                       rule, bits.size()));
    }
    return bits;
  }
  const std::int64_t n = a.Int(dest, 1).value_or(1);
  std::vector<int> bits(static_cast<size_t>(layers));
  for (std::int64_t i = 0; i < layers; ++i) {
    bits[static_cast<size_t>(i)] = (i + 1) % n != 0 ? 1 : 0;
  }
  return bits;
}

// --experimental-attention-variant (TransformerConfig, core 0.20:
// gdn, its deprecated spelling gated_delta_net, gdn2, dsa): 1 for each
// decoder layer that is a gated DeltaNet beside its MLP, by
// --linear-attention-freq (experimental_attention_variant_module_specs.py
// get_linear_attention_pattern: N gives full attention at every Nth layer,
// (i + 1) % N == 0; a list, arguments.py la_freq_type's Python expression,
// 1 linear and 0 full); all 0 without the variant. A hybrid model's G
// layers are its pattern's: the variant may only say gdn there.
std::vector<int> LinearAttentionLayers(Args& a, std::int64_t layers, bool hybrid) {
  std::vector<int> linear(static_cast<size_t>(layers), 0);
  const std::optional<std::string> variant = a.Str("experimental_attention_variant");
  const bool gdn = variant && (*variant == "gdn" || *variant == "gated_delta_net");
  if (variant && !gdn) {
    Fail(fmt::format("{}: must be gdn (or gated_delta_net), the variant ppb models; got '{}' "
                     "(ppb does not model gdn2's channel-wise gates or dsa, DeepSeek's sparse "
                     "attention)",
                     a.Where("experimental_attention_variant"), Abbreviate(*variant)));
  }
  // Without the variant, or in a hybrid model (whose G layers are its
  // pattern's), --linear-attention-freq is left unread: listed as ignored.
  if (!gdn || hybrid) return linear;
  std::optional<std::vector<int>> freq =
      EveryNthOrList(a, "linear_attention_freq", layers, ", Megatron-LM's assert");
  if (!freq) {
    Fail(fmt::format("{}: --linear-attention-freq: must be given with "
                     "--experimental-attention-variant {} (Megatron-LM's assert: "
                     "\"linear_attention_freq must be set for linear gdn\"); got nothing",
                     a.Line("experimental_attention_variant"), *variant));
  }
  return *freq;
}

}  // namespace

// --experimental-attention-variant gdn with --linear-attention-freq
// (LinearAttentionLayers: layer_types' linear_attention and the deltanet
// block of the --linear-* arguments), and
// --window-size and --window-attn-skip-freq (TransformerConfig.window_size
// and window_attn_skip_freq; core/transformer/utils.py
// is_layer_window_attention: 1-based layer n slides iff n % N != 0, or
// pattern[n - 1] == 1; every layer without a skip frequency), written as
// model.architecture's layer_types and sliding_window: TE's window (L, R)
// lets a query see itself and the L keys before it, so L + 1 keys. And
// --softmax-type (learnable: a sink logit per head, GPT-OSS's).
void WriteWindows(Args& a, ConfigWriter& o, std::vector<std::string>& notes,
                  std::int64_t layers, bool hybrid) {
  auto where = [&](const std::string& dest) { return a.Where(dest); };
  const std::vector<int> linear = LinearAttentionLayers(a, layers, hybrid);
  const bool any_linear = std::find(linear.begin(), linear.end(), 1) != linear.end();
  std::vector<int> slides(static_cast<size_t>(layers), 0);
  std::int64_t window = 0;
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
    // Every layer slides without a skip frequency.
    slides = EveryNthOrList(a, "window_attn_skip_freq", layers, "")
                 .value_or(std::vector<int>(static_cast<size_t>(layers), 1));
    if (left < 0) slides.assign(static_cast<size_t>(layers), 0);
    window = left + 1;
  }
  // A gated DeltaNet layer has no window (the windows are the attention
  // layers': is_layer_window_attention).
  bool sliding = false;
  for (size_t i = 0; i < slides.size(); ++i) {
    if (linear[i] == 1) slides[i] = 0;
    sliding = sliding || slides[i] == 1;
  }
  if (sliding || any_linear) {
    std::vector<std::string> types;
    for (size_t i = 0; i < slides.size(); ++i) {
      types.emplace_back(linear[i] == 1  ? "linear_attention"
                         : slides[i] == 1 ? "sliding_attention"
                                          : "full_attention");
    }
    o.Key(4, "layer_types", fmt::format("[{}]", fmt::join(types, ", ")),
          any_linear                                  ? where("linear_attention_freq")
          : a.Peek("window_attn_skip_freq") != nullptr ? where("window_attn_skip_freq")
                                                       : where("window_size"));
  }
  if (sliding) o.Key(4, "sliding_window", window, where("window_size"));
  // The DeltaNet's shape; without its layers (and not hybrid) the --linear-*
  // arguments stay unread, listed as ignored.
  if (any_linear) WriteShape(a, o, "deltanet", kDeltaNetKeys, true);
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
