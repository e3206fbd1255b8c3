// The report of ppb-sim model (apps/output/model_output.h).
#include "apps/output/model_output.h"

#include "apps/output/step_model_output.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/input/json_text.h"

namespace ppb {
namespace {

using Json = nlohmann::ordered_json;

double Ms(Nanos t) { return static_cast<double>(t) / 1e6; }
double MiB(Bytes b) { return static_cast<double>(b) / (1 << 20); }

struct Totals {
  std::int64_t params = 0;
  double flops = 0;
  Nanos forward = 0;
  Nanos backward = 0;
  Bytes static_memory = 0;
  Bytes activation = 0;
};

// Layer sums; params: the main model (the published convention,
// core/cost_model.h TotalParams), MTP layers and tied copies excluded.
Totals Sum(const RunConfig& config) {
  Totals t;
  for (const DerivedLayer& d : config.derived) {
    if (d.layer.kind != LayerKind::Mtp) t.params += d.params.total();
    t.flops += d.flops.forward();
    t.forward += d.layer.forward;
    t.backward += d.layer.backward();
    t.static_memory += d.layer.static_memory;
    t.activation += d.layer.activation;
  }
  return t;
}

std::int64_t MtpLayerSum(const RunConfig& config) {
  std::int64_t n = 0;
  for (const DerivedLayer& d : config.derived) {
    if (d.layer.kind == LayerKind::Mtp) n += d.params.total();
  }
  return n;
}

// The head's copy of tied word embeddings (DerivedLayer::tied_copy_params).
const DerivedLayer* TiedCopy(const RunConfig& config) {
  for (const DerivedLayer& d : config.derived) {
    if (d.tied_copy_params > 0) return &d;
  }
  return nullptr;
}

// What each number of the totals counts, and the precision used.
std::string ConventionText(const RunConfig& config) {
  const Architecture& a = config.architecture;
  const Training& t = config.training;
  std::string s;
  if (a.mtp_layers > 0) {
    const std::int64_t module = MtpModuleParams(a);
    s += fmt::format(
        "mtp: the mtp layers above hold {} params of their own (they share "
        "the main model's embedding and head); as published, "
        "the MTP module is {} params (with its own embedding and head), "
        "main model + MTP module {} params\n",
        MtpLayerSum(config), module, TotalParams(a, true));
  }
  if (const DerivedLayer* d = TiedCopy(config)) {
    s += fmt::format(
        "tied embeddings: with p = {} > 1 the last stage ({}) also holds a "
        "copy of the word embeddings, {} params with their gradients and "
        "optimizer state (Megatron's setup_embeddings_and_output_layer); "
        "in its static memory, not in the params\n",
        t.pp, d->layer.name, d->tied_copy_params);
  }
  const ParamStateBytes b = StateBytes(t);
  const bool default_grad = t.grad_dtype == DefaultGradDtype(t.dtype);
  s += fmt::format(
      "precision: {} weights {} B, {} gradients {} B ({}), {} state {} B "
      "({}) per parameter{}\n",
      DtypeName(t.dtype), b.weight, DtypeName(t.grad_dtype), b.gradient,
      default_grad ? "Megatron's default for " + std::string(DtypeName(t.dtype))
                   : std::string("training.grad_dtype"),
      t.optimizer == Optimizer::Adam ? "Adam" : "SGD momentum", b.optimizer,
      t.dtype == Dtype::Fp32 ? "fp32 moments, no master copy"
                             : "fp32 master weight + fp32 moments",
      t.distributed_optimizer ? ", optimizer state sharded over dp*cp" : "");
  if (t.low.on()) {
    const GpuArch arch = config.hardware.gpu.arch;
    s += fmt::format(
        "low precision: the linears of decoder layers {}..{} in {}: saved "
        "linear inputs {:g} B per element, quantized weight copies {:g} B per "
        "linear parameter{} (static MiB includes them); gradients and "
        "optimizer state as above [TE, core/precision.h]\n",
        t.low.bf16_start, config.architecture.layers - 1 - t.low.bf16_end,
        RecipeName(t.low.recipe), SavedInputBytes(t.low.recipe, t.activation_bytes),
        WeightCopyBytes(t.low.recipe, arch),
        t.low.param_gather
            ? fmt::format(" in place of the {} weight (fp8_param_gather: the "
                          "distributed optimizer gathers {:g} B per parameter)",
                          DtypeName(t.dtype), GatheredParamBytes(t.low.recipe))
            : std::string(" beside the ") + DtypeName(t.dtype) + " weight");
  }
  s += "conventions: params per layer and the total count each weight matrix "
       "once (HuggingFace shapes; the main-model total is the published "
       "one); static memory is weights + gradients + optimizer state on one "
       "rank (Megatron's theoretical_memory_usage accounting)\n";
  return s;
}

}  // namespace

std::string FormatModelText(const RunConfig& config) {
  std::string s = fmt::format("model {} from {}: {} layers\n",
                              config.model_name.empty() ? "(unnamed)"
                                                        : config.model_name,
                              config.hf_config.empty()
                                  ? config.path + " (model.architecture)"
                                  : config.hf_config,
                              config.derived.size());
  s += fmt::format(
      "{:<12} {:<9} {:>14} {:>10} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} "
      "{:>10} {:>10}\n",
      "layer", "kind", "params", "GFLOP fwd", "fwd ms", "bwd I ms",
      "bwd W ms", "static MiB", "act MiB", "sel MiB", "full MiB", "send MiB");
  for (const DerivedLayer& d : config.derived) {
    const Layer& l = d.layer;
    s += fmt::format(
        "{:<12} {:<9} {:>14} {:>10.1f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10.1f} "
        "{:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f}\n",
        l.name, LayerKindName(l.kind), d.params.total(), d.flops.forward() / 1e9,
        Ms(l.forward), Ms(l.backward_input), Ms(l.backward_weight),
        MiB(l.static_memory), MiB(d.activation.none),
        MiB(d.activation.selective), MiB(d.activation.full),
        MiB(l.output_bytes));
  }
  const Totals t = Sum(config);
  s += fmt::format(
      "total: {} params (main model), {:.1f} GFLOP forward per "
      "micro-batch, forward "
      "{:.3f} ms, backward {:.3f} ms, static {:.2f} GiB, activation {:.2f} "
      "GiB per micro-batch (no recompute), all layers on one rank\n",
      t.params, t.flops / 1e9, Ms(t.forward), Ms(t.backward),
      static_cast<double>(t.static_memory) / (1 << 30),
      static_cast<double>(t.activation) / (1 << 30));
  s += ConventionText(config);
  if (config.hardware.step_model) s += StepModelText(config);
  // Sources: each distinct provenance once, with the layers it covers.
  s += "sources:\n";
  std::vector<std::string> seen;
  for (size_t i = 0; i < config.derived.size(); ++i) {
    const std::string& p = config.derived[i].provenance;
    bool dup = false;
    for (const std::string& x : seen) dup |= x == p;
    if (dup) continue;
    seen.push_back(p);
    size_t n = 0;
    for (const DerivedLayer& d : config.derived) n += d.provenance == p;
    s += fmt::format("  {}{}: {}\n", config.derived[i].layer.name,
                     n > 1 ? fmt::format(" (and {} more alike)", n - 1) : "",
                     p);
  }
  return s;
}

std::string FormatModelJson(const RunConfig& config) {
  Json j;
  j["schema"] = "ppb.model/1";
  j["model"] = config.model_name;
  j["hf_config"] = config.hf_config;  // empty with model.architecture
  j["architecture"] = config.hf_config.empty() ? "inline" : "hf_config";
  Json layers = Json::array();
  for (const DerivedLayer& d : config.derived) {
    const Layer& l = d.layer;
    Json x;
    x["name"] = l.name;
    x["kind"] = LayerKindName(l.kind);
    x["params"] = d.params.total();
    if (d.tied_copy_params > 0) x["tied_copy_params"] = d.tied_copy_params;
    x["expert_params"] = d.params.expert;
    x["forward_flops"] = d.flops.forward();
    x["forward_ns"] = l.forward;
    x["backward_input_ns"] = l.backward_input;
    x["backward_weight_ns"] = l.backward_weight;
    x["static_memory_bytes"] = l.static_memory;
    x["activation_bytes"] = {{"none", d.activation.none},
                             {"selective", d.activation.selective},
                             {"full", d.activation.full}};
    x["workspace_bytes"] = l.workspace;
    x["send_bytes"] = l.output_bytes;
    x["provenance"] = d.provenance;
    layers.push_back(std::move(x));
  }
  j["layers"] = std::move(layers);
  const Totals t = Sum(config);
  j["totals"] = {{"params", t.params},
                 {"forward_flops", t.flops},
                 {"forward_ns", t.forward},
                 {"backward_ns", t.backward},
                 {"static_memory_bytes", t.static_memory},
                 {"activation_bytes", t.activation}};
  const Architecture& a = config.architecture;
  const Training& tr = config.training;
  if (a.mtp_layers > 0) {
    j["totals"]["mtp_layer_params"] = MtpLayerSum(config);
    j["totals"]["mtp_module_params_published"] = MtpModuleParams(a);
    j["totals"]["params_with_mtp_published"] = TotalParams(a, true);
  }
  const DerivedLayer* copy = TiedCopy(config);
  j["totals"]["tied_copy_params"] = copy != nullptr ? copy->tied_copy_params : 0;
  const ParamStateBytes b = StateBytes(tr);
  j["precision"] = {{"dtype", DtypeName(tr.dtype)},
                    {"grad_dtype", DtypeName(tr.grad_dtype)},
                    {"weight_bytes", b.weight},
                    {"gradient_bytes", b.gradient},
                    {"optimizer_bytes", b.optimizer},
                    {"distributed_optimizer", tr.distributed_optimizer}};
  if (config.hardware.step_model) j["step_model"] = StepModelJson(config);
  return JsonText(j, 2) + "\n";
}

}  // namespace ppb
