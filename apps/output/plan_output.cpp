#include "apps/output/plan_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "apps/input/json_text.h"
#include "apps/output/output.h"
#include "search/deployable.h"

namespace ppb {

namespace {

using Json = nlohmann::ordered_json;

double Ms(Nanos t) { return static_cast<double>(t) / 1e6; }
double GiB(Bytes b) { return static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0); }

// The mode name of each layer of the entry's best ("none" where none).
std::vector<std::string> LayerModes(const PlanEntry& e) {
  std::vector<std::string> out;
  const auto& rc = e.best->strategy.recompute;
  for (size_t l = 0; l < e.problem->layers.size(); ++l) {
    const int x = l < rc.size() ? rc[l] : 0;
    const auto& opts = e.problem->layers[l].recompute;
    out.push_back(x == 0 || x > static_cast<int>(opts.size()) ? "none"
                                                              : opts[static_cast<size_t>(x - 1)].name);
  }
  return out;
}

Bytes Capacity(const PlanEntry& e) {
  Bytes c = 0;
  for (const DeviceStats& d : e.best->devices) c = std::max(c, d.capacity);
  return c;
}


// A tie group's other member: "t1 cp4 ep1 p2 d8 mbs2 interleaved v4 search"
// (its recompute choice: "search", "none", or a mode on every layer).
std::string ShortLayout(const PlanLayout& l) { return DescribeLayout(l); }

Json EntryJson(const PlanEntry& e) {
  const PlanLayout& l = e.layout;
  const Candidate& c = *e.best;
  Json j;
  j["tensor_parallel"] = l.t;
  j["context_parallel"] = l.cp;
  j["expert_parallel"] = l.ep;
  j["pipeline_parallel"] = l.p;
  j["data_parallel"] = l.d;
  j["micro_batch_size"] = l.mbs;
  j["microbatches"] = l.m;
  j["schedule"] = l.schedule;
  j["virtual_stages"] = l.v;
  j["sequence_parallel"] = l.sp;
  j["distributed_optimizer"] = l.dist_opt;
  j["layout"] = c.strategy.layers_per_stage;
  j["recompute"] = LayerModes(e);
  j["recompute_choice"] = l.recompute;
  if (!l.precision.empty()) j["precision"] = l.precision;
  if (!l.sharding.empty()) j["data_parallel_sharding"] = l.sharding;
  if (!l.offload.empty()) j["offload"] = l.offload;
  if (!l.moe.empty()) j["moe"] = l.moe;
  j["iteration_time_ns"] = c.makespan;
  if (e.metrics) {
    j["tokens_per_s_per_gpu"] = e.metrics->tokens_per_s_per_gpu;
    j["mfu"] = e.metrics->mfu;
  } else {
    j["tokens_per_s_per_gpu"] = nullptr;
    j["mfu"] = nullptr;
  }
  j["max_peak_memory_bytes"] = c.max_peak;
  j["memory_capacity_bytes"] = Capacity(e);
  j["fits"] = c.feasible;
  j["step_breakdown_ms"] = e.parts ? StepPartsJson(*e.parts) : Json(nullptr);
  j["note"] = e.note;
  j["searched_to"] = PlanDepthMark(e).empty() ? "the end" : PlanDepthMark(e);
  Json ties = Json::array();
  for (const PlanLayout& t : e.ties) ties.push_back(ShortLayout(t));
  j["ties"] = ties;
  return j;
}

std::string Percent(double x) { return fmt::format("{:.2f} %", 100.0 * x); }


}  // namespace

std::string DescribePlanRecompute(const PlanEntry& e) {
  std::map<std::string, int> count;
  std::vector<std::string> order;
  int none = 0;
  for (const std::string& m : LayerModes(e)) {
    if (m == "none") {
      ++none;
      continue;
    }
    if (count[m]++ == 0) order.push_back(m);
  }
  if (order.empty()) return "none";
  std::string out;
  for (const std::string& m : order) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", count[m], m);
  }
  return out;
}

std::string PlanDepthMark(const PlanEntry& e) {
  if (e.layout.yours) return "";
  if (!e.searched) {
    return fmt::format("first tries only: pruned at its bound {:.1f} ms", Ms(e.bound));
  }
  if (!e.closed) return "search stopped at its limit";
  return "";
}

std::string FormatPlanText(const PlanResult& r) {
  const PlanSettings& s = r.settings;
  std::string o;
  o += fmt::format("ppb-sim plan: {} on {} GPUs{}, global batch {} x {} tokens, target {}\n",
                   r.model_name.empty() ? "model" : r.model_name, s.gpus,
                   r.gpu.empty() ? "" : " (" + r.gpu + ")", r.global_batch, r.seq,
                   TargetName(s.target));
  std::int64_t refused = 0;
  for (const auto& [why, n] : r.refused) refused += n;
  o += fmt::format(
      "space: {} layouts; {} refused by the rules, {} pruned by memory, {} pruned by bound, "
      "{} searched\n",
      r.total, refused, r.pruned_by_memory, r.pruned_by_bound, r.searched);
  if (r.open > 0) {
    o += fmt::format("{} layouts not reached before the time limit (they bound the gap)\n",
                     r.open);
  }
  if (r.not_loaded > 0) {
    o += fmt::format("{} layouts not even loaded before the time limit: nothing is bounded\n",
                     r.not_loaded);
  }
  if (!r.found) {
    // Memory is named only when memory refused them; else the rule that
    // refused the most first.
    const std::int64_t by_memory = r.total - refused;
    std::string most;
    std::int64_t most_n = 0;
    for (const auto& [why, n] : r.refused) {
      if (n > most_n) most = why, most_n = n;
    }
    if (by_memory <= 0 && refused > 0) {
      o += fmt::format("no layout can run: the rules refuse all {} (most: {}, {}; see "
                       "refused below)\n",
                       refused, most, most_n);
    } else {
      if (refused > 0) {
        o += fmt::format("no layout runs: {} refused by the rules (most: {}, {}), ", refused,
                         most, most_n);
        o += fmt::format("the other {} do not fit in memory", by_memory);
      } else {
        o += "no layout fits in memory";
      }
      o += r.stop_reason == "nothing fits" ? " (proved: every layout was searched or pruned)\n"
                                           : " within the time limit (not proved)\n";
    }
  } else {
    o += "\n";
    o += fmt::format("  {:>2} {:>3} {:>3} {:>3} {:>3} {:>5} {:>3} {:>5} {:<11} {:>2} {:<24} "
                     "{:>10} {:>9} {:>6} {:>15}\n",
                     "", "t", "cp", "ep", "p", "d", "mbs", "m", "schedule", "v", "recompute",
                     "step ms", "tok/s/GPU", "MFU", "peak/cap GiB");
    for (size_t i = 0; i < r.top.size(); ++i) {
      const PlanEntry& e = r.top[i];
      const PlanLayout& l = e.layout;
      const std::string tokens =
          e.metrics ? fmt::format("{:.0f}", e.metrics->tokens_per_s_per_gpu) : "-";
      const std::string mfu = e.metrics ? fmt::format("{:.1f}%", 100.0 * e.metrics->mfu) : "-";
      std::string rc = DescribePlanRecompute(e);
      if (l.recompute != "search" && l.recompute != "yours") rc += " (uniform)";
      o += fmt::format("  {:>2} {:>3} {:>3} {:>3} {:>3} {:>5} {:>3} {:>5} {:<11} {:>2} {:<24} "
                       "{:>10.1f} {:>9} {:>6} {:>7.1f}/{:<7.1f}{}\n",
                       i == 0 ? "*" : std::to_string(i + 1), l.t, l.cp, l.ep, l.p, l.d, l.mbs,
                       l.m, l.schedule, l.v, rc, Ms(e.best->makespan), tokens, mfu,
                       GiB(e.best->max_peak), GiB(Capacity(e)),
                       (l.precision.empty() ? "" : "  " + l.precision) +
                           (l.sharding.empty() ? "" : "  " + l.sharding) +
                           (l.offload.empty() ? "" : "  offload " + l.offload) +
                           (l.moe.empty() ? "" : "  moe " + l.moe) +
                           (e.note.empty() ? "" : "  (" + e.note + ")") +
                           (PlanDepthMark(e).empty() ? "" : "  (" + PlanDepthMark(e) + ")"));
      if (!e.ties.empty()) {
        std::string t;
        for (const PlanLayout& x : e.ties) t += (t.empty() ? "" : ", ") + ShortLayout(x);
        o += fmt::format("       = the same step: {}\n", t);
      }
    }
    const PlanEntry& b = r.top.front();
    if (b.parts) {
      const StepParts& x = *b.parts;
      o += fmt::format(
          "\nwhere the best step goes (rank that ends last, ms): compute {:.1f}, collectives "
          "{:.1f}, recompute {:.1f}, bubble {:.1f}, gradient sync {:.1f}, optimizer {:.1f}, "
          "waiting {:.1f}\n",
          Ms(x.compute), Ms(x.collectives), Ms(x.recompute), Ms(x.bubble), Ms(x.grad_sync),
          Ms(x.optimizer), Ms(x.waiting));
    }
    o += fmt::format("best layout's split (layers per stage): [{}]\n",
                     fmt::join(b.best->strategy.layers_per_stage, ", "));
    if (r.proved_optimal) {
      o += fmt::format(
          "proved optimal within the model: every layout was searched to the end or pruned "
          "by its bound ({:.1f} ms) or its memory floor\n",
          Ms(r.lower_bound));
    } else {
      o += fmt::format("not proved ({}): lower bound {:.1f} ms, gap {}\n",
                       r.stop_reason == "node limit"
                           ? "a layout's search stopped at its node limit"
                           : "stopped at the " + r.stop_reason,
                       Ms(r.lower_bound), Percent(r.gap));
    }
  }
  if (r.yours) {
    o += fmt::format("your config ({}): {:.1f} ms, {}\n", r.yours_layout, Ms(r.yours->makespan),
                     r.yours->feasible ? "fits" : "does not fit");
  } else if (!r.yours_error.empty()) {
    o += fmt::format("your config does not load as written: {}\n", r.yours_error);
  }
  if (!r.refused.empty()) {
    o += "refused:\n";
    for (const auto& [why, n] : r.refused) {
      o += fmt::format("  {:>8}  {}\n", n, why);
      if (auto it = r.refused_example.find(why); it != r.refused_example.end()) {
        o += fmt::format("            e.g. {}\n", it->second);
      }
    }
  }
  if (r.processes > 1) o += fmt::format("layouts shared by {} MPI processes\n", r.processes);
  if (r.first_answer_s >= 0) {
    o += fmt::format("first answer after {:.2f} s; {} improvement(s); solve time {:.2f} s\n",
                     r.first_answer_s, r.incumbents.size(), r.solve_time_s);
  } else {
    o += fmt::format("solve time {:.2f} s\n", r.solve_time_s);
  }
  return o;
}

std::string FormatPlanJson(const PlanResult& r) {
  const PlanSettings& s = r.settings;
  Json j;
  j["schema"] = "ppb.plan/1";
  j["model"] = r.model_name;
  j["gpus"] = s.gpus;
  j["gpu"] = r.gpu;
  j["seq_length"] = r.seq;
  j["global_batch_size"] = r.global_batch;
  j["target"] = TargetName(s.target);
  j["best"] = r.top.empty() ? Json(nullptr) : EntryJson(r.top.front());
  Json top = Json::array();
  for (const PlanEntry& e : r.top) top.push_back(EntryJson(e));
  j["top"] = top;
  j["proved_optimal"] = r.proved_optimal;
  j["gap"] = r.found ? Json(r.gap) : Json(nullptr);
  j["lower_bound_ns"] = r.lower_bound;
  j["stop_reason"] = r.stop_reason;
  Json refused = Json::object();
  for (const auto& [why, n] : r.refused) refused[why] = n;
  std::int64_t n_refused = 0;
  for (const auto& [why, n] : r.refused) n_refused += n;
  j["candidates"] = {{"total", r.total},
                     {"refused", refused},
                     {"refused_total", n_refused},
                     {"pruned_by_memory", r.pruned_by_memory},
                     {"pruned_by_bound", r.pruned_by_bound},
                     {"searched", r.searched},
                     {"open", r.open},
                     {"not_loaded", r.not_loaded}};
  if (r.yours) {
    j["your_config"] = {{"layout", r.yours_layout},
                        {"iteration_time_ns", r.yours->makespan},
                        {"fits", r.yours->feasible}};
  } else if (!r.yours_error.empty()) {
    j["your_config"] = {{"error", r.yours_error}};
  } else {
    j["your_config"] = nullptr;
  }
  j["first_answer_s"] = r.first_answer_s >= 0 ? Json(r.first_answer_s) : Json(nullptr);
  Json inc = Json::array();
  for (const auto& [t, mk] : r.incumbents) inc.push_back({{"time_s", t}, {"iteration_time_ns", mk}});
  j["incumbents"] = inc;
  j["solve_time_s"] = r.solve_time_s;
  j["processes"] = r.processes;
  return JsonText(j, 2) + "\n";
}

}  // namespace ppb
