// The compare tables' output (apps/output/compare_output.h).
#include "apps/output/compare_output.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "apps/input/json_text.h"
#include "apps/output/output.h"

namespace ppb {
namespace {

using Json = nlohmann::ordered_json;

}  // namespace

namespace {

// The row's time when it ran to completion, else 0.
Nanos Time(const CompareRow& row) {
  return row.ran && row.outcome != Outcome::Deadlock ? row.iteration_time : 0;
}

double Ratio(Nanos reference, Nanos time) {
  if (reference <= 0 || time <= 0) return 0;
  return static_cast<double>(reference) / static_cast<double>(time);
}

}  // namespace

double SpeedupVsFirstSchedule(const CompareTable& table, size_t i) {
  const size_t per = table.schedules.size();
  return Ratio(Time(table.rows[i - i % per]), Time(table.rows[i]));
}

double SpeedupVsFirstVariant(const CompareTable& table, size_t i) {
  const size_t per = table.schedules.size();
  return Ratio(Time(table.rows[i % per]), Time(table.rows[i]));
}

namespace {

std::string Ranks(const std::vector<int>& ranks, const char* sep) {
  std::string out;
  for (size_t k = 0; k < ranks.size(); ++k) {
    if (k > 0) out += sep;
    out += std::to_string(ranks[k]);
  }
  return out;
}

double Gib(Bytes b) { return static_cast<double>(b) / (1 << 30); }

// Mean idle time per rank, in ms.
double BubbleMsPerRank(const CompareRow& row) {
  return row.p > 0 ? ToMs(row.idle_total) / row.p : 0.0;
}

// "config", "even" (the config has no split) or "even" after a fallback.
const char* SplitName(const CompareRow& row) { return row.config_split ? "config" : "even"; }

// The note a row refers to: why it was refused, or why the config's
// strategy was not used; empty when none.
std::string RowNote(const CompareRow& row) {
  if (!row.ran && (row.split_fallback || row.recompute_fallback)) {
    return "rejected with the even split too (the config's does not apply: " + row.fallback_reason +
           "): " + row.reason;
  }
  if (!row.ran) return "rejected: " + row.reason;
  if (row.recompute_fallback) {
    return "even split without recompute: the config's strategy does not "
           "apply (" +
           row.fallback_reason + ")";
  }
  if (row.split_fallback) {
    return std::string(row.config_recompute ? "even split (the config's recompute kept)"
                                            : "even split") +
           ": the config's split does not apply (" + row.fallback_reason + ")";
  }
  return "";
}

std::string Speedup(double x) { return x > 0 ? fmt::format("{:.2f}x", x) : std::string("-"); }

}  // namespace

namespace {
// Whether some row carries a derived model's step throughput.
bool HasStepMetrics(const CompareTable& table) {
  for (const CompareRow& r : table.rows) {
    if (r.gpus > 0) return true;
  }
  return false;
}
}  // namespace

std::string FormatCompareText(const CompareTable& table) {
  std::string out = fmt::format("ppb-sim compare: {} | {} schedule{} x {} variant{}\n",
                                table.model_name.empty() ? table.config_path : table.model_name,
                                table.schedules.size(), table.schedules.size() == 1 ? "" : "s",
                                table.variants.size(), table.variants.size() == 1 ? "" : "s");
  out += "\n";

  // Notes: the table's, then one number per distinct row note.
  std::vector<std::string> notes;
  std::map<std::string, size_t> note_number;
  auto note_ref = [&](const std::string& note) {
    auto [it, inserted] = note_number.emplace(note, notes.size() + 1);
    if (inserted) notes.push_back(note);
    return it->second;
  };

  struct Column {
    std::string header;
    bool left = false;
    std::vector<std::string> cells;
  };
  std::vector<Column> cols;
  for (const VaryAxis& a : table.vary) cols.push_back({a.key, true, {}});
  const size_t first = cols.size();
  const bool varied = !table.vary.empty();
  const std::string first_schedule = table.schedules.empty() ? std::string() : table.schedules[0];
  const std::string first_variant = table.vary.size() == 1 ? table.variants[0][0] : "first variant";
  for (const auto& [header, left] :
       std::vector<std::pair<std::string, bool>>{{"schedule", true},
                                                 {"v", false},
                                                 {"split", true},
                                                 {"iteration ms", false},
                                                 {"vs " + first_schedule, false},
                                                 {"vs " + first_variant, false},
                                                 {"bubble %", false},
                                                 {"bubble ms", false},
                                                 {"max peak memory", false},
                                                 {"rank", false},
                                                 {"OOM", true}}) {
    if (!varied && header == "vs " + first_variant) continue;
    cols.push_back({header, left, {}});
  }
  // A derived model's step throughput, so layouts on different GPU counts
  // compare (core/step_metrics.h).
  const bool step = HasStepMetrics(table);
  if (step) {
    for (const char* h : {"GPUs", "tokens/s/GPU", "MFU %"}) cols.push_back({h, false, {}});
  }

  for (size_t i = 0; i < table.rows.size(); ++i) {
    const CompareRow& row = table.rows[i];
    for (size_t k = 0; k < table.vary.size(); ++k) {
      cols[k].cells.push_back(table.variants[row.variant][k]);
    }
    std::vector<std::string> cells = {row.schedule, std::to_string(row.v)};
    const std::string note = RowNote(row);
    const std::string ref = note.empty() ? "" : fmt::format(" [{}]", note_ref(note));
    if (!row.ran) {
      cells.push_back("rejected" + ref);
    } else {
      cells.push_back(SplitName(row) + ref);
      cells.push_back(fmt::format("{:.3f}", ToMs(row.iteration_time)));
      cells.push_back(Speedup(SpeedupVsFirstSchedule(table, i)));
      if (varied) cells.push_back(Speedup(SpeedupVsFirstVariant(table, i)));
      cells.push_back(fmt::format("{:.2f}", 100.0 * row.bubble_fraction));
      cells.push_back(fmt::format("{:.3f}", BubbleMsPerRank(row)));
      cells.push_back(FormatBytes(row.max_peak));
      cells.push_back(std::to_string(row.max_peak_rank));
      cells.push_back(row.outcome == Outcome::Deadlock
                          ? std::string("deadlock")
                          : (row.oom_ranks.empty()
                                 ? std::string("no")
                                 : "yes (rank " + Ranks(row.oom_ranks, ",") + ")"));
      if (step) {
        cells.push_back(row.gpus > 0 ? std::to_string(row.gpus) : "-");
        cells.push_back(row.gpus > 0 ? fmt::format("{:.1f}", row.tokens_per_s_per_gpu) : "-");
        cells.push_back(row.gpus > 0 ? fmt::format("{:.1f}", 100.0 * row.mfu) : "-");
      }
    }
    cells.resize(cols.size() - first);
    for (size_t c = 0; c < cells.size(); ++c) {
      cols[first + c].cells.push_back(cells[c]);
    }
  }

  auto line = [&](auto cell) {
    std::string s;
    for (size_t c = 0; c < cols.size(); ++c) {
      size_t width = cols[c].header.size();
      for (const std::string& x : cols[c].cells) width = std::max(width, x.size());
      const std::string& x = cell(c);
      s += "  ";
      s += cols[c].left ? fmt::format("{:<{}}", x, width) : fmt::format("{:>{}}", x, width);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  out += line([&](size_t c) -> const std::string& { return cols[c].header; });
  for (size_t i = 0; i < table.rows.size(); ++i) {
    out += line([&](size_t c) -> const std::string& { return cols[c].cells[i]; });
  }
  out += "\n";
  out +=
      "  split: config = the config's layers_per_chunk/layout/offset; even = "
      "the even split (the config's recompute kept unless noted)\n";
  out +=
      "  bubble ms: mean idle time per rank; max peak memory: the largest "
      "peak of any rank, on the rank shown\n";
  if (!table.notes.empty() || !notes.empty()) out += "\nnotes:\n";
  for (const std::string& n : table.notes) out += "  " + n + "\n";
  for (size_t k = 0; k < notes.size(); ++k) {
    out += fmt::format("  [{}] {}\n", k + 1, notes[k]);
  }
  return out;
}

std::string FormatCompareJson(const CompareTable& table) {
  Json j;
  j["schema"] = "ppb.compare/1";
  j["config"] = table.config_path;
  j["model"] = table.model_name;
  j["schedules"] = table.schedules;
  Json vary = Json::array();
  for (const VaryAxis& a : table.vary) {
    vary.push_back({{"key", a.key}, {"values", a.values}});
  }
  j["vary"] = vary;
  j["notes"] = table.notes;
  Json rows = Json::array();
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const CompareRow& row = table.rows[i];
    Json r;
    Json variant = Json::object();
    for (size_t k = 0; k < table.vary.size(); ++k) {
      variant[table.vary[k].key] = table.variants[row.variant][k];
    }
    r["variant"] = variant;
    r["schedule"] = row.schedule;
    r["stages"] = row.p;
    r["virtual_stages"] = row.v;
    r["microbatches"] = row.m;
    r["status"] = row.ran ? "ok" : "rejected";
    if (!row.ran) r["reason"] = row.reason;
    r["split_fallback"] = row.split_fallback;
    r["recompute_fallback"] = row.recompute_fallback;
    if (!row.fallback_reason.empty()) r["fallback_reason"] = row.fallback_reason;
    if (!row.ran) {
      rows.push_back(r);
      continue;
    }
    if (row.schedule == "interleaved") r["microbatch_group"] = row.group;
    r["split"] = SplitName(row);
    r["config_recompute"] = row.config_recompute;
    r["layers_per_stage"] = row.layers_per_stage;
    r["recomputed_layers"] = row.recomputed_layers;
    r["outcome"] = OutcomeName(row.outcome);
    r["iteration_time_ns"] = row.iteration_time;
    r["iteration_time_ms"] = ToMs(row.iteration_time);
    const double s1 = SpeedupVsFirstSchedule(table, i);
    r["speedup_vs_first_schedule"] = s1 > 0 ? Json(s1) : Json(nullptr);
    const double s2 = SpeedupVsFirstVariant(table, i);
    r["speedup_vs_first_variant"] = s2 > 0 ? Json(s2) : Json(nullptr);
    r["bubble_fraction"] = row.bubble_fraction;
    r["idle_time_ns"] = row.idle_total;
    r["bubble_ms_per_rank"] = BubbleMsPerRank(row);
    r["max_peak_memory_bytes"] = row.max_peak;
    r["max_peak_memory_gib"] = Gib(row.max_peak);
    r["max_peak_rank"] = row.max_peak_rank;
    r["max_peak_capacity_bytes"] = row.max_peak_capacity;
    r["oom"] = !row.oom_ranks.empty();
    r["oom_ranks"] = row.oom_ranks;
    if (row.gpus > 0) {
      r["gpus"] = row.gpus;
      r["tokens_per_s_per_gpu"] = row.tokens_per_s_per_gpu;
      r["mfu"] = row.mfu;
    }
    rows.push_back(r);
  }
  j["rows"] = rows;
  return JsonText(j, 2) + "\n";
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string FormatCompareCsv(const CompareTable& table) {
  std::vector<std::string> header;
  for (const VaryAxis& a : table.vary) header.push_back(a.key);
  for (const char* h : {"schedule",
                        "stages",
                        "virtual_stages",
                        "microbatches",
                        "microbatch_group",
                        "status",
                        "reason",
                        "split",
                        "split_fallback",
                        "recompute_fallback",
                        "fallback_reason",
                        "outcome",
                        "iteration_time_ns",
                        "iteration_time_ms",
                        "speedup_vs_first_schedule",
                        "speedup_vs_first_variant",
                        "bubble_fraction",
                        "idle_time_ns",
                        "bubble_ms_per_rank",
                        "max_peak_memory_bytes",
                        "max_peak_memory_gib",
                        "max_peak_rank",
                        "max_peak_capacity_bytes",
                        "oom",
                        "oom_ranks"}) {
    header.emplace_back(h);
  }
  const bool step = HasStepMetrics(table);
  if (step) {
    for (const char* h : {"gpus", "tokens_per_s_per_gpu", "mfu"}) header.emplace_back(h);
  }
  auto line = [](const std::vector<std::string>& fields) {
    std::string s;
    for (size_t k = 0; k < fields.size(); ++k) {
      if (k > 0) s += ',';
      s += CsvField(fields[k]);
    }
    return s + "\r\n";
  };
  std::string out = line(header);
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const CompareRow& row = table.rows[i];
    std::vector<std::string> f = table.variants[row.variant];
    const bool ran = row.ran;
    auto speed = [](double x) { return x > 0 ? fmt::format("{:.6f}", x) : std::string(); };
    for (std::string x :
         {row.schedule, std::to_string(row.p), std::to_string(row.v), std::to_string(row.m),
          ran && row.schedule == "interleaved" ? std::to_string(row.group) : std::string(),
          std::string(ran ? "ok" : "rejected"), row.reason, std::string(ran ? SplitName(row) : ""),
          std::string(row.split_fallback ? "true" : "false"),
          std::string(row.recompute_fallback ? "true" : "false"), row.fallback_reason,
          std::string(ran ? OutcomeName(row.outcome) : "")}) {
      f.push_back(std::move(x));
    }
    if (ran) {
      for (std::string x :
           {std::to_string(row.iteration_time), fmt::format("{:.6f}", ToMs(row.iteration_time)),
            speed(SpeedupVsFirstSchedule(table, i)), speed(SpeedupVsFirstVariant(table, i)),
            fmt::format("{:.6f}", row.bubble_fraction), std::to_string(row.idle_total),
            fmt::format("{:.6f}", BubbleMsPerRank(row)), std::to_string(row.max_peak),
            fmt::format("{:.3f}", Gib(row.max_peak)), std::to_string(row.max_peak_rank),
            std::to_string(row.max_peak_capacity),
            std::string(row.oom_ranks.empty() ? "false" : "true"), Ranks(row.oom_ranks, " ")}) {
        f.push_back(std::move(x));
      }
      if (step && row.gpus > 0) {
        f.push_back(std::to_string(row.gpus));
        f.push_back(fmt::format("{:.6f}", row.tokens_per_s_per_gpu));
        f.push_back(fmt::format("{:.6f}", row.mfu));
      }
    }
    f.resize(header.size());
    out += line(f);
  }
  return out;
}

}  // namespace ppb
