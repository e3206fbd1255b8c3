// Megatron-LM's hybrid models (apps/input/megatron_arguments.h
// HybridPattern): --hybrid-layer-pattern by core 0.20's rules
// (megatron/training/arguments.py validate_args and
// megatron/core/models/hybrid/hybrid_layer_allocation.py): one symbol a
// decoder layer (M Mamba, * attention, - MLP, E MoE; G, D and + are layers
// ppb does not model), '|' between pipeline segments (segment k is global
// stage k: vp_stage x p + pp_rank), '/' before each MTP depth's pattern.
// num_layers is the pattern's length; the Mamba shape comes from
// TransformerConfig's mamba_* fields (--mamba-state-dim, --mamba-head-dim,
// --mamba-num-groups, --mamba-num-heads).
#include <string>

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
  std::int64_t n = 0;
  for (size_t i = 0; i < text->size(); ++i) {
    const char c = (*text)[i];
    if (c == '|') {
      h.segments.push_back(n);
      n = 0;
    } else if (c == 'M' || c == '*' || c == '-' || c == 'E') {
      h.symbols += c;
      ++n;
    } else {
      Fail(fmt::format("{}: must hold M (Mamba), * (attention), - (MLP), E (MoE) and | "
                       "(ppb does not model Megatron's G, D and + layers); got '{}' at "
                       "position {} of \"{}\"",
                       where, std::string(1, c), i + 1, Abbreviate(*text)));
    }
  }
  h.segments.push_back(n);
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
  if (h.symbols.find('M') == std::string::npos) {
    for (const char* dest :
         {"mamba_state_dim", "mamba_head_dim", "mamba_num_groups", "mamba_num_heads"}) {
      a.Str(dest);  // read: a Mamba shape without a Mamba layer changes nothing
    }
    return;
  }
  struct Key {
    const char* dest;
    const char* key;
  };
  bool opened = false;
  for (const Key& k : {Key{"mamba_num_heads", "num_heads"}, Key{"mamba_head_dim", "head_dim"},
                       Key{"mamba_state_dim", "state_dim"},
                       Key{"mamba_num_groups", "num_groups"}}) {
    const std::optional<std::int64_t> v = a.Int(k.dest, 1);
    if (!v) continue;
    if (!opened) o.Line(4, "mamba:");
    opened = true;
    o.Key(6, k.key, *v, a.Where(k.dest));
  }
}

}  // namespace ppb::megatron_detail
