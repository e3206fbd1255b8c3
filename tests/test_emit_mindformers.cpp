// MindFormers' form read the way MindFormers reads it: a re-implementation
// of LayerSetting's offset and recompute steps (mindformers/models/utils.py,
// independent of ppb's reader in apps/output/emit_mindformers.cpp) applied
// to the emitted YAML, compared with ppb's strategy.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "app_helpers.h"
#include "apps/output/emit.h"

namespace ppb {
namespace {

RunConfig Load(const std::string& text) {
  Result<RunConfig> c = test::Parse(text);
  if (!c.ok()) FAIL(c.error().message);
  return *c;
}

Result<Emission> EmitFor(Framework f, const RunConfig& config) {
  Result<PreparedRun> run = Prepare(config);
  if (!run.ok()) FAIL(run.error().message);
  return Emit(f, config, run->program);
}

// What MindFormers' LayerSetting (mindformers/models/utils.py,
// mindspore-lab/mindformers at 0afce880) makes of a YAML fragment, written
// here from its code independently of ppb's reader: per decoder layer
// (num_layers of them, in order) its global stage (interleave id * p +
// pipeline id) and its recompute ("full", "both_comm_select", "selective",
// "select_comm" or ""). Steps as LayerSetting takes them: v =
// pp_interleave_num only when parallel.pipeline_config.pipeline_interleave
// is on; offset checked (shape[-1] = p, shape[-2] = v, sum = num_layers
// mod p*v) then broadcast to [v][p]; layer_list = num_layers // (p*v) +
// offset; pp_ids by searchsorted over the flattened cumulative counts;
// interleave_ids = first row whose cumulative count passes the layer;
// _format_recompute_list for each list (bool, list of p dealt over the
// chunks, [v][p] capped); _check_layer_rule "0 <= layer - stage start <
// count"; the select lists only where full recompute is off. A check
// LayerSetting raises is a FAIL naming it.
struct LayerSettingReading {
  std::vector<int> stage;
  std::vector<std::string> mode;
};
LayerSettingReading MindFormersLayerSetting(const std::string& text) {
  const YAML::Node root = YAML::Load(text);
  const YAML::Node model = root["model"]["model_config"];
  const int pp = root["parallel_config"]["pipeline_stage"].as<int>();
  bool on = false;
  if (root["parallel"] && root["parallel"]["pipeline_config"]) {
    const YAML::Node flag = root["parallel"]["pipeline_config"]["pipeline_interleave"];
    on = flag && flag.as<bool>();
  }
  const int v = on && model["pp_interleave_num"] ? model["pp_interleave_num"].as<int>() : 1;
  const int num_layers = model["num_layers"].as<int>();
  // offset as numpy sees it.
  std::vector<std::vector<int>> off(static_cast<size_t>(v), std::vector<int>(pp, 0));
  const YAML::Node o = model["offset"];
  int sum = 0;
  if (o && o.IsScalar()) {
    for (auto& row : off) row.assign(pp, o.as<int>());
    sum = o.as<int>();
  } else if (o && o.IsSequence() && o.size() > 0 && o[0].IsSequence()) {
    if (static_cast<int>(o.size()) != v) FAIL("offset.shape[-2] should equal to pp_interleave_num");
    for (int c = 0; c < v; ++c) {
      if (static_cast<int>(o[c].size()) != pp) FAIL("offset.shape[-1] should equal to pp");
      for (int r = 0; r < pp; ++r) sum += off[c][r] = o[c][r].as<int>();
    }
  } else if (o) {
    if (static_cast<int>(o.size()) != pp) FAIL("offset.shape[-1] should equal to pp");
    for (int r = 0; r < pp; ++r) {
      sum += o[r].as<int>();
      for (int c = 0; c < v; ++c) off[c][r] = o[r].as<int>();
    }
  }
  if (sum != num_layers % (pp * v)) FAIL("The sum of offset should equal to remainder");
  std::vector<std::vector<int>> layer_list(off);
  for (auto& row : layer_list) {
    for (int& x : row) x += num_layers / (pp * v);
  }
  // layer_accu[c][r]: layers up to and including stage (c, r).
  std::vector<std::vector<int>> accu(layer_list);
  int before = 0;
  for (int c = 0; c < v; ++c) {
    int run = before;
    for (int r = 0; r < pp; ++r) accu[c][r] = run += layer_list[c][r];
    before = run;
  }
  // layer_accu_mod[c][r]: first layer of stage (c, r).
  auto start = [&](int c, int r) { return r > 0 ? accu[c][r - 1] : c > 0 ? accu[c - 1][pp - 1] : 0; };
  auto format = [&](const YAML::Node& n) {
    std::vector<std::vector<int>> out(static_cast<size_t>(v), std::vector<int>(pp, 0));
    auto count = [](const YAML::Node& x, int all) {
      const std::string t = x.Scalar();
      return t == "true" ? all : t == "false" ? 0 : x.as<int>();
    };
    if (!n || (n.IsScalar() && n.Scalar() == "false")) return out;
    if (n.IsScalar() && n.Scalar() == "true") return layer_list;
    if (n[0].IsSequence()) {
      for (int c = 0; c < v; ++c) {
        for (int r = 0; r < pp; ++r) {
          out[c][r] = std::min(count(n[c][r], layer_list[c][r]), layer_list[c][r]);
        }
      }
      return out;
    }
    for (int r = 0; r < pp; ++r) {
      int by_stage = 0;
      for (int c = 0; c < v; ++c) by_stage += layer_list[c][r];
      int num = std::min(count(n[r], 2147483647), by_stage);
      while (num > 0) {
        for (int c = 0; c < v && num > 0; ++c) {
          if (out[c][r] < layer_list[c][r]) {
            ++out[c][r];
            --num;
          }
        }
      }
    }
    return out;
  };
  const YAML::Node rc = root["recompute_config"];
  const auto full = format(rc["recompute"]);
  const auto sel = format(rc["select_recompute"]);
  const auto comm = format(rc["select_comm_recompute"]);
  const bool full_on = rc["recompute"] && !(rc["recompute"].IsScalar() &&
                                            rc["recompute"].Scalar() == "false");
  LayerSettingReading out;
  std::vector<int> flat;
  for (const auto& row : accu) flat.insert(flat.end(), row.begin(), row.end());
  for (int i = 0; i < num_layers; ++i) {
    const int k = static_cast<int>(std::lower_bound(flat.begin(), flat.end(), i + 1) - flat.begin());
    const int pp_id = k % pp;
    int v_id = 0;
    while (v_id < v && std::none_of(accu[v_id].begin(), accu[v_id].end(),
                                    [&](int a) { return i < a; })) {
      ++v_id;
    }
    const int at = i - start(v_id, pp_id);
    std::string mode;
    if (full_on && at >= 0 && at < full[v_id][pp_id]) {
      mode = "full";
    } else {
      const bool s = at >= 0 && at < sel[v_id][pp_id], c = at >= 0 && at < comm[v_id][pp_id];
      mode = s && c ? "both_comm_select" : s ? "selective" : c ? "select_comm" : "";
    }
    out.stage.push_back(v_id * pp + pp_id);
    out.mode.push_back(mode);
  }
  return out;
}

// A model with MindFormers' four recompute modes on its decoder layers.
std::string MindFormersModel(int decoders) {
  return "model:\n"
         "  name: mf\n"
         "  layers:\n"
         "    - {name: embedding, kind: embedding, forward: 1ms, backward: 2ms}\n"
         "    - name: decoder\n"
         "      repeat: " +
         std::to_string(decoders) +
         "\n"
         "      forward: 1ms\n"
         "      backward: 2ms\n"
         "      recompute:\n"
         "        full: {activation: 0B, time: 1ms}\n"
         "        selective: {activation: 0B, time: 0.1ms}\n"
         "        select_comm: {activation: 0B, time: 0.1ms}\n"
         "        both_comm_select: {activation: 0B, time: 0.2ms}\n"
         "    - {name: head, kind: head, forward: 1ms, backward: 2ms}\n"
         "cluster: {devices: {memory: 80GiB}}\n";
}

// Checks `config`'s MindFormers form against LayerSetting's reading: every
// decoder layer on its stage, and its recompute where the form expresses it
// (none where it says it does not).
void CheckMindFormersLayerSetting(const RunConfig& config) {
  Result<Emission> e = EmitFor(Framework::MindFormers, config);
  if (!e.ok()) FAIL(e.error().message);
  INFO(e->text);
  const LayerSettingReading got = MindFormersLayerSetting(e->text);
  std::vector<int> stage;
  std::vector<std::string> mode;
  const Strategy& s = config.strategy;
  size_t i = 0;
  for (size_t st = 0; st < s.layers_per_stage.size(); ++st) {
    for (int k = 0; k < s.layers_per_stage[st]; ++k, ++i) {
      const Layer& layer = config.layers[i];
      if (layer.kind != LayerKind::Decoder) continue;
      stage.push_back(static_cast<int>(st));
      const int r = s.recompute[i];
      mode.push_back(r == 0 || !e->recompute_expressed ? "" : layer.recompute[r - 1].name);
    }
  }
  CHECK(got.stage == stage);
  CHECK(got.mode == mode);
}

}  // namespace

// Every MindFormers form, read by LayerSetting's own steps (MindFormersLayerSetting), puts
// each decoder layer on ppb's stage with ppb's recompute: random uneven
// splits for p = 1..4 and v = 1..3 (v > 1 only with pipeline_interleave on,
// which the form sets), recompute in MindFormers' first-N order (full, both
// select lists, one) or in any order (then the form says it cannot and sets
// none). Seed fixed and shown.
TEST_CASE("emit MindFormers: LayerSetting reads every form as ppb's strategy") {
  const std::uint64_t seed = 20261130;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* const modes[] = {"full", "both_comm_select", "selective", "select_comm"};
  int expressed = 0, not_expressed = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const int p = pick(1, 4), v = pick(1, 3), stages = p * v;
    const int decoders = stages + pick(0, 9);
    std::string pipeline = "pipeline: {stages: " + std::to_string(p) + ", microbatches: " +
                           std::to_string(2 * p);
    if (v > 1) pipeline += ", virtual_stages: " + std::to_string(v) + ", schedule: interleaved";
    RunConfig config = Load(MindFormersModel(decoders) + pipeline + "}\n");
    INFO("trial " << trial << " p=" << p << " v=" << v << " decoders=" << decoders);
    // Body layers per stage: one each, the rest dealt at random.
    std::vector<int> body;
    Strategy& s = config.strategy;
    s = test::DealtSplit(rng, stages, decoders, config.layers.size(), &body);
    const bool ordered = pick(0, 3) != 0;
    size_t i = 1;
    for (int st = 0; st < stages; ++st) {
      const int n = body[static_cast<size_t>(st)];
      int a = pick(0, n), b = pick(0, n - a), c = pick(0, n - a - b);
      const int one = pick(2, 3);
      for (int k = 0; k < n; ++k, ++i) {
        int m = -1;
        if (ordered) {
          m = k < a ? 0 : k < a + b ? 1 : k < a + b + c ? one : -1;
        } else {
          m = pick(-1, 3);
        }
        if (m < 0) continue;
        const std::vector<RecomputeOption>& offered = config.layers[i].recompute;
        for (size_t o = 0; o < offered.size(); ++o) {
          if (offered[o].name == modes[m]) s.recompute[i] = static_cast<std::uint8_t>(o + 1);
        }
        REQUIRE(s.recompute[i] != 0);
      }
    }
    CheckMindFormersLayerSetting(config);
    Result<Emission> e = EmitFor(Framework::MindFormers, config);
    REQUIRE(e.ok());
    (e->recompute_expressed ? expressed : not_expressed) += 1;
    if (v > 1) CHECK_THAT(e->text, Catch::Contains("    pipeline_interleave: true\n"));
  }
  // Both paths taken.
  CHECK(expressed > 0);
  CHECK(not_expressed > 0);
}

}  // namespace ppb
