#pragma once
// Row-wise softmax of scale * x over a rows x cols bf16 tensor (attention scores: rows =
// batch * heads * seq, cols = seq), fp32 arithmetic. One block per row.
#include <cuda_runtime_api.h>

#include "reference/bf16.hpp"

namespace trainsim::kernels {

void softmax_forward(const Bf16* x, Bf16* y, long rows, long cols, float scale,
                     cudaStream_t stream);
/// dx = scale * y * (dy - sum(dy * y)) per row.
void softmax_backward(const Bf16* y, const Bf16* dy, Bf16* dx, long rows, long cols, float scale,
                      cudaStream_t stream);

}  // namespace trainsim::kernels
