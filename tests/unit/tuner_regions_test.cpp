// The region-based tuner plugin (collective/tuner_regions.hpp), no SimGrid: the polygon test,
// the first-region-wins order, where NCCL's own tuner keeps the choice, and aws-ofi-nccl's p5
// all_reduce regions as shipped in topologies/calibration.
#include <gtest/gtest.h>

#include <vector>

#include "collective/nccl_tuner.hpp"
#include "collective/tuner_regions.hpp"
#include "support/rank_groups.hpp"

namespace trainsim::collective {
namespace {

using testing_support::ranks;

TunerRegion square(Algorithm a, Protocol p, double x0, double x1, double y0, double y1) {
  return {a, p, {{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}};
}

const auto any = [](Algorithm, Protocol) { return true; };

TEST(TunerRegions, PolygonHoldsItsInsideAndItsEdges) {
  const auto r = square(Algorithm::ring, Protocol::simple, 0, 100, 10, 20);
  EXPECT_TRUE(region_holds(r, {50, 15}));
  EXPECT_TRUE(region_holds(r, {100, 15}));  // on an edge
  EXPECT_TRUE(region_holds(r, {0, 10}));    // a vertex
  EXPECT_FALSE(region_holds(r, {101, 15}));
  EXPECT_FALSE(region_holds(r, {50, 21}));
  // A degenerate region (the plugin's "line" regions) holds only the points of its segment.
  const TunerRegion line{Algorithm::nvls_tree, Protocol::simple, {{10, 16}, {1000, 16}, {10, 16}}};
  EXPECT_TRUE(region_holds(line, {500, 16}));
  EXPECT_FALSE(region_holds(line, {500, 17}));
  EXPECT_FALSE(region_holds(line, {5, 16}));
}

TEST(TunerRegions, FirstUsableRegionWinsElseNcclDecides) {
  TunerRegions t;
  t.ranks_per_node = 8;
  t.min_nodes = 3;
  t.by_op["all_reduce"] = {square(Algorithm::tree, Protocol::ll128, 0, 100, 0, 1000),
                           square(Algorithm::ring, Protocol::simple, 0, 1000, 0, 1000)};
  const auto pick = region_choice(t, Op::all_reduce, 50, 4, 32, any);
  ASSERT_TRUE(pick);
  EXPECT_EQ(pick->first, Algorithm::tree);
  // Where NCCL cannot run tree LL128 (say NCCL_PROTO=Simple) the next region decides.
  const auto no_ll128 = [](Algorithm, Protocol p) { return p != Protocol::ll128; };
  EXPECT_EQ(region_choice(t, Op::all_reduce, 50, 4, 32, no_ll128)->first, Algorithm::ring);
  EXPECT_EQ(region_choice(t, Op::all_reduce, 500, 4, 32, any)->first, Algorithm::ring);
  // Outside every region, on too few nodes, another shape or another op: NCCL's own tuner.
  EXPECT_FALSE(region_choice(t, Op::all_reduce, 5000, 4, 32, any));
  EXPECT_FALSE(region_choice(t, Op::all_reduce, 50, 2, 16, any));
  EXPECT_FALSE(region_choice(t, Op::all_reduce, 50, 8, 32, any));
  EXPECT_FALSE(region_choice(t, Op::all_gather, 50, 4, 32, any));
}

TEST(TunerRegions, AwsOfiNcclP5AllReduceRegions) {
  // Read off aws-ofi-nccl v1.16.3's p5 polygons: at 32 ranks tree LL128 up to 36 MiB
  // (37748736 B), ring LL128 to the edge (1 GiB,17)-(2 GiB,64) = 1.416e9 B, nothing up to the
  // ring Simple edge at 1.61e9 B; at 64 ranks tree LL128 up to 112 MiB, ring LL128 up to
  // 2 GiB (a vertex), ring Simple from 2.5 GiB (2684354560 B).
  const auto t = load_tuner_regions("topologies/calibration/aws-ofi-nccl-tuner-p5.json");
  const auto at = [&](double bytes, int nodes) {
    return region_choice(t, Op::all_reduce, bytes, nodes, 8 * nodes, any);
  };
  using A = Algorithm;
  using P = Protocol;
  const auto is = [](auto pick, A a, P p) { return pick && pick->first == a && pick->second == p; };
  EXPECT_TRUE(is(at(32.0 * (1 << 20), 4), A::tree, P::ll128));
  EXPECT_TRUE(is(at(64.0 * (1 << 20), 4), A::ring, P::ll128));
  EXPECT_TRUE(is(at(1024.0 * (1 << 20), 4), A::ring, P::ll128));
  EXPECT_FALSE(at(1.5e9, 4));
  EXPECT_TRUE(is(at(2048.0 * (1 << 20), 4), A::ring, P::simple));
  EXPECT_TRUE(is(at(64.0 * (1 << 20), 8), A::tree, P::ll128));
  EXPECT_TRUE(is(at(2048.0 * (1 << 20), 8), A::ring, P::ll128));
  EXPECT_TRUE(is(at(4096.0 * (1 << 20), 8), A::ring, P::simple));
  EXPECT_FALSE(at(1e9, 2));  // two nodes: the plugin leaves them to NCCL
}

/// One node of 8 with ring only, and across nodes ring + tree, all three protocols.
CollectiveCalibration small_cal() {
  CollectiveCalibration c;
  c.schema_version = 2;
  c.protocols[0] = {0.5, 5e-6, 64e3};
  c.protocols[1] = {0.9375, 8e-6, 0};
  c.protocols[2] = {1.0, 10e-6, 0};
  for (FabricLevel* f : {&c.intra_fabric, &c.inter_fabric}) {
    f->algorithms = {Algorithm::ring, Algorithm::tree};
    f->protocols = {Protocol::ll, Protocol::ll128, Protocol::simple};
    f->ring_efficiency = 0.9;
    f->tree_efficiency = 0.6;
    f->step_latency = {1e-6, 1e-6, 1e-6};
    f->simple_chunk = f->tree_chunk = f->ll128_chunk = 1e6;
  }
  return c;
}

TEST(TunerRegions, ThePluginOverridesTheFastestEstimate) {
  auto cal = small_cal();
  const FabricRates rates{100e9, 1e-6, 50e9, 10e-6};
  const RankLayout layout{8};
  const Bytes s = 4e9;  // large: Simple is fastest by the estimate
  EXPECT_EQ(plan_nccl(Op::all_reduce, s, ranks(32), layout, cal, rates, {}).protocol, "Simple");
  auto regions = std::make_shared<TunerRegions>();
  regions->ranks_per_node = 8;
  regions->min_nodes = 3;
  regions->by_op["all_reduce"] = {square(Algorithm::ring, Protocol::ll128, 0, 1e10, 17, 64)};
  cal.tuner_regions = regions;
  const auto chosen = plan_nccl(Op::all_reduce, s, ranks(32), layout, cal, rates, {});
  EXPECT_EQ(chosen.algorithm, "ring");
  EXPECT_EQ(chosen.protocol, "LL128");
  // NCCL_PROTO=Simple makes the region unusable: the estimate decides again.
  TunerOverride simple;
  simple.protocol = Protocol::simple;
  EXPECT_EQ(plan_nccl(Op::all_reduce, s, ranks(32), layout, cal, rates, simple).protocol, "Simple");
  // LL128's achieved fraction on a level scales its wire bytes: 1 / (0.9 x 0.9375 x 0.8).
  cal.inter_fabric.ll128_efficiency = 0.8;
  const auto slower = plan_nccl(Op::all_reduce, s, ranks(32), layout, cal, rates, {});
  for (const auto& f : slower.phases[0].flows)
    if (f.src / 8 != f.dst / 8) {
      const auto payload = f.bytes * 0.9 * 0.9375 * 0.8;
      EXPECT_NEAR(payload, 2.0 * 31 / 32 * s / 8, 1.0);  // per rank 2(n-1)/n S, 1/k of it leaves
    }
  EXPECT_GT(slower.predicted, chosen.predicted);
}

}  // namespace
}  // namespace trainsim::collective
