// The compare table (apps/commands/compare_run.h): every row loaded,
// prepared and simulated like a separate `ppb-sim` run on its variant
// of the config (apps/input/vary_document.h).
#include "apps/commands/compare_run.h"

#include "core/step_metrics.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/search_problem.h"
#include "apps/input/vary_document.h"
#include "schedules/schedule.h"

namespace ppb {

using namespace vary_detail;  // NOLINT: the variant documents

namespace {

// The message of a loader error without its "file:line: " prefix and with
// the config key instead of the flag that set it ("pipeline.virtual_stages:
// must be >= 2 ...").
std::string Reason(std::string_view filename, const Error& e, bool v_from_flag) {
  std::string s = e.message;
  // compare sets v through --virtual-stages for every row; unless the user
  // gave that flag, name the key.
  for (size_t at = 0;
       !v_from_flag && (at = s.find("--virtual-stages ", at)) != std::string::npos;) {
    s.replace(at, 17, "virtual_stages = ");
  }
  const std::string prefix = std::string(filename) + ":";
  if (s.rfind(prefix, 0) == 0) {
    s = s.substr(prefix.size());
    size_t digits = 0;
    while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) {
      ++digits;
    }
    if (digits > 0 && digits < s.size() && s[digits] == ':') {
      s = s.substr(digits + 1);
    }
    if (!s.empty() && s[0] == ' ') s = s.substr(1);
  }
  if (!e.key.empty() && s.rfind("--", 0) == 0) {
    const size_t colon = s.find(": ");
    if (colon != std::string::npos) s = e.key + s.substr(colon);
  }
  return s;
}

// "a", "a and b", "a, b and c".
std::string JoinAnd(const std::vector<std::string>& items) {
  std::string out;
  for (size_t k = 0; k < items.size(); ++k) {
    if (k > 0) out += k + 1 == items.size() ? " and " : ", ";
    out += items[k];
  }
  return out;
}

bool IsStrategyError(const Error& e) {
  return e.key == "strategy" || e.key.rfind("strategy.", 0) == 0;
}

// "KEY=V, KEY2=V2" of variant edits, for messages.
std::string DescribeVariant(const std::vector<VaryAxis>& axes,
                            const std::vector<std::string>& values) {
  std::string out;
  for (size_t k = 0; k < axes.size(); ++k) {
    if (k > 0) out += ", ";
    out += axes[k].key + "=" + values[k];
  }
  return out;
}

// The schedules of the table: registry names (any case; torch's
// Interleaved1F1B), once each; every registered one when none is given.
Status ReadSchedules(const CompareRequest& request, CompareTable& table) {
  std::vector<std::string> registered;
  for (const ScheduleInfo& info : ScheduleRegistry()) {
    registered.emplace_back(info.name);
  }
  if (request.schedules.empty()) table.schedules = registered;
  for (const std::string& given : request.schedules) {
    const ScheduleInfo* info = FindScheduleByAnyName(given);
    const std::string name = info == nullptr ? given : std::string(info->name);
    if (info == nullptr) {
      return Error{"--schedules",
                   "--schedules: expected a comma-separated "
                   "list of " +
                       JoinComma(registered) + "; got '" + given + "'"};
    }
    if (std::find(table.schedules.begin(), table.schedules.end(), name) != table.schedules.end()) {
      return Error{"--schedules",
                   "--schedules: expected each schedule once; got " + name + " twice"};
    }
    table.schedules.push_back(name);
  }
  return Status();
}

// The axes: known keys, once each, values of the key's kind (checked
// against the file's value; a pipeline integer must not also be set by
// its flag).
Result<std::vector<Axis>> ReadAxes(const YAML::Node& root, const CompareRequest& request) {
  const CliOverrides& cli = request.overrides;
  std::vector<Axis> axes;
  axes.reserve(request.vary.size());
  for (const VaryAxis& given : request.vary) {
    for (const Axis& a : axes) {
      if (a.given.key == given.key) {
        return VaryError(given.key, "expected each key once; got it twice");
      }
    }
    Result<Target> target = ResolveTarget(root, given.key);
    if (!target.ok()) return target.error();
    axes.push_back({given, *target});
    if (target->type != Target::Type::Pipeline) {
      // Check the values against the key's value in the file (a group's
      // first layer stands for the group).
      YAML::Node node =
          target->type == Target::Type::Node
              ? At(root, target->path)
              : At(At(root, {{"model"}, {"layers"}})[static_cast<size_t>(target->item)],
                   target->path);
      for (const std::string& v : given.values) {
        Result<std::string> r = Resolve(given.key, target->kind, node.Scalar(), v);
        if (!r.ok()) return r.error();
      }
      continue;
    }
    const std::string& k = target->pipeline_key;
    const std::optional<int>& flag =
        k == "stages" ? cli.stages
                      : (k == "microbatches"
                             ? cli.microbatches
                             : (k == "virtual_stages" ? cli.virtual_stages : cli.microbatch_group));
    if (flag) {
      std::string dashed = k;
      std::replace(dashed.begin(), dashed.end(), '_', '-');
      return VaryError(given.key,
                       "expected it varied or set, not both; got "
                       "--" +
                           dashed + " too");
    }
  }
  return axes;
}

// One variant of the config: its edits and overrides.
struct Variant {
  std::vector<Edit> edits;
  CliOverrides overrides;
  std::optional<int> v;  // pipeline.virtual_stages when varied
};

// Every variant: its edits and overrides, validated by loading it with
// gpipe, v = 1 and no strategy (which accept any shape), so that a bad
// value is an error of the command line, not a row. Adds the values of each
// variant to `table`.
Result<std::vector<Variant>> BuildVariants(std::string_view text, std::string_view filename,
                                           const CompareRequest& request,
                                           const std::vector<Axis>& axes,
                                           const RunConfig& base, CompareTable& table) {
  const CliOverrides& cli = request.overrides;
  // The pipeline integer of `key` in the base config (g: its effective
  // default p when unset), for factors.
  auto pipeline_base = [&](const std::string& key) {
    if (key == "stages") return base.shape.p;
    if (key == "microbatches") return base.shape.m;
    if (key == "virtual_stages") return base.shape.v;
    return base.schedule_params.group > 0 ? base.schedule_params.group : base.shape.p;
  };

  std::vector<Variant> variants;
  std::vector<size_t> index(axes.size(), 0);
  bool any = true;
  for (const Axis& a : axes) any = any && !a.given.values.empty();
  while (any) {
    Variant var;
    var.overrides = cli;
    std::vector<std::string> values;
    for (size_t k = 0; k < axes.size(); ++k) {
      const Axis& a = axes[k];
      const std::string& value = a.given.values[index[k]];
      values.push_back(value);
      if (a.target.type != Target::Type::Pipeline) {
        var.edits.push_back({&a, value});
        continue;
      }
      const std::string& pk = a.target.pipeline_key;
      Result<std::string> r =
          Resolve(a.given.key, Kind::Int, std::to_string(pipeline_base(pk)), value);
      if (!r.ok()) return r.error();
      std::int64_t n = 0;
      WholeInt(*r, n);
      if (n < 1 || n > 1'000'000) {
        return VaryError(a.given.key,
                         "expected a positive integer (at most "
                         "1000000) or a factor like x2; got '" +
                             value + "'");
      }
      const int x = static_cast<int>(n);
      if (pk == "stages") var.overrides.stages = x;
      if (pk == "microbatches") var.overrides.microbatches = x;
      if (pk == "virtual_stages") var.v = x;
      if (pk == "microbatch_group") var.overrides.microbatch_group = x;
    }
    Result<YAML::Node> doc = VariantDocument(text, var.edits, Strip::kSplitAndRecompute);
    if (!doc.ok()) return doc.error();
    CliOverrides neutral = var.overrides;
    neutral.schedule = "gpipe";
    neutral.virtual_stages = 1;
    Result<RunConfig> check = ParseConfigYaml(*doc, filename, neutral);
    if (!check.ok()) {
      return Error{"--vary", "--vary " + DescribeVariant(request.vary, values) + ": " +
                                 check.error().message};
    }
    table.variants.push_back(values);
    variants.push_back(std::move(var));
    // Next in the cross product; the last axis varies fastest.
    size_t k = axes.size();
    while (k > 0) {
      --k;
      if (++index[k] < axes[k].given.values.size()) break;
      index[k] = 0;
      if (k == 0) any = false;
    }
    if (axes.empty()) any = false;
  }
  return variants;
}

// Simulates `run` into `row`: its outcome, time, bubble, largest peak and
// OOM ranks.
void Simulate(const PreparedRun& run, Engine& engine, CompareRow& row) {
  SimOptions options;
  options.record_ops = true;
  const SimResult r = engine.Run(run.spec, run.program, options);
  row.ran = true;
  row.outcome = r.outcome;
  row.iteration_time = r.makespan;
  row.bubble_fraction = r.bubble_fraction();
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const DeviceStats& ds = r.devices[d];
    row.idle_total += ds.idle;
    if (ds.peak_memory > row.max_peak || (d == 0 && ds.peak_memory == row.max_peak)) {
      row.max_peak = ds.peak_memory;
      row.max_peak_rank = static_cast<int>(d);
      row.max_peak_capacity = ds.capacity;
    }
    if (ds.oom) row.oom_ranks.push_back(static_cast<int>(d));
  }
}

}  // namespace

Result<CompareTable> Compare(std::string_view text, std::string_view filename,
                             const CompareRequest& request) {
  CompareTable table;
  table.config_path = std::string(filename);
  table.vary = request.vary;

  if (Status s = ReadSchedules(request, table); !s.ok()) return s.error();

  // The config as given (--virtual-stages applies to interleaved rows only).
  // A strategy that does not fit --stages / --microbatches is no error here:
  // each row falls back to the even split.
  const CliOverrides& cli = request.overrides;
  CliOverrides base_cli = cli;
  base_cli.virtual_stages.reset();
  Result<RunConfig> base = ParseConfig(text, filename, base_cli);
  if (!base.ok() && IsStrategyError(base.error()) &&
      (cli.stages || cli.microbatches || cli.microbatch_group)) {
    Result<YAML::Node> doc = VariantDocument(text, {}, Strip::kSplitAndRecompute);
    if (doc.ok()) base = ParseConfigYaml(*doc, filename, base_cli);
  }
  if (!base.ok()) return base.error();
  table.model_name = base->model_name;
  const YAML::Node root = YAML::Load(std::string(text));

  const Result<std::vector<Axis>> read_axes = ReadAxes(root, request);
  if (!read_axes.ok()) return read_axes.error();
  const std::vector<Axis>& axes = *read_axes;

  Result<std::vector<Variant>> built = BuildVariants(text, filename, request, axes, *base, table);
  if (!built.ok()) return built.error();
  const std::vector<Variant>& variants = *built;

  // The v interleaved runs with when not varied.
  const bool has_interleaved = std::find(table.schedules.begin(), table.schedules.end(),
                                         "interleaved") != table.schedules.end();
  bool v_varied = false;
  for (const Axis& a : axes) {
    v_varied = v_varied || a.target.pipeline_key == "virtual_stages";
  }
  int interleaved_v = base->shape.v;
  if (has_interleaved && !v_varied && !cli.virtual_stages && base->shape.v < 2) {
    interleaved_v = 2;
    table.notes.push_back(
        "interleaved runs with v = 2: the config has v = 1 (choose v with "
        "--virtual-stages or --vary pipeline.virtual_stages=2,4)");
  }
  // gpipe, 1f1b, zb-1p and zb-2p run one chunk per rank, the V schedules two; the other
  // schedules take the varied / flag / config v (interleaved: as above).
  std::vector<std::string> flat, chunked, two;
  for (const std::string& s : table.schedules) {
    (FixedChunksPerRank(s) == 1   ? flat
     : FixedChunksPerRank(s) == 2 ? two
                                  : chunked)
        .push_back(s);
  }
  const bool v_given = v_varied || cli.virtual_stages.has_value();
  if (!flat.empty() && (v_given || base->shape.v > 1)) {
    table.notes.push_back(
        JoinAnd(flat) + (flat.size() == 1 ? " runs" : " run") +
        " with v = 1 (pipeline.virtual_stages applies to " +
        (chunked.empty() ? std::string("no other schedule") : JoinAnd(chunked)) +
        " only)");
  }
  if (!two.empty() && (v_given || base->shape.v != 2)) {
    table.notes.push_back(JoinAnd(two) + (two.size() == 1 ? " runs" : " run") +
                          " with v = 2 (the V placement: rank r holds stages r "
                          "and 2p-1-r)");
  }

  const YAML::Node strategy = At(root, {{"strategy"}});
  const bool has_split = strategy.IsMap() &&
                         (strategy["layers_per_chunk"] || strategy["layout"] || strategy["offset"]);
  const bool has_recompute = strategy.IsMap() && strategy["recompute"];

  const bool v_flag = cli.virtual_stages.has_value();
  Engine engine;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const Variant& var = variants[vi];
    for (const std::string& schedule : table.schedules) {
      CompareRow row;
      row.variant = static_cast<int>(vi);
      row.schedule = schedule;
      CliOverrides ov = var.overrides;
      ov.schedule = schedule;
      const int v =
          FixedChunksPerRank(schedule) > 0
              ? FixedChunksPerRank(schedule)
              : var.v.value_or(cli.virtual_stages.value_or(
                    schedule == "interleaved" ? interleaved_v : base->shape.v));
      ov.virtual_stages = v;
      row.v = v;
      row.p = ov.stages.value_or(base->shape.p);
      row.m = ov.microbatches.value_or(base->shape.m);

      // The config's strategy, else the even split with its recompute, else
      // without.
      std::vector<Strip> levels = {Strip::kNone};
      if (has_split) levels.push_back(Strip::kSplit);
      if (has_recompute) levels.push_back(Strip::kSplitAndRecompute);
      std::optional<RunConfig> config;
      Error error;
      for (size_t l = 0; l < levels.size(); ++l) {
        Result<YAML::Node> doc = VariantDocument(text, var.edits, levels[l]);
        if (!doc.ok()) return doc.error();
        Result<RunConfig> c = ParseConfigYaml(*doc, filename, ov);
        if (c.ok()) {
          config = std::move(*c);
          row.config_recompute = has_recompute && levels[l] != Strip::kSplitAndRecompute;
          row.config_split = has_split && levels[l] == Strip::kNone;
          row.split_fallback = has_split && levels[l] != Strip::kNone;
          row.recompute_fallback = levels[l] == Strip::kSplitAndRecompute;
          break;
        }
        error = c.error();
        if (!IsStrategyError(c.error())) {
          // Refused after falling back: say from which strategy.
          row.split_fallback = has_split && levels[l] != Strip::kNone;
          row.recompute_fallback = levels[l] == Strip::kSplitAndRecompute;
          break;
        }
        if (l == 0) row.fallback_reason = Reason(filename, c.error(), v_flag);
      }
      if (!row.split_fallback && !row.recompute_fallback) {
        row.fallback_reason.clear();
      }
      if (!config) {
        row.reason = Reason(filename, error, v_flag);
        table.rows.push_back(std::move(row));
        continue;
      }
      row.layers_per_stage = config->strategy.layers_per_stage;
      row.recomputed_layers = static_cast<int>(
          std::count_if(config->strategy.recompute.begin(), config->strategy.recompute.end(),
                        [](std::uint8_t r) { return r != 0; }));
      row.group =
          EffectiveGroup(ScheduleChoice{schedule, v, config->schedule_params}, row.p, row.m);
      Result<PreparedRun> run = Prepare(*config);
      if (!run.ok()) {
        row.reason = Reason(filename, run.error(), v_flag);
        table.rows.push_back(std::move(row));
        continue;
      }
      Simulate(*run, engine, row);
      if (const auto sm = StepMetricsOf(*config, config->strategy.recompute, config->shape.m,
                                        row.iteration_time);
          sm && row.outcome != Outcome::Deadlock) {
        row.gpus = sm->gpus;
        row.tokens_per_s_per_gpu = sm->tokens_per_s_per_gpu;
        row.mfu = sm->mfu;
      }
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

}  // namespace ppb

namespace ppb {

Result<UncertaintySummary> CompareUncertainty(std::string_view text, std::string_view filename,
                                              const CompareRequest& request,
                                              const CompareTable& nominal,
                                              const UncertaintyRequest& uncertainty) {
  CliOverrides base_cli = request.overrides;
  base_cli.virtual_stages.reset();
  const YAML::Node root = YAML::Load(std::string(text));
  // The machine's coefficients come from the config's hardware block; a
  // strategy that does not fit the overrides does not matter here.
  Result<YAML::Node> bare = VariantDocument(text, {}, Strip::kSplitAndRecompute);
  if (!bare.ok()) return bare.error();
  Result<RunConfig> base = ParseConfigYaml(*bare, filename, base_cli);
  if (!base.ok()) return base.error();
  if (!base->hardware.step_model) {
    return Error{"--uncertainty",
                 "--uncertainty: needs hardware.gpu (it draws the step model's coefficients); "
                 "got a config without it"};
  }
  auto time_of = [](const CompareRow& r) {
    return r.ran && r.outcome == Outcome::Ok ? r.iteration_time : Nanos{0};
  };
  std::vector<std::string> names;
  std::vector<Nanos> times0;
  for (const CompareRow& r : nominal.rows) {
    std::string name = r.schedule;
    if (r.v > 1) name += fmt::format(" v{}", r.v);
    for (size_t k = 0; k < nominal.vary.size(); ++k) {
      name += fmt::format(" {}={}", nominal.vary[k].key, nominal.variants[r.variant][k]);
    }
    names.push_back(std::move(name));
    times0.push_back(time_of(r));
  }
  std::vector<std::vector<Nanos>> times;
  for (const DrawnMachine& m : DrawMachines(uncertainty)) {
    YAML::Node drawn = YAML::Clone(root);
    ApplyMachine(drawn, base->hardware, m);
    YAML::Emitter emit;
    emit << drawn;
    Result<CompareTable> t = Compare(emit.c_str(), filename, request);
    if (!t.ok()) return t.error();
    std::vector<Nanos> row;
    for (const CompareRow& r : t->rows) row.push_back(time_of(r));
    row.resize(names.size(), 0);
    times.push_back(std::move(row));
  }
  return Summarize(uncertainty, names, times0, times);
}

}  // namespace ppb
