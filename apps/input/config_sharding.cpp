// training.data_parallel_sharding, fsdp, data_parallel_shard,
// reshard_after_forward and offload (core/sharding.h, core/offload.h),
// with each framework's own rules:
//   Megatron-LM main d98e8a6, megatron/training/arguments.py
//   (validate_args: Megatron-FSDP v1 uses the distributed optimizer;
//   --optimizer-cpu-offload needs --use-precision-aware-optimizer, which
//   needs the distributed optimizer (megatron/core/optimizer/__init__.py),
//   and with --fp8-param-gather the delayed recipe) and
//   megatron/core/transformer/transformer_config.py (__post_init__:
//   --cpu-offloading-num-layers below the layer count, without pipeline
//   parallelism or recompute, not with fine-grained offloading; the
//   offload modules' names, attn_proj only with core_attn,
//   fused_group_mlp not with expert_fc1 or moe_act, the fraction in
//   [0, 1]);
//   torchtitan b5bcd76 (config/configs.py: fsdp_reshard_after_forward
//   default | always | never; enable_cpu_offload, FSDP2's
//   CPUOffloadPolicy, all of the state or none; activation offload only in
//   experiments/graph_trainer).
#include <climits>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "apps/input/config_parser.h"

namespace ppb::config_detail {

// A number in [lo, hi] at `path`.
Result<double> Parser::Fraction(const YAML::Node& node, const std::string& path, double lo,
                                double hi, const std::string& what) {
  const std::string want = "must be " + what;
  if (!node.IsScalar()) return Fail(path, want + "; got " + Given(node));
  const std::string& s = node.Scalar();
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(x) || x < lo || x > hi) {
    return Fail(path, want + "; got " + Given(node));
  }
  return x;
}

Status Parser::ParseOffload(const Entry& x, Training& t) {
  Result<Entries> m =
      Map(x.value, x.path, {"activations", "layers", "optimizer", "overlap_optimizer_copies"});
  if (!m.ok()) return m.error();
  Offload& o = t.offload;
  if (const Entry* a = Find(*m, "activations")) {
    Result<Entries> am = Map(a->value, a->path, {"modules", "fraction"});
    if (!am.ok()) return am.error();
    Result<std::vector<Entry>> mods = RequiredList(*am, "modules", a->path, "modules");
    if (!mods.ok()) return mods.error();
    for (const Entry& item : *mods) {
      OffloadModule mod{};
      const std::string name = item.value.IsScalar() ? item.value.Scalar() : "";
      if (!FindOffloadModule(name, &mod)) {
        return Fail(item.path, "must be one of " + OffloadModuleNames() +
                                   " (Megatron's --offload-modules); got " + Given(item.value));
      }
      for (OffloadModule seen : o.modules) {
        if (seen == mod) return Fail(item.path, "must name a module once; got " + name + " again");
      }
      o.modules.push_back(mod);
    }
    auto has = [&](OffloadModule q) {
      for (OffloadModule mm : o.modules) if (mm == q) return true;
      return false;
    };
    if (has(OffloadModule::AttnProj) && !has(OffloadModule::CoreAttn)) {
      return Fail(a->path + ".modules",
                  "must name core_attn with attn_proj (Megatron: the input of attn_proj is "
                  "the output of core_attn, which core_attn's backward needs); got attn_proj "
                  "alone");
    }
    if (has(OffloadModule::FusedGroupMlp) &&
        (has(OffloadModule::ExpertFc1) || has(OffloadModule::MoeAct))) {
      return Fail(a->path + ".modules",
                  "must not name expert_fc1 or moe_act with fused_group_mlp (Megatron: it "
                  "offloads the whole fused grouped MLP); got them together");
    }
    if (const Entry* f = Find(*am, "fraction")) {
      Result<double> v = Fraction(f->value, f->path, 0, 1, "a number in [0, 1] "
                                  "(Megatron's --activation-offload-fraction)");
      if (!v.ok()) return v.error();
      o.fraction = *v;
    }
  }
  if (const Entry* l = Find(*m, "layers")) {
    Result<std::int64_t> n = Integer(l->value, l->path, 0, INT_MAX, "a non-negative integer");
    if (!n.ok()) return n.error();
    o.layers = static_cast<int>(*n);
    if (o.layers > 0 && !o.modules.empty()) {
      return Fail(l->path, "must not be given with training.offload.activations (Megatron: "
                           "fine-grained activation offloading cannot be enabled with "
                           "cpu_offloading); got both");
    }
    if (o.layers > 0 && t.pp > 1) {
      return Fail(l->path, "must be 0 with pipeline parallelism (Megatron: \"no support for "
                           "Pipeline parallelism with CPU offloading\"); got " +
                               std::to_string(o.layers) + " with " + std::to_string(t.pp) +
                               " stages");
    }
  }
  if (const Entry* f = Find(*m, "optimizer")) {
    Result<double> v = Fraction(f->value, f->path, 0, 1,
                                "a number in [0, 1] (the share of the optimizer state on the "
                                "host: Megatron's --optimizer-offload-fraction)");
    if (!v.ok()) return v.error();
    o.optimizer = *v;
  }
  if (const Entry* b = Find(*m, "overlap_optimizer_copies")) {
    Result<bool> v = Bool(b->value, b->path);
    if (!v.ok()) return v.error();
    o.overlap_optimizer_copies = *v;
  }
  return Status();
}

Status Parser::ParseSharding(const Entries& e, Training& t) {
  Sharding& s = t.sharding;
  const Entry* strategy = Find(e, "data_parallel_sharding");
  const Entry* fsdp = Find(e, "fsdp");
  const Entry* dist = Find(e, "distributed_optimizer");
  if (fsdp != nullptr) {
    Result<size_t> i = Choice(fsdp->value, fsdp->path, {"torch", "megatron"});
    if (!i.ok()) return i.error();
    s.fsdp = *i == 0 ? Fsdp::Torch : Fsdp::Megatron;
    // Both FSDPs shard everything unless told (Megatron's
    // --data-parallel-sharding-strategy default optim_grads_params).
    s.strategy = DpSharding::OptimGradsParams;
  } else if (t.distributed_optimizer) {
    s.strategy = DpSharding::Optim;
  }
  if (strategy != nullptr) {
    Result<size_t> i = Choice(strategy->value, strategy->path,
                              {"no_shard", "optim", "optim_grads", "optim_grads_params"});
    if (!i.ok()) return i.error();
    s.strategy = static_cast<DpSharding>(*i);
    if (s.fsdp == Fsdp::Torch && s.strategy != DpSharding::OptimGradsParams) {
      return Fail(strategy->path,
                  "must be optim_grads_params with training.fsdp: torch (FSDP2 shards the "
                  "parameters; its ZeRO-2 is training.reshard_after_forward: never); got " +
                      std::string(DpShardingName(s.strategy)));
    }
    if (s.fsdp == Fsdp::None && s.strategy >= DpSharding::OptimGrads) s.fsdp = Fsdp::Megatron;
    if (dist != nullptr && t.distributed_optimizer != (s.strategy >= DpSharding::Optim)) {
      return Fail(dist->path,
                  std::string("must agree with training.data_parallel_sharding: ") +
                      DpShardingName(s.strategy) +
                      (s.strategy >= DpSharding::Optim
                           ? " shards the optimizer state (Megatron-FSDP v1 runs the "
                             "distributed optimizer); got false"
                           : " keeps the optimizer state whole; got true"));
    }
  }
  if (dist != nullptr && s.fsdp == Fsdp::Torch && t.distributed_optimizer) {
    return Fail(dist->path, "must not be true with training.fsdp: torch (FSDP2 shards the "
                            "optimizer itself; Megatron: \"--use-torch-fsdp2 is not supported "
                            "with MCore's distributed optimizer\"); got true");
  }
  t.distributed_optimizer = s.strategy >= DpSharding::Optim && s.fsdp != Fsdp::Torch;
  if (const Entry* x = Find(e, "data_parallel_shard")) {
    Result<int> n = PositiveInt(x->value, x->path);
    if (!n.ok()) return n.error();
    if (t.dp % *n != 0) {
      return Fail(x->path, "must divide training.data_parallel (" + std::to_string(t.dp) +
                               "): the replicas are data_parallel / data_parallel_shard; got " +
                               std::to_string(*n));
    }
    if (s.strategy == DpSharding::NoShard) {
      return Fail(x->path, "must be given with a sharded strategy "
                           "(training.data_parallel_sharding optim or more, or training.fsdp); "
                           "got it with no_shard");
    }
    const int r = t.dp / *n;
    if (r > 1 && (t.dp * t.cp / std::max(1, t.ep)) % r != 0) {
      return Fail(x->path, "must leave a replica count (" + std::to_string(r) +
                               ") that divides the expert-data-parallel group (data_parallel x "
                               "context_parallel / expert_parallel); got " + std::to_string(*n));
    }
    s.shard = *n == t.dp ? 0 : *n;
  }
  if (const Entry* x = Find(e, "reshard_after_forward")) {
    Result<size_t> i = Choice(x->value, x->path, {"default", "always", "never"});
    if (!i.ok()) return i.error();
    if (s.fsdp != Fsdp::Torch) {
      return Fail(x->path, "must be given with training.fsdp: torch (torchtitan's "
                           "fsdp_reshard_after_forward); got it without");
    }
    s.reshard = static_cast<Reshard>(*i);
  }
  if (const Entry* x = Find(e, "offload")) {
    PPB_RETURN_IF_ERROR(ParseOffload(*x, t));
    const Offload& o = t.offload;
    if (s.fsdp == Fsdp::Torch) {
      if (o.activations_on()) {
        return Fail(x->path, "must not offload activations with training.fsdp: torch "
                             "(torchtitan offloads activations only in "
                             "experiments/graph_trainer); got activations");
      }
      if (o.optimizer != 0 && o.optimizer != 1) {
        return Fail(x->path + ".optimizer",
                    "must be 0 or 1 with training.fsdp: torch (torchtitan's "
                    "enable_cpu_offload moves all of the sharded state); got " +
                        fmt::format("{:g}", o.optimizer));
      }
    } else if (o.optimizer > 0) {
      if (!t.distributed_optimizer) {
        return Fail(x->path + ".optimizer",
                    "must be 0 without the distributed optimizer (Megatron's "
                    "--optimizer-cpu-offload needs --use-precision-aware-optimizer, which "
                    "needs --use-distributed-optimizer); got a share without it");
      }
      if (t.low.param_gather && t.low.recipe != Recipe::Fp8Delayed) {
        return Fail(x->path + ".optimizer",
                    "must be 0 with training.fp8_param_gather and a recipe other than "
                    "delayed (Megatron: the optimizer CPU offload with --fp8-param-gather "
                    "needs --fp8-recipe delayed); got a share");
      }
    }
  }
  return Status();
}

}  // namespace ppb::config_detail
