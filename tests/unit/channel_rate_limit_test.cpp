// The per-channel rate cap across nodes (FabricLevel::channel_rate_limit), no SimGrid: on Jean
// Zay's Omni-Path (nccl-opa-verbs-jean-zay.json: 2.49 GB/s of payload per NCCL channel, derived
// from the public 4 x 4 all_reduce log) a ring's inter-node flows share the communicator's 2
// channels' rate, a send between two nodes gets one channel's (1 p2p channel per peer), flows
// inside a node and platforms without the cap get none, and the cap is refused beside a tree.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "collective/collective_calibration.hpp"
#include "collective/collective_plan.hpp"
#include "core/error.hpp"

namespace trainsim::collective {
namespace {

const RankLayout kEight{8};
constexpr double kChannel = 2.49e9;  // the file's channel_rate_limit

std::vector<int> group(const std::vector<int>& locals, int nodes) {
  std::vector<int> g;
  for (int n = 0; n < nodes; ++n)
    for (int l : locals) g.push_back(8 * n + l);
  return g;
}

/// Payload rate cap of each inter-node flow (rate_limit x payload / wire = the flow's payload
/// share over its wire bytes: the wire-to-payload ratio is the same for every flow of a plan,
/// so the sum of limits over a node's flows in payload terms is what is checked).
double node_payload_cap(const CollectivePlan& plan, double wire_per_payload) {
  double sum = 0;
  for (const auto& f : plan.phases.at(0).flows)
    if (f.src / 8 == 0 && f.dst / 8 != 0) {
      EXPECT_GT(f.rate_limit, 0) << f.src << "->" << f.dst;
      sum += f.rate_limit / wire_per_payload;
    } else if (f.src / 8 == f.dst / 8) {
      EXPECT_EQ(f.rate_limit, 0) << "inside a node: " << f.src << "->" << f.dst;
    }
  return sum;
}

class ChannelRateLimit : public testing::Test {
protected:
  CollectiveCalibration cal_ = load_collective_calibration("topologies/calibration/jean-zay-nccl.json");
  // Simple forced: its wire bytes are payload / the fabric's efficiency (Simple's fraction is 1).
  CollectivePlan all_reduce(const std::vector<int>& g) {
    return plan_collective(Op::all_reduce, 1 << 30, g, kEight, cal_, FabricRates{12.5e9 * 20, 0, 12.5e9 * 4, 0},
                           TunerOverride{Algorithm::ring, Protocol::simple});
  }
  double wire_per_payload() const { return 1 / cal_.inter_fabric.ring_efficiency; }
};

TEST_F(ChannelRateLimit, FileGivesTheDerivedCap) {
  EXPECT_NEAR(cal_.inter_fabric.channel_rate_limit, kChannel, 1e6);
}

TEST_F(ChannelRateLimit, RingFlowsOfANodeShareTwoChannels) {
  // 2 ranks per node (BLOOM's data-parallel groups at TP 4), 4 per node (the 4 x 4 log) and
  // whole nodes (the 4 x 8 log): always the 2 logged channels, so 2 x 2.49 GB/s per node.
  for (const auto& locals : {std::vector<int>{0, 4}, std::vector<int>{0, 1, 2, 3},
                             std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}})
    EXPECT_NEAR(node_payload_cap(all_reduce(group(locals, 4)), wire_per_payload()), 2 * kChannel, 1e6)
        << locals.size() << " ranks per node";
}

TEST_F(ChannelRateLimit, ASendBetweenNodesGetsOneChannel) {
  const auto plan = plan_collective(Op::send_recv, 1 << 26, {0, 8}, kEight, cal_, FabricRates{}, {});
  ASSERT_EQ(plan.phases.at(0).flows.size(), 1u);
  EXPECT_NEAR(plan.phases[0].flows[0].rate_limit / wire_per_payload(), kChannel, 1e6);
  // Inside a node: no cap.
  const auto local = plan_collective(Op::send_recv, 1 << 26, {0, 1}, kEight, cal_, FabricRates{}, {});
  EXPECT_EQ(local.phases.at(0).flows.at(0).rate_limit, 0);
}

TEST_F(ChannelRateLimit, PredictionHoldsTheCap) {
  // 1 GiB over 4 nodes x 2 ranks: each node sends 2 (n-1)/n S across at 4.98 GB/s at most,
  // although the uplink given here is 50 GB/s.
  const auto plan = all_reduce(group({0, 4}, 4));
  const double n = 8, s = 1 << 30;
  EXPECT_GE(plan.predicted, 2 * (n - 1) / n * s / (2 * kChannel));
}

TEST_F(ChannelRateLimit, PlatformsWithoutTheCapHaveNone) {
  const auto cal = load_collective_calibration("topologies/calibration/dgx-a100-nccl.json");
  const auto plan = plan_collective(Op::all_reduce, 1 << 30, group({0, 1, 2, 3, 4, 5, 6, 7}, 2), kEight,
                                    cal, FabricRates{}, TunerOverride{Algorithm::ring, Protocol::simple});
  for (const auto& f : plan.phases.at(0).flows) EXPECT_EQ(f.rate_limit, 0);
}

TEST(ChannelRateLimitFile, RefusedBesideATree) {
  // Jean Zay's calibration with an inter-node fabric that also allows the tree: the tree's
  // lanes are not NCCL's channels, so the loader refuses the cap rather than guess.
  const std::string dir = testing::TempDir();
  const std::string fabric = dir + "cap_with_tree.json", calibration = dir + "cap_cal.json";
  std::ofstream(fabric) << R"({"schema_version": 1, "kind": "nccl_fabric", "name": "x",
    "algorithms": ["ring", "tree"],
    "efficiency": {"ring": 0.9, "tree": 0.9, "source": "test"},
    "channel_rate_limit": {"value": "2GB/s", "source": "test"},
    "step_latency": {"LL": "0us", "LL128": "0us", "Simple": "0us", "source": "test"},
    "simple_chunk": {"value": "1MB", "source": "test"}})";
  const auto abs = [](const char* p) { return std::filesystem::absolute(p).string(); };
  std::ofstream(calibration) << R"({"schema_version": 2, "library": "x", "protocols": ")"
                             << abs("topologies/calibration/nccl-protocols.json")
                             << R"(", "intra_node": ")"
                             << abs("topologies/calibration/nccl-nvswitch-a100.json")
                             << R"(", "inter_node": ")" << fabric << R"(",
    "channels": {"one_node": 24, "multi_node": 2, "net_peer": 1, "source": "test"}})";
  try {
    (void)load_collective_calibration(calibration);
    ADD_FAILURE() << "loaded";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("per-channel limit is modelled for ring only"),
              std::string::npos) << e.what();
  }
  std::remove(fabric.c_str());
  std::remove(calibration.c_str());
}

}  // namespace
}  // namespace trainsim::collective
