#pragma once
// A sweep's results as rows (one per finished job, in sweep order) and their CSV and JSON forms.
// scaling_efficiency: samples/s per accelerator relative to the fewest-node point that has the
// same values on every other swept path (as `trainsim run` defines it for a scenario's points).
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sweep/sweep_plan.hpp"

namespace trainsim::sweep {

/// Looks up each job's record (by key) and adds scaling_efficiency; unfinished jobs are left out.
[[nodiscard]] std::vector<nlohmann::ordered_json> result_rows(
    const SweepPlan& plan, const std::function<const nlohmann::ordered_json*(const std::string&)>& find);

[[nodiscard]] std::string rows_csv(const std::vector<nlohmann::ordered_json>& rows);
[[nodiscard]] std::string rows_json(const SweepPlan& plan,
                                    const std::vector<nlohmann::ordered_json>& rows);

}  // namespace trainsim::sweep
