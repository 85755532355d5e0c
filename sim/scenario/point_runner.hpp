#pragma once
// Simulates one scenario point. SimGrid allows one Engine per process, so each point runs in a
// forked child that sends its result back through a pipe; the parent stays SimGrid-free.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/program_executor.hpp"
#include "pipeline/pipeline_result.hpp"
#include "scenario/scenario.hpp"

namespace trainsim::scenario {

struct TaskSpan {
  int rank, stream;
  std::string name;
  std::string phase;
  std::string stream_name;
  Seconds start, end;
};

struct PointResult {
  Point point;
  int accelerators = 0;
  bool completed = false;
  Seconds step_time = 0;
  double samples_per_s = 0;
  double sim_wall_s = 0;  ///< the simulator's own wall time for this point
  std::vector<TaskSpan> spans;  ///< filled when tracing
  /// Epochs with the input pipeline (scenarios with a "data" section); samples_per_s and
  /// step_time are then the last epoch's.
  std::optional<pipeline::PipelineResult> pipeline;
};

/// Simulates `p` in this process (creates the SimGrid Engine: once per process only).
[[nodiscard]] PointResult simulate_point_in_process(const Scenario& s, const Point& p, bool trace);

/// The result as JSON and back (how a child process hands it to its parent).
[[nodiscard]] nlohmann::json point_result_to_json(const PointResult& r);
[[nodiscard]] PointResult point_result_from_json(const nlohmann::json& j, const Point& p);

/// Simulates `p` in a forked child process and returns its result.
[[nodiscard]] PointResult simulate_point(const Scenario& s, const Point& p, bool trace);

}  // namespace trainsim::scenario
