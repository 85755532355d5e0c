#pragma once
// How a collective library behaves on a cluster's fabrics. Loaded from the topology's collective
// calibration file (topologies/calibration/*.json), each number sourced.
//
// Two shapes exist:
// - schema_version 1 (HCCL on DL1): one fixed algorithm per level, composed hierarchically
//   (intra-node reduce-scatter, inter-node collective, intra-node all-gather).
// - schema_version 2 (NCCL): the file names a protocol table (LL / LL128 / Simple) and one fabric
//   file per level (NVSwitch, EFA, InfiniBand); the tuner (nccl_tuner.hpp) picks an algorithm and
//   a protocol per call, as NCCL does.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace trainsim::collective {

struct TunerRegions;   // tuner_regions.hpp
struct NcclCostModel;  // nccl_cost_model.hpp

/// direct belongs to schema 1; the rest are NCCL's (tree = double binary tree across nodes with
/// a chain inside each node; nvls = NVSwitch-local reduction, NVLink SHARP; nvls_tree = NVLS
/// inside each node and the double binary tree across nodes; pairwise = all-to-all and
/// point-to-point exchanges).
enum class Algorithm { ring, direct, tree, nvls, nvls_tree, pairwise };
[[nodiscard]] const char* algorithm_name(Algorithm a);

enum class Protocol { ll, ll128, simple };
constexpr std::array<Protocol, 3> kProtocols{Protocol::ll, Protocol::ll128, Protocol::simple};
[[nodiscard]] const char* protocol_name(Protocol p);  ///< "LL", "LL128", "Simple"
/// The inverses of algorithm_name (NCCL's algorithms: ring, tree, nvls, nvls_tree, pairwise)
/// and protocol_name; nullopt when unknown.
[[nodiscard]] std::optional<Algorithm> parse_algorithm(const std::string& name);
[[nodiscard]] std::optional<Protocol> parse_protocol(const std::string& name);

/// Schema 1: one fabric level.
struct LevelCalibration {
  Algorithm algorithm = Algorithm::ring;
  Seconds step_latency = 0;          ///< per algorithm step
  double bandwidth_efficiency = 1;   ///< achieved / link bandwidth, in (0, 1]
};

/// Schema 2: what a protocol costs wherever it runs (NCCL's kernels).
struct ProtocolParams {
  double bandwidth_fraction = 1;  ///< payload / bytes on the wire (LL 4 of 8, LL128 120 of 128)
  Seconds base_latency = 0;       ///< per call (NCCL baseLat)
  Bytes chunk = 0;                ///< pipeline chunk; 0 = the fabric's simple_chunk
};

/// Schema 2: how NCCL performs on one fabric level (e.g. HGX H100 NVSwitch, p5 EFA).
struct FabricLevel {
  std::string name;
  std::string file;
  std::vector<Algorithm> algorithms;  ///< those the tuner may use on this level
  std::vector<Protocol> protocols;    ///< those NCCL enables on this level (default: all three)
  /// Achieved fraction of the link bandwidth per algorithm, in (0, 1]; 0 = not usable.
  double ring_efficiency = 0;
  double tree_efficiency = 0;
  double nvls_efficiency = 0;
  std::array<Seconds, 3> step_latency{};  ///< per ring/tree step, by Protocol (NCCL hwLat)
  Seconds nvls_latency = 0;               ///< per NVLS call, on top of the protocol's base latency
  Bytes simple_chunk = 0;                 ///< Simple's pipeline chunk on this level (ring)
  Bytes tree_chunk = 0;                   ///< the same for tree algorithms (default: simple_chunk)
  Bytes ll128_chunk = 0;                  ///< LL128's pipeline chunk here (default: simple_chunk)
  /// Achieved fraction of LL128's wire rate on this level, on top of the algorithm's efficiency
  /// and LL128's 120/128 (1 where the file gives none).
  double ll128_efficiency = 1;
  /// Most payload one NCCL channel moves per second across this level, whatever the links
  /// offer (a software limit: e.g. a transport staging through host memory); 0 = none. Only
  /// for the inter-node level, ring and point-to-point (the tuner's channel_payload_limit).
  BytesPerSecond channel_rate_limit = 0;

  [[nodiscard]] bool allows(Algorithm a) const;
  [[nodiscard]] bool allows(Protocol p) const;
  [[nodiscard]] double efficiency(Algorithm a) const;
};

/// Schema 2: how many channels NCCL's communicators on this cluster have. A collective's kernel
/// runs one thread block per channel, each resident on a streaming multiprocessor for the whole
/// call (collective/kernel_channels.hpp). 0 = not sourced: calls there take no SMs from compute.
struct KernelChannels {
  int one_node = 0;    ///< a communicator inside one node
  int multi_node = 0;  ///< across nodes, with every accelerator of each node in it
  int net_peer = 0;    ///< a send/recv to a rank on another node
  /// Across nodes with fewer than every accelerator of a node in the group: this many per
  /// accelerator of the fullest node (NCCL's search on H100 nodes with one NIC per GPU); 0 = the
  /// group's share of multi_node.
  int multi_node_per_accelerator = 0;
  int nvls = 0;  ///< an NVLink SHARP (NVLS, NVLS-tree) call: NCCL_NVLS_NCHANNELS, not the rings'
};

struct CollectiveCalibration {
  int schema_version = 1;
  std::string library;  ///< e.g. "HCCL (SynapseAI 1.5)"
  std::string file;
  LevelCalibration intra_node;  ///< schema 1
  LevelCalibration inter_node;  ///< schema 1
  std::array<ProtocolParams, 3> protocols{};  ///< schema 2, by Protocol
  FabricLevel intra_fabric;                   ///< schema 2
  FabricLevel inter_fabric;                   ///< schema 2
  /// Schema 2: a tuner plugin's regions (aws-ofi-nccl on p5), consulted before NCCL's own choice.
  std::shared_ptr<const TunerRegions> tuner_regions;
  /// Schema 2: NCCL's own estimate on this platform; where given, it chooses across nodes when
  /// no region does, and sets the tree's rate across nodes (nccl_tuner.hpp).
  std::shared_ptr<const NcclCostModel> nccl_cost_model;
  KernelChannels channels;                    ///< schema 2, optional ("channels")
  /// Schema 2, optional ("partial_node_ring_nics"): the same table as
  /// NcclCostModel::partial_node_ring_nic, for a platform whose NCCL release's NIC choice is read
  /// from its own logs rather than from a cost model (Jean Zay); a cost model's table wins.
  std::vector<int> partial_node_ring_nic;
  std::vector<std::string> fitted;       ///< JSON paths of fitted values, with the rows, as text
  std::vector<std::string> fitted_rows;  ///< every row ("scenario#label" or a measurement key)

  [[nodiscard]] const ProtocolParams& protocol(Protocol p) const {
    return protocols[static_cast<std::size_t>(p)];
  }
};

/// Loads a calibration file (and, for schema 2, the files it names, relative to it);
/// ConfigError on bad input.
[[nodiscard]] CollectiveCalibration load_collective_calibration(const std::string& path);

}  // namespace trainsim::collective
