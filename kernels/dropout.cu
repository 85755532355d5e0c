#include "cuda_check.hpp"
#include "device_math.cuh"
#include "dropout.hpp"
#include "reference/pattern.hpp"

namespace trainsim::kernels {

namespace {

__global__ void forward_kernel(const Bf16* x, Bf16* y, std::uint8_t* mask, long n, float p,
                               std::uint64_t seed) {
  const float scale = 1.0f / (1.0f - p);
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const bool keep = dropout_keeps(seed, static_cast<std::uint64_t>(i), p);
    mask[i] = keep;
    device::store(y, i, keep ? device::load(x, i) * scale : 0.0f);
  }
}

__global__ void backward_kernel(const Bf16* dy, const std::uint8_t* mask, Bf16* dx, long n,
                                float p) {
  const float scale = 1.0f / (1.0f - p);
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    device::store(dx, i, mask[i] ? device::load(dy, i) * scale : 0.0f);
}

__global__ void bias_residual_kernel(const Bf16* x, const Bf16* bias, const Bf16* residual, Bf16* y,
                                     std::uint8_t* mask, long n, long cols, float p,
                                     std::uint64_t seed) {
  const float scale = 1.0f / (1.0f - p);
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const bool keep = dropout_keeps(seed, static_cast<std::uint64_t>(i), p);
    mask[i] = keep;
    const float v = keep ? (device::load(x, i) + device::load(bias, i % cols)) * scale : 0.0f;
    device::store(y, i, device::load(residual, i) + v);
  }
}

}  // namespace

void dropout_forward(const Bf16* x, Bf16* y, std::uint8_t* mask, long n, float p,
                     std::uint64_t seed, cudaStream_t stream) {
  forward_kernel<<<device::grid_for(n, 256), 256, 0, stream>>>(x, y, mask, n, p, seed);
  TRAINSIM_CUDA_LAUNCHED();
}

void dropout_backward(const Bf16* dy, const std::uint8_t* mask, Bf16* dx, long n, float p,
                      cudaStream_t stream) {
  backward_kernel<<<device::grid_for(n, 256), 256, 0, stream>>>(dy, mask, dx, n, p);
  TRAINSIM_CUDA_LAUNCHED();
}

void bias_dropout_residual(const Bf16* x, const Bf16* bias, const Bf16* residual, Bf16* y,
                           std::uint8_t* mask, long n, long cols, float p, std::uint64_t seed,
                           cudaStream_t stream) {
  bias_residual_kernel<<<device::grid_for(n, 256), 256, 0, stream>>>(x, bias, residual, y, mask, n,
                                                                     cols, p, seed);
  TRAINSIM_CUDA_LAUNCHED();
}

}  // namespace trainsim::kernels
