// The NCCL-like tuner (collective/nccl_tuner.hpp), no SimGrid: its time formula on a hand-made
// fabric with round numbers, and which algorithm and protocol it picks on small cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "collective/nccl_tuner.hpp"
#include "core/error.hpp"
#include "support/rank_groups.hpp"
#include "support/round_calibration.hpp"

namespace trainsim::collective {
namespace {

using testing_support::ranks;
using testing_support::round_nccl_calibration;

/// 100 GB/s NVLink port, 1 us hop; 50 GB/s node uplink, 10 us hop.
FabricRates round_rates() { return {100e9, 1e-6, 50e9, 10e-6}; }

TEST(NcclTuner, RingPredictionIsLatencyPlusFillPlusBandwidth) {
  const auto cal = round_nccl_calibration(false);
  const RankLayout layout{4};
  const auto g = shape_of(ranks(4), layout);
  const Bytes s = 64e6;
  const auto p = predict(ring_schedule(Op::all_reduce, s, g), Protocol::simple, g, layout, cal,
                         round_rates());
  // Per rank X = 2(n-1)/n S = 1.5 S on a 100 GB/s port at 0.8 efficiency.
  const Seconds bw = 1.5 * s / 0.8 / 100e9;
  EXPECT_NEAR(p.bandwidth_time, bw, 1e-12);
  // base 10 us + 2(n-1) = 6 steps x (1 us step + 1 us hop).
  EXPECT_NEAR(p.latency, 10e-6 + 6 * 2e-6, 1e-12);
  // (depth - 1) x min(S/n, chunk) / (S/n) x bw / units: 5 x (1 MB / 16 MB) x bw / 6.
  EXPECT_NEAR(p.fill, 5 * (1e6 / 16e6) * bw / 6, 1e-12);
}

TEST(NcclTuner, FillCrossesEachHopAtItsLevelsRate) {
  // Tree over 2 nodes x 4, S = 64 MB: the busiest NVLink port's chain bytes at 0.8 x 100 GB/s
  // (intra stage), the node uplink's S at 0.6 x 50 GB/s (network stage). The first chunk (1 MB of the S/2 unit) crosses k = 4 chain hops at the
  // NVLink stage rate and 2 tree hops at the network's; the slowest stage streams, not fills.
  const auto cal = round_nccl_calibration(false);
  const RankLayout layout{4};
  const auto g = shape_of(ranks(8), layout);
  const Bytes s = 64e6;
  const auto sched = tree_schedule(s, g);
  const auto p = predict(sched, Protocol::simple, g, layout, cal, round_rates());
  Bytes intra_max = 0;
  std::map<int, Bytes> out, in;
  for (const auto& f : sched.flows)
    if (!f.inter_node) {
      out[f.src] += f.bytes;
      in[f.dst] += f.bytes;
    }
  for (const auto* m : {&out, &in})
    for (const auto& [r, b] : *m) intra_max = std::max(intra_max, b);
  const Seconds intra = intra_max / 0.8 / 100e9, inter = s / 0.6 / 50e9;
  ASSERT_GT(inter, intra);
  EXPECT_NEAR(p.bandwidth_time, inter, 1e-12);
  EXPECT_NEAR(p.fill, (1e6 / 32e6) * (4 * intra + 2 * inter - inter), 1e-12);
}

TEST(NcclTuner, AlltoallPaysOneStepPerPeerRound) {
  // 2 nodes x 4 = 8 ranks: 7 rounds at the network's Simple step latency (10 us), one 10 us
  // network hop, the 10 us base; alltoall has no pipeline fill.
  const auto cal = round_nccl_calibration(false);
  const RankLayout layout{4};
  const auto g = shape_of(ranks(8), layout);
  const auto p = predict(pairwise_schedule(Op::alltoall, 8e6, g), Protocol::simple, g, layout,
                         cal, round_rates());
  EXPECT_NEAR(p.latency, 10e-6 + 7 * 10e-6 + 10e-6, 1e-12);
  EXPECT_EQ(p.fill, 0);
  // Inside one node: the NVLink step (1 us) per round and one NVLink hop.
  const auto g1 = shape_of(ranks(4), layout);
  const auto q = predict(pairwise_schedule(Op::alltoall, 8e6, g1), Protocol::simple, g1, layout,
                         cal, round_rates());
  EXPECT_NEAR(q.latency, 10e-6 + 3 * 1e-6 + 1e-6, 1e-12);
}

TEST(NcclTuner, ARingExchangeCostsWhatEachOfItsSendRecvsCosts) {
  // The n transfers of a ring step run at once on n different ports: the same latency and
  // bandwidth time as one of them alone; contention with other traffic is the engine's.
  const auto cal = round_nccl_calibration(false);
  const RankLayout layout{4};
  const auto ring = shape_of(ranks(4), layout);
  const auto pair = shape_of({0, 1}, layout);
  const auto r = predict(pairwise_schedule(Op::ring_exchange, 8e6, ring), Protocol::simple, ring, layout, cal,
                         round_rates());
  const auto s = predict(pairwise_schedule(Op::send_recv, 8e6, pair), Protocol::simple, pair, layout, cal,
                         round_rates());
  EXPECT_DOUBLE_EQ(r.latency, s.latency);
  EXPECT_DOUBLE_EQ(r.bandwidth_time, s.bandwidth_time);
  EXPECT_NEAR(r.latency, 10e-6 + 1e-6 + 1e-6, 1e-12);          // base, one NVLink step, one hop
  EXPECT_NEAR(r.bandwidth_time, 8e6 / 0.8 / 100e9, 1e-15);  // S over a port at ring efficiency
}

TEST(NcclTuner, SmallMessagesTakeLLAndLargeOnesSimple) {
  const auto cal = round_nccl_calibration(false);
  const RankLayout layout{8};
  const auto small = plan_nccl(Op::all_reduce, 1024, ranks(8), layout, cal, round_rates(), {});
  EXPECT_EQ(small.algorithm, "ring");
  EXPECT_EQ(small.protocol, "LL");  // 5 us base against 8 and 10; bandwidth is negligible
  const auto large = plan_nccl(Op::all_reduce, 1e9, ranks(8), layout, cal, round_rates(), {});
  EXPECT_EQ(large.protocol, "Simple");  // LL halves bandwidth, LL128 loses 1/16
}

TEST(NcclTuner, NvlsWinsLargeAllReduceWhenItBeatsTheRingLimit) {
  // Ring: 2(n-1)/n S = 1.75 S per port at 0.8 -> S / 45.7 GB/s; NVLS: S per port at 0.5 ->
  // S / 50 GB/s: NVLS is faster for large S; for 8 bytes ring/LL's 5 + 14 x 2 = 33 us beats
  // NVLS's 10 + 40 + 1 = 51 us.
  const auto cal = round_nccl_calibration(true);
  const RankLayout layout{8};
  EXPECT_EQ(plan_nccl(Op::all_reduce, 1e9, ranks(8), layout, cal, round_rates(), {}).algorithm,
            "nvls");
  EXPECT_EQ(plan_nccl(Op::all_reduce, 8, ranks(8), layout, cal, round_rates(), {}).algorithm,
            "ring");
  // NVLS reduces; all_gather stays a ring.
  EXPECT_EQ(plan_nccl(Op::all_gather, 1e9, ranks(8), layout, cal, round_rates(), {}).algorithm,
            "ring");
}

TEST(NcclTuner, TwoNodesPickTheTreeAboveTheRingLimit) {
  // 2 nodes x 8: ring moves 2(n-1)/n S = 1.875 S out of each node at 0.9 x 50 GB/s; tree moves
  // S at 0.6 x 50 GB/s: 1.875 / 45 > 1 / 30, so the tree wins and its busbw (1.875 S / t) is
  // above what the ring could ever reach (45 GB/s).
  const auto cal = round_nccl_calibration(false);
  const RankLayout layout{8};
  const Bytes s = 4e9;
  const auto plan = plan_nccl(Op::all_reduce, s, ranks(16), layout, cal, round_rates(), {});
  EXPECT_EQ(plan.algorithm, "tree");
  const double busbw = 1.875 * s / plan.predicted;
  EXPECT_GT(busbw, 45e9);
  // At 8 nodes the busiest node of the tree sends 2 S, the ring 2(n-1)/n S ~ 2 S at a higher
  // efficiency: 2 / 30 > 2 / 45, so the ring wins.
  const auto eight = plan_nccl(Op::all_reduce, s, ranks(64), layout, cal, round_rates(), {});
  EXPECT_EQ(eight.algorithm, "ring");
}

TEST(NcclTuner, OverridesForceTheChoiceWhereTheyApply) {
  const auto cal = round_nccl_calibration(true);
  const RankLayout layout{8};
  TunerOverride force;
  force.algorithm = Algorithm::ring;
  force.protocol = Protocol::ll128;
  const auto p = plan_nccl(Op::all_reduce, 1e9, ranks(8), layout, cal, round_rates(), force);
  EXPECT_EQ(p.algorithm, "ring");
  EXPECT_EQ(p.protocol, "LL128");
  // NVLS cannot run across nodes: the override is ignored, as NCCL falls back.
  force.algorithm = Algorithm::nvls;
  force.protocol.reset();
  const auto q = plan_nccl(Op::all_reduce, 1e9, ranks(16), layout, cal, round_rates(), force);
  EXPECT_NE(q.algorithm, "nvls");
}

TEST(NcclTuner, AGroupWithDifferentRanksPerNodeIsPlannedWithoutNvlsTrees) {
  // Data-parallel groups of TP 4 x PP 2 on 3 nodes of 8: {0, 4, 8} holds 2 ranks of node 0 and
  // 1 of node 1. NCCL runs it; the NVLS tree (every node's NVLS group on the same lanes) is
  // left out, the ring and tree are planned on each node's own ranks.
  const auto cal = round_nccl_calibration(true);
  const RankLayout layout{8};
  for (Op op : {Op::all_reduce, Op::reduce_scatter, Op::all_gather}) {
    const auto plan = plan_nccl(op, 64e6, {0, 4, 8}, layout, cal, round_rates(), {});
    EXPECT_NE(plan.algorithm, "nvls_tree") << op_name(op);
    EXPECT_GT(plan.predicted, 0) << op_name(op);
    ASSERT_EQ(plan.phases.size(), 1u);
    Bytes across = 0;
    for (const auto& f : plan.phases[0].flows) across += f.src / 8 == 0 && f.dst / 8 == 1 ? f.bytes : 0;
    EXPECT_GT(across, 0) << op_name(op);
  }
  // Forcing the NVLS tree falls back, as NCCL does where it cannot run.
  TunerOverride force;
  force.algorithm = Algorithm::nvls_tree;
  EXPECT_NE(plan_nccl(Op::all_reduce, 1e9, {0, 4, 8}, layout, cal, round_rates(), force).algorithm, "nvls_tree");
}

TEST(NcclTuner, PhaseBytesIncludeEfficiencyAndProtocol) {
  const auto cal = round_nccl_calibration(false);
  TunerOverride force;
  force.protocol = Protocol::ll;
  const auto p = plan_nccl(Op::all_gather, 8e6, ranks(4), RankLayout{4}, cal, round_rates(), force);
  ASSERT_EQ(p.phases.size(), 1u);
  // (n-1)/n S payload / (0.8 efficiency x 0.5 LL fraction).
  for (const auto& f : p.phases[0].flows) EXPECT_DOUBLE_EQ(f.bytes, 0.75 * 8e6 / (0.8 * 0.5));
  EXPECT_NEAR(p.phases[0].fixed_latency + 0.75 * 8e6 / 0.4 / 100e9, p.predicted, 1e-12);
}

}  // namespace
}  // namespace trainsim::collective
