// model.*: the layers of the model, from one of model.layers (costs written
// out, with `repeat`), model.hf_config / model.architecture (derived by the
// cost model with training and hardware, config_training.cpp and
// config_hardware.cpp) or
// model.sapp_layers (SAPP's per-layer numbers, apps/input/sapp.h). At most
// kMaxLayers layers after expansion. Errors as every config error:
// "file:line: model.<key>: must be ...; got ...".
#include "apps/input/config_parser.h"
#include "core/rank_layout.h"

#include <fmt/format.h>

namespace ppb::config_detail {

Status Parser::ParseModel(const YAML::Node& node, const Entry* training,
                          const Entry* hardware) {
  Result<Entries> e =
      Map(node, "model", {"name", "layers", "hf_config", "architecture",
                          "sapp_layers", "sapp_units", "sapp_time"});
  if (!e.ok()) return e.error();
  if (const Entry* name = Find(*e, "name")) {
    Result<std::string> s = String(name->value, name->path, "a string");
    if (!s.ok()) return s.error();
    cfg_.model_name = *s;
  }
  const Entry* hf = Find(*e, "hf_config");
  const Entry* inline_arch = Find(*e, "architecture");
  if (hf != nullptr && inline_arch != nullptr) {
    return Fail(inline_arch->path,
                "must not be given with model.hf_config (give the "
                "architecture one way); got both");
  }
  if (const Entry* source = hf != nullptr ? hf : inline_arch) {
    for (std::string_view other :
         {"layers", "sapp_layers", "sapp_units", "sapp_time"}) {
      if (const Entry* x = Find(*e, other)) {
        return Fail(x->path, "must not be given with " + source->path +
                                 " (the layers are derived from it); got "
                                 "both");
      }
    }
    return ParseDerivedModel(*source, training, hardware);
  }
  if (Find(*e, "sapp_layers") || Find(*e, "sapp_units") ||
      Find(*e, "sapp_time")) {
    return ParseSappModel(*e);
  }
  for (const Entry* x : {training, hardware}) {
    if (x != nullptr) {
      return Fail(x->path,
                  "must only be given with model.hf_config or "
                  "model.architecture; got " +
                      Given(x->value) + " with model.layers");
    }
  }
  Result<std::vector<Entry>> items =
      RequiredList(*e, "layers", "model.layers", "layers");
  if (!items.ok()) return items.error();
  std::map<std::string, std::string> defined_by;  // name -> layer path
  for (const Entry& item : *items) {
    PPB_RETURN_IF_ERROR(ParseLayer(item, defined_by));
  }
  return Status();
}

// model.hf_config or model.architecture with the training and hardware
// sections: the layers derived by the cost model (core/cost_model.h).
Status Parser::ParseDerivedModel(const Entry& source, const Entry* training,
                                 const Entry* hardware) {
  const bool from_json = source.key == "hf_config";
  Architecture arch;
  if (from_json) {
    Result<std::string> file =
        String(source.value, source.path, "a config.json path");
    if (!file.ok()) return file.error();
    std::filesystem::path json(*file);
    if (json.is_relative()) {
      json = std::filesystem::path(cfg_.path).parent_path() / json;
    }
    cfg_.hf_config = json.string();
    Result<Architecture> a = LoadHfConfig(cfg_.hf_config);
    if (!a.ok()) {
      return Fail(source.path,
                  "must be a readable HuggingFace config.json; " +
                      FormatHfError(cfg_.hf_config, a.error()));
    }
    arch = std::move(*a);
  } else {
    Result<Architecture> a = ParseArchitecture(source);
    if (!a.ok()) return a.error();
    arch = std::move(*a);
  }
  // The model's layers in all (decoders, multi-token prediction layers, the
  // embedding and the head) within kMaxLayers, before any is built.
  if (const std::int64_t total = std::int64_t{arch.layers} + arch.mtp_layers + 2;
      total > kMaxLayers) {
    const std::string message =
        "must keep the model at most " + std::to_string(kMaxLayers) +
        " layers in all (with the embedding, the head and " +
        std::to_string(arch.mtp_layers) + " MTP layers); got " +
        std::to_string(arch.layers);
    if (from_json) {
      return Fail(source.path, cfg_.hf_config + ": num_hidden_layers: " + message);
    }
    return Fail("model.architecture.num_layers", message);
  }
  // Its parameter and byte counts within int64, before any is formed.
  if (const double bound = ParamsUpperBound(arch); !(bound <= kMaxModelParams)) {
    const std::string message = fmt::format(
        "must describe at most 2^50 (about 1.1e15) parameters, so that ppb's counts stay "
        "within 64 bits; got shapes that may reach {:.3g}",
        bound);
    if (from_json) return Fail(source.path, cfg_.hf_config + ": " + message);
    return Fail(source.path, message);
  }
  if (training == nullptr) {
    return Fail("training", "must be given with " + source.path +
                                " (a map with seq_length, "
                                "micro_batch_size, ...); got nothing");
  }
  if (hardware == nullptr) {
    return Fail("hardware", "must be given with " + source.path +
                                " (a map with peak_tflops, ...); got "
                                "nothing");
  }
  Result<Training> t = ParseTraining(*training);
  if (!t.ok()) return t.error();
  Result<Hardware> h = ParseHardware(*hardware);
  if (!h.ok()) return h.error();
  if (Status s = ValidateCostInputs(arch, *t, *h); !s.ok()) {
    // Keys of the YAML sections (training.tp, hardware.peak_tflops) map to
    // their lines; architecture.* keys come from the JSON file, or from
    // model.architecture when given inline.
    static const std::map<std::string, std::string> kYamlKeys = {
        {"training.seq", "training.seq_length"},
        {"training.micro_batch", "training.micro_batch_size"},
        {"training.tp", "training.tensor_parallel"},
        {"training.cp", "training.context_parallel"},
        {"training.ep", "training.expert_parallel"},
        {"training.dp", "training.data_parallel"},
        {"training.activation_bytes", "training.dtype"},
        {"training.grad_dtype", "training.grad_dtype"},
        {"training.pp", "pipeline.stages"},
        {"hardware.peak_tflops", "hardware.peak_tflops"},
        {"hardware.achievable_fraction", "hardware.achievable_fraction"}};
    static const std::map<std::string, std::string> kInlineKeys = {
        {"architecture.hidden", "hidden_size"},
        {"architecture.layers", "num_layers"},
        {"architecture.heads", "num_attention_heads"},
        {"architecture.kv_heads", "num_key_value_heads"},
        {"architecture.head_dim", "head_dim"},
        {"architecture.ffn", "ffn_hidden_size"},
        {"architecture.vocab", "vocab_size"},
        {"architecture.top_k", "moe.top_k"},
        {"architecture.expert_ffn", "moe.expert_ffn_hidden_size"},
        {"architecture.v_head_dim", "mla.v_head_dim"}};
    auto it = kYamlKeys.find(s.error().key);
    if (it != kYamlKeys.end()) return Fail(it->second, s.error().message);
    if (!from_json) {
      auto in = kInlineKeys.find(s.error().key);
      return Fail(in != kInlineKeys.end()
                      ? "model.architecture." + in->second
                      : std::string("model.architecture"),
                  s.error().message);
    }
    return Fail(source.path, cfg_.hf_config + ": " + s.error().key + ": " +
                                 s.error().message);
  }
  if (t->routing_skew != 1.0 && arch.experts == 0) {
    return Fail("training.routing_skew",
                "must be given with a mixture-of-experts model (it scales the expert "
                "GEMMs and all-to-alls; this model has no routed experts); got " +
                    fmt::format("{:g}", t->routing_skew));
  }
  if (moe_given_) PPB_RETURN_IF_ERROR(CheckMoe(arch, *t));
  // The framework's per-pass work, exposed where the sends block (the
  // engine applies it then: core/spec.h PipelineSpec::op_overhead).
  if (h->step_model) cfg_.shape.op_overhead = h->gpu.compute.microbatch_overhead;
  if (t->moe.overlap_ep_comm) {
    cfg_.shape.ep_overlap_ppm = std::llround(h->gpu.ep_kernels.overlap * 1e6);
  }
  if (t->offload.on() && !h->step_model) {
    return Fail("training.offload",
                "must be given with hardware.gpu (a preset with its host link: the step "
                "model prices the copies); got it with hardware.peak_tflops alone");
  }
  if (t->low.on() && !h->step_model) {
    const char* key = IsFp4(t->low.recipe) ? "training.fp4" : "training.fp8";
    return Fail(key, "must be given with hardware.gpu (a preset with its FP8 "
                     "and FP4 peaks: the step model prices low precision); "
                     "got it with hardware.peak_tflops alone");
  }
  if (h->step_model) PPB_RETURN_IF_ERROR(ApplyStepModel(arch, *t, *h));
  cfg_.derived = DeriveLayers(arch, *t, *h);
  cfg_.architecture = arch;
  cfg_.training = *t;
  cfg_.hardware = *h;
  // The peers of the communicators this layout creates (the process's
  // NCCL buffers, core/process_memory.h).
  if (h->step_model) cfg_.hardware.nccl_peers = CountNcclPeers(*t, PlaceJob(*t, h->gpu));
  cfg_.layers.reserve(cfg_.layers.size() + cfg_.derived.size());
  for (const DerivedLayer& d : cfg_.derived) cfg_.layers.push_back(d.layer);
  return Status();
}

// model: {sapp_layers: FILE.json, sapp_units: {time: 1ms, memory: 1MiB}}
// (apps/sapp.h); FILE is relative to the config's directory.
Status Parser::ParseSappModel(const Entries& e) {
  if (const Entry* layers = Find(e, "layers")) {
    return Fail(layers->path, "must not be given with model.sapp_layers");
  }
  const Entry* file = Find(e, "sapp_layers");
  if (file == nullptr) {
    return Fail("model.sapp_layers",
                "must be given with model.sapp_units (a SAPP layer JSON); "
                "got nothing");
  }
  Result<std::string> name = String(file->value, file->path, "a file name");
  if (!name.ok()) return name.error();
  const Entry* units = Find(e, "sapp_units");
  if (units == nullptr) {
    return Fail("model.sapp_units",
                "must be given (SAPP numbers carry no unit), e.g. "
                "{time: 1ms, memory: 1MiB}; got nothing");
  }
  Result<Entries> u = Map(units->value, units->path, {"time", "memory"});
  if (!u.ok()) return u.error();
  const Entry* t = Find(*u, "time");
  const Entry* m = Find(*u, "memory");
  if (t == nullptr || m == nullptr) {
    return Fail(units->path + (t == nullptr ? ".time" : ".memory"),
                "must be given (what one SAPP unit is, e.g. 1ms / 1MiB); "
                "got nothing");
  }
  Result<std::int64_t> tv =
      Duration(t->value, t->path, true);
  if (!tv.ok()) return tv.error();
  Result<std::int64_t> mv =
      Size(m->value, m->path, true);
  if (!mv.ok()) return mv.error();
  SappUnits sapp_units{*tv, *mv, std::nullopt};
  if (const Entry* st = Find(e, "sapp_time")) {
    // What SAPP's `time` is (apps/input/sapp.h): MindFormers r1.5.0 reads
    // the forward time, versions before commit 959a2451 forward + backward.
    Result<size_t> i = Choice(st->value, st->path, {"forward", "forward+backward"});
    if (!i.ok()) return i.error();
    sapp_units.time_meaning =
        *i == 0 ? SappTime::Forward : SappTime::ForwardBackward;
  }
  std::filesystem::path fp(*name);
  if (fp.is_relative()) {
    fp = std::filesystem::path(cfg_.path).parent_path() / fp;
  }
  Result<SappModel> sapp = LoadSappModel(fp.string(), sapp_units);
  if (!sapp.ok()) {
    return Fail(file->path, "cannot be used: " + sapp.error().message);
  }
  cfg_.layers = std::move(sapp->layers);
  cfg_.stage_constant = sapp->stage_constant;
  cfg_.input_notes.push_back(sapp->time_note);
  if (sapp->stage_constant != 0) {
    cfg_.input_notes.push_back(
        "SAPP stage_const_mem " +
        std::to_string(sapp->stage_constant / (1 << 20)) +
        " MiB per stage: taken off every device's memory capacity" +
        (sapp->stage_constant < 0
             ? " (negative: the per-layer terms of SAPP's fit overstate "
               "memory, the constant corrects them)"
             : ""));
  }
  if (cfg_.model_name.empty()) cfg_.model_name = fp.stem().string();
  return Status();
}

// One entry of model.layers, appended to cfg_.layers (repeat expanded).
Status Parser::ParseLayer(const Entry& item,
                          std::map<std::string, std::string>& defined_by) {
  const std::string& path = item.path;
  Result<Entries> er =
      Map(item.value, path,
          {"name", "kind", "repeat", "forward", "backward", "backward_input",
           "backward_weight", "static_memory", "activation",
           "activation_after_input_grad", "workspace", "output",
           "recompute"});
  if (!er.ok()) return er.error();
  const Entries& e = *er;
  Layer layer;

  const Entry* name = Find(e, "name");
  if (name == nullptr) {
    return Fail(path + ".name",
                "must be given (a unique layer name); got nothing");
  }
  Result<std::string> name_value = String(name->value, name->path, "a name");
  if (!name_value.ok()) return name_value.error();
  layer.name = *name_value;

  if (const Entry* kind = Find(e, "kind")) {
    Result<size_t> i =
        Choice(kind->value, kind->path,
               {"embedding", "decoder", "moe", "head", "mtp", "other"});
    if (!i.ok()) return i.error();
    static constexpr LayerKind kKinds[] = {
        LayerKind::Embedding, LayerKind::Decoder, LayerKind::Moe,
        LayerKind::Head,      LayerKind::Mtp,     LayerKind::Other};
    layer.kind = kKinds[*i];
  }

  int repeat = 1;
  const Entry* repeat_entry = Find(e, "repeat");
  if (repeat_entry != nullptr) {
    Result<std::int64_t> r =
        Integer(repeat_entry->value, repeat_entry->path, 1, kMaxLayers,
                "a positive integer up to " + std::to_string(kMaxLayers));
    if (!r.ok()) return r.error();
    repeat = static_cast<int>(*r);
    if (cfg_.layers.size() + repeat > static_cast<size_t>(kMaxLayers)) {
      return Fail(repeat_entry->path,
                  "must keep the model at most " +
                      std::to_string(kMaxLayers) + " layers; got " +
                      std::to_string(repeat) + " more after " +
                      std::to_string(cfg_.layers.size()));
    }
  }

  const Entry* forward = Find(e, "forward");
  if (forward == nullptr) {
    return Fail(path + ".forward",
                "must be given (a positive duration); got nothing");
  }
  Result<Nanos> f = Duration(forward->value, forward->path, true);
  if (!f.ok()) return f.error();
  layer.forward = *f;
  PPB_RETURN_IF_ERROR(ParseBackward(e, path, layer));

  struct SizeField {
    std::string_view key;
    Bytes* out;
  };
  for (const SizeField& field :
       {SizeField{"static_memory", &layer.static_memory},
        SizeField{"activation", &layer.activation},
        SizeField{"workspace", &layer.workspace},
        SizeField{"output", &layer.output_bytes}}) {
    if (const Entry* x = Find(e, field.key)) {
      Result<Bytes> b = Size(x->value, x->path, false);
      if (!b.ok()) return b.error();
      *field.out = *b;
    }
  }
  if (const Entry* held = Find(e, "activation_after_input_grad")) {
    Result<Bytes> b = Size(held->value, held->path, false);
    if (!b.ok()) return b.error();
    if (*b > layer.activation) {
      const Entry* activation = Find(e, "activation");
      return Fail(held->path,
                  "must be at most the layer's activation (" +
                      (activation != nullptr ? activation->value.Scalar()
                                             : std::string("0, not given")) +
                      "), the part of it still held between I and W; got " +
                      held->value.Scalar());
    }
    layer.activation_after_input_grad = *b;
  }
  if (const Entry* rc = Find(e, "recompute")) {
    PPB_RETURN_IF_ERROR(
        ParseLayerRecompute(*rc, Find(e, "activation"), layer));
  }

  for (int k = 0; k < repeat; ++k) {
    Layer copy = layer;
    if (repeat_entry != nullptr) copy.name += "." + std::to_string(k);
    auto [it, inserted] = defined_by.emplace(copy.name, path);
    if (!inserted) {
      return Fail(name->path,
                  "must be unique after repeat expansion; got " + copy.name +
                      ", also the name of a layer of " + it->second);
    }
    cfg_.layers.push_back(std::move(copy));
  }
  return Status();
}

// backward, or backward_input and backward_weight.
Status Parser::ParseBackward(const Entries& e, const std::string& path,
                             Layer& layer) {
  const Entry* b = Find(e, "backward");
  const Entry* bi = Find(e, "backward_input");
  const Entry* bw = Find(e, "backward_weight");
  if (b != nullptr && (bi != nullptr || bw != nullptr)) {
    const Entry* other = bi != nullptr ? bi : bw;
    return Fail(other->path,
                "must not be given with backward (give backward, or "
                "backward_input and backward_weight); got both");
  }
  if (b != nullptr) {
    Result<Nanos> t = Duration(b->value, b->path, true);
    if (!t.ok()) return t.error();
    layer.backward_input = *t;
    return Status();
  }
  if (bi == nullptr && bw == nullptr) {
    return Fail(path + ".backward",
                "must be given (a positive duration), or backward_input and "
                "backward_weight; got nothing");
  }
  if (bi == nullptr) {
    return Fail(path + ".backward_input",
                "must be given with backward_weight; got nothing");
  }
  if (bw == nullptr) {
    return Fail(path + ".backward_weight",
                "must be given with backward_input; got nothing");
  }
  Result<Nanos> ti = Duration(bi->value, bi->path, true);
  if (!ti.ok()) return ti.error();
  Result<Nanos> tw = Duration(bw->value, bw->path, false);
  if (!tw.ok()) return tw.error();
  layer.backward_input = *ti;
  layer.backward_weight = *tw;
  layer.split_backward = true;
  return Status();
}

// A layer's `recompute: {mode: {activation, time}}`.
Status Parser::ParseLayerRecompute(const Entry& rc, const Entry* activation,
                                   Layer& layer) {
  Result<Entries> modes = Map(rc.value, rc.path, {});
  if (!modes.ok()) return modes.error();
  for (const Entry& mode : *modes) {
    if (Lower(mode.key) == "none") {
      return Fail(mode.path,
                  "must not be declared (\"none\" is always offered); got a "
                  "mode named " +
                      mode.key);
    }
    if (mode.key == "layers") {
      return Fail(mode.path,
                  "must not be named layers (strategy.recompute uses that "
                  "key for per-layer choices); got a mode named layers");
    }
    if (layer.recompute.size() >= 255) {
      return Fail(mode.path, "must be one of at most 255 modes; got more");
    }
    Result<Entries> fields =
        Map(mode.value, mode.path, {"activation", "time"});
    if (!fields.ok()) return fields.error();
    const Entry* act = Find(*fields, "activation");
    const Entry* time = Find(*fields, "time");
    if (act == nullptr) {
      return Fail(mode.path + ".activation",
                  "must be given (bytes kept per micro-batch); got nothing");
    }
    if (time == nullptr) {
      return Fail(
          mode.path + ".time",
          "must be given (extra time before the backward); got nothing");
    }
    RecomputeOption option;
    option.name = mode.key;
    Result<Bytes> a = Size(act->value, act->path, false);
    if (!a.ok()) return a.error();
    if (*a > layer.activation) {
      return Fail(act->path,
                  "must be at most the layer's activation (" +
                      (activation != nullptr ? activation->value.Scalar()
                                             : std::string("0B")) +
                      "); got " + act->value.Scalar());
    }
    option.retained_activation = *a;
    Result<Nanos> t = Duration(time->value, time->path, false);
    if (!t.ok()) return t.error();
    option.extra_time = *t;
    layer.recompute.push_back(std::move(option));
  }
  return Status();
}

}  // namespace ppb::config_detail
