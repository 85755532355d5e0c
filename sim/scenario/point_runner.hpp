#pragma once
// Simulates one scenario point. SimGrid allows one Engine per process, so each point runs in a
// forked child that sends its result back through a pipe; the parent stays SimGrid-free.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/program_executor.hpp"
#include "pipeline/pipeline_result.hpp"
#include "memory/memory_advice.hpp"
#include "program/schedule_inputs.hpp"
#include "scenario/scenario.hpp"

namespace trainsim::scenario {

/// When one task of one rank ran. Its names are indices into PointResult::span_names: a step
/// of hundreds of ranks has millions of spans but a few thousand distinct names.
struct TaskSpan {
  int rank, stream;
  int name, phase, stream_name;
  Seconds start, end;
};

struct PointResult {
  Point point;
  int accelerators = 0;
  /// The memory model's verdict, computed before anything is simulated. A point that does not
  /// fit is a result (OOM, with the breakdown), not simulated and not an error.
  memory::MemoryVerdict memory;
  bool oom = false;
  /// Set when the point fits but its plan has no time schedule yet; says which part is missing.
  std::string not_simulated;
  bool completed = false;
  Seconds step_time = 0;
  double samples_per_s = 0;
  double sim_wall_s = 0;  ///< the simulator's own wall time for this point
  double sim_cpu_s = 0;   ///< its CPU time (what sim_wall_s would be on an otherwise idle core)
  /// sim_wall_s by part (benchmarks; never written to reports).
  struct WallSplit {
    double platform = 0;  ///< SimGrid engine and platform
    double program = 0;   ///< the schedule's per-rank programs
    double fold = 0;      ///< rank folding
    double prepare = 0;   ///< collective plans and merged calls, per-class state
    double run = 0;       ///< the simulation
  } wall;
  /// What the simulation ran (benchmarks; never written to reports): rank classes simulated and
  /// the SimGrid activities started (engine/program_executor.hpp).
  struct Activity {
    int classes = 0;
    double flows = 0;  ///< Comms: collective flows and host copies
    double execs = 0;  ///< Execs: compute tasks and SM holds
  } activity;
  std::vector<TaskSpan> spans;  ///< filled when tracing
  std::vector<std::string> span_names;  ///< what TaskSpan's name indices refer to
  /// Epochs with the input pipeline (scenarios with a "data" section); samples_per_s and
  /// step_time are then the last epoch's.
  std::optional<pipeline::PipelineResult> pipeline;
  /// Device memory as the engine followed it along the simulated step (max over ranks).
  Bytes peak_memory = 0;
  int peak_memory_rank = 0;
  Seconds peak_memory_time = 0;
  /// PyTorch's caching allocator replaying the same allocations (engine/program_executor.hpp):
  /// the most any rank reserved, the retries of that rank, and whether some rank's request failed
  /// even after a retry.
  Bytes peak_reserved = 0;
  long allocator_retries = 0;
  bool allocator_out_of_memory = false;
  std::vector<engine::MemorySample> memory_samples;  ///< filled when tracing
};

/// What the schedule builders read for `p`, with the memory model's numbers for the engine.
[[nodiscard]] program::ScheduleInputs schedule_inputs(const Scenario& s, const Point& p);

/// Why `p`'s plan cannot be simulated in time yet; empty when it can.
[[nodiscard]] std::string unsupported_reason(const Scenario& s, const Point& p);

/// Simulates `p` in this process (creates the SimGrid Engine: once per process only).
[[nodiscard]] PointResult simulate_point_in_process(const Scenario& s, const Point& p, bool trace);

/// The result as JSON and back (how a child process hands it to its parent).
[[nodiscard]] nlohmann::json point_result_to_json(const PointResult& r);
[[nodiscard]] PointResult point_result_from_json(const nlohmann::json& j, const Point& p);

/// Judges `p`'s memory; if it fits and its plan can be simulated, simulates it in a forked child
/// process (simulate_forked). Never throws for an OOM point: that is a result.
[[nodiscard]] PointResult simulate_point(const Scenario& s, const Point& p, bool trace);

/// Simulates `p` in a forked child process and returns its result (no memory verdict).
[[nodiscard]] PointResult simulate_forked(const Scenario& s, const Point& p, bool trace);

}  // namespace trainsim::scenario
