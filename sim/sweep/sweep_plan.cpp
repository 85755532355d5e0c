#include "sweep/sweep_plan.hpp"

#include "core/json_reader.hpp"

namespace trainsim::sweep {

SweepPlan plan_sweep(const std::string& scenario_file, std::vector<Axis> axes) {
  SweepPlan plan;
  plan.scenario_file = scenario_file;
  plan.document = read_json_file(scenario_file);
  plan.axes = std::move(axes);
  plan.combinations = cartesian_product(plan.axes);
  for (std::size_t c = 0; c < plan.combinations.size(); ++c) {
    nlohmann::json doc = plan.document;
    for (std::size_t a = 0; a < plan.axes.size(); ++a)
      apply_setting(doc, scenario_file, plan.axes[a].path,
                    plan.axes[a].values[plan.combinations[c].choice[a]]);
    plan.variants.push_back(scenario::load_scenario_document(doc, scenario_file));
    const std::string prefix = describe(plan.axes, plan.combinations[c]);
    const auto& points = plan.variants.back().points;
    for (std::size_t p = 0; p < points.size(); ++p)
      plan.jobs.push_back({c, p, prefix + " | " + points[p].label});
  }
  return plan;
}

nlohmann::ordered_json job_record(const SweepPlan& plan, const Job& job,
                                  const scenario::PointResult& r) {
  nlohmann::ordered_json rec;
  rec["key"] = job.key;
  for (std::size_t a = 0; a < plan.axes.size(); ++a)
    if (plan.axes[a].path != kNodesPath)  // the nodes column below says it
      rec[plan.axes[a].path] = plan.axes[a].texts[plan.combinations[job.combination].choice[a]];
  rec["label"] = r.point.label;
  rec["nodes"] = r.point.nodes;
  rec["accelerators"] = r.accelerators;
  rec["samples_per_s"] = r.samples_per_s;
  rec["samples_per_s_per_accelerator"] = r.accelerators > 0 ? r.samples_per_s / r.accelerators : 0;
  rec["step_time_s"] = r.step_time;
  rec["completed"] = r.completed;
  if (r.pipeline) {
    rec["first_epoch_samples_per_s"] = r.pipeline->epochs.front().samples_per_s;
    rec["later_epoch_samples_per_s"] = r.pipeline->epochs.back().samples_per_s;
    rec["later_epoch_io_wait"] = r.pipeline->epochs.back().io_wait_fraction;
    std::string diag;
    for (const auto& d : r.pipeline->diagnoses)
      diag += (diag.empty() ? "" : " ") + d.rule + "@" + std::to_string(d.epoch);
    rec["diagnoses"] = diag;
  }
  rec["sim_wall_s"] = r.sim_wall_s;
  return rec;
}

std::string axis_text(const nlohmann::ordered_json& record, const Axis& axis) {
  if (axis.path == kNodesPath) return std::to_string(record.at("nodes").get<int>());
  return record.at(axis.path).get<std::string>();
}

nlohmann::json manifest_of(const SweepPlan& plan) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : plan.axes) axes.push_back({{"path", a.path}, {"values", a.texts}});
  return {{"scenario_file", plan.scenario_file}, {"scenario", plan.document}, {"axes", axes}};
}

}  // namespace trainsim::sweep
