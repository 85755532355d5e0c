// The sweep layer without simulating: --set parsing, the cartesian product, applying a path to
// a scenario document (and the error naming a missing path), scaling efficiency across the
// sweep's rows, resuming from a points.jsonl cut short by a kill, and the plot's structure.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "sweep/svg_plot.hpp"
#include "sweep/sweep_settings.hpp"
#include "sweep/sweep_store.hpp"
#include "sweep/sweep_table.hpp"

namespace trainsim::sweep {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

TEST(SweepSettings, ParsesValuesAsJsonOrText) {
  const Axis a = parse_axis("storage.capacity=1.2TiB,2.4TiB");
  EXPECT_EQ(a.path, "storage.capacity");
  ASSERT_EQ(a.values.size(), 2u);
  EXPECT_EQ(a.values[0], json("1.2TiB"));
  const Axis b = parse_axis("training.micro_batch=32,64");
  EXPECT_EQ(b.values[1], json(64));
  EXPECT_TRUE(b.values[1].is_number_integer());
  EXPECT_EQ(b.texts[1], "64");
}

TEST(SweepSettings, RejectsBadSyntax) {
  EXPECT_THROW((void)parse_axis("training.micro_batch"), std::invalid_argument);
  EXPECT_THROW((void)parse_axis("=1,2"), std::invalid_argument);
  EXPECT_THROW((void)parse_axis("a..b=1"), std::invalid_argument);
  EXPECT_THROW((void)parse_axis("a=1,,2"), std::invalid_argument);
}

TEST(SweepSettings, CartesianProductLastAxisFastest) {
  const std::vector<Axis> axes{parse_axis("a=1,2,3"), parse_axis("b=x,y")};
  const auto combos = cartesian_product(axes);
  ASSERT_EQ(combos.size(), 3u * 2);  // 3 values x 2 values
  EXPECT_EQ(combos[0].choice, (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(combos[1].choice, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(combos[5].choice, (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(describe(axes, combos[3]), "a=2, b=y");
}

TEST(SweepSettings, AppliesKeysIndicesAndTheNodesShorthand) {
  json doc = json::parse(R"({"training": {"micro_batch": 8}, "points": [{"nodes": 1}, {"nodes": 2}]})");
  apply_setting(doc, "f.json", "training.micro_batch", 16);
  apply_setting(doc, "f.json", "points.1.nodes", 4);
  EXPECT_EQ(doc["training"]["micro_batch"], 16);
  EXPECT_EQ(doc["points"][1]["nodes"], 4);
  apply_setting(doc, "f.json", "nodes", 8);
  EXPECT_EQ(doc["points"], json::parse(R"([{"nodes": 8}])"));
}

TEST(SweepSettings, MissingPathIsAConfigErrorNamingIt) {
  json doc = json::parse(R"({"training": {"micro_batch": 8}, "points": [{"nodes": 1}]})");
  try {
    apply_setting(doc, "f.json", "training.micro_bach", 16);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "f.json");
    EXPECT_EQ(e.json_path(), "/training/micro_bach");
    EXPECT_NE(std::string(e.what()).find("training.micro_bach"), std::string::npos) << e.what();
  }
  EXPECT_THROW(apply_setting(doc, "f.json", "points.3.nodes", 2), ConfigError);  // one point only
  EXPECT_THROW(apply_setting(doc, "f.json", "nodes", 0), ConfigError);
}

/// A plan with two axes (nodes x capacity) and one point per variant, no scenario loaded.
SweepPlan two_axis_plan() {
  SweepPlan plan;
  plan.scenario_file = "x.json";
  plan.axes = {parse_axis("nodes=1,2"), parse_axis("storage.capacity=1.2TiB,2.4TiB")};
  plan.combinations = cartesian_product(plan.axes);
  plan.variants.resize(plan.combinations.size());
  for (std::size_t c = 0; c < plan.combinations.size(); ++c) {
    plan.variants[c].name = "x";
    scenario::Point point;
    point.label = "p";
    point.nodes = static_cast<int>(1 + plan.combinations[c].choice[0]);
    plan.variants[c].points.push_back(point);
    plan.jobs.push_back({c, 0, describe(plan.axes, plan.combinations[c]) + " | p"});
  }
  return plan;
}

ordered_json record(const std::string& key, const std::string& capacity, int nodes, double per_acc) {
  ordered_json r;
  r["key"] = key;
  r["storage.capacity"] = capacity;
  r["label"] = "p";
  r["nodes"] = nodes;
  r["accelerators"] = 8 * nodes;
  r["samples_per_s"] = per_acc * 8 * nodes;
  r["samples_per_s_per_accelerator"] = per_acc;
  return r;
}

TEST(SweepTable, EfficiencyIsRelativeToTheFewestNodesWithTheSameOtherValues) {
  const SweepPlan plan = two_axis_plan();
  std::map<std::string, ordered_json> recs;
  // Jobs in order: (1 node, 1.2TiB), (1, 2.4TiB), (2, 1.2TiB), (2, 2.4TiB).
  recs[plan.jobs[0].key] = record(plan.jobs[0].key, "1.2TiB", 1, 100);
  recs[plan.jobs[1].key] = record(plan.jobs[1].key, "2.4TiB", 1, 200);
  recs[plan.jobs[2].key] = record(plan.jobs[2].key, "1.2TiB", 2, 50);
  recs[plan.jobs[3].key] = record(plan.jobs[3].key, "2.4TiB", 2, 190);
  const auto rows = result_rows(plan, [&](const std::string& k) -> const ordered_json* {
    auto it = recs.find(k);
    return it == recs.end() ? nullptr : &it->second;
  });
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_DOUBLE_EQ(rows[0].at("scaling_efficiency").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(rows[2].at("scaling_efficiency").get<double>(), 50.0 / 100);   // same 1.2TiB
  EXPECT_DOUBLE_EQ(rows[3].at("scaling_efficiency").get<double>(), 190.0 / 200);  // same 2.4TiB
  EXPECT_FALSE(rows[0].contains("key"));
  const std::string csv = rows_csv(rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "storage.capacity,label,nodes,accelerators,samples_per_s,"
            "samples_per_s_per_accelerator,scaling_efficiency");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 4);

  // The plot: x = nodes (2 ticks), one series per capacity, a marker per row in each panel.
  const std::string svg = sweep_svg(plan, rows);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  std::size_t circles = 0;
  for (auto at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  EXPECT_EQ(circles, 2u * 4);
  EXPECT_NE(svg.find("storage.capacity=2.4TiB"), std::string::npos);

  // Unfinished jobs are left out, and the group keeps its own baseline.
  recs.erase(plan.jobs[0].key);
  const auto partial = result_rows(plan, [&](const std::string& k) -> const ordered_json* {
    auto it = recs.find(k);
    return it == recs.end() ? nullptr : &it->second;
  });
  ASSERT_EQ(partial.size(), 3u);
  EXPECT_DOUBLE_EQ(partial[1].at("scaling_efficiency").get<double>(), 1.0);  // 2 nodes, 1.2TiB alone
}

TEST(SweepStore, ResumesFromALogCutShortAndRefusesAnotherSweep) {
  const std::string dir = testing::TempDir() + "sweep_store_test";
  std::filesystem::remove_all(dir);
  const json manifest = {{"scenario_file", "x.json"}, {"axes", json::array()}};
  {
    SweepStore store(dir, manifest);
    EXPECT_TRUE(store.finished().empty());
    store.append(record("a", "1.2TiB", 1, 1));
    store.append(record("b", "1.2TiB", 2, 1));
  }
  {  // A kill in the middle of writing the third line.
    std::ofstream log(dir + "/points.jsonl", std::ios::app);
    log << R"({"key":"c","storage.capac)";
  }
  {
    SweepStore store(dir, manifest);
    EXPECT_EQ(store.finished().size(), 2u);
    EXPECT_TRUE(store.finished().count("a"));
    store.append(record("c", "1.2TiB", 4, 1));
  }
  SweepStore again(dir, manifest);
  EXPECT_EQ(again.finished().size(), 3u);  // the cut-short line was dropped, c appended cleanly
  json other = manifest;
  other["scenario_file"] = "y.json";
  EXPECT_THROW(SweepStore(dir, other), ConfigError);
}

}  // namespace
}  // namespace trainsim::sweep
