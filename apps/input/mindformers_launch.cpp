// ReadMindFormersLaunch (apps/input/mindformers_launch.h).
#include "apps/input/mindformers_launch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/mindformers_doc.h"
#include "apps/input/mindformers_model.h"
#include "core/architecture.h"

namespace ppb {
namespace {

using namespace mindformers_detail;  // NOLINT: the reader's own helpers

// An op-level recompute map's counts as one list: the largest count of its
// patterns per stage (a list of p, or [v][p]; a bool all or none).
YAML::Node OpCounts(const Doc& doc, const std::string& key, const YAML::Node& map) {
  std::vector<std::vector<std::int64_t>> rows;  // [v][p]; one row for a list of p
  bool nested = false, any = false;
  const std::string want =
      "a map of op patterns to per-stage counts, each a list of p or a [v][p] list of "
      "integers, all of one shape";
  for (const auto& kv : map) {
    const YAML::Node value = kv.second;
    if (!value.IsSequence() || value.size() == 0) doc.Wrong(key, want);
    const bool here = value[0].IsSequence();
    std::vector<std::vector<std::int64_t>> r;
    for (const YAML::Node& x : value) {
      std::vector<std::int64_t> row;
      if (here) {
        if (!x.IsSequence()) doc.Wrong(key, want);
        for (const YAML::Node& y : x) {
          const std::optional<std::int64_t> c = Doc::AsInt(y);
          if (!c || *c < 0 || *c > kMaxInt) doc.Wrong(key, want);
          row.push_back(*c);
        }
      } else {
        const std::optional<std::int64_t> c = Doc::AsInt(x);
        if (!c || *c < 0 || *c > kMaxInt) doc.Wrong(key, want);
        row.push_back(*c);
      }
      r.push_back(std::move(row));
    }
    if (!here)
      r = {[&] {
        std::vector<std::int64_t> flat;
        for (const auto& one : r) flat.push_back(one[0]);
        return flat;
      }()};
    if (!any) {
      rows = r;
      nested = here;
      any = true;
      continue;
    }
    if (here != nested || r.size() != rows.size()) doc.Wrong(key, want);
    for (size_t i = 0; i < r.size(); ++i) {
      if (r[i].size() != rows[i].size()) doc.Wrong(key, want);
      for (size_t j = 0; j < r[i].size(); ++j) rows[i][j] = std::max(rows[i][j], r[i][j]);
    }
  }
  if (!any) doc.Wrong(key, want);
  YAML::Node out(YAML::NodeType::Sequence);
  for (const auto& row : rows) {
    if (!nested) {
      for (std::int64_t c : row) out.push_back(c);
      continue;
    }
    YAML::Node r(YAML::NodeType::Sequence);
    for (std::int64_t c : row) r.push_back(c);
    out.push_back(r);
  }
  return out;
}

// The pipeline schedule by MindSpore's pipeline_scheduler.
std::string Schedule(Doc& doc, int v) {
  const std::string key = "parallel.pipeline_config.pipeline_scheduler";
  const std::string s = doc.Str(key, "1f1b");
  if (s == "1f1b") return v > 1 ? "interleaved" : "1f1b";
  if (s == "gpipe") {
    if (v > 1) doc.Wrong(key, "1f1b with pp_interleave_num > 1 (gpipe runs one chunk a rank)");
    return "gpipe";
  }
  if (s == "zero_bubble_v") {
    if (v != 2) {
      Fail(
          fmt::format("{}: {}: zero_bubble_v must run pp_interleave_num = 2 with "
                      "pipeline_interleave (its V of two chunks a rank); got {}",
                      doc.Line(key), key, v));
    }
    return "zb-v";
  }
  doc.Wrong(key,
            "1f1b, gpipe or zero_bubble_v (ppb does not model seqpipe, seqvpp or "
            "seqsmartvpp, which split each sequence across the pipeline)");
}

LaunchRun Translate(Doc& doc, const LaunchInputs& in) {
  LaunchRun run;
  ConfigWriter o;
  std::vector<std::string>& notes = run.notes;
  const std::string& path = doc.path();
  // A key's origin; one not given is MindFormers' default.
  auto where = [&](const std::string& key) {
    return doc.Has(key) ? doc.Line(key) + ": " + key : path + ": " + key + " (default)";
  };
  // Keys MindFormers' config classes take (TransformerOpParallelConfig,
  // TransformerRecomputeConfig); any other is its TypeError.
  static const std::vector<std::string> kParallel = {"data_parallel",
                                                     "model_parallel",
                                                     "context_parallel",
                                                     "expert_parallel",
                                                     "pipeline_stage",
                                                     "micro_batch_num",
                                                     "seq_split_num",
                                                     "use_seq_parallel",
                                                     "optimizer_shard",
                                                     "gradient_aggregation_group",
                                                     "vocab_emb_dp",
                                                     "context_parallel_algo",
                                                     "ulysses_degree_in_cp",
                                                     "mem_coeff",
                                                     "recompute",
                                                     "swap"};
  static const std::vector<std::string> kRecompute = {"recompute",
                                                      "select_recompute",
                                                      "parallel_optimizer_comm_recompute",
                                                      "select_comm_recompute",
                                                      "mp_comm_recompute",
                                                      "recompute_slice_activation",
                                                      "select_recompute_exclude",
                                                      "select_comm_recompute_exclude"};
  for (const auto& [section, keys] : {std::pair{std::string("parallel_config"), &kParallel},
                                      std::pair{std::string("recompute_config"), &kRecompute}}) {
    const YAML::Node n = doc.Get(section);
    if (!n.IsDefined() || n.IsNull()) continue;
    if (!n.IsMap()) doc.Wrong(section, "a map");
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      if (std::find(keys->begin(), keys->end(), k) == keys->end()) {
        doc.Wrong(section + "." + k, fmt::format("a field of {}'s {} ({})", kVersion, section,
                                                 fmt::join(*keys, ", ")));
      }
    }
  }
  // use_legacy: the form is told by model_config itself (model_type for
  // the mcore form, type: LlamaConfig for the legacy one).
  doc.MarkRead("use_legacy");

  // ---- the model ------------------------------------------------------------
  ModelDict d = ReadModelDict(doc, notes);
  const bool legacy = !d.hf.contains("model_type");
  const Architecture arch = ReadModel(doc, d);
  std::string model_name;
  if (doc.Has("trainer.model_name")) model_name = doc.Str("trainer.model_name", "");
  o.Line(0, fmt::format("# ppb config read from {} ({} training YAML)", path, kVersion));
  o.Line(0, "model:");
  o.Text(2, "name", model_name.empty() ? d.hf["model_type"].get<std::string>() : model_name,
         model_name.empty() ? d.origin["model_type"] : where("trainer.model_name"));
  WriteArchitecture(o, arch, d.origin, doc.Line("model.model_config") + ": model.model_config");

  // ---- the degrees and the world ---------------------------------------------
  const std::string want = "an integer >= 1";
  const std::int64_t dp = doc.Int("parallel_config.data_parallel", 1, 1, want);
  const std::int64_t mp = doc.Int("parallel_config.model_parallel", 1, 1, want);
  const std::int64_t cp = doc.Int("parallel_config.context_parallel", 1, 1, want);
  const std::int64_t ep = doc.Int("parallel_config.expert_parallel", 1, 1, want);
  const std::int64_t pp = doc.Int("parallel_config.pipeline_stage", 1, 1, want);
  const bool sp = doc.Bool("parallel_config.use_seq_parallel", false);
  const std::int64_t world = dp * mp * cp * pp;
  std::string world_where = fmt::format(
      "{}: parallel_config (data_parallel x model_parallel x "
      "context_parallel x pipeline_stage)",
      path);
  if (in.gpus && *in.gpus != world) {
    Fail(
        fmt::format("{}: parallel_config: data_parallel x model_parallel x context_parallel x "
                    "pipeline_stage must be the device count --gpus gives ({}; MindFormers "
                    "runs every device in the layout); got {} x {} x {} x {} = {}",
                    doc.Line("parallel_config"), *in.gpus, dp, mp, cp, pp, world));
  }
  if (ep > 1 && arch.experts == 0) {
    doc.Wrong("parallel_config.expert_parallel", "1 for a model without experts");
  }

  // ---- the batch (base_trainer.py) -----------------------------------------------
  const std::int64_t batch = doc.Int("runner_config.batch_size", 1, 1, want);
  const std::int64_t accumulate = doc.Int("runner_config.gradient_accumulation_steps", 1, 1, want);
  const std::int64_t interleave = doc.Int("micro_batch_interleave_num", 1, 1, want);
  std::int64_t m = 1;
  std::string m_where;
  if (pp > 1) {
    m = doc.Int("parallel_config.micro_batch_num", 1, 1, want);
    m_where = where("parallel_config.micro_batch_num");
    if (m < pp) {
      Fail(
          fmt::format("{}: parallel_config.micro_batch_num: must be at least pipeline_stage "
                      "({}; MindFormers' check); got {}",
                      doc.Line("parallel_config.micro_batch_num"), pp, m));
    }
    if (accumulate > 1) {
      notes.push_back(
          "runner_config.gradient_accumulation_steps: not used under pipeline parallelism "
          "(MindFormers' base_trainer.py); micro_batch_num sets the step");
    }
  } else {
    doc.Get("parallel_config.micro_batch_num");
    m = accumulate;
    m_where = where("runner_config.gradient_accumulation_steps");
  }
  const std::int64_t mbs = batch * interleave;
  if (interleave > 1) {
    notes.push_back(fmt::format(
        "micro_batch_interleave_num: {}: each micro-batch's {} sequences are simulated as one "
        "micro-batch of {}; the overlap of its slices' tensor-parallel communication is not "
        "modelled",
        interleave, mbs, mbs));
  }
  // The sequence: the model's seq_length, else the dataset's (the mcore
  // form's BlendedMegatronDatasetDataLoader config).
  std::string seq_key = "model.model_config.seq_length";
  if (!doc.Has(seq_key) && doc.Has("train_dataset.data_loader.config.seq_length")) {
    seq_key = "train_dataset.data_loader.config.seq_length";
  }
  const std::optional<std::int64_t> seq = Doc::AsInt(doc.Get(seq_key));
  if (!seq || *seq < 1) {
    doc.Wrong(seq_key, "the sequence length (a positive integer)");
  }
  const std::string dtype_key = "model.model_config.compute_dtype";
  // The legacy classes compute in float16 by default (LlamaConfig,
  // ChatGLM2Config), the mcore form in bfloat16 (MFModelConfig).
  const std::string dtype = doc.Str(dtype_key, legacy ? "float16" : "bfloat16");
  std::string ppb_dtype;
  if (dtype == "bfloat16") {
    ppb_dtype = "bf16";
  } else if (dtype == "float16") {
    ppb_dtype = "fp16";
  } else if (dtype == "float32") {
    ppb_dtype = "fp32";
  } else {
    doc.Wrong(dtype_key, "bfloat16, float16 or float32");
  }
  const bool zero = doc.Bool("parallel.enable_parallel_optimizer", false);

  o.Line(0, "training:");
  o.Key(2, "seq_length", *seq, where(seq_key));
  o.Key(2, "micro_batch_size", mbs, where("runner_config.batch_size"));
  o.Key(2, "global_batch_size", mbs * dp * m, m_where);
  o.Key(2, "dtype", ppb_dtype, where(dtype_key));
  o.Key(2, "grad_dtype", "fp32", "");
  o.Key(2, "tensor_parallel", mp, where("parallel_config.model_parallel"));
  o.Key(2, "sequence_parallel", Bool(sp && mp > 1), where("parallel_config.use_seq_parallel"));
  o.Key(2, "context_parallel", cp, where("parallel_config.context_parallel"));
  if (arch.experts > 0) {
    o.Key(2, "expert_parallel", ep, where("parallel_config.expert_parallel"));
    if (!legacy) {
      // The mcore form's experts: expert_tensor_parallel_size (alias
      // expert_model_parallel) None runs them unsplit (training_graph/
      // tensor_parallel/batched_layers.py: etp 1), and EP divides dp x tp
      // (transformer/moe/ffn.py).
      std::int64_t etp = 1;
      std::string etp_where;
      for (const char* key : {"expert_model_parallel", "expert_tensor_parallel_size"}) {
        const std::string full = std::string("model.model_config.") + key;
        if (doc.Has(full)) {
          etp = doc.Int(full, 1, 1, want);
          etp_where = where(full);
        }
      }
      o.Line(2, fmt::format("moe: {{expert_tensor_parallel: {}}}", etp), etp_where);
    }
  }
  o.Key(2, "data_parallel", dp, where("parallel_config.data_parallel"));
  if (zero) {
    o.Key(2, "distributed_optimizer", "true", where("parallel.enable_parallel_optimizer"));
    notes.push_back(
        "parallel.enable_parallel_optimizer: MindSpore's optimizer parallel is simulated as "
        "ppb's distributed optimizer (optimizer state sharded over data parallel)");
  }

  // ---- the pipeline --------------------------------------------------------------
  const bool on = doc.Bool("parallel.pipeline_config.pipeline_interleave", false);
  std::int64_t v = 1;
  const std::int64_t given_v = doc.Int("model.model_config.pp_interleave_num", 1, 1, want);
  if (on) v = given_v;
  const std::string schedule = pp > 1 ? Schedule(doc, static_cast<int>(v)) : "1f1b";
  YAML::Node frag;
  frag["parallel_config"]["pipeline_stage"] = static_cast<int>(pp);
  frag["parallel_config"]["micro_batch_num"] = static_cast<int>(m);
  if (on) frag["parallel"]["pipeline_config"]["pipeline_interleave"] = true;
  frag["model"]["model_config"]["num_layers"] = arch.layers;
  frag["model"]["model_config"]["pp_interleave_num"] = static_cast<int>(given_v);
  if (doc.Has("model.model_config.offset")) {
    frag["model"]["model_config"]["offset"] = YAML::Clone(doc.Get("model.model_config.offset"));
  }
  std::string recompute_origin = path;
  for (const char* key : {"recompute", "select_recompute", "select_comm_recompute"}) {
    const std::string full = std::string("recompute_config.") + key;
    if (!doc.Has(full)) continue;
    const YAML::Node n = doc.Get(full);
    const std::optional<bool> off = Doc::AsBool(n);
    if (off && !*off) continue;
    if (std::string(key) == "select_comm_recompute") {
      // A derived model's layers recompute fully or selectively (core/
      // cost_model.h); the communication ops' outputs are not a mode.
      notes.push_back(
          fmt::format("{}: recomputing the communication ops' outputs is not modelled for a model "
                      "derived from its shape; simulated without it",
                      where(full)));
      continue;
    }
    if (n.IsMap()) {
      // An op-level list ({"feed_forward\\.mul": [14, 14], ...}): each op
      // pattern recomputed in the first N layers of each stage.
      frag["recompute_config"][key] = OpCounts(doc, full, n);
      notes.push_back(fmt::format(
          "{}: op-level selective recompute (per op pattern) is simulated as ppb's selective "
          "recompute (the attention core) on the first N decoder layers of each stage, N the "
          "largest count among the patterns",
          where(full)));
    } else {
      frag["recompute_config"][key] = YAML::Clone(n);
    }
    run.pipeline_origins[key] = where(full);
    if (recompute_origin == path) recompute_origin = where(full);
  }
  for (const char* key :
       {"mp_comm_recompute", "parallel_optimizer_comm_recompute", "recompute_slice_activation",
        "select_recompute_exclude", "select_comm_recompute_exclude"}) {
    const std::string full = std::string("recompute_config.") + key;
    if (doc.Has(full)) doc.Get(full);
  }
  YAML::Emitter e;
  e << frag;
  run.pipeline_flags = std::string(e.c_str()) + "\n";
  run.recompute_origin = recompute_origin;
  run.pipeline_origins["split"] = doc.Has("model.model_config.offset")
                                      ? where("model.model_config.offset")
                                      : where("parallel_config.pipeline_stage");

  o.Line(0, "pipeline:");
  o.Key(2, "stages", pp, where("parallel_config.pipeline_stage"));
  o.Key(2, "schedule", schedule,
        pp > 1 ? where("parallel.pipeline_config.pipeline_scheduler") : "");
  if (v > 1) o.Key(2, "virtual_stages", v, where("model.model_config.pp_interleave_num"));
  o.Line(0, "plan:");
  o.Key(2, "gpus", world, world_where);
  if (Status st = WriteCluster(o, in, path); !st.ok()) Fail(st.error().message);

  // ---- what was not read -------------------------------------------------------
  std::vector<std::string> ignored = d.ignored;
  for (const char* section : {"parallel_config", "recompute_config", "runner_config", "parallel",
                              "parallel.pipeline_config", "moe_config"}) {
    for (std::string& k : doc.Unread(section)) {
      if (k != "parallel.pipeline_config") ignored.push_back(std::move(k));
    }
  }
  for (std::string& k : doc.Unread("")) ignored.push_back(std::move(k));
  std::sort(ignored.begin(), ignored.end());
  FinishLaunch(run, o, ignored);
  return run;
}

}  // namespace

Result<LaunchRun> ReadMindFormersLaunch(const std::string& path, std::string_view text,
                                        const LaunchInputs& inputs) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error{"", fmt::format("{}:{}: must be valid YAML; got a syntax error ({})", path,
                                 e.mark.line + 1, e.msg)};
  }
  if (!root.IsMap()) {
    return Error{"", fmt::format("{}: must be a MindFormers training YAML (a map with "
                                 "model.model_config and parallel_config); got no map",
                                 path)};
  }
  try {
    Doc doc(path, root);
    return Translate(doc, inputs);
  } catch (const Bad& b) {
    return Error{"", b.message};
  } catch (const YAML::Exception& e) {
    return Error{"", fmt::format("{}:{}: must be readable YAML; got an error ({})", path,
                                 e.mark.line + 1, e.msg)};
  }
}

}  // namespace ppb