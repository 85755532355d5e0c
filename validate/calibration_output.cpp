#include "calibration_output.hpp"

#include <fstream>
#include <stdexcept>

#include "core/error.hpp"

namespace trainsim::validate {

model::GemmSample gemm_sample(model::Dtype dtype, const GemmShape& shape, Seconds per_call) {
  if (per_call <= 0) throw std::invalid_argument("gemm_sample: time must be positive");
  model::GemmSample g;
  g.dtype = dtype;
  g.m = static_cast<double>(shape.m);
  g.n = static_cast<double>(shape.n);
  g.k = static_cast<double>(shape.k);
  g.batch = static_cast<double>(shape.batch);
  g.achieved = gemm_flops(shape) / per_call;
  return g;
}

BytesPerSecond copy_bandwidth(Bytes bytes_copied, Seconds per_copy) {
  if (per_copy <= 0) throw std::invalid_argument("copy_bandwidth: time must be positive");
  return 2.0 * bytes_copied / per_copy;
}

void write_calibration_file(const std::string& path, const model::KernelCalibration& c) {
  std::ofstream out(path);
  if (!out) throw ConfigError(path, "", "cannot open the calibration file for writing");
  model::write_kernel_calibration(out, c);
  if (!out) throw ConfigError(path, "", "writing the calibration file failed");
}

}  // namespace trainsim::validate
