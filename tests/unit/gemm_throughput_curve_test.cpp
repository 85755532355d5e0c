// The GEMM throughput curve: reproduces its samples, interpolates monotonically between them,
// pools samples that would make it fall, and applies tile quantization to ragged shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "model/gemm_throughput_curve.hpp"

using trainsim::model::Dtype;
using trainsim::model::GemmSample;
using trainsim::model::GemmThroughputCurve;

namespace {

GemmSample cube(double edge, double tflops) {
  return {Dtype::bf16, edge, edge, edge, 1, tflops * 1e12};
}

// Square, aligned, rising: 1024^3 100 TF, 2048^3 200 TF, 4096^3 250 TF.
const std::vector<GemmSample> kRising = {cube(1024, 100), cube(2048, 200), cube(4096, 250)};

}  // namespace

TEST(GemmThroughputCurve, ReproducesEverySampleItWasBuiltFrom) {
  const GemmThroughputCurve c(kRising, 128);
  for (const auto& s : kRising) EXPECT_NEAR(c.achieved(s.m, s.n, s.k, s.batch), s.achieved, 1e-6 * s.achieved);
}

TEST(GemmThroughputCurve, InterpolatesMonotonicallyBetweenSamples) {
  const GemmThroughputCurve c(kRising, 0);
  double previous = 0;
  for (double edge = 1024; edge <= 4096; edge *= 1.05) {
    const double r = c.achieved(edge, edge, edge, 1);
    EXPECT_GE(r, previous) << "edge " << edge;
    previous = r;
  }
  // Halfway in log(FLOPs) between 1024^3 and 2048^3 (edge 1024 * 2^0.5) is halfway in rate.
  const double mid = 1024 * std::sqrt(2.0);
  EXPECT_NEAR(c.achieved(mid, mid, mid, 1), 150e12, 1e6);
}

TEST(GemmThroughputCurve, SmallerThanTheSmallestSampleTakesItsTime) {
  const GemmThroughputCurve c(kRising, 0);
  // 512^3 is 1/8 of 1024^3's work in the same time: 100 / 8 = 12.5 TF.
  EXPECT_NEAR(c.achieved(512, 512, 512, 1), 12.5e12, 1e6);
  // Beyond the largest sample: the largest sample's rate.
  EXPECT_NEAR(c.achieved(16384, 16384, 16384, 1), 250e12, 1e6);
}

TEST(GemmThroughputCurve, PartialTilesCostFullOnes) {
  const GemmThroughputCurve c(kRising, 128);
  // n = 2048 + 64 pads to 2176: utilisation 2112/2176 of the full-tile rate at that size.
  const double full = GemmThroughputCurve(kRising, 0).achieved(2048, 2112, 2048, 1);
  EXPECT_NEAR(c.achieved(2048, 2112, 2048, 1), full * 2112.0 / 2176.0, 1e-6 * full);
}

TEST(GemmThroughputCurve, PoolsSamplesThatWouldMakeItFall) {
  // A 4096^3 sample below the 2048^3 one: both become their mean, (200 + 160) / 2 = 180 TF.
  const GemmThroughputCurve c({cube(1024, 100), cube(2048, 200), cube(4096, 160)}, 0);
  EXPECT_NEAR(c.achieved(2048, 2048, 2048, 1), 180e12, 1e6);
  EXPECT_NEAR(c.achieved(4096, 4096, 4096, 1), 180e12, 1e6);
  EXPECT_NEAR(c.achieved(1024, 1024, 1024, 1), 100e12, 1e6);
}

TEST(GemmThroughputCurve, SamplesOfOneSizeShareTheirMean) {
  // Same FLOPs, different shapes: one size, one throughput (120 + 80) / 2.
  const GemmThroughputCurve c({{Dtype::bf16, 2048, 1024, 1024, 1, 120e12},
                               {Dtype::bf16, 1024, 2048, 1024, 1, 80e12}},
                              0);
  EXPECT_NEAR(c.achieved(2048, 1024, 1024, 1), 100e12, 1e6);
  EXPECT_EQ(c.knots().size(), 1u);
}

TEST(GemmThroughputCurve, LeavesSamplesAtTheBandwidthRoofOutOfTheTensorCoreCurve) {
  // An attention-like batched GEMM, 4096 x 4096 x 64, 96 times, at 170 TF: its bf16 operands
  // (2 x 96 x (2 x 4096 x 64 + 4096^2) = 3.4 GB) take 1.2 ms at 2.75 TB/s, all of its 1.2 ms.
  const GemmSample roof{Dtype::bf16, 4096, 4096, 64, 96, 170e12};
  std::vector<GemmSample> samples = kRising;
  samples.push_back(roof);
  const GemmThroughputCurve with_roof(samples, 0, 2.75e12);
  ASSERT_EQ(with_roof.memory_bound().size(), 1u);
  // The square samples alone define the curve: 250 TF at 4096^3 is not pooled down.
  EXPECT_NEAR(with_roof.achieved(4096, 4096, 4096, 1), 250e12, 1e6);
  // Without a bandwidth every sample counts, and the pooling pulls the large end down.
  const GemmThroughputCurve all(samples, 0);
  EXPECT_TRUE(all.memory_bound().empty());
  EXPECT_LT(all.achieved(4096, 4096, 4096, 1), 240e12);
  // A sample whose traffic is well under its time (the squares) is never left out.
  EXPECT_EQ(GemmThroughputCurve(kRising, 0, 2.75e12).memory_bound().size(), 0u);
}
