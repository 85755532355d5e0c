#pragma once
// Topology -> SimGrid platform. The fabric is a star zone; each node is a full zone holding its
// accelerators (hosts), its CPU (a host: the end of host-memory copies), its switches/NICs
// (routers) and its links, with routes computed on
// the node's Boost.Graph. Links are created with zero latency: latency is added analytically per
// algorithm step (SIMGRID-NOTES.md: CM02 weights sharing by RTT otherwise), so bandwidth sharing
// is plain max-min.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>

#include "topology/topology.hpp"

namespace trainsim::engine {

struct Platform {
  int nodes = 0;
  int ranks_per_node = 0;
  std::vector<simgrid::s4u::Host*> rank_host;  ///< global rank -> its accelerator's host
  /// node -> the host of its CPU vertex (the first of kind cpu), where host-memory copies end;
  /// empty when the topology has no CPU vertex.
  std::vector<simgrid::s4u::Host*> cpu_host;
  std::vector<Seconds> cpu_latency;  ///< local rank -> one-way latency of its route to the CPU
  /// One-way latency of the route between two local accelerators of a node, and from each
  /// local accelerator to the node's gateway.
  std::vector<std::vector<Seconds>> intra_latency;
  std::vector<Seconds> gateway_latency;
  Seconds fabric_latency = 0;
  /// Host speed in FLOP/s; a compute task of d seconds is an Exec of d * host_speed.
  double host_speed = 1e9;
  /// HBM sharing (build_platform's `hbm_link_bandwidth` > 0): per global rank, the accelerator's
  /// device-memory link, which every route to or from the accelerator crosses, so its load is
  /// what the transfers touching the accelerator move through its HBM. Empty without.
  std::vector<simgrid::s4u::Link*> hbm_link;

  /// Hosts that send and receive a rank's inter-node flows through another NIC of its node than
  /// its own (collective::Flow::src_nic): (local rank, NIC index) -> one host per node, routed
  /// from the accelerator over PCIe to that NIC (build_platform's `via_nics`).
  std::map<std::pair<int, int>, std::vector<simgrid::s4u::Host*>> via_nic_host;
  /// (local rank, NIC index) -> one-way latency from the accelerator through that NIC to the
  /// node's gateway, for the pairs in via_nic_host.
  std::map<std::pair<int, int>, Seconds> via_nic_latency;
  /// local rank -> the NIC (index among the topology's NIC vertices) on its own route to the
  /// gateway; -1 where that route crosses none.
  std::vector<int> own_nic;

  [[nodiscard]] Seconds route_latency(int src_rank, int dst_rank) const;
  /// route_latency of a flow leaving through `src_nic` and entering through `dst_nic` (-1: the
  /// rank's own route).
  [[nodiscard]] Seconds route_latency(int src_rank, int dst_rank, int src_nic, int dst_nic) const;
  /// The host a flow of `rank` through `nic` starts or ends at: the rank's own host (nic -1 or
  /// its own NIC), or its via_nic_host (InvariantError when the platform was not built with it).
  [[nodiscard]] simgrid::s4u::Host* endpoint(int rank, int nic) const;
  [[nodiscard]] bool has_cpu() const { return !cpu_host.empty(); }
};

/// Sets the exact-timing network model options. Call after the Engine exists and before any zone.
void configure_exact_timing(simgrid::s4u::Engine& e);

/// The process's SimGrid Engine (SimGrid allows one per process), with SimGrid's own logging
/// quietened to critical messages and the exact-timing options set. `program_name` is its argv[0].
[[nodiscard]] std::unique_ptr<simgrid::s4u::Engine> make_exact_timing_engine(const std::string& program_name = "trainsim");

/// ConfigError unless every accelerator's HBM link (`hbm_link_bandwidth`, link units per second)
/// carries at least what its other links can carry in and out at once.
void check_hbm_link(const topology::Topology& topo, BytesPerSecond hbm_link_bandwidth);

/// Builds `nodes` copies of the topology's node under one fabric star zone. With
/// `hbm_link_bandwidth` > 0 (in units of link traffic per second, model/nccl_memory_traffic.hpp)
/// each accelerator gets a shared device-memory link that every route to or from it crosses
/// (Platform::hbm_link); ConfigError if it is below what the accelerator's other links can carry
/// in and out at once, where it would slow a collective alone.
/// `via_nics` (NIC indices among the topology's NIC vertices, file order): for every accelerator
/// whose own route to the gateway does not cross that NIC, a host routed from the accelerator to
/// the NIC through switches and CPUs only (NodeGraph::route_through_switches) and on to
/// the gateway; ConfigError naming the topology when the NIC does not exist or no such path does.
[[nodiscard]] Platform build_platform(const topology::Topology& topo, int nodes, BytesPerSecond hbm_link_bandwidth = 0,
                                      const std::vector<int>& via_nics = {});

}  // namespace trainsim::engine
