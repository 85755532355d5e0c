#pragma once
// What an accelerator can do: peak arithmetic per dtype, memory bandwidth, achieved efficiencies
// and per-kernel overhead. Loaded from topologies/devices/*.json; every number there carries its
// source, and fitted numbers say which reference rows they were fitted to.
#include <string>
#include <vector>

#include "core/units.hpp"

namespace trainsim::model {

struct FittedParameter {
  std::string json_path;          ///< e.g. "/gemm_efficiency"
  std::vector<std::string> rows;  ///< "scenario-file#point-label" of each row used to fit it
  std::string method;
};

struct DeviceProfile {
  std::string name;
  std::string file;
  FlopsPerSecond peak_bf16 = 0;         ///< dense tensor-core/MME peak
  FlopsPerSecond peak_fp32 = 0;         ///< vector/CUDA-core fp32 peak
  BytesPerSecond memory_bandwidth = 0;  ///< HBM peak
  double gemm_efficiency = 1;           ///< achieved / peak on large, aligned GEMMs
  double gemm_tile = 0;                 ///< GEMM output tile edge; partial tiles cost a full one
  double memory_efficiency = 1;         ///< achieved / peak on streaming kernels
  Seconds launch_overhead = 0;          ///< per kernel
  std::vector<FittedParameter> fitted;
};

/// Loads and validates a device profile; ConfigError on bad input.
[[nodiscard]] DeviceProfile load_device_profile(const std::string& path);

}  // namespace trainsim::model
