#include "cuda_check.hpp"
#include "device_math.cuh"
#include "layer_norm.hpp"

namespace trainsim::kernels {

namespace {

constexpr int kThreads = 256;

__global__ void forward_kernel(const Bf16* x, const float* gamma, const float* beta, Bf16* y,
                               float* mean, float* rstd, long cols, float eps) {
  const long row = blockIdx.x;
  const long base = row * cols;
  float sum = 0;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) sum += device::load(x, base + c);
  const float mu = device::block_sum(sum) / static_cast<float>(cols);
  float sq = 0;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = device::load(x, base + c) - mu;
    sq += d * d;
  }
  const float rs = rsqrtf(device::block_sum(sq) / static_cast<float>(cols) + eps);
  for (long c = threadIdx.x; c < cols; c += blockDim.x)
    device::store(y, base + c, (device::load(x, base + c) - mu) * rs * gamma[c] + beta[c]);
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

__global__ void backward_kernel(const Bf16* dy, const Bf16* x, const float* gamma,
                                const float* mean, const float* rstd, Bf16* dx, float* dgamma,
                                float* dbeta, long cols) {
  const long row = blockIdx.x;
  const long base = row * cols;
  const float mu = mean[row], rs = rstd[row];
  float sum_g = 0, sum_gx = 0;
  for (long c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (device::load(x, base + c) - mu) * rs;
    const float d = device::load(dy, base + c);
    const float g = d * gamma[c];
    sum_g += g;
    sum_gx += g * xhat;
    atomicAdd(&dgamma[c], d * xhat);
    atomicAdd(&dbeta[c], d);
  }
  const float mean_g = device::block_sum(sum_g) / static_cast<float>(cols);
  const float mean_gx = device::block_sum(sum_gx) / static_cast<float>(cols);
  for (long c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (device::load(x, base + c) - mu) * rs;
    const float g = device::load(dy, base + c) * gamma[c];
    device::store(dx, base + c, rs * (g - mean_g - xhat * mean_gx));
  }
}

}  // namespace

void layer_norm_forward(const Bf16* x, const float* gamma, const float* beta, Bf16* y, float* mean,
                        float* rstd, long rows, long cols, float eps, cudaStream_t stream) {
  forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, gamma, beta, y, mean,
                                                                       rstd, cols, eps);
  TRAINSIM_CUDA_LAUNCHED();
}

void layer_norm_backward(const Bf16* dy, const Bf16* x, const float* gamma, const float* mean,
                         const float* rstd, Bf16* dx, float* dgamma, float* dbeta, long rows,
                         long cols, cudaStream_t stream) {
  backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(dy, x, gamma, mean, rstd,
                                                                        dx, dgamma, dbeta, cols);
  TRAINSIM_CUDA_LAUNCHED();
}

}  // namespace trainsim::kernels
