#pragma once
// Filling a compute task's memory-bound part (Task::memory_bound) from the cost model's
// (model::ops_memory_bound), for the schedules whose compute overlaps collectives.
#include <algorithm>

#include "model/compute_cost.hpp"
#include "program/program.hpp"

namespace trainsim::program {

/// Sets `t`'s memory-bound part to `seconds` (model::ops_memory_bound), within the task's
/// duration (the two are sums of the same op times in different orders) and never negative.
inline void set_memory_bound(Task& t, Seconds seconds) { t.memory_bound = std::clamp<Seconds>(seconds, 0, t.duration); }

}  // namespace trainsim::program
