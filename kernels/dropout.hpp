#pragma once
// Inverted dropout over n bf16 elements with pattern.hpp's counter-based mask (seed, index), so
// the CPU reference draws the same mask. The mask is also written, one byte per element, for the
// backward pass (what PyTorch keeps).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "reference/bf16.hpp"

namespace trainsim::kernels {

/// y = keep ? x / (1 - p) : 0; mask = keep.
void dropout_forward(const Bf16* x, Bf16* y, std::uint8_t* mask, long n, float p,
                     std::uint64_t seed, cudaStream_t stream);
/// dx = mask ? dy / (1 - p) : 0.
void dropout_backward(const Bf16* dy, const std::uint8_t* mask, Bf16* dx, long n, float p,
                      cudaStream_t stream);
/// The transformer's "bias + dropout + residual add": y = residual + dropout(x + bias), bias over
/// the last `cols` columns.
void bias_dropout_residual(const Bf16* x, const Bf16* bias, const Bf16* residual, Bf16* y,
                           std::uint8_t* mask, long n, long cols, float p, std::uint64_t seed,
                           cudaStream_t stream);

}  // namespace trainsim::kernels
