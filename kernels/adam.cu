#include <cmath>

#include "adam.hpp"
#include "cuda_check.hpp"
#include "device_math.cuh"

namespace trainsim::kernels {

namespace {

__global__ void adamw_kernel(float* w, const float* g, float* m, float* v, Bf16* working, long n,
                             float lr, float beta1, float beta2, float eps, float weight_decay,
                             float inv_c1, float inv_c2) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float wi = w[i];
    const float updated =
        wi - lr * ((mi * inv_c1) / (sqrtf(vi * inv_c2) + eps) + weight_decay * wi);
    w[i] = updated;
    device::store(working, i, updated);
  }
}

}  // namespace

void adamw_step(float* w, const float* g, float* m, float* v, Bf16* working, long n,
                const reference::AdamParams& p, cudaStream_t stream) {
  const float inv_c1 = static_cast<float>(1.0 / (1.0 - std::pow(p.beta1, p.step)));
  const float inv_c2 = static_cast<float>(1.0 / (1.0 - std::pow(p.beta2, p.step)));
  adamw_kernel<<<device::grid_for(n, 256), 256, 0, stream>>>(
      w, g, m, v, working, n, p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, inv_c1, inv_c2);
  TRAINSIM_CUDA_LAUNCHED();
}

}  // namespace trainsim::kernels
