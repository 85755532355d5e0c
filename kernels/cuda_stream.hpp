#pragma once
// RAII CUDA stream (non-blocking with respect to the legacy default stream).
#include <cuda_runtime_api.h>

#include "cuda_check.hpp"

namespace trainsim::kernels {

class CudaStream {
 public:
  CudaStream() { TRAINSIM_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaStream() { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return stream_; }
  void synchronize() const { TRAINSIM_CUDA(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_{};
};

}  // namespace trainsim::kernels
