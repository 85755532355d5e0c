#pragma once
// The cluster description as plain data: one node template (its accelerators, switches, CPU,
// NICs and the links between them) replicated `nodes` times, and the inter-node fabric that the
// nodes' gateways attach to. Loaded from topologies/*.json (schema_version 1) by
// load_topology(); routes are computed on a Boost.Graph in topology_graph.hpp.
#include <optional>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "topology/host_resources.hpp"

namespace trainsim::topology {

enum class VertexKind { accelerator, switch_, cpu, nic, gateway };

struct Vertex {
  std::string id;   ///< unique within the node, e.g. "hpu3"
  VertexKind kind;  ///< exactly one vertex of kind gateway per node: where NICs meet the fabric
};

enum class Sharing {
  split_duplex,  ///< each direction has the full bandwidth (NVLink ports, PCIe, NIC ports)
  shared,        ///< both directions share one capacity
};

/// An undirected physical link between two vertices of the node.
struct Link {
  std::string id;            ///< unique within the node, generated "a--b" when not given
  std::string a;             ///< vertex id
  std::string b;             ///< vertex id
  BytesPerSecond bandwidth;  ///< per direction for split_duplex, > 0
  Seconds latency;           ///< one-way, >= 0
  Sharing sharing;
  std::string source;  ///< where the number comes from (datasheet, paper, measurement)
};

/// The fabric between nodes: each node's gateway has one uplink to a non-blocking core.
struct Fabric {
  std::string kind;                 ///< "non_blocking_star" (the only kind in schema 1)
  BytesPerSecond uplink_bandwidth;  ///< per node, per direction
  Seconds latency;                  ///< switch traversal, one way, added to every inter-node hop
  std::string source;
};

/// The device profile a node's accelerators use (file path resolved relative to the topology).
struct AcceleratorRef {
  std::string device_file;  ///< absolute or relative-to-cwd path of the device profile JSON
  Bytes memory;             ///< per accelerator, e.g. 32 GB
  std::string source;
};

struct Topology {
  int schema_version = 1;
  std::string name;         ///< e.g. "dl1.24xlarge"
  std::string file;         ///< the file it was loaded from (for error messages)
  std::string description;  ///< free text
  AcceleratorRef accelerator;
  std::vector<Vertex> vertices;  ///< the node template
  std::vector<Link> links;       ///< the node template
  Fabric fabric;
  std::optional<HostResources> host;  ///< vCPUs, RAM, local NVMe; needed by a data pipeline
  std::string calibration_file;  ///< collective calibration (absolute or relative to cwd), may be ""

  /// Accelerator vertex ids in file order: local rank i runs on accelerators()[i].
  [[nodiscard]] std::vector<std::string> accelerators() const;
  [[nodiscard]] const Vertex* find_vertex(const std::string& id) const;
  [[nodiscard]] std::string gateway() const;
};

/// Loads and validates a topology file. Throws ConfigError (file + JSON path) on: malformed JSON,
/// unknown keys, missing keys, bad units, zero/negative bandwidth, negative latency, a link naming
/// an unknown vertex, duplicate ids, not exactly one gateway, no accelerator, a node graph that
/// is not connected. Relative file references inside it are resolved against its directory.
[[nodiscard]] Topology load_topology(const std::string& path);

[[nodiscard]] const char* vertex_kind_name(VertexKind k);

}  // namespace trainsim::topology
