#pragma once
// Embedding lookup: out(t, :) = table(token[t], :) + position(t % seq, :), bf16 rows of `hidden`.
#include <cuda_runtime_api.h>

#include "reference/bf16.hpp"

namespace trainsim::kernels {

void embedding_forward(const Bf16* table, const Bf16* position, const int* tokens, Bf16* out,
                       long token_count, long seq, long hidden, cudaStream_t stream);

}  // namespace trainsim::kernels
