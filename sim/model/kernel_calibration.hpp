#pragma once
// Measured kernel performance of one accelerator: GEMM throughput by shape and dtype, achieved
// streaming bandwidth and per-kernel launch cost, with where the numbers come from. Read from
// topologies/calibration/*-kernels.json; written by `trainsim-validate kernels` on a real GPU
// (validate/), or transcribed from a published benchmark (provenance.method = "published").
//
// File format (schema "trainsim.kernel_calibration/1"):
//   { "schema": "trainsim.kernel_calibration/1",
//     "provenance": { "method": "measured"|"published", "source": "...", "date": "YYYY-MM-DD",
//                     optional: "gpu", "sm_count", "sm_clock_mhz", "memory_clock_mhz",
//                               "driver", "cuda", "cublas", "note" },
//     "gemm": [ {"dtype": "bf16", "m": 4096, "n": 4096, "k": 4096, "batch": 1,
//                "tflops": 783.3}, ... ],                 // achieved, 2*m*n*k*batch / time
//              // an fp8 sample may add "accumulation": "fast" (dtype.hpp); absent or "full": the
//              // full-precision accumulation that cuBLASLt and torch._scaled_mm default to
//     "memory_bandwidth": "1.61TB/s",                     // optional: achieved streaming copy
//     "launch_overhead": "3us",                           // optional: per kernel, back to back
//     "elementwise": [ {"name": "layer_norm", "bytes": 1e8, "time_us": 70} ] }  // optional
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "model/dtype.hpp"

namespace trainsim::model {

struct CalibrationProvenance {
  std::string method;  ///< "measured" (run by validate/) or "published" (transcribed)
  std::string source;  ///< who measured it, where; for published data the document and table
  std::string date;    ///< YYYY-MM-DD
  std::string gpu, driver, cuda, cublas, note;  ///< empty when unknown
  long sm_count = 0;                              ///< 0 when unknown
  double sm_clock_mhz = 0, memory_clock_mhz = 0;  ///< 0 when unknown
};

/// One timed GEMM: (m x k) * (k x n), `batch` times, in `dtype`.
struct GemmSample {
  Dtype dtype = Dtype::bf16;
  double m = 0, n = 0, k = 0, batch = 1;
  FlopsPerSecond achieved = 0;  ///< 2*m*n*k*batch / measured seconds
  Accumulation accumulation = Accumulation::full;  ///< fast: an fp8 sample timed with fast accumulation
};

/// One timed memory-bound kernel: its traffic (reads + writes) and time give the streaming rate
/// of its kernel class (device_profile.hpp, memory_bound_rate).
struct ElementwiseSample {
  std::string name;
  Bytes bytes = 0;
  Seconds time = 0;
};

struct KernelCalibration {
  std::string file;
  CalibrationProvenance provenance;
  std::vector<GemmSample> gemm;
  std::optional<BytesPerSecond> memory_bandwidth;  ///< achieved streaming bandwidth
  std::optional<Seconds> launch_overhead;          ///< per kernel, measured back to back
  std::vector<ElementwiseSample> elementwise;
};

/// Loads and validates a kernel calibration file; ConfigError (file, JSON path) on bad input.
[[nodiscard]] KernelCalibration load_kernel_calibration(const std::string& path);

/// Writes `c` in the file format above (what load_kernel_calibration reads back).
void write_kernel_calibration(std::ostream& out, const KernelCalibration& c);

}  // namespace trainsim::model
