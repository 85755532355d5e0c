#pragma once
// GELU (tanh approximation, reference.hpp) over n bf16 elements, forward and backward.
#include <cuda_runtime_api.h>

#include "reference/bf16.hpp"

namespace trainsim::kernels {

void gelu_forward(const Bf16* x, Bf16* y, long n, cudaStream_t stream);
/// dx = dy * gelu'(x).
void gelu_backward(const Bf16* x, const Bf16* dy, Bf16* dx, long n, cudaStream_t stream);

}  // namespace trainsim::kernels
