// The HTML report (apps/output/report.h).
#include "apps/output/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "apps/input/search_problem.h"
#include "apps/output/output.h"
#include "apps/output/svg.h"
#include "core/breakdown.h"
#include "core/strategy.h"

namespace ppb {
namespace {

// Inline style only: the page must render without a network.
constexpr std::string_view kCss = R"(<style>
body{font-family:sans-serif;margin:24px;color:#222;max-width:1240px}
h1{font-size:22px;margin:0 0 4px 0}
h2{font-size:17px;margin:28px 0 8px 0;border-bottom:1px solid #ddd;padding-bottom:3px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{padding:3px 9px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f4f4f4}
td.l,th.l{text-align:left}
table.kv td:first-child{text-align:left;color:#555}
table.kv td{text-align:left}
.oom{color:#c53030;font-weight:bold}
.ok{color:#2f7d32;font-weight:bold}
.explain{background:#fff8e6;border-left:4px solid #f28e2b;padding:6px 10px;font-size:14px}
.bar{display:flex;width:260px;height:12px;border:1px solid #bbb}
.bar span{display:block;height:100%}
.k-ideal{background:#4e79a7}.k-imbalance{background:#edc948}.k-recompute{background:#f28e2b}
.k-communication{background:#e15759}.k-warmup_drain{background:#bab0ac}
.sw{display:inline-block;width:11px;height:11px;margin:0 4px 0 12px;vertical-align:middle}
.pic{overflow-x:auto}
.note{color:#555;font-size:13px}
</style>
)";

std::string E(std::string_view s) { return EscapeXml(s); }

double Pct(Nanos part, Nanos whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string Ms(Nanos t) { return fmt::format("{:.3f} ms", ToMs(t)); }

// A <tr> of cells; `left` cells are left-aligned. Cells are escaped here.
std::string Row(const std::vector<std::string>& cells, size_t left = 1, std::string_view cls = "") {
  std::string out = cls.empty() ? "<tr>" : fmt::format("<tr class=\"{}\">", cls);
  for (size_t i = 0; i < cells.size(); ++i) {
    out += fmt::format("<td{}>{}</td>", i < left ? " class=\"l\"" : "", E(cells[i]));
  }
  return out + "</tr>\n";
}

std::string Header(const std::vector<std::string>& cells, size_t left = 1) {
  std::string out = "<tr>";
  for (size_t i = 0; i < cells.size(); ++i) {
    out += fmt::format("<th{}>{}</th>", i < left ? " class=\"l\"" : "", E(cells[i]));
  }
  return out + "</tr>\n";
}

// Rows of a key/value table.
std::string KeyValueRows(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string out;
  for (const auto& [k, v] : rows) out += Row({k, v}, 2);
  return out;
}

std::string KeyValues(const std::vector<std::pair<std::string, std::string>>& rows) {
  return "<table class=\"kv\">\n" + KeyValueRows(rows) + "</table>\n";
}

// The parts as a stacked bar (widths in % of the iteration).
std::string Bar(const BubbleParts& parts, Nanos iteration) {
  std::string out = "<div class=\"bar\">";
  for (int t = 0; t < kNumBubbleTerms; ++t) {
    const auto term = static_cast<BubbleTerm>(t);
    if (parts[term] <= 0) continue;
    out += fmt::format("<span class=\"k-{}\" style=\"width:{:.2f}%\" title=\"{} {:.1f} %\"></span>",
                       BubbleTermKey(term), Pct(parts[term], iteration), BubbleTermLabel(term),
                       Pct(parts[term], iteration));
  }
  return out + "</div>";
}

std::string Summary(const RunConfig& config, const PreparedRun& run, const SimResult& r) {
  const PipelineSpec& spec = run.spec;
  int peak = 0;
  std::string oom;
  for (int d = 0; d < spec.p; ++d) {
    if (r.devices[d].peak_memory > r.devices[peak].peak_memory) peak = d;
    if (r.devices[d].oom) oom += fmt::format("{}{}", oom.empty() ? "" : ", ", d);
  }
  const std::string outcome =
      r.outcome == Outcome::Ok ? "ok: every rank fits in memory"
      : r.outcome == Outcome::OutOfMemory
          ? "OUT OF MEMORY on rank" + std::string(oom.find(',') != std::string::npos ? "s " : " ") +
                oom
          : "DEADLOCK";
  std::string out =
      "<table class=\"kv\">\n" +
      KeyValueRows({
          {"model", config.model_name.empty() ? config.path : config.model_name},
          {"config", config.path},
          {"schedule", DescribeSchedule(config)},
          {"pipeline", fmt::format("p={} v={} m={}, {} layers, communication {}", spec.p, spec.v,
                                   spec.m, config.layers.size(),
                                   spec.comm == CommMode::Overlapped ? "overlapped" : "blocking")},
          {"layout", FormatMegatronLayout(config.strategy.layers_per_stage, config.layers)},
          {"iteration time", Ms(r.makespan)},
          {"bubble fraction", fmt::format("{:.2f} %", 100.0 * r.bubble_fraction())},
          {"max peak memory",
           fmt::format("{} on rank {} (capacity {})", FormatBytes(r.devices[peak].peak_memory),
                       peak, FormatBytes(r.devices[peak].capacity))},
      });
  // The outcome, coloured.
  out += fmt::format("<tr><td class=\"l\">outcome</td><td class=\"l {}\">{}</td></tr>\n",
                     r.outcome == Outcome::Ok ? "ok" : "oom", E(outcome));
  return out + "</table>\n";
}

std::string BreakdownSection(const PipelineSpec& spec, const Program& program,
                             const SimResult& r) {
  const Breakdown b = ComputeBreakdown(r);
  const UnevenStages uneven = UnevenStageLoss(spec, program, b);
  std::string out = "<section id=\"breakdown\">\n<h2>Bubble breakdown</h2>\n";
  out += fmt::format("<p class=\"explain\">{}</p>\n", E(ExplainBreakdown(spec, r, b, &uneven)));
  out += "<p class=\"note\">";
  for (int t = 0; t < kNumBubbleTerms; ++t) {
    const auto term = static_cast<BubbleTerm>(t);
    out += fmt::format("<span class=\"sw k-{}\"></span>{}", BubbleTermKey(term),
                       BubbleTermLabel(term));
  }
  out +=
      "<br>Each row adds up to the iteration time exactly. The pipeline's row is its busiest "
      "rank's. ideal: the mean useful compute per rank (or the rank's own, when it holds "
      "less); imbalance: useful compute above the mean (or idle time for the share a rank "
      "lacks); communication: idle time waiting on messages or blocked on sends; "
      "warm-up/drain: the rest of the idle time.</p>\n";
  const std::vector<std::string> head = {
      "", "ideal", "imbalance", "recompute", "communication", "warm-up/drain", "", "largest loss"};
  out += "<table id=\"breakdown-table\">\n" + Header(head);
  auto row = [&](const std::string& name, const BubbleParts& parts, std::string_view cls) {
    std::string tr = fmt::format("<tr class=\"{}\"><td class=\"l\">{}</td>", cls, E(name));
    for (int t = 0; t < kNumBubbleTerms; ++t) {
      tr += fmt::format("<td>{:.3f} ms ({:.1f} %)</td>", ToMs(parts.ns[t]),
                        Pct(parts.ns[t], r.makespan));
    }
    tr += fmt::format("<td class=\"l\">{}</td><td class=\"l\">{}</td></tr>\n",
                      Bar(parts, r.makespan), BubbleTermLabel(parts.largest_loss()));
    return tr;
  };
  out += row(fmt::format("pipeline (rank {})", b.bottleneck), b.pipeline, "pipeline");
  for (int d = 0; d < spec.p; ++d) out += row(fmt::format("rank {}", d), b.devices[d], "device");
  out += "</table>\n</section>\n";
  return out;
}

std::string DevicesSection(const RunConfig& config, const PreparedRun& run, const SimResult& r) {
  const PipelineSpec& spec = run.spec;
  const auto held = LayersHeld(config, spec.p, spec.v);
  std::vector<int> layers(spec.p, 0), recomputed(spec.p, 0);
  for (int s = 0; s < spec.num_stages(); ++s) {
    layers[spec.stage_device[s].value] += spec.stages[s].num_layers;
    recomputed[spec.stage_device[s].value] += spec.stages[s].num_recomputed;
  }
  std::string out = "<section id=\"devices\">\n<h2>Devices</h2>\n<table id=\"device-table\">\n";
  out += Header({"rank", "layers held", "layers", "recomputed", "busy", "idle", "bubble",
                 "recompute", "message wait", "blocked on sends", "peak memory", "capacity",
                 "peak / capacity", "in flight", ""},
                2);
  for (int d = 0; d < spec.p; ++d) {
    const DeviceStats& ds = r.devices[d];
    out += fmt::format("<tr class=\"device{}\">", ds.oom ? " oom" : "");
    const std::string device =
        config.topology && d < static_cast<int>(config.placement.size())
            ? " " + DeviceLabel(*config.topology, config.placement[d])
            : std::string();
    out += fmt::format("<td class=\"l\">{}{}</td><td class=\"l\">{}</td>", d, E(device),
                       E(held[d]));
    for (const std::string& cell :
         {std::to_string(layers[d]), std::to_string(recomputed[d]), Ms(ds.busy), Ms(ds.idle),
          fmt::format("{:.1f} %", Pct(ds.idle, r.makespan)), Ms(ds.recompute), Ms(ds.comm_wait),
          Ms(ds.comm_blocked), FormatBytes(ds.peak_memory), FormatBytes(ds.capacity),
          fmt::format("{:.1f} %", ds.capacity > 0 ? 100.0 * static_cast<double>(ds.peak_memory) /
                                                        static_cast<double>(ds.capacity)
                                                  : 0.0),
          std::to_string(ds.peak_inflight)}) {
      out += fmt::format("<td>{}</td>", E(cell));
    }
    out += fmt::format("<td class=\"l\">{}</td></tr>\n", ds.oom ? "OOM" : "");
  }
  out += "</table>\n</section>\n";
  return out;
}

// Summary, breakdown, devices and picture of one simulation.
std::string SimulationSections(const SimulatedRun& sim, const std::string& note) {
  const RunConfig& config = *sim.config;
  const PreparedRun& run = *sim.run;
  const SimResult& r = *sim.result;
  std::string out = "<section id=\"summary\">\n<h2>Summary";
  if (!note.empty()) out += ": " + E(note);
  out += "</h2>\n" + Summary(config, run, r) + "</section>\n";
  if (r.outcome == Outcome::Deadlock) {
    std::string stuck;
    for (const Op& op : r.stuck) {
      stuck += ' ';
      stuck += ActionString(op);
    }
    out += fmt::format("<p class=\"oom\">deadlock; stuck at{}</p>\n", E(stuck));
  }
  out += BreakdownSection(run.spec, run.program, r);
  out += DevicesSection(config, run, r);
  out += "<section id=\"timeline\">\n<h2>Timeline and memory</h2>\n<div class=\"pic\">\n";
  out += FormatSvg(config, run, r, note);
  out += "</div>\n</section>\n";
  return out;
}

std::string Page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         E(title) + "</title>\n" + std::string(kCss) + "</head>\n<body>\n<h1>" + E(title) +
         "</h1>\n" + body + "</body>\n</html>\n";
}

std::string Name(const RunConfig& config) {
  return config.model_name.empty() ? config.path : config.model_name;
}

// ---- search -----------------------------------------------------------------

std::string Speedup(const SearchResult& result, const Candidate& c) {
  if (!c.feasible) return "- (does not fit)";
  if (!result.found || result.best.makespan <= 0) return "-";
  return fmt::format("{:.2f}x",
                     static_cast<double>(c.makespan) / static_cast<double>(result.best.makespan));
}

std::string Recommendation(const SearchProblem& problem, const SearchResult& result) {
  std::string out = "<section id=\"recommendation\">\n<h2>Recommendation</h2>\n";
  if (!result.found) {
    out += fmt::format(
        "<p class=\"oom\">{}</p>\n<p>Smallest per-device memory at which one fits: {}.</p>\n",
        result.proved_infeasible
            ? "No strategy fits in memory (proved: the whole tree was searched)."
            : E("No strategy found that fits in memory (stopped at " + result.stop_reason +
                "; one may still exist)."),
        E(MinCapacityText(result)));
    return out + "</section>\n";
  }
  const Candidate& c = result.best;
  const ScheduleChoice& choice = problem.choices[c.choice];
  const int p = problem.p, v = choice.v;
  out += KeyValues({
      {"schedule", DescribeChoice(problem, choice)},
      {"iteration time", Ms(c.makespan)},
      {"bubble fraction", fmt::format("{:.2f} %", 100.0 * c.bubble_fraction)},
      {"max peak memory", FormatBytes(c.max_peak)},
      {"layout", FormatMegatronLayout(c.strategy.layers_per_stage, problem.layers)},
      {"recompute", RecomputeByLayer(problem.layers, c.strategy)},
  });
  // Layers per (chunk, rank).
  out += "<table id=\"split\">\n";
  std::vector<std::string> head = {"layers"};
  for (int r = 0; r < p; ++r) head.push_back(fmt::format("rank {}", r));
  out += Header(head);
  for (int ch = 0; ch < v; ++ch) {
    std::vector<std::string> cells = {fmt::format("chunk {}", ch)};
    for (int r = 0; r < p; ++r) {
      cells.push_back(std::to_string(c.strategy.layers_per_stage[static_cast<size_t>(
          StageOf(PlacementOf(choice.schedule, v), p, ch, r))]));
    }
    out += Row(cells);
  }
  return out + "</table>\n</section>\n";
}

std::string SearchStats(const SearchReport& report) {
  const SearchResult& result = *report.result;
  std::string status;
  if (result.found && result.proved_optimal) {
    status = "PROVED OPTIMAL";
  } else if (result.found) {
    status = fmt::format("stopped at {}: lower bound {}, gap {:.2f} %", result.stop_reason,
                         Ms(result.lower_bound), 100.0 * result.gap);
  } else {
    status = result.proved_infeasible ? "proved infeasible" : "stopped at " + result.stop_reason;
  }
  std::string choices;
  for (const ScheduleChoice& c : report.problem->choices) {
    choices += (choices.empty() ? "" : "; ") + DescribeChoice(*report.problem, c);
  }
  return "<section id=\"search\">\n<h2>Search</h2>\n" +
         KeyValues({{"status", status},
                    {"searched", choices},
                    {"nodes", std::to_string(result.nodes)},
                    {"evaluations", std::to_string(result.evaluations)},
                    {"time", fmt::format("{:.2f} s", result.solve_time_s)},
                    {"seed", std::to_string(report.options->seed)},
                    {"threads", std::to_string(report.options->threads)}}) +
         "</section>\n";
}

std::string TopSection(const SearchProblem& problem, const SearchResult& result) {
  if (result.top.empty()) return "";
  std::string out = "<section id=\"top\">\n<h2>Top alternatives</h2>\n<table>\n";
  out += Header(
      {"#", "iteration", "vs best", "bubble", "max peak", "schedule", "recompute", "layout"});
  const Candidate& best = result.top.front();
  for (size_t i = 0; i < result.top.size(); ++i) {
    const Candidate& c = result.top[i];
    out += Row({std::to_string(i + 1), Ms(c.makespan),
                i == 0 ? std::string("-")
                       : fmt::format("+{:.2f} %", Pct(c.makespan - best.makespan, best.makespan)),
                fmt::format("{:.2f} %", 100.0 * c.bubble_fraction), FormatBytes(c.max_peak),
                DescribeChoice(problem, problem.choices[c.choice]),
                RecomputeSummary(problem.layers, c.strategy),
                FormatMegatronLayout(c.strategy.layers_per_stage, problem.layers)});
  }
  return out + "</table>\n</section>\n";
}

std::string BaselinesSection(const SearchReport& report) {
  const SearchProblem& problem = *report.problem;
  std::string out = "<section id=\"baselines\">\n<h2>Baselines</h2>\n<table>\n";
  out += Header({"baseline", "schedule", "iteration", "max peak", "fits", "speedup"}, 2);
  for (const Baseline& b : report.baselines) {
    if (!b.applicable) {
      out += Row({b.name, "n/a: " + b.why_not, "", "", "", ""}, 2, "baseline");
      continue;
    }
    const Candidate& c = b.candidate;
    out += Row({b.name, DescribeChoice(problem, problem.choices[c.choice]), Ms(c.makespan),
                FormatBytes(c.max_peak), Fits(c, problem.headroom), Speedup(*report.result, c)},
               2, "baseline");
  }
  return out + "</table>\n</section>\n";
}

}  // namespace

std::string FormatSimReport(const SimulatedRun& sim) {
  return Page("ppb-sim report: " + Name(*sim.config), SimulationSections(sim, ""));
}

std::string FormatSearchReport(const RunConfig& config, const SearchReport& report,
                               const SimulatedRun& shown, const std::string& shown_note) {
  const SearchProblem& problem = *report.problem;
  const SearchResult& result = *report.result;
  std::string body = Recommendation(problem, result);
  body += SearchStats(report);
  body += TopSection(problem, result);
  body += BaselinesSection(report);
  if (shown.config != nullptr) body += SimulationSections(shown, shown_note);
  return Page("ppb-sim search report: " + Name(config), body);
}

namespace {

// ---- plan -------------------------------------------------------------------

std::string PlanSummary(const PlanResult& r) {
  std::int64_t refused = 0;
  for (const auto& [why, n] : r.refused) refused += n;
  std::vector<std::pair<std::string, std::string>> rows;
  if (!r.top.empty()) {
    const PlanEntry& b = r.top.front();
    rows.emplace_back("best layout", DescribeLayout(b.layout));
    rows.emplace_back("step time", Ms(b.best->makespan));
    if (b.metrics) {
      rows.emplace_back("tokens/s per GPU", fmt::format("{:.0f}", b.metrics->tokens_per_s_per_gpu));
      rows.emplace_back("MFU", fmt::format("{:.1f} %", 100.0 * b.metrics->mfu));
    }
  } else {
    rows.emplace_back("best layout", "no layout fits");
  }
  rows.emplace_back("proof", r.proved_optimal
                                 ? "proved optimal within the model"
                                 : fmt::format("not proved ({}): lower bound {}, gap {:.2f} %",
                                               r.stop_reason, Ms(r.lower_bound), 100.0 * r.gap));
  rows.emplace_back("layouts",
                    fmt::format("{} in all: {} refused by the rules, {} pruned by memory, {} "
                                "pruned by bound, {} searched",
                                r.total, refused, r.pruned_by_memory, r.pruned_by_bound,
                                r.searched));
  if (r.yours) {
    rows.emplace_back("your config", fmt::format("{}: {}, {}", r.yours_layout,
                                                 Ms(r.yours->makespan),
                                                 r.yours->feasible ? "fits" : "does not fit"));
  }
  return "<section id=\"plan\">\n<h2>Plan</h2>\n" + KeyValues(rows) + "</section>\n";
}

std::string PlanTop(const PlanResult& r) {
  if (r.top.empty()) return "";
  std::string out = "<section id=\"top\">\n<h2>Top layouts</h2>\n<table>\n";
  out += Header({"#", "t", "cp", "ep", "p", "d", "mbs", "m", "schedule", "v", "recompute",
                 "step", "tokens/s/GPU", "MFU", "peak / capacity"});
  for (size_t i = 0; i < r.top.size(); ++i) {
    const PlanEntry& e = r.top[i];
    const PlanLayout& l = e.layout;
    Bytes cap = 0;
    for (const DeviceStats& d : e.best->devices) cap = std::max(cap, d.capacity);
    out += Row({i == 0 ? "best" : std::to_string(i + 1), std::to_string(l.t),
                std::to_string(l.cp), std::to_string(l.ep), std::to_string(l.p),
                std::to_string(l.d), std::to_string(l.mbs), std::to_string(l.m), l.schedule,
                std::to_string(l.v), DescribePlanRecompute(e), Ms(e.best->makespan),
                e.metrics ? fmt::format("{:.0f}", e.metrics->tokens_per_s_per_gpu) : "-",
                e.metrics ? fmt::format("{:.1f} %", 100.0 * e.metrics->mfu) : "-",
                FormatBytes(e.best->max_peak) + " / " + FormatBytes(cap)});
  }
  return out + "</table>\n</section>\n";
}

// The fastest step found per (t, p), shaded from the best (dark) to twice
// it (light).
std::string PlanChart(const PlanResult& r) {
  if (r.best_by_tp.empty()) return "";
  std::vector<int> ts, ps;
  Nanos best = 0;
  for (const auto& [key, t] : r.best_by_tp) {
    if (std::find(ts.begin(), ts.end(), key.first) == ts.end()) ts.push_back(key.first);
    if (std::find(ps.begin(), ps.end(), key.second) == ps.end()) ps.push_back(key.second);
    best = best == 0 ? t : std::min(best, t);
  }
  std::sort(ts.begin(), ts.end());
  std::sort(ps.begin(), ps.end());
  std::string out =
      "<section id=\"chart\">\n<h2>Step time by tensor and pipeline parallel size</h2>\n"
      "<p>The fastest step found at each (t, p) over every other dimension; blank: none "
      "searched fits (pruned or refused).</p>\n<table>\n";
  std::vector<std::string> head{"t \\ p"};
  for (int p : ps) head.push_back(std::to_string(p));
  out += Header(head, 0);
  for (int t : ts) {
    out += "<tr><td>" + std::to_string(t) + "</td>";
    for (int p : ps) {
      const auto it = r.best_by_tp.find({t, p});
      if (it == r.best_by_tp.end()) {
        out += "<td></td>";
        continue;
      }
      const double rel = std::min(1.0, static_cast<double>(it->second - best) /
                                           static_cast<double>(std::max<Nanos>(1, best)));
      const int light = 30 + static_cast<int>(60 * rel);
      out += fmt::format("<td style=\"background:hsl(210,60%,{}%);color:{}\">{:.1f} ms</td>",
                         light, light < 55 ? "#fff" : "#000", ToMs(it->second));
    }
    out += "</tr>\n";
  }
  return out + "</table>\n</section>\n";
}

}  // namespace

std::string FormatPlanReport(const PlanResult& plan, const SimulatedRun& best) {
  std::string body = PlanSummary(plan) + PlanTop(plan) + PlanChart(plan);
  if (best.config != nullptr) body += SimulationSections(best, "the best layout");
  return Page(fmt::format("ppb-sim plan report: {} on {} GPUs",
                          plan.model_name.empty() ? "model" : plan.model_name, plan.settings.gpus),
              body);
}

}  // namespace ppb
