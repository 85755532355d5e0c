// NCCL's own estimate (collective/nccl_cost_model.hpp) against numbers worked by hand from
// NCCL 2.27.7 tuning.cc and enqueue.cc, the shipped p5 file, and how the tuner uses it: NCCL's
// choice across nodes, and the tree's rate relative to the NVLS tree's.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "collective/nccl_cost_model.hpp"
#include "collective/nccl_tuner.hpp"
#include "core/error.hpp"
#include "support/rank_groups.hpp"
#include "support/round_calibration.hpp"

namespace trainsim::collective {
namespace {

using testing_support::ranks;

/// Hopper, AMD CPU, 75 us network latency, every graph 8 channels of 48 GB/s (p5's file).
NcclCostModel p5_like() {
  NcclCostModel m;
  m.arch = NcclArch::hopper;
  m.amd_cpu = true;
  m.net_latency = 75e-6;
  m.ring = m.tree = m.nvls = {8, 48, 48};
  return m;
}

TEST(NcclCostModel, TreeLL128IsCappedPerChannelAndHalvedToAlgorithmBandwidth) {
  const auto c = nccl_cost(p5_like(), Op::all_reduce, Algorithm::tree, Protocol::ll128, 2, 16);
  ASSERT_TRUE(c);
  // min(min(8 x 48 x 0.92, 8 x 41.4) x 120/128, 8 x 36.7) x 0.5
  EXPECT_NEAR(c->bandwidth_gbps, 8 * 36.7 * 0.5, 1e-9);
  // 14 + 2 x (7 x 1.25 + 1 x (8.5 + 75)) us
  EXPECT_NEAR(c->latency, 198.5e-6, 1e-12);
  // Beyond two nodes the per-channel LL128 tree ceiling drops to 29 GB/s.
  const auto eight = nccl_cost(p5_like(), Op::all_reduce, Algorithm::tree, Protocol::ll128, 8, 64);
  EXPECT_NEAR(eight->bandwidth_gbps, 8 * 29.0 * 0.5, 1e-9);
}

TEST(NcclCostModel, NvlsTreeAndRingFollowTuningCc) {
  const auto m = p5_like();
  const auto nvls = nccl_cost(m, Op::all_reduce, Algorithm::nvls_tree, Protocol::simple, 2, 16);
  EXPECT_NEAR(nvls->bandwidth_gbps, 8 * 48 * 5.0 / 6.0, 1e-9);
  EXPECT_NEAR(nvls->latency, (25 + 2 * (14 + 75 + 75)) * 1e-6, 1e-12);  // Simple pays the flush
  const auto half = nccl_cost(m, Op::all_reduce, Algorithm::nvls_tree, Protocol::simple, 4, 32);
  EXPECT_NEAR(half->bandwidth_gbps, 8 * 24 * 5.0 / 6.0, 1e-9);
  // Ring LL128: min(384 x 0.92, 8 x 36.7) x 16/30; 14 + 28 x max(1.9, 2) + 2 x (4 + 75) us.
  const auto ring = nccl_cost(m, Op::all_reduce, Algorithm::ring, Protocol::ll128, 2, 16);
  EXPECT_NEAR(ring->bandwidth_gbps, 8 * 36.7 * 16 / 30, 1e-9);
  EXPECT_NEAR(ring->latency, 228e-6, 1e-12);
  // all_gather: n-1 steps, one of them across the network.
  const auto ag = nccl_cost(m, Op::all_gather, Algorithm::ring, Protocol::simple, 2, 16);
  EXPECT_NEAR(ag->bandwidth_gbps, 384.0 * 16 / 15, 1e-9);
  EXPECT_NEAR(ag->latency, (8.4 + 14 * 6 + (14 + 150)) * 1e-6, 1e-12);
  // The ring plateau factor multiplies Simple's all_reduce latency once channels have work.
  const auto t = nccl_estimated_time(m, Op::all_reduce, Algorithm::ring, Protocol::simple, 1e9, 2, 16);
  const auto r = nccl_cost(m, Op::all_reduce, Algorithm::ring, Protocol::simple, 2, 16);
  EXPECT_NEAR(*t, 1.4 * r->latency + 1e9 / (r->bandwidth_gbps * 1e9), 1e-12);
}

TEST(NcclCostModel, NoEstimateWhereNcclHasNoneHere) {
  const auto m = p5_like();
  EXPECT_FALSE(nccl_cost(m, Op::all_reduce, Algorithm::ring, Protocol::simple, 1, 8));
  EXPECT_FALSE(nccl_cost(m, Op::alltoall, Algorithm::pairwise, Protocol::simple, 2, 16));
  EXPECT_FALSE(nccl_cost(m, Op::all_gather, Algorithm::tree, Protocol::simple, 2, 16));
  EXPECT_FALSE(nccl_cost(m, Op::all_reduce, Algorithm::nvls_tree, Protocol::ll128, 2, 16));
}

TEST(NcclCostModel, TreeCorrectionFactorIsIndexedByLog2OfSizeOver64) {
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Op::all_reduce, Algorithm::tree, Protocol::ll128, 1 << 20), 0.6);
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Op::all_reduce, Algorithm::tree, Protocol::ll128, 8 << 20), 0.9);
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Op::all_reduce, Algorithm::tree, Protocol::simple, 8 << 20), 0.8);
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Op::all_reduce, Algorithm::tree, Protocol::ll128, 1 << 30), 1);
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Op::all_reduce, Algorithm::ring, Protocol::ll128, 1 << 20), 1);
}

TEST(NcclCostModel, TreeLL128ChunkShrinksForMidSizes) {
  EXPECT_EQ(nccl_runtime_channels(p5_like(), 2), 16);  // 8 doubled; 16 is not below 16
  // 1 MiB on 16 channels at 2 nodes x 8: 576000 -> 72000 (first rule, stops at <= 128 KiB),
  // then -> 18000 (fewer than 5.6 chunks per channel).
  EXPECT_DOUBLE_EQ(nccl_tree_ll128_chunk(576000, 1 << 20, 16, 2, 16), 18000);
  // 64 MiB: 576000 -> 144000, where a channel gets 29 >= 22.4 chunks.
  EXPECT_DOUBLE_EQ(nccl_tree_ll128_chunk(576000, 64 << 20, 16, 2, 16), 144000);
  EXPECT_DOUBLE_EQ(nccl_tree_ll128_chunk(576000, 8e9, 16, 2, 16), 576000);
}

TEST(NcclCostModel, ShippedP5FileLoadsAndBadInputNamesThePath) {
  const auto m = load_nccl_cost_model("topologies/calibration/nccl-cost-p5.json");
  EXPECT_EQ(m.ring.channels, 8);
  EXPECT_TRUE(m.amd_cpu);
  EXPECT_DOUBLE_EQ(m.net_latency, 75e-6);
  const auto cal = load_collective_calibration("topologies/calibration/p5-nccl.json");
  ASSERT_TRUE(cal.nccl_cost_model);
  EXPECT_THROW((void)load_nccl_cost_model("topologies/calibration/p5-nccl.json"), ConfigError);
}

/// The tuner test's round fabric with NVLS, LL128 across nodes and the p5-like estimate.
CollectiveCalibration cal_with_estimate() {
  CollectiveCalibration c = testing_support::round_nccl_calibration(true);
  c.intra_fabric.ll128_chunk = 1e6;
  auto& inter = c.inter_fabric;
  inter.protocols = {Protocol::ll128, Protocol::simple};
  inter.ll128_chunk = 576000;
  c.nccl_cost_model = std::make_shared<const NcclCostModel>(p5_like());
  return c;
}

TEST(NcclCostModel, TunerChoosesByNcclsEstimateAcrossNodes) {
  const auto cal = cal_with_estimate();
  const FabricRates rates{100e9, 1e-6, 50e9, 10e-6};
  // NCCL's estimate at 2 x 8 (see the formulas above): tree LL128 at 16 MiB, NVLS tree at 64 MiB.
  const auto mid = plan_nccl(Op::all_reduce, 16 << 20, ranks(16), RankLayout{8}, cal, rates, {});
  EXPECT_EQ(mid.algorithm, "tree");
  EXPECT_EQ(mid.protocol, "LL128");
  const auto big = plan_nccl(Op::all_reduce, 64 << 20, ranks(16), RankLayout{8}, cal, rates, {});
  EXPECT_EQ(big.algorithm, "nvls_tree");
  // The tree's network flows run at the NVLS tree's efficiency x NCCL's bandwidth ratio
  // (146.8 x 0.9 correction / 320), with no LL128 fraction on top.
  const Bytes s = 16 << 20;
  const double eff = 0.6 * (8 * 36.7 * 0.5 * 0.9) / (8 * 48 * 5.0 / 6.0);
  Bytes inter_bytes = 0;
  for (const auto& f : mid.phases.at(0).flows)
    if (f.src / 8 != f.dst / 8) inter_bytes += f.bytes;
  // 2 nodes: each tree lane sends S / 16 up and down once per node pair, 16 lanes.
  EXPECT_NEAR(inter_bytes, 2 * s / eff, 1e-3 * s);
  // Inside one node the fitted model still decides.
  const auto one = plan_nccl(Op::all_reduce, 64 << 20, ranks(8), RankLayout{8}, cal, rates, {});
  EXPECT_NE(one.algorithm, "tree");
}

/// DGX A100 as in nccl-cost-dgx-a100.json: Ampere, AMD CPU, ring and tree 8 channels of 24 GB/s.
NcclCostModel dgx_a100_v2_8() {
  NcclCostModel m;
  m.version = NcclVersion::v2_8_3;
  m.arch = NcclArch::ampere;
  m.amd_cpu = true;
  m.ring = m.tree = {8, 24, 24};
  return m;
}

TEST(NcclCostModel, V2_8RingWinsMegatronsTpAllReduceOnTwoAndFourNodes) {
  const auto m = dgx_a100_v2_8();
  const Bytes s = 2048.0 * 20480 * 2;  // b s h fp16, 80 MiB
  // 2 nodes, 16 ranks. Ring Simple: 8 x 24 x 16/30 GB/s; latency (8.4 + 28 x 3.4 + 2 x 9.6) us
  // x 1.9 (plateau from 16/16 x 64 KiB).
  const auto ring = nccl_cost(m, Op::all_reduce, Algorithm::ring, Protocol::simple, 2, 16);
  ASSERT_TRUE(ring);
  EXPECT_NEAR(ring->bandwidth_gbps, 192.0 * 16 / 30, 1e-9);
  EXPECT_NEAR(ring->latency, 122.8e-6, 1e-12);
  EXPECT_NEAR(*nccl_estimated_time(m, Op::all_reduce, Algorithm::ring, Protocol::simple, s, 2, 16),
              122.8e-6 * 1.9 + s / (102.4e9), 1e-12);
  // Tree Simple: min(192 x 0.92, 8 x 22.5) x 0.5, x 0.8 correction at 2^20 x 64 B; latency
  // 2 x (7 x 28 + 1 x 28) us. Estimated 1.64 ms against the ring's 1.05.
  const auto tree = nccl_cost(m, Op::all_reduce, Algorithm::tree, Protocol::simple, 2, 16);
  EXPECT_NEAR(tree->bandwidth_gbps, 192 * 0.92 * 0.5, 1e-9);
  EXPECT_NEAR(tree->latency, 448e-6, 1e-12);
  EXPECT_NEAR(*nccl_estimated_time(m, Op::all_reduce, Algorithm::tree, Protocol::simple, s, 2, 16),
              448e-6 + s / (88.32e9 * 0.8), 1e-12);
  // 4 nodes: the tree's Ampere ceiling drops to 16 GB/s per channel (2.27: 17.8).
  const auto tree4 = nccl_cost(m, Op::all_reduce, Algorithm::tree, Protocol::simple, 4, 32);
  EXPECT_NEAR(tree4->bandwidth_gbps, 8 * 16.0 * 0.5, 1e-9);
  // Ring LL128: min(192 x 0.92, 16.9 x 8) x 32/62, latency 10 + 56 x 1.9 + 6 x 4 us.
  const auto ll128 = nccl_cost(m, Op::all_reduce, Algorithm::ring, Protocol::ll128, 4, 32);
  EXPECT_NEAR(ll128->bandwidth_gbps, 16.9 * 8 * 32 / 62, 1e-9);
  EXPECT_NEAR(ll128->latency, 140.4e-6, 1e-12);
  // No NVLS in 2.8; no estimate inside one node.
  EXPECT_FALSE(nccl_cost(m, Op::all_reduce, Algorithm::nvls_tree, Protocol::simple, 2, 16));
  EXPECT_FALSE(nccl_cost(m, Op::all_reduce, Algorithm::ring, Protocol::simple, 1, 8));
}

TEST(NcclCostModel, V2_8TunerPicksRingSimpleWhere2_27PicksRingLL128) {
  auto cal = cal_with_estimate();
  cal.intra_fabric.algorithms = {Algorithm::ring};
  cal.inter_fabric.protocols = {Protocol::ll, Protocol::ll128, Protocol::simple};
  cal.intra_fabric.protocols = {Protocol::ll, Protocol::ll128, Protocol::simple};
  const FabricRates rates{100e9, 1e-6, 50e9, 10e-6};
  const Bytes s = 2048.0 * 20480 * 2;
  cal.nccl_cost_model = std::make_shared<const NcclCostModel>(dgx_a100_v2_8());
  const auto v28 = plan_nccl(Op::all_reduce, s, ranks(16), RankLayout{8}, cal, rates, {});
  EXPECT_EQ(v28.algorithm, "ring");
  EXPECT_EQ(v28.protocol, "Simple");
  // The same graphs under 2.27's tables (ring LL128 ceiling 20 GB/s per channel, plateau 1.4).
  auto m27 = dgx_a100_v2_8();
  m27.version = NcclVersion::v2_27_7;
  cal.nccl_cost_model = std::make_shared<const NcclCostModel>(m27);
  const auto v227 = plan_nccl(Op::all_reduce, s, ranks(16), RankLayout{8}, cal, rates, {});
  EXPECT_EQ(v227.algorithm, "ring");
  EXPECT_EQ(v227.protocol, "LL128");
}

TEST(NcclCostModel, ShippedDgxA100FileNamesNccl2_8) {
  const auto m = load_nccl_cost_model("topologies/calibration/nccl-cost-dgx-a100.json");
  EXPECT_EQ(m.version, NcclVersion::v2_8_3);
  EXPECT_EQ(m.arch, NcclArch::ampere);
  EXPECT_EQ(m.ring.channels, 8);
  const auto cal = load_collective_calibration("topologies/calibration/dgx-a100-nccl.json");
  ASSERT_TRUE(cal.nccl_cost_model);
}

}  // namespace
}  // namespace trainsim::collective
