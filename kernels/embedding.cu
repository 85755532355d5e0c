#include "cuda_check.hpp"
#include "device_math.cuh"
#include "embedding.hpp"

namespace trainsim::kernels {

namespace {

__global__ void embedding_kernel(const Bf16* table, const Bf16* position, const int* tokens,
                                 Bf16* out, long seq, long hidden) {
  const long t = blockIdx.x;
  const long row = static_cast<long>(tokens[t]) * hidden;
  const long pos = (t % seq) * hidden;
  for (long c = threadIdx.x; c < hidden; c += blockDim.x)
    device::store(out, t * hidden + c,
                  device::load(table, row + c) + device::load(position, pos + c));
}

}  // namespace

void embedding_forward(const Bf16* table, const Bf16* position, const int* tokens, Bf16* out,
                       long token_count, long seq, long hidden, cudaStream_t stream) {
  embedding_kernel<<<static_cast<unsigned>(token_count), 256, 0, stream>>>(table, position, tokens,
                                                                           out, seq, hidden);
  TRAINSIM_CUDA_LAUNCHED();
}

}  // namespace trainsim::kernels
