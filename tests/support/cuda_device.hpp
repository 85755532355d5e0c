#pragma once
// GPU tests skip, with the reason, where no CUDA device is usable: a skip never reads as a pass.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

namespace trainsim::testing_support {

/// Empty when a device is usable, else why not.
inline std::string no_cuda_device_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  if (count == 0) return "the CUDA runtime sees no device";
  return "";
}

}  // namespace trainsim::testing_support

#define REQUIRE_CUDA_DEVICE()                                                              \
  do {                                                                                     \
    const std::string reason = ::trainsim::testing_support::no_cuda_device_reason();       \
    if (!reason.empty()) GTEST_SKIP() << "no CUDA device: " << reason;                     \
  } while (0)
