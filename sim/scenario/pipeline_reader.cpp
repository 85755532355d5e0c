#include "scenario/pipeline_reader.hpp"

#include <filesystem>

#include "core/error.hpp"

namespace trainsim::scenario {

namespace {

pipeline::DataSet read_dataset(JsonObject o) {
  pipeline::DataSet d;
  d.size = o.quantity("size", Dimension::bytes);
  d.bytes_per_sample = o.quantity("bytes_per_sample", Dimension::bytes);
  d.file_size = o.quantity_or("file_size", Dimension::bytes, d.bytes_per_sample);
  if (d.file_size < d.bytes_per_sample) o.fail("file_size", "a file holds at least one sample");
  if (o.has("samples")) {
    const double n = static_cast<double>(o.positive_integer("samples"));
    if (std::abs(n - static_cast<double>(d.samples())) > 0.01 * n)
      o.fail("samples", "size / bytes_per_sample gives " + std::to_string(d.samples()) + " samples");
  } else {
    o.allow("samples");
  }
  o.allow("source");
  o.allow("note");
  o.finish();
  return d;
}

pipeline::LoaderConfig read_loader(JsonObject o) {
  pipeline::LoaderConfig l;
  l.workers_per_rank = static_cast<int>(o.positive_integer("workers_per_rank"));
  l.preprocess_per_sample = o.non_negative_quantity("preprocess_per_sample", Dimension::seconds);
  l.prefetch_factor = static_cast<int>(o.positive_integer_or("prefetch_factor", 2));
  l.page_cache_fraction = o.number_or("page_cache_fraction", 0.5);
  if (l.page_cache_fraction < 0 || l.page_cache_fraction > 1)
    o.fail("page_cache_fraction", "expected a fraction of RAM between 0 and 1");
  l.collective_cpu_cores = o.number_or("collective_cpu_cores", 0);
  if (l.collective_cpu_cores < 0) o.fail("collective_cpu_cores", "expected >= 0");
  o.allow("source");
  o.allow("note");
  o.finish();
  return l;
}

/// A share of an epoch (0 < x < 1) for a diagnosis threshold; the default when absent.
double fraction_or(JsonObject& o, const std::string& key, double fallback) {
  const double v = o.number_or(key, fallback);
  if (!(v > 0 && v < 1)) o.fail(key, "expected a fraction between 0 and 1 (exclusive), got " + std::to_string(v));
  return v;
}

pipeline::DiagnosisThresholds read_diagnosis(JsonObject o) {
  const pipeline::DiagnosisThresholds defaults;
  pipeline::DiagnosisThresholds t;
  t.wait = fraction_or(o, "wait", defaults.wait);
  t.accelerator_utilisation = fraction_or(o, "accelerator_utilisation", defaults.accelerator_utilisation);
  t.node_spread = fraction_or(o, "node_spread", defaults.node_spread);
  t.cpu_utilisation = fraction_or(o, "cpu_utilisation", defaults.cpu_utilisation);
  o.allow("source");
  o.allow("note");
  o.finish();
  return t;
}

}  // namespace

void check_fsx_capacity(const pipeline::PipelineConfig& c, Bytes capacity, const JsonObject& o,
                        const std::string& key) {
  if (!storage::allowed_capacity(c.fsx_deployment, capacity))
    o.fail(key, c.fsx_deployment.type + " capacities are 1.2 TiB, 2.4 TiB, then multiples of " +
                    format_bytes(c.fsx_deployment.increment) + " (VALIDATION.md 7.2), not " +
                    format_bytes(capacity));
}

void check_local_nvme(const pipeline::PipelineConfig& c, const topology::Topology& topo,
                      const JsonObject& o, const std::string& key) {
  if (!topo.host || topo.host->local_nvme_read <= 0)
    o.fail(key, topo.name + " has no local NVMe (" + topo.file + " \"host\".\"local_nvme\")");
  // Every node keeps a full copy: a shuffling sampler may hand any file to any node.
  if (c.data.size > topo.host->local_nvme_capacity)
    o.fail(key, "the data set (" + format_bytes(c.data.size) + ") does not fit on the local NVMe (" +
                    format_bytes(topo.host->local_nvme_capacity) + ")");
}

PointReaders point_readers(const pipeline::PipelineConfig& c, const plan::TrainingPlan& t,
                          const plan::Layout& layout) {
  PointReaders r;
  r.from_framework = !c.readers;
  r.rule = c.readers.value_or(pipeline::default_data_readers(t));
  const pipeline::ParallelDegrees d{t.tp, layout.cp, layout.dp, t.pp};
  r.nodes = pipeline::node_readers(r.rule, d, layout.ranks_per_node);
  r.sequences = pipeline::read_sequences(r.nodes);
  return r;
}

pipeline::PipelineConfig read_pipeline(JsonObject o, const std::string& file,
                                       const topology::Topology& topo) {
  pipeline::PipelineConfig c;
  if (!topo.host)
    o.fail("", "the data pipeline needs the topology's \"host\" section (vCPUs, RAM), which " +
                   topo.file + " lacks");
  c.data = read_dataset(o.object("dataset"));
  c.loader = read_loader(o.object("loader"));
  if (o.has("readers"))
    c.readers = pipeline::data_readers_named(
        o.choice("readers", {"every_rank", "tp_rank0", "tp_rank0_first_last_stage"}));
  else
    o.allow("readers");
  c.epochs = static_cast<int>(o.positive_integer_or("epochs", 2));
  c.shuffle_seed = static_cast<std::uint64_t>(o.positive_integer_or("shuffle_seed", 1));
  if (o.has("diagnosis")) c.diagnosis = read_diagnosis(o.object("diagnosis"));
  else o.allow("diagnosis");
  JsonObject st = o.object("storage");
  const std::string kind = st.choice("kind", {"fsx_lustre", "local_nvme"});
  if (kind == "local_nvme") {
    c.source = pipeline::SourceKind::local_nvme;
    check_local_nvme(c, topo, st, "kind");
  } else {
    const std::filesystem::path spec(st.string("spec"));
    c.fsx_spec = storage::load_fsx_spec(
        spec.is_absolute() ? spec.string()
                           : (std::filesystem::path(file).parent_path() / spec).lexically_normal().string());
    const std::string type = st.choice("deployment", {"SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"});
    const int tier = static_cast<int>(st.positive_integer("tier"));
    const auto* d = storage::find_deployment(c.fsx_spec, type, tier);
    if (d == nullptr) st.fail("tier", "no " + type + " tier " + std::to_string(tier) + " in " + c.fsx_spec.file);
    c.fsx_deployment = *d;
    c.fsx_capacity = st.quantity("capacity", Dimension::bytes);
    check_fsx_capacity(c, c.fsx_capacity, st, "capacity");
  }
  st.allow("note");
  st.finish();
  o.allow("note");
  o.finish();
  return c;
}

}  // namespace trainsim::scenario
