// Programs run on a SimGrid platform built from topologies/dl1.24xlarge.json (engine/). SimGrid
// allows one Engine per process: ctest runs each TEST in its own process, and a test that finds
// an Engine already made in its process (the binary run by hand) skips instead of crashing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <simgrid/s4u/Engine.hpp>

#include "collective/collective_calibration.hpp"
#include "core/error.hpp"
#include "collective/collective_plan.hpp"
#include "exact_timing_engine.hpp"
#include "engine/platform_builder.hpp"
#include "engine/program_executor.hpp"
#include "program/build_program.hpp"
#include "program/program.hpp"
#include "support/fixtures.hpp"
#include "topology/topology.hpp"

namespace trainsim::engine {
namespace {

using collective::CollectivePlan;
using program::CollectiveCall;
using program::Phase;
using program::Program;
using program::RankProgram;
using program::StreamKind;
using program::Task;
using program::TaskKind;

constexpr double kEfaPort = 100e9 / 8;  // efaK--uplink, the narrowest link on the way out: B/s
constexpr double kRoceLink = 100e9 / 8;  // one link of the hpu mesh, per direction: B/s

class EngineTest : public testing::Test {
protected:
  void SetUp() override {
    if (!testing_support::first_engine_of_process()) GTEST_SKIP() << "one SimGrid Engine per process: run this test on its own "
                                     "(--gtest_filter), as ctest does";
    engine_ = make_exact_timing_engine("engine_test");
    topology_ = topology::load_topology("topologies/dl1.24xlarge.json");
    platform_ = build_platform(topology_, 2, hbm_link_);
  }

  ExecutionResult run(const Program& p,
                      const std::function<CollectivePlan(const CollectiveCall&)>& plan) {
    ExecuteOptions o{true, fold_, sm_count_};
    o.held_sm_slowdown = held_sm_slowdown_;
    o.device_memory = device_memory_;
    o.retry_fixed = retry_fixed_;
    o.allocate_at_host_issue = host_issue_;
    return execute_program(p, platform_, plan, o);
  }

  bool fold_ = true;
  int sm_count_ = 0;  ///< SMs per accelerator for SM sharing; 0 = off
  model::HeldSmSlowdown held_sm_slowdown_{};  ///< measured slowdown beside held SMs; empty: their share
  BytesPerSecond hbm_link_ = 0;  ///< HBM link per accelerator (link units/s), set before SetUp; 0 = none
  Bytes device_memory_ = 0;  ///< for the caching allocator; 0 = not followed
  Seconds retry_fixed_ = 0;
  bool host_issue_ = false;  ///< the allocator at the host's issue (ExecuteOptions::allocate_at_host_issue)
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  topology::Topology topology_;
  Platform platform_;
};

Task compute(const std::string& name, Seconds d) {
  return {name, TaskKind::compute, Phase::forward, d, -1, {}};
}

Task collective_task(int c) {
  return {"collective " + std::to_string(c), TaskKind::collective, Phase::gradient_sync, 0, c, {}};
}

/// Ranks 0..n-1, each with one stream of the given tasks.
Program one_stream_each(int n, const std::vector<Task>& tasks) {
  Program p;
  for (int r = 0; r < n; ++r) {
    RankProgram rp;
    rp.rank = r;
    rp.streams.push_back({"s", StreamKind::communication, tasks});
    p.ranks.push_back(rp);
  }
  return p;
}

CollectivePlan no_plan(const CollectiveCall&) { return {}; }

TEST_F(EngineTest, PlatformHasTwoNodesOfEight) {
  EXPECT_EQ(platform_.nodes, 2);
  EXPECT_EQ(platform_.ranks_per_node, 8);
  EXPECT_EQ(platform_.rank_host.size(), 16u);
  EXPECT_NEAR(platform_.route_latency(0, 5), 1e-6, 1e-15);  // one mesh link
  // hpu0 -> uplink (2+2+1 us) on both sides and the fabric's 10 us.
  EXPECT_NEAR(platform_.route_latency(0, 8), 5e-6 + 10e-6 + 5e-6, 1e-15);
}

TEST_F(EngineTest, SingleComputeTask) {
  const ExecutionResult r = run(one_stream_each(1, {compute("c", 1.5)}), no_plan);
  EXPECT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 1.5, 1e-9 * 1.5);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_DOUBLE_EQ(r.records[0].start, 0.0);
  EXPECT_NEAR(r.records[0].end, 1.5, 1e-9 * 1.5);
}

TEST_F(EngineTest, ATaskWaitsForItsDependencyOnAnotherStream) {
  Program p = one_stream_each(1, {compute("a", 1.0)});
  Task waits = compute("b", 0.5);
  waits.deps = {{0, 0}};  // b, on stream 1, waits for a, on stream 0
  p.ranks[0].streams.push_back({"other", StreamKind::compute, {waits}});
  const ExecutionResult r = run(p, no_plan);
  EXPECT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 1.0 + 0.5, 1e-9);
}

TEST_F(EngineTest, ComputeStreamsOfOneRankShareItsAccelerator) {
  // Both streams' Execs run on the rank's one host, so two 1 s tasks at once end at 2 s.
  Program p = one_stream_each(1, {compute("a", 1.0)});
  p.ranks[0].streams.push_back({"other", StreamKind::compute, {compute("b", 1.0)}});
  const ExecutionResult r = run(p, no_plan);
  EXPECT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 2.0, 1e-9);
}

TEST_F(EngineTest, AHostTaskDelaysWhatWaitsForItButUsesNoDevice) {
  // 1 s of host work beside 1 s of compute: both end at 1 s (no sharing of the accelerator); the
  // task after the host's work starts at 1 s.
  Program p = one_stream_each(1, {compute("a", 1.0)});
  Task after = compute("b", 0.5);
  after.deps = {{1, 0}};
  Task h = compute("h", 1.0);
  h.kind = TaskKind::host;
  p.ranks[0].streams.push_back({"host", StreamKind::host, {h}});
  p.ranks[0].streams.push_back({"other", StreamKind::compute, {after}});
  const ExecutionResult r = run(p, no_plan);
  EXPECT_TRUE(r.completed);
  ASSERT_EQ(r.records.size(), 3u);
  for (const auto& rec : r.records)
    if (rec.stream < 2) { EXPECT_NEAR(rec.end, 1.0, 1e-9); }
  // b shares the accelerator with nothing: 0.5 s after the host's 1 s.
  EXPECT_NEAR(r.makespan, 1.5, 1e-9);
}

// Host dispatch: the rank's host thread issues each kernel at Program::host_per_kernel.
Task issued(const std::string& name, Seconds d, int kernels) {
  Task t = compute(name, d);
  t.kernels = kernels;
  return t;
}

TEST_F(EngineTest, HostBoundTasksRunAtTheHostsIssueRate) {
  // 10 kernels of 10 us each (100 us of device time) per task, issued at 50 us each: the device
  // starts after the first issue (50 us) and the last kernel after the last issue (500 us).
  Program p = one_stream_each(1, {issued("a", 100e-6, 10), issued("b", 100e-6, 10)});
  p.host_per_kernel = 50e-6;
  const ExecutionResult r = run(p, no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 20 * 50e-6 + 10e-6, 1e-9);
}

TEST_F(EngineTest, ATasksOwnHostCostPerKernelReplacesTheProgramsForItsKernels) {
  // a's 10 kernels at its own 20 us (a loop of bare tensor calls), b's at the program's 50 us:
  // a's last issue at 200 us and its last kernel 10 us after, b's issue then runs to 700 us.
  Program p = one_stream_each(1, {issued("a", 100e-6, 10), issued("b", 100e-6, 10)});
  p.ranks[0].streams[0].tasks[0].host_per_kernel = 20e-6;
  p.host_per_kernel = 50e-6;
  const ExecutionResult r = run(p, no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 10 * 20e-6 + 10 * 50e-6 + 10e-6, 1e-9);
}

TEST_F(EngineTest, WithoutAHostCostTasksTakeTheirDeviceTime) {
  Program p = one_stream_each(1, {issued("a", 100e-6, 10), issued("b", 100e-6, 10)});
  const ExecutionResult r = run(p, no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 200e-6, 1e-9);
}

TEST_F(EngineTest, ComposersMetricSyncLengthensTheStepByItsHostTimeAfterTheDeviceDrains) {
  // The sharded schedule's program of one FSDP rank with Composer's metric sync (host dispatch
  // on): the host task starts when the last device task ends (nothing else runs then) and the
  // step ends 2 metrics x 2 states x 2 calls x 1 rank x 1 ms = 8 ms after it.
  program::ScheduleInputs in;
  in.model = {"tiny", 2, 64, 4, 256, 100, 16, false};
  in.plan.sharding = plan::Sharding::fsdp;
  in.plan.micro_batch = 2;
  ASSERT_TRUE(plan::precision_recipe("fsdp_mixed", in.plan.precision));
  in.layout = plan::layout_of(in.plan, 1, 1);
  in.device = ::trainsim::testing_support::round_number_device();
  in.device.eager_kernel_issue = 50e-6;
  in.device.eager_copy_call = 1e-3;
  in.plan.host_dispatch = true;
  in.plan.composer_train_metrics = 2;
  in.plan.composer_metric_sync = true;
  in.stages = {{1000, 100, 10}};
  const Program p = program::build_program(in);
  ASSERT_GT(p.host_per_kernel, 0);
  const int host_stream = static_cast<int>(p.ranks[0].streams.size()) - 1;
  ASSERT_EQ(p.ranks[0].streams[static_cast<std::size_t>(host_stream)].kind, StreamKind::host);
  const ExecutionResult r = run(p, no_plan);
  ASSERT_TRUE(r.completed);
  Seconds device_end = 0, host_start = -1, host_end = -1;
  for (const auto& rec : r.records) {
    if (rec.stream == host_stream) {
      host_start = rec.start;
      host_end = rec.end;
    } else {
      device_end = std::max(device_end, rec.end);
    }
  }
  ASSERT_GE(host_start, 0);
  EXPECT_GT(device_end, 0);
  EXPECT_NEAR(host_start, device_end, 1e-12);
  EXPECT_NEAR(host_end - host_start, 2 * 2 * 2 * 1 * 1e-3, 1e-12);
  EXPECT_NEAR(r.makespan, device_end + 8e-3, 1e-12);
}

TEST_F(EngineTest, GpuBoundTasksHideTheHostAfterTheFirstKernel) {
  // 10 kernels of 1 ms each, issued at 50 us: the host runs ahead; only the first issue shows.
  Program p = one_stream_each(1, {issued("a", 10e-3, 10), issued("b", 10e-3, 10)});
  p.host_per_kernel = 50e-6;
  const ExecutionResult r = run(p, no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 50e-6 + 20e-3, 1e-9);
}

TEST_F(EngineTest, WithoutAHostSyncTheHostIssuedAheadOfAStreamWait) {
  // b (stream 0) waits for a 1 ms task on stream 1: the host issued b's two kernels meanwhile.
  Program p = one_stream_each(1, {issued("b", 1e-3, 2)});
  p.ranks[0].streams[0].tasks[0].deps = {{1, 0}};
  p.ranks[0].streams.push_back({"other", StreamKind::compute, {compute("a", 1e-3)}});
  p.host_per_kernel = 50e-6;
  const ExecutionResult r = run(p, no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 2e-3, 1e-9);
}

TEST_F(EngineTest, AHostSyncRestartsTheIssueAtTheDependencysEnd) {
  // The same with a host sync: the host starts issuing b when a ends; b's first kernel 50 us later.
  Program p = one_stream_each(1, {issued("b", 1e-3, 2)});
  p.ranks[0].streams[0].tasks[0].deps = {{1, 0}};
  p.ranks[0].streams[0].tasks[0].host_sync = true;
  p.ranks[0].streams.push_back({"other", StreamKind::compute, {compute("a", 1e-3)}});
  p.host_per_kernel = 50e-6;
  const ExecutionResult r = run(p, no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 1e-3 + 50e-6 + 1e-3, 1e-9);
}

TEST_F(EngineTest, BlockingLaunchesSerialiseEveryKernelWithItsIssue) {
  // CUDA_LAUNCH_BLOCKING: 10 kernels of 1 ms per task, issued at 50 us each, and the host
  // waits for each: 2 x (10 x 50 us + 10 ms) = 21 ms where the host ran ahead in 20.05 ms.
  Program p = one_stream_each(1, {issued("a", 10e-3, 10), issued("b", 10e-3, 10)});
  p.host_per_kernel = 50e-6;
  p.launch_blocking = true;
  const ExecutionResult r = run(p, no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 2 * (10 * 50e-6 + 10e-3), 1e-9);
}

TEST_F(EngineTest, BlockingLaunchesHoldTheHostAcrossStreams) {
  // a and b on two streams of one rank, independent: with blocking launches the host issues b
  // only once a has ended, so b ends at 2 x (2 x 50 us + 1 ms) = 2.2 ms.
  Program p = one_stream_each(1, {issued("a", 1e-3, 2)});
  p.ranks[0].streams.push_back({"other", StreamKind::compute, {issued("b", 1e-3, 2)}});
  p.host_per_kernel = 50e-6;
  p.launch_blocking = true;
  const ExecutionResult r = run(p, no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 2 * (2 * 50e-6 + 1e-3), 1e-9);
}

TEST_F(EngineTest, ABlockingCollectiveLaunchHoldsTheHostUntilItCompletes) {
  // Rank 0: a (1 ms, 2 kernels), the all-reduce with rank 1, then b (1 ms, 2 kernels); rank 1
  // reaches the all-reduce after 3 ms of work. Rank 1 calls it at 3 ms + 13 us (its launch);
  // the call takes no time (no plan), so rank 0's host returns at 3.013 ms and b's two issues
  // and its 1 ms follow: 3.013 + 0.1 + 1 = 4.113 ms (run ahead, b was issued during the wait
  // and ended 1 ms after the call, at 4 ms: engine_test runs one simulation per test).
  auto program = [](bool blocking) {
    Program p = one_stream_each(1, {issued("a", 1e-3, 2), collective_task(0), issued("b", 1e-3, 2)});
    RankProgram other;
    other.rank = 1;
    other.streams.push_back({"s", StreamKind::compute, {compute("busy", 3e-3), collective_task(0)}});
    p.ranks.push_back(other);
    p.collectives = {{"ar", collective::Op::all_reduce, 1e6, {0, 1}}};
    p.host_per_kernel = 50e-6;
    p.launch_blocking = blocking;
    p.collective_launch = blocking ? 13e-6 : 0;
    return p;
  };
  const ExecutionResult blocked = run(program(true), no_plan);
  ASSERT_TRUE(blocked.completed);
  EXPECT_NEAR(blocked.makespan, 3e-3 + 13e-6 + 2 * 50e-6 + 1e-3, 1e-9);
}

TEST_F(EngineTest, IntraNodeAllReduceMatchesThePlanByHand) {
  const auto cal = collective::load_collective_calibration(topology_.calibration_file);
  ASSERT_EQ(cal.intra_node.algorithm, collective::Algorithm::direct)
      << "the expectation below is written for the direct algorithm";
  const double eff = cal.intra_node.bandwidth_efficiency;
  const Seconds step = cal.intra_node.step_latency;
  const Bytes s = 80e6;

  Program p = one_stream_each(8, {collective_task(0)});
  p.collectives = {{"all_reduce", collective::Op::all_reduce, s, {0, 1, 2, 3, 4, 5, 6, 7}}};
  const ExecutionResult r = run(p, [&](const CollectiveCall& c) {
    return collective::plan_collective(c.op, c.size, c.group, collective::RankLayout{8}, cal,
                                           collective::FabricRates{});
  });
  ASSERT_TRUE(r.completed);
  // Direct all-reduce: each of the 56 ordered pairs has its own mesh link direction and sends
  // 2 x S/8 / efficiency bytes at the RoCE link rate, then 2 steps of (step latency + 1 us link).
  const Seconds expected = (2 * s / 8 / eff) / kRoceLink + 2 * (step + 1e-6);
  EXPECT_NEAR(r.makespan, expected, 1e-6 * expected);
  ASSERT_EQ(r.records.size(), 8u);
  for (const auto& rec : r.records) EXPECT_NEAR(rec.end, expected, 1e-6 * expected);
}

TEST_F(EngineTest, FlowsSharingAnEfaPortTakeTwiceAsLong) {
  const Bytes b = 1e9;
  auto one_phase = [](std::vector<collective::Flow> flows) {
    collective::Phase ph;
    ph.flows = std::move(flows);
    CollectivePlan plan;
    plan.phases.push_back(std::move(ph));
    return plan;
  };
  // Ranks 0, 1 and 2 run three hand-planned "collectives" one after another (each member starts
  // the flows it sends): hpu0 -> node 1 alone; hpu0 and hpu1 at once, which both leave through
  // pcie_switch0 and efa0; hpu0 and hpu2 at once, through efa0 and efa1, separate ports that the
  // 400 Gbps node uplink carries together.
  const std::vector<CollectivePlan> plans = {one_phase({{0, 8, b}}),
                                             one_phase({{0, 8, b}, {1, 9, b}}),
                                             one_phase({{0, 8, b}, {2, 10, b}})};
  Program p = one_stream_each(3, {collective_task(0), collective_task(1), collective_task(2)});
  for (int c = 0; c < 3; ++c)
    // Distinct sizes: calls alike in op, size and group are planned once (they are the same call).
    p.collectives.push_back({"flows " + std::to_string(c), collective::Op::all_reduce, b + c, {0, 1, 2}});
  std::size_t asked = 0;  // execute_program asks for each distinct call's plan once, in order
  const ExecutionResult r = run(p, [&](const CollectiveCall&) { return plans.at(asked++); });
  ASSERT_TRUE(r.completed);
  std::vector<Seconds> took(3);
  for (const auto& rec : r.records)
    if (rec.rank == 0) took.at(static_cast<std::size_t>(rec.index)) = rec.end - rec.start;
  const Seconds one = b / kEfaPort;  // 80 ms
  EXPECT_NEAR(took[0], one, 1e-6 * one);
  EXPECT_NEAR(took[1], 2 * one, 1e-6 * one);  // max-min sharing halves each flow's rate
  EXPECT_NEAR(took[2], one, 1e-6 * one);
}

/// One hand-planned phase: rank r sends `bytes(r)` to rank r + 1 around a ring of `n`.
CollectivePlan ring_of(int n, const std::function<Bytes(int)>& bytes) {
  collective::Phase ph;
  for (int r = 0; r < n; ++r) ph.flows.push_back({r, (r + 1) % n, bytes(r)});
  CollectivePlan plan;
  plan.phases.push_back(std::move(ph));
  return plan;
}

// One collective task on each of 16 ranks: an all-gather of `bytes` over all of them.
Program sixteen_rank_all_gather(Bytes bytes) {
  Program p = one_stream_each(16, {collective_task(0)});
  std::vector<int> all(16);
  for (int r = 0; r < 16; ++r) all[static_cast<std::size_t>(r)] = r;
  p.collectives = {{"ring", collective::Op::all_gather, bytes, all}};
  return p;
}

TEST_F(EngineTest, TwinFlowsOfAFoldedRingAreNotSent) {
  // One class of 16 ranks on two nodes, a ring of 1 GB per hop: 14 hops on mesh links of their
  // own, 7 -> 8 and 15 -> 0 across the fabric on separate directions. Only the hops touching the
  // representative (rank 0) are sent; each other hop is a twin of one of them, on links nothing
  // else uses, so it ends at the same time.
  const Bytes b = 1e9;
  const Program p = sixteen_rank_all_gather(b);
  const ExecutionResult r = run(p, [&](const CollectiveCall&) { return ring_of(16, [&](int) { return b; }); });
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.classes, 1);
  EXPECT_EQ(r.flows, 2u);  // 0 -> 1 and 15 -> 0
  // Every hop takes 1 GB over a 12.5 GB/s link (mesh link or EFA port; the platform's links
  // carry no latency, the plan's phases add it, and this one has none).
  const Seconds expected = b / kEfaPort;
  EXPECT_NEAR(r.makespan, expected, 1e-9 * expected);
}

TEST_F(EngineTest, TwinFlowsOfAnUnfoldedRingAreAllSent) {
  fold_ = false;
  const Bytes b = 1e9;
  const Program p = sixteen_rank_all_gather(b);
  const ExecutionResult r = run(p, [&](const CollectiveCall&) { return ring_of(16, [&](int) { return b; }); });
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.flows, 16u);
  const Seconds expected = b / kEfaPort;
  EXPECT_NEAR(r.makespan, expected, 1e-9 * expected);
}

TEST_F(EngineTest, AFlowUnlikeEveryKeptOneIsSent) {
  // Hop 3 -> 4 carries twice the bytes: no kept hop is its twin, so it is sent, and the ring
  // ends with it (2 GB on one 12.5 GB/s mesh link).
  const Bytes b = 1e9;
  const Program p = sixteen_rank_all_gather(b);
  const ExecutionResult r = run(p, [&](const CollectiveCall&) {
    return ring_of(16, [&](int src) { return src == 3 ? 2 * b : b; });
  });
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.flows, 3u);
  const Seconds expected = 2 * b / kRoceLink;
  EXPECT_NEAR(r.makespan, expected, 1e-9 * expected);
}

TEST_F(EngineTest, UnreachedCollectiveIsADeadlockNotAHang) {
  alarm(60);  // a hang kills the test instead of stalling ctest
  // Collective 0's group is {0, 1} but only rank 0 issues it.
  Program p = one_stream_each(1, {compute("before", 0.5), collective_task(0), compute("after", 1)});
  RankProgram other;
  other.rank = 1;
  other.streams.push_back({"s", StreamKind::compute, {compute("busy", 2.0)}});
  p.ranks.push_back(other);
  p.collectives = {{"never", collective::Op::all_reduce, 1e6, {0, 1}}};
  const ExecutionResult r = run(p, no_plan);
  alarm(0);
  EXPECT_FALSE(r.completed);
  EXPECT_NEAR(r.makespan, 2.0, 1e-9);  // rank 1's task still ran
  EXPECT_EQ(r.records.size(), 2u);     // "before" and "busy"; "after" never ran
}

// Host copies (activation offloading): hpuK -> pcie_switch(K/2) -> cpu, both PCIe Gen3 x16 at
// 15.75 GB/s per direction in topologies/dl1.24xlarge.json, 2 + 2 us.
constexpr double kPcie = 15.75e9;
constexpr Seconds kCpuLatency = 4e-6;

Task host_copy(Bytes b, program::CopyDirection dir) {
  Task t{"copy", TaskKind::host_copy, Phase::offload, 0, -1, {}};
  t.copy_bytes = b;
  t.copy_direction = dir;
  return t;
}

constexpr Bytes kMiB = 1 << 20;

/// One rank: a gather stream (1) allocates 100 MiB for 1 s; the compute stream (0) uses it for
/// 1 s and frees it into the gather stream's pool, then runs 1 s with a 100 MiB workspace from
/// `workspace_pool` (-1: its own).
Program borrowed_then_workspace(int workspace_pool, Bytes workspace = 100 * kMiB) {
  Task g = compute("gather", 1.0);
  g.alloc = 100 * kMiB;
  Task f = compute("forward", 1.0);
  f.deps = {{1, 0}};
  f.release_borrowed = 100 * kMiB;
  f.borrowed_pool = 1;
  Task b = compute("backward", 1.0);
  b.workspace = workspace;
  b.alloc_pool = static_cast<std::int8_t>(workspace_pool);
  Program p = one_stream_each(1, {f, b});
  p.ranks[0].streams.push_back({"gather", StreamKind::communication, {g}});
  return p;
}

TEST_F(EngineTest, AnotherStreamsCachedBlockDoesNotServeAWorkspace) {
  device_memory_ = 1024 * kMiB;
  const ExecutionResult r = run(borrowed_then_workspace(-1), no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_DOUBLE_EQ(r.peak_memory[0], 100 * kMiB);     // allocated: one buffer at a time
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 200 * kMiB);   // the gather's block stays in its pool
  EXPECT_EQ(r.allocator_retries[0], 0);
}

TEST_F(EngineTest, TheSameStreamsCachedBlockServesAWorkspace) {
  device_memory_ = 1024 * kMiB;
  const ExecutionResult r = run(borrowed_then_workspace(1), no_plan);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 100 * kMiB);
}

TEST_F(EngineTest, AWorkspaceIsServedBeforeTheTasksAllocation) {
  // A backward's recomputed activations exist before the gradient it allocates: the cached
  // 100 MiB block serves the workspace again, and the 10 MiB gradient takes a segment of its own
  // (served first, the gradient would split that block and the workspace need a new one: 200 MiB).
  device_memory_ = 1024 * kMiB;
  Task first = compute("backward 1", 1.0);
  first.workspace = 100 * kMiB;
  Task second = compute("backward 0", 1.0);
  second.workspace = 100 * kMiB;
  second.alloc = 10 * kMiB;
  const ExecutionResult r = run(one_stream_each(1, {first, second}), no_plan);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 110 * kMiB);
}

TEST_F(EngineTest, ARetryStallsTheStreamThatHitIt) {
  // 150 MiB: the workspace's 100 MiB fit only once the gather's cached block is freed (a retry),
  // which costs 0.25 s before the backward runs.
  device_memory_ = 150 * kMiB;
  retry_fixed_ = 0.25;
  const ExecutionResult r = run(borrowed_then_workspace(-1), no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.allocator_retries[0], 1);
  EXPECT_FALSE(r.allocator_out_of_memory[0]);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 100 * kMiB);
  EXPECT_NEAR(r.makespan, 3.0 + 0.25, 1e-9);
}

TEST_F(EngineTest, ARequestThatFitsNotEvenAfterARetryIsOutOfMemory) {
  device_memory_ = 150 * kMiB;
  const ExecutionResult r = run(borrowed_then_workspace(-1, 200 * kMiB), no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_TRUE(r.allocator_out_of_memory[0]);
  EXPECT_NEAR(r.makespan, 3.0, 1e-9);  // without stalls the step runs on, flagged
}

// The allocator at the host's issue (ExecuteOptions::allocate_at_host_issue): the host issues a
// kernel every 50 us and each task runs 1 s, so it is far ahead of the device.
constexpr Seconds kIssue = 50e-6;

/// One compute stream of two 1-kernel tasks, each with a 100 MiB workspace from `pool` (-1: its
/// own stream's; 1: a second stream's, so held until the device is done with it).
Program two_workspaces(int pool) {
  Task a = issued("a", 1.0, 1);
  a.workspace = 100 * kMiB;
  a.alloc_pool = static_cast<std::int8_t>(pool);
  Task b = a;
  b.name = "b";
  Program p = one_stream_each(1, {a, b});
  p.ranks[0].streams.push_back({"other", StreamKind::communication, {}});
  p.host_per_kernel = kIssue;
  p.host_bounds_modelled = true;
  return p;
}

TEST_F(EngineTest, AtDeviceTimeTheNextTaskReusesAnotherStreamsBlock) {
  device_memory_ = 1024 * kMiB;
  const ExecutionResult r = run(two_workspaces(1), no_plan);
  EXPECT_FALSE(r.allocated_at_host_issue);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 100 * kMiB);
}

TEST_F(EngineTest, AHostAheadAllocatesTheNextBlockWhileTheDeviceStillUsesTheFirst) {
  // b is issued 50 us in, while a runs: a's block, another stream's, is not back in its pool.
  device_memory_ = 1024 * kMiB;
  host_issue_ = true;
  const ExecutionResult r = run(two_workspaces(1), no_plan);
  EXPECT_TRUE(r.allocated_at_host_issue);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 200 * kMiB);
  EXPECT_EQ(r.allocator_retries[0], 0);
  EXPECT_NEAR(r.makespan, 2.0 + kIssue, 1e-9);
}

TEST_F(EngineTest, AHostAheadNearTheLimitRetriesAndTheRetryLengthensTheStep) {
  // With room for one block, b's request frees nothing cached but waits for a (the retry's
  // synchronize), then reuses a's block.
  device_memory_ = 150 * kMiB;
  retry_fixed_ = 0.25;
  host_issue_ = true;
  const ExecutionResult r = run(two_workspaces(1), no_plan);
  EXPECT_EQ(r.allocator_retries[0], 1);
  EXPECT_FALSE(r.allocator_out_of_memory[0]);
  EXPECT_NEAR(r.makespan, 2.0 + kIssue + 0.25, 1e-9);
}

TEST_F(EngineTest, AHostAheadReusesItsOwnStreamsBlockAtOnce) {
  // Freed into its own stream's pool when the host has issued a: stream order makes it safe.
  device_memory_ = 1024 * kMiB;
  host_issue_ = true;
  const ExecutionResult r = run(two_workspaces(-1), no_plan);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 100 * kMiB);
}

TEST_F(EngineTest, WithoutAHostModelTheAllocatorFollowsTheDevice) {
  device_memory_ = 1024 * kMiB;
  host_issue_ = true;
  Program p = two_workspaces(1);
  p.host_per_kernel = 0;
  const ExecutionResult r = run(p, no_plan);
  EXPECT_FALSE(r.allocated_at_host_issue);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 100 * kMiB);
}

TEST_F(EngineTest, WithoutTheFrameworksHostBoundsTheAllocatorFollowsTheDevice) {
  device_memory_ = 1024 * kMiB;
  host_issue_ = true;
  Program p = two_workspaces(1);
  p.host_bounds_modelled = false;
  const ExecutionResult r = run(p, no_plan);
  EXPECT_FALSE(r.allocated_at_host_issue);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 100 * kMiB);
}

/// A micro-batch's activations, then Composer's metric workspace (program/activation_allocations.hpp):
/// the forward keeps four 20 MiB tensors, the backward frees them, the metric update asks for
/// 40 MiB. `tensors`: one request per tensor (allocation sequences); else one 80 MiB block.
Program activations_then_metric(bool tensors) {
  using program::AllocationStep;
  Task f = issued("forward", 1.0, 1);
  f.alloc = 80 * kMiB;
  Task b = issued("backward", 1.0, 1);
  b.release = 80 * kMiB;
  Task m = issued("metric", 1.0, 1);
  m.workspace = 40 * kMiB;
  Program p = one_stream_each(1, {f, b, m});
  p.host_per_kernel = kIssue;
  p.host_bounds_modelled = true;
  if (tensors) {
    program::AllocationSequence keep, free, metric;
    for (int i = 0; i < 4; ++i) {
      keep.steps.push_back({AllocationStep::keep, 20 * kMiB, -1});
      free.steps.push_back({AllocationStep::free_kept, 20 * kMiB, -1});
    }
    metric.steps = {{AllocationStep::transient, 40 * kMiB, 0}, {AllocationStep::free_transient, 0, 0}};
    p.allocation_sequences = {keep, free, metric};
    auto& tasks = p.ranks[0].streams[0].tasks;
    for (std::size_t i = 0; i < 3; ++i) tasks[i].allocations = static_cast<std::int16_t>(i);
  }
  program::validate(p);
  return p;
}

TEST_F(EngineTest, OneBlockOfActivationsServesALaterLargerRequest) {
  device_memory_ = 100 * kMiB;
  host_issue_ = true;
  const ExecutionResult r = run(activations_then_metric(false), no_plan);
  ASSERT_TRUE(r.allocated_at_host_issue);
  EXPECT_EQ(r.allocator_retries[0], 0);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 80 * kMiB);
}

TEST_F(EngineTest, PerTensorActivationsMakeALaterLargerRequestRetryAtTheHostsIssue) {
  // Four cached 20 MiB segments, none large enough; 80 + 40 > 100 MiB: free them and retry.
  device_memory_ = 100 * kMiB;
  host_issue_ = true;
  retry_fixed_ = 0.25;
  const ExecutionResult r = run(activations_then_metric(true), no_plan);
  ASSERT_TRUE(r.allocated_at_host_issue);
  EXPECT_EQ(r.allocator_retries[0], 1);
  EXPECT_FALSE(r.allocator_out_of_memory[0]);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 80 * kMiB);
  EXPECT_DOUBLE_EQ(r.peak_memory[0], 80 * kMiB);  // the allocated counter follows the totals
  EXPECT_NEAR(r.makespan, 3.0 + kIssue + 0.25, 1e-9);
}

TEST_F(EngineTest, PerTensorActivationsMakeALaterLargerRequestRetryAtDeviceTime) {
  device_memory_ = 100 * kMiB;
  Program p = activations_then_metric(true);
  p.host_bounds_modelled = false;
  const ExecutionResult r = run(p, no_plan);
  ASSERT_FALSE(r.allocated_at_host_issue);
  EXPECT_EQ(r.allocator_retries[0], 1);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 80 * kMiB);
}

/// FSDP-like: three gathers (stream 1, no kernels timed, 1 ms) each allocate 100 MiB that the
/// compute stream's pass u (1 s) uses and frees under record_stream; gather 2 waits for pass 0
/// (`host_wait`: the host's wait, FSDP1's rate limiter; otherwise the gather stream's).
Program three_gathered_units(bool host_wait, bool free_at_issue = false) {
  Program p;
  RankProgram rp;
  rp.streams = {{"compute", StreamKind::compute, {}}, {"gather", StreamKind::communication, {}}};
  for (int u = 0; u < 3; ++u) {
    Task g = compute("gather " + std::to_string(u), 1e-3);
    g.alloc = 100 * kMiB;
    if (u == 2) {
      g.deps = {{0, 0}};
      g.host_sync = host_wait;
    }
    rp.streams[1].tasks.push_back(g);
    Task f = issued("forward " + std::to_string(u), 1.0, 1);
    f.deps = {{1, u}};
    f.release_borrowed = 100 * kMiB;
    f.borrowed_pool = 1;
    f.borrowed_free_at_issue = free_at_issue;
    rp.streams[0].tasks.push_back(f);
  }
  p.ranks.push_back(rp);
  p.host_per_kernel = kIssue;
  p.host_bounds_modelled = true;
  return p;
}

TEST_F(EngineTest, WithoutAHostWaitTheHostGathersEveryUnitAhead) {
  device_memory_ = 1024 * kMiB;
  host_issue_ = true;
  const ExecutionResult r = run(three_gathered_units(false), no_plan);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 300 * kMiB);
}

TEST_F(EngineTest, ARateLimiterHoldsTheHostUntilTheUnitTwoBackIsDone) {
  // Gather 2 is issued when pass 0 ends, so pass 0's block is back and serves it.
  device_memory_ = 1024 * kMiB;
  host_issue_ = true;
  const ExecutionResult r = run(three_gathered_units(true), no_plan);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 200 * kMiB);
}

TEST_F(EngineTest, ABlockFreedWithoutRecordStreamIsBackWhenTheHostFreesIt) {
  // FSDP2: pass 0's block is back in the gather pool once the host has issued pass 0, which is
  // when it issues gather 2 (after pass 0, on the host): gather 2 reuses it, 1 s before pass 0 ends.
  device_memory_ = 1024 * kMiB;
  host_issue_ = true;
  const ExecutionResult r = run(three_gathered_units(false, true), no_plan);
  EXPECT_DOUBLE_EQ(r.peak_reserved[0], 200 * kMiB);
}

// validate/measure_allocator_retry.py's loop through the engine, the host issuing it as the script
// does, unit by unit: the unsharded parameters filled on a gather stream (1); on the compute stream
// (0) two products that read them (y, then y @ w, which drops the first) and the gradient's fill;
// on a post-backward stream (2) the gradient's padded copy and its scaling; then the unit's
// tensors dropped, the parameters and the gradient under record_stream (compute, post). Eight
// units a step, then a synchronize (the next step's first gather waits for the last unit on the
// host). With `max_ahead` the host first waits for the post stream's event of the unit that many
// back (the script's --max-ahead, FSDP1's rate limiter). Device times from the H100 rows with
// room (38.9 ms a step of 1,610 MB units, 21.0 ms of 630 MB: a fifth of a unit gathering, half
// computing, the rest copying); the host issues a kernel in the device profile's 64 us, far
// faster than the device runs them.
Program measured_loop(double unit_mb, int steps, int max_ahead) {
  const Bytes n = unit_mb * 1e6;
  const Bytes product = 4096.0 * 8192 * 2;  // x @ w: both unit sizes cap the view at 8192
  const Seconds unit = (unit_mb > 1000 ? 38.9e-3 : 21.0e-3) / 8;
  Program p;
  RankProgram rp;
  rp.resident = product;  // x
  rp.streams = {{"compute", StreamKind::compute, {}},
                {"gather", StreamKind::compute, {}},
                {"post", StreamKind::compute, {}}};
  auto& comp = rp.streams[0].tasks;
  auto& gather = rp.streams[1].tasks;
  auto& post = rp.streams[2].tasks;
  for (int s = 0; s < steps; ++s)
    for (int u = 0; u < 8; ++u) {
      const int i = s * 8 + u;
      const int c = static_cast<int>(comp.size());
      Task g = issued("gather", 0.2 * unit, 1);
      g.alloc = n;
      if (c > 0) g.host_after = {0, c - 1};  // after the unit before, on the host
      if (u == 0 && s > 0) {
        g.deps = {{0, c - 1}, {2, i - 1}};  // torch.cuda.synchronize()
        g.host_sync = true;
      } else if (max_ahead > 0 && u >= max_ahead) {
        g.deps = {{2, i - max_ahead}};  // done[u - max_ahead].synchronize()
        g.host_sync = true;
      }
      gather.push_back(g);
      Task products = issued("products", 0.4 * unit, 2);
      products.deps = {{1, i}};
      products.workspace = product;  // the first y, dropped by the second
      products.alloc = product;      // the second y
      comp.push_back(products);
      Task grad = issued("gradient", 0.1 * unit, 1);
      grad.alloc = n;
      comp.push_back(grad);
      Task q = issued("post", 0.3 * unit, 2);
      q.deps = {{0, c + 1}};
      q.workspace = n + 128;      // F.pad's copy, dropped at the unit's end
      q.release_borrowed = n;     // the gradient, back to the compute stream's pool once post is done
      q.borrowed_pool = 0;
      post.push_back(q);
      Task drop = compute("del", 0);
      drop.host_after = {2, i};
      drop.release = product;           // y
      drop.release_borrowed = n;        // the parameters, back to the gather stream's pool
      drop.borrowed_pool = 1;
      comp.push_back(drop);
    }
  p.ranks.push_back(rp);
  p.host_per_kernel = 64e-6;
  p.host_bounds_modelled = true;
  return p;
}

TEST_F(EngineTest, TheMeasuredLoopIssuedByTheHostRetriesWhereTheH100Did) {
  // Retries per step in steady state (the five steps after the first), -1: out of memory.
  host_issue_ = true;
  auto retries_per_step = [&](double unit_mb, double headroom_gb, int max_ahead) {
    device_memory_ = headroom_gb * 1e9;
    const ExecutionResult one = run(measured_loop(unit_mb, 1, max_ahead), no_plan);
    const ExecutionResult six = run(measured_loop(unit_mb, 6, max_ahead), no_plan);
    EXPECT_TRUE(six.allocated_at_host_issue);
    if (six.allocator_out_of_memory[0]) return -1.0;
    return static_cast<double>(six.allocator_retries[0] - one.allocator_retries[0]) / 5.0;
  };
  // validate/results/h100-allocator-retry-{1610,630}mb.json (the host a whole step ahead).
  struct Row { double unit_mb, headroom_gb, measured; };
  const Row rows[] = {{1610, 40, 0},   {1610, 12, 1.4}, {1610, 9, 2.8}, {1610, 8, 4.6}, {1610, 7, 4.0},
                      {1610, 6.5, -1}, {1610, 5, -1},   {630, 40, 0},   {630, 12, 0},   {630, 9, 0.4},
                      {630, 8, 0.8},   {630, 7, 1.0},   {630, 6, 1.0},  {630, 5, 2.0}};
  for (const auto& r : rows) {
    const double whole = retries_per_step(r.unit_mb, r.headroom_gb, 0);
    const double ahead = retries_per_step(r.unit_mb, r.headroom_gb, 2);
    std::printf("unit %4.0f MB, headroom %4.1f GB: whole step %5.2f retries/step (measured %5.2f), "
                "two units ahead %5.2f\n", r.unit_mb, r.headroom_gb, whole, r.measured, ahead);
    // Where the measurement saw none, the model must see none, and where it retried, retry.
    EXPECT_EQ(whole == 0, r.measured == 0) << r.unit_mb << " MB at " << r.headroom_gb << " GB";
    if (r.measured > 0) {
      EXPECT_GT(whole, 0) << r.unit_mb << " MB at " << r.headroom_gb << " GB: out of memory where the H100 ran";
    }
  }
}

TEST_F(EngineTest, PlatformHasACpuHostPerNode) {
  ASSERT_EQ(platform_.cpu_host.size(), 2u);
  EXPECT_EQ(platform_.cpu_host[1]->get_name(), "n1.cpu");
  ASSERT_EQ(platform_.cpu_latency.size(), 8u);
  EXPECT_NEAR(platform_.cpu_latency[5], kCpuLatency, 1e-15);
}

TEST_F(EngineTest, AHostCopyTakesBytesOverPcieBandwidth) {
  const Bytes b = 1.575e9;  // 100 ms at 15.75 GB/s
  const ExecutionResult r = run(one_stream_each(1, {host_copy(b, program::CopyDirection::to_host),
                                                    host_copy(b, program::CopyDirection::to_device)}),
                                no_plan);
  ASSERT_TRUE(r.completed);
  ASSERT_EQ(r.records.size(), 2u);
  for (const auto& rec : r.records) EXPECT_NEAR(rec.end - rec.start, b / kPcie + kCpuLatency, 1e-9);
}

/// Ranks 0, 1 and 2 of node 0; those in `copying` copy b bytes to host at once, the others idle.
Program copies_by(const std::vector<int>& copying, Bytes b) {
  Program p;
  for (int r = 0; r < 3; ++r) {
    RankProgram rp;
    rp.rank = r;
    const bool copies = std::find(copying.begin(), copying.end(), r) != copying.end();
    rp.streams.push_back({"host-copy", StreamKind::copy, {}});
    if (copies) rp.streams[0].tasks.push_back(host_copy(b, program::CopyDirection::to_host));
    p.ranks.push_back(rp);
  }
  return p;
}

TEST_F(EngineTest, TwoCopiesThroughOnePcieSwitchShareItsUplink) {
  // hpu0 and hpu1 both go through pcie_switch0 -- cpu: half the rate each. They fold into one
  // class, whose representative sends both members' flows.
  const Bytes b = 1.575e9;
  const ExecutionResult r = run(copies_by({0, 1}, b), no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.classes, 2);  // {0, 1} and the idle rank 2
  EXPECT_NEAR(r.makespan, 2 * b / kPcie + kCpuLatency, 1e-9);
}

TEST_F(EngineTest, TwoCopiesThroughOnePcieSwitchShareItsUplinkUnfolded) {
  fold_ = false;
  const Bytes b = 1.575e9;
  const ExecutionResult r = run(copies_by({0, 1}, b), no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.classes, 3);
  EXPECT_NEAR(r.makespan, 2 * b / kPcie + kCpuLatency, 1e-9);
}

/// copies_by({0, 1}, b) with rank 1 sharing rank 0's body (RankProgram::body).
Program shared_copies(Bytes b) {
  Program p = copies_by({0, 1}, b);
  p.ranks[1].streams.clear();
  p.ranks[1].body = 0;
  return p;
}

TEST_F(EngineTest, ASharedBodyRunsAsTheRanksOwnTasks) {
  const Bytes b = 1.575e9;
  const ExecutionResult r = run(shared_copies(b), no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.classes, 2);
  EXPECT_NEAR(r.makespan, 2 * b / kPcie + kCpuLatency, 1e-9);
  ASSERT_EQ(r.records.size(), 2u);  // rank 1 credited with rank 0's task
}

TEST_F(EngineTest, ASharedBodyRunsAsTheRanksOwnTasksUnfolded) {
  // Every rank runs its own copy of the body: the same as TwoCopiesThroughOnePcieSwitchShareItsUplinkUnfolded.
  fold_ = false;
  const Bytes b = 1.575e9;
  const ExecutionResult r = run(shared_copies(b), no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.classes, 3);
  EXPECT_NEAR(r.makespan, 2 * b / kPcie + kCpuLatency, 1e-9);
  ASSERT_EQ(r.records.size(), 2u);
}

TEST_F(EngineTest, CopiesThroughDifferentPcieSwitchesDoNotShare) {
  const Bytes b = 1.575e9;
  const ExecutionResult r = run(copies_by({0, 2}, b), no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, b / kPcie + kCpuLatency, 1e-9);
}

TEST_F(EngineTest, AHostCopySharesTheAcceleratorsPcieLinkWithItsNicTraffic) {
  // hpu0 -> node 1 leaves through hpu0 -- pcie_switch0, as the copy to the CPU does: the two
  // split that link's 15.75 GB/s (the EFA port's 12.5 GB/s is then no bottleneck).
  const Bytes b = 1.575e9;
  collective::Phase ph;
  ph.flows = {{0, 8, b}};
  CollectivePlan plan;
  plan.phases.push_back(ph);
  Program p = one_stream_each(1, {host_copy(b, program::CopyDirection::to_host)});
  p.ranks[0].streams.push_back({"comm", StreamKind::communication, {collective_task(0)}});
  p.collectives = {{"send", collective::Op::all_reduce, b, {0}}};
  const ExecutionResult r = run(p, [&](const CollectiveCall&) { return plan; });
  ASSERT_TRUE(r.completed);
  for (const auto& rec : r.records)
    if (rec.stream == 0) {
      EXPECT_NEAR(rec.end - rec.start, 2 * b / kPcie + kCpuLatency, 1e-9);
    }
}

TEST_F(EngineTest, HostCopiesNeedACpuVertex) {
  Platform no_cpu = platform_;
  no_cpu.cpu_host.clear();
  const Program p = one_stream_each(1, {host_copy(1e6, program::CopyDirection::to_host)});
  EXPECT_THROW((void)execute_program(p, no_cpu, no_plan, ExecuteOptions{}), InvariantError);
}

}  // namespace
}  // namespace trainsim::engine

namespace trainsim::engine {
namespace {

// SM sharing: a collective's kernel holds channels / SMs of its accelerator while it runs, so a
// compute task beside it advances at the rest. One hand-planned flow hpu0 -> node 1 through
// efa0 takes exactly 1 GB / 12.5 GB/s = 80 ms (no latency), whatever the SMs do.
class SmSharingTest : public EngineTest {
protected:
  static CollectivePlan flow_to(int dst, int channels, Bytes bytes = 1e9) {
    collective::Phase ph;
    ph.flows = {{0, dst, bytes}};
    CollectivePlan plan;
    plan.phases.push_back(std::move(ph));
    plan.channels = channels;
    return plan;
  }

  /// Rank 0 runs `compute` on one stream and the collectives (one stream each) on others, all
  /// from time 0; returns its records.
  std::vector<TaskRecord> overlap(const std::vector<CollectivePlan>& plans, Seconds compute_s) {
    Program p = one_stream_each(1, {compute("gemm", compute_s)});
    for (std::size_t c = 0; c < plans.size(); ++c) {
      p.ranks[0].streams.push_back({"comm" + std::to_string(c), StreamKind::communication,
                                    {collective_task(static_cast<int>(c))}});
      p.collectives.push_back({"c" + std::to_string(c), collective::Op::all_gather, 1e9 + static_cast<double>(c), {0}});
    }
    std::size_t asked = 0;
    const ExecutionResult r = run(p, [&](const CollectiveCall&) { return plans.at(asked++); });
    EXPECT_TRUE(r.completed);
    return r.records;
  }

  static TaskRecord of_stream(const std::vector<TaskRecord>& records, int stream) {
    for (const auto& rec : records)
      if (rec.stream == stream) return rec;
    ADD_FAILURE() << "no record of stream " << stream;
    return {};
  }
};

constexpr Seconds kFlow = 1e9 / kEfaPort;  // 80 ms

TEST_F(SmSharingTest, ComputeOverlappingACollectiveRunsOnTheSmsItLeaves) {
  sm_count_ = 108;
  const auto rec = overlap({flow_to(8, 27)}, 1.0);  // 27 of 108 SMs: a quarter
  const TaskRecord comm = of_stream(rec, 1);
  EXPECT_NEAR(comm.end - comm.start, kFlow, 1e-9);  // the collective itself is not slowed
  // 80 ms at 3/4 of the speed (the overlapped part takes its duration / (1 - 1/4)), the rest at
  // full speed: 1 s + 80 ms / 4.
  EXPECT_NEAR(of_stream(rec, 0).end, 1.0 + kFlow / 4, 1e-6);
}

TEST_F(SmSharingTest, ComputeAfterTheCollectiveRunsAtFullSpeed) {
  sm_count_ = 108;
  Program p = one_stream_each(1, {collective_task(0), compute("gemm", 1.0)});
  p.collectives = {{"c0", collective::Op::all_gather, 1e9, {0}}};
  const ExecutionResult r = run(p, [](const CollectiveCall&) { return flow_to(8, 27); });
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, kFlow + 1.0, 1e-9);
}

TEST_F(SmSharingTest, ConcurrentCollectivesAddTheirShares) {
  sm_count_ = 108;
  // Both flows leave through efa0, so each takes 160 ms; together they hold half the SMs.
  const auto rec = overlap({flow_to(8, 27), flow_to(10, 27)}, 1.0);
  EXPECT_NEAR(of_stream(rec, 1).end, 2 * kFlow, 1e-9);
  EXPECT_NEAR(of_stream(rec, 2).end, 2 * kFlow, 1e-9);
  EXPECT_NEAR(of_stream(rec, 0).end, 1.0 + 2 * kFlow / 2, 1e-6);
}

TEST_F(SmSharingTest, HeldSmsStopOneShortOfTheDevice) {
  sm_count_ = 108;
  // 100 + 100 channels asked: the second gets the 7 left but one, so compute keeps 1 SM.
  const auto rec = overlap({flow_to(8, 100), flow_to(10, 100)}, 1.0);
  const Seconds both = 2 * kFlow;
  EXPECT_NEAR(of_stream(rec, 0).end, both + (1.0 - both / 108), 1e-6);
}

// A measured curve (model/held_sm_slowdown.hpp): compute beside K held SMs runs at 1 / slowdown(K).
const model::HeldSmSlowdown kMeasured{{{4, 1.25}, {16, 1.5}}};

TEST_F(SmSharingTest, MeasuredSlowdownStretchesComputeBesideTheHeldSms) {
  sm_count_ = 132;
  held_sm_slowdown_ = kMeasured;
  // 40 ms of compute, all of it beside the 80 ms collective holding 4 SMs: 40 ms x 1.25, where
  // their share (4 of 132) would give 40 ms x 132/128 = 41.25 ms.
  const auto rec = overlap({flow_to(8, 4)}, 0.04);
  EXPECT_NEAR(of_stream(rec, 1).end, kFlow, 1e-9);  // the collective itself is not slowed
  EXPECT_NEAR(of_stream(rec, 0).end, 0.04 * 1.25, 1e-9);
}

TEST_F(SmSharingTest, MeasuredSlowdownIsInterpolatedBetweenPoints) {
  sm_count_ = 132;
  held_sm_slowdown_ = kMeasured;
  // 10 SMs: halfway from 1.25 (4) to 1.5 (16) -> 1.375.
  const auto rec = overlap({flow_to(8, 10)}, 0.04);
  EXPECT_NEAR(of_stream(rec, 0).end, 0.04 * 1.375, 1e-9);
}

TEST_F(SmSharingTest, MeasuredSlowdownOfConcurrentCollectivesIsThatOfTheirTotal) {
  sm_count_ = 132;
  held_sm_slowdown_ = kMeasured;
  // 12 + 4 SMs held: slowdown(16) = 1.5, not 1.375 (12) and 1.25 (4) compounded nor added. Both
  // flows leave through efa0: the 0.5 GB one ends at 80 ms (6.25 GB/s each), the 1 GB one 40 ms
  // later alone, so from 80 ms only its 4 SMs are held (1.25): the first to end released its
  // own, whichever took its SMs first. Compute of 1 s does 80 ms / 1.5 by 80 ms, 40 ms / 1.25
  // more by 120 ms, the rest at full speed.
  const auto rec = overlap({flow_to(8, 12, 0.5e9), flow_to(10, 4)}, 1.0);
  EXPECT_NEAR(of_stream(rec, 1).end, kFlow, 1e-9);
  EXPECT_NEAR(of_stream(rec, 2).end, 1.5 * kFlow, 1e-9);
  const Seconds done_by_120ms = kFlow / 1.5 + 0.5 * kFlow / 1.25;
  EXPECT_NEAR(of_stream(rec, 0).end, 1.5 * kFlow + (1.0 - done_by_120ms), 1e-6);
}

TEST_F(SmSharingTest, NoSmCountMeansNoSharing) {
  const auto rec = overlap({flow_to(8, 27)}, 1.0);
  EXPECT_NEAR(of_stream(rec, 0).end, 1.0, 1e-9);
}

TEST_F(SmSharingTest, FoldedRanksShareTheirRepresentativesSms) {
  sm_count_ = 108;
  // Ranks 0 and 1 are one class: its representative's host carries the hold, and both ranks are
  // credited with the slowed compute.
  Program p;
  for (int r = 0; r < 2; ++r) {
    RankProgram rp;
    rp.rank = r;
    rp.streams.push_back({"compute", StreamKind::compute, {compute("gemm", 1.0)}});
    rp.streams.push_back({"comm", StreamKind::communication, {collective_task(0)}});
    p.ranks.push_back(rp);
  }
  p.collectives = {{"c0", collective::Op::all_gather, 1e9, {0, 1}}};
  const ExecutionResult r = run(p, [](const CollectiveCall&) {
    collective::Phase ph;
    ph.flows = {{0, 8, 1e9}, {1, 9, 1e9}};  // hpu0 -> efa0, hpu1 -> efa0: 160 ms each
    CollectivePlan plan;
    plan.phases.push_back(std::move(ph));
    plan.channels = 27;
    return plan;
  });
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.classes, 1);
  for (const auto& rec : r.records)
    if (rec.stream == 0) {
      EXPECT_NEAR(rec.end, 1.0 + 2 * kFlow / 4, 1e-6) << "rank " << rec.rank;
    }
}

}  // namespace
}  // namespace trainsim::engine

namespace trainsim::engine {
namespace {

// HBM sharing: every route to or from an accelerator crosses its HBM link, and a compute task's
// memory-bound part, in eight slices alternating with its arithmetic, gets what the transfers
// leave of that link. A 1 TB/s link (in link units) is well above what an hpu's links carry.
constexpr BytesPerSecond kHbm = 1e12;

class HbmSharingTest : public EngineTest {
protected:
  HbmSharingTest() { hbm_link_ = kHbm; }

  /// A compute task of `duration` whose last `memory_bound` seconds stream.
  static Task streaming(Seconds duration, Seconds memory_bound) {
    Task t = compute("layer", duration);
    t.memory_bound = memory_bound;
    return t;
  }

  /// Rank 0 computes `lead` then `t` on one stream while a 1 GB flow hpu0 -> hpu1 (one 12.5 GB/s
  /// mesh link, so 80 ms) runs on another from time 0; returns when each ended: {compute, flow}.
  std::pair<Seconds, Seconds> beside_a_flow(const Task& t, Seconds lead = 0.01) {
    Program p = one_stream_each(1, {compute("lead", lead), t});
    p.ranks[0].streams[0].tasks[1].deps = {{0, 0}};
    p.ranks[0].streams.push_back({"comm", StreamKind::communication, {collective_task(0)}});
    p.collectives.push_back({"c0", collective::Op::all_gather, 1e9, {0}});
    const ExecutionResult r = run(p, [](const CollectiveCall&) {
      collective::Phase ph;
      ph.flows = {{0, 1, 1e9}};
      CollectivePlan plan;
      plan.phases.push_back(std::move(ph));
      return plan;
    });
    EXPECT_TRUE(r.completed);
    std::pair<Seconds, Seconds> ends{-1, -1};
    for (const auto& rec : r.records) (rec.stream == 0 ? ends.first : ends.second) = rec.end;
    return ends;
  }
};

constexpr Seconds kMeshFlow = 1e9 / kRoceLink;  // 80 ms

TEST_F(HbmSharingTest, EveryAcceleratorHasAnHbmLink) {
  ASSERT_EQ(platform_.hbm_link.size(), 16u);
  EXPECT_DOUBLE_EQ(platform_.hbm_link[3]->get_bandwidth(), kHbm);
}

TEST_F(HbmSharingTest, AMemoryBoundTaskAloneTakesItsDuration) {
  // 0.6 s of arithmetic, then 0.4 s streaming: 1 s, as without the link.
  const ExecutionResult r = run(one_stream_each(1, {streaming(1.0, 0.4)}), no_plan);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.makespan, 1.0, 1e-9);
}

TEST_F(HbmSharingTest, StreamingBesideAFlowGetsWhatTheFlowLeaves) {
  // The flow keeps its 12.5 GB/s (the mesh link's). The task's first slice starts at 10 ms with
  // the flow running: its 125 ms of streaming get 1 - 12.5 GB/s / 1 TB/s of the link; the flow
  // ends inside it, so the other seven slices run alone.
  const auto [compute_end, flow_end] = beside_a_flow(streaming(1.0, 1.0));
  EXPECT_NEAR(flow_end, kMeshFlow, 1e-9);
  EXPECT_NEAR(compute_end, 0.01 + 0.125 / (1 - kRoceLink / kHbm) + 7 * 0.125, 1e-9);
}

TEST_F(HbmSharingTest, AFlowStartingWithTheSliceIsSeenFromTheNextSlice) {
  // Both start at time 0: the first slice runs alone, the flow has ended before the second.
  EXPECT_NEAR(beside_a_flow(streaming(1.0, 1.0), 0).first, 1.0, 1e-9);
}

TEST_F(HbmSharingTest, SlicesAlternateWithTheArithmetic) {
  // 8 slices of 115 ms of arithmetic then 10 ms of streaming from 10 ms: the flow (to 80 ms)
  // has ended before the first streaming slice, at 125 ms: nothing lost.
  EXPECT_NEAR(beside_a_flow(streaming(1.0, 0.08)).first, 1.01, 1e-9);
}

TEST_F(HbmSharingTest, ArithmeticDoesNotUseTheLink) {
  EXPECT_NEAR(beside_a_flow(compute("gemm", 1.0)).first, 1.01, 1e-9);
}

TEST_F(HbmSharingTest, AnHbmLinkBelowTheAcceleratorsLinksIsRejected) {
  // hpu0's links carry more than 100 GB/s in and out (seven 100 Gb/s mesh links alone: 175 GB/s).
  EXPECT_THROW((void)build_platform(topology_, 2, 100e9), ConfigError);
}

}  // namespace
}  // namespace trainsim::engine
