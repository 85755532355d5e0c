#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.hpp"
#include "device_math.cuh"
#include "fill.hpp"
#include "reference/pattern.hpp"

namespace trainsim::kernels {

namespace {

template <class Value>
__global__ void fill_kernel(void* data, ElementType type, std::size_t count, Value value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = value(i);
    switch (type) {
      case ElementType::fp32:
        static_cast<float*>(data)[i] = v;
        break;
      case ElementType::fp16:
        static_cast<__half*>(data)[i] = __float2half_rn(v);
        break;
      case ElementType::bf16:
        static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16_rn(v);
        break;
    }
  }
}

struct GemmPattern {
  std::uint64_t seed;
  __device__ float operator()(std::size_t i) const { return gemm_pattern(seed, i); }
};

struct Uniform {
  std::uint64_t seed;
  float lo, hi;
  __device__ float operator()(std::size_t i) const { return lo + (hi - lo) * uniform01(seed, i); }
};

}  // namespace

std::size_t element_bytes(ElementType t) { return t == ElementType::fp32 ? 4 : 2; }

void fill_gemm_pattern(void* data, ElementType type, std::size_t count, std::uint64_t seed,
                       cudaStream_t stream) {
  fill_kernel<<<device::grid_for(static_cast<long>(count), 256), 256, 0, stream>>>(
      data, type, count, GemmPattern{seed});
  TRAINSIM_CUDA_LAUNCHED();
}

void fill_uniform(void* data, ElementType type, std::size_t count, std::uint64_t seed, float lo,
                  float hi, cudaStream_t stream) {
  fill_kernel<<<device::grid_for(static_cast<long>(count), 256), 256, 0, stream>>>(
      data, type, count, Uniform{seed, lo, hi});
  TRAINSIM_CUDA_LAUNCHED();
}

}  // namespace trainsim::kernels
