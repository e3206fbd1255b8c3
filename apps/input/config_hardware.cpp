// hardware.* of a derived model: one device's rate, or a GPU preset of
// core/gpu.h with its overrides and the step model's coefficients; its
// memory and link default cluster.devices.memory and cluster.link. Errors
// as every config error: "file:line: <key>: must be ...; got ...".
#include "apps/input/config_parser.h"

#include "core/rank_layout.h"

#include <climits>

namespace ppb::config_detail {

// The step model's least bandwidths: a link of 1 MB/s, HBM of 1 GB/s.
constexpr BytesPerSec kMinStepBandwidth = 1'000'000;
constexpr BytesPerSec kMinHbmBandwidth = 1'000'000'000;

// hardware: the compute rate of one device, and optionally its memory
// and link: defaults of cluster.devices.memory and cluster.link (the
// cluster keys, when given, win). With hardware.gpu (a preset of
// core/gpu.h) the step model is on: every preset field may be overridden
// and the efficiency coefficients set (docs/config.md "hardware").
Result<Hardware> Parser::ParseHardware(const Entry& section) {
  Result<Entries> r = Map(
      section.value, "hardware",
      {"gpu", "peak_tflops", "achievable_fraction", "memory", "link",
       "gpus_per_node", "intra_node", "inter_node", "memory_reserve",
       "hbm_bandwidth", "matmul_efficiency", "matmul_half_time",
       "attention_efficiency", "hbm_efficiency", "kernel_floor",
       "collective_efficiency", "collective_half_size", "nvlink_domain",
       "fp8_tflops", "fp4_tflops", "fp8_matmul_efficiency",
       "fp4_matmul_efficiency", "host_link", "host_optimizer", "deepep_nvlink_efficiency",
       "deepep_rdma_efficiency", "hybridep_efficiency_8", "hybridep_efficiency_36",
       "ep_overlap_efficiency", "memory_fragmentation", "memory_nccl_per_peer",
       "memory_nccl_per_net_peer", "memory_context", "memory_workspace",
       "launch_overhead", "layer_overhead", "microbatch_overhead"});
  if (!r.ok()) return r.error();
  const Entries& e = *r;
  Hardware h;
  if (const Entry* g = Find(e, "gpu")) {
    // core/gpu.h's presets (GpuNames), in its order.
    Result<size_t> i = Choice(g->value, g->path,
                              {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm",
                               "h200-sxm", "b200", "b300", "gb200-nvl72",
                               "gb300-nvl72", "mi300x", "mi355x"});
    if (!i.ok()) return i.error();
    h.step_model = true;
    h.gpu = *FindGpu(GpuNames()[*i]);
    h.peak_tflops = h.gpu.peak_tflops;
    h.memory_bytes = h.gpu.memory;
    hardware_memory_ = h.gpu.memory;
    // The CUDA context, NCCL's buffers and the allocator's fragmentation
    // are the process-memory coefficients (core/process_memory.h);
    // memory_reserve is kept free on top of them (default none).
  } else {
    for (const char* key :
         {"gpus_per_node", "intra_node", "inter_node", "memory_reserve",
          "hbm_bandwidth", "matmul_efficiency", "matmul_half_time",
          "attention_efficiency", "hbm_efficiency", "kernel_floor",
          "collective_efficiency", "collective_half_size", "nvlink_domain",
          "fp8_tflops", "fp4_tflops", "fp8_matmul_efficiency",
          "fp4_matmul_efficiency", "host_link", "host_optimizer",
          "deepep_nvlink_efficiency", "deepep_rdma_efficiency", "hybridep_efficiency_8",
          "hybridep_efficiency_36", "ep_overlap_efficiency", "memory_fragmentation",
          "memory_nccl_per_peer", "memory_nccl_per_net_peer", "memory_context",
          "memory_workspace", "launch_overhead", "layer_overhead",
          "microbatch_overhead"}) {
      if (const Entry* x = Find(e, key)) {
        return Fail(x->path,
                    "is read with hardware.gpu (the step model: a GPU preset, "
                    "one of a100-sxm4-40gb, a100-sxm4-80gb, h100-sxm, "
                    "h200-sxm, b200, b300, gb200-nvl72, gb300-nvl72, mi300x, "
                    "mi355x); got it without hardware.gpu");
      }
    }
  }
  if (const Entry* m = Find(e, "memory")) {
    Result<Bytes> b = Size(m->value, m->path, true);
    if (!b.ok()) return b.error();
    h.memory_bytes = *b;
    hardware_memory_ = *b;
  }
  if (const Entry* l = Find(e, "link")) {
    Result<Link> link = ParseLink(*l);
    if (!link.ok()) return link.error();
    hardware_link_ = *link;
  }
  const Entry* peak = Find(e, "peak_tflops");
  if (peak == nullptr && !h.step_model) {
    return Fail("hardware.peak_tflops",
                "must be given (a positive number, TFLOP/s), or hardware.gpu "
                "(a preset); got nothing");
  }
  // A peak: 0.001 to 1e6 TFLOP/s (a GFLOP/s to an EFLOP/s a device);
  // beyond either end a layer's time leaves the range ppb computes in.
  auto tflops = [&](const Entry& x) -> Result<double> {
    Result<double> p = PositiveNumber(x.value, x.path);
    if (!p.ok()) return p.error();
    if (*p < 1e-3 || *p > 1e6) {
      return Fail(x.path, "must be in [0.001, 1e6] TFLOP/s; got " + x.value.Scalar());
    }
    return *p;
  };
  if (peak != nullptr) {
    Result<double> p = tflops(*peak);
    if (!p.ok()) return p.error();
    h.peak_tflops = *p;
  }
  h.gpu.peak_tflops = h.peak_tflops;
  hardware_tflops_ = h.peak_tflops;
  auto fraction = [&](const char* key, double& out) -> Status {
    if (const Entry* f = Find(e, key)) {
      Result<double> x = PositiveNumber(f->value, f->path);
      if (!x.ok()) return x.error();
      if (*x > 1) {
        return Fail(f->path, "must be a number in (0, 1]; got " +
                                 f->value.Scalar());
      }
      out = *x;
    }
    return Status();
  };
  if (Find(e, "achievable_fraction") != nullptr) {
    PPB_RETURN_IF_ERROR(fraction("achievable_fraction", h.achievable_fraction));
    h.fraction_given = true;
  }
  if (!h.step_model) return h;
  // The step model's shares: at least 1 % (a smaller one prices a layer
  // beyond any step ppb can time).
  auto share = [&](const char* key, double& out) -> Status {
    if (const Entry* f = Find(e, key)) {
      Result<double> x = PositiveNumber(f->value, f->path);
      if (!x.ok()) return x.error();
      if (*x < 0.01 || *x > 1) {
        return Fail(f->path, "must be a number in [0.01, 1]; got " + f->value.Scalar());
      }
      out = *x;
    }
    return Status();
  };
  PPB_RETURN_IF_ERROR(share("achievable_fraction", h.achievable_fraction));
  PPB_RETURN_IF_ERROR(share("matmul_efficiency", h.gpu.compute.matmul));
  PPB_RETURN_IF_ERROR(share("attention_efficiency", h.gpu.compute.attention));
  PPB_RETURN_IF_ERROR(share("hbm_efficiency", h.gpu.compute.hbm));
  PPB_RETURN_IF_ERROR(share("collective_efficiency", h.gpu.network.collective));
  PPB_RETURN_IF_ERROR(share("fp8_matmul_efficiency", h.gpu.compute.fp8_matmul));
  PPB_RETURN_IF_ERROR(share("fp4_matmul_efficiency", h.gpu.compute.fp4_matmul));
  // DeepEP's and HybridEP's measured link shares (core/moe.h).
  EpKernelEfficiency& ek = h.gpu.ep_kernels;
  PPB_RETURN_IF_ERROR(share("deepep_nvlink_efficiency", ek.deepep_nvlink));
  PPB_RETURN_IF_ERROR(share("deepep_rdma_efficiency", ek.deepep_rdma));
  PPB_RETURN_IF_ERROR(share("hybridep_efficiency_8", ek.hybridep_8));
  PPB_RETURN_IF_ERROR(share("hybridep_efficiency_36", ek.hybridep_36));
  PPB_RETURN_IF_ERROR(share("ep_overlap_efficiency", ek.overlap));
  // Low-precision peaks: given over the preset's (0 is none; a share needs a
  // peak to be a share of).
  for (auto [key, out] : {std::pair<const char*, double*>{"fp8_tflops", &h.gpu.fp8_tflops},
                          {"fp4_tflops", &h.gpu.fp4_tflops}}) {
    if (const Entry* x = Find(e, key)) {
      Result<double> p = tflops(*x);
      if (!p.ok()) return p.error();
      *out = *p;
    }
  }
  // A peak given for a preset without one takes BF16's share of it times
  // the presets' ratios (core/gpu.h), unless its share is given.
  if (h.gpu.fp8_tflops > 0 && h.gpu.compute.fp8_matmul <= 0) {
    h.gpu.compute.fp8_matmul = kFp8MatmulOverBf16 * h.gpu.compute.matmul;
  }
  if (h.gpu.fp4_tflops > 0 && h.gpu.compute.fp4_matmul <= 0) {
    h.gpu.compute.fp4_matmul = kFp4MatmulOverBf16 * h.gpu.compute.matmul;
  }
  const int preset_node = h.gpu.gpus_per_node;
  // At most 1,024 GPUs a node or NVLink domain (the largest announced
  // domain, NVL576, has 576): the rank layout looks at each domain position.
  constexpr std::int64_t kMaxDomain = 1024;
  if (const Entry* x = Find(e, "gpus_per_node")) {
    Result<std::int64_t> n = Integer(x->value, x->path, 1, kMaxDomain,
                                     "a positive integer, at most 1024");
    if (!n.ok()) return n.error();
    // On a node-sized NVLink domain (HGX/DGX) the domain follows the node.
    if (h.gpu.nvlink_domain == preset_node) h.gpu.nvlink_domain = static_cast<int>(*n);
    h.gpu.gpus_per_node = static_cast<int>(*n);
  }
  if (const Entry* x = Find(e, "nvlink_domain")) {
    Result<std::int64_t> n = Integer(x->value, x->path, 1, kMaxDomain,
                                     "a positive integer, at most 1024 (GPUs that share NVLink)");
    if (!n.ok()) return n.error();
    h.gpu.nvlink_domain = static_cast<int>(*n);
  }
  if (const Entry* x = Find(e, "host_link")) {
    // A bandwidth, or {bandwidth, latency} per GPU and direction.
    if (x->value.IsMap()) {
      Result<Link> link = ParseLink(*x, h.gpu.host_latency);
      if (!link.ok()) return link.error();
      if (link->bandwidth < kMinStepBandwidth) {
        return Fail(x->path + ".bandwidth", "must be at least 1MB/s; got " +
                                                x->value["bandwidth"].Scalar());
      }
      h.gpu.host_bytes_per_s = static_cast<double>(link->bandwidth);
      h.gpu.host_latency = link->latency;
    } else {
      Result<BytesPerSec> b = Bandwidth(x->value, x->path);
      if (!b.ok()) return b.error();
      if (*b < kMinStepBandwidth) {
        return Fail(x->path, "must be at least 1MB/s; got " + x->value.Scalar());
      }
      h.gpu.host_bytes_per_s = static_cast<double>(*b);
    }
  }
  if (const Entry* x = Find(e, "host_optimizer")) {
    // Parameters per second per GPU of the host's optimizer step.
    Result<double> rate = PositiveNumber(x->value, x->path);
    if (!rate.ok()) return rate.error();
    if (*rate < 1e3 || *rate > 1e13) {
      return Fail(x->path, "must be in [1e3, 1e13] parameters per second; got " +
                               x->value.Scalar());
    }
    h.gpu.compute.host_optimizer = *rate;
  }
  for (const char* key : {"intra_node", "inter_node"}) {
    if (const Entry* x = Find(e, key)) {
      // The preset's latency stays unless the key gives one.
      const bool intra = std::string_view(key) == "intra_node";
      Nanos& latency = intra ? h.gpu.intra_latency : h.gpu.inter_latency;
      Result<Link> link = ParseLink(*x, latency);
      if (!link.ok()) return link.error();
      if (link->bandwidth < kMinStepBandwidth) {
        return Fail(x->path + ".bandwidth",
                    "must be at least 1MB/s with hardware.gpu; got " +
                        std::to_string(link->bandwidth) + " B/s");
      }
      (intra ? h.gpu.nvlink_bytes_per_s : h.gpu.nic_bytes_per_s) =
          static_cast<double>(link->bandwidth);
      latency = link->latency;
    }
  }
  if (const Entry* x = Find(e, "hbm_bandwidth")) {
    Result<BytesPerSec> b = Bandwidth(x->value, x->path);
    if (!b.ok()) return b.error();
    if (*b < kMinHbmBandwidth) {
      return Fail(x->path, "must be at least 1GB/s; got " + x->value.Scalar());
    }
    h.gpu.hbm_bytes_per_s = static_cast<double>(*b);
  }
  for (const char* key : {"matmul_half_time", "kernel_floor"}) {
    if (const Entry* x = Find(e, key)) {
      // At most 1 ms: a GEMM's half-efficiency size and a kernel's floor.
      Result<Nanos> t = Duration(x->value, x->path, false, 1'000'000, "1ms");
      if (!t.ok()) return t.error();
      (std::string_view(key) == "kernel_floor" ? h.gpu.compute.kernel_floor
                                               : h.gpu.compute.matmul_half_time) = *t;
    }
  }
  // The host's side (core/gpu.h): a kernel's launch at most 1 ms, the
  // framework's work per layer or per micro-batch pass at most 1 s.
  if (const Entry* x = Find(e, "launch_overhead")) {
    Result<Nanos> t = Duration(x->value, x->path, false, 1'000'000, "1ms");
    if (!t.ok()) return t.error();
    h.gpu.compute.launch_overhead = *t;
  }
  if (const Entry* x = Find(e, "layer_overhead")) {
    Result<Nanos> t = Duration(x->value, x->path, false, 1'000'000'000, "1s");
    if (!t.ok()) return t.error();
    h.gpu.compute.layer_overhead = *t;
  }
  if (const Entry* x = Find(e, "microbatch_overhead")) {
    Result<Nanos> t = Duration(x->value, x->path, false, 1'000'000'000, "1s");
    if (!t.ok()) return t.error();
    h.gpu.compute.microbatch_overhead = *t;
  }
  // What a process holds besides its tensors (core/process_memory.h).
  ProcessMemory& pm = h.gpu.process_memory;
  if (const Entry* x = Find(e, "memory_fragmentation")) {
    Result<double> f = Share(x->value, x->path, 0.9, "a share of reserved memory in [0, 0.9]");
    if (!f.ok()) return f.error();
    pm.fragmentation = *f;
  }
  for (auto [key, out] : {std::pair<const char*, Bytes*>{"memory_nccl_per_peer",
                                                         &pm.nccl_per_peer},
                          {"memory_nccl_per_net_peer", &pm.nccl_per_net_peer},
                          {"memory_context", &pm.context},
                          {"memory_workspace", &pm.workspace}}) {
    if (const Entry* x = Find(e, key)) {
      Result<Bytes> b = Size(x->value, x->path, false);
      if (!b.ok()) return b.error();
      if (*b >= h.memory_bytes) {
        return Fail(x->path, "must be less than the device's memory (" +
                                 std::to_string(h.memory_bytes) + " B); got " +
                                 x->value.Scalar());
      }
      *out = *b;
    }
  }
  for (const char* key : {"memory_reserve", "collective_half_size"}) {
    if (const Entry* x = Find(e, key)) {
      Result<Bytes> b = Size(x->value, x->path, false);
      if (!b.ok()) return b.error();
      if (std::string_view(key) == "collective_half_size" && *b > (1LL << 30)) {
        return Fail(x->path, "must be at most 1GiB; got " + x->value.Scalar());
      }
      (std::string_view(key) == "memory_reserve"
           ? h.memory_reserve
           : h.gpu.network.collective_half_size) = *b;
    }
  }
  if (h.memory_reserve >= h.memory_bytes) {
    return Fail("hardware.memory_reserve",
                "must be less than the device's memory (" +
                    std::to_string(h.memory_bytes) + " B); got " +
                    std::to_string(h.memory_reserve) + " B");
  }
  return h;
}

}  // namespace ppb::config_detail
