// tests/zb_records.h: the loader of the zero-bubble reference records.
#include "tests/zb_records.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ppb::test {

std::vector<ZbRecord> LoadZbRecords(const std::vector<std::string>& schedules, int v) {
  const std::string path = std::string(PPB_TEST_DATA_DIR) + "/zb-adaptive-p4.jsonl";
  std::ifstream in(path);
  if (!in.good()) throw std::runtime_error(path + ": cannot be read");
  std::vector<ZbRecord> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const nlohmann::json rec = nlohmann::json::parse(line);
    const std::string name = rec.at("schedule");
    if (std::find(schedules.begin(), schedules.end(), name) == schedules.end()) continue;
    const std::string where = path + ":" + std::to_string(line_no) + ": " + name;
    if (rec.at("v") != v) {
      throw std::runtime_error(where + ": v must be " + std::to_string(v));
    }
    if (rec.at("costs").at("T_comm") != 0) {
      throw std::runtime_error(where + ": T_comm must be 0");
    }
    ZbRecord r;
    r.schedule = name;
    r.p = rec.at("p");
    r.m = rec.at("m");
    r.v = v;
    r.f = rec.at("costs").at("T_F");
    r.i = rec.at("costs").at("T_B(I)");
    r.w = rec.at("costs").at("T_W");
    r.ranks = rec.at("ranks").get<std::vector<std::vector<std::string>>>();
    r.ends = rec.at("upstream_end_times").get<std::vector<std::vector<Nanos>>>();
    if (rec.contains("upstream_cost")) r.cost = rec.at("upstream_cost");
    for (const std::vector<Nanos>& ends : r.ends) {
      for (Nanos e : ends) r.end = std::max(r.end, e);
    }
    out.push_back(r);
  }
  return out;
}

std::string RecordName(const Op& op) {
  const char k = op.kind == OpKind::I ? 'I' : OpKindLetter(op.kind);
  return std::string(1, k) + std::to_string(op.mb.value) + "." +
         std::to_string(op.stage.value);
}

}  // namespace ppb::test
