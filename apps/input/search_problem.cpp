// A run config to the search's problem and options (apps/input/search_problem.h).
#include "apps/input/search_problem.h"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ppb {
namespace {

bool SameParams(const ScheduleParams& a, const ScheduleParams& b) {
  return a.flavor == b.flavor && a.group == b.group &&
         a.activation_multiple == b.activation_multiple &&
         a.activation_bytes == b.activation_bytes;
}

bool SameChoice(const ScheduleChoice& a, const ScheduleChoice& b) {
  return a.schedule == b.schedule && a.v == b.v &&
         SameParams(a.params, b.params);
}

std::string JoinInts(const std::vector<int>& xs) {
  std::string out;
  for (int x : xs) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

// The error `message` about `key` of `config`, placed at its line.
Error ConfigError(const RunConfig& config, const std::string& key,
                  const std::string& message) {
  const Error e{key, message};
  return Error{key, FormatError(config, e)};
}

// The problem of `config` without choices.
SearchProblem BaseProblem(const RunConfig& config) {
  SearchProblem problem;
  problem.layers = config.layers;
  problem.cluster = config.cluster;
  problem.p = config.shape.p;
  problem.m = config.shape.m;
  problem.comm = config.shape.comm;
  problem.comm_by_schedule = !config.communication_given;
  problem.fb_overlap_ppm = config.shape.fb_overlap_ppm;
  problem.ep_overlap_ppm = config.shape.ep_overlap_ppm;
  problem.op_overhead = config.shape.op_overhead;
  problem.tail = config.shape.tail;
  problem.allow_empty_chunks = config.allow_empty_chunks;
  // The config's own strategy: a first try of every search (issue 32).
  problem.seeds = {config.strategy};
  if (config.topology) {
    problem.topology = *config.topology;
    problem.given_placement = config.placement;
  }
  // The search keeps the headroom free: an answer that needs it is at
  // risk (core/process_memory.h), never the search's answer.
  const Bytes keep = HeadroomTensorBytes(config, config.search.memory_headroom);
  problem.headroom = keep;
  auto keep_free = [&](Bytes& capacity) { capacity = std::max<Bytes>(1, capacity - keep); };
  for (Device& d : problem.cluster.devices) keep_free(d.memory_capacity);
  if (config.topology) {
    for (DeviceType& t : problem.topology.types) keep_free(t.memory_capacity);
  }
  return problem;
}

}  // namespace

std::string DescribeComm(const SearchProblem& problem) {
  auto name = [](CommMode c) { return c == CommMode::Overlapped ? "overlapped" : "blocking"; };
  if (problem.choices.empty()) return name(problem.comm);
  const CommMode first = ChoiceComm(problem, problem.choices.front());
  for (const ScheduleChoice& c : problem.choices) {
    if (ChoiceComm(problem, c) != first) {
      return "blocking for 1f1b/gpipe, overlapped otherwise (Megatron's rule)";
    }
  }
  return name(first);
}

std::string DescribeChoice(const SearchProblem& problem,
                           const ScheduleChoice& choice) {
  if (choice.schedule != "interleaved") return choice.schedule;
  return choice.schedule + " v=" + std::to_string(choice.v) +
         " g=" + std::to_string(EffectiveGroup(choice, problem.p, problem.m));
}

Result<SearchProblem> BuildSearchProblem(const RunConfig& config) {
  const SearchSettings& s = config.search;
  const int p = config.shape.p;
  SearchProblem problem = BaseProblem(config);
  problem.search_placement =
      config.topology.has_value() && config.search.search_device_order;

  std::vector<std::string> schedules = s.schedules;
  if (schedules.empty()) {
    if (config.schedule == "custom") {
      return ConfigError(
          config, "pipeline.schedule",
          "must be a registered schedule to search (a custom schedule "
          "fixes the op order of one split; give search.schedules); got "
          "custom");
    }
    schedules.push_back(config.schedule);
  }
  const std::vector<int> vs = s.virtual_stages.empty()
                                  ? std::vector<int>{config.shape.v}
                                  : s.virtual_stages;
  const std::vector<int> groups =
      s.microbatch_groups.empty()
          ? std::vector<int>{config.schedule_params.group}
          : s.microbatch_groups;
  // The key that set each list, for errors.
  const std::string v_key = s.virtual_stages.empty() ? "pipeline.virtual_stages"
                                                     : "search.virtual_stages";
  const std::string g_key = s.microbatch_groups.empty()
                                ? "pipeline.microbatch_group"
                                : "search.microbatch_groups";
  // Which v each schedule runs: gpipe, 1f1b, zb-1p and zb-2p 1 (one stage per
  // rank), interleaved >= 2, the V schedules 2, looped-bfs and
  // interleaved-zero-bubble any.
  const bool interleaved = std::find(schedules.begin(), schedules.end(),
                                     "interleaved") != schedules.end();
  // Whether schedule x runs with v, and what it runs, for the error.
  const auto takes = [&](const std::string& x, int v) {
    const int fv = FixedChunksPerRank(x);
    if (fv != 0) return fv == v;
    return x != "interleaved" || v >= 2;
  };
  const auto runs = [&]() {
    std::string out;
    for (const std::string& x : schedules) {
      const int fv = FixedChunksPerRank(x);
      if (!out.empty()) out += ", ";
      out += x + (fv != 0              ? " runs v = " + std::to_string(fv)
                  : x == "interleaved" ? std::string(" runs v >= 2")
                                       : std::string(" runs any v"));
    }
    return out;
  };

  // Every listed value must be used by some listed schedule.
  if (!s.virtual_stages.empty()) {
    for (int v : vs) {
      if (std::none_of(schedules.begin(), schedules.end(),
                       [&](const std::string& x) { return takes(x, v); })) {
        return ConfigError(config, v_key,
                           "must list only values a listed schedule runs (" + runs() +
                               "); got " + std::to_string(v));
      }
    }
  }
  if (interleaved && !s.schedules.empty() &&
      std::none_of(vs.begin(), vs.end(), [](int v) { return v >= 2; })) {
    return ConfigError(config, v_key,
                       "must give interleaved a v >= 2 (list it in "
                       "search.virtual_stages); got " +
                           JoinInts(vs));
  }
  if (!s.microbatch_groups.empty()) {
    if (!interleaved) {
      return ConfigError(config, g_key,
                         "must only be given when interleaved is searched; "
                         "got " +
                             JoinInts(groups));
    }
    if (config.schedule_params.flavor == Flavor::PyTorch) {
      return ConfigError(config, g_key,
                         "must not be given with flavor pytorch (which "
                         "derives g from m and p); got " +
                             JoinInts(groups));
    }
  }

  // Without lists the pipeline's own (schedule, v, g) is searched as given
  // (CheckSchedule refuses what its schedule refuses).
  const bool as_given = s.schedules.empty() && s.virtual_stages.empty();
  for (const std::string& schedule : schedules) {
    for (int v : vs) {
      if (!as_given && FixedChunksPerRank(schedule) != 0) {
        v = FixedChunksPerRank(schedule);  // gpipe, 1f1b, zb-1p, zb-2p: 1; the V schedules: 2
      } else if (!as_given && schedule == "interleaved" && v < 2) {
        continue;
      }
      for (int g : groups) {
        ScheduleChoice choice;
        choice.schedule = schedule;
        choice.v = v;
        choice.params.flavor = config.schedule_params.flavor;
        choice.params.group = schedule == "interleaved" ? g : 0;
        choice.params.combined_1f1b = config.schedule_params.combined_1f1b;
        if (schedule.rfind("zb-", 0) == 0) {  // pipeline.activation_limit
          if (config.schedule_params.activation_bytes > 0) {
            // One order serves every split (search/search.cpp MakeContext).
            return ConfigError(
                config, "pipeline.activation_limit",
                "must be kp (k p micro-batches per rank) when searching with " +
                    schedule + ", whose one order serves every split; got " +
                    std::to_string(config.schedule_params.activation_bytes) +
                    " bytes");
          }
          choice.params.activation_multiple =
              config.schedule_params.activation_multiple;
          choice.params.activation_bytes =
              config.schedule_params.activation_bytes;
        }
        if (std::any_of(problem.choices.begin(), problem.choices.end(),
                        [&](const ScheduleChoice& c) {
                          return SameChoice(c, choice);
                        })) {
          continue;  // gpipe / 1f1b ignore the groups
        }
        const std::int64_t stages = static_cast<std::int64_t>(p) * v;
        if (!config.allow_empty_chunks &&
            stages > static_cast<std::int64_t>(config.layers.size())) {
          return ConfigError(
              config, v_key,
              "must leave every chunk a layer: " + std::to_string(p) + " x " +
                  std::to_string(v) + " chunks for " +
                  std::to_string(config.layers.size()) +
                  " layers (set strategy.allow_empty_chunks to allow empty "
                  "chunks); got v = " +
                  std::to_string(v));
        }
        Status ok =
            CheckSchedule(schedule, p, v, config.shape.m, choice.params);
        if (!ok.ok()) {
          std::string key = ok.error().key;
          if (key == "pipeline.virtual_stages") key = v_key;
          if (key == "pipeline.microbatch_group") key = g_key;
          return ConfigError(
              config, key,
              DescribeChoice(problem, choice) + ": " + ok.error().message);
        }
        problem.choices.push_back(std::move(choice));
      }
    }
  }
  // Unreachable with the checks above, but a problem needs a choice.
  if (problem.choices.empty()) {
    return ConfigError(config, "search.schedules",
                       "must leave at least one schedule to search; got none");
  }
  return problem;
}

SearchOptions MakeSearchOptions(const SearchSettings& settings) {
  SearchOptions options;
  options.time_limit_s = static_cast<double>(settings.time_limit) / 1e9;
  options.node_limit = settings.node_limit;
  options.seed = settings.seed;
  options.top_k = settings.top;
  options.target = settings.target;
  // The hardware threads, asked of the system once (it reads /sys on each
  // call; a plan makes search options for thousands of layouts).
  static const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.threads = settings.threads > 0 ? settings.threads : hardware;
  return options;
}

RunConfig CandidateConfig(const RunConfig& config, const SearchProblem& problem,
                          const Candidate& c) {
  RunConfig out = config;
  const ScheduleChoice& choice = problem.choices[c.choice];
  out.schedule = choice.schedule;
  out.schedule_csv.clear();
  out.shape.v = choice.v;
  out.schedule_params = choice.params;
  out.shape.comm = ChoiceComm(problem, choice);
  out.strategy = c.strategy;
  out.allow_empty_chunks = problem.allow_empty_chunks;
  if (!c.placement.empty() && out.topology) {
    out.placement = c.placement;
    out.cluster = ClusterFor(*out.topology, c.placement);
  }
  return out;
}

RankProblem BuildRankProblem(const RunConfig& config,
                             const std::vector<RankCandidate>& candidates) {
  RankProblem out;
  out.problem = BaseProblem(config);
  for (const RankCandidate& c : candidates) {
    ScheduleChoice choice;
    choice.schedule = c.schedule;
    choice.v = c.v;
    choice.params = c.params;
    out.problem.allow_empty_chunks |= c.allow_empty_chunks;
    const auto& choices = out.problem.choices;
    auto it = std::find_if(
        choices.begin(), choices.end(),
        [&](const ScheduleChoice& x) { return SameChoice(x, choice); });
    out.choice_of.push_back(static_cast<int>(it - choices.begin()));
    if (it == choices.end()) out.problem.choices.push_back(std::move(choice));
  }
  return out;
}

}  // namespace ppb
