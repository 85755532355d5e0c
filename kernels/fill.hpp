#pragma once
// Filling device tensors in place from pattern.hpp's deterministic functions, so inputs of any
// size cost no host work and the CPU can recompute any element.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace trainsim::kernels {

/// How a tensor's elements are stored.
enum class ElementType { fp32, fp16, bf16 };
[[nodiscard]] std::size_t element_bytes(ElementType t);

/// element i = gemm_pattern(seed, i), stored as `type`.
void fill_gemm_pattern(void* data, ElementType type, std::size_t count, std::uint64_t seed,
                       cudaStream_t stream);
/// element i = lo + (hi - lo) * uniform01(seed, i), stored as `type`.
void fill_uniform(void* data, ElementType type, std::size_t count, std::uint64_t seed, float lo,
                  float hi, cudaStream_t stream);

}  // namespace trainsim::kernels
