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

Gpu Make(std::string name, double peak, Bytes memory, double hbm,
         double nvlink_both, double nic, double matmul, double attention,
         std::string source) {
  Gpu g;
  g.name = std::move(name);
  g.peak_tflops = peak;
  g.memory = memory;
  g.hbm_bytes_per_s = hbm * kGBps;
  g.nvlink_bytes_per_s = nvlink_both / 2 * kGBps;
  g.nic_bytes_per_s = nic * kGBps;
  g.compute.matmul = matmul;
  g.compute.attention = attention;
  g.source = std::move(source);
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
  static const std::vector<Gpu> kPresets = {
      Make("a100-sxm4-40gb", 312, 40 * kGiB, 1555, 600, 25, 0.70, 0.60,
           "NVIDIA A100 Tensor Core GPU datasheet (1758950-r4): BF16 312 "
           "TFLOPS dense, 40GB HBM2 1,555 GB/s, NVLink 600 GB/s; DGX A100 "
           "datasheet: 8 x 200 Gb/s HDR InfiniBand for 8 GPUs"),
      Make("a100-sxm4-80gb", 312, 80 * kGiB, 2039, 600, 25, 0.70, 0.60,
           "NVIDIA A100 Tensor Core GPU datasheet (1758950-r4): BF16 312 "
           "TFLOPS dense, 80GB HBM2e 2,039 GB/s, NVLink 600 GB/s; DGX A100 "
           "datasheet: 8 x 200 Gb/s HDR InfiniBand for 8 GPUs"),
      Make("h100-sxm", 989, 80 * kGiB, 3350, 900, 50, 0.61, 0.45,
           "NVIDIA H100 Tensor Core GPU datasheet: BF16 1,979 TFLOPS with "
           "sparsity (989 dense), 80GB HBM3 3.35 TB/s, NVLink 900 GB/s; DGX "
           "H100 datasheet: 8 x 400 Gb/s ConnectX-7 for 8 GPUs"),
      Make("h200-sxm", 989, 141 * kGiB, 4800, 900, 50, 0.63, 0.45,
           "NVIDIA H200 Tensor Core GPU datasheet: BF16 1,979 TFLOPS with "
           "sparsity (989 dense), 141GB HBM3e 4.8 TB/s, NVLink 900 GB/s; "
           "DGX H200 datasheet: 8 x 400 Gb/s ConnectX-7 for 8 GPUs"),
      Make("b200", 2250, 180 * kGiB, 8000, 1800, 50, 0.61, 0.45,
           "NVIDIA DGX B200 datasheet: 72 PFLOPS FP8 training, 1,440GB "
           "HBM3e and 64 TB/s for 8 GPUs (180GB, 8 TB/s each); HGX B200: "
           "FP16/BF16 4.5 PFLOPS with sparsity (2,250 dense), NVLink 5 "
           "1.8 TB/s; 8 x 400 Gb/s ConnectX-7 for 8 GPUs"),
      Make("mi300x", 1307, 192 * kGiB, 5300, 896, 50, 0.48, 0.40,
           "AMD Instinct MI300X datasheet: BF16 1,307.4 TFLOPS dense, 192GB "
           "HBM3 5.3 TB/s, 896 GB/s aggregate Infinity Fabric (7 links); "
           "8-GPU platform with one 400 Gb/s NIC per GPU"),
  };
  return kPresets;
}

}  // namespace

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
