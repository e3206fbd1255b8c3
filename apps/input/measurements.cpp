// The measurements reader (apps/input/measurements.h).
#include "apps/input/measurements.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/input/status_macros.h"
#include "apps/input/units.h"

namespace ppb {
namespace {


// Reads one measurements file; errors "file:line: key: message".
class Reader {
 public:
  Reader(std::string_view file, const SappUnits& units)
      : file_(file), units_(units) {}

  // "file:line", or the file alone where yaml-cpp has no line (-1: an
  // empty document).
  std::string Where(const YAML::Mark& mark) const {
    return mark.line < 0 ? file_ : file_ + ":" + std::to_string(mark.line + 1);
  }

  Error Fail(const YAML::Node& at, const std::string& key,
             const std::string& msg) const {
    return Error{key, Where(at.Mark()) + ": " + key + ": " + msg};
  }

  static std::string Given(const YAML::Node& n) {
    if (!n.IsDefined() || n.IsNull()) return "nothing";
    if (n.IsScalar()) return n.Scalar();
    return n.IsSequence() ? "a list" : "a map";
  }

  // Every integer here is a count (stages, layers, micro-batches, a stage
  // id, an offset), read into int and used to size per-stage lists: one
  // past kMaxCount is bad input, not a request for gigabytes.
  static constexpr long long kMaxCount = 100000;

  Result<long long> Int(const YAML::Node& n, const std::string& key,
                        long long min) const {
    long long v = 0;
    if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v) || v < min ||
        v > kMaxCount) {
      return Fail(n, key, "must be an integer in " + std::to_string(min) +
                              " .. " + std::to_string(kMaxCount) + "; got " +
                              Given(n));
    }
    return v;
  }

  // Per-stage integers: an int (every stage), a list of p, true (= all
  // layers: `all`), false (0), or [[...p]] (one chunk).
  Result<std::vector<int>> PerStage(const YAML::Node& n, const std::string& key,
                                    int p, long long min,
                                    const std::vector<int>* all) const {
    if (n.IsScalar()) {
      bool b = false;
      if (YAML::convert<bool>::decode(n, b) &&
          (n.Scalar() == "true" || n.Scalar() == "false" ||
           n.Scalar() == "True" || n.Scalar() == "False")) {
        if (!b) return std::vector<int>(p, 0);
        if (all != nullptr) return *all;
        return Fail(n, key, "must be integers; got " + Abbreviate(n.Scalar()));
      }
      Result<long long> v = Int(n, key, min);
      if (!v.ok()) return v.error();
      return std::vector<int>(p, static_cast<int>(*v));
    }
    YAML::Node list = n;
    if (n.IsSequence() && n.size() == 1 && n[0].IsSequence()) list = n[0];
    if (!list.IsSequence() || static_cast<int>(list.size()) != p) {
      return Fail(n, key, "must be an integer or a list of " +
                              std::to_string(p) + " (one per stage; v = 1); got " +
                              (list.IsSequence() ? "a list of " + std::to_string(list.size())
                                                 : Given(n)));
    }
    std::vector<int> out;
    for (size_t i = 0; i < list.size(); ++i) {
      Result<long long> v =
          Int(list[i], key + "[" + std::to_string(i) + "]", min);
      if (!v.ok()) return v.error();
      out.push_back(static_cast<int>(*v));
    }
    return out;
  }

  Status Keys(const YAML::Node& n, const std::string& key,
              std::initializer_list<const char*> allowed) const {
    if (!n.IsMap()) return Fail(n, key, "must be a map; got " + Given(n));
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      bool ok = false;
      std::string list;
      for (const char* a : allowed) {
        ok = ok || k == a;
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      if (!ok) {
        return Fail(kv.first, key.empty() ? k : key + "." + k,
                    "unknown key; expected one of " + list);
      }
    }
    return Status();
  }

  // A SAPP number times its unit.
  Result<double> SappNumber(const YAML::Node& n, const std::string& key,
                            double unit, const char* flag) const {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || v < 0 ||
        !std::isfinite(v)) {
      return Fail(n, key, "must be a non-negative number; got " + Given(n));
    }
    if (unit <= 0) {
      return Fail(n, key,
                  std::string("is a SAPP number without a unit; give ") +
                      flag + " (e.g. " +
                      (std::string(flag) == "--memory-unit" ? "1MiB" : "1ms") +
                      ")");
    }
    return v * unit;
  }

  Result<Measurements> Parse(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return Error{"", file_ + ":" + std::to_string(e.mark.line + 1) +
                           ": must be valid YAML; got a syntax error (" +
                           e.msg + ")"};
    }
    try {
      if (!root.IsMap()) {
        return Error{"", Where(root.Mark()) + ": must be a map with runs (or SAPP's "
                                 "pipeline_config and memory_usage); got " +
                             Given(root)};
      }
      if (root["memory_usage"] || root["pipeline_config"]) return Sapp(root);
      return Runs(root);
    } catch (const YAML::Exception& e) {
      return Error{"", file_ + ":" + std::to_string(e.mark.line + 1) +
                           ": must be readable YAML; got an error (" + e.msg +
                           ")"};
    }
  }

 private:
  // ---- SAPP's dry-run memory YAML ----------------------------------------
  Result<Measurements> Sapp(const YAML::Node& root) {
    PPB_RETURN_IF_ERROR(Keys(root, "", {"pipeline_config", "recompute_config",
                            "memory_usage", "time_config"}));
    Measurements out;
    out.sapp = true;
    const YAML::Node pc = root["pipeline_config"];
    if (!pc) return Fail(root, "pipeline_config", "must be given; got nothing");
    PPB_RETURN_IF_ERROR(Keys(pc, "pipeline_config", {"pipeline_num", "num_layer", "offset"}));
    Result<long long> p = Int(pc["pipeline_num"], "pipeline_config.pipeline_num", 1);
    if (!p.ok()) return p.error();
    Result<long long> nl = Int(pc["num_layer"], "pipeline_config.num_layer", 1);
    if (!nl.ok()) return nl.error();
    const int np = static_cast<int>(*p);
    std::vector<int> offset(np, 0);
    if (pc["offset"]) {
      Result<std::vector<int>> o =
          PerStage(pc["offset"], "pipeline_config.offset", np, -kMaxCount, nullptr);
      if (!o.ok()) return o.error();
      offset = *o;
    }
    // MindFormers: stage layers = L // p + offset[s], sum(offset) = L mod p
    // (conventions.md, MindFormers).
    long long sum = 0;
    for (int x : offset) sum += x;
    if (sum != *nl % np) {
      return Fail(pc["offset"], "pipeline_config.offset",
                  "must add up to num_layer mod pipeline_num (" +
                      std::to_string(*nl % np) + "); got " + std::to_string(sum));
    }
    std::vector<int> layers(np);
    for (int s = 0; s < np; ++s) {
      layers[s] = static_cast<int>(*nl / np) + offset[s];
      if (layers[s] < 0) {
        return Fail(pc["offset"], "pipeline_config.offset",
                    "gives stage " + std::to_string(s) + " a negative number of layers");
      }
    }
    out.decoder_layers = static_cast<int>(*nl);
    // Recompute lists -> layers per SAPP type, as SAPP's
    // Recompute.internal_from_yaml: BOTH = max(min(sel - full, comm - full), 0),
    // SLCT = max(sel - full - BOTH, 0), COMM = max(comm - full - BOTH, 0).
    std::vector<int> full(np, 0), sel(np, 0), comm(np, 0);
    if (const YAML::Node rc = root["recompute_config"]) {
      PPB_RETURN_IF_ERROR(Keys(rc, "recompute_config",
                   {"recompute", "select_recompute", "select_comm_recompute"}));
      auto read = [&](const char* key, std::vector<int>& dst) -> Status {
        if (!rc[key]) return Status();
        Result<std::vector<int>> v = PerStage(
            rc[key], std::string("recompute_config.") + key, np, 0, &layers);
        if (!v.ok()) return v.error();
        dst = *v;
        for (int s = 0; s < np; ++s) {
          if (dst[s] > layers[s]) {
            return Fail(rc[key], std::string("recompute_config.") + key,
                        "must be <= the layers of stage " + std::to_string(s) +
                            " (" + std::to_string(layers[s]) + "); got " +
                            std::to_string(dst[s]));
          }
        }
        return Status();
      };
      PPB_RETURN_IF_ERROR(read("recompute", full));
      PPB_RETURN_IF_ERROR(read("select_recompute", sel));
      PPB_RETURN_IF_ERROR(read("select_comm_recompute", comm));
    }
    out.problem.modes = {"none"};
    for (const SappMode& m : SappModes()) out.problem.modes.push_back(m.name);
    auto stage = [&](int s) {
      StageMeasurement st;
      st.label = "stage " + std::to_string(s);
      st.stage = s;
      st.stages = np;
      st.layers = layers[s];
      const int f = full[s];
      const int both = std::max(std::min(sel[s] - f, comm[s] - f), 0);
      const int slct = std::max(sel[s] - f - both, 0);
      const int cm = std::max(comm[s] - f - both, 0);
      // modes: none, selective, select_comm, both_comm_select, full
      st.per_mode = {layers[s] - f - both - slct - cm, slct, cm, both, f};
      st.inflight = np - s;  // SAPP: stage.py, diff = nb_stage - id
      return st;
    };
    const YAML::Node mu = root["memory_usage"];
    if (!mu) return Fail(root, "memory_usage", "must be given; got nothing");
    PPB_RETURN_IF_ERROR(Keys(mu, "memory_usage", {"head_memory", "tail_memory", "body_memories"}));
    const double mem = static_cast<double>(units_.memory);
    std::map<int, double> measured;
    for (const char* k : {"head_memory", "tail_memory"}) {
      if (!mu[k]) {
        return Fail(mu, std::string("memory_usage.") + k,
                    "must be given (SAPP needs the first and last stage); got nothing");
      }
      Result<double> v = SappNumber(mu[k], std::string("memory_usage.") + k, mem, "--memory-unit");
      if (!v.ok()) return v.error();
      measured[std::string(k) == "head_memory" ? 0 : np - 1] = *v;
    }
    if (const YAML::Node body = mu["body_memories"]) {
      PPB_RETURN_IF_ERROR(Keys(body, "memory_usage.body_memories", {"stage_id", "memories"}));
      const YAML::Node ids = body["stage_id"], mems = body["memories"];
      if (!ids.IsSequence() || !mems.IsSequence() || ids.size() != mems.size()) {
        return Fail(body, "memory_usage.body_memories",
                    "must have lists stage_id and memories of equal length");
      }
      for (size_t i = 0; i < ids.size(); ++i) {
        const std::string key = "memory_usage.body_memories.stage_id[" + std::to_string(i) + "]";
        Result<long long> s = Int(ids[i], key, 0);
        if (!s.ok()) return s.error();
        if (*s >= np || measured.count(static_cast<int>(*s))) {
          return Fail(ids[i], key, "must be a stage 1 .. " + std::to_string(np - 2) +
                                       " given once; got " + std::to_string(*s));
        }
        Result<double> v = SappNumber(
            mems[i], "memory_usage.body_memories.memories[" + std::to_string(i) + "]",
            mem, "--memory-unit");
        if (!v.ok()) return v.error();
        measured[static_cast<int>(*s)] = *v;
      }
    }
    std::vector<bool> used(out.problem.modes.size(), false);
    int body_count = 0;
    for (const auto& [s, v] : measured) {
      StageMeasurement st = stage(s);
      st.memory = v;
      if (s != 0 && s != np - 1) {
        ++body_count;
        for (size_t i = 0; i < used.size(); ++i) used[i] = used[i] || st.per_mode[i] > 0;
      }
      out.problem.stages.push_back(st);
    }
    // SAPP fits the constant only with enough body stages
    // (compute_memory.py: "type of recompute + 4" stages).
    int n_used = 0;
    for (bool u : used) n_used += u;
    out.problem.fit_constant = body_count >= n_used + 2;
    // ComputeMemory accepts a negative constant and SAPP plans with it.
    out.problem.allow_negative_constant = true;
    if (const YAML::Node tc = root["time_config"]) {
      PPB_RETURN_IF_ERROR(Keys(tc, "time_config", {"head", "body", "tail"}));
      // time_config holds SAPP's per-layer `time` (apps/input/sapp.h):
      // forward only since MindFormers 959a2451 (F + B = 3 x time), F + B
      // before. ppb's layer times are F + B.
      const SappTime meaning = units_.time_meaning.value_or(SappTime::Forward);
      const double t = static_cast<double>(units_.time) *
                       (meaning == SappTime::Forward ? 3.0 : 1.0);
      out.time_note =
          std::string("SAPP time_config read as ") + SappTimeName(meaning) +
          (meaning == SappTime::Forward ? ", F + B = 3 x time" : "") +
          (units_.time_meaning ? " (--sapp-time)"
                               : " (MindFormers r1.5.0; --sapp-time "
                                 "forward+backward for files written before "
                                 "commit 959a2451)");
      for (const char* k : {"head", "body", "tail"}) {
        if (!tc[k]) continue;
        Result<double> v = SappNumber(tc[k], std::string("time_config.") + k, t, "--time-unit");
        if (!v.ok()) return v.error();
        (std::string(k) == "head" ? out.head_time
         : std::string(k) == "body" ? out.body_time
                                    : out.tail_time) = *v;
      }
    }
    return out;
  }

  // ---- ppb's runs.yaml --------------------------------------------------
  Result<Measurements> Runs(const YAML::Node& root) {
    PPB_RETURN_IF_ERROR(Keys(root, "", {"runs", "modes", "constant", "layer_times"}));
    Measurements out;
    out.problem.modes = {"none"};
    if (const YAML::Node modes = root["modes"]) {
      if (!modes.IsSequence()) return Fail(modes, "modes", "must be a list of mode names; got " + Given(modes));
      for (size_t i = 0; i < modes.size(); ++i) {
        const std::string m = modes[i].Scalar();
        if (m.empty() || m == "none" ||
            std::find(out.problem.modes.begin(), out.problem.modes.end(), m) != out.problem.modes.end()) {
          return Fail(modes[i], "modes[" + std::to_string(i) + "]",
                      "must be a new mode name other than none; got " + Given(modes[i]));
        }
        out.problem.modes.push_back(m);
      }
    }
    if (const YAML::Node c = root["constant"]) {
      bool b = true;
      if (!c.IsScalar() || !YAML::convert<bool>::decode(c, b)) {
        return Fail(c, "constant", "must be true or false; got " + Given(c));
      }
      out.problem.fit_constant = b;
    }
    if (const YAML::Node lt = root["layer_times"]) {
      PPB_RETURN_IF_ERROR(Keys(lt, "layer_times", {"decoder", "embedding", "head"}));
      for (const char* k : {"decoder", "embedding", "head"}) {
        if (!lt[k]) continue;
        Result<Nanos> t = ParseDuration(lt[k].Scalar());
        if (!t.ok()) return Fail(lt[k], std::string("layer_times.") + k, t.error().message);
        (std::string(k) == "decoder" ? out.body_time
         : std::string(k) == "embedding" ? out.head_time
                                         : out.tail_time) = static_cast<double>(*t);
      }
    }
    const YAML::Node runs = root["runs"];
    if (!runs || !runs.IsSequence() || runs.size() == 0) {
      return Fail(runs ? runs : root, "runs", "must be a non-empty list of runs; got " + Given(runs));
    }
    for (size_t r = 0; r < runs.size(); ++r) {
      PPB_RETURN_IF_ERROR(Run(runs[r], "runs[" + std::to_string(r) + "]", out));
    }
    return out;
  }

  Status Run(const YAML::Node& run, const std::string& key, Measurements& out) {
    PPB_RETURN_IF_ERROR(Keys(run, key, {"name", "stages", "microbatches", "layers",
                            "num_layers", "offset", "recompute", "memory", "time"}));
    const std::string label = run["name"] ? run["name"].Scalar() : key;
    Result<long long> p = Int(run["stages"], key + ".stages", 1);
    if (!p.ok()) return p.error();
    const int np = static_cast<int>(*p);
    std::optional<long long> m;
    if (run["microbatches"]) {
      Result<long long> mm = Int(run["microbatches"], key + ".microbatches", 1);
      if (!mm.ok()) return mm.error();
      m = *mm;
    }
    std::vector<int> layers;
    if (run["layers"]) {
      if (run["num_layers"] || run["offset"]) {
        return Fail(run["layers"], key + ".layers", "must not be given with num_layers/offset");
      }
      Result<std::vector<int>> l = PerStage(run["layers"], key + ".layers", np, 0, nullptr);
      if (!l.ok()) return l.error();
      layers = *l;
    } else {
      if (!run["num_layers"]) {
        return Fail(run, key + ".layers", "must be given (decoder layers per stage), or num_layers with an optional offset; got nothing");
      }
      Result<long long> nl = Int(run["num_layers"], key + ".num_layers", 1);
      if (!nl.ok()) return nl.error();
      std::vector<int> offset(np, 0);
      if (run["offset"]) {
        Result<std::vector<int>> o = PerStage(run["offset"], key + ".offset", np, -kMaxCount, nullptr);
        if (!o.ok()) return o.error();
        offset = *o;
      }
      long long sum = 0;
      for (int x : offset) sum += x;
      if (sum != *nl % np) {
        return Fail(run["offset"], key + ".offset",
                    "must add up to num_layers mod stages (" + std::to_string(*nl % np) +
                        "); got " + std::to_string(sum));
      }
      for (int s = 0; s < np; ++s) layers.push_back(static_cast<int>(*nl / np) + offset[s]);
    }
    int total = 0;
    for (int s = 0; s < np; ++s) {
      if (layers[s] < 0) return Fail(run, key + ".layers", "gives stage " + std::to_string(s) + " a negative count");
      total += layers[s];
    }
    if (out.decoder_layers == 0) out.decoder_layers = total;
    // Recompute: first N layers of each stage per mode, modes applied in
    // order; layers set by an earlier mode keep it but count (as the run
    // config's strategy.recompute lists).
    std::vector<std::vector<int>> per_mode(np, std::vector<int>(1, 0));
    std::vector<int> assigned(np, 0);
    if (const YAML::Node rc = run["recompute"]) {
      if (!rc.IsMap()) return Fail(rc, key + ".recompute", "must be a map mode: counts; got " + Given(rc));
      for (const auto& kv : rc) {
        const std::string mode = kv.first.Scalar();
        const std::string mk = key + ".recompute." + mode;
        auto it = std::find(out.problem.modes.begin(), out.problem.modes.end(), mode);
        if (mode == "none") return Fail(kv.first, mk, "must name a recompute mode (none is implied)");
        if (it == out.problem.modes.end()) {
          out.problem.modes.push_back(mode);
          it = out.problem.modes.end() - 1;
        }
        const size_t idx = static_cast<size_t>(it - out.problem.modes.begin());
        Result<std::vector<int>> n = PerStage(kv.second, mk, np, 0, &layers);
        if (!n.ok()) return n.error();
        for (int s = 0; s < np; ++s) {
          if ((*n)[s] > layers[s]) {
            return Fail(kv.second, mk, "must be <= the layers of stage " + std::to_string(s) +
                                           " (" + std::to_string(layers[s]) + "); got " +
                                           std::to_string((*n)[s]));
          }
          per_mode[s].resize(std::max(per_mode[s].size(), idx + 1), 0);
          per_mode[s][idx] += std::max(0, (*n)[s] - assigned[s]);
          assigned[s] = std::max(assigned[s], (*n)[s]);
        }
      }
    }
    auto values = [&](const char* what, bool memory,
                      std::map<int, double>& dst) -> Status {
      const YAML::Node n = run[what];
      if (!n) return Status();
      const std::string k = key + "." + what;
      auto one = [&](const YAML::Node& v, const std::string& vk, int s) -> Status {
        if (v.IsNull()) return Status();
        if (!v.IsScalar()) return Fail(v, vk, "must be a value with a unit; got " + Given(v));
        if (memory) {
          Result<Bytes> b = ParseBytes(v.Scalar());
          if (!b.ok()) return Fail(v, vk, b.error().message);
          dst[s] = static_cast<double>(*b);
        } else {
          Result<Nanos> t = ParseDuration(v.Scalar());
          if (!t.ok()) return Fail(v, vk, t.error().message);
          dst[s] = static_cast<double>(*t);
        }
        return Status();
      };
      if (n.IsSequence()) {
        if (static_cast<int>(n.size()) != np) {
          return Fail(n, k, "must list one value per stage (" + std::to_string(np) + ", ~ for none) or map stage: value; got a list of " + std::to_string(n.size()));
        }
        for (int s = 0; s < np; ++s) PPB_RETURN_IF_ERROR(one(n[s], k + "[" + std::to_string(s) + "]", s));
      } else if (n.IsMap()) {
        for (const auto& kv : n) {
          Result<long long> s = Int(kv.first, k, 0);
          if (!s.ok()) return s.error();
          if (*s >= np) return Fail(kv.first, k, "must name stages 0 .. " + std::to_string(np - 1) + "; got " + std::to_string(*s));
          PPB_RETURN_IF_ERROR(one(kv.second, k + "." + std::to_string(*s), static_cast<int>(*s)));
        }
      } else {
        return Fail(n, k, "must be a list of one value per stage or a map stage: value; got " + Given(n));
      }
      return Status();
    };
    std::map<int, double> mem, time;
    PPB_RETURN_IF_ERROR(values("memory", true, mem));
    PPB_RETURN_IF_ERROR(values("time", false, time));
    if (mem.empty() && time.empty()) {
      return Fail(run, key + ".memory", "must be given (measured peak memory per stage); got nothing");
    }
    for (int s = 0; s < np; ++s) {
      if (!mem.count(s) && !time.count(s)) continue;
      StageMeasurement st;
      st.label = label + " stage " + std::to_string(s);
      st.stage = s;
      st.stages = np;
      st.layers = layers[s];
      st.per_mode = per_mode[s];
      st.per_mode[0] = layers[s] - assigned[s];
      // 1F1B: min(m, p - s) forwards in flight (formulas.md §2); without m,
      // SAPP's p - s.
      st.inflight = m ? static_cast<int>(std::min<long long>(*m, np - s)) : np - s;
      if (mem.count(s)) st.memory = mem[s];
      if (time.count(s)) st.time = time[s];
      out.problem.stages.push_back(st);
    }
    return Status();
  }

  std::string file_;
  SappUnits units_;
};

}  // namespace

Result<Measurements> ParseMeasurements(std::string_view text,
                                       std::string_view filename,
                                       const SappUnits& units) {
  Result<Measurements> m = Reader(filename, units).Parse(text);
  if (!m.ok()) return m;
  for (StageMeasurement& s : m->problem.stages) {
    s.per_mode.resize(m->problem.modes.size(), 0);
  }
  return m;
}

Result<Measurements> LoadMeasurements(const std::string& path,
                                      const SappUnits& units) {
  std::ifstream in(path);
  if (!in) return Error{"", path + ": cannot be read"};
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseMeasurements(ss.str(), path, units);
}

}  // namespace ppb
