// NCCL algorithms as payload schedules (collective/nccl_algorithms.hpp), no SimGrid: the bytes
// each algorithm puts on each accelerator port and node uplink, with the arithmetic written out.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "collective/nccl_algorithms.hpp"
#include "support/rank_groups.hpp"

namespace trainsim::collective {
namespace {

using testing_support::ranks;

constexpr double kS = 64e6;  // collective size S in bytes

GroupShape shape(int nodes, int per_node) {
  return shape_of(ranks(nodes * per_node), RankLayout{per_node});
}

struct Loads {
  std::map<int, Bytes> rank_intra_out, rank_inter_out, node_out, node_in;
};

Loads loads(const Schedule& s, int per_node) {
  Loads l;
  for (const auto& f : s.flows) {
    if (f.inter_node) {
      l.rank_inter_out[f.src] += f.bytes;
      l.node_out[f.src / per_node] += f.bytes;
      l.node_in[f.dst / per_node] += f.bytes;
    } else {
      l.rank_intra_out[f.src] += f.bytes;
    }
  }
  return l;
}

TEST(RingSchedule, OneNodeAllReduceSendsTwoNMinusOneOverNOfSToTheSuccessor) {
  const auto s = ring_schedule(Op::all_reduce, kS, shape(1, 8));
  ASSERT_EQ(s.flows.size(), 8u);
  for (const auto& f : s.flows) {
    EXPECT_EQ(f.dst, (f.src + 1) % 8);
    EXPECT_FALSE(f.inter_node);
    EXPECT_DOUBLE_EQ(f.bytes, 2.0 * 7 / 8 * kS);  // 2(n-1) steps of S/n
  }
  EXPECT_EQ(s.intra_steps, 14);
  EXPECT_EQ(s.inter_steps, 0);
  EXPECT_EQ(s.pipeline_depth, 14);
  EXPECT_DOUBLE_EQ(s.pipeline_unit, kS / 8);
  EXPECT_DOUBLE_EQ(s.units_per_lane, 14);
}

TEST(RingSchedule, ChannelsSpreadTheNodeCrossingOverEveryAccelerator) {
  // 2 nodes x 4: n = 8 ranks, per rank X = 2(n-1)/n S = 1.75 S for all_reduce. Channel c leaves
  // each node from position c-1: every rank sends X/4 across and 3X/4 to its node neighbour.
  const auto s = ring_schedule(Op::all_reduce, kS, shape(2, 4));
  const Bytes x = 2.0 * 7 / 8 * kS;
  const auto l = loads(s, 4);
  for (int r = 0; r < 8; ++r) {
    EXPECT_DOUBLE_EQ(l.rank_intra_out.at(r), x * 3 / 4) << r;
    EXPECT_DOUBLE_EQ(l.rank_inter_out.at(r), x / 4) << r;
  }
  for (int n = 0; n < 2; ++n) {
    EXPECT_DOUBLE_EQ(l.node_out.at(n), x);  // the ring limit: busbw <= uplink
    EXPECT_DOUBLE_EQ(l.node_in.at(n), x);
  }
  EXPECT_EQ(s.inter_steps, 2);  // 2(nodes-1)
  EXPECT_EQ(s.intra_steps, 12);
  // Position 3 of node 0 crosses to position 0 of node 1.
  bool found = false;
  for (const auto& f : s.flows) found = found || (f.src == 3 && f.dst == 4 && f.inter_node);
  EXPECT_TRUE(found);
}

TEST(RingSchedule, GatherAndScatterMoveNMinusOneOverNOfS) {
  for (Op op : {Op::all_gather, Op::reduce_scatter}) {
    const auto s = ring_schedule(op, kS, shape(1, 4));
    for (const auto& f : s.flows) EXPECT_DOUBLE_EQ(f.bytes, 3.0 / 4 * kS) << op_name(op);
    EXPECT_EQ(s.intra_steps, 3);
  }
}

TEST(GroupShape, NodesMayHoldDifferentNumbersOfTheGroupsRanks) {
  // The data-parallel group {0, 4, 8} of TP 4 x PP 2 on nodes of 8: two ranks on node 0, one on
  // node 1.
  const auto g = shape_of({0, 4, 8}, RankLayout{8});
  EXPECT_EQ(g.node_count(), 2);
  EXPECT_EQ(g.ranks(), 3);
  EXPECT_EQ(g.per_node(), 2);  // the fullest node's
  EXPECT_EQ(g.on_node(0), 2);
  EXPECT_EQ(g.on_node(1), 1);
  EXPECT_FALSE(g.even());
  EXPECT_TRUE(shape(2, 4).even());
}

TEST(RingSchedule, UnevenNodesSpreadTheRingsLanesOverTheirOwnRanks) {
  // {0, 4 | 8}: n = 3, per rank X = 2(n-1)/n S = 4/3 S; two lanes (the fullest node's ranks).
  // Node 0: lane 0 enters at 0, crosses 0 -> 4 and leaves from 4; lane 1 enters at 4, crosses
  // 4 -> 0 and leaves from 0; both enter node 1 at its only rank, which sends both on, lane 0 to
  // 0 and lane 1 to 4. Every node sends X across, as on even nodes.
  const auto s = ring_schedule(Op::all_reduce, kS, shape_of({0, 4, 8}, RankLayout{8}), RankLayout{8});
  const Bytes x = 2.0 * 2 / 3 * kS;
  std::map<std::pair<int, int>, Bytes> flow;
  for (const auto& f : s.flows) {
    EXPECT_EQ(f.inter_node, f.src / 8 != f.dst / 8) << f.src << "->" << f.dst;
    flow[{f.src, f.dst}] += f.bytes;
  }
  const std::map<std::pair<int, int>, Bytes> expected{{{0, 4}, x / 2}, {{4, 0}, x / 2}, {{4, 8}, x / 2},
                                                      {{0, 8}, x / 2}, {{8, 0}, x / 2}, {{8, 4}, x / 2}};
  EXPECT_EQ(flow.size(), expected.size());
  for (const auto& [pair, bytes] : expected) EXPECT_DOUBLE_EQ(flow[pair], bytes) << pair.first << "->" << pair.second;
  EXPECT_EQ(s.inter_steps, 2);  // 2(nodes - 1)
  EXPECT_EQ(s.intra_steps, 2);  // 2(n - 1) - 2
}

TEST(TreeSchedule, UnevenNodesMoveSOnceEachWayAcrossTheNetwork) {
  // {0, 4 | 8} on two nodes: as on even nodes each node sends and receives S across (each tree
  // S/2 up and S/2 down); node 1's single rank carries all four lanes.
  const auto s = tree_schedule(kS, shape_of({0, 4, 8}, RankLayout{8}));
  const auto l = loads(s, 8);
  for (int n = 0; n < 2; ++n) {
    EXPECT_DOUBLE_EQ(l.node_out.at(n), kS) << n;
    EXPECT_DOUBLE_EQ(l.node_in.at(n), kS) << n;
  }
  EXPECT_DOUBLE_EQ(l.rank_inter_out.at(8), kS);
  EXPECT_DOUBLE_EQ(l.rank_inter_out.at(0), kS / 2);
  EXPECT_EQ(l.rank_intra_out.count(8), 0u);  // a one-rank chain
}

TEST(TreeSchedule, TwoNodesMoveSOnceEachWayAcrossTheNetwork) {
  // Two trees of S/2: on one node i is the root's child in tree 0 and the root in tree 1, so it
  // sends S/2 up one tree and S/2 down the other: S per direction, half the ring's 2(n-1)/n S.
  const auto s = tree_schedule(kS, shape(2, 8));
  const auto l = loads(s, 8);
  for (int n = 0; n < 2; ++n) {
    EXPECT_DOUBLE_EQ(l.node_out.at(n), kS);
    EXPECT_DOUBLE_EQ(l.node_in.at(n), kS);
  }
  for (int r = 0; r < 16; ++r) EXPECT_DOUBLE_EQ(l.rank_inter_out.at(r), kS / 8);  // 8 lanes
  // Each lane's chain carries S/8 up and S/8 down over k-1 = 7 links: 2 * 7 * S/8 per lane,
  // 8 lanes per node.
  Bytes intra = 0;
  for (int r = 0; r < 8; ++r) intra += l.rank_intra_out.at(r);
  EXPECT_DOUBLE_EQ(intra, 8 * 2 * 7 * kS / 8);
  EXPECT_EQ(s.intra_steps, 14);  // 2(k-1)
  EXPECT_EQ(s.inter_steps, 2);   // 2 ceil(log2 nodes)
}

TEST(TreeSchedule, FourNodesFollowNcclsBtreeAndItsMirror) {
  // NCCL's btree (trees.cc) over 4 nodes: 0 <- 2 <- {1, 3} (the root has a single child);
  // tree 1 mirrors it (r -> 3 - r): 3 <- 1 <- {2, 0}. Per tree of S/2 a node moves S/2 to and
  // from its parent and each child: nodes 1 and 2 are inner in one tree (1.5 S) and leaves in
  // the other (S/2) = 2 S per direction; nodes 0 and 3 are a root with one child in one tree
  // and a leaf in the other = S.
  const auto s = tree_schedule(kS, shape(4, 2));
  const auto l = loads(s, 2);
  const double expected[] = {1.0, 2.0, 2.0, 1.0};
  for (int n = 0; n < 4; ++n) {
    EXPECT_DOUBLE_EQ(l.node_out.at(n), expected[n] * kS) << n;
    EXPECT_DOUBLE_EQ(l.node_in.at(n), expected[n] * kS) << n;
  }
  // Each of a node's NICs carries one lane of each tree: the node's load splits evenly.
  for (int r = 0; r < 8; ++r) EXPECT_DOUBLE_EQ(l.rank_inter_out.at(r), expected[r / 2] * kS / 2);
  EXPECT_EQ(s.inter_steps, 4);
  EXPECT_EQ(s.inter_depth, 4);
  EXPECT_EQ(s.pipeline_depth, 2 + 4);  // the chain (k = 2) and up and down the tree
}

TEST(TreeSchedule, BeyondTwoNodesTheBusiestNodeMovesTwiceS) {
  // 8 nodes: 0 <- 4 <- {2, 6}, 2 <- {1, 3}, 6 <- {5, 7}; mirrored. The busiest node moves 2 S
  // each way (1.5 S as an inner node, S/2 as a leaf), twice the 2-node tree's S: NCCL's tuner
  // halves the NVLS tree's network bandwidth beyond two nodes for the same reason (tuning.cc).
  // 3 nodes (odd): tree 0 is the chain 0 <- 2 <- 1 and tree 1 its shift by one, 1 <- 0 <- 2:
  // node 0 is a root with one child (S/2) and inner with one child (S): 1.5 S.
  {
    const auto l = loads(tree_schedule(kS, shape(3, 1)), 1);
    EXPECT_DOUBLE_EQ(l.node_out.at(0), 1.5 * kS);
    EXPECT_DOUBLE_EQ(l.node_out.at(1), 1.0 * kS);
    EXPECT_DOUBLE_EQ(l.node_out.at(2), 1.5 * kS);
  }
  for (int nodes : {8, 16}) {
    const auto s = tree_schedule(kS, shape(nodes, 1));
    const auto l = loads(s, 1);
    Bytes most = 0;
    for (const auto& [n, b] : l.node_out) most = std::max(most, b);
    EXPECT_DOUBLE_EQ(most, 2 * kS) << nodes;
  }
}

TEST(NvlsSchedule, EachPortCarriesSOnce) {
  const auto s = nvls_schedule(kS, shape(1, 8));
  const auto l = loads(s, 8);
  for (int r = 0; r < 8; ++r) EXPECT_DOUBLE_EQ(l.rank_intra_out.at(r), kS);
  EXPECT_EQ(s.pipeline_depth, 2);
}

TEST(NvlsTreeSchedule, SwitchInsideTreeAcross) {
  const auto s = nvls_tree_schedule(kS, shape(2, 4));
  const auto l = loads(s, 4);
  for (int r = 0; r < 8; ++r) {
    EXPECT_DOUBLE_EQ(l.rank_intra_out.at(r), kS);      // as nvls
    EXPECT_DOUBLE_EQ(l.rank_inter_out.at(r), kS / 4);  // as tree, 4 lanes
  }
  for (int n = 0; n < 2; ++n) EXPECT_DOUBLE_EQ(l.node_out.at(n), kS);
}

TEST(PairwiseSchedule, AlltoallSendsSOverNToEveryPeer) {
  // 2 nodes x 2: n = 4. Each rank sends S/4 to its node peer and, for the 2 ranks of the other
  // node, 2 x S/4 to its rail peer there. Node egress = k (n - k) / n S = 2 * 2 / 4 S = S.
  const auto s = pairwise_schedule(Op::alltoall, kS, shape(2, 2));
  const auto l = loads(s, 2);
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(l.rank_intra_out.at(r), kS / 4);
    EXPECT_DOUBLE_EQ(l.rank_inter_out.at(r), kS / 2);
  }
  EXPECT_DOUBLE_EQ(l.node_out.at(0), kS);
  EXPECT_EQ(s.peer_rounds, 3);  // one send/recv round per peer, n - 1
}

TEST(PairwiseSchedule, AlltoallOnUnevenNodesSendsEachRanksShareOnce) {
  // {0, 4 | 8}: n = 3, S/3 to every peer: 0 and 4 swap S/3, each sends S/3 to 8, and 8 sends
  // S/3 to the rank at its position (0) and to 4 through it: 2S/3 to 0 (rail path), nothing
  // direct to 4.
  const auto s = pairwise_schedule(Op::alltoall, kS, shape_of({0, 4, 8}, RankLayout{8}));
  const auto l = loads(s, 8);
  EXPECT_DOUBLE_EQ(l.rank_intra_out.at(0), kS / 3);
  EXPECT_DOUBLE_EQ(l.rank_inter_out.at(0), kS / 3);
  EXPECT_DOUBLE_EQ(l.rank_inter_out.at(8), 2 * kS / 3);
  EXPECT_DOUBLE_EQ(l.node_out.at(0), 2 * kS / 3);
  EXPECT_DOUBLE_EQ(l.node_out.at(1), 2 * kS / 3);
}

TEST(PairwiseSchedule, SendRecvIsOneFlow) {
  const auto s = pairwise_schedule(Op::send_recv, kS, shape_of({0, 8}, RankLayout{8}));
  ASSERT_EQ(s.flows.size(), 1u);
  EXPECT_EQ(s.flows[0].src, 0);
  EXPECT_EQ(s.flows[0].dst, 8);
  EXPECT_TRUE(s.flows[0].inter_node);
  EXPECT_DOUBLE_EQ(s.flows[0].bytes, kS);
  EXPECT_EQ(s.inter_steps, 1);
}

TEST(PairwiseSchedule, RingExchangeSendsSToTheNextMemberAroundTheGroup) {
  // TP 4 inside a node of 8: 2 -> 3 -> 4 -> 5 -> 2, each flow the S of one send_recv, one step.
  const auto s = pairwise_schedule(Op::ring_exchange, kS, shape_of({2, 3, 4, 5}, RankLayout{8}));
  ASSERT_EQ(s.flows.size(), 4u);
  std::map<int, int> next;
  for (const auto& f : s.flows) {
    next[f.src] = f.dst;
    EXPECT_DOUBLE_EQ(f.bytes, kS);
    EXPECT_FALSE(f.inter_node);
  }
  EXPECT_EQ(next, (std::map<int, int>{{2, 3}, {3, 4}, {4, 5}, {5, 2}}));
  EXPECT_EQ(s.intra_steps, 1);
  EXPECT_EQ(s.inter_steps, 0);
  EXPECT_EQ(s.peer_rounds, 0);
}

TEST(PairwiseSchedule, ARingExchangeAcrossNodesCrossesTheNetworkWhereTheRingLeavesANode) {
  // 2 nodes x 2: 0 -> 1 inside node 0, 1 -> 2 across, 2 -> 3 inside node 1, 3 -> 0 across.
  const auto s = pairwise_schedule(Op::ring_exchange, kS, shape(2, 2));
  ASSERT_EQ(s.flows.size(), 4u);
  int across = 0;
  for (const auto& f : s.flows) {
    EXPECT_EQ(f.dst, (f.src + 1) % 4);
    EXPECT_EQ(f.inter_node, f.src / 2 != f.dst / 2);
    across += f.inter_node ? 1 : 0;
  }
  EXPECT_EQ(across, 2);
  EXPECT_EQ(s.inter_steps, 1);
  EXPECT_EQ(s.intra_steps, 0);
}

}  // namespace
}  // namespace trainsim::collective
