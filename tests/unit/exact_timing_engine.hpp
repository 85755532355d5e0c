#pragma once
// The SimGrid Engine an engine test simulates on (engine::make_exact_timing_engine). SimGrid
// allows one Engine per process, so only the first test of a process gets one; ctest runs each
// test in a process of its own.
namespace trainsim::engine::testing_support {

/// Whether this process has not made its Engine yet; true once only.
inline bool first_engine_of_process() {
  static bool made = false;
  const bool first = !made;
  made = true;
  return first;
}

}  // namespace trainsim::engine::testing_support
