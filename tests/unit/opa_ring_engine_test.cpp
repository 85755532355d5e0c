// NCCL over Omni-Path on Jean Zay (topologies/calibration/jean-zay-nccl.json) against the two
// public measurements on those nodes, bigscience-workshop/bigscience experiments/bandwidth/:
// n4_a100_all_reduce_bench.txt (commit 74c6c3d), a 4 GB fp32 all_reduce over 4 nodes x GPUs 0-3,
// NCCL 2.10.3, 2 ring channels both through one HFI (NET/IB/1), steady busbw 39.27-39.87 Gbit/s
// = 4.91-4.98 GB/s; all_reduce_bench-a100-n4.txt (358e3c8), the same over 4 nodes x 8 GPUs,
// 2 channels through two HFIs (NET/IB/1 in, NET/IB/3 out), 40.49-40.51 Gbit/s = 5.06 GB/s.
// The calibration caps each NCCL channel across nodes (channel_rate_limit, derived from the
// first log), so both come out at 2 channels' rate whichever HFIs carry them; the second log is
// the check. Without the cap the HFIs alone would let the ring run more than twice as fast.
// One SimGrid Engine per process: ctest runs each TEST in its own process.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include <simgrid/s4u/Engine.hpp>

#include "collective/collective_calibration.hpp"
#include "collective/collective_plan.hpp"
#include "collective/nccl_cost_model.hpp"
#include "exact_timing_engine.hpp"
#include "engine/fabric_rates.hpp"
#include "engine/platform_builder.hpp"
#include "engine/program_executor.hpp"
#include "program/program.hpp"
#include "topology/topology.hpp"

namespace trainsim::engine {
namespace {

using program::CollectiveCall;
using program::Program;
using program::StreamKind;
using program::Task;
using program::TaskKind;

constexpr Bytes kSize = 4e9;  // all_reduce_bench.py: N x M = 5e5 x 2000 fp32
constexpr int kNodes = 4, kPerNode = 4;

/// The simulated busbw within 3% of a measured span [lo, hi] (bytes/s).
void expect_near_measured(double busbw, double lo, double hi) {
  EXPECT_GT(busbw, lo * 0.97);
  EXPECT_LT(busbw, hi * 1.03);
}

class OpaRingEngineTest : public testing::Test {
protected:
  void start(bool with_nic_table, bool with_channel_cap = true) {
    if (!testing_support::first_engine_of_process()) GTEST_SKIP() << "one SimGrid Engine per process: run this test on its own";
    engine_ = make_exact_timing_engine("opa_ring_engine_test");
    topology_ = topology::load_topology("topologies/jean-zay-a100-80g-opa.json");
    cal_ = collective::load_collective_calibration(topology_.calibration_file);
    if (!with_nic_table) cal_.partial_node_ring_nic.clear();
    if (!with_channel_cap) cal_.inter_fabric.channel_rate_limit = 0;
    platform_ = build_platform(topology_, kNodes, 0, collective::ring_nics(cal_));
    rates_ = fabric_rates(topology_);
  }

  /// busbw (bytes/s) of the measured call: GPUs 0..per_node-1 of 4 eight-GPU nodes, one
  /// all_reduce.
  double simulated_busbw(int per_node = kPerNode) {
    Program p;
    std::vector<int> g;
    for (int node = 0; node < kNodes; ++node)
      for (int l = 0; l < per_node; ++l) g.push_back(node * 8 + l);
    p.collectives.push_back({"bench", collective::Op::all_reduce, kSize, g});
    for (int r = 0; r < kNodes * 8; ++r) {  // GPUs per_node-7 of each node idle
      program::RankProgram rp;
      rp.rank = r;
      if (r % 8 < per_node)
        rp.streams.push_back({"s", StreamKind::communication,
                              {Task{"c", TaskKind::collective, program::Phase::gradient_sync, 0, 0, {}}}});
      p.ranks.push_back(rp);
    }
    const auto r = execute_program(
        p, platform_,
        [&](const CollectiveCall& c) {
          return collective::plan_collective(c.op, c.size, c.group, collective::RankLayout{8}, cal_, rates_, {});
        },
        ExecuteOptions{});
    EXPECT_TRUE(r.completed);
    // all_reduce_bench.py's busbw: S / t x 2 (n - 1) / n.
    const int ranks = kNodes * per_node;
    return kSize / r.makespan * 2.0 * (ranks - 1) / ranks;
  }

  std::unique_ptr<simgrid::s4u::Engine> engine_;
  topology::Topology topology_;
  collective::CollectiveCalibration cal_;
  Platform platform_;
  collective::FabricRates rates_;
};

TEST_F(OpaRingEngineTest, FourByFourAllReduceMatchesTheMeasuredBusbw) {
  start(true);
  // 2 channels x 2.49 GB/s = 4.98 GB/s, less the latencies; hfi0 carries them at 40% of its
  // line rate. The measured steady trials span 4.91-4.98 GB/s; 3% either side of that span.
  expect_near_measured(simulated_busbw(), 4.91e9, 4.98e9);
}

TEST_F(OpaRingEngineTest, FourByEightAllReduceMatchesTheSecondLog) {
  start(true);
  // Whole nodes: every GPU's own HFI (the NIC table is for part-node groups), the logged 2
  // channels (channels.multi_node) at 2.49 GB/s each = 4.98 GB/s, 1.6% under the measured
  // 5.06 GB/s (40.49-40.51 Gbit/s); 3% either side of it.
  expect_near_measured(simulated_busbw(8), 5.061e9, 5.064e9);
}

TEST_F(OpaRingEngineTest, TheHfiChoiceDoesNotChangeTheCappedRing) {
  start(false);
  // Every GPU's own HFI: channels on hfi0 and hfi1 instead of both on hfi0. The channels, not
  // the HFIs, are the limit, so the busbw is the measured one still (the reason the
  // per-channel reading was chosen: the 4 x 8 log, on two HFIs, got the same ~5 GB/s).
  expect_near_measured(simulated_busbw(), 4.91e9, 4.98e9);
}

TEST_F(OpaRingEngineTest, WithoutTheChannelCapTheHfiAloneWouldRunMoreThanTwiceAsFast) {
  start(true, false);
  // Only hfi0's 12.5 GB/s x 0.96 would bind: the measurement rules this out, so the cap is
  // what brings the ring to the measured rate.
  const double busbw = simulated_busbw();
  EXPECT_GT(busbw, 2 * 4.98e9);
  EXPECT_LT(busbw, 12.5e9 * 0.96 * 1.01);
}

}  // namespace
}  // namespace trainsim::engine
