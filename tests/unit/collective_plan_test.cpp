// Collectives as flows (collective/collective_plan.hpp), no SimGrid: single-level ring and
// direct phases, and plan_collective's choice between intra-node, inter-node and hierarchical.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "collective/collective_calibration.hpp"
#include "collective/collective_plan.hpp"
#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "support/rank_groups.hpp"

namespace trainsim::collective {
namespace {

using testing_support::ranks;

constexpr double kS = 64e6;  // collective size S in bytes

LevelCalibration level(Algorithm a, double efficiency, Seconds step_latency) {
  LevelCalibration l;
  l.algorithm = a;
  l.bandwidth_efficiency = efficiency;
  l.step_latency = step_latency;
  return l;
}

/// Shaped like dl1-hccl.json: direct on the node's mesh, ring across nodes.
CollectiveCalibration two_level() {
  CollectiveCalibration c;
  c.intra_node = level(Algorithm::direct, 0.9, 20e-6);
  c.inter_node = level(Algorithm::ring, 0.5, 1e-3);
  return c;
}

Bytes total_bytes(const Phase& p) {
  Bytes b = 0;
  for (const auto& f : p.flows) b += f.bytes;
  return b;
}

/// Bytes each node sends to other nodes during a phase.
std::map<int, Bytes> bytes_leaving_nodes(const Phase& p, const RankLayout& layout) {
  std::map<int, Bytes> out;
  for (const auto& f : p.flows)
    if (layout.node_of(f.src) != layout.node_of(f.dst)) out[layout.node_of(f.src)] += f.bytes;
  return out;
}

TEST(RingPhase, AllReduce) {
  const int n = 8;
  const Phase p = ring_phase(Op::all_reduce, kS, ranks(0, n), level(Algorithm::ring, 0.8, 5e-6));
  EXPECT_EQ(p.steps, 2 * (n - 1));
  EXPECT_DOUBLE_EQ(p.step_latency, 5e-6);
  ASSERT_EQ(p.flows.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(p.flows[i].src, i);
    EXPECT_EQ(p.flows[i].dst, (i + 1) % n);  // each rank sends to its ring successor
    EXPECT_DOUBLE_EQ(p.flows[i].bytes, 2.0 * (n - 1) / n * kS / 0.8);
  }
}

TEST(RingPhase, ReduceScatterAndAllGatherAreHalfAnAllReduce) {
  const int n = 4;
  const auto cal = level(Algorithm::ring, 0.8, 5e-6);
  for (Op op : {Op::reduce_scatter, Op::all_gather}) {
    const Phase p = ring_phase(op, kS, ranks(0, n), cal);
    EXPECT_EQ(p.steps, n - 1) << op_name(op);
    ASSERT_EQ(p.flows.size(), static_cast<std::size_t>(n));
    for (const auto& f : p.flows) EXPECT_DOUBLE_EQ(f.bytes, (n - 1.0) / n * kS / 0.8);
  }
}

TEST(RingPhase, FollowsTheGroupOrder) {
  const Phase p = ring_phase(Op::all_gather, kS, {5, 2, 9}, level(Algorithm::ring, 1, 0));
  ASSERT_EQ(p.flows.size(), 3u);
  EXPECT_EQ(p.flows[0].src, 5);
  EXPECT_EQ(p.flows[0].dst, 2);
  EXPECT_EQ(p.flows[2].src, 9);
  EXPECT_EQ(p.flows[2].dst, 5);
}

TEST(RingPhase, OneMemberMovesNothing) {
  const Phase p = ring_phase(Op::all_reduce, kS, {3}, level(Algorithm::ring, 1, 5e-6));
  EXPECT_TRUE(p.flows.empty());
  EXPECT_EQ(p.steps, 0);
}

TEST(DirectPhase, EveryPairExchangesItsShare) {
  const int n = 8;
  const auto cal = level(Algorithm::direct, 0.9, 20e-6);
  const Phase rs = direct_phase(Op::reduce_scatter, kS, ranks(0, n), cal);
  EXPECT_EQ(rs.steps, 1);
  ASSERT_EQ(rs.flows.size(), static_cast<std::size_t>(n * (n - 1)));
  for (const auto& f : rs.flows) {
    EXPECT_NE(f.src, f.dst);
    EXPECT_DOUBLE_EQ(f.bytes, kS / n / 0.9);
  }
  const Phase ar = direct_phase(Op::all_reduce, kS, ranks(0, n), cal);
  EXPECT_EQ(ar.steps, 2);  // reduce-scatter, then all-gather
  ASSERT_EQ(ar.flows.size(), static_cast<std::size_t>(n * (n - 1)));
  for (const auto& f : ar.flows) EXPECT_DOUBLE_EQ(f.bytes, 2 * kS / n / 0.9);
}

TEST(DirectPhase, SendsAsManyBytesAsTheRing) {
  // Per rank, direct sends (n-1) shares of S/n per step, as the ring does over its steps.
  const auto cal = level(Algorithm::direct, 1, 0);
  const Bytes ring = total_bytes(ring_phase(Op::all_reduce, kS, ranks(0, 8), cal));
  const Bytes direct = total_bytes(direct_phase(Op::all_reduce, kS, ranks(0, 8), cal));
  EXPECT_NEAR(direct, ring, 1e-9 * ring);
  EXPECT_NEAR(ring, 8 * 2.0 * 7 / 8 * kS, 1e-9 * ring);
}

TEST(PlanCollective, GroupInsideOneNodeUsesTheIntraAlgorithm) {
  const RankLayout layout{8};
  const auto plan = plan_collective(Op::all_reduce, kS, ranks(8, 8), layout, two_level(), FabricRates{});
  ASSERT_EQ(plan.phases.size(), 1u);
  const Phase& p = plan.phases[0];
  EXPECT_FALSE(p.inter_node);
  EXPECT_EQ(p.flows.size(), 56u);  // direct: 8 x 7 pairs
  EXPECT_EQ(p.steps, 2);
  EXPECT_DOUBLE_EQ(p.step_latency, 20e-6);
  for (const auto& f : p.flows) EXPECT_DOUBLE_EQ(f.bytes, 2 * kS / 8 / 0.9);
}

TEST(PlanCollective, OneRankPerNodeUsesTheInterAlgorithm) {
  const RankLayout layout{8};
  const std::vector<int> group = {0, 8, 16, 24};  // local rank 0 of 4 nodes
  const auto plan = plan_collective(Op::all_reduce, kS, group, layout, two_level(), FabricRates{});
  ASSERT_EQ(plan.phases.size(), 1u);
  const Phase& p = plan.phases[0];
  EXPECT_TRUE(p.inter_node);
  EXPECT_EQ(p.steps, 2 * 3);
  EXPECT_DOUBLE_EQ(p.step_latency, 1e-3);
  ASSERT_EQ(p.flows.size(), 4u);  // ring
  for (const auto& f : p.flows) EXPECT_DOUBLE_EQ(f.bytes, 2.0 * 3 / 4 * kS / 0.5);
}

TEST(PlanCollective, HierarchicalAllReduceOnTwoNodesOfEight) {
  const RankLayout layout{8};
  const double nodes = 2, k = 8;
  const auto plan = plan_collective(Op::all_reduce, kS, ranks(0, 16), layout, two_level(), FabricRates{});
  ASSERT_EQ(plan.phases.size(), 3u);
  const Phase& rs = plan.phases[0];
  const Phase& ar = plan.phases[1];
  const Phase& ag = plan.phases[2];

  // 1. Reduce-scatter inside each node, both nodes at once: 2 x 56 direct flows of S/8.
  EXPECT_FALSE(rs.inter_node);
  EXPECT_EQ(rs.steps, 1);
  EXPECT_DOUBLE_EQ(rs.step_latency, 20e-6);
  ASSERT_EQ(rs.flows.size(), 2u * 56);
  for (const auto& f : rs.flows) {
    EXPECT_EQ(layout.node_of(f.src), layout.node_of(f.dst));
    EXPECT_DOUBLE_EQ(f.bytes, kS / k / 0.9);
  }

  // 2. All-reduce of each rank's S/8 shard across nodes: 8 rings (one per local rank) of 2.
  EXPECT_TRUE(ar.inter_node);
  EXPECT_EQ(ar.steps, 2 * (2 - 1));
  EXPECT_DOUBLE_EQ(ar.step_latency, 1e-3);
  ASSERT_EQ(ar.flows.size(), 8u * 2);
  for (const auto& f : ar.flows) {
    EXPECT_EQ(layout.local_of(f.src), layout.local_of(f.dst));
    EXPECT_NE(layout.node_of(f.src), layout.node_of(f.dst));
    EXPECT_DOUBLE_EQ(f.bytes, 2 * (nodes - 1) / nodes * (kS / k) / 0.5);
  }
  // Each node sends 8 ranks x 2(N-1)/N x S/8 / efficiency = 2(N-1)/N x S / efficiency.
  const auto leaving = bytes_leaving_nodes(ar, layout);
  ASSERT_EQ(leaving.size(), 2u);
  for (const auto& [node, bytes] : leaving)
    EXPECT_NEAR(bytes, 2 * (nodes - 1) / nodes * kS / 0.5, 1e-9 * kS) << "node " << node;

  // 3. All-gather inside each node.
  EXPECT_FALSE(ag.inter_node);
  EXPECT_EQ(ag.flows.size(), 2u * 56);
  for (const auto& f : ag.flows) EXPECT_DOUBLE_EQ(f.bytes, kS / k / 0.9);
  EXPECT_TRUE(bytes_leaving_nodes(rs, layout).empty());
  EXPECT_TRUE(bytes_leaving_nodes(ag, layout).empty());
}

TEST(PlanCollective, HierarchicalTrafficLeavingANodeOnFourNodes) {
  const RankLayout layout{8};
  const double nodes = 4;
  const auto plan = plan_collective(Op::all_reduce, kS, ranks(0, 32), layout, two_level(), FabricRates{});
  ASSERT_EQ(plan.phases.size(), 3u);
  EXPECT_EQ(plan.phases[1].steps, 2 * 3);
  for (const auto& [node, bytes] : bytes_leaving_nodes(plan.phases[1], layout))
    EXPECT_NEAR(bytes, 2 * (nodes - 1) / nodes * kS / 0.5, 1e-9 * kS) << "node " << node;
}

TEST(PlanCollective, HierarchicalReduceScatterAndAllGather) {
  const RankLayout layout{8};
  const auto rs = plan_collective(Op::reduce_scatter, kS, ranks(0, 16), layout, two_level(), FabricRates{});
  ASSERT_EQ(rs.phases.size(), 2u);  // intra, then inter on the shard
  EXPECT_FALSE(rs.phases[0].inter_node);
  EXPECT_TRUE(rs.phases[1].inter_node);
  for (const auto& f : rs.phases[1].flows) EXPECT_DOUBLE_EQ(f.bytes, 0.5 * (kS / 8) / 0.5);

  const auto ag = plan_collective(Op::all_gather, kS, ranks(0, 16), layout, two_level(), FabricRates{});
  ASSERT_EQ(ag.phases.size(), 2u);  // inter on the shard, then intra
  EXPECT_TRUE(ag.phases[0].inter_node);
  EXPECT_FALSE(ag.phases[1].inter_node);
}

TEST(Repeated, ScalesEveryFlowsBytesAndEveryPhasesLatencyNotItsShape) {
  const RankLayout layout{8};
  const auto once = plan_collective(Op::all_reduce, kS, ranks(0, 16), layout, two_level(), FabricRates{});
  auto with_predicted = once;
  with_predicted.predicted = 2e-3;
  const auto thrice = repeated(with_predicted, 3);
  ASSERT_EQ(thrice.phases.size(), once.phases.size());
  EXPECT_EQ(thrice.algorithm, once.algorithm);
  EXPECT_DOUBLE_EQ(thrice.predicted, 6e-3);
  for (std::size_t i = 0; i < once.phases.size(); ++i) {
    const Phase& a = once.phases[i];
    const Phase& b = thrice.phases[i];
    ASSERT_EQ(b.flows.size(), a.flows.size());  // the same flows, three calls' bytes each
    for (std::size_t f = 0; f < a.flows.size(); ++f) {
      EXPECT_EQ(b.flows[f].src, a.flows[f].src);
      EXPECT_EQ(b.flows[f].dst, a.flows[f].dst);
      EXPECT_DOUBLE_EQ(b.flows[f].bytes, 3 * a.flows[f].bytes);
    }
    EXPECT_EQ(b.steps, 3 * a.steps);                   // every step's latency paid three times
    EXPECT_DOUBLE_EQ(b.step_latency, a.step_latency);  // at the calibrated rate
    EXPECT_DOUBLE_EQ(b.fixed_latency, 3 * a.fixed_latency);
  }
}

TEST(Repeated, OnceIsTheCallItselfAndNeverIsRejected) {
  auto plan = plan_collective(Op::reduce_scatter, kS, ranks(0, 8), RankLayout{8}, two_level(), FabricRates{});
  plan.phases[0].fixed_latency = 5e-6;
  const auto same = repeated(plan, 1);
  ASSERT_EQ(same.phases.size(), 1u);
  EXPECT_EQ(same.phases[0].steps, plan.phases[0].steps);
  EXPECT_DOUBLE_EQ(same.phases[0].fixed_latency, 5e-6);
  EXPECT_DOUBLE_EQ(total_bytes(same.phases[0]), total_bytes(plan.phases[0]));
  EXPECT_THROW((void)repeated(plan, 0), InvariantError);
}

TEST(PlanCollective, SingleRankIsEmpty) {
  EXPECT_TRUE(plan_collective(Op::all_reduce, kS, {0}, RankLayout{8}, two_level(), FabricRates{}).phases.empty());
}

TEST(PlanCollective, SchemaOneRefusesUnevenRanksPerNodeNamingTheFile) {
  // The hierarchical (schema 1) plan needs alike nodes; NCCL's (schema 2) plans any group.
  const std::vector<int> group = {0, 1, 2, 8};  // 3 ranks on node 0, 1 on node 1
  CollectiveCalibration cal = two_level();
  cal.file = "hccl.json";
  try {
    (void)plan_collective(Op::all_reduce, kS, group, RankLayout{8}, cal, FabricRates{});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("hccl.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 of a group's ranks on one node and 1"), std::string::npos) << e.what();
  }
}

// ---- Calibration files -----------------------------------------------------------------------

TEST(CollectiveCalibration, ShippedFilesLoad) {
  for (const char* file :
       {"topologies/calibration/dl1-hccl.json", "topologies/calibration/p4d-nccl.json"}) {
    const CollectiveCalibration c = load_collective_calibration(file);
    EXPECT_EQ(c.file, file);
    EXPECT_FALSE(c.library.empty());
    for (const auto* l : {&c.intra_node, &c.inter_node}) {
      EXPECT_GT(l->bandwidth_efficiency, 0) << file;
      EXPECT_LE(l->bandwidth_efficiency, 1) << file;
      EXPECT_GE(l->step_latency, 0) << file;
    }
  }
}

TEST(CollectiveCalibration, RejectsEfficiencyOutsideZeroOne) {
  nlohmann::json doc = read_json_file("topologies/calibration/dl1-hccl.json");
  doc["intra_node"]["bandwidth_efficiency"] = 0;
  const std::string file = testing::TempDir() + "calibration_zero_efficiency.json";
  std::ofstream(file) << doc.dump();
  try {
    (void)load_collective_calibration(file);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.json_path(), "/intra_node/bandwidth_efficiency");
  }
}

}  // namespace
}  // namespace trainsim::collective
