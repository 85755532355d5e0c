#pragma once
// Chrome / Perfetto trace-event JSON of every rank's streams: one process per (point, rank),
// one thread per stream, one complete event ("ph":"X") per task, in microseconds.
#include <ostream>
#include <vector>

#include "scenario/point_runner.hpp"

namespace trainsim::report {

void write_chrome_trace(std::ostream& os, const scenario::Scenario& s,
                        const std::vector<scenario::PointResult>& results);

}  // namespace trainsim::report
