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

// Backward: one block per row at a time, a bounded grid striding over rows, so dgamma and dbeta
// are summed in registers over a block's rows and added to memory once per block and column
// (one atomic per element would serialize on the `cols` addresses).
constexpr int kBackwardThreads = 512;
constexpr int kMaxColumnsPerThread = 32;  // cols <= 16384
constexpr long kBackwardBlocks = 512;

__global__ void backward_kernel(const Bf16* dy, const Bf16* x, const float* gamma,
                                const float* mean, const float* rstd, Bf16* dx, float* dgamma,
                                float* dbeta, long rows, long cols) {
  float acc_gamma[kMaxColumnsPerThread] = {};
  float acc_beta[kMaxColumnsPerThread] = {};
  for (long row = blockIdx.x; row < rows; row += gridDim.x) {
    const long base = row * cols;
    const float mu = mean[row], rs = rstd[row];
    float sum_g = 0, sum_gx = 0;
    for (long c = threadIdx.x; c < cols; c += blockDim.x) {
      const float xhat = (device::load(x, base + c) - mu) * rs;
      const float g = device::load(dy, base + c) * gamma[c];
      sum_g += g;
      sum_gx += g * xhat;
    }
    const float mean_g = device::block_sum(sum_g) / static_cast<float>(cols);
    const float mean_gx = device::block_sum(sum_gx) / static_cast<float>(cols);
    int slot = 0;
    for (long c = threadIdx.x; c < cols; c += blockDim.x, ++slot) {
      const float xhat = (device::load(x, base + c) - mu) * rs;
      const float d = device::load(dy, base + c);
      acc_gamma[slot] += d * xhat;
      acc_beta[slot] += d;
      device::store(dx, base + c, rs * (d * gamma[c] - mean_g - xhat * mean_gx));
    }
  }
  int slot = 0;
  for (long c = threadIdx.x; c < cols; c += blockDim.x, ++slot) {
    atomicAdd(&dgamma[c], acc_gamma[slot]);
    atomicAdd(&dbeta[c], acc_beta[slot]);
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
  if (cols > static_cast<long>(kBackwardThreads) * kMaxColumnsPerThread)
    throw CudaError("layer_norm_backward: at most 16384 columns");
  const long blocks = rows < kBackwardBlocks ? rows : kBackwardBlocks;
  backward_kernel<<<static_cast<unsigned>(blocks), kBackwardThreads, 0, stream>>>(
      dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, cols);
  TRAINSIM_CUDA_LAUNCHED();
}

}  // namespace trainsim::kernels
