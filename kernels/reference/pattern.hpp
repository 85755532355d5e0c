#pragma once
// Deterministic test data without a random-number state: element i of a tensor is a pure function
// of (seed, i), so the GPU fills a tensor in place and the CPU recomputes any element of it to
// check a result, without copying the tensor back.
#include <cstdint>

#include "host_device.hpp"

namespace trainsim::kernels {

/// SplitMix64 finaliser of (seed, index): a well-mixed 64-bit value.
TRAINSIM_HD inline std::uint64_t mix64(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A GEMM operand value in {-8/16, ..., 8/16}: exact in fp32, tf32, fp16 and bf16, and every
/// product is a multiple of 1/256, so an fp32-accumulated dot product of up to 2^16 terms is exact
/// and a GEMM result differs from the CPU's only by the rounding of its output.
TRAINSIM_HD inline float gemm_pattern(std::uint64_t seed, std::uint64_t index) {
  return static_cast<float>(static_cast<int>(mix64(seed, index) % 17u) - 8) / 16.0f;
}

/// A uniform value in [0, 1) with 24 random bits (for dropout and activations).
TRAINSIM_HD inline float uniform01(std::uint64_t seed, std::uint64_t index) {
  return static_cast<float>(mix64(seed, index) >> 40) * (1.0f / 16777216.0f);
}

/// Whether dropout with drop probability `p` keeps element `index` (same on host and device).
TRAINSIM_HD inline bool dropout_keeps(std::uint64_t seed, std::uint64_t index, float p) {
  return uniform01(seed, index) >= p;
}

}  // namespace trainsim::kernels
