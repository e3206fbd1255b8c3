// torchtitan's form read the way torchtitan main reads it: a
// re-implementation of the Trainer.Config fields ppb writes, with their
// types and the checks main applies (pytorch/torchtitan at b5bcd76c,
// 2026-08-21: torchtitan/config/configs.py TrainingConfig and
// ParallelismConfig, torchtitan/trainer.py Trainer.Config and its
// __post_init__, torchtitan/distributed/activation_checkpoint.py,
// torchtitan/distributed/pipeline_parallel.py), written here from that code
// independently of ppb's reader in apps/output/emit_torchtitan.cpp. The
// emitted text is executed line by line as Python would (imports, then
// attribute assignments on a Trainer.Config whose dataclasses have slots,
// so an unknown field is an AttributeError), then validated and turned back
// into a split, a recompute and a micro-batch count, which must be ppb's.
// The next rename in torchtitan's config is meant to fail here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "app_helpers.h"
#include "apps/output/emit.h"
#include "apps/output/output.h"
#include "apps/input/torchtitan_models.h"

namespace ppb {
namespace {

// ---- a Python literal, as the emitted assignments use them --------------

struct Py {
  enum class Kind { Int, Float, Bool, Str, None, List, Call } kind = Kind::None;
  std::int64_t i = 0;
  bool b = false;
  std::string s;  // a string, or a call's callee ("FullAC.Config")
  std::vector<Py> list;  // a list's items, a call's positional arguments
  std::vector<std::pair<std::string, Py>> kwargs;  // a call's keyword arguments
};

class PyReader {
 public:
  explicit PyReader(const std::string& text) : t_(text) {}
  Py All() {
    Py v = Value();
    Space();
    if (pos_ != t_.size()) FAIL("SyntaxError: text after the value in: " << t_);
    return v;
  }

 private:
  void Space() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  Py Value() {
    Space();
    if (pos_ >= t_.size()) FAIL("SyntaxError: missing value in: " << t_);
    Py v;
    const char c = t_[pos_];
    if (c == '[') {
      v.kind = Py::Kind::List;
      ++pos_;
      while (true) {
        Space();
        if (pos_ < t_.size() && t_[pos_] == ']') {
          ++pos_;
          return v;
        }
        v.list.push_back(Value());
        Space();
        if (pos_ < t_.size() && t_[pos_] == ',') {
          ++pos_;
        } else if (pos_ >= t_.size() || t_[pos_] != ']') {
          FAIL("SyntaxError: expected ',' or ']' in: " << t_);
        }
      }
    }
    if (c == '"' || c == '\'') {
      const size_t close = t_.find(c, pos_ + 1);
      if (close == std::string::npos) FAIL("SyntaxError: unterminated string in: " << t_);
      v.kind = Py::Kind::Str;
      v.s = t_.substr(pos_ + 1, close - pos_ - 1);
      pos_ = close + 1;
      return v;
    }
    size_t end = pos_;
    while (end < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[end])) ||
                               t_[end] == '_' || t_[end] == '.' || t_[end] == '-')) {
      ++end;
    }
    const std::string word = t_.substr(pos_, end - pos_);
    pos_ = end;
    if (pos_ < t_.size() && t_[pos_] == '(') {
      v.kind = Py::Kind::Call;
      v.s = word;
      ++pos_;
      while (true) {
        Space();
        if (pos_ < t_.size() && t_[pos_] == ')') {
          ++pos_;
          return v;
        }
        // name=value, or a positional value (before any keyword).
        size_t k = pos_;
        while (k < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[k])) || t_[k] == '_')) {
          ++k;
        }
        if (k > pos_ && k < t_.size() && t_[k] == '=') {
          const std::string name = t_.substr(pos_, k - pos_);
          pos_ = k + 1;
          for (const auto& kw : v.kwargs) {
            if (kw.first == name) FAIL("SyntaxError: keyword argument repeated: " << name);
          }
          v.kwargs.emplace_back(name, Value());
        } else {
          if (!v.kwargs.empty()) FAIL("SyntaxError: positional argument follows keyword argument");
          v.list.push_back(Value());
        }
        Space();
        if (pos_ < t_.size() && t_[pos_] == ',') {
          ++pos_;
        } else if (pos_ >= t_.size() || t_[pos_] != ')') {
          FAIL("SyntaxError: expected ',' or ')' in: " << t_);
        }
      }
    }
    if (word == "None") return v;
    if (word == "True" || word == "False") {
      v.kind = Py::Kind::Bool;
      v.b = word == "True";
      return v;
    }
    if (word == "true" || word == "false") FAIL("NameError: name '" << word << "' is not defined");
    if (word.find('.') != std::string::npos) {
      v.kind = Py::Kind::Float;
      return v;
    }
    if (word.empty() || word.find_first_not_of("-0123456789") != std::string::npos) {
      FAIL("NameError: name '" << word << "' is not defined");
    }
    v.kind = Py::Kind::Int;
    v.i = std::stoll(word);
    return v;
  }
  std::string t_;
  size_t pos_ = 0;
};

// ---- Trainer.Config as main declares it ----------------------------------

enum class Ty { Int, Bool, Str, OptStr, OptInt, Float, FqnLists };

// TrainingConfig and ParallelismConfig (configs.py), every field with its
// declared type and default. Both are dataclasses with slots=True.
struct Field {
  Ty type;
  Py value;
};
Py IntPy(std::int64_t i) {
  Py v;
  v.kind = Py::Kind::Int;
  v.i = i;
  return v;
}
Py BoolPy(bool b) {
  Py v;
  v.kind = Py::Kind::Bool;
  v.b = b;
  return v;
}
Py StrPy(const std::string& s) {
  Py v;
  v.kind = Py::Kind::Str;
  v.s = s;
  return v;
}
Py FloatPy() {
  Py v;
  v.kind = Py::Kind::Float;
  return v;
}

std::map<std::string, std::map<std::string, Field>> MainSections() {
  std::map<std::string, std::map<std::string, Field>> s;
  s["training"] = {
      {"num_tokens_per_microbatch_per_dp_rank", {Ty::Int, IntPy(16384)}},
      {"num_tokens_per_train_step", {Ty::Int, IntPy(-1)}},
      {"max_context_length", {Ty::Int, IntPy(2048)}},
      {"max_norm", {Ty::Float, FloatPy()}},
      {"steps", {Ty::Int, IntPy(10000)}},
      {"enable_cpu_offload", {Ty::Bool, BoolPy(false)}},
      {"disable_cuda_graphs", {Ty::Bool, BoolPy(false)}},
      {"dtype", {Ty::Str, StrPy("float32")}},
      {"mixed_precision_param", {Ty::Str, StrPy("bfloat16")}},
      {"mixed_precision_reduce", {Ty::Str, StrPy("float32")}},
      {"gc_freq", {Ty::Int, IntPy(50)}},
      {"gc_debug", {Ty::Bool, BoolPy(false)}},
  };
  s["parallelism"] = {
      {"data_parallel_replicate_degree", {Ty::Int, IntPy(1)}},
      {"data_parallel_shard_degree", {Ty::Int, IntPy(-1)}},
      {"fsdp_reshard_after_forward", {Ty::Str, StrPy("default")}},
      {"enable_fsdp_symm_mem", {Ty::Bool, BoolPy(false)}},
      {"tensor_parallel_degree", {Ty::Int, IntPy(1)}},
      {"enable_sequence_parallel", {Ty::Bool, BoolPy(true)}},
      {"spmd_backend", {Ty::Str, StrPy("spmd_types")}},
      {"pipeline_parallel_degree", {Ty::Int, IntPy(1)}},
      {"module_fqns_per_model_part", {Ty::FqnLists, Py{}}},
      {"pipeline_parallel_first_stage_less_layers", {Ty::Int, IntPy(1)}},
      {"pipeline_parallel_last_stage_less_layers", {Ty::Int, IntPy(1)}},
      {"pipeline_parallel_layers_per_stage", {Ty::OptInt, Py{}}},
      {"pipeline_parallel_schedule", {Ty::Str, StrPy("1F1B")}},
      {"pipeline_parallel_schedule_csv", {Ty::OptStr, StrPy("")}},
      {"num_pp_microbatches", {Ty::Int, IntPy(1)}},
      {"context_parallel_degree", {Ty::Int, IntPy(1)}},
      {"context_parallel_load_balancer", {Ty::OptStr, StrPy("headtail")}},
      {"context_parallel_ptrr_mask_key", {Ty::OptStr, Py{}}},
      {"expert_parallel_degree", {Ty::Int, IntPy(1)}},
  };
  return s;
}

bool TypeOk(Ty t, const Py& v) {
  switch (t) {
    case Ty::Int:
      return v.kind == Py::Kind::Int;
    case Ty::Bool:
      return v.kind == Py::Kind::Bool;
    case Ty::Str:
      return v.kind == Py::Kind::Str;
    case Ty::OptStr:
      return v.kind == Py::Kind::Str || v.kind == Py::Kind::None;
    case Ty::OptInt:
      return v.kind == Py::Kind::Int || v.kind == Py::Kind::None;
    case Ty::Float:
      return v.kind == Py::Kind::Float || v.kind == Py::Kind::Int;
    case Ty::FqnLists:
      if (v.kind == Py::Kind::None) return true;
      if (v.kind != Py::Kind::List) return false;
      for (const Py& part : v.list) {
        if (part.kind != Py::Kind::List) return false;
        for (const Py& name : part.list) {
          if (name.kind != Py::Kind::Str) return false;
        }
      }
      return true;
  }
  return false;
}

// The activation-checkpointing policies of activation_checkpoint.py and the
// slots of each one's Config.
const std::map<std::string, std::set<std::string>>& Policies() {
  static const std::map<std::string, std::set<std::string>> p = {
      {"FullAC", {"preserve_rng_state", "determinism_check", "debug"}},
      {"SelectiveAC",
       {"preserve_rng_state", "determinism_check", "debug", "force_recompute_mm_shapes_by_fqns"}},
      {"MemoryBudgetAC",
       {"preserve_rng_state", "determinism_check", "debug", "memory_budget",
        "visualize_memory_budget_pareto"}},
  };
  return p;
}

// torch's get_schedule_class names (case-insensitive) and their kind.
enum class SchedKind { Single, Multi, V, Abstract };
std::optional<SchedKind> TorchSchedule(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::map<std::string, SchedKind> k = {
      {"1f1b", SchedKind::Single},
      {"gpipe", SchedKind::Single},
      {"interleaved1f1b", SchedKind::Multi},
      {"loopedbfs", SchedKind::Multi},
      {"interleavedzerobubble", SchedKind::Multi},
      {"zbvzerobubble", SchedKind::V},
      {"dualpipev", SchedKind::V},
      {"pipelineschedulemulti", SchedKind::Multi},
      {"pipelineschedulesingle", SchedKind::Abstract}};
  auto it = k.find(name);
  if (it == k.end()) return std::nullopt;
  return it->second;
}

// What torchtitan main makes of the emitted text for `layers`.
struct MainReading {
  std::vector<int> layers_per_stage;  // ppb layers per global stage
  std::string policy;                 // "None", "FullAC", ...
  int p = 0, m = 0;
  std::int64_t tokens_per_microbatch = 0, max_context_length = 0;
  std::string schedule;
  std::string csv;
  Py model_spec;  // model_registry(...), or None when not set
};

MainReading RunOnMain(const std::string& text, const std::vector<Layer>& layers, bool csv_written) {
  auto sections = MainSections();
  std::string policy = "SelectiveAC";  // Trainer.Config's default
  std::set<std::string> imported;
  std::string registry_model;  // the model whose model_registry is imported
  Py model_spec;
  std::vector<std::string> lines;
  {
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t nl = text.find('\n', pos);
      lines.push_back(text.substr(pos, nl - pos));
      pos = nl == std::string::npos ? text.size() : nl + 1;
    }
  }
  for (size_t li = 0; li < lines.size(); ++li) {
    std::string line = lines[li];
    const size_t hash = line.find('#');
    if (hash != std::string::npos && line.find('"') > hash) line.resize(hash);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (line.empty()) continue;
    INFO("line " << li + 1 << ": " << line);
    const std::string from = "from torchtitan.distributed.activation_checkpoint import ";
    // models/<model>/__init__.py's model_registry, and the quantization
    // converters (components/quantization/__init__.py at b5bcd76c).
    const std::string models = "from torchtitan.models.";
    const std::string quant = "from torchtitan.components.quantization import ";
    if (line.rfind(models, 0) == 0) {
      const size_t imp = line.find(" import ");
      REQUIRE(imp != std::string::npos);
      registry_model = line.substr(models.size(), imp - models.size());
      const std::vector<std::string> known = TorchtitanModels(/*main=*/true);
      if (std::find(known.begin(), known.end(), registry_model) == known.end()) {
        FAIL("ModuleNotFoundError: No module named 'torchtitan.models." << registry_model << "'");
      }
      REQUIRE(line.substr(imp + 8) == "model_registry");
      imported.insert("model_registry");
      continue;
    }
    if (line.rfind(quant, 0) == 0) {
      static const std::set<std::string> kConverters = {
          "Float8LinearConverter", "Float8GroupedExpertsConverter", "MXFP8LinearConverter",
          "MXFP8GroupedExpertsConverter", "NVFP4LinearConverter"};
      std::string names = line.substr(quant.size()) + ",";
      for (size_t at = 0; at < names.size();) {
        const size_t comma = names.find(',', at);
        std::string name = names.substr(at, comma - at);
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        if (kConverters.count(name) == 0) FAIL("ImportError: cannot import name '" << name << "'");
        imported.insert(name);
        at = comma + 1;
      }
      continue;
    }
    if (line.rfind("from ", 0) == 0) {
      REQUIRE(line.rfind(from, 0) == 0);
      std::string names = line.substr(from.size()) + ",";
      size_t at = 0;
      while (at < names.size()) {
        const size_t comma = names.find(',', at);
        std::string name = names.substr(at, comma - at);
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        if (Policies().count(name) == 0) FAIL("ImportError: cannot import name '" << name << "'");
        imported.insert(name);
        at = comma + 1;
      }
      continue;
    }
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) FAIL("SyntaxError");
    const std::string target = line.substr(0, eq);
    std::string value = line.substr(eq + 3);
    // A value spans lines while its brackets are open.
    auto open = [](const std::string& v) {
      return std::count(v.begin(), v.end(), '[') - std::count(v.begin(), v.end(), ']');
    };
    while (open(value) > 0 && li + 1 < lines.size()) value += "\n" + lines[++li];
    const Py v = PyReader(value).All();
    REQUIRE(target.rfind("config.", 0) == 0);
    const std::string path = target.substr(7);
    const size_t dot = path.find('.');
    const std::string head = path.substr(0, dot);
    const std::string field = dot == std::string::npos ? "" : path.substr(dot + 1);
    if (head == "model_spec") {
      // model_registry(flavor, *, converters, moe_comm_backend, ...) of
      // the imported model (deepseek_v3's also num_mtp_layers).
      REQUIRE(field.empty());
      REQUIRE(v.kind == Py::Kind::Call);
      if (imported.count(v.s) == 0) FAIL("NameError: name '" << v.s << "' is not defined");
      REQUIRE(v.s == "model_registry");
      REQUIRE(v.list.size() == 1);
      REQUIRE(v.list[0].kind == Py::Kind::Str);
      if (FindTorchtitanFlavour(registry_model, v.list[0].s, /*main=*/true) == nullptr) {
        FAIL("KeyError: '" << v.list[0].s << "' (" << registry_model << ")");
      }
      model_spec = v;
      for (const auto& [name, arg] : v.kwargs) {
        if (name == "converters") {
          REQUIRE(arg.kind == Py::Kind::List);
          for (const Py& c : arg.list) {
            REQUIRE(c.kind == Py::Kind::Call);
            const std::string cls = c.s.substr(0, c.s.find('.'));
            if (imported.count(cls) == 0) FAIL("NameError: name '" << cls << "' is not defined");
            REQUIRE(c.s.substr(cls.size()) == ".Config");
          }
        } else if (name == "moe_comm_backend") {
          REQUIRE(arg.kind == Py::Kind::Str);
          CHECK((arg.s == "standard" || arg.s == "deepep" || arg.s == "hybridep"));
        } else if (name == "num_mtp_layers" && registry_model == "deepseek_v3") {
          REQUIRE(arg.kind == Py::Kind::Int);
        } else {
          FAIL("TypeError: model_registry() got an unexpected keyword argument '" << name << "'");
        }
      }
      continue;
    }
    if (head == "activation_checkpoint") {
      if (field.empty()) {
        if (v.kind == Py::Kind::None) {
          policy = "None";
        } else if (v.kind == Py::Kind::Call) {
          const size_t d = v.s.find('.');
          const std::string cls = v.s.substr(0, d);
          if (imported.count(cls) == 0) FAIL("NameError: name '" << cls << "' is not defined");
          REQUIRE(v.s.substr(d) == ".Config");
          policy = cls;
        } else {
          FAIL("activation_checkpoint takes a policy Config or None");
        }
        continue;
      }
      if (policy == "None") {
        FAIL("AttributeError: 'NoneType' object has no attribute '" << field << "'");
      }
      if (Policies().at(policy).count(field) == 0) {
        FAIL("AttributeError: 'Config' object has no attribute '" << field << "'");
      }
      continue;
    }
    if (sections.count(head) == 0) {
      FAIL("ppb writes config." << head << ", a part of Trainer.Config this test does not model");
    }
    auto f = sections[head].find(field);
    if (f == sections[head].end()) {
      FAIL("AttributeError: 'Config' object has no attribute '" << field << "'");
    }
    if (!TypeOk(f->second.type, v)) FAIL(head << "." << field << ": wrong type");
    f->second.value = v;
  }
  auto& tr = sections["training"];
  auto& pa = sections["parallelism"];
  // TrainingConfig.__post_init__.
  if (tr["num_tokens_per_microbatch_per_dp_rank"].value.i <= 0) {
    FAIL("ValueError: num_tokens_per_microbatch_per_dp_rank must be greater than 0.");
  }
  if (tr["max_context_length"].value.i <= 0) {
    FAIL("ValueError: max_context_length must be greater than 0.");
  }
  // Trainer.Config.__post_init__ and _validate_cuda_graphs.
  const int pp = static_cast<int>(pa["pipeline_parallel_degree"].value.i);
  if (pa["num_pp_microbatches"].value.i <= 0) {
    FAIL("ValueError: parallelism.num_pp_microbatches must be greater than 0.");
  }
  if (!tr["disable_cuda_graphs"].value.b && pp > 1) {
    FAIL("ValueError: CUDA graphs do not support pipeline parallelism yet.");
  }
  MainReading out;
  out.p = pp;
  out.m = static_cast<int>(pa["num_pp_microbatches"].value.i);
  out.tokens_per_microbatch = tr["num_tokens_per_microbatch_per_dp_rank"].value.i;
  out.max_context_length = tr["max_context_length"].value.i;
  out.policy = policy;
  out.model_spec = model_spec;
  out.schedule = pa["pipeline_parallel_schedule"].value.s;
  const Py& csv = pa["pipeline_parallel_schedule_csv"].value;
  out.csv = csv.kind == Py::Kind::Str ? csv.s : "";
  // pipeline_llm: _get_pipeline_metadata's get_schedule_class, the module
  // split, _build_pipeline_schedule.
  const std::optional<SchedKind> kind = TorchSchedule(out.schedule);
  if (!kind) FAIL("ValueError: unknown schedule " << out.schedule);
  if (!out.csv.empty() && !csv_written) FAIL("FileNotFoundError: " << out.csv);
  if (out.csv.empty() && *kind == SchedKind::Abstract) {
    FAIL("ValueError: PipelineScheduleSingle is an abstract base class.");
  }
  const Py& parts = pa["module_fqns_per_model_part"].value;
  if (parts.kind != Py::Kind::List) FAIL("the split is left to torchtitan's own generator");
  const int stages = static_cast<int>(parts.list.size());
  if (stages % pp != 0) FAIL("AssertionError: num_stages must be evenly divisible by pp_degree");
  if (*kind == SchedKind::V && stages / pp != 2) {
    FAIL("AssertionError: v schedules assume 2 stages per rank");
  }
  if (out.csv.empty() && *kind == SchedKind::Single && stages / pp != 1) {
    FAIL("a single-stage schedule runs only the first of a rank's stages");
  }
  // _split_module keeps the named modules of each stage; one not named is
  // dropped silently, so every module of the model must be in exactly one
  // stage, in model order (each stage feeds the next).
  std::vector<std::string> modules;
  std::vector<size_t> owner;  // ppb layer of each module
  int decoder = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].kind == LayerKind::Embedding) {
      modules.push_back("tok_embeddings");
      owner.push_back(i);
    } else if (layers[i].kind == LayerKind::Head) {
      modules.push_back("norm");
      owner.push_back(i);
      modules.push_back("lm_head");
      owner.push_back(i);
    } else {
      modules.push_back("layers." + std::to_string(decoder++));
      owner.push_back(i);
    }
  }
  size_t next = 0;
  for (const Py& part : parts.list) {
    std::set<size_t> held;
    for (const Py& name : part.list) {
      REQUIRE(next < modules.size());
      if (name.s != modules[next]) FAIL("expected " << modules[next] << "; got " << name.s);
      held.insert(owner[next++]);
    }
    out.layers_per_stage.push_back(static_cast<int>(held.size()));
  }
  REQUIRE(next == modules.size());
  // norm and lm_head in one stage: counting layers per stage above would
  // count the head twice otherwise.
  int total = 0;
  for (int n : out.layers_per_stage) total += n;
  CHECK(total == static_cast<int>(layers.size()));
  return out;
}

}  // namespace

// Every torchtitan form of a set of strategies (schedules with and without
// a CSV, loop and V placements, p = 1..4, uneven splits, recompute none /
// full / not expressible) read by main's own rules (RunOnMain) as ppb's
// split, recompute and micro-batches.
TEST_CASE("emit torchtitan: main's Trainer.Config reads every form as ppb's strategy") {
  const std::uint64_t seed = 20261204;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  struct Shape {
    const char* schedule;
    int v;
    int min_p;
  };
  const Shape shapes[] = {{"gpipe", 1, 1},           {"1f1b", 1, 1},
                          {"interleaved", 2, 2},     {"interleaved", 3, 2},
                          {"looped-bfs", 2, 2},      {"interleaved-zero-bubble", 1, 2},
                          {"zbv-zero-bubble", 2, 2}, {"dualpipev", 2, 2},
                          {"zb-1p", 1, 2},           {"zb-v", 2, 2}};
  int with_csv = 0, full = 0, none = 0, unexpressed = 0, v_named = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const Shape& sh = shapes[trial % std::size(shapes)];
    const int p = pick(sh.min_p, 4), stages = p * sh.v;
    const int decoders = stages + pick(0, 6);
    const int m = 2 * p * pick(1, 2);
    std::string text = test::TinyEmitModel(decoders);
    text += "pipeline: {stages: " + std::to_string(p) +
            ", virtual_stages: " + std::to_string(sh.v) + ", microbatches: " + std::to_string(m) +
            ", schedule: " + sh.schedule + "}\n";
    INFO("trial " << trial << " " << sh.schedule << " p=" << p << " v=" << sh.v
                  << " decoders=" << decoders);
    Result<RunConfig> loaded = test::Parse(text);
    if (!loaded.ok()) FAIL(loaded.error().message);
    RunConfig config = *loaded;
    Strategy& s = config.strategy;
    s = test::DealtSplit(rng, stages, decoders, config.layers.size());
    const int rc = trial % 3;  // 0 none, 1 full on every decoder, 2 a mix
    for (size_t i = 1; i + 1 < config.layers.size(); ++i) {
      if (rc == 1) s.recompute[i] = 1;
      if (rc == 2) s.recompute[i] = static_cast<std::uint8_t>(pick(0, 2));
    }
    Result<PreparedRun> run = Prepare(config);
    if (!run.ok()) FAIL(run.error().message);
    Result<Emission> e = Emit(Framework::Torchtitan, config, run->program);
    if (!e.ok()) FAIL(e.error().message);
    INFO(e->text);
    const MainReading got = RunOnMain(e->text, config.layers, !e->schedule_csv.empty());
    CHECK(got.p == p);
    CHECK(got.m == m);
    CHECK(got.layers_per_stage == s.layers_per_stage);
    // Stages per rank and their placement: torchtitan's style follows the
    // named schedule (v for ZBVZeroBubble and DualPipeV, else loop).
    const bool v_style = TorchSchedule(got.schedule) == SchedKind::V;
    CHECK(v_style == (PlacementOf(config.schedule, sh.v) == StagePlacement::V));
    if (v_style) ++v_named;
    // No sequence length in these configs: main's defaults stay, and a
    // note says what to set.
    CHECK(got.tokens_per_microbatch == 16384);
    CHECK_THAT(e->text,
               Catch::Contains("# ppb: set training.num_tokens_per_microbatch_per_dp_rank"));
    if (!e->schedule_csv.empty()) {
      ++with_csv;
      CHECK(got.csv == "ppb-schedule.csv");
    }
    bool all_full = rc == 1;
    if (rc == 2) {
      all_full = std::all_of(s.recompute.begin() + 1, s.recompute.end() - 1,
                             [](std::uint8_t r) { return r == 1; });
    }
    const bool any =
        std::any_of(s.recompute.begin(), s.recompute.end(), [](std::uint8_t r) { return r != 0; });
    if (all_full) {
      ++full;
      CHECK(got.policy == "FullAC");
      CHECK(e->recompute_expressed);
    } else {
      CHECK(got.policy == "None");
      CHECK(e->recompute_expressed == !any);
      (any ? unexpressed : none) += 1;
    }
  }
  // Every path taken.
  CHECK(with_csv > 0);
  CHECK(v_named > 0);
  CHECK(full > 0);
  CHECK(none > 0);
  CHECK(unexpressed > 0);
}

// With the model derived from a HuggingFace config (training.seq_length,
// micro_batch_size): the tokens of one pipeline micro-batch per
// data-parallel rank (micro-batch size x sequence length) and the context
// length, as main reads them. configs/llama3-8b.yaml recomputes selectively,
// which torchtitan cannot express per layer: the policy is None.
TEST_CASE("emit torchtitan: token counts from the config's sequence length") {
  for (const int mbs : {1, 2}) {
    CliOverrides cli;
    Result<RunConfig> config = LoadConfig(std::string(PPB_CONFIGS_DIR) + "/llama3-8b.yaml", cli);
    REQUIRE(config.ok());
    config->training.micro_batch = mbs;
    Result<PreparedRun> run = Prepare(*config);
    REQUIRE(run.ok());
    // The file's distributed optimizer (ZeRO-1) is not what torchtitan
    // runs beside TP and PP: refused with why; FSDP2 is emitted.
    Result<Emission> zero1 = Emit(Framework::Torchtitan, *config, run->program);
    REQUIRE(!zero1.ok());
    CHECK(zero1.error().message.find("cannot express the distributed optimizer (ZeRO-1)") !=
          std::string::npos);
    config->training.sharding.fsdp = Fsdp::Torch;
    config->training.sharding.strategy = DpSharding::OptimGradsParams;
    config->training.distributed_optimizer = false;
    Result<Emission> e = Emit(Framework::Torchtitan, *config, run->program);
    REQUIRE(e.ok());
    CHECK(e->text.find("config.parallelism.data_parallel_shard_degree = 8\n") != std::string::npos);
    CHECK(e->text.find("config.parallelism.data_parallel_replicate_degree = 1\n") !=
          std::string::npos);
    INFO(e->text);
    const MainReading got = RunOnMain(e->text, config->layers, !e->schedule_csv.empty());
    CHECK(got.tokens_per_microbatch == mbs * 8192);
    CHECK(got.max_context_length == 8192);
    CHECK(got.m == 16);
    CHECK(got.p == 4);
    CHECK(got.policy == "None");
    CHECK_FALSE(e->recompute_expressed);
    CHECK(got.layers_per_stage == config->strategy.layers_per_stage);
    // The model is llama3's flavour 8B, built by its model_registry.
    CHECK(got.model_spec.s == "model_registry");
    REQUIRE(got.model_spec.list.size() == 1);
    CHECK(got.model_spec.list[0].s == "8B");
    CHECK(got.model_spec.kwargs.empty());
  }
}

// The model_spec main builds the simulated model with: the flavour, the
// precision's converters (imported), none for a model no flavour builds.
TEST_CASE("emit torchtitan: main's model_spec names the flavour and its converters") {
  CliOverrides cli;
  Result<RunConfig> config = LoadConfig(std::string(PPB_CONFIGS_DIR) + "/llama3-8b.yaml", cli);
  REQUIRE(config.ok());
  config->training.sharding.fsdp = Fsdp::Torch;
  config->training.sharding.strategy = DpSharding::OptimGradsParams;
  config->training.distributed_optimizer = false;
  for (const Recipe recipe : {Recipe::Mxfp8, Recipe::Nvfp4, Recipe::Fp8Blockwise}) {
    config->training.low.recipe = recipe;
    Result<PreparedRun> run = Prepare(*config);
    REQUIRE(run.ok());
    Result<Emission> e = Emit(Framework::Torchtitan, *config, run->program);
    REQUIRE(e.ok());
    INFO(e->text);
    const MainReading got = RunOnMain(e->text, config->layers, !e->schedule_csv.empty());
    REQUIRE(got.model_spec.kwargs.size() == 1);
    CHECK(got.model_spec.kwargs[0].first == "converters");
    const std::vector<Py>& c = got.model_spec.kwargs[0].second.list;
    REQUIRE(c.size() == 1);  // a dense model: no grouped-experts converter
    CHECK(c[0].s == (recipe == Recipe::Mxfp8   ? "MXFP8LinearConverter.Config"
                     : recipe == Recipe::Nvfp4 ? "NVFP4LinearConverter.Config"
                                               : "Float8LinearConverter.Config"));
  }
  // A model no main flavour builds keeps the function's model_spec.
  Result<RunConfig> tiny = test::Parse(
      "model:\n  architecture: {hidden_size: 256, num_layers: 4, num_attention_heads: 4,\n"
      "                 ffn_hidden_size: 512, vocab_size: 1000}\n"
      "training: {seq_length: 1024, fsdp: torch, data_parallel: 2}\n"
      "hardware: {gpu: h100-sxm}\n"
      "pipeline: {stages: 1, microbatches: 1}\n");
  if (!tiny.ok()) FAIL(tiny.error().message);
  Result<PreparedRun> run = Prepare(*tiny);
  REQUIRE(run.ok());
  Result<Emission> e = Emit(Framework::Torchtitan, *tiny, run->program);
  if (!e.ok()) FAIL(e.error().message);
  CHECK(e->text.find("config.model_spec") == std::string::npos);
  CHECK(e->text.find("# ppb: no torchtitan main flavour builds this model: keep your "
                     "function's") != std::string::npos);
  CHECK(RunOnMain(e->text, tiny->layers, false).model_spec.kind == Py::Kind::None);
}

// What main refuses, the re-implementation refuses too (so the test above
// cannot pass on a form main would not take): the forms ppb wrote before
// torchtitan#3674, #3559 and #4121.
TEST_CASE("emit torchtitan: the re-implementation of main refuses the old form") {
  const Result<RunConfig> config =
      test::Parse(test::TinyEmitModel(4) + "pipeline: {stages: 2, microbatches: 4}\n");
  REQUIRE(config.ok());
  const std::string parts =
      "config.parallelism.module_fqns_per_model_part = [\n"
      "  [\"tok_embeddings\", \"layers.0\", \"layers.1\"],\n"
      "  [\"layers.2\", \"layers.3\", \"norm\", \"lm_head\"],\n"
      "]\n";
  const std::string good =
      "from torchtitan.distributed.activation_checkpoint import FullAC\n"
      "config.parallelism.pipeline_parallel_degree = 2\n" +
      parts +
      "config.parallelism.num_pp_microbatches = 4\n"
      "config.training.disable_cuda_graphs = True\n"
      "config.activation_checkpoint = FullAC.Config()\n";
  const MainReading ok = RunOnMain(good, config->layers, false);
  CHECK(ok.layers_per_stage == std::vector<int>{3, 3});
  CHECK(ok.policy == "FullAC");
  CHECK(ok.m == 4);
  // ppb's own reader agrees with main on the same text.
  Result<EmittedPlan> plan = ParseTorchtitan(Framework::Torchtitan, good, config->layers);
  REQUIRE(plan.ok());
  CHECK(plan->strategy.layers_per_stage == std::vector<int>{3, 3});
  CHECK(plan->m == 4);
  CHECK(plan->strategy.recompute == std::vector<std::uint8_t>{0, 1, 1, 1, 1, 0});
  // The pre-#3674 mode field, CUDA graphs left on, the pre-#4121 batch
  // field: each refused by ppb's reader, as main would refuse it.
  auto refused = [&](const std::string& text, const std::string& why) {
    Result<EmittedPlan> r = ParseTorchtitan(Framework::Torchtitan, text, config->layers);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains(why));
  };
  refused("config.parallelism.pipeline_parallel_degree = 2\n" + parts +
              "config.training.disable_cuda_graphs = True\n"
              "config.activation_checkpoint.mode = \"none\"\n",
          "has no field mode");
  refused("config.parallelism.pipeline_parallel_degree = 2\n" + parts +
              "config.activation_checkpoint = None\n",
          "set training.disable_cuda_graphs = True");
  refused("config.parallelism.pipeline_parallel_degree = 2\n" + parts +
              "config.training.disable_cuda_graphs = True\n"
              "config.training.local_batch_size = 8\n"
              "config.activation_checkpoint = None\n",
          "config.training.local_batch_size: not a Trainer.Config field ppb reads");
  refused("config.parallelism.pipeline_parallel_degree = 2\n" + parts +
              "config.training.disable_cuda_graphs = True\n",
          "default is SelectiveAC.Config()");
  refused("config.parallelism.pipeline_parallel_degree = 2\n" + parts +
              "config.training.disable_cuda_graphs = True\n"
              "config.activation_checkpoint = FullAC.Config()\n",
          "FullAC is not imported");
}

// MTP: main has MTP layers (MTPDecoder) but refuses them under pipeline
// parallelism; the refusal says so (v0.2.2 had no module for them).
TEST_CASE("emit torchtitan: MTP refused with main's reason") {
  const Result<RunConfig> config = test::Parse(
      "model:\n"
      "  name: tiny\n"
      "  layers:\n"
      "    - {name: embedding, kind: embedding, forward: 1ms, backward: 2ms}\n"
      "    - {name: decoder, repeat: 4, forward: 1ms, backward: 2ms}\n"
      "    - {name: mtp, kind: mtp, forward: 1ms, backward: 2ms}\n"
      "    - {name: head, kind: head, forward: 1ms, backward: 2ms}\n"
      "cluster: {devices: {memory: 80GiB}}\n"
      "pipeline: {stages: 2, microbatches: 4}\n");
  REQUIRE(config.ok());
  Result<PreparedRun> run = Prepare(*config);
  REQUIRE(run.ok());
  Result<Emission> e = Emit(Framework::Torchtitan, *config, run->program);
  REQUIRE_FALSE(e.ok());
  CHECK_THAT(e.error().message, Catch::Contains("MTP does not support pipeline parallelism yet.") &&
                                    Catch::Contains("got mtp"));
  Result<Emission> old = Emit(Framework::Torchtitan022, *config, run->program);
  REQUIRE_FALSE(old.ok());
  CHECK_THAT(old.error().message, Catch::Contains("torchtitan v0.2.2's LLM modules are "
                                                  "tok_embeddings, layers.N, norm and output"));
}

}  // namespace ppb
