// The run config loader: YAML (configs/README-format.yaml) to RunConfig, with
// every error placed at the file line of the key it concerns, and Prepare:
// a loaded config lowered and its schedule generated (or its CSV read).
//
// Errors leave this file as Error{key, message} where message is already the
// complete "file:line: key: expected; got given" text (FormatError). The
// sections are read in config_pipeline.cpp, config_model.cpp,
// config_training.cpp, config_hardware.cpp, config_cluster.cpp, config_strategy.cpp and
// config_search.cpp, with the shared reader of config_reader.h.
#include "apps/input/config_parser.h"

#include "core/strategy.h"
#include "core/validate.h"

namespace ppb::config_detail {

Parser::Parser(std::string_view filename, const CliOverrides& cli)
    : ConfigReader(filename, RunConfig()), cli_(cli) {}

Parser::Parser(std::string_view filename, const CliOverrides& cli,
               const RunConfig& base)
    : ConfigReader(filename, base), cli_(cli) {}

Result<RunConfig> Parser::Parse(std::string_view text) {
  return WithYaml<RunConfig>(
      text, [&](const YAML::Node& root) { return ParseNode(root); });
}

// The config of an already loaded YAML document (its marks give lines).
Result<RunConfig> Parser::ParseNode(const YAML::Node& root) {
  try {
    PPB_RETURN_IF_ERROR(ParseRoot(root));
    return std::move(cfg_);
  } catch (const YAML::Exception& e) {
    return Error{"", At(e.mark) + ": must be readable YAML; got an error (" +
                         e.msg + ")"};
  }
}

Status Parser::ParseRoot(const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull()) {
    return Error{"", cfg_.path +
                         ": must be a map with model, cluster, pipeline and "
                         "optional strategy and search; got an empty file"};
  }
  Result<Entries> top =
      Map(root, "", {"model", "cluster", "pipeline", "strategy", "search",
                     "training", "hardware", "plan"});
  if (!top.ok()) return top.error();
  // The pipeline first: the shapes of the other sections depend on p, v.
  const Entry* pipeline = Find(*top, "pipeline");
  PPB_RETURN_IF_ERROR(PeekGlobalBatch(Find(*top, "training")));
  PPB_RETURN_IF_ERROR(ParsePipeline(pipeline));
  const Entry* model = Find(*top, "model");
  if (model == nullptr) {
    return Fail("model", "must be given (a map with layers); got nothing");
  }
  PPB_RETURN_IF_ERROR(ParseModel(model->value, Find(*top, "training"),
                                 Find(*top, "hardware")));
  if (!communication_given_) {
    // One default for pipeline communication, Megatron-LM's rule (core
    // 0.20, arguments.py validate_args and schedules.py): the
    // non-interleaved schedule sets overlap_p2p_comm = False, so each
    // step's batched sends and receives are waited on before compute goes
    // on (blocking); the interleaved schedule keeps overlap_p2p_comm's
    // default True (sends run beside compute). Other schedules keep
    // overlapped (torch's PipelineScheduleMulti waits on sends at the end).
    cfg_.shape.comm = cfg_.schedule == "1f1b" || cfg_.schedule == "gpipe"
                          ? CommMode::Blocking
                          : CommMode::Overlapped;
  }
  const Entry* cluster = Find(*top, "cluster");
  if (cluster == nullptr && !hardware_memory_) {
    return Fail("cluster", "must be given (a map with devices); got nothing");
  }
  PPB_RETURN_IF_ERROR(ParseCluster(cluster != nullptr
                                       ? cluster->value
                                       : YAML::Node(YAML::NodeType::Map)));
  PPB_RETURN_IF_ERROR(ApplyStageConstant());
  PPB_RETURN_IF_ERROR(ApplyMemoryReserve());
  PPB_RETURN_IF_ERROR(ParseStrategy(Find(*top, "strategy")));
  PPB_RETURN_IF_ERROR(ParseSearch(Find(*top, "search")));
  return ParsePlan(Find(*top, "plan"));
}

// Takes `amount` off every device's capacity (the cluster's and the
// topology's types); `refuse(capacity)` is the error when a device has no
// more than that.
template <class Refuse>
Status Parser::TakeOffCapacity(Bytes amount, Refuse refuse) {
  if (amount == 0) return Status();
  auto apply = [&](Bytes& capacity) -> Status {
    if (capacity - amount <= 0) return refuse(capacity);
    capacity -= amount;
    return Status();
  };
  for (Device& d : cfg_.cluster.devices) {
    PPB_RETURN_IF_ERROR(apply(d.memory_capacity));
  }
  if (cfg_.topology) {
    for (DeviceType& t : cfg_.topology->types) {
      PPB_RETURN_IF_ERROR(apply(t.memory_capacity));
    }
  }
  return Status();
}

// hardware.memory_reserve (the step model): kept free on every device;
// then what the process holds besides its tensors (core/process_memory.h):
// each device's capacity becomes the tensor bytes whose process fills it.
Status Parser::ApplyMemoryReserve() {
  const Hardware& h = cfg_.hardware;
  if (!h.step_model) return Status();
  const Bytes r = h.memory_reserve;
  PPB_RETURN_IF_ERROR(TakeOffCapacity(r, [&](Bytes capacity) -> Status {
    return Fail("hardware.memory_reserve",
                "must be less than every device's memory (" +
                    std::to_string(capacity) + " B); got " + std::to_string(r) + " B");
  }));
  const ProcessMemory& pm = h.gpu.process_memory;
  const Bytes fixed = FixedProcessBytes(pm, h.nccl_peers);
  auto apply = [&](Bytes& capacity) -> Status {
    const Bytes a = AllocatableBytes(pm, capacity, fixed);
    if (a <= 0) {
      return Fail("hardware.memory_context",
                  "with the workspace and NCCL's buffers (" +
                      std::to_string(h.nccl_peers.peers + h.nccl_peers.net_peers) +
                      " peers) must leave room for tensors in the device's " +
                      std::to_string(capacity) + " B; they take " + std::to_string(fixed) +
                      " B");
    }
    capacity = a;
    return Status();
  };
  for (Device& d : cfg_.cluster.devices) PPB_RETURN_IF_ERROR(apply(d.memory_capacity));
  if (cfg_.topology) {
    for (DeviceType& t : cfg_.topology->types) PPB_RETURN_IF_ERROR(apply(t.memory_capacity));
  }
  return Status();
}

// SAPP's stage_const_mem (RunConfig::stage_constant): every stage holds it
// besides its layers, so each device has that much less for them.
Status Parser::ApplyStageConstant() {
  const Bytes c = cfg_.stage_constant;
  return TakeOffCapacity(c, [&](Bytes capacity) -> Status {
    return Fail("model.sapp_layers",
                "has stage_const_mem " + std::to_string(c) +
                    " B, at least a device's memory capacity (" +
                    std::to_string(capacity) + " B)");
  });
}

}  // namespace ppb::config_detail

namespace ppb {

Bytes HeadroomBytes(const RunConfig& config, const MemoryHeadroom& h) {
  if (h.bytes >= 0) return h.bytes;
  if (!h.given && !config.hardware.step_model) return 0;
  Bytes memory = config.hardware.memory_bytes;
  if (memory <= 0) {
    for (const Device& d : config.cluster.devices) {
      if (memory <= 0 || d.memory_capacity < memory) memory = d.memory_capacity;
    }
  }
  return static_cast<Bytes>(h.share * static_cast<double>(memory));
}

Bytes HeadroomTensorBytes(const RunConfig& config, const MemoryHeadroom& h) {
  const Bytes b = HeadroomBytes(config, h);
  if (!config.hardware.step_model) return b;
  return static_cast<Bytes>(static_cast<double>(b) *
                            (1.0 - config.hardware.gpu.process_memory.fragmentation));
}

Result<RunConfig> LoadConfig(const std::string& path,
                             const CliOverrides& overrides) {
  std::string text;
  errno = 0;
  if (!config_detail::ReadFile(path, text)) {
    const std::string why = errno != 0 ? std::strerror(errno) : "read error";
    return Error{"", path + ": must be a readable config file; got " + why};
  }
  return ParseConfig(text, path, overrides);
}

Result<RunConfig> ParseConfig(std::string_view text, std::string_view filename,
                              const CliOverrides& overrides) {
  config_detail::Parser parser(filename, overrides);
  return parser.Parse(text);
}

Result<RunConfig> ParseConfigYaml(const YAML::Node& root,
                                  std::string_view filename,
                                  const CliOverrides& overrides) {
  config_detail::Parser parser(filename, overrides);
  return parser.ParseNode(root);
}

namespace {

// The first I or W op of `program` on a stage holding a layer whose config
// gives only a fused backward, as an error naming the action, its CSV line
// (rank + 1) and the layer.
Status CheckSplitBackward(const RunConfig& config, const Program& program,
                          const std::string& csv) {
  const std::vector<size_t> starts = StageStarts(config.strategy.layers_per_stage);
  for (size_t d = 0; d < program.ops.size(); ++d) {
    for (const Op& op : program.ops[d]) {
      if (op.kind != OpKind::I && op.kind != OpKind::W) continue;
      const auto s = static_cast<size_t>(op.stage.value);
      if (s + 1 >= starts.size()) continue;  // ValidateProgram names it
      for (size_t i = starts[s]; i < starts[s + 1]; ++i) {
        const Layer& layer = config.layers[i];
        if (layer.split_backward) continue;
        return Error{"pipeline.schedule_csv",
                     "must run B, not I and W, on a stage whose layers give only a fused "
                     "backward; got " +
                         ActionString(op) + " on line " + std::to_string(d + 1) + " of " +
                         csv + ", and stage " + std::to_string(s) + " holds layer " +
                         layer.name +
                         " (backward: given whole; give backward_input and backward_weight "
                         "to split it)"};
      }
    }
  }
  return Status();
}

}  // namespace

Result<PreparedRun> Prepare(const RunConfig& config) {
  const bool custom = config.schedule == "custom";
  const std::string schedule_key =
      custom ? "pipeline.schedule_csv" : "pipeline.schedule";
  // Core errors name config keys, or "schedule" / "" for the program.
  auto fail = [&](Error e) {
    if (e.key.empty() || e.key == "schedule") e.key = schedule_key;
    e.message = FormatError(config, e);
    return e;
  };

  // The schedule decides where the stages go (V for zbv-zero-bubble and
  // dualpipev, when v = 2; their generators refuse other v).
  PipelineShape shape = config.shape;
  if (!custom) {
    const ScheduleInfo* named = FindSchedule(config.schedule);
    if (named != nullptr && named->placement == StagePlacement::V &&
        shape.v == 2) {
      shape.placement = StagePlacement::V;
    }
  }
  Result<PipelineSpec> spec = Lower(config.layers, config.cluster, shape,
                                    config.strategy, config.allow_empty_chunks);
  if (!spec.ok()) return fail(spec.error());
  if (Status s = ValidateSpec(*spec); !s.ok()) return fail(s.error());

  Result<Program> program = Error{};
  if (custom) {
    // A path from the file is relative to the file; one from the command
    // line is relative to the working directory.
    std::filesystem::path csv = config.schedule_csv;
    auto line = config.key_lines.find("pipeline.schedule_csv");
    const bool from_cli = line != config.key_lines.end() && line->second == 0;
    if (!from_cli && csv.is_relative()) {
      csv = std::filesystem::path(config.path).parent_path() / csv;
    }
    std::string text;
    errno = 0;
    if (!config_detail::ReadFile(csv.string(), text)) {
      const std::string why = errno != 0 ? std::strerror(errno) : "read error";
      return fail(Error{"pipeline.schedule_csv",
                        "must name a readable schedule CSV; got " +
                            config.schedule_csv + " (" + csv.string() + ": " +
                            why + ")"});
    }
    program = ParseScheduleCsv(text);
    if (!program.ok()) {
      return fail(Error{"pipeline.schedule_csv",
                        "must be a valid torch schedule CSV; got " +
                            csv.string() + ", " + program.error().message});
    }
    // An I or W action splits its stage's backward; the config must give
    // both halves' costs (backward_input, backward_weight) for every layer
    // of that stage. A layer with only a fused `backward` has no such
    // split, so a CSV that asks for one is refused rather than priced by a
    // silent rule.
    if (Status st = CheckSplitBackward(config, *program, csv.string()); !st.ok()) {
      return fail(st.error());
    }
  } else {
    const ScheduleInfo* info = FindSchedule(config.schedule);
    if (info == nullptr) {
      return fail(
          Error{"pipeline.schedule",
                "must name a registered schedule; got " + config.schedule});
    }
    program = info->generate(*spec, config.schedule_params);
    if (!program.ok()) return fail(program.error());
  }
  if (Status s = ValidateProgram(*spec, *program); !s.ok()) {
    return fail(s.error());
  }
  return PreparedRun{std::move(*spec), std::move(*program)};
}

std::optional<StepMetrics> StepMetricsOf(const RunConfig& config,
                                         const std::vector<std::uint8_t>& recompute,
                                         int m, Nanos iteration) {
  if (config.derived.empty()) return std::nullopt;
  return ComputeStepMetrics(config.derived, recompute, config.training, config.hardware, m,
                            iteration);
}

}  // namespace ppb
