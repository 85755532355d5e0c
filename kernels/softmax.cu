#include "cuda_check.hpp"
#include "device_math.cuh"
#include "softmax.hpp"

namespace trainsim::kernels {

namespace {

constexpr int kThreads = 256;

__global__ void forward_kernel(const Bf16* x, Bf16* y, long cols, float scale) {
  const long base = blockIdx.x * cols;
  float mx = -INFINITY;
  for (long c = threadIdx.x; c < cols; c += blockDim.x)
    mx = fmaxf(mx, scale * device::load(x, base + c));
  mx = device::block_max(mx);
  float sum = 0;
  for (long c = threadIdx.x; c < cols; c += blockDim.x)
    sum += __expf(scale * device::load(x, base + c) - mx);
  const float inv = 1.0f / device::block_sum(sum);
  for (long c = threadIdx.x; c < cols; c += blockDim.x)
    device::store(y, base + c, __expf(scale * device::load(x, base + c) - mx) * inv);
}

__global__ void backward_kernel(const Bf16* y, const Bf16* dy, Bf16* dx, long cols, float scale) {
  const long base = blockIdx.x * cols;
  float dot = 0;
  for (long c = threadIdx.x; c < cols; c += blockDim.x)
    dot += device::load(dy, base + c) * device::load(y, base + c);
  dot = device::block_sum(dot);
  for (long c = threadIdx.x; c < cols; c += blockDim.x)
    device::store(dx, base + c,
                  scale * device::load(y, base + c) * (device::load(dy, base + c) - dot));
}

}  // namespace

void softmax_forward(const Bf16* x, Bf16* y, long rows, long cols, float scale,
                     cudaStream_t stream) {
  forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, cols, scale);
  TRAINSIM_CUDA_LAUNCHED();
}

void softmax_backward(const Bf16* y, const Bf16* dy, Bf16* dx, long rows, long cols, float scale,
                      cudaStream_t stream) {
  backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(y, dy, dx, cols, scale);
  TRAINSIM_CUDA_LAUNCHED();
}

}  // namespace trainsim::kernels
