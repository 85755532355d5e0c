#include "storage/fsx_spec.hpp"

#include <cmath>

#include "core/json_reader.hpp"

namespace trainsim::storage {

namespace {

constexpr double kTiB = 1024.0 * 1024 * 1024 * 1024;

FsxDeployment read_deployment(JsonObject o) {
  FsxDeployment d;
  d.type = o.choice("type", {"SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"});
  d.tier = static_cast<int>(o.positive_integer("tier"));
  d.network_baseline_per_tib = o.quantity("network_baseline_per_tib", Dimension::bandwidth);
  d.network_burst_per_tib =
      o.quantity_or("network_burst_per_tib", Dimension::bandwidth, d.network_baseline_per_tib);
  d.cache_per_tib = o.quantity("cache_per_tib", Dimension::bytes);
  d.disk_read_per_tib = o.quantity("disk_read_per_tib", Dimension::bandwidth);
  d.disk_burst_per_tib = o.quantity_or("disk_burst_per_tib", Dimension::bandwidth, d.disk_read_per_tib);
  const auto caps = o.string_array("capacities");
  for (std::size_t i = 0; i < caps.size(); ++i) {
    const auto c = parse_quantity(caps[i], Dimension::bytes);
    if (!c || *c <= 0) o.fail("capacities", "expected sizes such as \"1.2TiB\", got \"" + caps[i] + "\"");
    d.capacities.push_back(*c);
  }
  d.increment = o.quantity("increment", Dimension::bytes);
  d.source = o.string("source");
  o.finish();
  return d;
}

}  // namespace

FsxSpec load_fsx_spec(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  root.require_schema_version(1);
  FsxSpec s;
  s.file = path;
  root.allow("name");
  root.allow("source");
  s.large_file_threshold = root.quantity("large_file_threshold", Dimension::bytes);
  s.large_file_stripes = static_cast<int>(root.positive_integer("large_file_stripes"));
  root.allow("striping_source");
  s.capacity_per_server = root.quantity("capacity_per_server", Dimension::bytes);
  root.allow("capacity_per_server_source");
  s.burst_bucket_duration = root.non_negative_quantity("burst_bucket_duration", Dimension::seconds);
  root.allow("burst_bucket_source");
  for (auto& d : root.object_array("deployments")) s.deployments.push_back(read_deployment(d));
  root.finish();
  return s;
}

const FsxDeployment* find_deployment(const FsxSpec& spec, const std::string& type, int tier) {
  for (const auto& d : spec.deployments)
    if (d.type == type && d.tier == tier) return &d;
  return nullptr;
}

bool allowed_capacity(const FsxDeployment& d, Bytes capacity) {
  auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-3 * b; };
  for (Bytes c : d.capacities)
    if (near(capacity, c)) return true;
  const double steps = capacity / d.increment;
  return steps >= 1 && near(capacity, std::round(steps) * d.increment);
}

FsxFileSystem size_file_system(const FsxSpec& spec, const FsxDeployment& d, Bytes capacity) {
  FsxFileSystem fs;
  fs.deployment = d.type + "/" + std::to_string(d.tier);
  fs.capacity = capacity;
  const double tib = capacity / kTiB;
  fs.servers = std::max(1, static_cast<int>(std::ceil(capacity / spec.capacity_per_server - 1e-9)));
  fs.network_baseline = tib * d.network_baseline_per_tib;
  fs.network_burst = tib * d.network_burst_per_tib;
  fs.disk_baseline = tib * d.disk_read_per_tib;
  fs.disk_burst = tib * d.disk_burst_per_tib;
  fs.cache = tib * d.cache_per_tib;
  fs.burst_bucket = (fs.network_burst - fs.network_baseline) * spec.burst_bucket_duration;
  fs.large_file_threshold = spec.large_file_threshold;
  fs.large_file_stripes = spec.large_file_stripes;
  return fs;
}

}  // namespace trainsim::storage
