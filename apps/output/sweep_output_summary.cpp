// The summary and per-point tables of a sweep
// (apps/output/sweep_output_summary.h).
#include "apps/output/sweep_output_summary.h"

#include "apps/input/json_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/output/compare_output.h"
#include "apps/output/output.h"

namespace ppb {

namespace {

using Json = nlohmann::ordered_json;

struct Group {
  std::vector<std::string> key;  // values of group_by
  std::int64_t points = 0;
  std::int64_t fitting = 0;
  std::map<std::string, std::int64_t> status;
  const SweepRow* best = nullptr;
};

void SortRows(std::vector<SweepRow>& rows) {
  std::sort(rows.begin(), rows.end(),
            [](const SweepRow& a, const SweepRow& b) { return a.point < b.point; });
}

std::vector<Group> Groups(const std::vector<SweepRow>& rows, const SweepTableInfo& info) {
  std::vector<Group> groups;
  std::map<std::vector<std::string>, size_t> index;
  for (const SweepRow& r : rows) {
    std::vector<std::string> key;
    for (const std::string& g : info.group_by) key.push_back(RowValue(r, g));
    auto [it, fresh] = index.emplace(key, groups.size());
    if (fresh) {
      groups.emplace_back();
      groups.back().key = key;
    }
    Group& g = groups[it->second];
    ++g.points;
    ++g.status[r.status];
    if (!(r.ran && r.fits)) continue;
    ++g.fitting;
    if (g.best == nullptr || r.iteration_time < g.best->iteration_time) g.best = &r;
  }
  return groups;
}

std::string Ms(const SweepRow& r) {
  return r.ran ? fmt::format("{:.3f}", static_cast<double>(r.iteration_time) / 1e6) : "-";
}
std::string BubblePct(const SweepRow& r) {
  return r.ran ? fmt::format("{:.2f}", 100.0 * r.bubble) : "-";
}
std::string Peak(const SweepRow& r) {
  return r.ran ? FormatBytes(r.peak_memory) + " / " + FormatBytes(r.peak_capacity) : "-";
}

// The best row's values of the axes not grouped by.
std::vector<std::string> FreeAxes(const SweepTableInfo& info) {
  std::vector<std::string> out;
  for (const std::string& a : info.axes) {
    if (std::find(info.group_by.begin(), info.group_by.end(), a) == info.group_by.end()) {
      out.push_back(a);
    }
  }
  return out;
}

bool RunGrouped(const SweepTableInfo& info) {
  return std::find(info.group_by.begin(), info.group_by.end(), "run") != info.group_by.end();
}

std::vector<std::string> SummaryHeader(const SweepTableInfo& info) {
  std::vector<std::string> h = info.group_by;
  h.insert(h.end(), {"points", "fitting", "best point"});
  for (const std::string& a : FreeAxes(info)) h.push_back(a);
  if (!RunGrouped(info)) h.push_back("run");
  h.insert(h.end(), {"time ms", "bubble %", "peak / capacity", "strategy", "proof"});
  return h;
}

std::vector<std::vector<std::string>> SummaryCells(const std::vector<Group>& groups,
                                                   const SweepTableInfo& info) {
  std::vector<std::vector<std::string>> cells;
  for (const Group& g : groups) {
    std::vector<std::string> c = g.key;
    c.push_back(std::to_string(g.points));
    c.push_back(std::to_string(g.fitting));
    if (g.best == nullptr) {
      c.push_back("none fits");
      for (size_t k = 0; k < FreeAxes(info).size() + (RunGrouped(info) ? 5 : 6); ++k) {
        c.push_back("-");
      }
    } else {
      const SweepRow& b = *g.best;
      c.push_back(std::to_string(b.point));
      for (const std::string& a : FreeAxes(info)) c.push_back(RowValue(b, a));
      if (!RunGrouped(info)) c.push_back(b.run);
      c.insert(c.end(), {Ms(b), BubblePct(b), Peak(b), b.strategy, b.proof});
    }
    cells.push_back(std::move(c));
  }
  return cells;
}

std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& cells) {
  std::vector<size_t> width(header.size());
  for (size_t k = 0; k < header.size(); ++k) width[k] = header[k].size();
  for (const auto& c : cells) {
    for (size_t k = 0; k < c.size() && k < width.size(); ++k) {
      width[k] = std::max(width[k], c[k].size());
    }
  }
  auto line = [&](const std::vector<std::string>& c) {
    std::string s = " ";
    for (size_t k = 0; k < c.size(); ++k) {
      s += " " + c[k];
      if (k + 1 < c.size()) s += std::string(width[k] - c[k].size(), ' ') + " ";
    }
    return s + "\n";
  };
  std::string out = line(header);
  for (const auto& c : cells) out += line(c);
  return out;
}

std::string Csv(const std::vector<std::string>& fields) {
  std::string s;
  for (size_t k = 0; k < fields.size(); ++k) s += (k ? "," : "") + CsvField(fields[k]);
  return s + "\n";
}

std::string Counts(const std::vector<SweepRow>& rows, const SweepTableInfo& info) {
  std::map<std::string, std::int64_t> status;
  for (const SweepRow& r : rows) ++status[r.status];
  std::vector<std::string> parts;
  for (const auto& [s, n] : status) parts.push_back(fmt::format("{} {}", n, s));
  return fmt::format(
      "{} of {} points done ({})", rows.size(), info.points,
      parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, ", ")));
}

}  // namespace

std::string FormatSweepSummaryText(std::vector<SweepRow> rows, const SweepTableInfo& info) {
  SortRows(rows);
  const std::vector<Group> groups = Groups(rows, info);
  std::string out = "ppb-sim sweep: " + Counts(rows, info) + "\n";
  out += info.group_by.empty()
             ? std::string("best point (the fitting point with the shortest iteration time):\n")
             : fmt::format(
                   "best point per {} (the fitting point with the shortest iteration "
                   "time):\n",
                   fmt::join(info.group_by, ", "));
  return out + Table(SummaryHeader(info), SummaryCells(groups, info));
}

std::string FormatSweepSummaryCsv(std::vector<SweepRow> rows, const SweepTableInfo& info) {
  SortRows(rows);
  const std::vector<Group> groups = Groups(rows, info);
  std::string out = Csv(SummaryHeader(info));
  for (const auto& c : SummaryCells(groups, info)) out += Csv(c);
  return out;
}

std::string FormatSweepSummaryJson(std::vector<SweepRow> rows, const SweepTableInfo& info) {
  SortRows(rows);
  const std::vector<Group> groups = Groups(rows, info);
  Json j;
  j["schema"] = "ppb.sweep-summary/1";
  j["points"] = info.points;
  j["done"] = rows.size();
  Json status = Json::object();
  for (const SweepRow& r : rows) {
    status[r.status] = status.value(r.status, 0) + 1;
  }
  j["status"] = status;
  j["group_by"] = info.group_by;
  Json gs = Json::array();
  for (const Group& g : groups) {
    Json o;
    Json key = Json::object();
    for (size_t k = 0; k < info.group_by.size(); ++k) key[info.group_by[k]] = g.key[k];
    o["group"] = key;
    o["points"] = g.points;
    o["fitting"] = g.fitting;
    o["best"] = g.best ? Json::parse(SweepLine(*g.best)) : Json(nullptr);
    gs.push_back(o);
  }
  j["groups"] = gs;
  return JsonText(j, 2) + "\n";
}

std::string SweepCsvHeader(const SweepTableInfo& info) {
  std::vector<std::string> h = {"point"};
  h.insert(h.end(), info.axes.begin(), info.axes.end());
  h.insert(h.end(), {"run", "status", "time_ms", "bubble_pct", "peak_bytes", "capacity_bytes",
                     "fits", "strategy", "proof", "reason", "note"});
  return Csv(h);
}

std::string SweepCsvRow(const SweepRow& r) {
  std::vector<std::string> c = {std::to_string(r.point)};
  for (const auto& kv : r.values) c.push_back(kv.second);
  c.insert(c.end(),
           {r.run, r.status, Ms(r), BubblePct(r), r.ran ? std::to_string(r.peak_memory) : "-",
            r.ran ? std::to_string(r.peak_capacity) : "-", r.fits ? "yes" : "no", r.strategy,
            r.proof, r.reason, r.note});
  return Csv(c);
}

std::string SweepTextHeader(const SweepTableInfo& info) {
  return fmt::format("{:>6}  {:<8} {:>8} {:>14} {:>8}  {}\n", "point", "status", "run", "time ms",
                     "bubble%", fmt::join(info.axes, " | "));
}

std::string SweepTextRow(const SweepRow& r) {
  std::vector<std::string> vals;
  for (const auto& kv : r.values) vals.push_back(kv.second);
  std::string s = fmt::format("{:>6}  {:<8} {:>8} {:>14} {:>8}  {}", r.point, r.status, r.run,
                              Ms(r), BubblePct(r), fmt::join(vals, " | "));
  if (!r.reason.empty()) s += "  (" + r.reason + ")";
  return s + "\n";
}

}  // namespace ppb
