// The GPU presets (core/gpu.h). HBM sizes are the datasheets' "GB", which
// for HBM stacks are binary (an A100 80GB reports 81920 MiB in nvidia-smi);
// bandwidths are decimal (GB/s = 1e9 B/s). NVLink figures on datasheets are
// both directions together; a preset keeps one direction (half). NIC
// shares are the vendor's reference system (DGX / HGX, one compute NIC per
// GPU); a cluster with fewer NICs overrides hardware.inter_node.
#include "core/gpu.h"

namespace ppb {
namespace {

constexpr Bytes kGiB = 1LL << 30;
constexpr double kGBps = 1e9;

// The datasheet facts of one preset; the rest of Gpu keeps its defaults.
struct Sheet {
  const char* name;
  GpuArch arch;
  double bf16, fp8, fp4;  // dense TFLOP/s
  double memory_gib;      // HBM the GPU exposes
  double hbm;             // GB/s
  double nvlink_both;     // GB/s, both directions
  int per_node, domain;   // GPUs per host, per NVLink domain
  double nic;             // GB/s per GPU, per direction
  double host;            // GB/s per GPU to host memory, per direction
  const char* host_link;
  double matmul, attention;
  const char* source;
};

Gpu Make(const Sheet& x) {
  Gpu g;
  g.name = x.name;
  g.arch = x.arch;
  g.peak_tflops = x.bf16;
  g.fp8_tflops = x.fp8;
  g.fp4_tflops = x.fp4;
  g.memory = static_cast<Bytes>(x.memory_gib * static_cast<double>(kGiB));
  g.hbm_bytes_per_s = x.hbm * kGBps;
  g.nvlink_bytes_per_s = x.nvlink_both / 2 * kGBps;
  g.gpus_per_node = x.per_node;
  g.nvlink_domain = x.domain;
  g.nic_bytes_per_s = x.nic * kGBps;
  g.host_bytes_per_s = x.host * kGBps;
  g.host_link = x.host_link;
  g.compute.matmul = x.matmul;
  g.compute.attention = x.attention;
  // Low-precision GEMMs against BF16's share of the peak (core/gpu.h
  // ComputeEfficiency: TE's pre-quantized B300 timings).
  if (x.fp8 > 0) g.compute.fp8_matmul = kFp8MatmulOverBf16 * x.matmul;
  if (x.fp4 > 0) g.compute.fp4_matmul = kFp4MatmulOverBf16 * x.matmul;
  g.source = x.source;
  return g;
}

const std::vector<Gpu>& Presets() {
  // Efficiencies (matmul, attention) are guesses to calibrate. matmul is
  // what a training step's GEMMs reach with their launch gaps: 0.70 on
  // A100 puts the Megatron-LM weak-scaling rows of Narayanan et al. 2021
  // (Table 1, 7.5B to 1T on up to 3,072 A100s) within 5 % of their
  // measured TFLOP/s (docs/benchmarks.md "The whole step against published
  // runs"); the other GPUs keep the same ratio to their cuBLAS large-GEMM
  // share (about 70 % on H100-class parts, 55 % on MI300X, against 80 % on
  // A100). FlashAttention-2 reaches about 60 % on A100, less on Hopper.
  // Peaks are dense (datasheets print FP8/FP16 "with sparsity", twice the
  // dense figure). Host links: PCIe 4.0 x16 32 GB/s, 5.0 x16 64 GB/s, 6.0
  // x16 128 GB/s per direction (PCI-SIG); Grace's NVLink-C2C 900 GB/s both
  // directions, shared by the 2 GPUs of a Grace: 225 GB/s per GPU and
  // direction (NVIDIA GB200 NVL72 page).
  static const std::vector<Gpu> kPresets = {
      Make({"a100-sxm4-40gb", GpuArch::Ampere, 312, 0, 0, 40, 1555, 600, 8, 8,
            25, 32, "PCIe 4.0 x16", 0.70, 0.60,
            "NVIDIA A100 Tensor Core GPU datasheet (1758950-r4): BF16 312 "
            "TFLOPS dense, no FP8, 40GB HBM2 1,555 GB/s, NVLink 600 GB/s; DGX "
            "A100 datasheet: 8 x 200 Gb/s HDR InfiniBand for 8 GPUs"}),
      Make({"a100-sxm4-80gb", GpuArch::Ampere, 312, 0, 0, 80, 2039, 600, 8, 8,
            25, 32, "PCIe 4.0 x16", 0.70, 0.60,
            "NVIDIA A100 Tensor Core GPU datasheet (1758950-r4): BF16 312 "
            "TFLOPS dense, no FP8, 80GB HBM2e 2,039 GB/s, NVLink 600 GB/s; "
            "DGX A100 datasheet: 8 x 200 Gb/s HDR InfiniBand for 8 GPUs"}),
      Make({"h100-sxm", GpuArch::Hopper, 989, 1979, 0, 80, 3350, 900, 8, 8, 50,
            64, "PCIe 5.0 x16", 0.61, 0.45,
            "NVIDIA H100 Tensor Core GPU datasheet: BF16 1,979 and FP8 3,958 "
            "TFLOPS with sparsity (989 and 1,979 dense), 80GB HBM3 3.35 TB/s, "
            "NVLink 900 GB/s; DGX H100 datasheet: 8 x 400 Gb/s ConnectX-7 for "
            "8 GPUs"}),
      Make({"h200-sxm", GpuArch::Hopper, 989, 1979, 0, 141, 4800, 900, 8, 8,
            50, 64, "PCIe 5.0 x16", 0.63, 0.45,
            "NVIDIA H200 Tensor Core GPU datasheet: BF16 1,979 and FP8 3,958 "
            "TFLOPS with sparsity (989 and 1,979 dense), 141GB HBM3e 4.8 TB/s, "
            "NVLink 900 GB/s; DGX H200 datasheet: 8 x 400 Gb/s ConnectX-7 for "
            "8 GPUs"}),
      Make({"b200", GpuArch::Blackwell, 2250, 4500, 9000, 180, 8000, 1800, 8,
            8, 50, 64, "PCIe 5.0 x16", 0.61, 0.45,
            "NVIDIA DGX B200 datasheet: 72 PFLOPS FP8 training, 1,440GB "
            "HBM3e and 64 TB/s for 8 GPUs (180GB, 8 TB/s each); HGX B200: "
            "FP16/BF16 4.5, FP8 9, FP4 18 PFLOPS with sparsity (2,250, 4,500 "
            "and 9,000 dense), NVLink 5 1.8 TB/s; 8 x 400 Gb/s ConnectX-7 for "
            "8 GPUs"}),
      Make({"b300", GpuArch::Blackwell, 2250, 4500, 13500, 270, 8000, 1800, 8,
            8, 100, 128, "PCIe 6.0 x16", 0.61, 0.45,
            "NVIDIA HGX B300 datasheet: FP8 72 PFLOPS and FP4 108 PFLOPS dense "
            "for 8 GPUs (4,500 and 13,500 each; BF16 half of FP8, 2,250), "
            "2.3TB HBM3e (288GB each, about 270GB exposed), 8 TB/s, NVLink 5 "
            "1.8 TB/s; 8 x 800 Gb/s ConnectX-8 for 8 GPUs"}),
      Make({"gb200-nvl72", GpuArch::Blackwell, 2500, 5000, 10000, 186, 8000,
            1800, 4, 72, 50, 225, "NVLink-C2C (Grace)", 0.61, 0.45,
            "NVIDIA GB200 NVL72 page: 72 GPUs, FP8 720 PFLOPS, FP4 1,440 "
            "PFLOPS with sparsity (5,000 and 10,000 dense each; BF16 2,500), "
            "13.4TB HBM3e (186GB each) at 8 TB/s, 130 TB/s NVLink (1.8 TB/s "
            "each) in one domain of 72; tray of 2 Grace + 4 GPUs with 4 x 400 "
            "Gb/s ConnectX-7; NVLink-C2C 900 GB/s per Grace"}),
      Make({"gb300-nvl72", GpuArch::Blackwell, 2500, 5000, 15000, 279, 8000,
            1800, 4, 72, 100, 225, "NVLink-C2C (Grace)", 0.61, 0.45,
            "NVIDIA GB300 NVL72 page: 72 GPUs, FP8 360 PFLOPS and FP4 1,080 "
            "PFLOPS dense (5,000 and 15,000 each; BF16 2,500), 20TB HBM3e "
            "(288GB each, about 279GB exposed) at 8 TB/s, 1.8 TB/s NVLink per "
            "GPU in one domain of 72; tray of 2 Grace + 4 GPUs with 4 x 800 "
            "Gb/s ConnectX-8; NVLink-C2C 900 GB/s per Grace"}),
      Make({"mi300x", GpuArch::Cdna3, 1307, 2615, 0, 192, 5300, 896, 8, 8, 50,
            64, "PCIe 5.0 x16", 0.48, 0.40,
            "AMD Instinct MI300X datasheet: BF16 1,307.4 and FP8 2,614.9 "
            "TFLOPS dense, 192GB HBM3 5.3 TB/s, 896 GB/s aggregate Infinity "
            "Fabric (7 links); 8-GPU platform with one 400 Gb/s NIC per GPU"}),
      Make({"mi355x", GpuArch::Cdna4, 2500, 5000, 10000, 288, 8000, 1075, 8, 8,
            50, 128, "PCIe 5.0 x16", 0.48, 0.40,
            "AMD Instinct MI355X datasheet: FP16/BF16 2.5, FP8 5.0 and MXFP4 "
            "10 PFLOPS dense, 288GB HBM3E 8 TB/s, 7 Infinity Fabric links of "
            "153.6 GB/s (1,075 GB/s); 8-GPU platform with one 400 Gb/s NIC "
            "per GPU; PCIe 5.0 x16 host link"}),
  };
  return kPresets;
}

}  // namespace

const char* GpuArchName(GpuArch a) {
  switch (a) {
    case GpuArch::Ampere:
      return "Ampere (SM80)";
    case GpuArch::Hopper:
      return "Hopper (SM90)";
    case GpuArch::Blackwell:
      return "Blackwell (SM100/103)";
    case GpuArch::Cdna3:
      return "CDNA 3";
    case GpuArch::Cdna4:
      return "CDNA 4";
  }
  return "?";
}

const Gpu* FindGpu(std::string_view name) {
  for (const Gpu& g : Presets()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::vector<std::string> GpuNames() {
  std::vector<std::string> names;
  for (const Gpu& g : Presets()) names.push_back(g.name);
  return names;
}

}  // namespace ppb
