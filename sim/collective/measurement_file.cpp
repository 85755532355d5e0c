#include "collective/measurement_file.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "collective/bus_bandwidth.hpp"
#include "core/error.hpp"
#include "core/json_reader.hpp"

namespace trainsim::collective {

std::string measurement_key(const std::string& stem, Op op, int nodes, Bytes size) {
  char bytes[32];
  std::snprintf(bytes, sizeof bytes, "%.0f", size);
  return stem + "#" + op_name(op) + "/" + std::to_string(nodes) + "/" + bytes;
}

namespace {

constexpr const char* kSchema = "trainsim.collective_measurements/1";

double positive(JsonObject& o, const std::string& key) {
  const double v = o.number(key);
  if (!(v > 0)) o.fail(key, "expected a positive number");
  return v;
}

MeasurementRow read_row(JsonObject o, const std::string& stem) {
  MeasurementRow r;
  const std::string op = o.string("op");
  const auto parsed = parse_op(op);
  if (!parsed) o.fail("op", "unknown op \"" + op + "\"; expected all_reduce, reduce_scatter, "
                            "all_gather, broadcast, alltoall, send_recv or ring_exchange");
  r.op = *parsed;
  r.nodes = static_cast<int>(o.positive_integer("nodes"));
  r.ranks = static_cast<int>(o.positive_integer("ranks"));
  if (r.ranks % r.nodes != 0) o.fail("ranks", "expected a multiple of nodes");
  r.size = positive(o, "size_bytes");
  if (o.has("time_us")) r.time = positive(o, "time_us") * 1e-6;
  if (o.has("algbw_gbps")) r.algbw_gbps = positive(o, "algbw_gbps");
  r.busbw_gbps = positive(o, "busbw_gbps");
  if (r.algbw_gbps) {
    // 2%, plus the rounding of both to two decimals as nccl-tests prints them.
    const double factor = bus_factor(r.op, r.ranks);
    const double expect = *r.algbw_gbps * factor;
    if (std::abs(expect - r.busbw_gbps) > 0.02 * r.busbw_gbps + 0.005 * (factor + 1))
      o.fail("busbw_gbps", "busbw should be algbw x the nccl-tests factor (" +
                               std::to_string(expect) + ")");
  }
  o.allow("note");
  o.finish();
  r.key = measurement_key(stem, r.op, r.nodes, r.size);
  return r;
}

}  // namespace

MeasurementFile load_measurements(const std::string& path) {
  const auto doc = read_json_file(path);
  JsonObject root = root_object(doc, path);
  if (root.string("schema") != kSchema)
    root.fail("schema", std::string("expected \"") + kSchema + "\"");
  MeasurementFile m;
  m.file = path;
  m.stem = std::filesystem::path(path).stem().string();
  {
    JsonObject p = root.object("provenance");
    m.method = p.choice("method", {"published", "measured"});
    m.source = p.string("source");
    m.date = p.string("date");
    for (const char* k : {"gpu", "driver", "cuda", "nccl"}) p.allow(k);
    p.finish();
  }
  m.topology = root.string_or("topology", "");
  root.allow("description");
  std::set<std::string> seen;
  for (auto& o : root.object_array("rows")) {
    const std::string at = o.path();
    MeasurementRow r = read_row(std::move(o), m.stem);
    if (!seen.insert(r.key).second)
      throw ConfigError(path, at, "duplicate row " + r.key);
    m.rows.push_back(std::move(r));
  }
  if (m.rows.empty()) root.fail("rows", "expected at least one row");
  root.finish();
  return m;
}

}  // namespace trainsim::collective
