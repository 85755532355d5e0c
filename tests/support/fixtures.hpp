#pragma once
// Shared test fixtures: a device with round numbers, so expectations can be written out by hand,
// and a helper that captures the ConfigError a loader throws.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "model/device_profile.hpp"

namespace trainsim::testing_support {

/// 100 TFLOP/s bf16, 10 TFLOP/s fp32, 1 TB/s, GEMM efficiency 0.5, memory efficiency 0.8,
/// no tile quantization, 5 us per kernel.
inline model::DeviceProfile round_number_device() {
  model::DeviceProfile d;
  d.name = "test";
  d.peak_bf16 = 100e12;
  d.peak_fp32 = 10e12;
  d.memory_bandwidth = 1e12;
  d.gemm_efficiency = 0.5;
  d.gemm_tile = 0;
  d.memory_efficiency = 0.8;
  d.launch_overhead = 5e-6;
  return d;
}

/// Runs `load(file)` and returns the ConfigError it throws; records a failure if it loads.
template <class Load>
ConfigError config_error_of(Load load, const std::string& file) {
  try {
    (void)load(file);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << file << " loaded, expected a ConfigError";
  return ConfigError("", "", "");
}

}  // namespace trainsim::testing_support
