#pragma once
// NCCL's algorithms as payload schedules: which rank sends how many bytes to which peer over a
// whole collective call, plus the step and pipeline counts its latency depends on. Plain data;
// nccl_tuner.hpp turns a schedule into a timed Phase for a protocol and fabric.
//
// Channels: NCCL runs several rings/trees ("channels") side by side, each crossing between nodes
// through a different NIC. With k ranks per node we use k channels: channel c enters every node
// at local rank c, so the inter-node traffic of a node is spread evenly over its accelerators'
// NIC paths, unless the platform's NCCL release chose the NICs otherwise for groups holding part
// of each node (ring_schedule's entry_nic: the flow names the NIC it crosses through). Flows of
// all channels between the same two ranks (and NICs) are merged into one flow.
#include <vector>

#include "collective/collective_plan.hpp"

namespace trainsim::collective {

/// A group's members by node: nodes[m][j] is the global rank at position j on the m-th node.
/// Nodes may hold different numbers of the group's ranks (a data-parallel group of TP 4 x PP 2
/// on 3 nodes of 8 has 2 ranks on one node and 1 on the next), as NCCL allows: each node's
/// chain has its own length, and the channels that cross between nodes spread over each
/// node's own positions.
struct GroupShape {
  std::vector<std::vector<int>> nodes;
  [[nodiscard]] int node_count() const { return static_cast<int>(nodes.size()); }
  /// Ranks on the node holding most of the group (every node's where they hold alike).
  [[nodiscard]] int per_node() const { return most_; }
  [[nodiscard]] int ranks() const { return ranks_; }
  /// Whether every node holds the same number of the group's ranks.
  [[nodiscard]] bool even() const { return even_; }
  /// Ranks of the group on the m-th node.
  [[nodiscard]] int on_node(int m) const { return static_cast<int>(nodes[static_cast<std::size_t>(m)].size()); }

private:
  friend GroupShape shape_of(const std::vector<int>& group, const RankLayout& layout);
  int most_ = 0, ranks_ = 0;
  bool even_ = true;
};

/// Groups `group` by node (nodes in order of first appearance).
[[nodiscard]] GroupShape shape_of(const std::vector<int>& group, const RankLayout& layout);

struct PayloadFlow {
  int src;
  int dst;
  Bytes bytes;      ///< payload, before protocol and efficiency
  bool inter_node;  ///< crosses the inter-node fabric
  int src_nic = -1;  ///< Flow::src_nic
  int dst_nic = -1;  ///< Flow::dst_nic
};

struct Schedule {
  Algorithm algorithm = Algorithm::ring;
  Bytes size = 0;  ///< the call's payload S (set by schedule_for)
  std::vector<PayloadFlow> flows;
  int intra_steps = 0;      ///< sequential steps on NVLink/PCIe (each pays a step latency)
  int inter_steps = 0;      ///< sequential steps across the network
  int pipeline_depth = 0;   ///< hops a chunk travels before the pipeline is full (0: none)
  int inter_depth = 0;      ///< of those, hops across the network (the rest: inside a node)
  Bytes pipeline_unit = 0;  ///< bytes one pipeline stage moves (a ring step's S/n, a tree's S/2)
  double units_per_lane = 1;  ///< stages a lane streams one after another (ring: its steps)
  /// Point-to-point rounds posted one after another (alltoall: one per peer, n-1); each pays
  /// the step latency of the group's outermost level, the route latency is paid once.
  int peer_rounds = 0;
};

/// Ring over all ranks with k channels (all_reduce, reduce_scatter, all_gather, broadcast).
/// Per rank: all_reduce 2(n-1)/n S, reduce_scatter and all_gather (n-1)/n S, broadcast S(n-1)/n
/// (every link of the pipeline chain carries S; spread evenly over the ring).
/// `entry_nic` (NcclCostModel::partial_node_ring_nic, used only when the group holds fewer than
/// `layout.ranks_per_node` ranks of each node): a channel's inter-node hop leaves and enters every
/// node through entry_nic[local accelerator where the channel enters the node].
[[nodiscard]] Schedule ring_schedule(Op op, Bytes size, const GroupShape& g,
                                     const RankLayout& layout = {},
                                     const std::vector<int>& entry_nic = {});

/// all_reduce across >= 2 nodes: a chain through each node's ranks and two complementary binary
/// trees over the nodes (NCCL's double binary tree), each tree carrying S/2; reduce goes up and
/// broadcast comes down at the same time (pipelined).
[[nodiscard]] Schedule tree_schedule(Bytes size, const GroupShape& g);

/// all_reduce inside one NVSwitch node with NVLink SHARP: every accelerator sends S into the
/// switch and receives the reduced S; as port loads that is S per direction per accelerator.
[[nodiscard]] Schedule nvls_schedule(Bytes size, const GroupShape& g);

/// all_reduce across >= 2 NVLS nodes: NVLS inside each node (S per direction per accelerator
/// port) and the double binary tree across nodes on the same lanes as tree_schedule.
[[nodiscard]] Schedule nvls_tree_schedule(Bytes size, const GroupShape& g);

/// alltoall (S = each rank's whole send buffer, S/n to every rank) and send_recv (S from the
/// group's first rank to its second). Inter-node bytes for all ranks of a remote node travel
/// to the rank at the same position there (NCCL's rail-aligned PXN path). alltoall is n-1
/// send/recv rounds (NCCL's p2p schedule: round d sends to rank+d, receives from rank-d); their
/// flows overlap, but each round is a separate network operation with its own step cost.
/// ring_exchange: each member sends S to the next member (the group's ranks node by node, in
/// order, wrapping around) in one step, the flows of as many send_recv calls made at once.
[[nodiscard]] Schedule pairwise_schedule(Op op, Bytes size, const GroupShape& g);

}  // namespace trainsim::collective
