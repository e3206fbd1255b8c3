// What each framework's configuration can express (see deployable.h for the
// contract and the sources of each rule).
#include "search/deployable.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/strategy.h"

namespace ppb {

namespace {

// A decoder layer in the frameworks' sense (Megatron's 't'): decoder, MoE
// or any other body layer.
bool IsBody(LayerKind k) {
  return k == LayerKind::Decoder || k == LayerKind::Moe || k == LayerKind::Other;
}

// The index + 1 of mode `name` among the options of `layer`, 0 if none.
std::uint8_t Option(const Layer& layer, std::string_view name) {
  for (std::size_t k = 0; k < layer.recompute.size(); ++k) {
    if (layer.recompute[k].name == name) return static_cast<std::uint8_t>(k + 1);
  }
  return 0;
}

std::string ModeName(const Layer& layer, std::uint8_t x) {
  return x == 0 || x > layer.recompute.size() ? std::string() : layer.recompute[x - 1].name;
}

// MindFormers' phase of a mode: 0 full, 1 both select lists, 2 one select
// list, -1 none of its lists.
int ListPhase(const std::string& m) {
  if (m == "full") return 0;
  if (m == "both_comm_select") return 1;
  if (m == "selective" || m == "select_comm") return 2;
  return -1;
}

// The one mode setting s gives layer l of stage [i, j) (Every, Block).
std::uint8_t FixedMode(const RecomputeSetting& s, const std::vector<Layer>& layers, int i, int l) {
  const Layer& layer = layers[static_cast<std::size_t>(l)];
  if (s.kind == RecomputeSetting::Kind::Block) {
    if (!IsBody(layer.kind)) return 0;
    int before = 0;  // decoder layers of the stage before l
    for (int k = i; k < l; ++k) before += IsBody(layers[static_cast<std::size_t>(k)].kind) ? 1 : 0;
    return before < s.n ? Option(layer, "full") : 0;
  }
  if (s.mode.empty()) return 0;
  switch (s.target) {
    case DeployTarget::Megatron:
      if (IsBody(layer.kind)) return Option(layer, s.mode);
      // MultiTokenPredictionLayer: whole layer under full uniform, its inner
      // layer under selective.
      if (layer.kind == LayerKind::Mtp) return Option(layer, s.mode);
      return 0;
    case DeployTarget::Torchtitan:
      return IsBody(layer.kind) ? Option(layer, s.mode) : 0;
    case DeployTarget::DeepSpeed:
    case DeployTarget::Any:  // a uniform mode asked of any (ppb-sim plan)
      return Option(layer, s.mode);  // every layer that offers it
    default:
      return 0;
  }
}

}  // namespace

const char* TargetName(DeployTarget t) {
  switch (t) {
    case DeployTarget::Any:
      return "any";
    case DeployTarget::Megatron:
      return "megatron";
    case DeployTarget::MindFormers:
      return "mindformers";
    case DeployTarget::Torchtitan:
      return "torchtitan";
    case DeployTarget::DeepSpeed:
      return "deepspeed";
  }
  return "any";
}

std::optional<DeployTarget> TargetFromName(std::string_view name) {
  for (DeployTarget t : {DeployTarget::Any, DeployTarget::Megatron, DeployTarget::MindFormers,
                         DeployTarget::Torchtitan, DeployTarget::DeepSpeed}) {
    if (name == TargetName(t)) return t;
  }
  return std::nullopt;
}

const std::vector<DeployTarget>& FrameworkTargets() {
  static const std::vector<DeployTarget> kAll = {DeployTarget::Megatron, DeployTarget::MindFormers,
                                                 DeployTarget::Torchtitan, DeployTarget::DeepSpeed};
  return kAll;
}

std::vector<std::size_t> ModeOrder(const std::vector<RecomputeOption>& options) {
  auto rank = [](const std::string& name) {
    static constexpr std::array<const char*, 4> kOrder = {"full", "both_comm_select", "selective",
                                                          "select_comm"};
    for (std::size_t k = 0; k < kOrder.size(); ++k) {
      if (name == kOrder[k]) return k;
    }
    return kOrder.size();
  };
  std::vector<std::size_t> order;
  for (std::size_t x = 1; x <= options.size(); ++x) order.push_back(x);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return rank(options[a - 1].name) < rank(options[b - 1].name);
  });
  return order;
}

std::vector<RecomputeSetting> RecomputeSettings(DeployTarget target,
                                                const std::vector<Layer>& layers) {
  using K = RecomputeSetting::Kind;
  if (target == DeployTarget::Any) return {RecomputeSetting{target, K::Free, "", 0}};
  if (target == DeployTarget::MindFormers) return {RecomputeSetting{target, K::Lists, "", 0}};
  std::vector<RecomputeSetting> out = {RecomputeSetting{target, K::Every, "", 0}};
  int decoders = 0, mtp = 0;
  for (const Layer& l : layers) {
    decoders += IsBody(l.kind) ? 1 : 0;
    mtp += l.kind == LayerKind::Mtp ? 1 : 0;
  }
  // Every body layer (and, per target, MTP layer) must offer the mode.
  auto every_offers = [&](const std::string& mode, bool mtp_too) {
    if (decoders == 0) return false;
    for (const Layer& l : layers) {
      if ((IsBody(l.kind) || (mtp_too && l.kind == LayerKind::Mtp)) && Option(l, mode) == 0) {
        return false;
      }
    }
    return true;
  };
  if (target == DeployTarget::Megatron) {
    if (every_offers("selective", false)) out.push_back({target, K::Every, "selective", 0});
    if (every_offers("full", true)) out.push_back({target, K::Every, "full", 0});
    bool some_full = false;
    for (const Layer& l : layers)
      some_full = some_full || (IsBody(l.kind) && Option(l, "full") != 0);
    if (some_full) {
      // block n >= the decoders of every stage is every decoder full: that
      // is uniform unless MTP layers tell them apart.
      const int last = mtp > 0 || !every_offers("full", true) ? decoders : decoders - 1;
      for (int n = 1; n <= last; ++n) out.push_back({target, K::Block, "full", n});
    }
  } else if (target == DeployTarget::Torchtitan) {
    if (every_offers("full", false)) out.push_back({target, K::Every, "full", 0});
  } else if (target == DeployTarget::DeepSpeed) {
    bool any = false;
    for (const Layer& l : layers) any = any || Option(l, "full") != 0;
    if (any) out.push_back({target, K::Every, "full", 0});
  }
  return out;
}

std::string DescribeSetting(const RecomputeSetting& s) {
  using K = RecomputeSetting::Kind;
  switch (s.kind) {
    case K::Free:
      return "any per-layer recompute";
    case K::Lists:
      return "recompute lists (the first N decoder layers of each stage per list)";
    case K::Block:
      return "--recompute-granularity full --recompute-method block --recompute-num-layers " +
             std::to_string(s.n);
    case K::Every:
      if (s.mode.empty()) return "no recompute";
      switch (s.target) {
        case DeployTarget::Megatron:
          return s.mode == "full" ? "--recompute-granularity full --recompute-method uniform"
                                  : "--recompute-granularity " + s.mode;
        case DeployTarget::Torchtitan:
          return "activation_checkpoint.mode " + s.mode;
        case DeployTarget::DeepSpeed:
          return "activation_checkpoint_interval 1";
        default:
          return s.mode + " recompute on every layer";
      }
  }
  return "";
}

std::vector<std::uint8_t> AllowedModes(const RecomputeSetting& s, const std::vector<Layer>& layers,
                                       int i, int j, int l) {
  (void)j;
  const Layer& layer = layers[static_cast<std::size_t>(l)];
  std::vector<std::uint8_t> out = {0};
  if (s.kind == RecomputeSetting::Kind::Free) {
    for (std::size_t x = 1; x <= layer.recompute.size(); ++x) {
      out.push_back(static_cast<std::uint8_t>(x));
    }
    return out;
  }
  if (s.kind == RecomputeSetting::Kind::Lists) {
    const Pinned pin = PinnedLayers(layers);
    const int n = static_cast<int>(layers.size());
    if (l < pin.lead || l >= n - pin.tail) return out;
    for (std::size_t x = 1; x <= layer.recompute.size(); ++x) {
      if (ListPhase(layer.recompute[x - 1].name) >= 0) out.push_back(static_cast<std::uint8_t>(x));
    }
    return out;
  }
  return {FixedMode(s, layers, i, l)};
}

bool StageAllowed(const RecomputeSetting& s, const std::vector<Layer>& layers, int i, int j,
                  const std::vector<std::uint8_t>& rc) {
  using K = RecomputeSetting::Kind;
  if (s.kind == K::Free) return true;
  if (s.kind == K::Block) {
    // Megatron recomputes the first n decoders of the stage: each must
    // offer full.
    int before = 0;
    for (int l = i; l < j; ++l) {
      const Layer& layer = layers[static_cast<std::size_t>(l)];
      if (IsBody(layer.kind) && before++ < s.n && Option(layer, "full") == 0) return false;
    }
  }
  if (s.kind != K::Lists) {
    for (int l = i; l < j; ++l) {
      if (rc[static_cast<std::size_t>(l)] != FixedMode(s, layers, i, l)) return false;
    }
    return true;
  }
  // MindFormers: full, then both, then one select list, then none.
  const Pinned pin = PinnedLayers(layers);
  const int n = static_cast<int>(layers.size());
  int phase = 0;
  std::string one;
  for (int l = i; l < j; ++l) {
    const std::string m =
        ModeName(layers[static_cast<std::size_t>(l)], rc[static_cast<std::size_t>(l)]);
    if (l < pin.lead || l >= n - pin.tail) {
      if (!m.empty()) return false;
      continue;
    }
    int want = 3;
    if (!m.empty()) {
      want = ListPhase(m);
      if (want < 0) return false;
    }
    if (want < phase || (want == 2 && phase == 2 && m != one)) return false;
    phase = want;
    if (want == 2) one = m;
  }
  return true;
}

std::string SplitRefusal(DeployTarget target, const std::vector<Layer>& layers,
                         const std::vector<int>& layers_per_stage, int p, int v, bool v_placement) {
  if (target == DeployTarget::Any) return "";
  const int S = static_cast<int>(layers_per_stage.size());
  const int n = static_cast<int>(layers.size());
  const bool has_empty =
      std::find(layers_per_stage.begin(), layers_per_stage.end(), 0) != layers_per_stage.end();
  // Embedding first, head last, one of each, MTP after every decoder
  // (Megatron's layout, torchtitan's module names).
  auto embedding_first_head_last = [&](bool allow_mtp) -> std::string {
    if (n < 2 || layers.front().kind != LayerKind::Embedding ||
        layers.back().kind != LayerKind::Head) {
      return "needs the embedding first and the head last";
    }
    bool mtp_seen = false;
    for (int l = 1; l + 1 < n; ++l) {
      const LayerKind k = layers[static_cast<std::size_t>(l)].kind;
      if (k == LayerKind::Embedding || k == LayerKind::Head)
        return "needs one embedding and one head";
      if (k == LayerKind::Mtp) {
        if (!allow_mtp) return "has no module name for an MTP layer";
        mtp_seen = true;
      } else if (mtp_seen) {
        return "needs the MTP layers after every decoder layer";
      }
    }
    return "";
  };
  switch (target) {
    case DeployTarget::Megatron: {
      if (std::string e = embedding_first_head_last(true); !e.empty()) return e;
      if (layers_per_stage.front() == 0 || layers_per_stage.back() == 0) {
        return "needs layers on the first and the last stage";
      }
      if (v_placement) return "places stage s on rank s mod p (no V placement)";
      int first = 0;
      for (int st = 0; st < S; ++st) {
        for (int l = first; l < first + layers_per_stage[static_cast<std::size_t>(st)]; ++l) {
          if (layers[static_cast<std::size_t>(l)].kind == LayerKind::Mtp && st / p != v - 1) {
            return "needs MTP layers in a rank's last chunk";
          }
        }
        first += layers_per_stage[static_cast<std::size_t>(st)];
      }
      return "";
    }
    case DeployTarget::MindFormers: {
      const Pinned pin = PinnedLayers(layers);
      for (int l = pin.lead; l < n - pin.tail; ++l) {
        if (!IsBody(layers[static_cast<std::size_t>(l)].kind)) {
          return "counts only decoder layers between the embedding and the head";
        }
      }
      if (has_empty) return "runs no empty stage";
      if (layers_per_stage.front() < pin.lead || layers_per_stage.back() < pin.tail) {
        return "keeps the embedding on the first stage and the head and MTP on the last";
      }
      return "";
    }
    case DeployTarget::Torchtitan: {
      if (std::string e = embedding_first_head_last(false); !e.empty()) return e;
      for (const Layer& l : layers) {
        if (l.kind == LayerKind::Other) return "has no module name for a layer of kind other";
      }
      if (has_empty) return "runs no empty stage";
      return "";
    }
    case DeployTarget::DeepSpeed:
      if (v != 1) return "runs one stage per rank (v = 1)";
      if (has_empty) return "runs no empty stage";
      return "";
    case DeployTarget::Any:
      break;
  }
  return "";
}

std::string MegatronGroupRefusal(int p, int g, int m) {
  // forward_backward_pipelining_with_interleaving raises ValueError unless
  // p <= g <= m and RuntimeError when 0 < m mod g < p.
  if (g >= p && g <= m && (m % g == 0 || m % g >= p)) return "";
  return "--microbatch-group-size-per-virtual-pipeline-stage must satisfy p <= g <= m and m "
         "mod g = 0 or >= p (Megatron-LM); got g=" +
         std::to_string(g) + ", p=" + std::to_string(p) + ", m=" + std::to_string(m);
}

std::string ChoiceRefusal(DeployTarget target, const std::vector<Layer>& layers, int v,
                          bool v_placement, int p, int m, int group) {
  if (target == DeployTarget::Any) return "";
  if (target == DeployTarget::Megatron && v_placement) {
    return "places stage s on rank s mod p (no V placement)";
  }
  // Megatron runs every v > 1 with its interleaved schedule, group p unless
  // given.
  if (target == DeployTarget::Megatron && v > 1 && p > 0) {
    if (std::string g = MegatronGroupRefusal(p, group > 0 ? group : p, m); !g.empty()) return g;
  }
  if (target == DeployTarget::DeepSpeed && v != 1) return "runs one stage per rank (v = 1)";
  // The rules on the model's layers: all of them on one stage meets every
  // rule on where layers go (first and last stage hold layers, none is
  // empty, MTP in the last chunk), so what is refused is the layers.
  return SplitRefusal(target, layers, std::vector<int>{static_cast<int>(layers.size())}, 1, 1,
                      false);
}

bool SettingAllows(const RecomputeSetting& s, const std::vector<Layer>& layers,
                   const Strategy& strategy) {
  int first = 0;
  for (int count : strategy.layers_per_stage) {
    if (!StageAllowed(s, layers, first, first + count, strategy.recompute)) return false;
    first += count;
  }
  return true;
}

std::optional<RecomputeSetting> ExpressingSetting(DeployTarget target,
                                                  const std::vector<Layer>& layers,
                                                  const Strategy& strategy) {
  for (const RecomputeSetting& s : RecomputeSettings(target, layers)) {
    if (SettingAllows(s, layers, strategy)) return s;
  }
  return std::nullopt;
}

bool Deployable(DeployTarget target, const std::vector<Layer>& layers, const Strategy& strategy,
                int p, int v, bool v_placement) {
  return SplitRefusal(target, layers, strategy.layers_per_stage, p, v, v_placement).empty() &&
         ExpressingSetting(target, layers, strategy).has_value();
}

bool TargetRunsSchedule(DeployTarget target, const std::string& schedule) {
  return target != DeployTarget::Megatron || schedule == "1f1b" || schedule == "interleaved";
}

}  // namespace ppb
