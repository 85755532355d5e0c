// Ring channels through a named NIC on SimGrid (topologies/dgx-a100-80g-ib.json, 2 nodes): the
// two data-parallel groups of tensor parallelism 2 run their all-reduces at once. Under NCCL
// 2.8.3's NIC choice (nccl-cost-dgx-a100.json partial_node_ring_nics) both put their 4 channels
// on hca0, 2, 4 and 6, so each of those carries two flows each way and the call takes twice the
// HCA time of one flow; with every GPU's own HCA (the rule left out) the groups do not meet.
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

constexpr Bytes kSize = 1 << 30;
constexpr double kHcaRate = 25e9;  // 200 Gb/s HDR, the topology's hca--uplink links

class RingNicEngineTest : public testing::Test {
protected:
  void start(bool with_rule) {
    if (!testing_support::first_engine_of_process()) GTEST_SKIP() << "one SimGrid Engine per process: run this test on its own";
    engine_ = make_exact_timing_engine("ring_nic_engine_test");
    topology_ = topology::load_topology("topologies/dgx-a100-80g-ib.json");
    cal_ = collective::load_collective_calibration(topology_.calibration_file);
    if (!with_rule) {
      auto m = *cal_.nccl_cost_model;
      m.partial_node_ring_nic.clear();
      cal_.nccl_cost_model = std::make_shared<const collective::NcclCostModel>(m);
    }
    platform_ = build_platform(topology_, 2, 0, collective::ring_nics(cal_));
    rates_ = fabric_rates(topology_);
  }

  /// TP 2's data-parallel groups: the even and the odd GPUs of both nodes, one call each, at once.
  Program two_groups() {
    Program p;
    for (int parity = 0; parity < 2; ++parity) {
      std::vector<int> g;
      for (int r = parity; r < 16; r += 2) g.push_back(r);
      p.collectives.push_back({"dp" + std::to_string(parity), collective::Op::all_reduce, kSize, g});
    }
    for (int r = 0; r < 16; ++r) {
      program::RankProgram rp;
      rp.rank = r;
      rp.streams.push_back({"s", StreamKind::communication,
                            {Task{"c", TaskKind::collective, program::Phase::gradient_sync, 0, r % 2, {}}}});
      p.ranks.push_back(rp);
    }
    return p;
  }

  collective::CollectivePlan plan(const CollectiveCall& c) {
    return collective::plan_collective(c.op, c.size, c.group, collective::RankLayout{8}, cal_, rates_,
                                       {collective::Algorithm::ring, collective::Protocol::simple});
  }

  /// One inter-node flow's bytes on the wire (all equal: 4 channels of X/4).
  Bytes inter_flow_bytes() {
    const auto p = plan(two_groups().collectives[0]);
    for (const auto& f : p.phases.at(0).flows)
      if (f.src / 8 != f.dst / 8) return f.bytes;
    return 0;
  }

  std::unique_ptr<simgrid::s4u::Engine> engine_;
  topology::Topology topology_;
  collective::CollectiveCalibration cal_;
  Platform platform_;
  collective::FabricRates rates_;
};

TEST_F(RingNicEngineTest, TwoGroupsShareTheEvenHcasAndTakeTwiceTheHcaTime) {
  start(true);
  const Bytes b = inter_flow_bytes();
  ASSERT_GT(b, 0);
  // X = 2 (16/2 - 1) / 8 S = 1.75 GiB per rank, X/4 per channel across nodes, over an efficiency.
  const Seconds shared = 2 * b / kHcaRate;  // two flows on each of hca0, 2, 4, 6
  const auto r = execute_program(two_groups(), platform_, [&](const CollectiveCall& c) { return plan(c); },
                                 ExecuteOptions{});
  ASSERT_TRUE(r.completed);
  // Latency (analytic, well under a millisecond) comes on top of the HCA time.
  EXPECT_GT(r.makespan, shared);
  EXPECT_LT(r.makespan, shared + 1e-3);
}

TEST_F(RingNicEngineTest, WithEveryGpusOwnHcaTheGroupsDoNotMeet) {
  start(false);
  const Bytes b = inter_flow_bytes();
  ASSERT_GT(b, 0);
  const Seconds alone = b / kHcaRate;  // one flow on each of the 8 HCAs
  const auto r = execute_program(two_groups(), platform_, [&](const CollectiveCall& c) { return plan(c); },
                                 ExecuteOptions{});
  ASSERT_TRUE(r.completed);
  EXPECT_GT(r.makespan, alone);
  EXPECT_LT(r.makespan, alone + 1e-3);
}

}  // namespace
}  // namespace trainsim::engine
