// plan.*: the space `ppb-sim plan` searches (PlanSettings, config.h). Each
// list is a list of distinct values (or one scalar, a list of one); each
// value is checked on its own here (a positive integer, a schedule name, a
// recompute mode the layers offer); which combinations a job can run is the
// plan space's (search/plan/plan_space.h). Errors as every config error:
// "file:line: plan.<key>: must be ...; got ...".
#include "apps/input/config_parser.h"
#include "search/first_tries.h"

namespace ppb::config_detail {

Result<std::vector<Entry>> Parser::PlanItems(const Entries& e, std::string_view name) {
  const Entry* x = Find(e, name);
  if (x == nullptr) return std::vector<Entry>{};
  if (x->value.IsScalar()) return std::vector<Entry>{*x};
  Result<std::vector<Entry>> items = List(x->value, x->path, "a list (or one value)");
  if (!items.ok()) return items.error();
  if (items->empty()) return Fail(x->path, "must list at least one value; got an empty list");
  return items;
}

Status Parser::PlanMaps(const Entries& e, std::string_view name, const std::string& keys,
                        const std::string& noun, const std::function<Status(const Entry&)>& check,
                        std::vector<std::string>& out) {
  Result<std::vector<Entry>> items = PlanItems(e, name);
  if (!items.ok()) return items.error();
  for (const Entry& item : *items) {
    std::string text;
    if (item.value.IsScalar() && item.value.Scalar() == "none") {
      text = "none";
    } else if (item.value.IsMap()) {
      PPB_RETURN_IF_ERROR(check(item));
      YAML::Emitter out_yaml;
      out_yaml.SetMapFormat(YAML::Flow);
      out_yaml.SetSeqFormat(YAML::Flow);
      out_yaml << item.value;
      text = out_yaml.c_str();
    } else {
      return Fail(item.path, "must be none or a map of " + keys + "; got " + Given(item.value));
    }
    if (std::find(out.begin(), out.end(), text) != out.end()) {
      return Fail(item.path, "must list each " + noun + " once; got " + text + " again");
    }
    out.push_back(text);
  }
  return Status();
}

Status Parser::PlanIntList(const Entries& e, std::string_view name, std::vector<int>& out) {
  Result<std::vector<Entry>> items = PlanItems(e, name);
  if (!items.ok()) return items.error();
  for (const Entry& item : *items) {
    Result<int> x = PositiveInt(item.value, item.path);
    if (!x.ok()) return x.error();
    if (std::find(out.begin(), out.end(), *x) != out.end()) {
      return Fail(item.path, "must list each value once; got " + std::to_string(*x) + " again");
    }
    out.push_back(*x);
  }
  return Status();
}

Status Parser::PlanBoolList(const Entries& e, std::string_view name, std::vector<bool>& out) {
  Result<std::vector<Entry>> items = PlanItems(e, name);
  if (!items.ok()) return items.error();
  for (const Entry& item : *items) {
    Result<bool> x = Bool(item.value, item.path);
    if (!x.ok()) return x.error();
    if (std::find(out.begin(), out.end(), *x) != out.end()) {
      return Fail(item.path, std::string("must list each value once; got ") +
                                 (*x ? "true" : "false") + " again");
    }
    out.push_back(*x);
  }
  return Status();
}

Status Parser::ParsePlan(const Entry* section) {
  if (section == nullptr) return Status();
  Result<Entries> r =
      Map(section->value, "plan",
          {"gpus", "tensor_parallel", "context_parallel", "expert_parallel", "pipeline_parallel",
           "micro_batch_size", "schedules", "virtual_stages", "sequence_parallel",
           "distributed_optimizer", "recompute", "target", "time_limit", "top",
           "precision", "data_parallel_sharding", "offload", "moe", "memory_headroom"});
  if (!r.ok()) return r.error();
  const Entries& e = *r;
  PlanSettings out;
  const Entry* gpus = Find(e, "gpus");
  if (gpus == nullptr) {
    Mark("plan.gpus", section->value.Mark());  // the plan block's line
    return Fail("plan.gpus", "must be given (the number of GPUs, t x cp x p x d); got nothing");
  }
  Result<int> g = PositiveInt(gpus->value, gpus->path);
  if (!g.ok()) return g.error();
  out.gpus = *g;
  for (const auto& [name, slot] :
       {std::pair{"tensor_parallel", &out.tensor_parallel},
        std::pair{"context_parallel", &out.context_parallel},
        std::pair{"expert_parallel", &out.expert_parallel},
        std::pair{"pipeline_parallel", &out.pipeline_parallel},
        std::pair{"micro_batch_size", &out.micro_batch_size},
        std::pair{"virtual_stages", &out.virtual_stages}}) {
    PPB_RETURN_IF_ERROR(PlanIntList(e, name, *slot));
  }
  PPB_RETURN_IF_ERROR(PlanBoolList(e, "sequence_parallel", out.sequence_parallel));
  PPB_RETURN_IF_ERROR(PlanBoolList(e, "distributed_optimizer", out.distributed_optimizer));
  {
    Result<std::vector<Entry>> items = PlanItems(e, "schedules");
    if (!items.ok()) return items.error();
    const std::string want = "must be one of " + Join(ScheduleNames(false));
    for (const Entry& item : *items) {
      Result<std::string> name = String(item.value, item.path, "a schedule name");
      if (!name.ok()) return name.error();
      const std::string normal = NormalizeSchedule(*name, false);
      if (normal.empty()) return Fail(item.path, want + "; got " + *name);
      if (std::find(out.schedules.begin(), out.schedules.end(), normal) != out.schedules.end()) {
        return Fail(item.path, "must name each schedule once; got " + normal + " again");
      }
      out.schedules.push_back(normal);
    }
  }
  {
    Result<std::vector<Entry>> items = PlanItems(e, "recompute");
    if (!items.ok()) return items.error();
    std::vector<std::string> allowed = {"search", "none"};
    for (const std::string& m : RecomputeModeNames(cfg_.layers)) allowed.push_back(m);
    for (const Entry& item : *items) {
      Result<std::string> name = String(item.value, item.path, "a recompute choice");
      if (!name.ok()) return name.error();
      const std::string x = Lower(*name);
      if (std::find(allowed.begin(), allowed.end(), x) == allowed.end()) {
        return Fail(item.path, "must be one of " + Join(allowed) +
                                   " (search: per layer; a mode: on every layer that offers "
                                   "it); got " +
                                   *name);
      }
      if (std::find(out.recompute.begin(), out.recompute.end(), x) != out.recompute.end()) {
        return Fail(item.path, "must list each choice once; got " + x + " again");
      }
      out.recompute.push_back(x);
    }
  }
  {
    // plan.precision: the linears' recipe as a dimension (core/precision.h
    // RecipeName); whether the GPU runs it is a refusal per layout.
    Result<std::vector<Entry>> items = PlanItems(e, "precision");
    if (!items.ok()) return items.error();
    std::vector<std::string> names;
    for (Recipe recipe : kAllRecipes) names.push_back(RecipeName(recipe));
    for (const Entry& item : *items) {
      Result<std::string> name = String(item.value, item.path, "a precision");
      if (!name.ok()) return name.error();
      const std::string x = Lower(*name);
      if (!FindRecipe(x)) {
        return Fail(item.path, "must be one of " + Join(names) + "; got " + *name);
      }
      if (std::find(out.precision.begin(), out.precision.end(), x) != out.precision.end()) {
        return Fail(item.path, "must list each precision once; got " + x + " again");
      }
      out.precision.push_back(x);
    }
  }
  {
    // plan.data_parallel_sharding (core/sharding.h), in place of
    // plan.distributed_optimizer.
    Result<std::vector<Entry>> items = PlanItems(e, "data_parallel_sharding");
    if (!items.ok()) return items.error();
    if (!items->empty() && !out.distributed_optimizer.empty()) {
      return Fail(items->front().path.substr(0, items->front().path.rfind('[')),
                  "must not be given with plan.distributed_optimizer (the strategy optim is "
                  "the distributed optimizer); got both");
    }
    for (const Entry& item : *items) {
      Result<std::string> name = String(item.value, item.path, "a sharding strategy");
      if (!name.ok()) return name.error();
      DpSharding d{};
      if (!FindDpSharding(*name, &d)) {
        return Fail(item.path, "must be one of no_shard, optim, optim_grads, "
                               "optim_grads_params; got " + *name);
      }
      if (std::find(out.data_parallel_sharding.begin(), out.data_parallel_sharding.end(),
                    *name) != out.data_parallel_sharding.end()) {
        return Fail(item.path, "must list each strategy once; got " + *name + " again");
      }
      out.data_parallel_sharding.push_back(*name);
    }
  }
  // plan.offload: training.offload maps, checked as training.offload is
  // (its keys at their lines).
  PPB_RETURN_IF_ERROR(PlanMaps(
      e, "offload", "training.offload's keys (activations, layers, optimizer)", "offload",
      [&](const Entry& item) {
        Training probe;
        probe.pp = 1;
        return ParseOffload(item, probe);
      },
      out.offload));
  // plan.moe: training.moe maps (their keys checked here, their rules by
  // each layout's loader, counted with their reasons).
  PPB_RETURN_IF_ERROR(PlanMaps(
      e, "moe", "training.moe's keys (dispatcher, backend, overlap_ep_comm, ...)",
      "moe setting",
      [&](const Entry& item) -> Status {
        Result<Entries> keys = MoeEntries(item, nullptr);
        if (!keys.ok()) return keys.error();
        return Status();
      },
      out.moe));
  if (cli_.target) {
    out.target = *cli_.target;
  } else if (const Entry* x = Find(e, "target")) {
    Result<DeployTarget> t = Target(*x);
    if (!t.ok()) return t.error();
    out.target = *t;
  }
  if (cli_.time_limit) {
    out.time_limit = *cli_.time_limit;
  } else if (const Entry* x = Find(e, "time_limit")) {
    Result<Nanos> t = TimeLimit(*x);
    if (!t.ok()) return t.error();
    out.time_limit = *t;
  }
  if (const Entry* x = Find(e, "memory_headroom")) {
    Result<MemoryHeadroom> h = Headroom(*x);
    if (!h.ok()) return h.error();
    out.memory_headroom = *h;
  }
  if (cli_.top) {
    out.top = *cli_.top;
  } else if (const Entry* x = Find(e, "top")) {
    Result<int> t = PositiveInt(x->value, x->path);
    if (!t.ok()) return t.error();
    out.top = *t;
  }
  cfg_.plan = std::move(out);
  return Status();
}

}  // namespace ppb::config_detail
