#pragma once
// The sweep's picture, as a self-contained SVG (no plotting dependency): two panels, samples/s
// and scaling efficiency, against the values of the first --set path (evenly spaced, in the
// order given); one line per combination of the other paths' values and point label.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sweep/sweep_plan.hpp"

namespace trainsim::sweep {

[[nodiscard]] std::string sweep_svg(const SweepPlan& plan,
                                    const std::vector<nlohmann::ordered_json>& rows);

}  // namespace trainsim::sweep
