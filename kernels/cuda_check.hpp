#pragma once
// CUDA and cuBLAS calls that fail throw CudaError naming the call, file and line: the harness's
// main turns it into a message and exit status 1 instead of a crash.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace trainsim::kernels {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_cuda_error(const char* what, const std::string& detail,
                                          const char* file, int line) {
  throw CudaError(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  detail);
}

}  // namespace trainsim::kernels

#define TRAINSIM_CUDA(call)                                                                     \
  do {                                                                                          \
    const cudaError_t trainsim_err_ = (call);                                                   \
    if (trainsim_err_ != cudaSuccess)                                                           \
      ::trainsim::kernels::throw_cuda_error(#call, cudaGetErrorString(trainsim_err_), __FILE__, \
                                            __LINE__);                                          \
  } while (0)

/// After a kernel launch: launch-configuration errors surface here, not at the next call.
#define TRAINSIM_CUDA_LAUNCHED() TRAINSIM_CUDA(cudaGetLastError())
