// search.*: what `ppb-sim search` may choose besides the split and the
// recompute (schedules, virtual_stages, microbatch_groups, device_order) and
// its limits; each replaced by its flag when given (key line 0). Lists are
// names / positive values without repeats; which combinations make sense is
// BuildSearchProblem's (apps/input/search_problem.h). Errors as every config error:
// "file:line: search.<key>: must be ...; got ...".
#include <charconv>

#include "apps/input/config_parser.h"

namespace ppb::config_detail {

// The optional search section; the CLI's search values replace the file's.
Status Parser::ParseSearch(const Entry* section) {
  Entries e;
  if (section != nullptr && !section->value.IsNull()) {
    Result<Entries> r =
        Map(section->value, "search",
            {"schedules", "virtual_stages", "microbatch_groups", "time_limit",
             "node_limit", "seed", "threads", "top", "device_order", "target",
             "memory_headroom"});
    if (!r.ok()) return r.error();
    e = std::move(*r);
  }
  SearchSettings& out = cfg_.search;
  PPB_RETURN_IF_ERROR(SearchSchedules(e));
  const std::int64_t max_v = kMaxLayers / cfg_.shape.p;
  PPB_RETURN_IF_ERROR(SearchIntList(
      e, "virtual_stages", cli_.virtual_stages_list, max_v,
      "a positive integer up to " + std::to_string(max_v) + " (" +
          std::to_string(kMaxLayers) + " stages / " + StagesNote() + ")",
      out.virtual_stages));
  for (int v : out.virtual_stages) {
    PPB_RETURN_IF_ERROR(CheckOps("search.virtual_stages", cfg_.shape.p, v,
                                 cfg_.shape.m, std::to_string(v)));
  }
  PPB_RETURN_IF_ERROR(
      SearchIntList(e, "microbatch_groups", cli_.microbatch_groups, INT_MAX,
                    "a positive integer", out.microbatch_groups));

  auto positive = [&](const Entry& x) {
    return PositiveInt(x.value, x.path);
  };
  PPB_RETURN_IF_ERROR(SearchValue(
      e, "time_limit", cli_.time_limit, out.time_limit,
      [&](const Entry& x) { return TimeLimit(x); }));
  PPB_RETURN_IF_ERROR(SearchValue(
      e, "node_limit", cli_.node_limit, out.node_limit, [&](const Entry& x) {
        return Integer(x.value, x.path, 1, INT64_MAX, "a positive integer");
      }));
  PPB_RETURN_IF_ERROR(
      SearchValue(e, "seed", cli_.seed, out.seed, [&](const Entry& x) {
        return Integer(x.value, x.path, 0, INT64_MAX,
                       "a non-negative integer");
      }));
  PPB_RETURN_IF_ERROR(
      SearchValue(e, "threads", cli_.threads, out.threads, positive));
  PPB_RETURN_IF_ERROR(SearchValue(e, "top", cli_.top, out.top, positive));
  if (cli_.target) {
    cfg_.key_lines["search.target"] = 0;
    out.target = *cli_.target;
  } else if (const Entry* x = Find(e, "target")) {
    Result<DeployTarget> t = Target(*x);
    if (!t.ok()) return t.error();
    out.target = *t;
  }
  if (const Entry* x = Find(e, "memory_headroom")) {
    Result<MemoryHeadroom> h = Headroom(*x);
    if (!h.ok()) return h.error();
    out.memory_headroom = *h;
  }
  if (const Entry* x = Find(e, "device_order")) {
    Result<size_t> i = Choice(x->value, x->path, {"search", "given"});
    if (!i.ok()) return i.error();
    if (!cfg_.topology) {
      return Fail(x->path, "needs a heterogeneous cluster (cluster.nodes and "
                           "cluster.device_types); got a cluster without nodes");
    }
    out.search_device_order = *i == 0;
  }
  return Status();
}

// search.memory_headroom, plan.memory_headroom: a size ("6GiB") or a share
// of the GPU's memory ("5%"), below half of it.
Result<MemoryHeadroom> Parser::Headroom(const Entry& x) {
  const std::string want =
      "must be a size (e.g. 4GiB) or a share of the GPU's memory in [0%, 50%] (e.g. 5%)";
  MemoryHeadroom h;
  h.given = true;
  if (x.value.IsScalar() && !x.value.Scalar().empty() && x.value.Scalar().back() == '%') {
    const std::string& text = x.value.Scalar();
    double pct = -1;
    const char* end = text.data() + text.size() - 1;
    auto [ptr, ec] = std::from_chars(text.data(), end, pct);
    if (ec != std::errc() || ptr != end || !(pct >= 0 && pct <= 50)) {
      return Fail(x.path, want + "; got " + Given(x.value));
    }
    h.share = pct / 100.0;
    return h;
  }
  if (!x.value.IsScalar()) return Fail(x.path, want + "; got " + Given(x.value));
  Result<Bytes> b = Size(x.value, x.path, false);
  if (!b.ok()) return b.error();
  h.bytes = *b;
  return h;
}

// A framework name (search.target, plan.target).
Result<DeployTarget> Parser::Target(const Entry& x) {
  Result<size_t> i =
      Choice(x.value, x.path, {"any", "megatron", "mindformers", "torchtitan", "deepspeed"});
  if (!i.ok()) return i.error();
  return static_cast<DeployTarget>(*i);  // Target's order
}

// A time limit (search.time_limit, plan.time_limit): as --time-limit, up to
// 10^9 s; 0 for none.
Result<Nanos> Parser::TimeLimit(const Entry& x) {
  return Duration(x.value, x.path, false, 1'000'000'000'000'000'000, "1000000000s");
}

// search.<name> into `out`: the command line's value (its key recorded at
// line 0) or the file's, read by read(entry) -> Result; `out` keeps its
// default when neither is given.
template <class T, class Read>
Status Parser::SearchValue(const Entries& e, std::string_view name,
                           const std::optional<T>& cli, T& out, Read read) {
  if (cli) {
    cfg_.key_lines["search." + std::string(name)] = 0;
    out = *cli;
    return Status();
  }
  const Entry* x = Find(e, name);
  if (x == nullptr) return Status();
  auto value = read(*x);
  if (!value.ok()) return value.error();
  out = static_cast<T>(*value);
  return Status();
}

// search.schedules (or --schedules): registered names, no repeats.
Status Parser::SearchSchedules(const Entries& e) {
  const std::string want =
      "must be one of " + Join(ScheduleNames(false)) +
      " (a custom schedule fixes the op order of one split)";
  std::vector<std::string>& out = cfg_.search.schedules;
  std::vector<std::pair<std::string, std::string>> given;  // (name, path)
  if (cli_.schedules) {
    cfg_.key_lines["search.schedules"] = 0;
    for (const std::string& name : *cli_.schedules) {
      given.emplace_back(name, "search.schedules");
    }
  } else if (const Entry* list = Find(e, "schedules")) {
    Result<std::vector<Entry>> items =
        List(list->value, list->path, "a list of schedule names");
    if (!items.ok()) return items.error();
    for (const Entry& item : *items) {
      Result<std::string> name = String(item.value, item.path, "a name");
      if (!name.ok())
        return Fail(item.path, want + "; got " + Given(item.value));
      given.emplace_back(*name, item.path);
    }
  } else {
    return Status();
  }
  if (given.empty()) {
    return Fail("search.schedules",
                "must list at least one schedule; got an empty list");
  }
  for (const auto& [name, path] : given) {
    const std::string normal = NormalizeSchedule(name, false);
    if (normal.empty()) return Fail(path, want + "; got " + name);
    if (std::find(out.begin(), out.end(), normal) != out.end()) {
      return Fail(path,
                  "must name each schedule once; got " + normal + " again");
    }
    out.push_back(normal);
  }
  return Status();
}

// A list of distinct integers in [1, max] at search.<name>, from the
// command line (`cli`) or the file.
Status Parser::SearchIntList(const Entries& e, std::string_view name,
                             const std::optional<std::vector<int>>& cli,
                             std::int64_t max, const std::string& item_want,
                             std::vector<int>& out) {
  const std::string key = "search." + std::string(name);
  std::vector<std::pair<std::int64_t, std::string>> given;  // (value, path)
  if (cli) {
    cfg_.key_lines[key] = 0;
    for (int x : *cli) given.emplace_back(x, key);
  } else if (const Entry* list = Find(e, name)) {
    Result<std::vector<Entry>> items =
        List(list->value, list->path, "a list of positive integers");
    if (!items.ok()) return items.error();
    for (const Entry& item : *items) {
      Result<std::int64_t> x =
          Integer(item.value, item.path, 1, max, item_want);
      if (!x.ok()) return x.error();
      given.emplace_back(*x, item.path);
    }
  } else {
    return Status();
  }
  if (given.empty()) {
    return Fail(key, "must list at least one value; got an empty list");
  }
  for (const auto& [x, path] : given) {
    if (x < 1 || x > max) {
      return Fail(path,
                  "must be " + item_want + "; got " + std::to_string(x));
    }
    if (std::find(out.begin(), out.end(), x) != out.end()) {
      return Fail(path, "must list each value once; got " +
                            std::to_string(x) + " again");
    }
    out.push_back(static_cast<int>(x));
  }
  return Status();
}

}  // namespace ppb::config_detail
