// The candidates file of `ppb-sim rank` (apps/input/candidates.h): each
// candidate read against the config's model, cluster and pipeline with the
// strategy section's keys; errors "cands.yaml:3: candidates[0].layout:
// must be ...; got ...".
#include "apps/input/config_parser.h"

namespace ppb::config_detail {

Result<std::vector<RankCandidate>> Parser::Candidates(std::string_view text) {
  return WithYaml<std::vector<RankCandidate>>(
      text, [&](const YAML::Node& root) { return ParseCandidates(root); });
}

Result<std::vector<RankCandidate>> Parser::ParseCandidates(
    const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull()) {
    return Error{"", cfg_.path +
                         ": must be a map with candidates (a list of "
                         "strategies); got an empty file"};
  }
  Result<Entries> top = Map(root, "", {"candidates"});
  if (!top.ok()) return top.error();
  Result<std::vector<Entry>> items =
      RequiredList(*top, "candidates", "candidates", "strategies");
  if (!items.ok()) return items.error();
  const RunConfig base = cfg_;
  std::vector<RankCandidate> out;
  std::map<std::string, std::string> named;  // name -> candidate path
  for (size_t i = 0; i < items->size(); ++i) {
    const Entry& item = (*items)[i];
    cfg_.shape = base.shape;
    cfg_.allow_empty_chunks = base.allow_empty_chunks;
    cfg_.strategy = Strategy();
    v_key_.clear();
    strategy_path_ = item.path;
    Result<RankCandidate> c = ParseCandidate(item, base, i);
    if (!c.ok()) return c.error();
    auto [it, inserted] = named.emplace(c->name, item.path);
    if (!inserted) {
      return Fail(item.path + ".name", "must be unique; got " + c->name +
                                           ", also the name of " +
                                           it->second);
    }
    out.push_back(std::move(*c));
  }
  return out;
}

// One candidate: its pipeline choice, then its strategy for that v.
Result<RankCandidate> Parser::ParseCandidate(const Entry& item,
                                             const RunConfig& base,
                                             size_t index) {
  Result<Entries> er = Map(item.value, item.path,
                           {"name", "schedule", "virtual_stages",
                            "microbatch_group", "layers_per_chunk", "layout",
                            "offset", "allow_empty_chunks", "recompute"});
  if (!er.ok()) return er.error();
  const Entries& e = *er;
  RankCandidate c;
  c.line = cfg_.key_lines[item.path];
  c.name = "candidate " + std::to_string(index + 1);
  if (const Entry* name = Find(e, "name")) {
    Result<std::string> s = String(name->value, name->path, "a name");
    if (!s.ok()) return s.error();
    c.name = *s;
  }
  c.schedule = base.schedule;
  const Entry* schedule = Find(e, "schedule");
  if (schedule != nullptr) {
    const std::string want = "must be one of " + Join(ScheduleNames(false));
    Result<std::string> s =
        String(schedule->value, schedule->path, "a schedule name");
    if (!s.ok())
      return Fail(schedule->path, want + "; got " + Given(schedule->value));
    c.schedule = NormalizeSchedule(*s, false);
    if (c.schedule.empty()) return Fail(schedule->path, want + "; got " + *s);
  } else if (c.schedule == "custom") {
    return Fail(item.path + ".schedule",
                "must be given when the config's schedule is custom (one "
                "of " +
                    Join(ScheduleNames(false)) + "); got nothing");
  }
  c.v = base.shape.v;
  if (const Entry* v = Find(e, "virtual_stages")) {
    const std::int64_t max_v = kMaxLayers / cfg_.shape.p;
    Result<std::int64_t> x =
        Integer(v->value, v->path, 1, max_v,
                "a positive integer up to " + std::to_string(max_v));
    if (!x.ok()) return x.error();
    c.v = static_cast<int>(*x);
    PPB_RETURN_IF_ERROR(CheckOps(v->path, cfg_.shape.p, c.v, cfg_.shape.m,
                                 std::to_string(c.v)));
    v_key_ = v->path;
  } else if (schedule != nullptr && FixedChunksPerRank(c.schedule) > 0) {
    c.v = FixedChunksPerRank(c.schedule);
  }
  c.params = base.schedule_params;
  if (const Entry* g = Find(e, "microbatch_group")) {
    Result<int> x = PositiveInt(g->value, g->path);
    if (!x.ok()) return x.error();
    c.params.group = *x;
  }
  cfg_.shape.v = c.v;
  Status ok =
      CheckSchedule(c.schedule, cfg_.shape.p, c.v, cfg_.shape.m, c.params);
  if (!ok.ok()) {
    // The generator names pipeline keys; the candidate sets them.
    std::string key = item.path;
    const std::string& gen_key = ok.error().key;
    if (gen_key == "pipeline.virtual_stages") {
      key = Find(e, "virtual_stages") ? item.path + ".virtual_stages"
            : Find(e, "schedule")     ? item.path + ".schedule"
                                      : item.path;
    } else if (gen_key == "pipeline.microbatch_group" &&
               Find(e, "microbatch_group") != nullptr) {
      key = item.path + ".microbatch_group";
    }
    return Fail(key, "schedule " + c.schedule + " with v = " +
                         std::to_string(c.v) + ": " + ok.error().message);
  }
  PPB_RETURN_IF_ERROR(ParseStrategyEntries(e, item.path));
  c.strategy = cfg_.strategy;
  c.allow_empty_chunks = cfg_.allow_empty_chunks;
  return c;
}

}  // namespace ppb::config_detail

namespace ppb {

Result<std::vector<RankCandidate>> LoadCandidates(const std::string& path,
                                                  const RunConfig& config) {
  std::string text;
  errno = 0;
  if (!config_detail::ReadFile(path, text)) {
    const std::string why = errno != 0 ? std::strerror(errno) : "read error";
    return Error{"", path + ": must be a readable candidates file; got " + why};
  }
  return ParseCandidates(text, path, config);
}

Result<std::vector<RankCandidate>> ParseCandidates(std::string_view text,
                                                   std::string_view filename,
                                                   const RunConfig& config) {
  // Messages about p and v name the flags that set them, as for the config.
  CliOverrides cli;
  auto from_cli = [&](const char* key) {
    auto it = config.key_lines.find(key);
    return it != config.key_lines.end() && it->second == 0;
  };
  if (from_cli("pipeline.stages")) cli.stages = config.shape.p;
  if (from_cli("pipeline.virtual_stages")) cli.virtual_stages = config.shape.v;
  config_detail::Parser parser(filename, cli, config);
  return parser.Candidates(text);
}

}  // namespace ppb
