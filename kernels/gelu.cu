#include "cuda_check.hpp"
#include "device_math.cuh"
#include "gelu.hpp"

namespace trainsim::kernels {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608f;
constexpr float kCubic = 0.044715f;

__global__ void forward_kernel(const Bf16* x, Bf16* y, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const float v = device::load(x, i);
    device::store(y, i, 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + kCubic * v * v * v))));
  }
}

__global__ void backward_kernel(const Bf16* x, const Bf16* dy, Bf16* dx, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const float v = device::load(x, i);
    const float t = tanhf(kSqrt2OverPi * (v + kCubic * v * v * v));
    const float grad = 0.5f * (1.0f + t) +
                       0.5f * v * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    device::store(dx, i, device::load(dy, i) * grad);
  }
}

}  // namespace

void gelu_forward(const Bf16* x, Bf16* y, long n, cudaStream_t stream) {
  forward_kernel<<<device::grid_for(n, 256), 256, 0, stream>>>(x, y, n);
  TRAINSIM_CUDA_LAUNCHED();
}

void gelu_backward(const Bf16* x, const Bf16* dy, Bf16* dx, long n, cudaStream_t stream) {
  backward_kernel<<<device::grid_for(n, 256), 256, 0, stream>>>(x, dy, dx, n);
  TRAINSIM_CUDA_LAUNCHED();
}

}  // namespace trainsim::kernels
