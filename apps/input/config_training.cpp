// The inputs of a derived model: model.architecture (written inline) and
// training.* (the parallel setup of one rank, its precision and the step
// model's checks of it); hardware.* is read in config_hardware.cpp. Errors
// as every config error: "file:line: <key>: must be ...; got ...".
#include "apps/input/config_parser.h"

#include "core/rank_layout.h"

#include <algorithm>
#include <climits>

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
           "mtp_layers", "layer_types", "sliding_window",
           "attention_chunk_size", "attention_sinks", "attention_out_bias",
           "attention_output_gate", "hybrid_layer_pattern", "mamba", "deltanet"});
  if (!r.ok()) return r.error();
  const Entries& e = *r;
  Architecture a;
  PPB_ASSIGN_OR_RETURN(a.hidden, ArchInt(e, "hidden_size", path, 1, std::nullopt));
  PPB_ASSIGN_OR_RETURN(a.layers, ArchInt(e, "num_layers", path, 1, std::nullopt));
  PPB_ASSIGN_OR_RETURN(a.heads, ArchInt(e, "num_attention_heads", path, 1, std::nullopt));
  PPB_ASSIGN_OR_RETURN(a.kv_heads, ArchInt(e, "num_key_value_heads", path, 1, a.heads));
  const Entry* mla = Find(e, "mla");
  if (!Find(e, "head_dim") && mla == nullptr && a.hidden % a.heads != 0) {
    return Fail(path + ".num_attention_heads",
                "must divide hidden_size (" + std::to_string(a.hidden) +
                    ") when head_dim is not given; got " +
                    std::to_string(a.heads));
  }
  PPB_ASSIGN_OR_RETURN(a.head_dim, ArchInt(e, "head_dim", path, 1, a.hidden / a.heads));
  PPB_ASSIGN_OR_RETURN(a.ffn, ArchInt(e, "ffn_hidden_size", path, 1, 0));
  PPB_ASSIGN_OR_RETURN(a.vocab, ArchInt(e, "vocab_size", path, 1, std::nullopt));
  PPB_ASSIGN_OR_RETURN(a.tied_embeddings, ArchBool(e, "tie_embeddings", false));
  PPB_ASSIGN_OR_RETURN(a.gated_mlp, ArchBool(e, "gated_mlp", true));
  PPB_ASSIGN_OR_RETURN(a.qkv_bias, ArchBool(e, "qkv_bias", false));
  PPB_ASSIGN_OR_RETURN(a.qk_norm, ArchBool(e, "qk_norm", false));
  if (const Entry* n = Find(e, "norm")) {
    Result<size_t> i = Choice(n->value, n->path, {"rmsnorm", "layernorm"});
    if (!i.ok()) return i.error();
    a.layernorm_with_bias = *i == 1;
  }
  PPB_ASSIGN_OR_RETURN(a.learned_positions, ArchInt(e, "learned_positions", path, 0, 0));
  PPB_ASSIGN_OR_RETURN(a.mtp_layers, ArchInt(e, "mtp_layers", path, 0, 0));
  if (const Entry* moe = Find(e, "moe")) {
    Result<Entries> m =
        Map(moe->value, moe->path,
            {"num_experts", "top_k", "expert_ffn_hidden_size",
             "shared_ffn_hidden_size", "shared_expert_gate", "router_bias",
             "first_k_dense", "layer_freq", "sparse_step", "dense_layers",
             "expert_bias", "latent_size"});
    if (!m.ok()) return m.error();
    const std::string& mp = moe->path;
    // A hybrid model's pattern says which layers are MoE (its E layers): the
    // MoE layout's keys would change nothing.
    if (Find(e, "hybrid_layer_pattern") != nullptr) {
      for (const char* key : {"first_k_dense", "layer_freq", "sparse_step", "dense_layers"}) {
        if (const Entry* k = Find(*m, key)) {
          return Fail(k->path,
                      "must not be given with hybrid_layer_pattern (its E and - layers say "
                      "which layers are MoE); got " + Given(k->value));
        }
      }
    }
    PPB_ASSIGN_OR_RETURN(a.experts, ArchInt(*m, "num_experts", mp, 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.top_k, ArchInt(*m, "top_k", mp, 1, std::nullopt));
    if (a.top_k > a.experts) {
      return Fail(mp + ".top_k", "must be at most moe.num_experts (" +
                                     std::to_string(a.experts) + "); got " +
                                     std::to_string(a.top_k));
    }
    PPB_ASSIGN_OR_RETURN(a.expert_ffn,
             ArchInt(*m, "expert_ffn_hidden_size", mp, 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.shared_ffn, ArchInt(*m, "shared_ffn_hidden_size", mp, 0, 0));
    PPB_ASSIGN_OR_RETURN(a.shared_expert_gate, ArchBool(*m, "shared_expert_gate", false));
    PPB_ASSIGN_OR_RETURN(a.router_bias, ArchBool(*m, "router_bias", false));
    PPB_ASSIGN_OR_RETURN(a.expert_bias, ArchBool(*m, "expert_bias", false));
    // Megatron-LM's moe_latent_size (Nemotron 3 Super: 1024 at h 4096).
    PPB_ASSIGN_OR_RETURN(a.moe_latent, ArchInt(*m, "latent_size", mp, 1, 0));
    PPB_ASSIGN_OR_RETURN(a.moe_layout.first_k_dense,
             ArchInt(*m, "first_k_dense", mp, 0, 0));
    PPB_ASSIGN_OR_RETURN(a.moe_layout.moe_layer_freq, ArchInt(*m, "layer_freq", mp, 1, 1));
    PPB_ASSIGN_OR_RETURN(a.moe_layout.decoder_sparse_step,
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
    PPB_ASSIGN_OR_RETURN(a.q_lora_rank, ArchInt(*m, "q_lora_rank", mp, 0, 0));
    PPB_ASSIGN_OR_RETURN(a.kv_lora_rank, ArchInt(*m, "kv_lora_rank", mp, 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.qk_nope_head_dim,
             ArchInt(*m, "qk_nope_head_dim", mp, 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.qk_rope_head_dim,
             ArchInt(*m, "qk_rope_head_dim", mp, 1, std::nullopt));
    PPB_ASSIGN_OR_RETURN(a.v_head_dim, ArchInt(*m, "v_head_dim", mp, 1, std::nullopt));
    if (const Entry* kv = Find(e, "num_key_value_heads")) {
      return Fail(kv->path,
                  "must not be given with model.architecture.mla (MLA gives "
                  "every head its own K and V); got " +
                      Given(kv->value));
    }
    a.kv_heads = a.heads;
  }
  PPB_ASSIGN_OR_RETURN(a.attention_sinks, ArchBool(e, "attention_sinks", false));
  PPB_ASSIGN_OR_RETURN(a.out_bias, ArchBool(e, "attention_out_bias", false));
  // A sigmoid gate on the attention output, one value a query channel, from
  // the QKV projection (Megatron-LM core 0.20 TransformerConfig
  // attention_output_gate: linear_qkv grows by heads x kv_channels; Qwen3-
  // Next's q_proj). Megatron refuses it with MLA (transformer_config.py
  // MLATransformerConfig: "Output gate is not supported for MLA yet").
  PPB_ASSIGN_OR_RETURN(a.attention_out_gate, ArchBool(e, "attention_output_gate", false));
  if (a.attention_out_gate && mla != nullptr) {
    return Fail(path + ".attention_output_gate",
                "must not be true with model.architecture.mla (Megatron-LM: \"Output gate is "
                "not supported for MLA yet\"); got true");
  }
  if (Status s = ParseHybridPattern(e, path, a); !s.ok()) return s.error();
  if (Status s = ParseLayerTypes(e, path, a); !s.ok()) return s.error();
  if (a.heads % a.kv_heads != 0) {
    return Fail(path + ".num_key_value_heads",
                "must divide num_attention_heads (" +
                    std::to_string(a.heads) + "); got " +
                    std::to_string(a.kv_heads));
  }
  return a;
}

// model.architecture.layer_types (one mixer per decoder layer, by
// HuggingFace's names: GPT-OSS's config.json "layer_types"; Qwen3-Next's
// "linear_attention", a gated DeltaNet beside the layer's MLP, its shape
// model.architecture.deltanet; ppb's "chunked_attention" for Llama 4's
// chunked layers) with the window of each span used: sliding_window for a
// sliding_attention layer, attention_chunk_size for a chunked_attention
// one. A window given with no layer of its span is refused (it would
// change nothing).
Status Parser::ParseLayerTypes(const Entries& e, const std::string& path,
                               Architecture& a) {
  const Entry* types = Find(e, "layer_types");
  bool linear = false;
  if (types != nullptr) {
    Result<std::vector<Entry>> items =
        List(types->value, types->path,
             "a list of full_attention, sliding_attention, chunked_attention or "
             "linear_attention, one per decoder layer");
    if (!items.ok()) return items.error();
    if (static_cast<std::int64_t>(items->size()) != a.layers) {
      return Fail(types->path,
                  "must have one entry per decoder layer (num_layers: " +
                      std::to_string(a.layers) + "); got " +
                      std::to_string(items->size()));
    }
    a.blocks.assign(items->size(), LayerBlock{});
    for (size_t i = 0; i < items->size(); ++i) {
      const Entry& item = (*items)[i];
      Result<size_t> k = Choice(item.value, item.path,
                                {"full_attention", "sliding_attention",
                                 "chunked_attention", "linear_attention"});
      if (!k.ok()) return k.error();
      a.blocks[i].span = *k == 1   ? Span::Sliding
                         : *k == 2 ? Span::Chunked
                                   : Span::Full;
      if (*k == 3) {
        a.blocks[i].mixer = Mixer::GatedDeltaNet;
        linear = true;
      }
    }
  }
  if (Find(e, "hybrid_layer_pattern") == nullptr) {
    PPB_RETURN_IF_ERROR(ParseDeltaNet(Find(e, "deltanet"), linear,
                                      types != nullptr ? "no linear_attention in layer_types"
                                                       : "neither",
                                      path, a));
  }
  struct Window {
    const char* key;
    Span span;
    const char* name;
    std::int64_t* value;
  };
  for (const Window& w :
       {Window{"sliding_window", Span::Sliding, "sliding_attention",
               &a.sliding_window},
        Window{"attention_chunk_size", Span::Chunked, "chunked_attention",
               &a.attention_chunk}}) {
    const bool used = a.HasSpan(w.span);
    const Entry* x = Find(e, w.key);
    if (x == nullptr) {
      if (!used) continue;
      return Fail(path + "." + w.key,
                  std::string("must be given (a positive integer) when a "
                              "layer_types entry is ") +
                      w.name + "; got nothing");
    }
    if (!used) {
      return Fail(x->path,
                  std::string("must be given only with a layer_types entry ") +
                      w.name + " (no layer uses it); got " + Given(x->value));
    }
    Result<std::int64_t> v =
        Integer(x->value, x->path, 1, INT_MAX, "a positive integer");
    if (!v.ok()) return v.error();
    *w.value = *v;
  }
  return Status();
}

// The keys of training:.
Result<Entries> Parser::TrainingEntries(const Entry& section) {
  return Map(section.value, "training",
             {"seq_length", "micro_batch_size", "dtype", "grad_dtype",
              "tensor_parallel", "sequence_parallel", "context_parallel",
              "expert_parallel", "data_parallel", "distributed_optimizer",
              "optimizer", "global_batch_size", "overlap_grad_reduce",
              "overlap_param_gather", "tp_comm_overlap", "routing_skew",
              "tp_across_nodes", "fp8", "fp4", "fp8_param_gather",
              "first_last_layers_bf16", "data_parallel_sharding", "fsdp",
              "data_parallel_shard", "reshard_after_forward", "offload", "moe"});
}

// training.global_batch_size: m = global / (data_parallel x
// micro_batch_size), which must divide (Megatron's
// get_num_microbatches: global_batch_size % (micro_batch_size x dp) == 0).
Status Parser::PeekGlobalBatch(const Entry* training) {
  if (training == nullptr) return Status();
  Result<Entries> r = TrainingEntries(*training);
  if (!r.ok()) return r.error();
  const Entry* g = Find(*r, "global_batch_size");
  if (g == nullptr) return Status();
  Result<int> gbs = PositiveInt(g->value, g->path);
  if (!gbs.ok()) return gbs.error();
  std::int64_t per = 1;
  std::string text;
  for (const char* key : {"data_parallel", "micro_batch_size"}) {
    int v = 1;
    if (const Entry* x = Find(*r, key)) {
      Result<int> n = PositiveInt(x->value, x->path);
      if (!n.ok()) return n.error();
      v = *n;
    }
    per *= v;
    text += (text.empty() ? "" : " x ") + std::to_string(v);
  }
  if (*gbs % per != 0) {
    return Fail(g->path, "must be a multiple of data_parallel x "
                         "micro_batch_size (" + text + " = " +
                             std::to_string(per) + "); got " +
                             std::to_string(*gbs));
  }
  global_microbatches_ = static_cast<int>(*gbs / per);
  global_batch_ = *gbs;
  return Status();
}

// The step model's checks and settings (Hardware::step_model).
Status Parser::ApplyStepModel(const Architecture& a, Training& t,
                              const Hardware& h) {
  t.flash_attention = true;
  if (t.low.on()) {
    const std::string key = IsFp4(t.low.recipe) ? "training.fp4" : "training.fp8";
    const std::string recipe_key =
        cfg_.key_lines.count(key + ".recipe") ? key + ".recipe" : key;
    if (std::string why = RecipeRuns(t.low.recipe, h.gpu); !why.empty()) {
      return Fail(recipe_key, "must be a recipe the GPU runs: " + why +
                                  "; got " + RecipeName(t.low.recipe));
    }
    if (static_cast<std::int64_t>(t.low.bf16_start) + t.low.bf16_end > a.layers) {
      return Fail("training.first_last_layers_bf16",
                  "must keep at most the model's " + std::to_string(a.layers) +
                      " layers in bf16 (start + end); got " +
                      std::to_string(t.low.bf16_start) + " + " +
                      std::to_string(t.low.bf16_end));
    }
    if (t.low.param_gather && !t.distributed_optimizer && !t.sharding.fsdp_on()) {
      // Megatron's validate_args: --fp8-param-gather needs the
      // distributed optimizer (or an FSDP).
      return Fail("training.fp8_param_gather",
                  "must be given with training.distributed_optimizer: true or an FSDP "
                  "(Megatron gathers FP8 parameters in the distributed "
                  "optimizer); got true without either");
    }
    if (t.low.param_gather && t.sharding.fsdp == Fsdp::Torch &&
        t.low.recipe != Recipe::Fp8Tensorwise) {
      return Fail("training.fp8_param_gather",
                  "must be given with the tensorwise recipe under training.fsdp: torch "
                  "(torchao's float8 all-gather; torchtitan's MXFP8 and NVFP4 gather in "
                  "high precision); got true with " +
                      std::string(RecipeName(t.low.recipe)));
    }
  }
  // Megatron divides the query heads and the KV groups over t
  // (megatron/core/transformer/attention.py: divide(num_query_groups,
  // world_size)); it does not replicate KV heads.
  if (a.heads % t.tp != 0 || (!a.mla() && a.kv_heads % t.tp != 0)) {
    return Fail("training.tensor_parallel",
                "must divide the attention heads (" + std::to_string(a.heads) +
                    ") and the KV heads (" + std::to_string(KvHeads(a)) +
                    "): Megatron splits both over the tensor-parallel ranks "
                    "and does not replicate KV heads; got " +
                    std::to_string(t.tp));
  }
  // Megatron's gated DeltaNet divides its key and value heads over TP x CP
  // (TransformerConfig.__post_init__: "linear_num_key_heads must be a
  // multiple of (tensor_model_parallel_size * context_parallel_size)").
  if (a.HasMixer(Mixer::GatedDeltaNet) &&
      (a.deltanet.key_heads % (t.tp * t.cp) != 0 || a.deltanet.value_heads % (t.tp * t.cp) != 0)) {
    return Fail("training.tensor_parallel",
                "x context_parallel must divide the gated DeltaNet's key heads (" +
                    std::to_string(a.deltanet.key_heads) + ") and value heads (" +
                    std::to_string(a.deltanet.value_heads) + "), as Megatron asserts; got " +
                    std::to_string(t.tp) + " x " + std::to_string(t.cp));
  }
  if (t.tp > h.gpu.nvlink_domain && !t.tp_across_nodes) {
    const bool node = h.gpu.nvlink_domain == h.gpu.gpus_per_node;
    return Fail("training.tensor_parallel",
                std::string(node ? "must fit in a node (hardware.gpus_per_node = "
                                 : "must fit in an NVLink domain (hardware.nvlink_domain = ") +
                    std::to_string(h.gpu.nvlink_domain) +
                    "; set training.tp_across_nodes: true to let its "
                    "all-reduces cross the NICs); got " + std::to_string(t.tp));
  }
  if ((t.dp * t.cp) % t.ep != 0 && ExpertTp(t) == t.tp) {
    // Megatron's expert rank generator: the expert-data-parallel size is
    // (dp x cp) / ep (parallel_state.py); with another expert TP the
    // folding rule of training.moe.expert_tensor_parallel (CheckMoe).
    return Fail("training.expert_parallel",
                "must divide data_parallel x context_parallel (" +
                    std::to_string(t.dp) + " x " + std::to_string(t.cp) +
                    "): expert-parallel ranks are data-parallel ranks; got " +
                    std::to_string(t.ep));
  }
  if (t.seq % t.cp != 0 || (t.cp > 1 && (t.seq / t.cp) % 2 != 0)) {
    return Fail("training.context_parallel",
                "must divide seq_length into an even share per rank "
                "(Megatron's load-balanced causal split needs 2 x cp "
                "chunks); got " + std::to_string(t.cp) + " for " +
                    std::to_string(t.seq));
  }
  const JobGroups groups = PlaceJob(t, h.gpu);
  // Pipeline messages: the hidden states (their 1/t share with SP), on the
  // link between neighbouring pipeline ranks, at the collective
  // efficiency of their size.
  std::vector<Link> links = PipelineLinks(t, h.gpu);
  const std::int64_t msg = t.activation_bytes * (t.seq / t.cp) *
                           t.micro_batch * a.hidden / (t.sp ? t.tp : 1);
  for (Link& l : links) {
    const GroupLink g{static_cast<double>(l.bandwidth), l.latency, false};
    l.bandwidth = static_cast<BytesPerSec>(
        std::llround(EffectiveBandwidth(g, msg, h.gpu.network)));
  }
  step_links_ = links;
  StepTail& tail = cfg_.shape.tail;
  tail.enabled = true;
  tail.overlap_grad_reduce = t.overlap_grad_reduce;
  tail.overlap_param_gather = t.overlap_param_gather;
  // Sharded data parallelism (core/sharding.h): the shard groups, the HSDP
  // replicas, and which of the tail's collectives the units run instead.
  const UnitTraffic units = UnitTrafficOf(t.sharding, t.pp);
  tail.sync_in_pipeline = units.reduce_per_microbatch;
  tail.params_sharded = !units.gather_after_optimizer;
  tail.distributed_optimizer = t.distributed_optimizer || t.sharding.fsdp == Fsdp::Torch;
  tail.dp = groups.dp_shard.size;
  tail.dp_link = groups.dp_shard.link;
  tail.expert_dp = groups.expert_shard.size;
  tail.expert_dp_link = groups.expert_shard.link;
  tail.replicate = groups.dp_replicate.size;
  tail.replicate_link = groups.dp_replicate.link;
  tail.expert_replicate_link = groups.expert_replicate.link;
  const int grad = DtypeBytes(t.grad_dtype);
  // Megatron's default bucket: max(40M, 1M x dp) parameters with
  // overlap_grad_reduce, else one (DistributedDataParallel.__init__).
  tail.bucket_bytes =
      t.overlap_grad_reduce
          ? std::max<Bytes>(40'000'000, 1'000'000LL * groups.dp_cp.size) * grad
          : 0;
  // --fp8-param-gather gathers the quantized primaries: the linears'
  // weights, nearly all of a large model's parameters, at their low bytes.
  tail.param_per_grad =
      (t.low.param_gather ? GatheredParamBytes(t.low.recipe)
                          : static_cast<double>(DtypeBytes(t.dtype))) /
      grad;
  tail.efficiency = h.gpu.network;
  if (a.tied_embeddings && t.pp > 1) {
    // The first and the last pipeline rank all-reduce the word-embedding
    // gradient V x h / t (finalize_model_grads, _allreduce_embedding_grads).
    const GroupPlacement emb =
        PlaceGroup(2, (t.pp - 1) * groups.pp_stride, h.gpu);
    tail.embedding_sync =
        CollectiveTime(Collective::AllReduce, 2, a.vocab * a.hidden / t.tp * grad,
                       emb.link, h.gpu.network);
  }
  return Status();
}

// training.fp8 / fp4 / fp8_param_gather / first_last_layers_bf16, with
// Megatron-LM's names (arguments.py at d98e8a6): --fp8-format
// {e4m3, hybrid} --fp8-recipe {delayed, tensorwise, blockwise, mxfp8},
// --fp4-format e2m1 --fp4-recipe nvfp4, --fp8-param-gather,
// --first-last-layers-bf16 --num-layers-at-{start,end}-in-bf16. Whether
// the GPU runs the recipe is checked with the hardware (ApplyStepModel).
Status Parser::ParseLowPrecision(const Entries& e, Training& t) {
  const Entry* fp8 = Find(e, "fp8");
  const Entry* fp4 = Find(e, "fp4");
  if (fp8 != nullptr && fp4 != nullptr) {
    return Fail(fp4->path, "must not be given with training.fp8 (Megatron "
                           "trains the linears in one low precision: "
                           "--fp8-format or --fp4-format); got both");
  }
  if (fp8 != nullptr) {
    Result<Entries> m = Map(fp8->value, fp8->path, {"format", "recipe"});
    if (!m.ok()) return m.error();
    // Megatron's --fp8-recipe default is delayed; --fp8-format has none
    // (its examples and Megatron-Bridge use hybrid), so hybrid here.
    t.low.recipe = Recipe::Fp8Delayed;
    if (const Entry* f = Find(*m, "format")) {
      Result<size_t> i = Choice(f->value, f->path, {"e4m3", "hybrid"});
      if (!i.ok()) return i.error();
      t.low.hybrid = *i == 1;
    }
    if (const Entry* r = Find(*m, "recipe")) {
      static const Recipe kFp8[] = {Recipe::Fp8Delayed, Recipe::Fp8Tensorwise,
                                    Recipe::Fp8Blockwise, Recipe::Mxfp8};
      Result<size_t> i = Choice(r->value, r->path,
                                {"delayed", "tensorwise", "blockwise", "mxfp8"});
      if (!i.ok()) return i.error();
      t.low.recipe = kFp8[*i];
    }
  }
  if (fp4 != nullptr) {
    Result<Entries> m = Map(fp4->value, fp4->path, {"format", "recipe"});
    if (!m.ok()) return m.error();
    if (const Entry* f = Find(*m, "format")) {
      Result<size_t> i = Choice(f->value, f->path, {"e2m1"});
      if (!i.ok()) return i.error();
    }
    t.low.recipe = Recipe::Nvfp4;
    if (const Entry* r = Find(*m, "recipe")) {
      Result<size_t> i = Choice(r->value, r->path, {"nvfp4"});
      if (!i.ok()) return i.error();
    }
  }
  if (const Entry* x = Find(e, "fp8_param_gather")) {
    Result<bool> b = Bool(x->value, x->path);
    if (!b.ok()) return b.error();
    t.low.param_gather = *b;
    if (*b && !t.low.on()) {
      return Fail(x->path, "must be given with training.fp8 or training.fp4 "
                           "(it gathers quantized parameters); got true "
                           "without either");
    }
  }
  if (const Entry* x = Find(e, "first_last_layers_bf16")) {
    Result<Entries> m = Map(x->value, x->path, {"start", "end"});
    if (!m.ok()) return m.error();
    if (!t.low.on()) {
      return Fail(x->path, "must be given with training.fp8 or training.fp4 "
                           "(it keeps edge layers out of low precision); got "
                           "it without either");
    }
    if (t.low.recipe == Recipe::Fp8Delayed) {
      return Fail(x->path, "must not be given with the delayed recipe "
                           "(Megatron refuses --first-last-layers-bf16 with "
                           "--fp8-recipe delayed); got it with delayed");
    }
    // Megatron's defaults: --num-layers-at-start-in-bf16 and
    // --num-layers-at-end-in-bf16 are 1.
    t.low.bf16_start = 1;
    t.low.bf16_end = 1;
    for (auto [key, out] : {std::pair<const char*, int*>{"start", &t.low.bf16_start},
                            {"end", &t.low.bf16_end}}) {
      if (const Entry* v = Find(*m, key)) {
        Result<std::int64_t> n = Integer(v->value, v->path, 0, INT_MAX,
                                         "a non-negative integer");
        if (!n.ok()) return n.error();
        *out = static_cast<int>(*n);
      }
    }
  }
  return Status();
}

// training: the parallel setup of one pipeline rank.
Result<Training> Parser::ParseTraining(const Entry& section) {
  Result<Entries> r = TrainingEntries(section);
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
    const std::string given = x->value.IsScalar() ? Lower(x->value.Scalar()) : "";
    if (given == "fp8" || given == "fp4" || given == "mxfp8" || given == "nvfp4") {
      // Low precision trains the linears, not the weights' dtype.
      return Fail(x->path, "must be one of bf16, fp16, fp32 (the high-precision dtype; "
                           "the linears' " + given + " is training.fp8: {recipe: ...} or "
                           "training.fp4: {recipe: nvfp4}); got " + x->value.Scalar());
    }
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
  for (auto [key, out] :
       {std::pair<const char*, bool*>{"distributed_optimizer",
                                      &t.distributed_optimizer},
        {"overlap_grad_reduce", &t.overlap_grad_reduce},
        {"overlap_param_gather", &t.overlap_param_gather},
        {"tp_comm_overlap", &t.tp_comm_overlap},
        {"tp_across_nodes", &t.tp_across_nodes}}) {
    if (const Entry* x = Find(e, key)) {
      Result<bool> b = Bool(x->value, x->path);
      if (!b.ok()) return b.error();
      *out = *b;
    }
  }
  PPB_RETURN_IF_ERROR(ParseLowPrecision(e, t));
  PPB_RETURN_IF_ERROR(ParseSharding(e, t));
  if (t.overlap_param_gather && !t.overlap_grad_reduce) {
    // Megatron's validate_args: "Must use --overlap-param-gather with
    // --overlap-grad-reduce".
    return Fail("training.overlap_param_gather",
                "must be given with training.overlap_grad_reduce: true "
                "(Megatron requires it); got true without it");
  }
  if (t.overlap_param_gather && !t.distributed_optimizer &&
      t.sharding.fsdp == Fsdp::None) {
    return Fail("training.overlap_param_gather",
                "must be given with training.distributed_optimizer: true or an FSDP "
                "(only they gather parameters); got true without either");
  }
  if (const Entry* x = Find(e, "global_batch_size")) {
    Result<int> g = PositiveInt(x->value, x->path);
    if (!g.ok()) return g.error();
    t.global_batch = *g;
  }
  if (const Entry* x = Find(e, "routing_skew")) {
    Result<double> k = PositiveNumber(x->value, x->path);
    if (!k.ok()) return k.error();
    // At most 1,000: the busiest rank's share cannot pass the EP size, and
    // beyond it the expert GEMMs would price steps of years.
    if (*k < 1 || *k > 1000) {
      return Fail(x->path, "must be in [1, 1000] (the busiest rank's tokens "
                           "over the mean); got " + x->value.Scalar());
    }
    t.routing_skew = *k;
  }
  if (const Entry* x = Find(e, "moe")) PPB_RETURN_IF_ERROR(ParseMoe(*x, t));
  if (const Entry* x = Find(e, "optimizer")) {
    // adamw keeps the same state as adam (m and v).
    Result<size_t> i = Choice(x->value, x->path, {"adam", "adamw", "sgd"});
    if (!i.ok()) return i.error();
    t.optimizer = *i == 2 ? Optimizer::Sgd : Optimizer::Adam;
  }
  return t;
}

}  // namespace ppb::config_detail
