#pragma once
// A few points of a shipped scenario run by the CLI as a user would (`trainsim run --format json
// --no-wall-time`), for trend tests that check what a setting changes on a scenario's own points.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"

namespace trainsim::testing_support {

/// The points of scenarios/<name>.json with these labels, by label, each required to simulate;
/// the scenario's topology is resolved against the repository (it runs from a temporary file).
inline std::map<std::string, nlohmann::json> run_scenario_points(const std::string& name,
                                                                 const std::vector<std::string>& labels) {
  using nlohmann::json;
  namespace fs = std::filesystem;
  json doc = json::parse(read_text_file("scenarios/" + name + ".json"));
  doc["topology"] = (fs::current_path() / "scenarios" / doc.at("topology").get<std::string>()).lexically_normal().string();
  json kept = json::array();
  for (const auto& label : labels) {
    const auto& points = doc.at("points");
    const auto it = std::find_if(points.begin(), points.end(), [&](const json& p) { return p.at("label") == label; });
    EXPECT_NE(it, points.end()) << name << " has no point \"" << label << "\"";
    if (it != points.end()) kept.push_back(*it);
  }
  doc["points"] = kept;
  const std::string file = test_temp_path(".json");
  std::ofstream(file) << doc.dump(2);
  const auto r = run_shell(trainsim_bin() + " run '" + file + "' --format json --no-wall-time");
  EXPECT_EQ(r.status, 0) << name << ": " << r.err;
  std::map<std::string, json> by_label;
  if (r.status != 0) return by_label;
  const json out = json::parse(r.out);  // kept: a range-for over a temporary's member would dangle
  for (const auto& p : out.at("points")) {
    EXPECT_EQ(p.at("status"), "simulated") << name << " " << p.at("label");
    by_label[p.at("label").get<std::string>()] = p;
  }
  return by_label;
}

}  // namespace trainsim::testing_support
