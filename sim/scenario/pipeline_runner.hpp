#pragma once
// The input pipeline of one point: from the detailed step (its spans) to the step profile the
// epoch simulation needs, the read plan, and the epoch simulation in a forked child (its own
// SimGrid Engine). Used by simulate_point when the scenario has a "data" section.
#include "scenario/point_runner.hpp"

namespace trainsim::scenario {

/// Simulates the epochs and sets r.pipeline; r.samples_per_s and r.step_time become those of
/// the last epoch (the steady state with warm caches). Needs r.spans of the detailed step.
void add_input_pipeline(const Scenario& s, const Point& p, PointResult& r);

/// The file system a point reads from, sized for its capacity.
[[nodiscard]] storage::FsxFileSystem point_file_system(const Scenario& s, const Point& p);

}  // namespace trainsim::scenario
