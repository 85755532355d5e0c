#pragma once
// `trainsim-validate kernels` without the command line: verify every kernel, then time the GEMM
// sweep (gemm_sweep.hpp), the streaming copy, the empty kernel and the memory-bound kernels, and
// return them as the simulator's KernelCalibration. `layer` calls it too when given no file.
#include <iosfwd>

#include "arguments.hpp"
#include "device_info.hpp"
#include "model/kernel_calibration.hpp"

namespace trainsim::validate {

/// Thrown when a kernel's output does not match its CPU reference: nothing is timed or written.
struct VerificationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs on the current device; one progress line per measurement goes to `log`.
[[nodiscard]] model::KernelCalibration measure_kernels(const KernelsOptions& options,
                                                       const DeviceInfo& info, std::ostream& log);

}  // namespace trainsim::validate
