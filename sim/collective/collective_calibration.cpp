#include "collective/collective_calibration.hpp"

#include "core/json_reader.hpp"

namespace trainsim::collective {

const char* algorithm_name(Algorithm a) { return a == Algorithm::ring ? "ring" : "direct"; }

namespace {

LevelCalibration read_level(JsonObject o) {
  LevelCalibration l;
  l.algorithm = o.choice("algorithm", {"ring", "direct"}) == "ring" ? Algorithm::ring
                                                                   : Algorithm::direct;
  l.step_latency = o.non_negative_quantity("step_latency", Dimension::seconds);
  l.bandwidth_efficiency = o.number("bandwidth_efficiency");
  if (l.bandwidth_efficiency <= 0 || l.bandwidth_efficiency > 1)
    o.fail("bandwidth_efficiency", "expected a value in (0, 1]");
  if (o.string("source").empty()) o.fail("source", "expected a non-empty source");
  o.allow("note");
  o.finish();
  return l;
}

}  // namespace

CollectiveCalibration load_collective_calibration(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  if (root.number("schema_version") != 1) root.fail("schema_version", "expected 1");
  CollectiveCalibration c;
  c.file = path;
  c.library = root.string("library");
  root.allow("description");
  c.intra_node = read_level(root.object("intra_node"));
  c.inter_node = read_level(root.object("inter_node"));
  if (root.has("fitted")) {
    for (auto& f : root.object_array("fitted")) {
      std::string line = f.string("parameter") + " fitted to";
      for (const auto& r : f.string_array("rows")) {
        line += " " + r;
        c.fitted_rows.push_back(r);
      }
      line += " (" + f.string("method") + ")";
      f.finish();
      c.fitted.push_back(line);
    }
  } else {
    root.allow("fitted");
  }
  root.finish();
  return c;
}

}  // namespace trainsim::collective
