#include "device_info.hpp"

#include <cuda_runtime_api.h>

#include "cuda_check.hpp"
#include "gemm_cublaslt.hpp"
#include "provenance.hpp"

namespace trainsim::validate {

int require_cuda_devices() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    throw NoDeviceError(std::string("no CUDA device: ") + cudaGetErrorString(e));
  if (count == 0) throw NoDeviceError("no CUDA device: the CUDA runtime sees none");
  return count;
}

DeviceInfo describe_device(int device) {
  const int count = require_cuda_devices();
  if (device < 0 || device >= count)
    throw NoDeviceError("no CUDA device " + std::to_string(device) + " (" + std::to_string(count) +
                        " visible)");
  TRAINSIM_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop{};
  TRAINSIM_CUDA(cudaGetDeviceProperties(&prop, device));
  DeviceInfo info;
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) == cudaSuccess)
    info.sm_clock_mhz = khz / 1000.0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess)
    info.memory_clock_mhz = khz / 1000.0;
  int runtime = 0, driver_api = 0;
  TRAINSIM_CUDA(cudaRuntimeGetVersion(&runtime));
  TRAINSIM_CUDA(cudaDriverGetVersion(&driver_api));
  info.cuda = cuda_version(runtime);
  info.driver = read_nvidia_driver_version();
  if (info.driver.empty()) info.driver = "CUDA driver API " + cuda_version(driver_api);
  return info;
}

model::CalibrationProvenance measured_provenance(const DeviceInfo& info,
                                                 const std::string& source) {
  model::CalibrationProvenance p;
  p.method = "measured";
  p.source = source;
  p.date = today_utc();
  p.gpu = info.name;
  p.sm_count = info.sm_count;
  p.sm_clock_mhz = info.sm_clock_mhz;
  p.memory_clock_mhz = info.memory_clock_mhz;
  p.driver = info.driver;
  p.cuda = info.cuda;
  p.cublas = dotted_version(kernels::cublaslt_version());
  return p;
}

}  // namespace trainsim::validate
