// NCCL over Omni-Path on Jean Zay (topologies/calibration/jean-zay-nccl.json) against the one
// public measurement on those nodes: bigscience-workshop/bigscience
// experiments/bandwidth/n4_a100_all_reduce_bench.txt (commit 74c6c3d), a 4 GB fp32 all_reduce
// over 4 nodes x GPUs 0-3, NCCL 2.10.3, both ring channels through one HFI (NET/IB/1), steady
// busbw 39.27-39.87 Gbit/s = 4.91-4.98 GB/s. The same group is simulated on SimGrid with the
// calibration's NIC table; without it (every GPU's own HFI) the ring spreads over two HFIs and
// runs twice as fast, which the measurement rules out.
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
constexpr int kNodes = 4, kPerNode = 4, kRanks = kNodes * kPerNode;

class OpaRingEngineTest : public testing::Test {
protected:
  void start(bool with_nic_table) {
    if (!testing_support::first_engine_of_process()) GTEST_SKIP() << "one SimGrid Engine per process: run this test on its own";
    engine_ = testing_support::make_exact_timing_engine("opa_ring_engine_test");
    topology_ = topology::load_topology("topologies/jean-zay-a100-80g-opa.json");
    cal_ = collective::load_collective_calibration(topology_.calibration_file);
    if (!with_nic_table) cal_.partial_node_ring_nic.clear();
    platform_ = build_platform(topology_, kNodes, 0, collective::ring_nics(cal_));
    rates_ = fabric_rates(topology_);
  }

  /// busbw (bytes/s) of the measured call: GPUs 0-3 of 4 eight-GPU nodes, one all_reduce.
  double simulated_busbw() {
    Program p;
    std::vector<int> g;
    for (int node = 0; node < kNodes; ++node)
      for (int l = 0; l < kPerNode; ++l) g.push_back(node * 8 + l);
    p.collectives.push_back({"bench", collective::Op::all_reduce, kSize, g});
    for (int r = 0; r < kNodes * 8; ++r) {  // GPUs 4-7 of each node idle
      program::RankProgram rp;
      rp.rank = r;
      if (r % 8 < kPerNode)
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
    return kSize / r.makespan * 2.0 * (kRanks - 1) / kRanks;
  }

  std::unique_ptr<simgrid::s4u::Engine> engine_;
  topology::Topology topology_;
  collective::CollectiveCalibration cal_;
  Platform platform_;
  collective::FabricRates rates_;
};

TEST_F(OpaRingEngineTest, FourByFourAllReduceMatchesTheMeasuredBusbw) {
  start(true);
  // Every channel on hfi0: busbw = its 12.5 GB/s x 0.399 = 4.99 GB/s, less the latencies.
  // The measured steady trials span 4.91-4.98 GB/s; 3% either side of that span.
  const double busbw = simulated_busbw();
  EXPECT_GT(busbw, 4.91e9 * 0.97);
  EXPECT_LT(busbw, 4.98e9 * 1.03);
}

TEST_F(OpaRingEngineTest, WithEveryGpusOwnHfiTheRingRunsTwiceAsFast) {
  start(false);
  // GPUs 0-3 sit on pcie_switch0 and 1: channels on hfi0 and hfi1, 2 x 4.99 GB/s.
  const double busbw = simulated_busbw();
  EXPECT_GT(busbw, 2 * 4.98e9 * 0.97);
  EXPECT_LT(busbw, 2 * 4.98e9 * 1.03);
}

}  // namespace
}  // namespace trainsim::engine
