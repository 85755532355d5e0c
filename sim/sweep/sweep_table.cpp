#include "sweep/sweep_table.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace trainsim::sweep {

namespace {

/// The values of every axis except `nodes`: points sharing it form one scaling curve.
std::string group_of(const SweepPlan& plan, const Job& job) {
  std::string g;
  for (std::size_t a = 0; a < plan.axes.size(); ++a)
    if (plan.axes[a].path != kNodesPath)
      g += plan.axes[a].texts[plan.combinations[job.combination].choice[a]] + "\x1f";
  return g;
}

std::string csv_field(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return '"' + v.get<std::string>() + '"';
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    return buf;
  }
  return v.dump();
}

}  // namespace

std::vector<nlohmann::ordered_json> result_rows(
    const SweepPlan& plan,
    const std::function<const nlohmann::ordered_json*(const std::string&)>& find) {
  std::map<std::string, const nlohmann::ordered_json*> baseline;  // group -> fewest-node record
  std::vector<std::pair<const Job*, const nlohmann::ordered_json*>> done;
  for (const auto& job : plan.jobs) {
    const auto* rec = find(job.key);
    if (rec == nullptr) continue;
    done.emplace_back(&job, rec);
    auto& base = baseline[group_of(plan, job)];
    if (base == nullptr || rec->at("nodes").get<int>() < base->at("nodes").get<int>()) base = rec;
  }
  std::vector<nlohmann::ordered_json> rows;
  for (const auto& [job, rec] : done) {
    nlohmann::ordered_json row;
    const double base = baseline[group_of(plan, *job)]->at("samples_per_s_per_accelerator").get<double>();
    for (auto it = rec->begin(); it != rec->end(); ++it) {
      if (it.key() == "key") continue;
      row[it.key()] = it.value();
      if (it.key() == "samples_per_s_per_accelerator")
        row["scaling_efficiency"] = base > 0 ? it.value().get<double>() / base : 0.0;
    }
    rows.push_back(row);
  }
  return rows;
}

std::string rows_csv(const std::vector<nlohmann::ordered_json>& rows) {
  std::vector<std::string> columns;
  for (const auto& r : rows)
    for (auto it = r.begin(); it != r.end(); ++it)
      if (std::find(columns.begin(), columns.end(), it.key()) == columns.end())
        columns.push_back(it.key());
  std::ostringstream out;
  for (std::size_t c = 0; c < columns.size(); ++c) out << (c ? "," : "") << columns[c];
  out << "\n";
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c)
      out << (c ? "," : "") << (r.contains(columns[c]) ? csv_field(r.at(columns[c])) : "");
    out << "\n";
  }
  return out.str();
}

std::string rows_json(const SweepPlan& plan, const std::vector<nlohmann::ordered_json>& rows) {
  nlohmann::ordered_json doc;
  doc["scenario"] = plan.variants.front().name;
  doc["scenario_file"] = plan.scenario_file;
  nlohmann::ordered_json axes = nlohmann::ordered_json::array();
  for (const auto& a : plan.axes) axes.push_back({{"path", a.path}, {"values", a.texts}});
  doc["axes"] = axes;
  doc["points_total"] = plan.jobs.size();
  doc["points"] = rows;
  return doc.dump(2) + "\n";
}

}  // namespace trainsim::sweep
