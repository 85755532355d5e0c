#pragma once
// What the harness records about the GPU it measured, and the check that there is one.
#include <stdexcept>
#include <string>

#include "model/kernel_calibration.hpp"

namespace trainsim::validate {

/// No usable CUDA device: main prints the reason and exits 1 instead of failing in a kernel.
struct NoDeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Number of visible CUDA devices; NoDeviceError (with the CUDA runtime's reason) when none.
[[nodiscard]] int require_cuda_devices();

struct DeviceInfo {
  std::string name;
  long sm_count = 0;
  double sm_clock_mhz = 0, memory_clock_mhz = 0;  ///< maximum clocks the driver reports
  std::string driver;  ///< kernel module version, else the CUDA driver API version
  std::string cuda;    ///< CUDA runtime version
};

/// Selects `device` and describes it.
[[nodiscard]] DeviceInfo describe_device(int device);

/// A calibration provenance for a measurement made now on `info` (method "measured").
[[nodiscard]] model::CalibrationProvenance measured_provenance(const DeviceInfo& info,
                                                               const std::string& source);

}  // namespace trainsim::validate
