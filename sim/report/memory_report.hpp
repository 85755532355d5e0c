#pragma once
// `trainsim memory`: per point, the memory breakdown of every distinct rank kind (terms with
// their formulas), the verdict, the smallest sharding degree that fits and what to change first.
#include <ostream>

#include "scenario/scenario.hpp"

namespace trainsim::report {

void write_memory_table(std::ostream& os, const scenario::Scenario& s);
/// JSON: {"scenario", "points": [{"label", "nodes", "accelerators", "fits", "ranks": [{"kind",
/// "terms": {name: bytes}, "peak_bytes", "capacity_bytes", "fits", "largest_term"}],
/// "smallest_fitting_shard_degree", "advice"}]}.
void write_memory_json(std::ostream& os, const scenario::Scenario& s);

}  // namespace trainsim::report
