// TakeFrom (apps/commands/from_launch.h).
#include "apps/commands/from_launch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstring>

#include "apps/commands/common.h"
#include "apps/input/megatron_launch.h"
#include "apps/input/mindformers_launch.h"
#include "apps/input/text_lines.h"
#include "apps/input/torchtitan_launch.h"
#include "apps/output/emit.h"
#include "apps/output/emit_common.h"
#include "core/spec.h"
#include "schedules/schedule.h"

namespace ppb::commands {
namespace {

// The value of `flag` at args[k] ("--flag V" or "--flag=V"); k moves past it.
std::optional<std::string> Value(const std::vector<std::string>& args, size_t& k,
                                 const std::string& flag, std::ostream& err) {
  const std::string& a = args[k];
  if (a.size() > flag.size() && a[flag.size()] == '=') return a.substr(flag.size() + 1);
  if (k + 1 >= args.size()) {
    err << "ppb-sim: " << flag << ": needs a value; got nothing\n";
    return std::nullopt;
  }
  return args[++k];
}

bool Is(const std::string& a, const std::string& flag) {
  return a == flag ||
         (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0 && a[flag.size()] == '=');
}

// "file:line: " for the first pipeline flag `message` names.
std::string PlacePipelineError(const LaunchRun& run, const std::string& path,
                               const std::string& message) {
  size_t best = std::string::npos;
  std::string where = run.pipeline_origins.count("--pipeline-model-parallel-size") != 0
                          ? run.pipeline_origins.at("--pipeline-model-parallel-size")
                      : run.pipeline_origins.count("split") != 0 ? run.pipeline_origins.at("split")
                                                                 : path;
  // A message that names no flag but a recompute mode is about the recompute.
  if (!run.recompute_origin.empty() && message.find("recompute mode") != std::string::npos) {
    where = run.recompute_origin;
  }
  for (const auto& [flag, origin] : run.pipeline_origins) {
    const size_t at = message.find(flag);
    if (at < best) {
      best = at;
      where = origin;
    }
  }
  return where + ": " + message;
}

// The split and recompute by the framework's rules over the model's
// layers, errors placed at the launch.
Result<EmittedPlan> ReadPlan(const std::string& framework, const LaunchRun& run,
                             const std::string& path, const RunConfig& first) {
  if (framework == "megatron") {
    Result<EmittedPlan> plan = ParseMegatronArgs(run.pipeline_flags, first.layers);
    if (!plan.ok()) return Error{"", PlacePipelineError(run, path, plan.error().message)};
    return plan;
  }
  if (framework == "mindformers") {
    // LayerSetting's rules over the offset and the recompute lists.
    Result<EmittedPlan> plan = ParseMindFormersYaml(run.pipeline_flags, first.layers);
    if (!plan.ok()) return Error{"", PlacePipelineError(run, path, plan.error().message)};
    return plan;
  }
  Result<EmittedPlan> plan =
      ParseTorchtitan(Framework::Torchtitan022, run.pipeline_flags, first.layers);
  if (!plan.ok()) {
    return Error{"", run.pipeline_origins.at("split") + ": " + plan.error().message};
  }
  const std::vector<Layer>& layers = first.layers;
  auto fail = [&](const Layer& l, const std::string& mode) {
    return Error{"", fmt::format("{}: layer {} offers no recompute mode {}", run.recompute_origin,
                                 l.name, mode)};
  };
  if (!run.recompute_all.empty()) {
    if (Status st =
            emit_detail::SetOnDecoders(layers, run.recompute_all.c_str(), plan->strategy.recompute);
        !st.ok()) {
      return Error{"", run.recompute_origin + ": " + st.error().message};
    }
  }
  if (run.recompute_every > 0) {
    // torchtitan's layer SAC: a process counts the blocks it wraps, over
    // its stages in order, and fully recomputes each N-th.
    const ScheduleInfo* info = FindScheduleByAnyName(first.schedule);
    const StagePlacement placement = info != nullptr ? info->placement : StagePlacement::Loop;
    std::vector<size_t> starts{0};
    for (int n : plan->strategy.layers_per_stage) {
      starts.push_back(starts.back() + static_cast<size_t>(n));
    }
    for (int r = 0; r < plan->p; ++r) {
      int count = 0;
      for (int c = 0; c < plan->v; ++c) {
        const auto s = static_cast<size_t>(StageOf(placement, plan->p, c, r));
        for (size_t i = starts[s]; i < starts[s + 1] && i < layers.size(); ++i) {
          if (!emit_detail::IsDecoder(layers[i].kind)) continue;
          if (++count % run.recompute_every != 0) continue;
          plan->strategy.recompute[i] = emit_detail::OptionIndex(layers[i], "full");
          if (plan->strategy.recompute[i] == 0) return fail(layers[i], "full");
        }
      }
    }
  }
  return plan;
}

}  // namespace

Result<LaunchConfig> ReadLaunchConfig(const std::string& framework, const std::string& path,
                                      std::string_view text, const LaunchInputs& in) {
  Result<LaunchRun> run = framework == "megatron"      ? ReadMegatronLaunch(path, text, in)
                         : framework == "mindformers" ? ReadMindFormersLaunch(path, text, in)
                                                      : ReadTorchtitanLaunch(path, text, in);
  if (!run.ok()) return run.error();
  // The model's layers, then the framework's split and recompute over them.
  Result<RunConfig> first = ParseConfig(run->yaml, path, CliOverrides());
  if (!first.ok()) return Error{"", PlaceLaunchError(*run, path, first.error().message)};
  Result<EmittedPlan> plan = ReadPlan(framework, *run, path, *first);
  if (!plan.ok()) return plan.error();
  LaunchConfig out;
  out.yaml = run->yaml;
  out.origins = run->origins;
  out.notes = run->notes;
  const std::string split_origin = run->pipeline_origins.count("split") != 0
                                       ? run->pipeline_origins.at("split")
                                       : run->pipeline_origins.at("--pipeline-model-parallel-size");
  out.yaml += "strategy:\n";
  out.yaml +=
      fmt::format("  layers_per_chunk: [{}]\n", fmt::join(plan->strategy.layers_per_stage, ", "));
  out.origins.push_back("");
  out.origins.push_back(split_origin);
  std::vector<std::string> modes;
  for (size_t i = 0; i < plan->strategy.recompute.size() && i < first->layers.size(); ++i) {
    const std::uint8_t r = plan->strategy.recompute[i];
    if (r == 0) continue;
    modes.push_back(first->layers[i].name + ": " + first->layers[i].recompute[r - 1U].name);
  }
  if (!modes.empty()) {
    std::string origin = run->recompute_origin;
    if (const auto it = run->pipeline_origins.find("--recompute-granularity");
        it != run->pipeline_origins.end()) {
      origin = it->second;
    }
    out.yaml += fmt::format("  recompute:\n    layers: {{{}}}\n", fmt::join(modes, ", "));
    out.origins.push_back("");
    out.origins.push_back(origin);
  }
  LaunchRun placed = *run;
  placed.origins = out.origins;
  Result<RunConfig> loaded = ParseConfig(out.yaml, path, CliOverrides());
  if (!loaded.ok()) return Error{"", PlaceLaunchError(placed, path, loaded.error().message)};
  Result<PreparedRun> prepared = Prepare(*loaded);
  if (!prepared.ok()) return Error{"", PlaceLaunchError(placed, path, prepared.error().message)};
  return out;
}

std::optional<int> TakeFrom(std::vector<std::string>& args, std::unique_ptr<ScopedConfigText>& held,
                            std::ostream& out, std::ostream& err) {
  std::optional<std::string> framework, file, cluster, gpus_text;
  bool show = false;
  bool config = false;
  std::vector<std::string> rest;
  for (size_t k = 0; k < args.size(); ++k) {
    const std::string& a = args[k];
    std::optional<std::string>* slot = nullptr;
    std::string flag;
    if (Is(a, "--from")) {
      slot = &framework;
      flag = "--from";
    } else if (Is(a, "--cluster")) {
      slot = &cluster;
      flag = "--cluster";
    } else if (Is(a, "--gpus")) {
      slot = &gpus_text;
      flag = "--gpus";
    } else if (a == "--show-config") {
      show = true;
      continue;
    } else {
      if (Is(a, "--config")) config = true;
      rest.push_back(a);
      continue;
    }
    std::optional<std::string> v = Value(args, k, flag, err);
    if (!v) return kExitBadInput;
    *slot = *v;
    if (flag == "--from") {
      // --from FRAMEWORK FILE
      if (k + 1 >= args.size() || (args[k + 1].size() > 1 && args[k + 1][0] == '-')) {
        err << "ppb-sim: --from: needs FRAMEWORK FILE (--from megatron train.sh); got no "
               "FILE\n";
        return kExitBadInput;
      }
      file = args[++k];
    }
  }
  if (!framework) {
    for (const auto& [given, flag] :
         {std::pair{cluster.has_value(), "--cluster"}, std::pair{gpus_text.has_value(), "--gpus"},
          std::pair{show, "--show-config"}}) {
      if (given) {
        err << "ppb-sim: " << flag << ": needs --from FRAMEWORK FILE; got " << flag << " alone\n";
        return kExitBadInput;
      }
    }
    return std::nullopt;
  }
  if (*framework != "megatron" && *framework != "torchtitan" && *framework != "mindformers") {
    err << "ppb-sim: --from: must be megatron (a launch script or a training log), "
           "torchtitan (a v0.2.2 TOML job config, or FILE.py:FUNCTION of main's config "
           "registry) or mindformers (a training YAML); got '"
        << *framework << "'\n";
    return kExitBadInput;
  }
  if (config) {
    err << "ppb-sim: --from: must not be given with --config (the launch is the config); got "
           "both\n";
    return kExitBadInput;
  }
  LaunchInputs in;
  if (gpus_text) {
    auto g = IntFlag<int>("--gpus", *gpus_text, 1, "a positive integer (the world size)", 1 << 24);
    if (!g.ok()) {
      err << "ppb-sim: --gpus: " << g.error().message << "\n";
      return kExitBadInput;
    }
    in.gpus = *g;
  }
  // torchtitan main's "registry.py:FUNCTION" names the registry file.
  const std::string read_path = *framework == "torchtitan" ? TorchtitanFile(*file) : *file;
  std::string text;
  errno = 0;
  if (!ReadTextFile(read_path, text)) {
    err << "ppb-sim: " << read_path << ": must be a readable launch script, log or config; got "
        << (errno != 0 ? std::strerror(errno) : "a read error") << "\n";
    return kExitBadInput;
  }
  if (cluster) {
    in.cluster_path = *cluster;
    errno = 0;
    if (!ReadTextFile(*cluster, in.cluster_text)) {
      err << "ppb-sim: " << *cluster << ": must be a readable YAML file; got "
          << (errno != 0 ? std::strerror(errno) : "a read error") << "\n";
      return kExitBadInput;
    }
  }
  Result<LaunchConfig> launch = ReadLaunchConfig(*framework, *file, text, in);
  if (!launch.ok()) {
    err << launch.error().message << "\n";
    return kExitBadInput;
  }
  const std::string& yaml = launch->yaml;
  const std::vector<std::string>& origins = launch->origins;
  if (show) {
    // Each line with where it came from.
    ForEachLine(yaml, [&](std::string_view line, int n) {
      const auto k = static_cast<size_t>(n) - 1;
      const std::string origin = k < origins.size() ? origins[k] : "";
      if (!origin.empty() && origin.find(read_path) == 0) {
        out << fmt::format("{:<44} # {}\n", line, origin);
      } else {
        out << line << "\n";
      }
      return true;
    });
    for (const std::string& note : launch->notes) out << "# note: " << note << "\n";
    return kExitOk;
  }
  for (const std::string& note : launch->notes) {
    err << "ppb-sim: --from " << *framework << " " << *file << ": " << note << "\n";
  }
  held = std::make_unique<ScopedConfigText>(*file, yaml);
  rest.push_back("--config");
  rest.push_back(*file);
  args = std::move(rest);
  return std::nullopt;
}

}  // namespace ppb::commands
