// One sweep point as a ppb.sweep/1 JSON line, and back
// (apps/output/sweep_output.h).
#include "apps/output/sweep_output.h"

#include <nlohmann/json.hpp>

namespace ppb {

using Json = nlohmann::ordered_json;

std::string SweepLine(const SweepRow& row) {
  Json j;
  j["schema"] = kSweepSchema;
  j["point"] = row.point;
  j["points"] = row.points;
  j["config_hash"] = row.config_hash;
  j["run"] = row.run;
  j["settings"] = row.settings;
  Json values = Json::object();
  for (const auto& [k, v] : row.values) values[k] = v;
  j["values"] = values;
  j["status"] = row.status;
  j["reason"] = row.reason;
  j["note"] = row.note;
  if (row.ran) {
    j["iteration_time_ns"] = row.iteration_time;
    j["iteration_time_ms"] = static_cast<double>(row.iteration_time) / 1e6;
    j["bubble"] = row.bubble;
    j["peak_memory_bytes"] = row.peak_memory;
    j["peak_capacity_bytes"] = row.peak_capacity;
    j["peak_rank"] = row.peak_rank;
  } else {
    for (const char* k : {"iteration_time_ns", "iteration_time_ms", "bubble", "peak_memory_bytes",
                          "peak_capacity_bytes", "peak_rank"}) {
      j[k] = nullptr;
    }
  }
  j["fits"] = row.fits;
  j["strategy"] = row.strategy;
  j["proof"] = row.proof;
  j["gap"] = row.gap ? Json(*row.gap) : Json(nullptr);
  j["lower_bound_ns"] = row.lower_bound ? Json(*row.lower_bound) : Json(nullptr);
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<SweepRow> ParseSweepLine(std::string_view line) {
  Json j;
  try {
    j = Json::parse(line);
  } catch (const Json::exception&) {
    return Error{"", "expected a JSON object; got an incomplete or malformed line"};
  }
  SweepRow row;
  try {
    if (!j.is_object() || !j.contains("schema") || j["schema"] != kSweepSchema) {
      return Error{"", std::string("expected schema ") + kSweepSchema};
    }
    row.point = j.at("point").get<std::int64_t>();
    row.points = j.at("points").get<std::int64_t>();
    row.config_hash = j.at("config_hash").get<std::string>();
    row.run = j.at("run").get<std::string>();
    row.settings = j.at("settings").get<std::string>();
    for (const auto& [k, v] : j.at("values").items()) {
      row.values.emplace_back(k, v.get<std::string>());
    }
    row.status = j.at("status").get<std::string>();
    row.reason = j.at("reason").get<std::string>();
    row.note = j.at("note").get<std::string>();
    row.ran = !j.at("iteration_time_ns").is_null();
    if (row.ran) {
      row.iteration_time = j.at("iteration_time_ns").get<Nanos>();
      row.bubble = j.at("bubble").get<double>();
      row.peak_memory = j.at("peak_memory_bytes").get<Bytes>();
      row.peak_capacity = j.at("peak_capacity_bytes").get<Bytes>();
      row.peak_rank = j.at("peak_rank").get<int>();
    }
    row.fits = j.at("fits").get<bool>();
    row.strategy = j.at("strategy").get<std::string>();
    row.proof = j.at("proof").get<std::string>();
    if (!j.at("gap").is_null()) row.gap = j.at("gap").get<double>();
    if (!j.at("lower_bound_ns").is_null()) row.lower_bound = j.at("lower_bound_ns").get<Nanos>();
  } catch (const Json::exception& e) {
    return Error{"", std::string("expected every field of ") + kSweepSchema + "; " + e.what()};
  }
  if (row.point < 0 || row.points <= 0 || row.point >= row.points) {
    return Error{"", "expected 0 <= point < points"};
  }
  return row;
}

std::string SweepKey(const SweepRow& row) {
  Json j = Json::array({row.config_hash, row.run, row.settings});
  for (const auto& [k, v] : row.values) j.push_back(Json::array({k, v}));
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string RowValue(const SweepRow& row, const std::string& key) {
  if (key == "run") return row.run;
  for (const auto& [k, v] : row.values) {
    if (k == key) return v;
  }
  return "";
}

}  // namespace ppb
