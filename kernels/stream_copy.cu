#include "cuda_check.hpp"
#include "stream_copy.hpp"

namespace trainsim::kernels {

namespace {

__global__ void copy_kernel(const int4* src, int4* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void nothing_kernel() {}

}  // namespace

void stream_copy(const void* src, void* dst, std::size_t bytes, cudaStream_t stream) {
  if (bytes % 16 != 0) throw CudaError("stream_copy: bytes must be a multiple of 16");
  const std::size_t n = bytes / 16;
  int device = 0, sms = 0;
  TRAINSIM_CUDA(cudaGetDevice(&device));
  TRAINSIM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // A few waves of blocks per SM; the grid-stride loop does the rest.
  copy_kernel<<<static_cast<unsigned>(sms * 8), 512, 0, stream>>>(static_cast<const int4*>(src),
                                                                  static_cast<int4*>(dst), n);
  TRAINSIM_CUDA_LAUNCHED();
}

void empty_kernel(cudaStream_t stream) {
  nothing_kernel<<<1, 32, 0, stream>>>();
  TRAINSIM_CUDA_LAUNCHED();
}

}  // namespace trainsim::kernels
