#include "model/device_profile.hpp"

#include "core/error.hpp"
#include "core/json_reader.hpp"

namespace trainsim::model {

namespace {

/// {"value": "...", "source": "..."}: a number and where it comes from.
double sourced(JsonObject& parent, const std::string& key, Dimension d) {
  JsonObject o = parent.object(key);
  const double v = d == Dimension::dimensionless ? o.number("value") : o.non_negative_quantity("value", d);
  if (o.string("source").empty()) o.fail("source", "expected a non-empty source");
  o.allow("note");
  o.finish();
  return v;
}

}  // namespace

DeviceProfile load_device_profile(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  if (root.number("schema_version") != 1) root.fail("schema_version", "expected 1");
  DeviceProfile d;
  d.file = path;
  d.name = root.string("name");
  root.allow("description");
  d.peak_bf16 = sourced(root, "peak_bf16", Dimension::flop_rate);
  d.peak_fp32 = sourced(root, "peak_fp32", Dimension::flop_rate);
  d.memory_bandwidth = sourced(root, "memory_bandwidth", Dimension::bandwidth);
  d.gemm_efficiency = sourced(root, "gemm_efficiency", Dimension::dimensionless);
  d.gemm_tile = sourced(root, "gemm_tile", Dimension::dimensionless);
  d.memory_efficiency = sourced(root, "memory_efficiency", Dimension::dimensionless);
  d.launch_overhead = sourced(root, "launch_overhead", Dimension::seconds);
  if (d.peak_bf16 <= 0) root.fail("peak_bf16", "expected a positive rate");
  if (d.peak_fp32 <= 0) root.fail("peak_fp32", "expected a positive rate");
  if (d.memory_bandwidth <= 0) root.fail("memory_bandwidth", "expected a positive bandwidth");
  if (d.gemm_efficiency <= 0 || d.gemm_efficiency > 1)
    root.fail("gemm_efficiency", "expected a value in (0, 1]");
  if (d.memory_efficiency <= 0 || d.memory_efficiency > 1)
    root.fail("memory_efficiency", "expected a value in (0, 1]");
  if (d.gemm_tile < 0) root.fail("gemm_tile", "expected 0 (off) or a tile edge");
  if (root.has("fitted")) {
    for (auto& f : root.object_array("fitted")) {
      FittedParameter p;
      p.json_path = f.string("parameter");
      p.rows = f.string_array("rows");
      p.method = f.string("method");
      f.finish();
      d.fitted.push_back(p);
    }
  } else {
    root.allow("fitted");
  }
  root.finish();
  return d;
}

}  // namespace trainsim::model
