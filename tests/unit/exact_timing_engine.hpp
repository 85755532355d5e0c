#pragma once
// The SimGrid Engine an engine test simulates on. SimGrid allows one Engine per process, so only
// the first test of a process gets one; ctest runs each test in a process of its own.
#include <memory>
#include <string>

#include <simgrid/s4u/Engine.hpp>
#include <xbt/log.h>

#include "engine/platform_builder.hpp"

namespace trainsim::engine::testing_support {

/// Whether this process has not made its Engine yet; true once only.
inline bool first_engine_of_process() {
  static bool made = false;
  const bool first = !made;
  made = true;
  return first;
}

/// A quiet Engine with the exact-timing network options (configure_exact_timing).
inline std::unique_ptr<simgrid::s4u::Engine> make_exact_timing_engine(const char* program_name) {
  xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  std::string name = program_name;
  char* argv[] = {name.data(), nullptr};
  auto engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv);
  configure_exact_timing(*engine);
  return engine;
}

}  // namespace trainsim::engine::testing_support
