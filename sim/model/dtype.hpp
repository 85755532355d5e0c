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

}  // namespace trainsim::model
