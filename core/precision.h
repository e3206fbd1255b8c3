// Low-precision training: which recipe runs a layer's linear GEMMs, at
// which peak, what its quantize kernels move through HBM, and what it
// stores. The facts come from Transformer Engine (TE, main at d0067d0,
// docs/features/low_precision_training/*) and Megatron-LM (main at
// d98e8a6, megatron/core/transformer/transformer_config.py,
// megatron/core/fp8_utils.py, megatron/training/arguments.py):
//
//   - Only the linear layers built from TE modules run low precision: QKV,
//     the attention projection, fc1, fc2, the MLA projections and the
//     expert GEMMs (TE GroupedLinear), in fprop, dgrad and wgrad. The
//     router gate, the attention core, the LM head, the embedding, norms
//     and activations stay in the training dtype (TE introduction.rst,
//     Megatron moe/router.py).
//   - --first-last-layers-bf16 keeps --num-layers-at-start-in-bf16 and
//     --num-layers-at-end-in-bf16 decoder layers in BF16; Megatron refuses
//     it with the delayed recipe (arguments.py).
//   - Each linear quantizes its input in the forward and its output
//     gradient in the backward, every micro-batch; its weight once per step
//     (TE caches quantized weights across micro-batches, is_first_microbatch,
//     pytorch/module/linear.py). Bytes per quantize of N BF16 elements
//     (train-2026.md §2 "Extra kernels", from TE's cast kernels):
//        delayed     read 2N, write N (+N transposed copy on Hopper)
//        tensorwise  read 4N (amax pass, then cast), write N (+N on Hopper)
//        blockwise   read 2N, write 2N + scales (1x128 rows and columns)
//        mxfp8       read 2N, write 2(N + N/32) (rows and columns, E8M0)
//        nvfp4       read 4N (global amax, then cast), write 2(N/2 + N/16);
//                    the wgrad operands pass through a 16-point Hadamard
//                    transform (read 2N, write 2N) before their cast
//     LayerNormLinear fuses the norm with the cast of its output: the QKV
//     and fc1 inputs cost their writes only (the norm already reads).
//   - Saved linear inputs are kept quantized, in the orientation the wgrad
//     GEMM reads (TE keeps only the column-wise usage after the forward);
//     weights keep quantized copies beside the BF16 ones for the step
//     (row- and column-wise: Hopper's FP8 GEMM is TN-only and needs a
//     physical transpose; MXFP8 and NVFP4 quantize each orientation on its
//     own), or replace them with --fp8-param-gather (FP8 primaries, the
//     distributed optimizer's parameter all-gather at 1 byte).
//   - Delayed scaling all-reduces the amax history once per layer's
//     forward over the stage's tp x dp x cp ranks (TE's amax reduction at
//     autocast exit); tensorwise scaling all-reduces the amax of each
//     sequence-parallel input over tp before its quantized all-gather.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/gpu.h"
#include "core/types.h"

namespace ppb {

enum class Recipe {
  None,           // every GEMM in the training dtype
  Fp8Delayed,     // --fp8-recipe delayed (Megatron's default)
  Fp8Tensorwise,  // --fp8-recipe tensorwise (current scaling)
  Fp8Blockwise,   // --fp8-recipe blockwise (DeepSeek-V3's 1x128 / 128x128)
  Mxfp8,          // --fp8-recipe mxfp8
  Nvfp4,          // --fp4-format e2m1 --fp4-recipe nvfp4
};

// The recipe's name as plan.precision writes it: bf16, fp8-delayed,
// fp8-tensorwise, fp8-blockwise, mxfp8, nvfp4.
const char* RecipeName(Recipe r);
// Every recipe, in the order above; and the one named `name` (RecipeName).
inline constexpr Recipe kAllRecipes[] = {Recipe::None,          Recipe::Fp8Delayed,
                                         Recipe::Fp8Tensorwise, Recipe::Fp8Blockwise,
                                         Recipe::Mxfp8,         Recipe::Nvfp4};
std::optional<Recipe> FindRecipe(std::string_view name);
// Megatron's --fp8-recipe value (delayed, tensorwise, blockwise, mxfp8),
// or "nvfp4" (the --fp4-recipe value).
const char* MegatronRecipe(Recipe r);
bool IsFp4(Recipe r);

// How the model's linear layers are trained (training.fp8, training.fp4).
struct LowPrecision {
  Recipe recipe = Recipe::None;
  bool hybrid = true;          // --fp8-format hybrid (E4M3 fwd, E5M2 grad)
                               // or e4m3
  bool param_gather = false;   // --fp8-param-gather
  int bf16_start = 0;          // --num-layers-at-start-in-bf16
  int bf16_end = 0;            // --num-layers-at-end-in-bf16
  bool on() const { return recipe != Recipe::None; }
};

// Whether decoder layer `layer` (0-based, of `layers`) runs low precision.
bool LowPrecisionLayer(const LowPrecision& p, int layer, int layers);

// "" when `gpu` runs `r`, else why not ("mxfp8 needs Blackwell ...").
std::string RecipeRuns(Recipe r, const Gpu& gpu);

// The dense peak (TFLOP/s) and the large-GEMM share of it that the
// recipe's GEMMs run at.
double RecipePeakTflops(Recipe r, const Gpu& gpu);
double RecipeMatmulShare(Recipe r, const Gpu& gpu);

// HBM bytes of one quantize of `elements` BF16 elements, and how many
// kernels it launches. `fused`: the cast fused into the norm before it
// (its writes only). `wgrad_operand`: NVFP4's Hadamard pass applies.
struct QuantizeCost {
  double bytes = 0;
  int kernels = 0;
};
QuantizeCost QuantizeBytes(Recipe r, GpuArch arch, double elements,
                           bool fused);
// NVFP4's random Hadamard transform of the wgrad operands (input and
// output gradient): read and write the BF16 operand once more.
QuantizeCost HadamardBytes(Recipe r, double elements);

// Bytes per element of a saved linear input (its wgrad orientation).
double SavedInputBytes(Recipe r, int activation_bytes);
// Bytes per parameter of the quantized weight copies kept for the step
// (both orientations where the recipe needs them).
double WeightCopyBytes(Recipe r, GpuArch arch);
// Bytes per parameter that --fp8-param-gather's all-gather moves.
double GatheredParamBytes(Recipe r);

}  // namespace ppb
