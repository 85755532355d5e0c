#pragma once
// Pieces of a measurement's provenance that need no GPU to compute: the date and the way library
// version codes are spelled. The GPU-side queries (device name, SM count, clocks) are in
// device_info.hpp.
#include <string>

namespace trainsim::validate {

/// Today's date in UTC, YYYY-MM-DD.
[[nodiscard]] std::string today_utc();

/// The kernel driver version ("580.82.07") from the text of /proc/driver/nvidia/version
/// ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.82.07  ..."); empty when absent.
[[nodiscard]] std::string parse_nvidia_driver_version(const std::string& proc_text);
/// parse_nvidia_driver_version of /proc/driver/nvidia/version; empty when it cannot be read.
[[nodiscard]] std::string read_nvidia_driver_version();

/// A version code major*10000 + minor*100 + patch (cublasLtGetVersion, ncclGetVersion) as "M.m.p".
[[nodiscard]] std::string dotted_version(long code);
/// A CUDA version code major*1000 + minor*10 (cudaRuntimeGetVersion, cudaDriverGetVersion) as
/// "M.m".
[[nodiscard]] std::string cuda_version(int code);

}  // namespace trainsim::validate
