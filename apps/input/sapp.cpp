// SAPP input readers (apps/input/sapp.h).
#include "apps/input/sapp.h"

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

#define SAPP_TRY(expr)                                  \
  do {                                                  \
    if (auto sapp_status_ = (expr); !sapp_status_.ok()) \
      return sapp_status_.error();                      \
  } while (0)

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

namespace {

// Long (about 190 lines): one pass over SAPP's JSON that checks each key
// where it reads it. nlohmann's exceptions stop at ParseSappLayers.
Result<std::vector<Layer>> ParseLayers(std::string_view text,
                                       std::string_view filename,
                                       const SappUnits& units) {
  const std::string file(filename);
  auto fail = [&](const std::string& key, const std::string& msg) {
    return Error{key, file + ": " + key + ": " + msg};
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
        "layers_description"};
    if (!known.count(key)) {
      return fail(key,
                  "unknown key; expected one of name, pre_defined_layer, "
                  "auto_partition_layer, layers_description");
    }
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
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& d = list[i];
    const std::string path = "layers_description[" + std::to_string(i) + "]";
    if (!d.is_object()) return fail(path, "must be an object; got " + JsonGiven(d));
    std::set<std::string> known = {"name", "type", "model_name", "time",
                                   "nb_layer", "memory_parameter",
                                   "memory_activation", "forward_time",
                                   "backward_time", "backward_coef"};
    for (const SappMode& m : SappModes()) {
      known.insert(m.memory_key);
      known.insert(m.coef_key);
    }
    // SAPP's per-mode backward times (Recompute.JSON_TIME_NAME) are derived
    // from the coefficients; accepted and ignored.
    for (const char* k : {"select_rec_time", "select_comm_time",
                          "both_comm_select_time", "recompute_time"}) {
      known.insert(k);
    }
    for (const auto& [key, value] : d.items()) {
      if (!known.count(key)) {
        return fail(path + "." + key, "unknown key of a SAPP layer description");
      }
    }
    auto number = [&](const std::string& key, bool required,
                      double& out) -> Status {
      if (!d.contains(key)) {
        if (required) return fail(path + "." + key, "must be given (a number); got nothing");
        return Status();
      }
      const Json& v = d[key];
      if (!v.is_number() || !std::isfinite(v.get<double>()) ||
          v.get<double>() < 0) {
        return fail(path + "." + key,
                    "must be a non-negative number; got " + JsonGiven(v));
      }
      out = v.get<double>();
      return Status();
    };
    if (!d.contains("type") || !d["type"].is_string()) {
      return fail(path + ".type", "must be HEAD, BODY or TAIL; got " +
                                      (d.contains("type") ? JsonGiven(d["type"]) : "nothing"));
    }
    const std::string type = d["type"].get<std::string>();
    if (type != "HEAD" && type != "BODY" && type != "TAIL") {
      return fail(path + ".type", "must be HEAD, BODY or TAIL; got " + type);
    }
    std::string name = type == "HEAD" ? "embedding" : type == "TAIL" ? "head" : "decoder";
    if (d.contains("name")) {
      if (!d["name"].is_string() || d["name"].get<std::string>().empty()) {
        return fail(path + ".name", "must be a non-empty string; got " + JsonGiven(d["name"]));
      }
      name = d["name"].get<std::string>();
    }
    double nb = 1;
    SAPP_TRY(number("nb_layer", false, nb));
    if (nb < 1 || nb != std::floor(nb) || nb > config_detail::kMaxLayers) {
      return fail(path + ".nb_layer", "must be a positive integer up to " +
                                          std::to_string(config_detail::kMaxLayers) + "; got " +
                                          JsonGiven(d["nb_layer"]));
    }
    double time = 0, fwd = -1, bwd = -1, param = 0, act = 0;
    const bool split = d.contains("forward_time") || d.contains("backward_time");
    SAPP_TRY(number("time", !split, time));
    if (split) {
      SAPP_TRY(number("forward_time", true, fwd));
      SAPP_TRY(number("backward_time", true, bwd));
    } else {
      fwd = time / 3;
      bwd = time - fwd;
    }
    SAPP_TRY(number("memory_parameter", true, param));
    SAPP_TRY(number("memory_activation", false, act));
    double ignored = 0;
    SAPP_TRY(number("backward_coef", false, ignored));
    const bool has_memory = d.contains("memory_parameter") ||
                            d.contains("memory_activation");
    if (has_memory && units.memory <= 0) {
      return fail("sapp_units.memory",
                  "must be given (the size of one SAPP memory unit, e.g. "
                  "1MiB); got nothing");
    }
    if (units.time <= 0) {
      return fail("sapp_units.time",
                  "must be given (the duration of one SAPP time unit, e.g. "
                  "1ms); got nothing");
    }
    // Each value within the config's bounds (config_reader.h), so that the
    // conversions below and the simulator's sums stay in range.
    const double max_time =
        static_cast<double>(config_detail::kMaxDuration) / units.time;
    const double max_memory =
        units.memory > 0
            ? static_cast<double>(config_detail::kMaxSize) / units.memory
            : 0;
    for (const char* key : {"time", "forward_time", "backward_time"}) {
      if (d.contains(key) && d[key].is_number() &&
          d[key].get<double>() > max_time) {
        return fail(path + "." + key,
                    "must be at most " + std::string(config_detail::kMaxDurationText) + " (" +
                        JsonGiven(Json(max_time)) +
                        " time units); got " + JsonGiven(d[key]));
      }
    }
    for (const auto& [key, value] : d.items()) {
      if (key.rfind("memory_", 0) == 0 && value.is_number() &&
          value.get<double>() > max_memory) {
        return fail(path + "." + key,
                    "must be at most " + std::string(config_detail::kMaxSizeText) + " (" +
                        JsonGiven(Json(max_memory)) +
                        " memory units); got " + JsonGiven(value));
      }
    }
    auto ns = [&](double x) { return static_cast<Nanos>(std::llround(x * units.time)); };
    auto bytes = [&](double x) {
      return static_cast<Bytes>(std::llround(x * static_cast<double>(units.memory)));
    };
    Layer layer;
    layer.kind = type == "HEAD" ? LayerKind::Embedding
                 : type == "TAIL" ? LayerKind::Head
                                  : LayerKind::Decoder;
    layer.forward = ns(fwd);
    layer.backward_input = ns(bwd);
    if (layer.forward <= 0 || layer.backward_input <= 0) {
      return fail(path + (split ? ".forward_time" : ".time"),
                  "must give a forward and a backward time > 0 ns; got " +
                      JsonGiven(split ? d["forward_time"] : d["time"]) + " (x " +
                      std::to_string(units.time) + " ns)");
    }
    layer.static_memory = bytes(param);
    layer.activation = bytes(act);
    for (const SappMode& m : SappModes()) {
      if (!d.contains(m.memory_key)) continue;
      double kept = 0, coef = m.default_coef;
      SAPP_TRY(number(m.memory_key, true, kept));
      SAPP_TRY(number(m.coef_key, false, coef));
      if (kept > act) {
        return fail(path + "." + m.memory_key,
                    "must be <= memory_activation (" + JsonGiven(d.value("memory_activation", Json(0))) +
                        "): a recompute mode keeps less; got " + JsonGiven(d[m.memory_key]));
      }
      layer.recompute.push_back(
          {m.name, bytes(kept), static_cast<Nanos>(std::llround(coef * layer.backward_input))});
    }
    const int n = static_cast<int>(nb);
    // The model's layers in all within the config's limit, before they
    // are built (each entry alone is within it).
    total += n;
    if (total > config_detail::kMaxLayers) {
      return fail(path + ".nb_layer",
                  "must keep the model at most " + std::to_string(config_detail::kMaxLayers) +
                      " layers in all; got " + std::to_string(n) + " more after " +
                      std::to_string(total - n));
    }
    std::vector<Layer>& dest = type == "HEAD" ? heads : type == "TAIL" ? tails : bodies;
    for (int k = 0; k < n; ++k) {
      Layer l = layer;
      l.name = n > 1 ? name + "." + std::to_string(k) : name;
      if (!names.insert(l.name).second) {
        return fail(path + ".name", "must be unique; got " + l.name + " again");
      }
      dest.push_back(std::move(l));
    }
  }
  if (bodies.empty()) {
    return fail("layers_description", "must have a BODY entry; got none");
  }
  std::vector<Layer> layers = std::move(heads);
  layers.insert(layers.end(), bodies.begin(), bodies.end());
  layers.insert(layers.end(), tails.begin(), tails.end());
  return layers;
}

}  // namespace

Result<std::vector<Layer>> ParseSappLayers(std::string_view text,
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

Result<std::vector<Layer>> LoadSappLayers(const std::string& path,
                                          const SappUnits& units) {
  std::ifstream in(path);
  if (!in) return Error{"", path + ": cannot be read"};
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSappLayers(ss.str(), path, units);
}

}  // namespace ppb
