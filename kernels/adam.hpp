#pragma once
// The fused AdamW step of mixed-precision training: fp32 master weights, gradients and moments,
// and the bf16 working copy the next forward pass reads, in one pass over memory
// (30 bytes per parameter: model/compute_cost.cpp's optimizer_step_op).
#include <cuda_runtime_api.h>

#include "reference/bf16.hpp"
#include "reference/reference.hpp"

namespace trainsim::kernels {

/// reference::adamw_step on the GPU, plus working[i] = bf16(w[i]).
void adamw_step(float* w, const float* g, float* m, float* v, Bf16* working, long n,
                const reference::AdamParams& params, cudaStream_t stream);

}  // namespace trainsim::kernels
