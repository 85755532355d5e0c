#pragma once
// A sweep laid out before anything runs: every combination of the --set values is applied to
// the scenario document and loaded (so a bad value fails with exit 2 before any simulation),
// and every point of every variant becomes one job with a stable key, the unit of resumption.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scenario/point_runner.hpp"
#include "scenario/scenario.hpp"
#include "sweep/sweep_settings.hpp"

namespace trainsim::sweep {

struct Job {
  std::size_t combination = 0;  ///< index into SweepPlan::combinations
  std::size_t point = 0;        ///< index into the variant's points
  std::string key;              ///< "path=value, ... | point label", unique within the sweep
};

struct SweepPlan {
  std::string scenario_file;
  nlohmann::json document;  ///< the scenario file as read, before any --set
  std::vector<Axis> axes;
  std::vector<Combination> combinations;
  std::vector<scenario::Scenario> variants;  ///< one per combination
  std::vector<Job> jobs;

  [[nodiscard]] const scenario::Point& point_of(const Job& j) const {
    return variants[j.combination].points[j.point];
  }
};

/// Reads the scenario, applies each combination and loads it. ConfigError on a bad path or value.
[[nodiscard]] SweepPlan plan_sweep(const std::string& scenario_file, std::vector<Axis> axes);

/// The flat record of one finished job, as stored in points.jsonl and written to the outputs:
/// key, one field per axis (the value as written; the `nodes` axis is the nodes field), label, nodes, accelerators, samples_per_s,
/// samples_per_s_per_accelerator, step_time_s, completed, sim_wall_s.
[[nodiscard]] nlohmann::ordered_json job_record(const SweepPlan& plan, const Job& job,
                                                const scenario::PointResult& r);

/// An axis's value in a record, as written on the command line.
[[nodiscard]] std::string axis_text(const nlohmann::ordered_json& record, const Axis& axis);

/// What identifies a sweep in its output folder: the scenario as read and the axes.
[[nodiscard]] nlohmann::json manifest_of(const SweepPlan& plan);

}  // namespace trainsim::sweep
