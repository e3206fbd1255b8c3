// The reports of ppb-sim search and rank (apps/output/search_output.h).
#include "apps/output/search_output.h"

#include "core/step_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/input/search_problem.h"
#include "apps/input/json_text.h"
#include "apps/output/output.h"
#include "core/strategy.h"

namespace ppb {
namespace {

using Json = nlohmann::ordered_json;

// The recompute modes the model offers besides "none", in order of first
// appearance (the order of the config's layers).
std::vector<std::string> ModeNames(const std::vector<Layer>& layers) {
  std::vector<std::string> names;
  for (const Layer& l : layers) {
    for (const RecomputeOption& o : l.recompute) {
      if (std::find(names.begin(), names.end(), o.name) == names.end()) {
        names.push_back(o.name);
      }
    }
  }
  return names;
}

// The name of recompute choice k of `layer` (0: "none").
const std::string& ModeName(const Layer& layer, std::uint8_t k) {
  static const std::string kNone = "none";
  return k == 0 ? kNone : layer.recompute[k - 1].name;
}

// Per global stage: how many of its layers use recompute mode `mode`.
std::vector<int> ModeCounts(const std::vector<Layer>& layers,
                            const Strategy& strategy, const std::string& mode) {
  std::vector<int> counts;
  size_t layer = 0;
  for (int n : strategy.layers_per_stage) {
    int count = 0;
    for (int k = 0; k < n; ++k, ++layer) {
      if (ModeName(layers[layer], strategy.recompute[layer]) == mode) ++count;
    }
    counts.push_back(count);
  }
  return counts;
}

// "decoder.3" for one layer; "decoder.3-7" for a run of layers named
// <prefix>.<number> with one prefix; "embedding..decoder.2" otherwise.
std::string RangeName(const std::vector<Layer>& layers, size_t first,
                      size_t last) {
  const std::string& a = layers[first].name;
  const std::string& b = layers[last].name;
  if (first == last) return a;
  const size_t da = a.rfind('.'), db = b.rfind('.');
  auto numeric = [](const std::string& s, size_t from) {
    return from < s.size() &&
           std::all_of(s.begin() + static_cast<std::ptrdiff_t>(from), s.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  if (da != std::string::npos && db != std::string::npos &&
      a.compare(0, da, b, 0, db) == 0 && da == db && numeric(a, da + 1) &&
      numeric(b, db + 1)) {
    return a + "-" + b.substr(db + 1);
  }
  return a + ".." + b;
}

}  // namespace

// "full decoder.0-3, decoder.9; selective decoder.4-8", or "none".
std::string RecomputeByLayer(const std::vector<Layer>& layers,
                             const Strategy& strategy) {
  std::string out;
  for (const std::string& mode : ModeNames(layers)) {
    std::string runs;
    for (size_t i = 0; i < layers.size();) {
      if (ModeName(layers[i], strategy.recompute[i]) != mode) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j + 1 < layers.size() &&
             ModeName(layers[j + 1], strategy.recompute[j + 1]) == mode) {
        ++j;
      }
      runs += (runs.empty() ? "" : ", ") + RangeName(layers, i, j);
      i = j + 1;
    }
    if (!runs.empty()) out += (out.empty() ? "" : "; ") + mode + " " + runs;
  }
  return out.empty() ? "none" : out;
}

// "full 3, selective 10", or "none": recomputed layers per mode.
std::string RecomputeSummary(const std::vector<Layer>& layers,
                             const Strategy& strategy) {
  std::string out;
  for (const std::string& mode : ModeNames(layers)) {
    int n = 0;
    for (int c : ModeCounts(layers, strategy, mode)) n += c;
    if (n > 0) out += (out.empty() ? "" : ", ") + fmt::format("{} {}", mode, n);
  }
  return out.empty() ? "none" : out;
}

namespace {

// The ranks out of memory, in order (empty when none).
std::vector<int> OomRanks(const Candidate& c) {
  std::vector<int> ranks;
  for (size_t d = 0; d < c.devices.size(); ++d) {
    if (c.devices[d].oom) ranks.push_back(static_cast<int>(d));
  }
  return ranks;
}

}  // namespace

// "fits", "OOM on rank 3", "OOM on ranks 0, 1, 5-15" (runs of three or
// more as ranges) or "infeasible (deadlock)".
std::string MinCapacityText(const SearchResult& result) {
  if (result.min_capacity_cut) {
    return result.min_capacity_needed > 0
               ? "at most " + FormatBytes(result.min_capacity_needed) +
                     " (its search stopped at the time limit)"
               : std::string("not found (its search stopped at the time limit)");
  }
  return FormatBytes(result.min_capacity_needed) +
         (result.binding_device >= 0 ? fmt::format(" (rank {} binds)", result.binding_device)
                                     : std::string(" (binding rank unknown)"));
}

namespace {

// Under a framework target, when no capacity makes a strategy fit: why
// (the framework's refusal of each schedule choice, or of every split).
std::string NoCapacityText(const SearchProblem& problem, DeployTarget target) {
  std::string why;
  for (const ScheduleChoice& ch : problem.choices) {
    const std::string r =
        ChoiceRefusal(target, problem.layers, ch.v,
                      PlacementOf(ch.schedule, ch.v) == StagePlacement::V, problem.p, problem.m,
                      EffectiveGroup(ch, problem.p, problem.m));
    why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", DescribeChoice(problem, ch),
                       r.empty() ? "no split with a recompute it can express" : r);
  }
  return fmt::format("none: {} can run no strategy of this model at any capacity ({})",
                     TargetName(target), why);
}

}  // namespace

std::string Fits(const Candidate& c, Bytes headroom) {
  if (c.feasible) return "fits";
  const std::vector<int> oom = OomRanks(c);
  if (oom.empty()) return "infeasible (deadlock)";
  bool at_risk = headroom > 0;
  for (int d : oom) {
    const DeviceStats& s = c.devices[static_cast<size_t>(d)];
    at_risk = at_risk && s.peak_memory <= s.capacity + headroom;
  }
  std::string out = at_risk ? (oom.size() == 1 ? "at risk on rank" : "at risk on ranks")
                            : (oom.size() == 1 ? "OOM on rank" : "OOM on ranks");
  for (size_t i = 0; i < oom.size();) {
    size_t j = i;
    while (j + 1 < oom.size() && oom[j + 1] == oom[j] + 1) ++j;
    out += i == 0 ? " " : ", ";
    if (j >= i + 2) {
      out += fmt::format("{}-{}", oom[i], oom[j]);
      i = j + 1;
    } else {
      out += std::to_string(oom[i]);
      ++i;
    }
  }
  return at_risk ? out + " (inside the memory headroom)" : out;
}

bool RunsOnGpu(const Candidate& c, Bytes headroom) {
  const std::string fits = Fits(c, headroom);
  return fits == "fits" || fits.rfind("at risk", 0) == 0;
}

namespace {

int PeakRank(const Candidate& c) {
  int best = 0;
  for (size_t d = 0; d < c.devices.size(); ++d) {
    if (c.devices[d].peak_memory > c.devices[best].peak_memory) {
      best = static_cast<int>(d);
    }
  }
  return best;
}

std::string Percent(double fraction) {
  return fmt::format("{:.2f} %", 100.0 * fraction);
}

// ---- JSON -----------------------------------------------------------------

Json CandidateJson(const SearchProblem& problem, const Candidate& c) {
  const ScheduleChoice& choice = problem.choices[c.choice];
  const int p = problem.p, v = choice.v;
  Json j;
  j["schedule"] = choice.schedule;
  j["virtual_stages"] = v;
  const int g = EffectiveGroup(choice, problem.p, problem.m);
  j["microbatch_group"] = g > 0 ? Json(g) : Json(nullptr);
  j["iteration_time_ms"] = ToMs(c.makespan);
  j["iteration_time_ns"] = c.makespan;
  j["bubble_fraction"] = c.bubble_fraction;
  j["max_peak_memory_bytes"] = c.max_peak;
  j["feasible"] = c.feasible;
  j["oom_ranks"] = OomRanks(c);
  j["recomputed_layers"] = c.recomputed_layers;
  const StagePlacement placement = PlacementOf(choice.schedule, v);
  j["layers_per_chunk"] =
      ByChunkAndRank(c.strategy.layers_per_stage, p, v, placement);
  j["layout"] =
      FormatMegatronLayout(c.strategy.layers_per_stage, problem.layers);
  Json per_stage = Json::object();
  for (const std::string& mode : ModeNames(problem.layers)) {
    per_stage[mode] =
        ByChunkAndRank(ModeCounts(problem.layers, c.strategy, mode), p, v,
                       placement);
  }
  Json per_layer = Json::array();
  for (size_t i = 0; i < problem.layers.size(); ++i) {
    per_layer.push_back(ModeName(problem.layers[i], c.strategy.recompute[i]));
  }
  j["recompute"] = {{"per_stage", per_stage}, {"per_layer", per_layer}};
  Json devices = Json::array();
  for (size_t d = 0; d < c.devices.size(); ++d) {
    const DeviceStats& ds = c.devices[d];
    devices.push_back({{"rank", d},
                       {"peak_memory_bytes", ds.peak_memory},
                       {"memory_capacity_bytes", ds.capacity},
                       {"oom", ds.oom},
                       {"busy_ms", ToMs(ds.busy)},
                       {"idle_ms", ToMs(ds.idle)},
                       {"recompute_ms", ToMs(ds.recompute)}});
  }
  j["devices"] = devices;
  if (!c.placement.empty()) {
    Json order = Json::array();
    for (size_t r = 0; r < c.placement.size(); ++r) {
      const int d = c.placement[r];
      const Topology& t = problem.topology;
      order.push_back({{"rank", r},
                       {"device", d},
                       {"type", t.types[t.device_type[d]].name},
                       {"node", t.node_names[t.device_node[d]]}});
    }
    j["placement"] = order;
  }
  return j;
}

// The fields every report starts with.
Json Header(const char* schema, const RunConfig& config,
            const SearchProblem& problem) {
  Json j;
  j["schema"] = schema;
  j["config"] = config.path;
  j["model"] = config.model_name;
  if (!config.input_notes.empty()) j["input_notes"] = config.input_notes;
  j["layers"] = problem.layers.size();
  j["stages"] = problem.p;
  j["microbatches"] = problem.m;
  j["communication"] = DescribeComm(problem);
  return j;
}

// ---- text -----------------------------------------------------------------

// The split and per-mode recompute counts as rows of a [chunk][rank] table.
std::string ChunkRankTable(const SearchProblem& problem, const Candidate& c) {
  const int p = problem.p, v = problem.choices[c.choice].v;
  std::vector<std::pair<std::string, std::vector<int>>> rows;
  rows.emplace_back("layers", c.strategy.layers_per_stage);
  for (const std::string& mode : ModeNames(problem.layers)) {
    std::vector<int> counts = ModeCounts(problem.layers, c.strategy, mode);
    if (std::any_of(counts.begin(), counts.end(),
                    [](int n) { return n > 0; })) {
      rows.emplace_back(mode, std::move(counts));
    }
  }
  size_t label = 4;
  for (const auto& row : rows) label = std::max(label, row.first.size());
  const std::string chunk = v > 1 ? "chunk 0" : "";
  std::string out = fmt::format("    {:<{}}  {:>7}", "", label, "rank");
  for (int r = 0; r < p; ++r) out += fmt::format(" {:>3}", r);
  out += "\n";
  for (const auto& [name, per_stage] : rows) {
    for (int ch = 0; ch < v; ++ch) {
      out += fmt::format("    {:<{}}  {:>7}", ch == 0 ? name : "", label,
                         v > 1 ? fmt::format("chunk {}", ch) : "");
      for (int r = 0; r < p; ++r) {
        out += fmt::format(
            " {:>3}", per_stage[static_cast<size_t>(StageOf(
                          PlacementOf(problem.choices[c.choice].schedule, v), p,
                          ch, r))]);
      }
      out += "\n";
    }
  }
  return out;
}

// The recommendation in full.
std::string BestText(const SearchProblem& problem, const Candidate& c) {
  const int p = problem.p, v = problem.choices[c.choice].v;
  const int peak = PeakRank(c);
  const ScheduleChoice& choice = problem.choices[c.choice];
  const int g = EffectiveGroup(choice, problem.p, problem.m);
  std::string out =
      fmt::format("recommended: schedule {}, v={}, g={}\n", choice.schedule, v,
                  g > 0 ? std::to_string(g) : std::string("-"));
  out += fmt::format("  iteration time    {:.3f} ms\n", ToMs(c.makespan));
  out += fmt::format("  bubble fraction   {}\n", Percent(c.bubble_fraction));
  out += fmt::format("  max peak memory   {} on rank {} (capacity {})\n",
                     FormatBytes(c.devices[peak].peak_memory), peak,
                     FormatBytes(c.devices[peak].capacity));
  out += fmt::format(
      "  layout            {}\n",
      FormatMegatronLayout(c.strategy.layers_per_stage, problem.layers));
  if (!c.placement.empty()) {
    out += "  device by rank   ";
    for (size_t r = 0; r < c.placement.size(); ++r) {
      out += fmt::format(" {}:{}", r, DeviceLabel(problem.topology, c.placement[r]));
    }
    out += "\n";
  }
  out += "  layers and recomputed layers per (chunk, rank):\n";
  out += ChunkRankTable(problem, c);
  out += fmt::format("  recompute by layer: {}\n",
                     RecomputeByLayer(problem.layers, c.strategy));
  const auto held = LayersHeld(c.strategy.layers_per_stage, p, v,
                               PlacementOf(choice.schedule, v));
  size_t width = 6;
  for (const auto& h : held) width = std::max(width, h.size());
  out += fmt::format("  {:>4}  {:<{}}  {:>12}  {:>12}  {:>12}  {:>23}\n",
                     "rank", "layers", width, "busy ms", "idle ms",
                     "recompute ms", "peak memory / capacity");
  for (int d = 0; d < p; ++d) {
    const DeviceStats& ds = c.devices[d];
    out += fmt::format(
        "  {:>4}  {:<{}}  {:>12.3f}  {:>12.3f}  {:>12.3f}  {:>23}{}{}\n", d,
        held[d], width, ToMs(ds.busy), ToMs(ds.idle), ToMs(ds.recompute),
        FormatBytes(ds.peak_memory) + " / " + FormatBytes(ds.capacity),
        c.placement.empty() ? std::string()
                            : "  " + DeviceLabel(problem.topology, c.placement[d]),
        ds.oom ? "  OOM" : "");
  }
  return out;
}

// "  types h100,h100,a100,..." for a candidate with a placement.
std::string TypeOrder(const SearchProblem& problem, const Candidate& c) {
  if (c.placement.empty()) return "";
  std::string out = "  devices";
  for (size_t r = 0; r < c.placement.size(); ++r) {
    out += r ? ',' : ' ';
    out += DeviceLabel(problem.topology, c.placement[r]);
  }
  return out;
}

// One line of the top-K list.
std::string TopLine(const SearchProblem& problem, const Candidate& c,
                    const Candidate& best, int index) {
  const std::string delta =
      index == 1 ? std::string()
                 : fmt::format(
                       "(+{:.2f} %)",
                       100.0 * static_cast<double>(c.makespan - best.makespan) /
                           static_cast<double>(best.makespan));
  return fmt::format(
      "  {:>3}  {:>12.3f} ms {:>10}  bubble {:>7}  max peak {:>10}  {}  "
      "recompute "
      "{}  {}\n",
      index, ToMs(c.makespan), delta, Percent(c.bubble_fraction),
      FormatBytes(c.max_peak),
      DescribeChoice(problem, problem.choices[c.choice]),
      RecomputeSummary(problem.layers, c.strategy),
      FormatMegatronLayout(c.strategy.layers_per_stage, problem.layers) +
          TypeOrder(problem, c));
}

std::string BaselinesText(const SearchProblem& problem,
                          const SearchReport& report) {
  const SearchResult& result = *report.result;
  size_t width = 8;
  for (const Baseline& b : report.baselines)
    width = std::max(width, b.name.size());
  std::string out = "baselines";
  if (!report.baselines.empty()) {
    const Baseline& first = report.baselines.front();
    out += " (" +
           DescribeChoice(problem, problem.choices[first.candidate.choice]) +
           ")";
  }
  out += ":\n";
  out += fmt::format("  {:<{}}  {:>14}  {:>10}  {:<24}  {}\n", "name", width,
                     "iteration ms", "max peak", "fits", "speedup");
  for (const Baseline& b : report.baselines) {
    if (!b.applicable) {
      out += fmt::format("  {:<{}}  n/a: {}\n", b.name, width, b.why_not);
      continue;
    }
    const Candidate& c = b.candidate;
    // A baseline that does not fit is no alternative: no speedup over it.
    std::string speedup = c.feasible ? "-"
                          : Fits(c, problem.headroom).rfind("at risk", 0) == 0
                              ? "- (keeps no headroom)"
                              : "- (does not fit)";
    if (result.found && result.best.makespan > 0 && c.feasible) {
      speedup =
          fmt::format("{:.2f}x", static_cast<double>(c.makespan) /
                                     static_cast<double>(result.best.makespan));
    }
    out += fmt::format("  {:<{}}  {:>14.3f}  {:>10}  {:<24}  {}\n", b.name,
                       width, ToMs(c.makespan), FormatBytes(c.max_peak),
                       Fits(c, problem.headroom), speedup);
  }
  return out;
}

}  // namespace

namespace {

// "target: ..." and, under any, one line per framework with its best
// deployable strategy's time, peak and fit.
std::string TargetText(const SearchReport& report) {
  const DeployTarget t = report.options->target;
  if (t != DeployTarget::Any) {
    std::string how;
    const SearchResult& r = *report.result;
    if (r.found) {
      const auto s = ExpressingSetting(t, report.problem->layers, r.best.strategy);
      if (s) how = "; the recommendation sets " + DescribeSetting(*s);
    }
    return fmt::format("target: {} (only strategies its configuration can express{})\n",
                       TargetName(t), how);
  }
  std::string out = "target: any (every per-layer recompute choice)\n";
  for (const DeployableBest& d : report.deployable) {
    const SearchResult& r = d.result;
    std::string what;
    if (!d.searched) {
      what = "not searched (time limit)";
    } else if (!r.found) {
      what = r.proved_infeasible ? "nothing it can express fits (proved)"
                                 : "nothing found that fits (stopped at " + r.stop_reason + ")";
      if (!d.split_refusal.empty()) {
        what += fmt::format("; the recommendation's split: {} {}", TargetName(d.target),
                            d.split_refusal);
      }
      if (!d.defaults_tried.empty()) {
        what += "; none of its defaults fits:";
        const size_t shown = std::min<size_t>(d.defaults_tried.size(), 4);
        for (size_t k = 0; k < shown; ++k) what += (k > 0 ? "; " : " ") + d.defaults_tried[k];
        if (d.defaults_tried.size() > shown) {
          what += fmt::format("; and {} more", d.defaults_tried.size() - shown);
        }
      }
    } else {
      what = fmt::format("{:.3f} ms, peak {}, {}{}", ToMs(r.best.makespan),
                         FormatBytes(r.best.max_peak), Fits(r.best, report.problem->headroom),
                         d.is_recommendation ? ", the recommendation"
                         : r.proved_optimal  ? ", proved best it can express"
                                             : ", best found (" + r.stop_reason + ")");
    }
    out += fmt::format("  deployable on {}: {}\n", TargetName(d.target), what);
  }
  return out;
}

}  // namespace

namespace {
// The step figures (core/step_metrics.h) of a derived model's strategy.
StepMetrics BestMetrics(const RunConfig& config, const SearchProblem& problem,
                        const Candidate& c) {
  return *StepMetricsOf(config, c.strategy.recompute, problem.m, c.makespan);
}
}  // namespace

std::string FormatSearchText(const RunConfig& config,
                             const SearchReport& report) {
  const SearchProblem& problem = *report.problem;
  const SearchResult& result = *report.result;
  std::string choices;
  for (const ScheduleChoice& c : problem.choices) {
    choices += (choices.empty() ? "" : "; ") + DescribeChoice(problem, c);
  }
  std::string out = fmt::format(
      "ppb-sim search: {} | p={} m={} | {} layers | communication {} | "
      "searching {}\n\n",
      config.model_name.empty() ? config.path : config.model_name, problem.p,
      problem.m, problem.layers.size(),
      DescribeComm(problem), choices);
  if (!config.input_notes.empty()) {
    out.pop_back();  // the notes sit under the header, before the blank line
    for (const std::string& n : config.input_notes) out += "input: " + n + "\n";
    out += "\n";
  }
  if (result.found) {
    out += BestText(problem, result.best);
    if (!config.derived.empty()) {
      const StepMetrics sm = BestMetrics(config, problem, result.best);
      out += fmt::format("  tokens            {:.0f} tokens/s, {:.1f} per GPU ({} GPUs)\n",
                         sm.tokens_per_s, sm.tokens_per_s_per_gpu, sm.gpus);
      out += fmt::format(
          "  model FLOPs       {:.1f} TFLOP/s per GPU: MFU {:.1f} %, HFU {:.1f} %\n",
          sm.model_tflops_per_gpu, 100.0 * sm.mfu, 100.0 * sm.hfu);
    }
    out += "\n";
    // The anytime profile (times depend on the clock): the first strategy
    // that fit and each improvement.
    if (!result.incumbents.empty()) {
      const auto& first = result.incumbents.front();
      const auto& last = result.incumbents.back();
      out += fmt::format("anytime: first strategy at {:.2f} s ({:.3f} ms)", first.first,
                         ToMs(first.second));
      if (result.incumbents.size() > 1) {
        out += fmt::format(", then {} improvement(s), the last at {:.2f} s ({:.3f} ms)",
                           result.incumbents.size() - 1, last.first, ToMs(last.second));
      }
      out += "\n";
    }
    if (result.proved_optimal) {
      out += "PROVED OPTIMAL\n";
    } else {
      out += fmt::format("stopped at {}: lower bound {:.3f} ms, gap {}\n",
                         result.stop_reason, ToMs(result.lower_bound),
                         Percent(result.gap));
      // Which side of the gap moved last (the times depend on the clock).
      if (!result.incumbents.empty() && !result.bound_source.empty()) {
        out += fmt::format("gap sides: incumbent last improved at {:.2f} s; bound set by the {} "
                           "at {:.2f} s\n",
                           result.incumbents.back().first, result.bound_source,
                           result.bound_time_s);
      }
    }
  } else if (problem.search_placement) {
    out += result.proved_infeasible
               ? "no strategy fits in memory on any device order (proved: the whole "
                 "tree was searched).\n"
               : "no strategy found that fits in memory (stopped at " + result.stop_reason +
                     "; one may still exist).\n";
  } else {
    out += fmt::format(
        "{}\n"
        "  smallest per-device memory at which one fits: {}\n",
        result.proved_infeasible
            ? std::string("no strategy fits in memory (proved: the whole tree was searched).")
            : "no strategy found that fits in memory (stopped at " + result.stop_reason +
                  "; one may still exist).",
        report.options->target != DeployTarget::Any && result.min_capacity_needed == 0 &&
                !result.min_capacity_cut
            ? NoCapacityText(problem, report.options->target)
            : MinCapacityText(result));
  }
  out += TargetText(report);
  out += fmt::format("search: {} nodes, {} evaluations, {:.2f} s{}, seed {}{}\n",
                     result.nodes, result.evaluations, result.solve_time_s,
                     report.frameworks_first_s > 0
                         ? fmt::format(" (after {:.2f} s of the frameworks' deployable searches)",
                                       report.frameworks_first_s)
                         : std::string(),
                     report.options->seed,
                     report.processes > 1
                         ? fmt::format(", shared by {} MPI processes", report.processes)
                         : std::string());
  if (problem.search_placement) {
    out += fmt::format("placement: {} device orders searched in full, {} order prefixes bounded\n",
                       result.placements_searched, result.placement_nodes);
    if (result.fast_sets > 0) {
      out += result.fast_sets_bounded == result.fast_sets
                 ? fmt::format("placement bound: every order, through the {} sets of ranks the "
                               "fastest device type can take: >= {:.3f} ms\n",
                               result.fast_sets, ToMs(result.fast_sets_bound))
                 : fmt::format("placement bound: {} of the {} sets of ranks the fastest device "
                               "type can take bounded in the time share (no bound from them)\n",
                               result.fast_sets_bounded, result.fast_sets);
    }
  }
  if (!result.top.empty()) {
    out += fmt::format("\ntop {}:\n", result.top.size());
    for (size_t i = 0; i < result.top.size(); ++i) {
      out += TopLine(problem, result.top[i], result.top.front(),
                     static_cast<int>(i) + 1);
    }
  }
  out += "\n";
  out += BaselinesText(problem, report);
  return out;
}

std::string FormatSearchJson(const RunConfig& config,
                             const SearchReport& report) {
  const SearchProblem& problem = *report.problem;
  const SearchResult& result = *report.result;
  Json j = Header("ppb.search/1", config, problem);
  Json choices = Json::array();
  for (const ScheduleChoice& c : problem.choices) {
    choices.push_back(DescribeChoice(problem, c));
  }
  j["choices"] = choices;
  j["seed"] = report.options->seed;
  j["time_limit_s"] = report.options->time_limit_s;
  j["node_limit"] = report.options->node_limit;
  j["feasible"] = result.found;
  j["best"] =
      result.found ? CandidateJson(problem, result.best) : Json(nullptr);
  if (result.found && !config.derived.empty()) {
    const StepMetrics sm = BestMetrics(config, problem, result.best);
    j["best"]["gpus"] = sm.gpus;
    j["best"]["tokens_per_s"] = sm.tokens_per_s;
    j["best"]["tokens_per_s_per_gpu"] = sm.tokens_per_s_per_gpu;
    j["best"]["model_tflops_per_gpu"] = sm.model_tflops_per_gpu;
    j["best"]["mfu"] = sm.mfu;
    j["best"]["hfu"] = sm.hfu;
  }
  Json top = Json::array();
  for (const Candidate& c : result.top)
    top.push_back(CandidateJson(problem, c));
  j["top"] = top;
  j["proved_optimal"] = result.proved_optimal;
  j["proved_infeasible"] = result.proved_infeasible;
  j["lower_bound_ms"] = ToMs(result.lower_bound);
  j["gap"] = result.gap;
  j["stop_reason"] = result.stop_reason;
  j["target"] = TargetName(report.options->target);
  if (report.options->target == DeployTarget::Any) {
    Json dep = Json::object();
    for (const DeployableBest& d : report.deployable) {
      Json dj;
      dj["searched"] = d.searched;
      dj["feasible"] = d.searched && d.result.found;
      dj["is_recommendation"] = d.is_recommendation;
      if (d.searched) dj["proved"] = d.result.proved_optimal || d.result.proved_infeasible;
      if (d.searched) dj["stop_reason"] = d.result.stop_reason;
      if (!d.split_refusal.empty()) dj["split_refusal"] = d.split_refusal;
      if (d.searched && d.result.found) {
        dj["iteration_time_ms"] = ToMs(d.result.best.makespan);
        dj["max_peak_bytes"] = d.result.best.max_peak;
        dj["fits"] = d.result.best.feasible;
        dj["recomputed_layers"] = d.result.best.recomputed_layers;

      }
      dep[TargetName(d.target)] = dj;
    }
    j["deployable"] = dep;
  }
  j["nodes"] = result.nodes;
  j["evaluations"] = result.evaluations;
  j["solve_time_s"] = result.solve_time_s;
  if (report.frameworks_first_s > 0) j["frameworks_search_s"] = report.frameworks_first_s;
  // The anytime profile: each time the best strategy improved.
  Json anytime = Json::array();
  for (const auto& [t, makespan] : result.incumbents) {
    anytime.push_back({{"time_s", t}, {"iteration_time_ms", ToMs(makespan)}});
  }
  j["anytime"] = anytime;
  if (report.processes > 1) j["processes"] = report.processes;
  if (problem.search_placement) {
    j["placements_searched"] = result.placements_searched;
    j["placement_nodes"] = result.placement_nodes;
    j["fastest_type_sets"] = result.fast_sets;
    j["fastest_type_sets_bounded"] = result.fast_sets_bounded;
    if (result.fast_sets > 0 && result.fast_sets_bounded == result.fast_sets) {
      j["fastest_type_sets_bound_ms"] = ToMs(result.fast_sets_bound);
    }
  }
  if (!result.found && !problem.search_placement) {
    j["min_capacity_needed_bytes"] = result.min_capacity_needed;
    j["binding_device"] = result.binding_device;
    if (report.options->target != DeployTarget::Any && result.min_capacity_needed == 0 &&
        !result.min_capacity_cut) {
      j["min_capacity_none"] = NoCapacityText(problem, report.options->target);
    }
    if (result.min_capacity_cut) j["min_capacity_stopped_at_time_limit"] = true;
  }
  Json baselines = Json::array();
  for (const Baseline& b : report.baselines) {
    Json bj;
    bj["name"] = b.name;
    bj["applicable"] = b.applicable;
    bj["why_not"] = b.why_not;
    if (b.applicable) {
      const Candidate& c = b.candidate;
      bj["schedule"] = DescribeChoice(problem, problem.choices[c.choice]);
      bj["iteration_time_ms"] = ToMs(c.makespan);
      bj["max_peak_memory_bytes"] = c.max_peak;
      bj["feasible"] = c.feasible;
      bj["speedup"] = result.found && result.best.makespan > 0 && c.feasible
                          ? Json(static_cast<double>(c.makespan) /
                                 static_cast<double>(result.best.makespan))
                          : Json(nullptr);
    } else {
      bj["schedule"] = nullptr;
      bj["iteration_time_ms"] = nullptr;
      bj["max_peak_memory_bytes"] = nullptr;
      bj["feasible"] = nullptr;
      bj["speedup"] = nullptr;
    }
    baselines.push_back(bj);
  }
  j["baselines"] = baselines;
  return JsonText(j, 2) + "\n";
}

std::string FormatProgress(const SearchProgress& p) {
  const std::string incumbent =
      p.incumbent < 0 ? std::string("none")
                      : fmt::format("{:.3f} ms", ToMs(p.incumbent));
  return fmt::format(
      "search {:8.1f} s  nodes {:>12}  evaluations {:>10}  incumbent {:>14}  "
      "lower bound {:>14}  gap {}",
      p.elapsed_s, p.nodes, p.evaluations, incumbent,
      fmt::format("{:.3f} ms", ToMs(p.lower_bound)),
      p.incumbent < 0 ? std::string("-") : Percent(p.gap));
}

std::string FormatRankText(const RunConfig& config,
                           const SearchProblem& problem,
                           const std::vector<RankedCandidate>& ranked) {
  std::string out = fmt::format(
      "ppb-sim rank: {} | p={} m={} | {} layers | {} candidates\n\n",
      config.model_name.empty() ? config.path : config.model_name, problem.p,
      problem.m, problem.layers.size(), ranked.size());
  size_t name_width = 4, choice_width = 8;
  for (const RankedCandidate& r : ranked) {
    name_width = std::max(name_width, r.name.size());
    choice_width = std::max(
        choice_width,
        DescribeChoice(problem, problem.choices[r.candidate.choice]).size());
  }
  out += fmt::format("  {:>4}  {:<{}}  {:<{}}  {:>14}  {:>8}  {:>10}  {}\n",
                     "rank", "name", name_width, "schedule", choice_width,
                     "iteration ms", "bubble", "max peak", "memory");
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Candidate& c = ranked[i].candidate;
    out +=
        fmt::format("  {:>4}  {:<{}}  {:<{}}  {:>14.3f}  {:>8}  {:>10}  {}\n",
                    i + 1, ranked[i].name, name_width,
                    DescribeChoice(problem, problem.choices[c.choice]),
                    choice_width, ToMs(c.makespan), Percent(c.bubble_fraction),
                    FormatBytes(c.max_peak), Fits(c, problem.headroom));
  }
  return out;
}

std::string FormatRankJson(const RunConfig& config,
                           const SearchProblem& problem,
                           const std::vector<RankedCandidate>& ranked) {
  Json j = Header("ppb.rank/1", config, problem);
  Json list = Json::array();
  for (size_t i = 0; i < ranked.size(); ++i) {
    Json cj;
    cj["rank"] = i + 1;
    cj["name"] = ranked[i].name;
    cj.update(CandidateJson(problem, ranked[i].candidate));
    list.push_back(cj);
  }
  j["candidates"] = list;
  return JsonText(j, 2) + "\n";
}

}  // namespace ppb
