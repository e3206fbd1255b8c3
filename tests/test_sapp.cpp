// SAPP's layer JSON read the way MindFormers r1.5.0's SAPP reads it
// (apps/input/sapp.h; toolkit/pipeline_balance utils/layer.py and
// recompute.py): each key a file uses against SAPP's documented semantics,
// and the refusals with their messages.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "apps/input/config.h"
#include "apps/input/sapp.h"
#include "tests/app_helpers.h"

namespace ppb {
namespace {

const std::string kData = PPB_TEST_DATA_DIR;
constexpr Nanos kMs = 1000000;
constexpr Bytes kMiB = 1048576;
const SappUnits kUnits{kMs, kMiB, std::nullopt};

// One BODY entry with `extra` keys, between a HEAD and a TAIL; the BODY
// opens on line 3, its time and `extra` are on line 4.
std::string File(const std::string& extra, const std::string& top = "") {
  return "{" + top +
         "\"layers_description\": [\n"
         "  {\"name\": \"h\", \"type\": \"HEAD\", \"nb_layer\": 1, \"time\": 10,"
         " \"memory_parameter\": 100},\n"
         "  {\"name\": \"b\", \"type\": \"BODY\", \"nb_layer\": 2,\n"
         "   \"time\": 100, \"memory_parameter\": 50" +
         extra +
         "},\n"
         "  {\"name\": \"t\", \"type\": \"TAIL\", \"nb_layer\": 1, \"time\": 20,"
         " \"memory_parameter\": 200}]}\n";
}

SappModel Read(const std::string& text, const SappUnits& units = kUnits) {
  Result<SappModel> m = ParseSappModel(text, "l.json", units);
  if (!m.ok()) FAIL(m.error().message);
  return std::move(*m);
}

std::string Refusal(const std::string& text, const SappUnits& units = kUnits) {
  Result<SappModel> m = ParseSappModel(text, "l.json", units);
  if (m.ok()) FAIL("expected a refusal:\n" << text);
  return m.error().message;
}

const RecomputeOption* Mode(const Layer& l, const std::string& name) {
  for (const RecomputeOption& r : l.recompute) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST_CASE("SAPP time: forward (r1.5.0) or forward+backward (before 959a2451)",
          "[sapp]") {
  const std::string f = File(", \"memory_activation\": 40");
  // Default: MindFormers r1.5.0, f = time, backward 2 x time.
  const SappModel fwd = Read(f);
  REQUIRE(fwd.layers.size() == 4);
  CHECK(fwd.time_meaning == SappTime::Forward);
  CHECK(fwd.time_note.rfind("SAPP time read as forward, backward 2 x time (MindFormers r1.5.0", 0) == 0);
  CHECK(fwd.layers[1].forward == 100 * kMs);
  CHECK(fwd.layers[1].backward_input == 200 * kMs);
  // HEAD and TAIL: forward t, backward 2t.
  CHECK(fwd.layers[0].forward == 10 * kMs);
  CHECK(fwd.layers[0].backward_input == 20 * kMs);
  CHECK(fwd.layers[3].backward_input == 40 * kMs);
  // Explicit forward+backward: f = time / 3, backward 2 time / 3.
  SappUnits old = kUnits;
  old.time_meaning = SappTime::ForwardBackward;
  const SappModel fb = Read(f, old);
  CHECK(fb.time_note == "SAPP time read as forward+backward (model.sapp_time)");
  CHECK(fb.layers[1].forward == 33333333);
  CHECK(fb.layers[1].backward_input == 66666667);
  // The file may say it (a key SAPP ignores).
  const SappModel file_says = Read(File(", \"memory_activation\": 40",
                                        "\"sapp_time\": \"forward+backward\", "));
  CHECK(file_says.time_meaning == SappTime::ForwardBackward);
  CHECK(file_says.time_note == "SAPP time read as forward+backward (the file's sapp_time)");
  SappUnits fwd_units = kUnits;
  fwd_units.time_meaning = SappTime::Forward;
  CHECK(Refusal(File(", \"memory_activation\": 40", "\"sapp_time\": \"forward+backward\", "),
                fwd_units) ==
        "l.json:1: sapp_time: must agree with model.sapp_time (forward); got forward+backward");
  CHECK(Refusal(File(", \"memory_activation\": 40", "\"sapp_time\": \"fwd\", ")) ==
        "l.json:1: sapp_time: must be forward or forward+backward; got \"fwd\"");
}

TEST_CASE("SAPP backward: backward_coef, backward_time and forward_time",
          "[sapp]") {
  // NONE backward = (1 + backward_coef) x B; the modes' backward is
  // (1 + coef) x B too, so a mode's extra time is (coef - backward_coef) B.
  const SappModel c = Read(File(", \"memory_activation\": 40, \"backward_coef\": 0.02, "
                                "\"memory_select_rec\": 30"));
  const Layer& b = c.layers[1];
  CHECK(b.backward_input == 204 * kMs);  // 1.02 x 200 ms
  REQUIRE(Mode(b, "selective") != nullptr);
  CHECK(Mode(b, "selective")->extra_time == 4 * kMs);  // (0.04 - 0.02) x 200
  // Absolute times: forward_time, backward_time and a mode's own backward.
  const SappModel abs = Read(File(
      ", \"memory_activation\": 40, \"forward_time\": 90, \"backward_time\": 170, "
      "\"memory_recompute\": 5, \"recompute_time\": 260, \"memory_select_comm\": 20, "
      "\"select_comm_coef\": 0.1"));
  const Layer& a = abs.layers[1];
  CHECK(a.forward == 90 * kMs);
  CHECK(a.backward_input == 170 * kMs);
  CHECK(Mode(a, "full")->extra_time == 90 * kMs);         // 260 - 170
  CHECK(Mode(a, "select_comm")->extra_time == 50 * kMs);  // 1.1 x 200 - 170
  CHECK(Mode(a, "full")->retained_activation == 5 * kMiB);
  // A mode's backward shorter than no recompute: refused.
  CHECK(Refusal(File(", \"memory_activation\": 40, \"backward_time\": 300, "
                     "\"memory_select_rec\": 30")) ==
        "l.json:4: layers_description[1].memory_select_rec: must give a backward with "
        "recompute no shorter than without (300.0 time units); got 208.0");
  // Defaults per SAPP's Recompute.DEFAULT_COEF, of the backward 200 ms.
  const SappModel d = Read(File(
      ", \"memory_activation\": 40, \"memory_select_rec\": 30, \"memory_select_comm\": 20, "
      "\"memory_both_comm_select\": 10, \"memory_recompute\": 5"));
  CHECK(Mode(d.layers[1], "selective")->extra_time == 8 * kMs);
  CHECK(Mode(d.layers[1], "select_comm")->extra_time == 25 * kMs);
  CHECK(Mode(d.layers[1], "both_comm_select")->extra_time == 33 * kMs);
  CHECK(Mode(d.layers[1], "full")->extra_time == 100 * kMs);
}

TEST_CASE("SAPP memory: a variant counts only with memory > 0", "[sapp]") {
  // memory 0: SAPP does not consider the mode; neither does ppb.
  const SappModel z = Read(File(", \"memory_activation\": 40, \"memory_select_rec\": 0, "
                                "\"memory_recompute\": 5, \"select_rec_coef\": 0.3"));
  REQUIRE(z.layers[1].recompute.size() == 1);
  CHECK(z.layers[1].recompute[0].name == "full");
  // A BODY without (or with 0) memory_activation: refused with its line.
  CHECK(Refusal(File("")) ==
        "l.json:3: layers_description[1].memory_activation: must be given and > 0 for a "
        "BODY entry (SAPP considers no recompute only with a positive memory_activation, "
        "and ppb cannot forbid it); got nothing");
  const std::string zero = Refusal(File(",\n   \"memory_activation\": 0"));
  CHECK(zero.rfind("l.json:5: layers_description[1].memory_activation: must be given and > 0", 0) == 0);
  CHECK(zero.find("; got 0") != std::string::npos);
}

TEST_CASE("SAPP required keys and stage_const_mem", "[sapp]") {
  // name, nb_layer and time are read with layer_data["..."]: required.
  const std::string no_time =
      "{\"layers_description\": [\n"
      "  {\"name\": \"b\", \"type\": \"BODY\", \"nb_layer\": 1, \"memory_parameter\": 1,\n"
      "   \"memory_activation\": 1}]}";
  CHECK(Refusal(no_time) ==
        "l.json:2: layers_description[0].time: must be given (a number; SAPP reads it "
        "unconditionally); got nothing");
  const std::string no_name =
      "{\"layers_description\": [\n"
      "  {\"type\": \"BODY\", \"nb_layer\": 1, \"time\": 1, \"memory_parameter\": 1,\n"
      "   \"memory_activation\": 1}]}";
  CHECK(Refusal(no_name) ==
        "l.json:2: layers_description[0].name: must be a non-empty string (SAPP requires "
        "it); got nothing");
  // stage_const_mem: read (it was an unknown key), negative allowed.
  const SappModel c = Read(File(", \"memory_activation\": 40", "\"stage_const_mem\": -1897, "));
  CHECK(c.stage_constant == -1897 * kMiB);
  CHECK(Refusal(File(", \"memory_activation\": 40", "\"stage_const_mem\": \"x\", ")).rfind(
            "l.json:1: stage_const_mem: must be a number of memory units", 0) == 0);
}

TEST_CASE("config: model.sapp_time and stage_const_mem reach the run", "[sapp]") {
  const std::string json = "ppb_test_sapp_const.json";
  std::ofstream(json) << File(", \"memory_activation\": 40", "\"stage_const_mem\": 1024, ");
  const std::string head = "model: {sapp_layers: " + json +
                           ", sapp_units: {time: 1ms, memory: 1MiB}";
  const std::string rest =
      "}\ncluster: {devices: {memory: 8GiB}}\npipeline: {stages: 2, microbatches: 4}\n";
  Result<RunConfig> c = ParseConfig(head + rest, "run.yaml", {});
  REQUIRE(c.ok());
  // 1024 MiB per stage: every device has 7 GiB left for the layers.
  CHECK(c->cluster.devices[0].memory_capacity == 7LL << 30);
  CHECK(c->cluster.devices[1].memory_capacity == 7LL << 30);
  REQUIRE(c->input_notes.size() == 2);
  CHECK(c->input_notes[1] ==
        "SAPP stage_const_mem 1024 MiB per stage: taken off every device's memory capacity");
  Result<RunConfig> old = ParseConfig(head + ", sapp_time: forward+backward" + rest, "run.yaml", {});
  REQUIRE(old.ok());
  CHECK(old->layers[1].forward == 33333333);
  const std::string bad = test::ParseError(head + ", sapp_time: total" + rest);
  CHECK(bad == "run.yaml:1: model.sapp_time: must be one of forward, forward+backward; got total");
  // Simulate prints the reading.
  const std::string cfg = "ppb_test_sapp_const.yaml";
  std::ofstream(cfg) << head + rest;
  test::CliRun run = test::Cli({"--config", cfg});
  CHECK(run.status == 0);
  CHECK(run.out.find("input: SAPP time read as forward, backward 2 x time") != std::string::npos);
  CHECK(run.out.find("input: SAPP stage_const_mem 1024 MiB") != std::string::npos);
  std::remove(cfg.c_str());
  std::remove(json.c_str());
}

TEST_CASE("SAPP example files: layers, memories and times as SAPP reads them",
          "[sapp]") {
  // mf_sim_vpp3.json: LLamaDecodeLayer time 180, backward_coef 0, its own
  // coefficients; 192 layers. SAPP r1.5.0: f = 180, B = 360, recompute
  // backward (1 + coef) x 360.
  Result<SappModel> m = LoadSappModel(kData + "/sapp/mf_sim_vpp3.json", kUnits);
  REQUIRE(m.ok());
  REQUIRE(m->layers.size() == 194);
  const Layer& b = m->layers[1];
  CHECK(b.forward == 180 * kMs);
  CHECK(b.backward_input == 360 * kMs);
  CHECK(b.static_memory == 1583 * kMiB);
  CHECK(b.activation == 826 * kMiB);
  REQUIRE(b.recompute.size() == 4);
  CHECK(Mode(b, "selective")->extra_time == 45 * kMs);          // 0.125 x 360
  CHECK(Mode(b, "select_comm")->extra_time == 45 * kMs);        // 0.125 x 360
  CHECK(Mode(b, "both_comm_select")->extra_time == 59400000);   // 0.165 x 360
  CHECK(Mode(b, "full")->extra_time == 180 * kMs);              // 0.5 x 360
  CHECK(Mode(b, "full")->retained_activation == 32 * kMiB);
  // mf_test_vpp1.json: coefficients for modes without memory are unused;
  // only full (memory_recompute 32) is offered.
  Result<SappModel> t = LoadSappModel(kData + "/sapp/mf_test_vpp1.json", kUnits);
  REQUIRE(t.ok());
  REQUIRE(t->layers[1].recompute.size() == 1);
  CHECK(t->layers[1].recompute[0].name == "full");
}

}  // namespace
}  // namespace ppb
