#include "core/precision.h"

namespace ppb {

const char* RecipeName(Recipe r) {
  switch (r) {
    case Recipe::None:
      return "bf16";
    case Recipe::Fp8Delayed:
      return "fp8-delayed";
    case Recipe::Fp8Tensorwise:
      return "fp8-tensorwise";
    case Recipe::Fp8Blockwise:
      return "fp8-blockwise";
    case Recipe::Mxfp8:
      return "mxfp8";
    case Recipe::Nvfp4:
      return "nvfp4";
  }
  return "?";
}

std::optional<Recipe> FindRecipe(std::string_view name) {
  for (Recipe r : kAllRecipes) {
    if (name == RecipeName(r)) return r;
  }
  return std::nullopt;
}

const char* MegatronRecipe(Recipe r) {
  switch (r) {
    case Recipe::Fp8Delayed:
      return "delayed";
    case Recipe::Fp8Tensorwise:
      return "tensorwise";
    case Recipe::Fp8Blockwise:
      return "blockwise";
    case Recipe::Mxfp8:
      return "mxfp8";
    case Recipe::Nvfp4:
      return "nvfp4";
    case Recipe::None:
      break;
  }
  return "";
}

bool IsFp4(Recipe r) { return r == Recipe::Nvfp4; }

bool LowPrecisionLayer(const LowPrecision& p, int layer, int layers) {
  if (!p.on()) return false;
  // MTP layers (index >= layers) follow the last decoder layer's rule.
  const int i = layer < layers ? layer : layers - 1;
  return i >= p.bf16_start && i < layers - p.bf16_end;
}

std::string RecipeRuns(Recipe r, const Gpu& gpu) {
  const std::string name = RecipeName(r);
  const std::string on = " (" + (gpu.name.empty() ? std::string("this GPU")
                                                  : gpu.name) +
                         " is " + GpuArchName(gpu.arch) + ")";
  switch (r) {
    case Recipe::None:
      return "";
    case Recipe::Fp8Delayed:
    case Recipe::Fp8Tensorwise:
      if (gpu.fp8_tflops <= 0) {
        return name + " needs FP8 tensor cores (SM89 or later)" + on;
      }
      return "";
    case Recipe::Fp8Blockwise:
      // TE runs 1x128 / 128x128 block scaling natively on Hopper only; on
      // Blackwell it emulates it through MXFP8 (fp8_blockwise_scaling.rst).
      if (gpu.arch != GpuArch::Hopper) {
        return name + " is Hopper's recipe (TE emulates it with MXFP8 "
                      "elsewhere: use mxfp8)" + on;
      }
      return "";
    case Recipe::Mxfp8:
      // OCP MX block scaling in hardware: NVIDIA Blackwell and AMD CDNA 4
      // (MI355X datasheet: MXFP8, MXFP6 and MXFP4 matrix cores).
      if (gpu.arch != GpuArch::Blackwell && gpu.arch != GpuArch::Cdna4) {
        return name + " needs block-scaled (MX) tensor cores: Blackwell "
                      "(SM100/103) or CDNA 4" + on;
      }
      return "";
    case Recipe::Nvfp4:
      if (gpu.arch != GpuArch::Blackwell || gpu.fp4_tflops <= 0) {
        return name + " needs Blackwell's FP4 tensor cores (SM100/103, TE "
                      ">= 2.7)" + on;
      }
      return "";
  }
  return "";
}

double RecipePeakTflops(Recipe r, const Gpu& gpu) {
  if (r == Recipe::None) return gpu.peak_tflops;
  return IsFp4(r) ? gpu.fp4_tflops : gpu.fp8_tflops;
}

double RecipeMatmulShare(Recipe r, const Gpu& gpu) {
  if (r == Recipe::None) return gpu.compute.matmul;
  if (IsFp4(r)) return gpu.compute.fp4_matmul;
  // Hopper's 1x128 / 128x128 block-scaled GEMMs run slower than its
  // per-tensor-scaled ones: TE's H200 speed-ups over BF16 are 1.69x for
  // delayed scaling and 1.41x for blockwise (speedups.rst, as quoted in
  // the project's train-2026.md §7), their ratio 0.83 taken as the GEMM's.
  if (r == Recipe::Fp8Blockwise && gpu.arch == GpuArch::Hopper) {
    return 0.83 * gpu.compute.fp8_matmul;
  }
  // MXFP8's GEMMs ran 7 % slower than FP8 block scaling's on B300 with
  // pre-quantized inputs (TE gemm_profiling.rst: 7.324 against 6.830 ms a
  // layer), and Megatron-Bridge's performance guide finds MXFP8 slower than
  // tensorwise: 6.830 / 7.324 = 0.93 of the FP8 share.
  if (r == Recipe::Mxfp8) return 0.93 * gpu.compute.fp8_matmul;
  return gpu.compute.fp8_matmul;
}

namespace {

// Hopper's and AMD's FP8 GEMMs take both operands K-major (TN), so an
// FP8 tensor read transposed needs its own transposed copy; Blackwell's
// do not (TE performance_considerations.rst, "Hopper vs Blackwell").
bool NeedsTransposedCopy(GpuArch arch) { return arch != GpuArch::Blackwell; }

}  // namespace

QuantizeCost QuantizeBytes(Recipe r, GpuArch arch, double n, bool fused) {
  QuantizeCost c;
  const double transposed = NeedsTransposedCopy(arch) ? n : 0;
  switch (r) {
    case Recipe::None:
      return c;
    case Recipe::Fp8Delayed:
      // The scale is known before the cast: one pass, fusable with a norm.
      c = {2 * n + n + transposed, 1};
      if (fused) c = {n + transposed, 0};
      return c;
    case Recipe::Fp8Tensorwise:
      // The amax of this tensor first, then the cast: never fused.
      return {4 * n + n + transposed, 2};
    case Recipe::Fp8Blockwise:
      // Rows and columns quantized from BF16, an fp32 scale per 128.
      return {2 * n + 2 * (n + 4 * n / 128), 1};
    case Recipe::Mxfp8:
      c = {2 * n + 2 * (n + n / 32), 1};
      if (fused) c = {2 * (n + n / 32), 0};
      return c;
    case Recipe::Nvfp4:
      // The global amax, then rows and columns at 4 bits with an E4M3
      // scale per 16.
      return {4 * n + 2 * (n / 2 + n / 16), 2};
  }
  return c;
}

QuantizeCost HadamardBytes(Recipe r, double n) {
  if (r != Recipe::Nvfp4) return {};
  return {4 * n, 1};
}

double SavedInputBytes(Recipe r, int activation_bytes) {
  switch (r) {
    case Recipe::None:
      return activation_bytes;
    case Recipe::Fp8Delayed:
    case Recipe::Fp8Tensorwise:
      return 1;
    case Recipe::Fp8Blockwise:
      return 1 + 4.0 / 128;
    case Recipe::Mxfp8:
      return 1 + 1.0 / 32;
    case Recipe::Nvfp4:
      return 0.5 + 1.0 / 16;
  }
  return activation_bytes;
}

double WeightCopyBytes(Recipe r, GpuArch arch) {
  switch (r) {
    case Recipe::None:
      return 0;
    case Recipe::Fp8Delayed:
    case Recipe::Fp8Tensorwise:
      return NeedsTransposedCopy(arch) ? 2 : 1;
    case Recipe::Fp8Blockwise:
      return 2;  // 128 x 128 scales: under 0.1 % more
    case Recipe::Mxfp8:
      return 2 * (1 + 1.0 / 32);
    case Recipe::Nvfp4:
      return 2 * (0.5 + 1.0 / 16);
  }
  return 0;
}

double GatheredParamBytes(Recipe r) {
  switch (r) {
    case Recipe::Mxfp8:
      return 1 + 1.0 / 32;
    case Recipe::Nvfp4:
      return 0.5 + 1.0 / 16;
    case Recipe::None:
      return 2;
    default:
      return 1;
  }
}

}  // namespace ppb
