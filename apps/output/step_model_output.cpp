#include "apps/output/step_model_output.h"

#include <fmt/format.h>

#include <vector>

#include "core/dp_costs.h"
#include "core/layer_kernels.h"
#include "core/rank_layout.h"
#include "core/step_tail.h"

namespace ppb {
namespace {

using Json = nlohmann::ordered_json;

double Ms(Nanos t) { return static_cast<double>(t) / 1e6; }
double MiB(double b) { return b / (1 << 20); }

// The first layer of each kind, in model order: one of each is shown.
std::vector<const DerivedLayer*> Distinct(const RunConfig& config) {
  std::vector<const DerivedLayer*> out;
  for (const DerivedLayer& d : config.derived) {
    bool seen = false;
    for (const DerivedLayer* x : out) seen |= x->layer.kind == d.layer.kind;
    if (!seen) out.push_back(&d);
  }
  return out;
}

std::string Peak(double tflops) {
  return tflops > 0 ? fmt::format("{:g}", tflops) : std::string("none");
}

}  // namespace

std::string StepModelText(const RunConfig& config) {
  const Hardware& h = config.hardware;
  const Gpu& g = h.gpu;
  const Training& t = config.training;
  const JobGroups groups = PlaceJob(t, g);
  std::string s = fmt::format("step model: {}\n  source: {}\n", g.name, g.source);
  s += fmt::format(
      "  peak {:g} TFLOP/s dense 16-bit; HBM {:.1f} GiB at {:g} GB/s; NVLink "
      "{:g} GB/s per direction, {} GPUs per node; NIC {:g} GB/s per GPU\n",
      h.peak_tflops, static_cast<double>(h.memory_bytes) / (1 << 30),
      g.hbm_bytes_per_s / 1e9, g.nvlink_bytes_per_s / 1e9, g.gpus_per_node,
      g.nic_bytes_per_s / 1e9);
  s += fmt::format(
      "  {}: dense FP8 {} and FP4 {} TFLOP/s; NVLink domain {} GPUs; host "
      "link {} {:g} GB/s per direction\n",
      GpuArchName(g.arch), Peak(g.fp8_tflops), Peak(g.fp4_tflops),
      g.nvlink_domain, g.host_link.empty() ? "-" : g.host_link,
      g.host_bytes_per_s / 1e9);
  s += "  coefficients (guesses to calibrate; hardware.<key> overrides each):\n";
  s += fmt::format(
      "    matmul_efficiency {:g}, matmul_half_time {:g} us, "
      "attention_efficiency {:g}, hbm_efficiency {:g}, kernel_floor {:g} us\n",
      g.compute.matmul, static_cast<double>(g.compute.matmul_half_time) / 1e3,
      g.compute.attention, g.compute.hbm,
      static_cast<double>(g.compute.kernel_floor) / 1e3);
  s += fmt::format("    fp8_matmul_efficiency {:g}, fp4_matmul_efficiency {:g} "
                   "(shares of the FP8 and FP4 peaks)\n",
                   g.compute.fp8_matmul, g.compute.fp4_matmul);
  s += fmt::format(
      "    collective_efficiency {:g}, collective_half_size {:g} MiB, "
      "intra_node latency {:g} us, inter_node latency {:g} us, memory_reserve "
      "{:g} GiB\n",
      g.network.collective, MiB(static_cast<double>(g.network.collective_half_size)),
      static_cast<double>(g.intra_latency) / 1e3,
      static_cast<double>(g.inter_latency) / 1e3,
      static_cast<double>(h.memory_reserve) / (1 << 30));
  s += fmt::format(
      "    launch_overhead {:g} us per kernel (host dispatch: a pass takes at least its "
      "launches), layer_overhead {:g} us per layer and pass (synchronizing host work), "
      "microbatch_overhead {:g} us per F and B pass where the pipeline's "
      "sends block (Megatron's torch.cuda.synchronize after each exchange; core/gpu.h)\n",
      static_cast<double>(g.compute.launch_overhead) / 1e3,
      static_cast<double>(g.compute.layer_overhead) / 1e3,
      static_cast<double>(g.compute.microbatch_overhead) / 1e3);
  const ProcessMemory& pm = g.process_memory;
  s += fmt::format(
      "    memory_fragmentation {:g} (the caching allocator's reserved-but-free share: "
      "GMLake, ASPLOS 2024), memory_nccl_per_peer {:g} MiB (NVIDIA/nccl #1685) x {} "
      "peers, memory_nccl_per_net_peer {:g} MiB (2 channels per network peer) x {} peers, "
      "memory_context {:g} MiB, memory_workspace {:g} MiB (cuBLAS and TE, "
      "32 MiB per stream) (core/process_memory.h)\n",
      pm.fragmentation, MiB(static_cast<double>(pm.nccl_per_peer)), h.nccl_peers.peers,
      MiB(static_cast<double>(pm.nccl_per_net_peer)), h.nccl_peers.net_peers,
      MiB(static_cast<double>(pm.context)), MiB(static_cast<double>(pm.workspace)));
  if (config.architecture.experts > 0) {
    const EpKernelEfficiency& x = g.ep_kernels;
    s += fmt::format("    deepep_nvlink_efficiency {:g}, deepep_rdma_efficiency {:g}, "
                     "hybridep_efficiency_8 {:g}, hybridep_efficiency_36 {:g} (measured "
                     "shares of NVLink and the NICs: DeepEP README, HybridEP docs; "
                     "core/moe.h); ep_overlap_efficiency {:g} (the share the combined "
                     "1F1B hides of what it could)\n",
                     x.deepep_nvlink, x.deepep_rdma, x.hybridep_8, x.hybridep_36, x.overlap);
    const MoeSettings& m = t.moe;
    s += fmt::format("  moe: dispatcher {}{}, expert TP {}, {}, {}{}\n",
                     DispatcherName(m.dispatcher),
                     m.dispatcher == Dispatcher::Flex
                         ? std::string(" (") + FlexBackendName(m.backend) + ")"
                         : std::string(),
                     ExpertTp(t),
                     m.capacity_factor > 0
                         ? fmt::format("capacity factor {:g}{}", m.capacity_factor,
                                       m.pad_to_capacity ? " padded" : "")
                         : std::string("dropless"),
                     m.force_balance     ? std::string("routing force-balanced")
                     : m.loads.given()   ? "measured loads from " + m.loads.file
                                         : fmt::format("routing skew {:g}", t.routing_skew),
                     m.overlap_ep_comm ? ", combined 1F1B (dispatcher collectives behind the "
                                         "other micro-batch's compute)"
                                       : "");
  }
  if (h.fraction_given) {
    s += fmt::format(
        "    achievable_fraction {:g} given: GEMMs and attention run at that "
        "share of the peak (no efficiency curve)\n",
        h.achievable_fraction);
  }
  if (t.low.on()) {
    s += fmt::format(
        "  low precision: {} (Megatron --{}-recipe {}{}){}{}; the router, "
        "attention core, embedding, LM head, norms and activations stay "
        "{}\n",
        RecipeName(t.low.recipe), IsFp4(t.low.recipe) ? "fp4" : "fp8",
        MegatronRecipe(t.low.recipe),
        IsFp4(t.low.recipe) ? ", --fp4-format e2m1"
                            : (t.low.hybrid ? ", --fp8-format hybrid"
                                            : ", --fp8-format e4m3"),
        t.low.param_gather ? ", fp8_param_gather" : "",
        t.low.bf16_start + t.low.bf16_end > 0
            ? fmt::format(", first {} and last {} layers bf16",
                          t.low.bf16_start, t.low.bf16_end)
            : std::string(),
        DtypeName(t.dtype));
  }
  s += fmt::format(
      "  groups (Megatron's rank order tp-cp-ep-dp-pp): {}; {}; {}; {}; {}; "
      "pipeline neighbours {} ranks apart\n",
      GroupText("tp", groups.tp), GroupText("cp", groups.cp),
      GroupText("ep", groups.ep), GroupText("dp x cp", groups.dp_cp),
      GroupText("expert dp", groups.expert_dp), groups.pp_stride);
  for (const DerivedLayer* d : Distinct(config)) {
    const LayerKernels& k = d->kernels;
    s += fmt::format("kernels of {} (one rank, one micro-batch; the backward "
                     "runs each GEMM twice, dgrad in I and wgrad in W):\n",
                     d->layer.name);
    for (const Gemm& gm : k.gemms) {
      const double one = gm.flops() / gm.count;
      s += fmt::format("  gemm {:<12} {} x {} x {}{}  {:.1f} GFLOP  eff {:.3f}  "
                       "{:.3f} ms{}\n",
                       gm.name, gm.m, gm.n, gm.k,
                       gm.count > 1 ? fmt::format(" (x{})", gm.count) : "",
                       gm.flops() / 1e9, GemmEfficiency(one * gm.skew, h, gm.recipe),
                       Ms(GemmTime(gm, h)),
                       gm.recipe != Recipe::None
                           ? fmt::format("  {}", RecipeName(gm.recipe))
                           : (k.recipe != Recipe::None ? fmt::format("  {}", DtypeName(t.dtype))
                                                       : std::string()));
    }
    if (k.recipe != Recipe::None) {
      s += fmt::format(
          "  quantize ({}) {:.1f} M input elements ({:.1f} M cast in the norm) "
          "{:.3f} ms forward; {:.1f} M output-gradient elements {:.3f} ms "
          "backward{}; weights {:.1f} M once per step {:.3f} ms\n",
          RecipeName(k.recipe), (k.quantize_input + k.quantize_input_fused) / 1e6,
          k.quantize_input_fused / 1e6, Ms(d->times.quantize_forward),
          k.quantize_grad / 1e6, Ms(d->times.quantize_backward),
          d->times.quantize_wgrad > 0
              ? fmt::format(", Hadamard of the gradient {:.3f} ms in W",
                            Ms(d->times.quantize_wgrad))
              : std::string(),
          k.quantize_weight / 1e6, Ms(d->times.quantize_weight_step));
    }
    if (k.attention_flops > 0) {
      s += fmt::format("  attention core (causal, FlashAttention) {:.1f} GFLOP  "
                       "{:.3f} ms forward, {:.3f} ms backward\n",
                       k.attention_flops / 1e9, Ms(d->times.attention),
                       2.5 * Ms(d->times.attention));
    }
    if (k.elementwise_bytes > 0) {
      s += fmt::format("  element-wise {:.1f} MiB in {} kernels  {:.3f} ms "
                       "forward (twice the bytes backward)\n",
                       MiB(static_cast<double>(k.elementwise_bytes)),
                       k.elementwise_kernels,
                       Ms(ElementwiseTime(k.elementwise_bytes, k.elementwise_kernels, h)));
    }
    for (const CommOp& c : k.comms) {
      s += fmt::format("  {} {:.2f} MiB on {}  {:.3f} ms  x{} forward, x{} "
                       "backward\n",
                       c.name, MiB(static_cast<double>(c.bytes)),
                       GroupText(CommGroupName(c.group), GroupOf(c.group, groups)),
                       Ms(CommTime(c, groups, h)), c.forward, c.backward);
    }
    s += fmt::format("  exposed collectives {:.3f} ms forward, {:.3f} ms "
                     "backward{}\n",
                     Ms(d->times.comm_forward), Ms(d->times.comm_backward),
                     t.tp_comm_overlap ? " (tp_comm_overlap: beyond the GEMMs)" : "");
    // host_exposed holds the launches the GPU waits for and, once in the
    // forward and once in I, hardware.layer_overhead: said apart.
    const Nanos per_layer = 2 * h.gpu.compute.layer_overhead;
    s += fmt::format("  host launches {:.3f} ms forward, {:.3f} ms backward (I), {:.3f} ms "
                     "(W); the GPU waits {:.3f} ms of them\n",
                     Ms(d->times.host_forward), Ms(d->times.host_backward_input),
                     Ms(d->times.host_backward_weight),
                     Ms(d->times.host_exposed - per_layer));
    if (per_layer > 0) {
      s += fmt::format("  host work per layer (layer_overhead) {:.3f} ms forward, {:.3f} ms "
                       "backward (I): the GPU waits for it\n",
                       Ms(h.gpu.compute.layer_overhead), Ms(h.gpu.compute.layer_overhead));
    }
    if (d->sharded_forward + d->sharded_backward + d->layer.step_gather > 0 ||
        t.sharding.per_unit()) {
      const UnitTraffic u = UnitTrafficOf(ShardingOf(t), t.pp);
      s += fmt::format(
          "  sharded unit ({} {} over {}): all-gather {}, reduce-scatter {}; exposed {:.3f} ms "
          "forward, {:.3f} ms backward{}\n",
          FsdpTitle(t.sharding.fsdp), DpShardingName(t.sharding.strategy), GroupText("dp shard", groups.dp_shard),
          u.gather_per_step ? "once per step"
          : u.gather_backward ? "before every forward and backward"
          : u.gather_forward ? "before every forward"
                             : "none in the micro-batches",
          u.reduce_per_microbatch ? "after every backward" : "once per step",
          Ms(d->sharded_forward), Ms(d->sharded_backward),
          d->layer.step_gather > 0
              ? fmt::format(" (the step's gather {:.3f} ms)", Ms(d->layer.step_gather))
              : std::string());
    }
    if (d->offloaded > 0) {
      s += fmt::format("  offload: {:.2f} MiB of activations to the host per micro-batch over "
                       "{} ({:g} GB/s); exposed {:.3f} ms forward, {:.3f} ms backward\n",
                       MiB(static_cast<double>(d->offloaded)), g.host_link,
                       g.host_bytes_per_s / 1e9, Ms(d->offload_forward),
                       Ms(d->offload_backward));
    }
    const StepTail& tail = config.shape.tail;
    s += fmt::format(
        "  tail: {:.2f} MiB of gradients ({} alone {:.3f} ms over dp x cp "
        "{}), optimizer {:.3f} ms\n",
        MiB(static_cast<double>(d->layer.grad_bytes)),
        t.distributed_optimizer ? "reduce-scatter" : "all-reduce",
        Ms(GradSyncTime(tail, d->layer.grad_bytes, tail.dp, tail.dp_link, false)),
        tail.dp, Ms(d->layer.optimizer));
  }
  const StepTail& tail = config.shape.tail;
  if (t.sharding.per_unit()) {
    s += fmt::format(
        "step tail: {}; {}; the optimizer on its shard ({}); {}\n",
        tail.sync_in_pipeline
            ? std::string("gradients reduce-scattered in every micro-batch's backward (no "
                          "sync after the pipeline)")
            : fmt::format("gradients reduce-scattered over {} {} once, after each stage's last "
                          "backward",
                          t.sharding.fsdp == Fsdp::Torch ? "dp shard" : "dp x cp", tail.dp),
        tail.replicate > 1 ? fmt::format("then all-reduced over {} replicas (HSDP)",
                                         tail.replicate)
                           : std::string("no replicas"),
        t.offload.optimizer > 0
            ? fmt::format("{:g} of it on the host CPU at {:g} params/s", t.offload.optimizer,
                          g.compute.host_optimizer)
            : std::string("on the GPU"),
        tail.params_sharded ? "parameters gathered by their units, none after the step"
                            : "updated parameters all-gathered after the step");
    return s;
  }
  if (t.offload.optimizer > 0) {
    s += fmt::format("optimizer offload: {:g} of the optimizer state and step on the host CPU "
                     "(host_optimizer {:g} params/s per GPU, a guess to calibrate), gradients "
                     "D2H and parameters H2D over {}{}\n",
                     t.offload.optimizer, g.compute.host_optimizer, g.host_link,
                     t.offload.overlap_optimizer_copies ? ", overlapped" : "");
  }
  s += fmt::format(
      "step tail: gradients {} over dp x cp {} ({}), buckets {}; {}; "
      "parameter all-gather {}; tied-embedding all-reduce {:.3f} ms; the "
      "optimizer waits for every rank's gradients\n",
      t.distributed_optimizer ? "reduce-scattered" : "all-reduced", tail.dp,
      t.overlap_grad_reduce ? "overlap_grad_reduce: from each chunk's last backward"
                            : "after the pipeline's flush",
      tail.bucket_bytes > 0
          ? fmt::format("of {:.1f} MiB on pipeline rank 0, one per chunk "
                        "elsewhere",
                        MiB(static_cast<double>(tail.bucket_bytes)))
          : std::string("one per chunk"),
      t.distributed_optimizer ? "distributed optimizer" : "every rank holds the optimizer state",
      !t.distributed_optimizer ? "none"
      : t.overlap_param_gather ? "under the next step's forward"
                               : "exposed after the optimizer",
      Ms(tail.embedding_sync));
  return s;
}

Json StepModelJson(const RunConfig& config) {
  const Hardware& h = config.hardware;
  const Gpu& g = h.gpu;
  const JobGroups groups = PlaceJob(config.training, g);
  Json j;
  j["gpu"] = g.name;
  j["source"] = g.source;
  j["peak_tflops"] = h.peak_tflops;
  j["memory_bytes"] = h.memory_bytes;
  j["hbm_bytes_per_s"] = g.hbm_bytes_per_s;
  j["nvlink_bytes_per_s"] = g.nvlink_bytes_per_s;
  j["gpus_per_node"] = g.gpus_per_node;
  j["nic_bytes_per_s"] = g.nic_bytes_per_s;
  j["arch"] = GpuArchName(g.arch);
  j["fp8_tflops"] = g.fp8_tflops;
  j["fp4_tflops"] = g.fp4_tflops;
  j["nvlink_domain"] = g.nvlink_domain;
  j["host_link"] = g.host_link;
  j["host_bytes_per_s"] = g.host_bytes_per_s;
  j["precision"] = RecipeName(config.training.low.recipe);
  j["coefficients"] = {
      {"fp8_matmul_efficiency", g.compute.fp8_matmul},
      {"fp4_matmul_efficiency", g.compute.fp4_matmul},
      {"matmul_efficiency", g.compute.matmul},
      {"matmul_half_time_ns", g.compute.matmul_half_time},
      {"attention_efficiency", g.compute.attention},
      {"hbm_efficiency", g.compute.hbm},
      {"kernel_floor_ns", g.compute.kernel_floor},
      {"launch_overhead_ns", g.compute.launch_overhead},
      {"layer_overhead_ns", g.compute.layer_overhead},
      {"microbatch_overhead_ns", g.compute.microbatch_overhead},
      {"collective_efficiency", g.network.collective},
      {"collective_half_size_bytes", g.network.collective_half_size},
      {"intra_latency_ns", g.intra_latency},
      {"inter_latency_ns", g.inter_latency},
      {"memory_reserve_bytes", h.memory_reserve},
      {"memory_fragmentation", g.process_memory.fragmentation},
      {"memory_nccl_per_peer_bytes", g.process_memory.nccl_per_peer},
      {"memory_context_bytes", g.process_memory.context},
      {"memory_workspace_bytes", g.process_memory.workspace},
      {"memory_nccl_per_net_peer_bytes", g.process_memory.nccl_per_net_peer},
      {"nccl_peers", h.nccl_peers.peers},
      {"nccl_net_peers", h.nccl_peers.net_peers}};
  if (config.architecture.experts > 0) {
    const EpKernelEfficiency& x = g.ep_kernels;
    j["coefficients"]["deepep_nvlink_efficiency"] = x.deepep_nvlink;
    j["coefficients"]["deepep_rdma_efficiency"] = x.deepep_rdma;
    j["coefficients"]["hybridep_efficiency_8"] = x.hybridep_8;
    j["coefficients"]["hybridep_efficiency_36"] = x.hybridep_36;
    j["coefficients"]["ep_overlap_efficiency"] = x.overlap;
    const MoeSettings& m = config.training.moe;
    j["moe"] = {{"dispatcher", DispatcherName(m.dispatcher)},
                {"backend", m.dispatcher == Dispatcher::Flex ? FlexBackendName(m.backend) : ""},
                {"overlap_ep_comm", m.overlap_ep_comm},
                {"expert_tensor_parallel", ExpertTp(config.training)},
                {"capacity_factor", m.capacity_factor},
                {"pad_to_capacity", m.pad_to_capacity},
                {"force_balance", m.force_balance},
                {"expert_loads", m.loads.file}};
  }
  if (h.fraction_given) j["achievable_fraction"] = h.achievable_fraction;
  auto group = [](const GroupPlacement& p) {
    return Json{{"size", p.size},
                {"stride", p.stride},
                {"per_node", p.per_node},
                {"crosses_nodes", p.crosses_nodes},
                {"bytes_per_s", p.link.bytes_per_s},
                {"latency_ns", p.link.latency}};
  };
  j["groups"] = {{"tp", group(groups.tp)},
                 {"cp", group(groups.cp)},
                 {"ep", group(groups.ep)},
                 {"dp_cp", group(groups.dp_cp)},
                 {"expert_dp", group(groups.expert_dp)},
                 {"pp_stride", groups.pp_stride}};
  Json layers = Json::array();
  for (const DerivedLayer* d : Distinct(config)) {
    Json lj;
    lj["layer"] = d->layer.name;
    Json gemms = Json::array();
    for (const Gemm& gm : d->kernels.gemms) {
      gemms.push_back({{"name", gm.name}, {"m", gm.m}, {"n", gm.n}, {"k", gm.k},
                       {"count", gm.count}, {"flops", gm.flops()},
                       {"precision", gm.recipe != Recipe::None
                                         ? RecipeName(gm.recipe)
                                         : DtypeName(config.training.dtype)},
                       {"efficiency", GemmEfficiency(gm.flops() / gm.count * gm.skew, h, gm.recipe)},
                       {"time_ns", GemmTime(gm, h)}});
    }
    lj["gemms"] = std::move(gemms);
    lj["attention_flops"] = d->kernels.attention_flops;
    lj["attention_forward_ns"] = d->times.attention;
    lj["elementwise_bytes"] = d->kernels.elementwise_bytes;
    if (d->kernels.recipe != Recipe::None) {
      lj["quantize"] = {{"recipe", RecipeName(d->kernels.recipe)},
                        {"input_elements", d->kernels.quantize_input + d->kernels.quantize_input_fused},
                        {"grad_elements", d->kernels.quantize_grad},
                        {"weight_elements", d->kernels.quantize_weight},
                        {"forward_ns", d->times.quantize_forward},
                        {"backward_ns", d->times.quantize_backward},
                        {"wgrad_ns", d->times.quantize_wgrad},
                        {"weight_step_ns", d->times.quantize_weight_step}};
    }
    Json comms = Json::array();
    for (const CommOp& c : d->kernels.comms) {
      comms.push_back({{"name", c.name}, {"collective", CollectiveName(c.kind)},
                       {"group", CommGroupName(c.group)}, {"bytes", c.bytes},
                       {"forward", c.forward}, {"backward", c.backward},
                       {"time_ns", CommTime(c, groups, h)}});
    }
    lj["collectives"] = std::move(comms);
    lj["exposed_comm_forward_ns"] = d->times.comm_forward;
    lj["host_forward_ns"] = d->times.host_forward;
    lj["host_backward_input_ns"] = d->times.host_backward_input;
    lj["host_backward_weight_ns"] = d->times.host_backward_weight;
    lj["host_exposed_ns"] = d->times.host_exposed;
    lj["exposed_comm_backward_ns"] = d->times.comm_backward;
    lj["grad_bytes"] = d->layer.grad_bytes;
    lj["expert_grad_bytes"] = d->layer.expert_grad_bytes;
    lj["optimizer_ns"] = d->layer.optimizer;
    layers.push_back(std::move(lj));
  }
  j["layers"] = std::move(layers);
  const StepTail& tail = config.shape.tail;
  j["tail"] = {{"dp", tail.dp},
               {"expert_dp", tail.expert_dp},
               {"overlap_grad_reduce", tail.overlap_grad_reduce},
               {"distributed_optimizer", tail.distributed_optimizer},
               {"overlap_param_gather", tail.overlap_param_gather},
               {"bucket_bytes", tail.bucket_bytes},
               {"embedding_sync_ns", tail.embedding_sync}};
  return j;
}

}  // namespace ppb
