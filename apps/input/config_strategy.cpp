// strategy.*: the layers of each of the p*v stages (one of
// layers_per_chunk, layout, offset, or the even split) and the recompute per
// layer; also the strategy keys of a candidate (candidates.cpp), placed at
// strategy_path_. Leaves RunConfig::strategy complete. Errors as every
// config error: "file:line: strategy.<key>: must be ...; got ...".
#include "apps/input/config_parser.h"

#include "core/strategy.h"

namespace ppb::config_detail {

namespace {

// "chunk 1 of rank 2" for global stage s = chunk * p + rank.
std::string StageName(int s, int p) {
  return "chunk " + std::to_string(s / p) + " of rank " + std::to_string(s % p);
}

}  // namespace

// Reads per-stage integers >= min: [v][p] lists, a flat list of p*v, or
// (allow_scalar) one integer for every stage.
Result<StageInts> Parser::ReadStageInts(const Entry& entry, std::int64_t min,
                                        bool allow_scalar) {
  const int p = cfg_.shape.p, v = cfg_.shape.v;
  const std::string item_want =
      min == 0 ? "a non-negative integer" : "an integer";
  StageInts out;
  const YAML::Node& node = entry.value;
  if (allow_scalar && node.IsScalar()) {
    Result<std::int64_t> x =
        Integer(node, entry.path, min, INT_MAX, item_want);
    if (!x.ok()) return x.error();
    out.values.assign(static_cast<size_t>(p) * v, static_cast<int>(*x));
    out.paths.assign(static_cast<size_t>(p) * v, entry.path);
    return out;
  }
  const std::string want =
      "must be a list of " + std::to_string(v) + " list" +
      (v > 1 ? "s" : "") + " of " + std::to_string(p) +
      " integers ([chunk][rank], " + StagesNote() + ") or a flat list of " +
      std::to_string(p * v) + (allow_scalar ? ", or one integer" : "");
  if (!node.IsSequence()) {
    return Fail(entry.path, want + "; got " + Given(node));
  }
  Result<std::vector<Entry>> items = List(node, entry.path, "");
  if (!items.ok()) return items.error();
  const bool nested = !items->empty() && (*items)[0].value.IsSequence();
  std::vector<Entry> scalars;
  if (nested) {
    if (static_cast<int>(items->size()) != v) {
      return Fail(entry.path, want + "; got a list of " +
                                  std::to_string(items->size()) + " lists");
    }
    for (const Entry& row : *items) {
      Result<std::vector<Entry>> cells = List(row.value, row.path, "a list");
      if (!cells.ok() || static_cast<int>(cells->size()) != p) {
        return Fail(row.path, "must be a list of " + std::to_string(p) +
                                  " integers, one per rank (" + StagesNote() +
                                  "); got " + Given(row.value));
      }
      scalars.insert(scalars.end(), cells->begin(), cells->end());
    }
  } else {
    if (static_cast<int>(items->size()) != p * v) {
      return Fail(entry.path, want + "; got " + Given(node));
    }
    scalars = std::move(*items);
  }
  for (const Entry& cell : scalars) {
    Result<std::int64_t> x =
        Integer(cell.value, cell.path, min, INT_MAX, item_want);
    if (!x.ok()) return x.error();
    out.values.push_back(static_cast<int>(*x));
    out.paths.push_back(cell.path);
  }
  return out;
}

// The optional strategy section (absent or empty: the even split).
Status Parser::ParseStrategy(const Entry* section) {
  Entries e;
  if (section != nullptr && !section->value.IsNull()) {
    Result<Entries> r = Map(section->value, "strategy",
                            {"layers_per_chunk", "layout", "offset",
                             "allow_empty_chunks", "recompute"});
    if (!r.ok()) return r.error();
    e = std::move(*r);
  }
  return ParseStrategyEntries(e, "model.layers");
}

// The strategy keys among `e` (the entries of the map at strategy_path_)
// into cfg_.strategy and cfg_.allow_empty_chunks, for cfg_.shape. Errors
// about a default even split that leaves a chunk empty name `even_key`.
Status Parser::ParseStrategyEntries(const Entries& e,
                                    const std::string& even_key) {
  if (const Entry* a = Find(e, "allow_empty_chunks")) {
    Result<bool> b = Bool(a->value, a->path);
    if (!b.ok()) return b.error();
    cfg_.allow_empty_chunks = *b;
  }
  const Entry* given = nullptr;
  for (const Entry& x : e) {
    if (x.key != "layers_per_chunk" && x.key != "layout" &&
        x.key != "offset") {
      continue;
    }
    if (given != nullptr) {
      return Fail(
          x.path,
          "must not be given with " + strategy_path_ + "." + given->key +
              " (give one of layers_per_chunk, layout, offset); got both");
    }
    given = &x;
  }
  if (given == nullptr) {
    PPB_RETURN_IF_ERROR(EvenSplit(even_key));
  } else if (given->key == "layers_per_chunk") {
    PPB_RETURN_IF_ERROR(LayersPerChunk(*given));
  } else if (given->key == "layout") {
    PPB_RETURN_IF_ERROR(Layout(*given));
  } else {
    PPB_RETURN_IF_ERROR(Offset(*given));
  }
  cfg_.strategy.recompute.assign(cfg_.layers.size(), 0);
  if (const Entry* rc = Find(e, "recompute")) {
    PPB_RETURN_IF_ERROR(ParseRecompute(*rc));
  }
  return Status();
}

Status Parser::EvenSplit(const std::string& key) {
  const int p = cfg_.shape.p, v = cfg_.shape.v;
  cfg_.strategy = EvenStrategy(cfg_.layers, p, v);
  if (cfg_.allow_empty_chunks) return Status();
  for (int s = 0; s < p * v; ++s) {
    if (cfg_.strategy.layers_per_stage[s] == 0) {
      return Fail(key, "must fill all " + std::to_string(p * v) +
                           " stages (" + StagesNote() +
                           ") for the default even split; got " +
                           std::to_string(cfg_.layers.size()) +
                           " layers, which leave " + StageName(s, p) +
                           " empty (give " + strategy_path_ +
                           ".layers_per_chunk or set " + strategy_path_ +
                           ".allow_empty_chunks)");
    }
  }
  return Status();
}

Status Parser::LayersPerChunk(const Entry& entry) {
  const int p = cfg_.shape.p;
  Result<StageInts> counts = ReadStageInts(entry, 0, false);
  if (!counts.ok()) return counts.error();
  std::int64_t total = 0;
  for (size_t s = 0; s < counts->values.size(); ++s) {
    const int c = counts->values[s];
    if (c == 0 && !cfg_.allow_empty_chunks) {
      return Fail(counts->paths[s],
                  "must be positive (" + StageName(static_cast<int>(s), p) +
                      " would be empty; set " + strategy_path_ +
                      ".allow_empty_chunks to allow it); got 0");
    }
    total += c;
  }
  if (total != static_cast<std::int64_t>(cfg_.layers.size())) {
    std::string sum;
    for (int c : counts->values) {
      if (!sum.empty()) sum += '+';
      sum += std::to_string(c);
    }
    return Fail(entry.path,
                "must add up to the model's " +
                    std::to_string(cfg_.layers.size()) +
                    " layers (after repeat); got " + std::to_string(total) +
                    " (" + sum + ")" +
                    (total < static_cast<std::int64_t>(cfg_.layers.size())
                         ? ", which would drop layers"
                         : ""));
  }
  cfg_.strategy.layers_per_stage = std::move(counts->values);
  return Status();
}

Status Parser::Layout(const Entry& entry) {
  const int p = cfg_.shape.p, v = cfg_.shape.v;
  Result<std::string> text =
      String(entry.value, entry.path, "a Megatron layout string");
  if (!text.ok()) return text.error();
  Result<std::vector<int>> counts =
      ParseMegatronLayout(*text, cfg_.layers, p, v);
  if (!counts.ok()) {
    std::string message = counts.error().message;
    if (cli_.stages || cli_.virtual_stages) {
      message += " (" + StagesNote() + ")";
    }
    return Fail(entry.path, message);
  }
  if (!cfg_.allow_empty_chunks) {
    for (int s = 0; s < p * v; ++s) {
      if ((*counts)[s] == 0) {
        return Fail(
            entry.path,
            "must give every stage a layer (set " + strategy_path_ +
                ".allow_empty_chunks to allow empty ones); got stage " +
                std::to_string(s) + " (" + StageName(s, p) + ") empty in \"" +
                Abbreviate(*text) + "\"");
      }
    }
  }
  cfg_.strategy.layers_per_stage = std::move(*counts);
  return Status();
}

// MindFormers offsets: stage s holds L / (p*v) + offset[s] of the L body
// layers (those between the leading embedding layers and the trailing
// head / MTP layers, which stay on the first and the last stage).
Status Parser::Offset(const Entry& entry) {
  const int p = cfg_.shape.p, v = cfg_.shape.v, stages = p * v;
  Result<StageInts> offset = ReadStageInts(entry, INT_MIN, true);
  if (!offset.ok()) return offset.error();
  const Pinned pin = PinnedLayers(cfg_.layers);
  const std::int64_t body =
      static_cast<std::int64_t>(cfg_.layers.size()) - pin.lead - pin.tail;
  const std::int64_t base = body / stages, remainder = body % stages;
  std::int64_t sum = 0;
  for (int x : offset->values) sum += x;
  if (sum != remainder) {
    return Fail(entry.path,
                "must add up to " + std::to_string(remainder) + " (the " +
                    std::to_string(body) +
                    " decoder layers mod p*v = " + std::to_string(stages) +
                    ", " + StagesNote() + "); got " + std::to_string(sum));
  }
  std::vector<int> counts(static_cast<size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    const std::int64_t c = base + offset->values[s];
    if (c < 0) {
      return Fail(offset->paths[s],
                  "must be at least -" + std::to_string(base) + " (" +
                      StageName(s, p) + " gets " + std::to_string(base) +
                      " + offset decoder layers); got " +
                      std::to_string(offset->values[s]));
    }
    counts[s] = static_cast<int>(c);
  }
  counts.front() += pin.lead;
  counts.back() += pin.tail;
  if (!cfg_.allow_empty_chunks) {
    for (int s = 0; s < stages; ++s) {
      if (counts[s] == 0) {
        return Fail(offset->paths[s],
                    "must leave " + StageName(s, p) +
                        " at least one layer (set " + strategy_path_ +
                        ".allow_empty_chunks to allow empty chunks); got " +
                        std::to_string(offset->values[s]) + " (" +
                        std::to_string(base) + " + offset = 0)");
      }
    }
  }
  cfg_.strategy.layers_per_stage = std::move(counts);
  return Status();
}

// strategy.recompute: per-mode "first N layers of each stage" lists in file
// order, then the per-layer choices of `layers`.
Status Parser::ParseRecompute(const Entry& rc) {
  Result<Entries> modes = Map(rc.value, rc.path, {});
  if (!modes.ok()) return modes.error();
  std::vector<std::string> offered;
  for (const Layer& l : cfg_.layers) {
    for (const RecomputeOption& o : l.recompute) {
      if (std::find(offered.begin(), offered.end(), o.name) ==
          offered.end()) {
        offered.push_back(o.name);
      }
    }
  }
  const std::string offered_list =
      offered.empty() ? std::string("none") : Join(offered);
  const std::vector<int>& per_stage = cfg_.strategy.layers_per_stage;
  const int p = cfg_.shape.p;

  for (const Entry& mode : *modes) {
    if (mode.key == "layers") continue;
    if (std::find(offered.begin(), offered.end(), mode.key) ==
        offered.end()) {
      if (mode.key == "full" && cfg_.shape.ep_overlap_ppm > 0) {
        return Fail(mode.path,
                    "must not recompute layers fully with training.moe.overlap_ep_comm "
                    "(Megatron's --overlap-moe-expert-parallel-comm refuses full "
                    "recompute; the layers offer " + offered_list + "); got full");
      }
      return Fail(mode.path,
                  "must name a recompute mode some layer offers (" +
                      offered_list + ") or be layers; got " + mode.key);
    }
    std::vector<int> counts;
    if (mode.value.IsScalar() && (Lower(mode.value.Scalar()) == "true" ||
                                  Lower(mode.value.Scalar()) == "false")) {
      // MindFormers' bool: every layer (true) or none.
      counts = per_stage;
      if (Lower(mode.value.Scalar()) == "false") {
        counts.assign(per_stage.size(), 0);
      }
    } else {
      Result<StageInts> n = ReadStageInts(mode, 0, true);
      if (!n.ok()) return n.error();
      for (size_t s = 0; s < per_stage.size(); ++s) {
        if (n->values[s] > per_stage[s]) {
          return Fail(n->paths[s],
                      "must be at most the " + std::to_string(per_stage[s]) +
                          " layers of stage " + std::to_string(s) + " (" +
                          StageName(static_cast<int>(s), p) + "); got " +
                          std::to_string(n->values[s]));
        }
      }
      counts = std::move(n->values);
    }
    Status s = ApplyFirstNRecompute(cfg_.layers, per_stage, counts, mode.key,
                                    cfg_.strategy.recompute);
    if (!s.ok()) return Fail(mode.path, s.error().message);
  }

  const Entry* layers = Find(*modes, "layers");
  if (layers == nullptr) return Status();
  Result<Entries> choices = Map(layers->value, layers->path, {});
  if (!choices.ok()) return choices.error();
  for (const Entry& choice : *choices) {
    size_t i = 0;
    while (i < cfg_.layers.size() && cfg_.layers[i].name != choice.key) ++i;
    if (i == cfg_.layers.size()) {
      return Fail(choice.path,
                  "must name a layer of the model (after repeat, e.g. " +
                      cfg_.layers.back().name + "); got " + choice.key);
    }
    const Layer& l = cfg_.layers[i];
    std::vector<std::string> modes_of_layer = {"none"};
    for (const RecomputeOption& o : l.recompute) {
      modes_of_layer.push_back(o.name);
    }
    const std::string want = "must be a recompute mode " + l.name +
                             " offers (" + Join(modes_of_layer) + ")";
    if (!choice.value.IsScalar()) {
      return Fail(choice.path, want + "; got " + Given(choice.value));
    }
    const std::string& name = choice.value.Scalar();
    auto it = std::find(modes_of_layer.begin(), modes_of_layer.end(), name);
    if (it == modes_of_layer.end()) {
      return Fail(choice.path, want + "; got " + Given(choice.value));
    }
    cfg_.strategy.recompute[i] =
        static_cast<std::uint8_t>(it - modes_of_layer.begin());
  }
  return Status();
}

}  // namespace ppb::config_detail
