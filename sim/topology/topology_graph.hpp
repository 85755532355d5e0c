#pragma once
// The node template as a Boost.Graph: connectivity checks and routes between vertices.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace trainsim::topology {

/// One hop of a route: the link crossed and whether it is crossed from a to b (forward) or b to a.
struct Hop {
  std::size_t link_index;  ///< index into Topology::links
  bool forward;            ///< true when crossing from link.a to link.b
};

/// Graph view of a node template. Routes are shortest paths by hop count, ties broken by the
/// smallest total latency, then deterministically by link order in the file.
class NodeGraph {
public:
  explicit NodeGraph(const Topology& topo);

  [[nodiscard]] bool connected() const;
  /// Vertex ids that cannot be reached from the first vertex (empty when connected).
  [[nodiscard]] std::vector<std::string> unreachable_from_first() const;
  /// The links from `from` to `to` (empty when from == to). Throws InvariantError if unknown.
  [[nodiscard]] std::vector<Hop> route(const std::string& from, const std::string& to) const;
  /// The shortest route from `from` to `to` (same ordering as route) whose inner vertices are all
  /// switches or CPUs: how a GPU reaches another NIC of its node over PCIe, neither relayed by a
  /// peer GPU (NCCL's later PXN) nor looping through the gateway and another NIC. Empty when
  /// none exists or from == to.
  [[nodiscard]] std::vector<Hop> route_through_switches(const std::string& from,
                                                             const std::string& to) const;
  /// Sum of link latencies along route(from, to).
  [[nodiscard]] Seconds route_latency(const std::string& from, const std::string& to) const;
  /// Smallest bandwidth along route(from, to).
  [[nodiscard]] BytesPerSecond route_bandwidth(const std::string& from, const std::string& to) const;

private:
  // Routes for every ordered pair are computed once at construction (node templates have tens of
  // vertices), so Boost.Graph stays out of this header and route() is a lookup.
  const Topology& topo_;
  std::map<std::string, std::size_t> index_;           // vertex id -> position in topo_.vertices
  std::vector<int> component_;                         // connected component of each vertex
  std::vector<std::vector<std::vector<Hop>>> routes_;  // [from][to]
  [[nodiscard]] std::size_t index_of(const std::string& id) const;
};

}  // namespace trainsim::topology
