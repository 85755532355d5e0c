#pragma once
// Element types of kernels and tensors: what a GEMM runs in, what a tensor is stored in.
#include <optional>
#include <string>

namespace trainsim::model {

enum class Dtype { fp32, tf32, fp16, bf16, fp8 };

/// Bytes per element in memory (tf32 is stored as fp32).
[[nodiscard]] constexpr double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32:
    case Dtype::tf32: return 4;
    case Dtype::fp16:
    case Dtype::bf16: return 2;
    case Dtype::fp8: return 1;
  }
  return 4;
}

[[nodiscard]] const char* dtype_name(Dtype d);
/// "fp32", "tf32", "fp16", "bf16", "fp8"; nullopt for anything else.
[[nodiscard]] std::optional<Dtype> parse_dtype(const std::string& name);

/// How an FP8 GEMM accumulates on Hopper's tensor cores. `full`: partial sums promoted to fp32
/// at intervals along K (cuBLASLt's default; Transformer Engine's "split accumulator",
/// torch._scaled_mm's use_fast_accum=False). `fast`: the tensor core's own narrower accumulator
/// all the way (CUBLASLT_MATMUL_DESC_FAST_ACCUM, use_fast_accum=True): fewer instructions, a
/// faster GEMM (1.09x at the median shape measured on an H100). Other dtypes have only `full`.
enum class Accumulation { full, fast };

[[nodiscard]] const char* accumulation_name(Accumulation a);

}  // namespace trainsim::model
