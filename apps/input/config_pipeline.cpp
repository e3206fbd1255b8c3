// pipeline.*: stages p, micro-batches m, chunks per rank v, micro-batch
// group g, flavor, communication, schedule and schedule_csv, each replaced by
// its flag when given (--stages, --schedule, ...; key line 0). Read first:
// the shapes of the other sections depend on p and v. Errors as every
// config error: "file:line: pipeline.<key>: must be ...; got ...".
#include <algorithm>
#include <cmath>

#include "apps/input/config_parser.h"

namespace ppb::config_detail {

// "pipeline.stages = 4" or "--stages 4", for messages about shapes.
std::string Parser::StagesNote() const {
  const std::string p = std::to_string(cfg_.shape.p);
  std::string note = cli_.stages ? "--stages " + p : "pipeline.stages = " + p;
  if (cfg_.shape.v > 1) {
    const std::string v = std::to_string(cfg_.shape.v);
    if (!v_key_.empty()) {
      note += ", " + v_key_ + " = " + v;
    } else {
      note += cli_.virtual_stages ? ", --virtual-stages " + v
                                  : ", pipeline.virtual_stages = " + v;
    }
  }
  return note;
}

// An integer of the pipeline section: from the command line, the file, or
// the default (nullopt: required).
Result<int> Parser::PipelineInt(const Entries& entries, std::string_view name,
                                std::optional<int> from_cli,
                                std::optional<int> default_value) {
  const std::string path = "pipeline." + std::string(name);
  if (from_cli) {
    cfg_.key_lines[path] = 0;
    if (*from_cli < 1) {
      return Fail(path, "must be a positive integer; got " +
                            std::to_string(*from_cli));
    }
    return *from_cli;
  }
  if (const Entry* e = Find(entries, name)) {
    return PositiveInt(e->value, path);
  }
  if (default_value) return *default_value;
  return Fail(path, "must be given (a positive integer); got nothing");
}

Status Parser::CheckOps(const std::string& key, int p, int v, int m,
                        const std::string& given) const {
  const std::int64_t limit = cli_.max_ops.value_or(kDefaultMaxOps);
  const std::int64_t ops = kOpKindsBound * p * v * m;  // p * v <= 1e5
  if (ops <= limit) return Status();
  return Fail(key, fmt::format(
                       "must keep one simulation within {} ops (the limit; "
                       "--max-ops N raises it): stages x virtual_stages x "
                       "microbatches x {} op kinds = {} x {} x {} x {} = {} "
                       "ops, about {:.1f} GB and {:.0f} s; got {}",
                       limit, kOpKindsBound, p, v, m, kOpKindsBound, ops,
                       static_cast<double>(ops) * kBytesPerOp / 1e9,
                       static_cast<double>(ops) * kSecondsPerOp, given));
}

Status Parser::ParsePipeline(const Entry* section) {
  Entries e;
  if (section != nullptr) {
    Result<Entries> r =
        Map(section->value, "pipeline",
            {"stages", "microbatches", "virtual_stages", "schedule", "flavor",
             "microbatch_group", "communication", "schedule_csv",
             "fb_overlap", "activation_limit"});
    if (!r.ok()) return r.error();
    e = std::move(*r);
  }
  Result<int> p = PipelineInt(e, "stages", cli_.stages, std::nullopt);
  if (!p.ok()) return p.error();
  if (global_microbatches_ &&
      (cli_.microbatches || Find(e, "microbatches") != nullptr)) {
    return Fail("training.global_batch_size",
                "must not be given with " +
                    std::string(cli_.microbatches ? "--microbatches"
                                                  : "pipeline.microbatches") +
                    " (it sets m = global_batch_size / (data_parallel x "
                    "micro_batch_size)); got both");
  }
  Result<int> m = PipelineInt(e, "microbatches", cli_.microbatches,
                              global_microbatches_);
  if (!m.ok()) return m.error();
  Result<int> v = PipelineInt(e, "virtual_stages", cli_.virtual_stages, 1);
  if (!v.ok()) return v.error();
  Result<int> g =
      PipelineInt(e, "microbatch_group", cli_.microbatch_group, 0);
  if (!g.ok()) return g.error();
  if (static_cast<std::int64_t>(*p) * *v > kMaxLayers) {
    return Fail("pipeline.virtual_stages",
                "must give at most " + std::to_string(kMaxLayers) +
                    " stages x virtual_stages; got " + std::to_string(*p) +
                    " x " + std::to_string(*v));
  }
  // m from the global batch: the key the user wrote, with the m it implies.
  const bool from_global = global_microbatches_ && !cli_.microbatches &&
                           Find(e, "microbatches") == nullptr;
  PPB_RETURN_IF_ERROR(CheckOps(
      from_global ? "training.global_batch_size" : "pipeline.microbatches", *p, *v, *m,
      from_global ? std::to_string(global_batch_) + " (m = " + std::to_string(*m) +
                        " micro-batches)"
                  : std::to_string(*m)));
  cfg_.shape.p = *p;
  cfg_.shape.m = *m;
  cfg_.shape.v = *v;
  cfg_.schedule_params.group = *g;

  if (const Entry* f = Find(e, "flavor")) {
    Result<size_t> i = Choice(f->value, f->path, {"megatron", "pytorch"});
    if (!i.ok()) return i.error();
    cfg_.schedule_params.flavor =
        *i == 0 ? Flavor::Megatron : Flavor::PyTorch;
  }
  if (const Entry* c = Find(e, "communication")) {
    communication_given_ = true;
    cfg_.communication_given = true;
    Result<size_t> i = Choice(c->value, c->path, {"overlapped", "blocking"});
    if (!i.ok()) return i.error();
    cfg_.shape.comm = *i == 0 ? CommMode::Overlapped : CommMode::Blocking;
  }
  if (const Entry* o = Find(e, "fb_overlap")) {
    // The share of the shorter half an overlapped F+B (dualpipev) saves.
    Result<double> share = Share(o->value, o->path, 1.0, "a share in [0, 1]");
    if (!share.ok()) return share.error();
    cfg_.shape.fb_overlap_ppm = std::llround(*share * 1e6);
  }
  if (const Entry* a = Find(e, "activation_limit")) {
    if (Status s = ParseActivationLimit(*a); !s.ok()) return s;
  }
  return ParseScheduleChoice(e);
}

// pipeline.activation_limit: "kp" (k a positive integer: k p micro-batches
// of each rank's stage) or a positive size ("24GiB"); read by the adaptive
// schedules zb-1p, zb-2p and zb-v.
Status Parser::ParseActivationLimit(const Entry& entry) {
  const std::string want =
      "must be a size (e.g. 24GiB) or kp with k a positive integer (1p, 2p)";
  if (entry.value.IsScalar()) {
    const std::string text = entry.value.Scalar();
    if (text.size() >= 2 && text.back() == 'p' &&
        std::all_of(text.begin(), text.end() - 1,
                    [](char c) { return c >= '0' && c <= '9'; })) {
      const std::string digits = text.substr(0, text.size() - 1);
      if (digits.size() <= 6 && std::stoi(digits) >= 1) {
        cfg_.schedule_params.activation_multiple = std::stoi(digits);
        return Status();
      }
      return Fail(entry.path, want + "; got " + text);
    }
  }
  Result<Bytes> bytes = Size(entry.value, entry.path, true);
  if (!bytes.ok()) {
    return Fail(entry.path, want + "; got " + Given(entry.value));
  }
  cfg_.schedule_params.activation_bytes = *bytes;
  return Status();
}

// pipeline.schedule and pipeline.schedule_csv, with --schedule and
// --schedule-csv (which implies schedule custom).
Status Parser::ParseScheduleChoice(const Entries& e) {
  const std::vector<std::string> names = ScheduleNames(true);
  const std::string want = "must be one of " + Join(names);

  if (cli_.schedule) {
    cfg_.key_lines["pipeline.schedule"] = 0;
    cfg_.schedule = NormalizeSchedule(*cli_.schedule, true);
    if (cfg_.schedule.empty()) {
      return Fail("pipeline.schedule", want + "; got " + *cli_.schedule);
    }
  } else if (const Entry* s = Find(e, "schedule")) {
    Result<std::string> name = String(s->value, s->path, "a schedule name");
    if (!name.ok()) return Fail(s->path, want + "; got " + Given(s->value));
    cfg_.schedule = NormalizeSchedule(*name, true);
    if (cfg_.schedule.empty()) {
      return Fail(s->path, want + "; got " + *name);
    }
  }

  if (cli_.schedule_csv) {
    cfg_.key_lines["pipeline.schedule_csv"] = 0;
    if (cli_.schedule && cfg_.schedule != "custom") {
      return Fail("pipeline.schedule",
                  "must be custom when --schedule-csv is given; got " +
                      *cli_.schedule);
    }
    if (cli_.schedule_csv->empty()) {
      return Fail("pipeline.schedule_csv",
                  "must be a CSV file path; got an empty string");
    }
    cfg_.schedule = "custom";
    cfg_.schedule_csv = *cli_.schedule_csv;
    return Status();
  }
  const Entry* csv = Find(e, "schedule_csv");
  if (cfg_.schedule == "custom") {
    if (csv == nullptr) {
      return Fail("pipeline.schedule_csv",
                  "must be given for schedule custom (a torch schedule CSV, "
                  "relative to the config file); got nothing");
    }
    Result<std::string> path = String(csv->value, csv->path, "a file path");
    if (!path.ok()) return path.error();
    cfg_.schedule_csv = *path;
  } else if (csv != nullptr && !cli_.schedule) {
    return Fail(csv->path, "must only be given with schedule custom; got " +
                               Given(csv->value) + " with schedule " +
                               cfg_.schedule);
  }
  return Status();
}

// The registered schedule names, then "custom" if `with_custom`.
std::vector<std::string> Parser::ScheduleNames(bool with_custom) {
  std::vector<std::string> names;
  for (const ScheduleInfo& info : ScheduleRegistry()) {
    names.emplace_back(info.name);
  }
  if (with_custom) names.emplace_back("custom");
  return names;
}

// A schedule name as given (any case; torch's names and class names, e.g.
// Interleaved1F1B or ScheduleLoopedBFS, are aliases) to its registry name, or
// "" when there is none.
std::string Parser::NormalizeSchedule(const std::string& given,
                                      bool with_custom) {
  if (with_custom && Lower(given) == "custom") return "custom";
  const ScheduleInfo* info = FindScheduleByAnyName(given);
  return info == nullptr ? std::string() : std::string(info->name);
}

}  // namespace ppb::config_detail
