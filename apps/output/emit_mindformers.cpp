// MindFormers' form of a strategy: the YAML fragment (parallel_config,
// model.model_config offset and recompute_config lists, and
// parallel.pipeline_config when v > 1), and ParseMindFormersYaml, which
// reads it back the way MindFormers' LayerSetting does
// (mindformers/models/utils.py, mindspore-lab/mindformers at 0afce880;
// docs/framework-output.md): pp_interleave_num counts only with
// pipeline_interleave on; offset is broadcast to [v][p] and must add up to
// num_layers mod p*v; a recompute value is a bool (all or none), a list of
// p counts (spread over a rank's chunks in turn) or a [v][p] list (counts
// or bools, each capped at the stage's layers); a layer in the full list
// ignores the select lists. Refusals are Errors named "--emit mindformers".
#include "apps/output/emit.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/search_problem.h"
#include "apps/output/emit_common.h"
#include "apps/output/emit_mindformers_model.h"
#include "apps/output/output.h"
#include "core/strategy.h"
#include "schedules/schedule.h"

namespace ppb {

using namespace emit_detail;  // NOLINT: the helpers of emit_common.h

namespace {

// MindFormers' recompute lists for the body (decoder) layers of each stage,
// counted from the stage's first decoder layer (conventions.md, MindFormers:
// "full recompute: first N layers of each stage", select lists likewise;
// a layer in an earlier list keeps it): recompute = the leading "full"
// layers; then layers in both select lists ("both_comm_select"), then those
// in one ("selective" or "select_comm"). `note` says why it cannot.
struct MindFormersRecompute {
  std::vector<int> full, select, comm;
  std::string note;
};
MindFormersRecompute MindFormersLists(const RunConfig& config, const std::vector<int>& body,
                                      const Pinned& pin) {
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const size_t stages = s.layers_per_stage.size();
  MindFormersRecompute out;
  out.full.assign(stages, 0);
  out.select.assign(stages, 0);
  out.comm.assign(stages, 0);
  const std::string what = "the strategy recomputes " + RecomputeSummary(config);
  const size_t n = layers.size();
  for (size_t i = 0; i < n; ++i) {
    const bool pinned = i < static_cast<size_t>(pin.lead) || i >= n - static_cast<size_t>(pin.tail);
    if (pinned && s.recompute[i] != 0) {
      out.note = fmt::format(
          "no recompute lists: MindFormers' lists cover the decoder layers "
          "only, and {} ({}) recomputes; {}",
          layers[i].name, LayerKindName(layers[i].kind), what);
      return out;
    }
  }
  size_t i = static_cast<size_t>(pin.lead);
  for (size_t st = 0; st < stages; ++st) {
    // Phases: 0 full, 1 both, 2 one select list, 3 none.
    int phase = 0;
    std::string one;  // the mode of phase 2
    for (int k = 0; k < body[st]; ++k, ++i) {
      const std::string m = ModeOf(layers, s, i);
      int want = 3;
      if (m == "full") {
        want = 0;
      } else if (m == "both_comm_select") {
        want = 1;
      } else if (m == "selective" || m == "select_comm") {
        want = 2;
      } else if (!m.empty()) {
        out.note = fmt::format(
            "no recompute lists: MindFormers has recompute, select_recompute "
            "and select_comm_recompute (ppb modes full, selective, "
            "select_comm, both_comm_select); {} uses '{}'; {}",
            layers[i].name, m, what);
        return out;
      }
      if (want < phase || (want == 2 && phase == 2 && m != one)) {
        out.note = fmt::format(
            "no recompute lists: MindFormers recomputes the first N decoder "
            "layers of a stage per list (full first, then both select lists, "
            "then one); {} breaks that order; {}",
            StageName(static_cast<int>(st), config.shape.p), what);
        return out;
      }
      phase = want;
      if (want == 2) one = m;
      if (want == 0) {
        ++out.full[st];
        ++out.select[st];
        ++out.comm[st];
      } else if (want == 1) {
        ++out.select[st];
        ++out.comm[st];
      } else if (want == 2) {
        ++(m == "selective" ? out.select[st] : out.comm[st]);
      }
    }
  }
  // A select list that only repeats the full layers says nothing more.
  if (out.select == out.full) out.select.assign(stages, 0);
  if (out.comm == out.full) out.comm.assign(stages, 0);
  return out;
}

std::string RecomputeValue(const std::vector<int>& counts, int p, int v) {
  if (std::all_of(counts.begin(), counts.end(), [](int c) { return c == 0; })) {
    return "false";
  }
  return StageList(counts, p, v);
}

}  // namespace

Result<Emission> emit_detail::EmitMindFormers(const RunConfig& config) {
  const Framework f = Framework::MindFormers;
  const std::vector<Layer>& layers = config.layers;
  const Strategy& s = config.strategy;
  const int p = config.shape.p, v = config.shape.v, m = config.shape.m;
  const int stages = p * v;
  const Pinned pin = PinnedLayers(layers);
  const int n = static_cast<int>(layers.size());
  for (int i = pin.lead; i < n - pin.tail; ++i) {
    if (!IsDecoder(layers[static_cast<size_t>(i)].kind)) {
      return Fail(f, fmt::format("counts only decoder layers between the embedding and "
                                 "the head/MTP layers (num_layers); got {} ({}) among "
                                 "them",
                                 layers[static_cast<size_t>(i)].name,
                                 LayerKindName(layers[static_cast<size_t>(i)].kind)));
    }
  }
  if (const int empty = FirstEmptyStage(s); empty >= 0) {
    return Fail(f, fmt::format("would give {} no layer; ppb emits no empty "
                               "stage for MindFormers",
                               StageName(empty, p)));
  }
  if (s.layers_per_stage.front() < pin.lead || s.layers_per_stage.back() < pin.tail) {
    return Fail(f,
                "keeps the embedding on the first stage and the head and "
                "MTP layers on the last (num_layers counts the decoder "
                "layers only); the strategy moves them");
  }
  std::vector<int> body = s.layers_per_stage;
  body.front() -= pin.lead;
  body.back() -= pin.tail;
  const int decoders = n - pin.lead - pin.tail;
  const int base = decoders / stages;
  std::vector<int> offset;
  for (int b : body) offset.push_back(b - base);

  Emission e;
  e.framework = f;
  std::string& text = e.text;
  AddNote(text, fmt::format("MindFormers settings for {}: {}",
                            config.model_name.empty() ? config.path : config.model_name,
                            DescribeRun(config)));
  const Training& t = config.training;
  // A derived model's whole run (MindFormers' mcore form): its shape, the
  // batch (base_trainer.py: batch_size sequences a micro-batch; without a
  // pipeline, gradient_accumulation_steps of them a step).
  std::string why_no_shape;
  std::optional<std::vector<std::pair<std::string, std::string>>> shape;
  if (!config.derived.empty()) {
    shape = MindFormersModelFields(config.architecture, why_no_shape);
    text += "use_legacy: False\n";
    text += "runner_config:\n";
    text += fmt::format("  batch_size: {}\n", t.micro_batch);
    if (p == 1) text += fmt::format("  gradient_accumulation_steps: {}\n", m);
  }
  // MindSpore's pipeline_config: pipeline_interleave for v > 1 (LayerSetting
  // takes pp_interleave_num only when MindSpore's auto-parallel context has
  // it on, else it runs v = 1 and refuses a [v][p] offset), and the
  // scheduler, 1f1b or gpipe.
  const bool gpipe = config.schedule == "gpipe" && v == 1;
  if (v > 1 || gpipe) {
    text += "parallel:\n  pipeline_config:\n";
    if (v > 1) text += "    pipeline_interleave: true\n";
    text += fmt::format("    pipeline_scheduler: '{}'\n", gpipe ? "gpipe" : "1f1b");
  }
  if (!config.derived.empty()) {
    // The optimizer's sharding over data parallel (MindSpore's parallel
    // context), beside the pipeline_config above.
    if (v <= 1 && !gpipe) text += "parallel:\n";
    text += fmt::format("  enable_parallel_optimizer: {}\n",
                        t.distributed_optimizer ? "True" : "False");
  }
  text += "parallel_config:\n";
  if (!config.derived.empty()) {
    // The job's other dimensions (TransformerOpParallelConfig): device_num
    // = data_parallel x model_parallel x context_parallel x pipeline_stage.
    text += fmt::format("  data_parallel: {}\n", t.dp);
    text += fmt::format("  model_parallel: {}\n", t.tp);
    text += fmt::format("  context_parallel: {}\n", t.cp);
    if (t.ep > 1) text += fmt::format("  expert_parallel: {}\n", t.ep);
    text += fmt::format("  use_seq_parallel: {}\n", t.sp && t.tp > 1 ? "True" : "False");
  }
  text += fmt::format("  pipeline_stage: {}\n", p);
  text += fmt::format("  micro_batch_num: {}\n", m);
  text += "model:\n  model_config:\n";
  text += fmt::format("    num_layers: {}\n", decoders);
  if (shape) {
    for (const auto& [key, value] : *shape) {
      if (key != "num_layers") text += fmt::format("    {}: {}\n", key, value);
    }
    if (config.architecture.experts > 0) {
      // expert_tensor_parallel_size (None: experts unsplit in the mcore
      // training graph).
      text += fmt::format("    expert_model_parallel: {}\n", ExpertTp(t));
    }
  }
  if (!config.derived.empty()) {
    text += fmt::format("    seq_length: {}\n", t.seq);
    text += fmt::format("    compute_dtype: \"{}\"\n", t.dtype == Dtype::Bf16   ? "bfloat16"
                                                       : t.dtype == Dtype::Fp16 ? "float16"
                                                                                : "float32");
  }
  text += fmt::format("    pp_interleave_num: {}\n", v);
  const bool zero = std::all_of(offset.begin(), offset.end(), [](int o) { return o == 0; });
  text += fmt::format("    offset: {}\n", zero ? "0" : StageList(offset, p, v));
  const MindFormersRecompute rc = MindFormersLists(config, body, pin);
  e.recompute_expressed = rc.note.empty();
  text += "recompute_config:\n";
  const std::vector<int> none(static_cast<size_t>(stages), 0);
  text += "  recompute: " + RecomputeValue(rc.note.empty() ? rc.full : none, p, v) + "\n";
  text += "  select_recompute: " + RecomputeValue(rc.note.empty() ? rc.select : none, p, v) + "\n";
  text +=
      "  select_comm_recompute: " + RecomputeValue(rc.note.empty() ? rc.comm : none, p, v) + "\n";
  std::string pinned = fmt::format(
      "stage layers = num_layers // (p*v) + offset = {} + offset (sum(offset) "
      "= num_layers mod p*v = {}); num_layers counts decoder layers only",
      base, decoders % stages);
  if (pin.lead > 0) pinned += ", the embedding stays on stage 0";
  if (pin.tail > 0) {
    pinned += fmt::format(
        ", the last stage also holds {}",
        pin.tail == 1 ? std::string("the head") : fmt::format("the {} head/MTP layers", pin.tail));
  }
  AddNote(text, pinned);
  if (PlacementOf(config.schedule, v) == StagePlacement::V) {
    AddNote(text, "simulated under schedule " + config.schedule +
                      ", whose V placement (rank r holds stages r and 2p-1-r) "
                      "MindFormers' stage lists cannot express: they read "
                      "stage s as chunk s / p of rank s mod p; the lists give "
                      "each stage's layers in model order, which MindFormers "
                      "runs on that loop placement");
  } else if (config.schedule != "1f1b" && config.schedule != "interleaved" && !gpipe) {
    AddNote(text, "simulated under schedule " + config.schedule +
                      "; these keys set the split and the recompute only");
  } else if (config.schedule == "interleaved" && v == 1) {
    AddNote(text, "simulated under schedule " + config.schedule +
                      "; these keys set the split and the recompute only");
  }
  if (!rc.note.empty()) AddNote(text, rc.note);
  if (!why_no_shape.empty()) AddNote(text, why_no_shape);
  if (!config.derived.empty()) {
    // MindSpore's graph compiler places the communication; MindFormers'
    // YAML has no overlap switch for ppb to set.
    std::vector<std::string> overlap;
    if (t.overlap_grad_reduce) overlap.push_back("overlap_grad_reduce");
    if (t.overlap_param_gather) overlap.push_back("overlap_param_gather");
    if (t.tp_comm_overlap) overlap.push_back("tp_comm_overlap");
    for (const std::string& o : overlap) {
      AddNote(text, fmt::format("cannot express training.{}: MindFormers' YAML has no such "
                                "switch (MindSpore's compiler schedules the communication)",
                                o));
    }
  }
  if (!config.derived.empty() && t.grad_dtype != Dtype::Fp32) {
    AddNote(text, fmt::format("cannot express training.grad_dtype {}: MindSpore keeps the "
                              "gradients in the parameters' float32",
                              DtypeName(t.grad_dtype)));
  }
  NoteLowPrecisionNotEmitted(text, config, "MindFormers");
  NoteShardingNotEmitted(text, config, "MindFormers");
  NoteMoeNotEmitted(text, config, "MindFormers", shape.has_value());
  return e;
}

namespace {

// MindFormers' offset: an int, a list of p or a [v][p] list, broadcast to
// [v][p] as numpy does (LayerSetting._check_inputs checks the last two
// dimensions and that the given values add up to num_layers mod p*v).
Result<std::vector<int>> OffsetValues(const YAML::Node& node, int p, int v, int decoders) {
  const size_t stages = static_cast<size_t>(p) * v;
  const int remainder = decoders % (p * v);
  auto bad = [](const std::string& what) { return Error{"", "offset: " + what}; };
  try {
    std::vector<int> given;
    size_t rows = 0;  // 0: a scalar, 1: a list of p, v: a [v][p] list
    if (node.IsScalar()) {
      given.push_back(node.as<int>());
    } else if (node.IsSequence() && node.size() > 0 && node[0].IsSequence()) {
      if (node.size() != static_cast<size_t>(v)) {
        return bad(fmt::format("offset.shape[-2] must equal pp_interleave_num ({}) "
                               "(MindFormers); got {}",
                               v, node.size()));
      }
      for (const YAML::Node& row : node) {
        if (!row.IsSequence() || row.size() != static_cast<size_t>(p)) {
          return bad(fmt::format("each row must hold pipeline_stage = {} values", p));
        }
        for (const YAML::Node& x : row) given.push_back(x.as<int>());
      }
      rows = static_cast<size_t>(v);
    } else if (node.IsSequence()) {
      if (node.size() != static_cast<size_t>(p)) {
        return bad(fmt::format("offset.shape[-1] must equal pipeline_stage ({}) "
                               "(MindFormers); got {}",
                               p, node.size()));
      }
      for (const YAML::Node& x : node) given.push_back(x.as<int>());
      rows = 1;
    } else {
      return bad("must be an int or a list");
    }
    int sum = 0;
    for (int x : given) sum += x;
    if (sum != remainder) {
      return Error{"", fmt::format("offset must add up to num_layers mod p*v = {} mod {} "
                                   "= {} (MindFormers); got {}",
                                   decoders, p * v, remainder, sum)};
    }
    std::vector<int> out(stages);
    for (size_t st = 0; st < stages; ++st) {
      out[st] = rows == 0 ? given[0] : rows == 1 ? given[st % static_cast<size_t>(p)] : given[st];
    }
    return out;
  } catch (const YAML::Exception&) {
    return bad("must hold integers");
  }
}

// One of MindFormers' recompute values as recomputed layers per stage
// (LayerSetting._format_recompute_list): true / false = every / no layer;
// a list of p ints or bools = per rank, dealt over the rank's chunks one
// layer at a time in chunk order (_alloc_recompute_layer); a [v][p] list =
// per stage, an int capped at the stage's layers, a bool all or none.
Result<std::vector<int>> RecomputeValues(const YAML::Node& node, const std::string& key, int p,
                                         int v, const std::vector<int>& body) {
  const size_t stages = static_cast<size_t>(p) * v;
  auto bad = [&](const std::string& what) { return Error{"", key + ": " + what}; };
  auto as_count = [](const YAML::Node& x, int all) {
    const std::string t = x.Scalar();
    if (t == "true" || t == "True") return all;
    if (t == "false" || t == "False") return 0;
    return x.as<int>();
  };
  try {
    if (node.IsScalar()) {
      const std::string t = node.Scalar();
      if (t == "true" || t == "True") return body;
      if (t == "false" || t == "False") return std::vector<int>(stages, 0);
      return bad("must be a bool, a list of p or a [v][p] list (MindFormers); got " + t);
    }
    if (!node.IsSequence()) return bad("must be a bool or a list");
    std::vector<int> out(stages, 0);
    if (node.size() > 0 && node[0].IsSequence()) {
      if (node.size() != static_cast<size_t>(v)) {
        return bad(fmt::format("a [v][p] list needs v = {} rows", v));
      }
      for (size_t c = 0; c < node.size(); ++c) {
        const YAML::Node row = node[c];
        if (!row.IsSequence() || row.size() != static_cast<size_t>(p)) {
          return bad(fmt::format("a [v][p] list needs p = {} columns", p));
        }
        for (size_t r = 0; r < row.size(); ++r) {
          const size_t st = c * static_cast<size_t>(p) + r;
          const int n = as_count(row[r], body[st]);
          if (n < 0) return bad(fmt::format("stage {}: {} is negative", st, n));
          out[st] = std::min(n, body[st]);
        }
      }
      return out;
    }
    if (node.size() != static_cast<size_t>(p)) {
      return bad(fmt::format("a list of p = {} (one per rank) or a [v][p] list", p));
    }
    for (size_t r = 0; r < node.size(); ++r) {
      int total = 0;
      for (int c = 0; c < v; ++c) total += body[static_cast<size_t>(c) * p + r];
      int n = as_count(node[r], total);
      if (n < 0) return bad(fmt::format("rank {}: {} is negative", r, n));
      n = std::min(n, total);
      while (n > 0) {
        for (int c = 0; c < v && n > 0; ++c) {
          const size_t st = static_cast<size_t>(c) * p + r;
          if (out[st] < body[st]) {
            ++out[st];
            --n;
          }
        }
      }
    }
    return out;
  } catch (const YAML::Exception&) {
    return bad("must hold integers or bools");
  }
}

Result<EmittedPlan> ReadMindFormers(const YAML::Node& root, const std::vector<Layer>& layers);

}  // namespace

Result<EmittedPlan> ParseMindFormersYaml(std::string_view text, const std::vector<Layer>& layers) {
  try {
    return ReadMindFormers(YAML::Load(std::string(text)), layers);
  } catch (const YAML::Exception& ex) {
    return Error{"", std::string("not the MindFormers fragment: ") + ex.what()};
  }
}

namespace {

Result<EmittedPlan> ReadMindFormers(const YAML::Node& root, const std::vector<Layer>& layers) {
  EmittedPlan plan;
  const YAML::Node model = root["model"]["model_config"];
  const YAML::Node parallel = root["parallel_config"];
  try {
    if (!parallel["pipeline_stage"]) {
      return Error{"", "parallel_config.pipeline_stage: missing"};
    }
    plan.p = parallel["pipeline_stage"].as<int>();
    if (parallel["micro_batch_num"]) {
      plan.m = parallel["micro_batch_num"].as<int>();
    }
    // LayerSetting: pp_interleave_num if pipeline_interleave else 1.
    bool on = false;
    if (const YAML::Node par = root["parallel"]; par && par.IsMap()) {
      if (const YAML::Node pc = par["pipeline_config"]; pc && pc.IsMap()) {
        const YAML::Node flag = pc["pipeline_interleave"];
        on = flag && flag.as<bool>();
      }
    }
    plan.v = on && model["pp_interleave_num"] ? model["pp_interleave_num"].as<int>() : 1;
  } catch (const YAML::Exception&) {
    return Error{"",
                 "pipeline_stage, micro_batch_num and pp_interleave_num "
                 "must be integers"};
  }
  if (plan.p < 1 || plan.v < 1) {
    return Error{"", "pipeline_stage and pp_interleave_num must be positive"};
  }
  const int stages = plan.p * plan.v;
  const Pinned pin = PinnedLayers(layers);
  const int decoders = static_cast<int>(layers.size()) - pin.lead - pin.tail;
  try {
    if (!model["num_layers"] || model["num_layers"].as<int>() != decoders) {
      return Error{"", fmt::format("model.model_config.num_layers must be the "
                                   "model's {} decoder layers",
                                   decoders)};
    }
  } catch (const YAML::Exception&) {
    return Error{"", "model.model_config.num_layers must be an integer"};
  }
  std::vector<int> offset(static_cast<size_t>(stages), 0);
  if (model["offset"]) {
    Result<std::vector<int>> o = OffsetValues(model["offset"], plan.p, plan.v, decoders);
    if (!o.ok()) return o.error();
    offset = std::move(*o);
  } else if (decoders % stages != 0) {
    return Error{"", fmt::format("offset must add up to num_layers mod p*v = {} mod {} = "
                                 "{} (MindFormers); got 0",
                                 decoders, stages, decoders % stages)};
  }
  std::vector<int> body;
  for (int s = 0; s < stages; ++s) {
    const int c = decoders / stages + offset[static_cast<size_t>(s)];
    if (c < 0) {
      return Error{"", fmt::format("offset gives stage {} {} layers", s, c)};
    }
    body.push_back(c);
  }
  plan.strategy.layers_per_stage = body;
  plan.strategy.layers_per_stage.front() += pin.lead;
  plan.strategy.layers_per_stage.back() += pin.tail;

  // Recompute: the first N decoder layers of each stage per list; a layer
  // in the recompute list is full, else in both select lists
  // both_comm_select, else in one the list's mode.
  const YAML::Node rcfg = root["recompute_config"];
  std::vector<std::vector<int>> lists;
  for (const char* key : {"recompute", "select_recompute", "select_comm_recompute"}) {
    std::vector<int> counts(static_cast<size_t>(stages), 0);
    if (rcfg && rcfg[key]) {
      Result<std::vector<int>> c = RecomputeValues(rcfg[key], key, plan.p, plan.v, body);
      if (!c.ok()) return c.error();
      counts = std::move(*c);
    }
    lists.push_back(std::move(counts));
  }
  std::vector<std::uint8_t>& rc = plan.strategy.recompute;
  rc.assign(layers.size(), 0);
  size_t i = static_cast<size_t>(pin.lead);
  for (int s = 0; s < stages; ++s) {
    for (int k = 0; k < body[s]; ++k, ++i) {
      const bool full = k < lists[0][s], sel = k < lists[1][s], comm = k < lists[2][s];
      const char* mode = full          ? "full"
                         : sel && comm ? "both_comm_select"
                         : sel         ? "selective"
                         : comm        ? "select_comm"
                                       : nullptr;
      if (mode == nullptr) continue;
      rc[i] = OptionIndex(layers[i], mode);
      if (rc[i] == 0) {
        return Error{"", fmt::format("layer {} offers no recompute mode {}", layers[i].name, mode)};
      }
    }
  }
  return plan;
}

}  // namespace

}  // namespace ppb
