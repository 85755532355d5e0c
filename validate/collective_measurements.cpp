#include "collective_measurements.hpp"

#include <nlohmann/json.hpp>
#include <ostream>

namespace trainsim::validate {

void write_collective_measurements(std::ostream& out, const CollectiveMeasurements& m) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema"] = "trainsim.collective_measurements/1";
  const auto& p = m.provenance;
  j["provenance"] = {{"method", p.method}, {"source", p.source}, {"date", p.date}, {"gpu", p.gpu},
                     {"driver", p.driver}, {"cuda", p.cuda},     {"nccl", p.nccl}};
  if (!m.topology.empty()) j["topology"] = m.topology;
  j["rows"] = ordered_json::array();
  for (const auto& r : m.rows) {
    const double algbw = algorithm_bandwidth(static_cast<double>(r.size_bytes), r.time);
    ordered_json row;
    row["op"] = collective_name(r.op);
    row["nodes"] = r.nodes;
    row["ranks"] = r.ranks;
    row["size_bytes"] = r.size_bytes;
    row["time_us"] = r.time * 1e6;
    row["algbw_gbps"] = algbw / 1e9;
    row["busbw_gbps"] = algbw * bus_bandwidth_factor(r.op, r.ranks) / 1e9;
    j["rows"].push_back(row);
  }
  out << j.dump(2) << "\n";
}

}  // namespace trainsim::validate
