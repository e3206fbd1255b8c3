// The inputs of a derived model: model.architecture (written inline),
// training.* (the parallel setup of one rank) and hardware.* (one device's
// rate; its memory and link default cluster.devices.memory and
// cluster.link). Errors as every config error: "file:line: <key>: must be
// ...; got ...".
#include "apps/input/config_parser.h"

namespace ppb::config_detail {

// A non-negative (min 0) or positive (min 1) integer of an inline
// architecture block; absent: `fallback`, or an error when none.
Result<std::int64_t> Parser::ArchInt(const Entries& e, std::string_view key,
                                     const std::string& parent,
                                     std::int64_t min,
                                     std::optional<std::int64_t> fallback) {
  const std::string want =
      min == 0 ? "a non-negative integer" : "a positive integer";
  const Entry* x = Find(e, key);
  if (x == nullptr) {
    if (fallback) return *fallback;
    return Fail(parent + "." + std::string(key),
                "must be given (" + want + "); got nothing");
  }
  return Integer(x->value, x->path, min, INT_MAX, want);
}

Result<bool> Parser::ArchBool(const Entries& e, std::string_view key,
                              bool fallback) {
  const Entry* x = Find(e, key);
  if (x == nullptr) return fallback;
  return Bool(x->value, x->path);
}

// model.architecture: the Architecture (core/architecture.h) written
// inline, with Megatron-style key names (configs/README-format.yaml).
Result<Architecture> Parser::ParseArchitecture(const Entry& section) {
  const std::string& path = section.path;
  Result<Entries> r =
      Map(section.value, path,
          {"hidden_size", "num_layers", "num_attention_heads",
           "num_key_value_heads", "head_dim", "ffn_hidden_size",
           "vocab_size", "tie_embeddings", "gated_mlp", "qkv_bias",
           "qk_norm", "norm", "learned_positions", "moe", "mla",
           "mtp_layers"});
  if (!r.ok()) return r.error();
  const Entries& e = *r;
  Architecture a;
#define PPB_ARCH(lhs, expr)          \
do {                               \
  auto r_ = (expr);                \
  if (!r_.ok()) return r_.error(); \
  lhs = *r_;                       \
} while (false)
  PPB_ARCH(a.hidden, ArchInt(e, "hidden_size", path, 1, std::nullopt));
  PPB_ARCH(a.layers, ArchInt(e, "num_layers", path, 1, std::nullopt));
  PPB_ARCH(a.heads, ArchInt(e, "num_attention_heads", path, 1, std::nullopt));
  PPB_ARCH(a.kv_heads, ArchInt(e, "num_key_value_heads", path, 1, a.heads));
  const Entry* mla = Find(e, "mla");
  if (!Find(e, "head_dim") && mla == nullptr && a.hidden % a.heads != 0) {
    return Fail(path + ".num_attention_heads",
                "must divide hidden_size (" + std::to_string(a.hidden) +
                    ") when head_dim is not given; got " +
                    std::to_string(a.heads));
  }
  PPB_ARCH(a.head_dim, ArchInt(e, "head_dim", path, 1, a.hidden / a.heads));
  PPB_ARCH(a.ffn, ArchInt(e, "ffn_hidden_size", path, 1, 0));
  PPB_ARCH(a.vocab, ArchInt(e, "vocab_size", path, 1, std::nullopt));
  PPB_ARCH(a.tied_embeddings, ArchBool(e, "tie_embeddings", false));
  PPB_ARCH(a.gated_mlp, ArchBool(e, "gated_mlp", true));
  PPB_ARCH(a.qkv_bias, ArchBool(e, "qkv_bias", false));
  PPB_ARCH(a.qk_norm, ArchBool(e, "qk_norm", false));
  if (const Entry* n = Find(e, "norm")) {
    Result<size_t> i = Choice(n->value, n->path, {"rmsnorm", "layernorm"});
    if (!i.ok()) return i.error();
    a.layernorm_with_bias = *i == 1;
  }
  PPB_ARCH(a.learned_positions, ArchInt(e, "learned_positions", path, 0, 0));
  PPB_ARCH(a.mtp_layers, ArchInt(e, "mtp_layers", path, 0, 0));
  if (const Entry* moe = Find(e, "moe")) {
    Result<Entries> m =
        Map(moe->value, moe->path,
            {"num_experts", "top_k", "expert_ffn_hidden_size",
             "shared_ffn_hidden_size", "shared_expert_gate", "router_bias",
             "first_k_dense", "layer_freq", "sparse_step", "dense_layers"});
    if (!m.ok()) return m.error();
    const std::string& mp = moe->path;
    PPB_ARCH(a.experts, ArchInt(*m, "num_experts", mp, 1, std::nullopt));
    PPB_ARCH(a.top_k, ArchInt(*m, "top_k", mp, 1, std::nullopt));
    if (a.top_k > a.experts) {
      return Fail(mp + ".top_k", "must be at most moe.num_experts (" +
                                     std::to_string(a.experts) + "); got " +
                                     std::to_string(a.top_k));
    }
    PPB_ARCH(a.expert_ffn,
             ArchInt(*m, "expert_ffn_hidden_size", mp, 1, std::nullopt));
    PPB_ARCH(a.shared_ffn, ArchInt(*m, "shared_ffn_hidden_size", mp, 0, 0));
    PPB_ARCH(a.shared_expert_gate, ArchBool(*m, "shared_expert_gate", false));
    PPB_ARCH(a.router_bias, ArchBool(*m, "router_bias", false));
    PPB_ARCH(a.moe_layout.first_k_dense,
             ArchInt(*m, "first_k_dense", mp, 0, 0));
    PPB_ARCH(a.moe_layout.moe_layer_freq, ArchInt(*m, "layer_freq", mp, 1, 1));
    PPB_ARCH(a.moe_layout.decoder_sparse_step,
             ArchInt(*m, "sparse_step", mp, 1, 1));
    if (const Entry* d = Find(*m, "dense_layers")) {
      Result<std::vector<Entry>> items =
          List(d->value, d->path, "a list of decoder layer indices");
      if (!items.ok()) return items.error();
      for (const Entry& item : *items) {
        Result<std::int64_t> i =
            Integer(item.value, item.path, 0, a.layers - 1,
                    "a layer index in 0.." + std::to_string(a.layers - 1));
        if (!i.ok()) return i.error();
        a.moe_layout.mlp_only_layers.push_back(static_cast<int>(*i));
      }
    }
  }
  if (mla != nullptr) {
    Result<Entries> m =
        Map(mla->value, mla->path,
            {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
             "qk_rope_head_dim", "v_head_dim"});
    if (!m.ok()) return m.error();
    const std::string& mp = mla->path;
    PPB_ARCH(a.q_lora_rank, ArchInt(*m, "q_lora_rank", mp, 0, 0));
    PPB_ARCH(a.kv_lora_rank, ArchInt(*m, "kv_lora_rank", mp, 1, std::nullopt));
    PPB_ARCH(a.qk_nope_head_dim,
             ArchInt(*m, "qk_nope_head_dim", mp, 1, std::nullopt));
    PPB_ARCH(a.qk_rope_head_dim,
             ArchInt(*m, "qk_rope_head_dim", mp, 1, std::nullopt));
    PPB_ARCH(a.v_head_dim, ArchInt(*m, "v_head_dim", mp, 1, std::nullopt));
    if (const Entry* kv = Find(e, "num_key_value_heads")) {
      return Fail(kv->path,
                  "must not be given with model.architecture.mla (MLA gives "
                  "every head its own K and V); got " +
                      Given(kv->value));
    }
    a.kv_heads = a.heads;
  }
#undef PPB_ARCH
  if (a.heads % a.kv_heads != 0) {
    return Fail(path + ".num_key_value_heads",
                "must divide num_attention_heads (" +
                    std::to_string(a.heads) + "); got " +
                    std::to_string(a.kv_heads));
  }
  return a;
}

// training: the parallel setup of one pipeline rank.
Result<Training> Parser::ParseTraining(const Entry& section) {
  Result<Entries> r =
      Map(section.value, "training",
          {"seq_length", "micro_batch_size", "dtype", "grad_dtype",
           "tensor_parallel",
           "sequence_parallel", "context_parallel", "expert_parallel",
           "data_parallel", "distributed_optimizer", "optimizer"});
  if (!r.ok()) return r.error();
  const Entries& e = *r;
  Training t;
  struct IntField {
    std::string_view key;
    bool required;
    std::int64_t* out64;
    int* out;
  };
  for (const IntField& f :
       {IntField{"seq_length", true, &t.seq, nullptr},
        IntField{"micro_batch_size", false, &t.micro_batch, nullptr},
        IntField{"tensor_parallel", false, nullptr, &t.tp},
        IntField{"context_parallel", false, nullptr, &t.cp},
        IntField{"expert_parallel", false, nullptr, &t.ep},
        IntField{"data_parallel", false, nullptr, &t.dp}}) {
    const Entry* x = Find(e, f.key);
    if (x == nullptr) {
      if (!f.required) continue;
      return Fail("training." + std::string(f.key),
                  "must be given (a positive integer); got nothing");
    }
    Result<int> v = PositiveInt(x->value, x->path);
    if (!v.ok()) return v.error();
    if (f.out64 != nullptr) *f.out64 = *v;
    if (f.out != nullptr) *f.out = *v;
  }
  // training.dtype: weights and activations; training.grad_dtype: the
  // gradient buffer, by default Megatron's for that dtype
  // (core/architecture.h DefaultGradDtype).
  static const Dtype kDtypes[] = {Dtype::Bf16, Dtype::Fp16, Dtype::Fp32};
  if (const Entry* x = Find(e, "dtype")) {
    Result<size_t> i = Choice(x->value, x->path, {"bf16", "fp16", "fp32"});
    if (!i.ok()) return i.error();
    t.dtype = kDtypes[*i];
    t.activation_bytes = DtypeBytes(t.dtype);
  }
  t.grad_dtype = DefaultGradDtype(t.dtype);
  if (const Entry* x = Find(e, "grad_dtype")) {
    Result<size_t> i = Choice(x->value, x->path, {"bf16", "fp16", "fp32"});
    if (!i.ok()) return i.error();
    t.grad_dtype = kDtypes[*i];
    if (Status s = ValidateGradDtype(t.dtype, t.grad_dtype); !s.ok()) {
      return Fail(x->path, s.error().message);
    }
  }
  t.pp = cfg_.shape.p;
  if (const Entry* x = Find(e, "sequence_parallel")) {
    Result<bool> b = Bool(x->value, x->path);
    if (!b.ok()) return b.error();
    t.sp = *b;
  }
  if (const Entry* x = Find(e, "distributed_optimizer")) {
    Result<bool> b = Bool(x->value, x->path);
    if (!b.ok()) return b.error();
    t.distributed_optimizer = *b;
  }
  if (const Entry* x = Find(e, "optimizer")) {
    // adamw keeps the same state as adam (m and v).
    Result<size_t> i = Choice(x->value, x->path, {"adam", "adamw", "sgd"});
    if (!i.ok()) return i.error();
    t.optimizer = *i == 2 ? Optimizer::Sgd : Optimizer::Adam;
  }
  return t;
}

// hardware: the compute rate of one device, and optionally its memory
// and link: defaults of cluster.devices.memory and cluster.link (the
// cluster keys, when given, win).
Result<Hardware> Parser::ParseHardware(const Entry& section) {
  Result<Entries> r =
      Map(section.value, "hardware",
          {"peak_tflops", "achievable_fraction", "memory", "link"});
  if (!r.ok()) return r.error();
  Hardware h;
  if (const Entry* m = Find(*r, "memory")) {
    Result<Bytes> b = Size(m->value, m->path, true);
    if (!b.ok()) return b.error();
    h.memory_bytes = *b;
    hardware_memory_ = *b;
  }
  if (const Entry* l = Find(*r, "link")) {
    Result<Link> link = ParseLink(*l);
    if (!link.ok()) return link.error();
    hardware_link_ = *link;
  }
  const Entry* peak = Find(*r, "peak_tflops");
  if (peak == nullptr) {
    return Fail("hardware.peak_tflops",
                "must be given (a positive number, TFLOP/s); got nothing");
  }
  Result<double> p = PositiveNumber(peak->value, peak->path);
  if (!p.ok()) return p.error();
  h.peak_tflops = *p;
  hardware_tflops_ = *p;
  if (const Entry* f = Find(*r, "achievable_fraction")) {
    Result<double> x = PositiveNumber(f->value, f->path);
    if (!x.ok()) return x.error();
    if (*x > 1) {
      return Fail(f->path, "must be a number in (0, 1]; got " +
                               f->value.Scalar());
    }
    h.achievable_fraction = *x;
  }
  return h;
}

}  // namespace ppb::config_detail
