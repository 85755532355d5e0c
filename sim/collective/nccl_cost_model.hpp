#pragma once
// NCCL's own cost estimate (NVIDIA/nccl v2.27.7 src/graph/tuning.cc, ncclTopoTuneModel and
// ncclTopoGetAlgoTime; v2.8.3-1's tables and formulas where the platform file names that release,
// nccl_cost_model_v2_8.cpp): per algorithm and protocol a latency and a bandwidth built from the
// topology search's graphs (channels x GB/s per channel) and NCCL's tables, and
//   time = latency [x ring plateau factor] + bytes / (bandwidth [x tree correction factor]).
// NCCL picks the smallest time when no tuner plugin decides. The simulator does the same across
// nodes where the platform file gives NCCL's inputs (nccl_tuner.cpp), and takes the tree's rate
// across nodes relative to the NVLS tree's from the same estimate. Plain data and arithmetic.
#include <optional>
#include <string>
#include <vector>

#include "collective/collective_calibration.hpp"
#include "collective/collective_plan.hpp"
#include "core/json_reader.hpp"

namespace trainsim::collective {

/// One graph of NCCL's topology search (NCCL_GRAPH_DUMP_FILE: nchannels, speedintra,
/// speedinter), bandwidths in GB/s per channel.
struct NcclGraph {
  int channels = 0;
  double bw_intra = 0;
  double bw_inter = 0;
};

/// Indexes NCCL's per-architecture tables (llMaxBws, perChMax*Bws).
enum class NcclArch { volta, ampere, hopper, blackwell };

/// Which NCCL release's tables and formulas the estimate uses (tuning.cc changed between them).
enum class NcclVersion { v2_8_3, v2_27_7 };

/// What NCCL's estimate needs about a platform (topologies/calibration/nccl-cost-*.json).
struct NcclCostModel {
  std::string file;
  NcclVersion version = NcclVersion::v2_27_7;
  NcclArch arch = NcclArch::hopper;
  bool amd_cpu = false;      ///< NCCL's LL ceiling and network post overhead depend on the CPU
  Seconds net_latency = 0;   ///< the net plugin's reported latency (graph latencyInter)
  NcclGraph ring, tree, nvls;
  /// The tree graph fell back to NCCL_TOPO_PATTERN_TREE (NCCL multiplies its bandwidth by 0.85).
  bool simple_tree_pattern = false;
  /// Where a communicator holds some but not all accelerators of each node: by local accelerator,
  /// the node's NIC (index among the topology's NIC vertices, in file order) that a ring channel
  /// entering the node at that accelerator crosses the network through, the NIC its own search
  /// finds (NCCL 2.8.3 searches each communicator's graph alone). Empty: each accelerator's own
  /// NIC, as for whole-node groups.
  std::vector<int> partial_node_ring_nic;
};

/// NCCL's latency and algorithm bandwidth (GB/s, bytes per ns) for a call on `nodes` nodes of
/// `ranks` ranks; nullopt where NCCL has no estimate the simulator uses (one node, alltoall,
/// send/recv, broadcast, an algorithm NCCL cannot run for the op or a graph the file lacks).
struct NcclCost {
  Seconds latency = 0;
  double bandwidth_gbps = 0;
};
[[nodiscard]] std::optional<NcclCost> nccl_cost(const NcclCostModel& m, Op op, Algorithm a,
                                                Protocol p, int nodes, int ranks);

/// NCCL 2.8.3's latency and bandwidth (nccl_cost dispatches to it for that release).
[[nodiscard]] std::optional<NcclCost> nccl_cost_v2_8_3(const NcclCostModel& m, Op op, Algorithm a,
                                                       Protocol p, int nodes, int ranks);

/// NCCL's tree correction factor for a size (1 for every other algorithm); LL128's row differs
/// between releases from 512 KiB up.
[[nodiscard]] double nccl_tree_correction(Op op, Algorithm a, Protocol p, Bytes size,
                                          NcclVersion v = NcclVersion::v2_27_7);

/// NCCL's estimated time of one call (ncclTopoGetAlgoTime with one pipelined op).
[[nodiscard]] std::optional<Seconds> nccl_estimated_time(const NcclCostModel& m, Op op,
                                                         Algorithm a, Protocol p, Bytes size,
                                                         int nodes, int ranks);

/// Channels a call runs on: NCCL doubles the search's channels when it connects the rings
/// and trees (connect.cc, ncclTopoPostset), and Hopper across nodes doubles them again while
/// the ring graph is faster than 45 GB/s per channel and under 16 channels.
[[nodiscard]] int nccl_runtime_channels(const NcclCostModel& m, int nodes);

/// The tree LL128 chunk of one channel (enqueue.cc, calcCollChunking): from one LL128 step
/// (`step_data`, its data bytes) halved while a channel would get fewer than
/// (1 + log2 nodes + 0.1 ranks per node) x 64 / ranks per node chunks (down to 128 KiB), then
/// fewer than a quarter of that (down to 32 KiB).
[[nodiscard]] Bytes nccl_tree_ll128_chunk(Bytes step_data, Bytes size, int channels, int nodes,
                                          int ranks);

/// Reads a "partial_node_ring_nics" object ({"nic_of_entry_accelerator": [...], "source", "rule"}).
[[nodiscard]] std::vector<int> read_partial_node_ring_nics(JsonObject o);

/// The NIC table a partial-node ring follows on `cal`'s platform: its cost model's, else the
/// calibration's own (logged) one; empty: every accelerator's own NIC.
[[nodiscard]] const std::vector<int>& partial_node_ring_nic(const CollectiveCalibration& cal);

/// The distinct NICs partial-node ring channels are routed through (partial_node_ring_nic),
/// ascending; empty without a table. What the platform must offer routes to.
[[nodiscard]] std::vector<int> ring_nics(const CollectiveCalibration& cal);

/// Loads a cost-model file; ConfigError naming the file and JSON path on bad input.
[[nodiscard]] NcclCostModel load_nccl_cost_model(const std::string& path);

}  // namespace trainsim::collective
