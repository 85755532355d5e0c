#pragma once
// Turns timings into the simulator's kernel calibration (sim/model/kernel_calibration.hpp) and
// writes it with the simulator's own writer, so what `trainsim-validate kernels` writes is what a
// device profile's "kernel_calibration" loads.
#include <string>

#include "core/units.hpp"
#include "gemm_sweep.hpp"
#include "model/kernel_calibration.hpp"

namespace trainsim::validate {

/// A GEMM sample: achieved FLOP/s = 2 m n k batch / `per_call` seconds.
[[nodiscard]] model::GemmSample gemm_sample(model::Dtype dtype, const GemmShape& shape,
                                            Seconds per_call);

/// Achieved streaming bandwidth of a copy of `bytes_copied` bytes in `per_copy` seconds: each byte
/// is read once and written once, so 2 * bytes_copied / per_copy (the STREAM "copy" convention).
[[nodiscard]] BytesPerSecond copy_bandwidth(Bytes bytes_copied, Seconds per_copy);

/// Writes `c` to `path` with model::write_kernel_calibration; ConfigError when it cannot.
void write_calibration_file(const std::string& path, const model::KernelCalibration& c);

}  // namespace trainsim::validate
