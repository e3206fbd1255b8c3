// SAPP input readers (apps/input/sapp.h).
#include "apps/input/sapp.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "apps/input/config_reader.h"
#include "apps/input/json_text.h"

namespace ppb {
namespace {

using Json = nlohmann::json;


}  // namespace

const std::vector<SappMode>& SappModes() {
  static const std::vector<SappMode> modes = {
      {"selective", "select_recompute", "memory_select_rec", "select_rec_coef",
       0.04},
      {"select_comm", "select_comm_recompute", "memory_select_comm",
       "select_comm_coef", 0.125},
      {"both_comm_select", "", "memory_both_comm_select",
       "both_comm_select_coef", 0.165},
      {"full", "recompute", "memory_recompute", "recompute_coef", 0.5},
  };
  return modes;
}

const char* SappTimeName(SappTime t) {
  return t == SappTime::Forward ? "forward" : "forward+backward";
}

namespace {

// The 1-based line in `text` of `key` inside element `index` of the
// top-level array `top` (key empty: the element's first line), or of the
// top-level key `top` itself (index < 0); 0 when not found. nlohmann::json
// keeps no positions, so errors find their line with this small scanner.
int LineOf(std::string_view text, std::string_view top, int index,
           std::string_view key) {
  int line = 1, depth = 0, elem = -1, elem_line = 0, top_line = 0;
  bool in_array = false, in_target = false, want_array = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      const int start_line = line;
      std::string s;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) ++i;
        if (text[i] == '\n') ++line;
        s += text[i];
      }
      size_t j = i + 1;
      while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) ++j;
      if (j >= text.size() || text[j] != ':') continue;  // a value
      if (depth == 1 && s == top) {
        if (index < 0) return start_line;
        top_line = start_line;
        want_array = true;
      } else if (in_target && depth == 3 && s == key) {
        return start_line;
      }
    } else if (c == '{' || c == '[') {
      ++depth;
      if (want_array && depth == 2) {
        want_array = false;
        in_array = c == '[';
        if (!in_array) return top_line;
      } else if (in_array && depth == 3 && ++elem == index) {
        if (key.empty()) return line;
        in_target = true;
        elem_line = line;
      }
    } else if (c == '}' || c == ']') {
      if (in_target && depth == 3) return elem_line;
      --depth;
      if (in_array && depth == 1) return top_line;
    }
  }
  return top_line;
}

// One pass over SAPP's JSON that checks each key where it reads it
// (sapp.h says how SAPP reads each). nlohmann's exceptions stop at
// ParseSappModel.
Result<SappModel> ParseLayers(std::string_view text, std::string_view filename,
                              const SappUnits& units) {
  const std::string file(filename);
  // "file:line: key: message"; `index` < 0: a top-level key.
  auto fail_at = [&](int index, const std::string& field,
                     const std::string& key, const std::string& msg) {
    const int line = index < 0 ? LineOf(text, field, -1, "")
                               : LineOf(text, "layers_description", index, field);
    return Error{key, file + (line > 0 ? ":" + std::to_string(line) : "") +
                          ": " + key + ": " + msg};
  };
  auto fail = [&](const std::string& key, const std::string& msg) {
    return fail_at(-1, key, key, msg);
  };
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception& e) {
    // parse_error, and out_of_range for a number beyond double (1e400).
    return Error{"", file + ": must be valid JSON; got an error (" +
                         std::string(e.what()) + ")"};
  }
  if (!root.is_object()) return fail("(top)", "must be an object; got " + JsonGiven(root));
  for (const auto& [key, value] : root.items()) {
    static const std::set<std::string> known = {
        "name", "pre_defined_layer", "auto_partition_layer",
        "layers_description", "stage_const_mem", "sapp_time"};
    if (!known.count(key)) {
      return fail(key,
                  "unknown key; expected one of name, pre_defined_layer, "
                  "auto_partition_layer, layers_description, "
                  "stage_const_mem, sapp_time");
    }
  }
  SappModel model;
  // The meaning of `time` (sapp.h): the caller's, else the file's, else
  // MindFormers r1.5.0's.
  std::optional<SappTime> from_file;
  if (root.contains("sapp_time")) {
    const Json& v = root["sapp_time"];
    if (!v.is_string() || (v.get<std::string>() != "forward" &&
                           v.get<std::string>() != "forward+backward")) {
      return fail("sapp_time",
                  "must be forward or forward+backward; got " + JsonGiven(v));
    }
    from_file = v.get<std::string>() == "forward" ? SappTime::Forward
                                                  : SappTime::ForwardBackward;
  }
  if (units.time_meaning) {
    if (from_file && *from_file != *units.time_meaning) {
      return fail("sapp_time",
                  std::string("must agree with model.sapp_time (") +
                      SappTimeName(*units.time_meaning) + "); got " +
                      SappTimeName(*from_file));
    }
    model.time_meaning = *units.time_meaning;
    model.time_note = std::string("SAPP time read as ") +
                      SappTimeName(model.time_meaning) + " (model.sapp_time)";
  } else if (from_file) {
    model.time_meaning = *from_file;
    model.time_note = std::string("SAPP time read as ") +
                      SappTimeName(model.time_meaning) +
                      " (the file's sapp_time)";
  } else {
    model.time_meaning = SappTime::Forward;
    model.time_note =
        "SAPP time read as forward, backward 2 x time (MindFormers r1.5.0, "
        "since commit 959a2451; set model.sapp_time: forward+backward for "
        "files written before)";
  }
  const bool fwd_only = model.time_meaning == SappTime::Forward;
  if (units.time <= 0) {
    return fail("sapp_units.time",
                "must be given (the duration of one SAPP time unit, e.g. "
                "1ms); got nothing");
  }
  if (units.memory <= 0) {
    return fail("sapp_units.memory",
                "must be given (the size of one SAPP memory unit, e.g. "
                "1MiB); got nothing");
  }
  const double max_time =
      static_cast<double>(config_detail::kMaxDuration) / units.time;
  const double max_memory =
      static_cast<double>(config_detail::kMaxSize) / units.memory;
  auto ns = [&](double x) { return static_cast<Nanos>(std::llround(x * units.time)); };
  auto bytes = [&](double x) {
    return static_cast<Bytes>(std::llround(x * static_cast<double>(units.memory)));
  };
  if (root.contains("stage_const_mem")) {
    // SAPP's per-stage constant (MB in SAPP's files); a decomposition of
    // dry runs may make it negative (its hp_init_demo.yaml gives about
    // -1,896 MB), which SAPP plans with.
    const Json& v = root["stage_const_mem"];
    if (!v.is_number() || !std::isfinite(v.get<double>()) ||
        std::abs(v.get<double>()) > max_memory) {
      return fail("stage_const_mem",
                  "must be a number of memory units within +-" +
                      std::string(config_detail::kMaxSizeText) + "; got " +
                      JsonGiven(v));
    }
    model.stage_constant = bytes(v.get<double>());
  }
  if (!root.contains("layers_description") ||
      !root["layers_description"].is_array() ||
      root["layers_description"].empty()) {
    return fail("layers_description",
                "must be a non-empty list of HEAD/BODY/TAIL entries; got " +
                    (root.contains("layers_description")
                         ? JsonGiven(root["layers_description"])
                         : std::string("nothing")));
  }
  std::vector<Layer> heads, bodies, tails;
  std::int64_t total = 0;  // layers so far
  std::set<std::string> names;
  const Json& list = root["layers_description"];
  // The absolute backward keys of SappModes() in order
  // (Recompute.JSON_TIME_NAME).
  static const char* const kTimeKeys[] = {"select_rec_time", "select_comm_time",
                                          "both_comm_select_time",
                                          "recompute_time"};
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& d = list[i];
    const int at = static_cast<int>(i);
    const std::string path = "layers_description[" + std::to_string(i) + "]";
    auto field_fail = [&](const std::string& key, const std::string& msg) {
      return fail_at(at, key, path + "." + key, msg);
    };
    if (!d.is_object()) {
      return fail_at(at, "", path, "must be an object; got " + JsonGiven(d));
    }
    std::set<std::string> known = {"name", "type", "model_name", "time",
                                   "nb_layer", "memory_parameter",
                                   "memory_activation", "forward_time",
                                   "backward_time", "backward_coef"};
    for (const SappMode& m : SappModes()) {
      known.insert(m.memory_key);
      known.insert(m.coef_key);
    }
    for (const char* k : kTimeKeys) known.insert(k);
    for (const auto& [key, value] : d.items()) {
      if (!known.count(key)) {
        return field_fail(key, "unknown key of a SAPP layer description");
      }
    }
    // A number SAPP reads; absent (or JSON null, which SAPP's .get() also
    // gives as None) leaves `out` alone.
    auto number = [&](const std::string& key, bool required,
                      double& out) -> Status {
      if (!d.contains(key) || d[key].is_null()) {
        if (required) {
          return field_fail(key, "must be given (a number; SAPP reads it "
                                 "unconditionally); got nothing");
        }
        return Status();
      }
      const Json& v = d[key];
      if (!v.is_number() || !std::isfinite(v.get<double>()) ||
          v.get<double>() < 0) {
        return field_fail(key, "must be a non-negative number; got " + JsonGiven(v));
      }
      const bool is_memory = key.rfind("memory_", 0) == 0;
      const double max = is_memory ? max_memory : max_time;
      if (!is_memory && key.find("coef") == std::string::npos &&
          v.get<double>() > max) {
        return field_fail(key, "must be at most " +
                                   std::string(config_detail::kMaxDurationText) +
                                   " (" + JsonGiven(Json(max)) +
                                   " time units); got " + JsonGiven(v));
      }
      if (is_memory && v.get<double>() > max) {
        return field_fail(key, "must be at most " +
                                   std::string(config_detail::kMaxSizeText) +
                                   " (" + JsonGiven(Json(max)) +
                                   " memory units); got " + JsonGiven(v));
      }
      if (key.find("coef") != std::string::npos && v.get<double>() > 1000) {
        return field_fail(key, "must be a coefficient in [0, 1000]; got " +
                                   JsonGiven(v));
      }
      out = v.get<double>();
      return Status();
    };
    if (!d.contains("type") || !d["type"].is_string()) {
      return field_fail("type", "must be HEAD, BODY or TAIL; got " +
                                    (d.contains("type") ? JsonGiven(d["type"]) : "nothing"));
    }
    const std::string type = d["type"].get<std::string>();
    if (type != "HEAD" && type != "BODY" && type != "TAIL") {
      return field_fail("type", "must be HEAD, BODY or TAIL; got " + type);
    }
    if (!d.contains("name") || !d["name"].is_string() ||
        d["name"].get<std::string>().empty()) {
      return field_fail("name", "must be a non-empty string (SAPP requires it); got " +
                                    (d.contains("name") ? JsonGiven(d["name"]) : "nothing"));
    }
    const std::string name = d["name"].get<std::string>();
    double nb = 0;
    PPB_RETURN_IF_ERROR(number("nb_layer", true, nb));
    if (nb < 1 || nb != std::floor(nb) || nb > config_detail::kMaxLayers) {
      return field_fail("nb_layer", "must be a positive integer up to " +
                                        std::to_string(config_detail::kMaxLayers) + "; got " +
                                        JsonGiven(d["nb_layer"]));
    }
    double time = 0, param = 0, act = 0;
    PPB_RETURN_IF_ERROR(number("time", true, time));
    PPB_RETURN_IF_ERROR(number("memory_parameter", true, param));
    PPB_RETURN_IF_ERROR(number("memory_activation", false, act));
    // Layer.compute_internal_time: forward and the backward base B.
    double fwd = fwd_only ? time : time / 3;
    const double base = fwd_only ? 2 * time : 2 * time / 3;
    PPB_RETURN_IF_ERROR(number("forward_time", false, fwd));
    // NONE's backward: backward_time when non-zero, else
    // (1 + backward_coef) x B.
    double coef_none = 0, bwd = 0;
    PPB_RETURN_IF_ERROR(number("backward_coef", false, coef_none));
    PPB_RETURN_IF_ERROR(number("backward_time", false, bwd));
    if (bwd == 0) bwd = (1 + coef_none) * base;
    Layer layer;
    layer.kind = type == "HEAD" ? LayerKind::Embedding
                 : type == "TAIL" ? LayerKind::Head
                                  : LayerKind::Decoder;
    layer.forward = ns(fwd);
    layer.backward_input = ns(bwd);
    if (layer.forward <= 0 || layer.backward_input <= 0) {
      const bool f = layer.forward <= 0;
      const std::string key = f && d.contains("forward_time") ? "forward_time"
                              : !f && d.contains("backward_time") ? "backward_time"
                                                                 : "time";
      return field_fail(key, "must give a forward and a backward time > 0 ns; got " +
                                 JsonGiven(d[key]) + " (x " +
                                 std::to_string(units.time) + " ns)");
    }
    layer.static_memory = bytes(param);
    layer.activation = bytes(act);
    if (type == "BODY" && !(act > 0)) {
      return field_fail("memory_activation",
                        "must be given and > 0 for a BODY entry (SAPP "
                        "considers no recompute only with a positive "
                        "memory_activation, and ppb cannot forbid it); got " +
                            (d.contains("memory_activation")
                                 ? JsonGiven(d["memory_activation"])
                                 : std::string("nothing")));
    }
    const std::vector<SappMode>& modes = SappModes();
    for (size_t k = 0; k < modes.size(); ++k) {
      const SappMode& m = modes[k];
      double kept = 0, coef = m.default_coef, abs_time = 0;
      PPB_RETURN_IF_ERROR(number(m.memory_key, false, kept));
      PPB_RETURN_IF_ERROR(number(m.coef_key, false, coef));
      PPB_RETURN_IF_ERROR(number(kTimeKeys[k], false, abs_time));
      // Considered only with a positive memory (find_recompute_considered).
      if (!(kept > 0)) continue;
      if (kept > act) {
        return field_fail(m.memory_key,
                          "must be <= memory_activation (" +
                              JsonGiven(d.value("memory_activation", Json(0))) +
                              "): a recompute mode keeps less; got " +
                              JsonGiven(d[m.memory_key]));
      }
      const double backward = abs_time > 0 ? abs_time : (1 + coef) * base;
      const Nanos extra = ns(backward) - layer.backward_input;
      if (extra < 0) {
        const std::string key = abs_time > 0            ? kTimeKeys[k]
                                : d.contains(m.coef_key) ? m.coef_key
                                                         : m.memory_key;
        return field_fail(key,
                          "must give a backward with recompute no shorter "
                          "than without (" + JsonGiven(Json(bwd)) +
                              " time units); got " + JsonGiven(Json(backward)));
      }
      layer.recompute.push_back({m.name, bytes(kept), extra});
    }
    const int n = static_cast<int>(nb);
    // The model's layers in all within the config's limit, before they
    // are built (each entry alone is within it).
    total += n;
    if (total > config_detail::kMaxLayers) {
      return field_fail("nb_layer",
                        "must keep the model at most " + std::to_string(config_detail::kMaxLayers) +
                      " layers in all; got " + std::to_string(n) + " more after " +
                      std::to_string(total - n));
    }
    std::vector<Layer>& dest = type == "HEAD" ? heads : type == "TAIL" ? tails : bodies;
    for (int k = 0; k < n; ++k) {
      Layer l = layer;
      l.name = n > 1 ? name + "." + std::to_string(k) : name;
      if (!names.insert(l.name).second) {
        return field_fail("name", "must be unique; got " + l.name + " again");
      }
      dest.push_back(std::move(l));
    }
  }
  if (bodies.empty()) {
    return fail("layers_description", "must have a BODY entry; got none");
  }
  model.layers = std::move(heads);
  model.layers.insert(model.layers.end(), bodies.begin(), bodies.end());
  model.layers.insert(model.layers.end(), tails.begin(), tails.end());
  return model;
}

}  // namespace

Result<SappModel> ParseSappModel(std::string_view text,
                                 std::string_view filename,
                                 const SappUnits& units) {
  try {
    return ParseLayers(text, filename, units);
  } catch (const Json::exception& e) {
    return Error{"", std::string(filename) +
                         ": must be a readable SAPP layer description; got "
                         "an error (" + std::string(e.what()) + ")"};
  }
}

Result<SappModel> LoadSappModel(const std::string& path,
                                const SappUnits& units) {
  std::ifstream in(path);
  if (!in) return Error{"", path + ": cannot be read"};
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSappModel(ss.str(), path, units);
}

Result<std::vector<Layer>> ParseSappLayers(std::string_view text,
                                           std::string_view filename,
                                           const SappUnits& units) {
  Result<SappModel> m = ParseSappModel(text, filename, units);
  if (!m.ok()) return m.error();
  return std::move(m->layers);
}

Result<std::vector<Layer>> LoadSappLayers(const std::string& path,
                                          const SappUnits& units) {
  Result<SappModel> m = LoadSappModel(path, units);
  if (!m.ok()) return m.error();
  return std::move(m->layers);
}

}  // namespace ppb
