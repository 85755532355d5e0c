#include "scenario/scenario.hpp"

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "core/paths.hpp"
#include "core/json_reader.hpp"
#include "scenario/pipeline_reader.hpp"

namespace trainsim::scenario {

namespace {


model::TransformerSpec read_model(JsonObject o) {
  model::TransformerSpec m;
  m.name = o.string("name");
  m.layers = o.positive_integer("layers");
  m.hidden = o.positive_integer("hidden");
  m.heads = o.positive_integer("heads");
  m.ffn_hidden = o.positive_integer_or("ffn_hidden", 4 * m.hidden);
  m.vocab = o.positive_integer("vocab");
  m.seq_len = o.positive_integer("seq_len");
  m.mlm_head = o.boolean_or("mlm_head", false);
  if (m.hidden % m.heads != 0)
    o.fail("heads", "hidden (" + std::to_string(m.hidden) + ") must be divisible by heads (" +
                        std::to_string(m.heads) + ")");
  o.allow("source");
  o.allow("note");
  o.finish();
  return m;
}

double dtype_bytes(JsonObject& o, const std::string& key, const std::string& fallback) {
  const std::string t = o.choice_or(key, {"fp32", "bf16", "fp16"}, fallback);
  return t == "fp32" ? 4.0 : 2.0;
}

program::DataParallelConfig read_training(JsonObject o) {
  program::DataParallelConfig t;
  const std::string sched = o.choice("schedule", {"ddp", "zero1"});
  t.kind = sched == "ddp" ? program::DataParallelKind::ddp : program::DataParallelKind::zero1;
  t.micro_batch = o.positive_integer("micro_batch");
  t.accumulation = o.positive_integer_or("gradient_accumulation", 1);
  t.bucket_elements = o.number("bucket_elements");
  if (t.bucket_elements <= 0) o.fail("bucket_elements", "expected a positive number of elements");
  t.gradient_bytes = dtype_bytes(o, "gradient_dtype", "bf16");
  t.parameter_bytes = dtype_bytes(o, "parameter_dtype", "bf16");
  (void)o.choice_or("precision", {"bf16"}, "bf16");  // only bf16 mixed precision so far
  o.allow("note");
  o.finish();
  return t;
}

}  // namespace

Scenario load_scenario(const std::string& path) {
  return load_scenario_document(read_json_file(path), path);
}

Scenario load_scenario_document(const nlohmann::json& doc, const std::string& path) {
  JsonObject root = root_object(doc, path);
  if (root.number("schema_version") != 1) root.fail("schema_version", "expected 1");
  Scenario s;
  s.file = path;
  s.name = root.string("name");
  s.title = root.string("title");
  root.allow("description");
  s.assumptions = root.has("assumptions") ? root.string_array("assumptions")
                                          : (root.allow("assumptions"), std::vector<std::string>{});
  const std::string topo_file = relative_to(path, root.string("topology"));
  try {
    s.topology = topology::load_topology(topo_file);
  } catch (const ConfigError& e) {
    if (e.file() == topo_file && e.json_path().empty() && !std::filesystem::exists(topo_file))
      root.fail("topology", "topology file not found: " + topo_file);
    throw;
  }
  s.device = model::load_device_profile(s.topology.accelerator.device_file);
  if (s.topology.calibration_file.empty())
    root.fail("topology", "topology " + topo_file + " names no collective_calibration");
  s.collectives = collective::load_collective_calibration(s.topology.calibration_file);
  s.model = read_model(root.object("model"));
  s.training = read_training(root.object("training"));
  if (root.has("data")) s.data = read_pipeline(root.object("data"), path, s.topology);
  else root.allow("data");
  {
    JsonObject ref = root.object("reference");
    s.reference_source = ref.string("source");
    ref.allow("note");
    ref.allow("table");
    ref.finish();
  }

  // Rows named as fitting inputs in the device or collective calibration ("scenario#label").
  std::vector<std::string> fitted_rows;
  for (const auto& f : s.device.fitted)
    fitted_rows.insert(fitted_rows.end(), f.rows.begin(), f.rows.end());
  fitted_rows.insert(fitted_rows.end(), s.collectives.fitted_rows.begin(),
                     s.collectives.fitted_rows.end());
  auto is_fitted = [&](const std::string& label) {
    const std::string key = s.name + "#" + label;
    return std::find(fitted_rows.begin(), fitted_rows.end(), key) != fitted_rows.end();
  };

  const int per_node = static_cast<int>(s.topology.accelerators().size());
  auto points = root.object_array("points");
  if (points.empty()) root.fail("points", "expected at least one point");
  for (auto& po : points) {
    Point p;
    p.nodes = static_cast<int>(po.positive_integer("nodes"));
    p.label = po.string_or("label", std::to_string(p.nodes) + (p.nodes == 1 ? " instance" : " instances"));
    if (po.has("reference_samples_per_s")) {
      const double r = po.number("reference_samples_per_s");
      if (r <= 0) po.fail("reference_samples_per_s", "expected a positive throughput");
      p.reference_samples_per_s = r;
    } else {
      po.allow("reference_samples_per_s");
    }
    const long dp_degree = po.positive_integer_or("data_parallel_degree", p.nodes * per_node);
    if (dp_degree != p.nodes * per_node)
      po.fail("data_parallel_degree",
              "data-parallel degree " + std::to_string(dp_degree) + " does not match the " +
                  std::to_string(p.nodes * per_node) + " accelerators of " +
                  std::to_string(p.nodes) + " x " + s.topology.name +
                  " (pure data parallelism uses every accelerator)");
    if (po.has("storage_capacity")) {
      if (!s.data || s.data->source != pipeline::SourceKind::fsx)
        po.fail("storage_capacity", "only a scenario whose data comes from FSx has a storage capacity");
      p.storage_capacity = po.quantity("storage_capacity", Dimension::bytes);
      check_fsx_capacity(*s.data, *p.storage_capacity, po, "storage_capacity");
    } else {
      po.allow("storage_capacity");
    }
    po.allow("note");
    po.finish();
    p.fitted = is_fitted(p.label);
    s.points.push_back(p);
  }
  root.finish();
  return s;
}

program::DataParallelConfig training_for(const Scenario& s, const Point& p) {
  program::DataParallelConfig t = s.training;
  t.ranks_per_node = static_cast<int>(s.topology.accelerators().size());
  t.world = p.nodes * t.ranks_per_node;
  return t;
}

}  // namespace trainsim::scenario
