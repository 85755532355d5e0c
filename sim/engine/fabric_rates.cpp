#include "engine/fabric_rates.hpp"

#include <algorithm>
#include <limits>

#include "topology/topology_graph.hpp"

namespace trainsim::engine {

collective::FabricRates fabric_rates(const topology::Topology& topo) {
  const topology::NodeGraph graph(topo);
  const auto accs = topo.accelerators();
  const std::string gw = topo.gateway();
  collective::FabricRates r;
  r.intra_link = std::numeric_limits<double>::infinity();
  Seconds gateway_latency = 0;
  for (const auto& a : accs) {
    gateway_latency = std::max(gateway_latency, graph.route_latency(a, gw));
    for (const auto& b : accs) {
      if (a == b) continue;
      r.intra_link = std::min(r.intra_link, graph.route_bandwidth(a, b));
      r.intra_hop = std::max(r.intra_hop, graph.route_latency(a, b));
    }
  }
  if (accs.size() < 2) r.intra_link = graph.route_bandwidth(accs.front(), gw);
  r.node_uplink = topo.fabric.uplink_bandwidth;
  // As Platform::route_latency: out through the gateway, across the fabric, in again.
  r.inter_hop = 2 * gateway_latency + topo.fabric.latency;
  return r;
}

}  // namespace trainsim::engine
