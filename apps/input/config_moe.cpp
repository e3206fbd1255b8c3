// training.moe (core/moe.h): the token dispatcher, expert tensor
// parallelism, capacity, forced balance and measured expert loads, with
// Megatron-LM's rules (main d98e8a6, megatron/core/transformer/
// transformer_config.py __post_init__: flex's deepep backend refuses
// padding to capacity; overlap_moe_expert_parallel_comm needs EP > 1, the
// alltoall or flex dispatcher, virtual pipeline stages when PP > 1, no full
// recompute, bf16 or fp16 and at most one MTP layer;
// megatron/training/arguments.py: expert_tensor_parallel_size defaults to
// the tensor-parallel size).
#include <cmath>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "apps/input/config_parser.h"

namespace ppb::config_detail {

Result<Entries> Parser::MoeEntries(const Entry& x, Dispatcher* dispatcher) {
  Result<Entries> m = Map(x.value, x.path,
                          {"dispatcher", "backend", "overlap_ep_comm", "expert_tensor_parallel",
                           "capacity_factor", "pad_to_capacity", "force_balance",
                           "expert_loads"});
  if (!m.ok()) return m;
  if (const Entry* d = Find(*m, "dispatcher")) {
    Result<size_t> i = Choice(d->value, d->path, {"allgather", "alltoall", "flex"});
    if (!i.ok()) return i.error();
    if (dispatcher != nullptr) *dispatcher = static_cast<Dispatcher>(*i);
  }
  return m;
}

Status Parser::ParseMoe(const Entry& x, Training& t) {
  MoeSettings& s = t.moe;
  Result<Entries> m = MoeEntries(x, &s.dispatcher);
  if (!m.ok()) return m.error();
  moe_given_ = true;
  if (const Entry* b = Find(*m, "backend")) {
    Result<size_t> i = Choice(b->value, b->path, {"deepep", "hybridep"});
    if (!i.ok()) return i.error();
    if (s.dispatcher != Dispatcher::Flex) {
      return Fail(b->path, std::string("must be given with dispatcher: flex (Megatron's "
                                       "--moe-flex-dispatcher-backend); got it with ") +
                               DispatcherName(s.dispatcher));
    }
    s.backend = static_cast<FlexBackend>(*i);
  }
  if (const Entry* b = Find(*m, "overlap_ep_comm")) {
    Result<bool> v = Bool(b->value, b->path);
    if (!v.ok()) return v.error();
    s.overlap_ep_comm = *v;
  }
  if (const Entry* b = Find(*m, "expert_tensor_parallel")) {
    Result<int> v = PositiveInt(b->value, b->path);
    if (!v.ok()) return v.error();
    s.expert_tp = *v;
  }
  if (const Entry* b = Find(*m, "capacity_factor")) {
    if (!b->value.IsNull()) {
      Result<double> v = Fraction(b->value, b->path, 0, 1000,
                                  "a number > 0 (the capacity over the mean tokens per "
                                  "expert), or null for dropless");
      if (!v.ok()) return v.error();
      if (*v <= 0) {
        return Fail(b->path, "must be a number > 0 (the capacity over the mean tokens per "
                             "expert), or null for dropless; got " + b->value.Scalar());
      }
      s.capacity_factor = *v;
    }
  }
  if (const Entry* b = Find(*m, "pad_to_capacity")) {
    Result<bool> v = Bool(b->value, b->path);
    if (!v.ok()) return v.error();
    if (*v && s.capacity_factor <= 0) {
      return Fail(b->path, "must be given with capacity_factor (Megatron pads to the "
                           "capacity it sets); got it with a dropless MoE");
    }
    if (*v && s.dispatcher == Dispatcher::Flex && s.backend == FlexBackend::DeepEp) {
      return Fail(b->path, "must not be given with the flex dispatcher's deepep backend "
                           "(Megatron refuses it); got true");
    }
    s.pad_to_capacity = *v;
  }
  if (const Entry* b = Find(*m, "force_balance")) {
    Result<bool> v = Bool(b->value, b->path);
    if (!v.ok()) return v.error();
    s.force_balance = *v;
  }
  if (const Entry* b = Find(*m, "expert_loads")) {
    if (s.force_balance) {
      return Fail(b->path, "must not be given with force_balance: true (forced balance "
                           "replaces the router; measured loads describe it); got both");
    }
    PPB_RETURN_IF_ERROR(ParseExpertLoads(*b, s.loads));
  }
  if (s.overlap_ep_comm) {
    const std::string key = x.path + ".overlap_ep_comm";
    auto refuse = [&](const std::string& rule, const std::string& got) {
      return Fail(key, "needs " + rule + " (Megatron's --overlap-moe-expert-parallel-comm); got " +
                           got);
    };
    if (t.ep <= 1) return refuse("expert_parallel > 1", "expert_parallel 1");
    if (s.dispatcher == Dispatcher::AllGather) {
      return refuse("dispatcher alltoall or flex", "allgather");
    }
    if (cfg_.shape.p > 1 && cfg_.shape.v <= 1) {
      return refuse("pipeline.virtual_stages > 1 when pipeline.stages > 1",
                    fmt::format("{} stages with 1 virtual stage", cfg_.shape.p));
    }
    if (t.dtype == Dtype::Fp32) return refuse("dtype bf16 or fp16", "fp32");
    // Megatron runs it as its own schedule: the interleaved one (PP > 1)
    // or the no-pipelining one (PP = 1, ppb's 1f1b).
    const bool interleaved = cfg_.schedule == "interleaved";
    if (!interleaved && !(cfg_.schedule == "1f1b" && cfg_.shape.p == 1)) {
      return refuse("pipeline.schedule interleaved (or 1f1b with one stage: Megatron's "
                    "combined 1F1B replaces those schedules)",
                    cfg_.schedule);
    }
    // The share hidden is the GPU's ep_overlap_efficiency, set with the
    // hardware (ParseDerivedModel); full until then.
    cfg_.shape.ep_overlap_ppm = 1'000'000;
    cfg_.schedule_params.combined_1f1b = true;
  }
  return Status();
}

// A YAML file of measured tokens per expert (a router log):
//   loads:
//     - [tokens of expert 0, expert 1, ...]   # first MoE layer
//     - [...]                                 # next; one row: every layer
Status Parser::ParseExpertLoads(const Entry& x, ExpertLoads& out) {
  Result<std::string> name = String(x.value, x.path, "a YAML file of tokens per expert");
  if (!name.ok()) return name.error();
  std::filesystem::path file(*name);
  if (file.is_relative()) file = std::filesystem::path(cfg_.path).parent_path() / file;
  out.file = file.string();
  std::string text;
  if (!ReadFile(out.file, text)) {
    return Fail(x.path, "must name a readable YAML file of tokens per expert; got " + *name +
                            " (" + out.file + " cannot be read)");
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Fail(x.path, out.file + ":" + std::to_string(e.mark.line + 1) +
                            ": must be YAML; got an error (" + e.msg + ")");
  }
  auto where = [&](const YAML::Node& n) {
    return out.file + ":" + std::to_string(n.Mark().line + 1) + ": ";
  };
  const YAML::Node loads = root.IsMap() ? root["loads"] : YAML::Node();
  if (!loads.IsDefined() || !loads.IsSequence() || loads.size() == 0) {
    return Fail(x.path, out.file + ": loads: must be a list of rows (tokens per expert, one "
                                   "row per MoE layer); got " +
                            (loads.IsDefined() ? "something else" : "nothing"));
  }
  for (const YAML::Node& row : loads) {
    if (!row.IsSequence() || row.size() == 0) {
      return Fail(x.path, where(row) + "loads: each row must be a list of tokens per expert");
    }
    std::vector<double> r;
    for (const YAML::Node& v : row) {
      double n = -1;
      if (v.IsScalar()) {
        char* end = nullptr;
        n = std::strtod(v.Scalar().c_str(), &end);
        if (end != v.Scalar().c_str() + v.Scalar().size() || !std::isfinite(n)) n = -1;
      }
      if (n < 0 || n > 1e15) {
        return Fail(x.path, where(v) + "loads: each count must be a number in [0, 1e15]; "
                                       "got " + (v.IsScalar() ? v.Scalar() : "a non-number"));
      }
      r.push_back(n);
    }
    double sum = 0;
    for (double n : r) sum += n;
    if (sum <= 0) return Fail(x.path, where(row) + "loads: a row must count some tokens; got all 0");
    out.layers.push_back(std::move(r));
  }
  return Status();
}

// The rules that need the model: training.moe on a model with experts,
// the rows of measured loads against the experts and MoE layers, ETP's
// fold, routing_skew beside forced or measured balance.
Status Parser::CheckMoe(const Architecture& a, const Training& t) {
  const MoeSettings& s = t.moe;
  if (a.experts == 0) {
    return Fail("training.moe", "must be given with a mixture-of-experts model (this model "
                                "has no routed experts); got a moe map");
  }
  if (t.routing_skew != 1.0 && (s.force_balance || s.loads.given())) {
    return Fail("training.routing_skew",
                std::string("must not be given with training.moe.") +
                    (s.force_balance ? "force_balance" : "expert_loads") +
                    " (they set the busiest rank); got " + fmt::format("{:g}", t.routing_skew));
  }
  if (s.loads.given()) {
    int moe_layers = 0;
    for (int i = 0; i < a.layers; ++i) moe_layers += a.IsMoeLayer(i) ? 1 : 0;
    const int rows = static_cast<int>(s.loads.layers.size());
    if (rows != 1 && rows != moe_layers) {
      return Fail("training.moe.expert_loads",
                  s.loads.file + ": loads: must hold 1 row or one per MoE layer (" +
                      std::to_string(moe_layers) + "); got " + std::to_string(rows));
    }
    for (const auto& r : s.loads.layers) {
      if (static_cast<int>(r.size()) != a.experts) {
        return Fail("training.moe.expert_loads",
                    s.loads.file + ": loads: each row must count the " +
                        std::to_string(a.experts) + " routed experts; got a row of " +
                        std::to_string(r.size()));
      }
    }
  }
  if (s.expert_tp > 0) {
    const int etp = s.expert_tp;
    const long long ranks = static_cast<long long>(t.tp) * t.cp * t.dp;
    if (ranks % (static_cast<long long>(etp) * t.ep) != 0) {
      return Fail("training.moe.expert_tensor_parallel",
                  fmt::format("must fold with expert_parallel ({}) into the tensor x context x "
                              "data parallel ranks of a stage ({}; Megatron's parallel folding: "
                              "ETP x EP divides TP x CP x DP); got {}",
                              t.ep, ranks, etp));
    }
    if (a.expert_ffn % etp != 0) {
      return Fail("training.moe.expert_tensor_parallel",
                  fmt::format("must divide the expert width ({}); got {}", a.expert_ffn, etp));
    }
  }
  if (s.overlap_ep_comm && a.mtp_layers > 1) {
    return Fail("training.moe.overlap_ep_comm",
                fmt::format("needs at most one MTP layer (Megatron's "
                            "--overlap-moe-expert-parallel-comm); got {}",
                            a.mtp_layers));
  }
  return Status();
}

}  // namespace ppb::config_detail
