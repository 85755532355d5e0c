#pragma once
// Layer norm over the last dimension of a rows x cols bf16 tensor, fp32 statistics and affine
// parameters (the "mixed" layer norm of Apex / Megatron). One block per row.
#include <cuda_runtime_api.h>

#include "reference/bf16.hpp"

namespace trainsim::kernels {

/// y = (x - mean) * rstd * gamma + beta; writes mean and rstd (1/sqrt(var + eps)) per row for
/// the backward pass.
void layer_norm_forward(const Bf16* x, const float* gamma, const float* beta, Bf16* y, float* mean,
                        float* rstd, long rows, long cols, float eps, cudaStream_t stream);

/// dx from dy and the saved statistics: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with
/// g = dy * gamma and xhat = (x - mean) * rstd. dgamma and dbeta are accumulated (atomically) into
/// the fp32 buffers, which the caller zeroes.
/// At most 16384 columns.
void layer_norm_backward(const Bf16* dy, const Bf16* x, const float* gamma, const float* mean,
                         const float* rstd, Bf16* dx, float* dgamma, float* dbeta, long rows,
                         long cols, cudaStream_t stream);

}  // namespace trainsim::kernels
