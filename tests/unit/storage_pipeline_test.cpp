// FSx sizing from the shipped table and the read plan's cache arithmetic, without SimGrid.
#include <gtest/gtest.h>

#include "pipeline/diagnosis.hpp"
#include "pipeline/read_plan.hpp"
#include "storage/fsx_spec.hpp"

namespace trainsim {
namespace {

constexpr double kTiB = 1024.0 * 1024 * 1024 * 1024;

TEST(FsxSpec, Scratch2SizesAsSource001Says) {
  const auto spec = storage::load_fsx_spec("topologies/storage/fsx-lustre.json");
  const auto* d = storage::find_deployment(spec, "SCRATCH_2", 200);
  ASSERT_NE(d, nullptr);
  // Source 001: 1.2 TiB gives 240 MB/s (200 MB/s per TiB x 1.2 TiB, decimal MB).
  const auto small = storage::size_file_system(spec, *d, 1.2 * kTiB);
  EXPECT_NEAR(small.disk_baseline, 1.2 * 200e6, 1);
  EXPECT_EQ(small.servers, 1);
  // 12 TiB: 2.4 GB/s, 12 x 6.7 GiB = 80.4 GiB of server cache, 5 servers of 2.4 TiB.
  const auto big = storage::size_file_system(spec, *d, 12 * kTiB);
  EXPECT_NEAR(big.network_baseline, 2.4e9, 1);
  EXPECT_NEAR(big.cache, 12 * 6.7 * 1024 * 1024 * 1024, 1e3);
  EXPECT_EQ(big.servers, 5);
  EXPECT_TRUE(storage::allowed_capacity(*d, 1.2 * kTiB));
  EXPECT_TRUE(storage::allowed_capacity(*d, 4.8 * kTiB));
  EXPECT_FALSE(storage::allowed_capacity(*d, 3.0 * kTiB));
}

TEST(ReadPlan, FirstEpochFromDiskThenThePageCacheHoldsWhatTheNodeRead) {
  pipeline::ReadPlanInput in;
  in.data = {1000.0, 1.0, 10.0};  // 1000 B, 1 B per sample, 100 files of 10 B
  in.nodes = 2;
  in.samples_per_node_step = 50;  // 1000 samples / (2 x 50) = 10 steps per epoch
  in.epochs = 2;
  in.servers = 2;
  in.server_cache = 0;
  in.page_cache_per_node = 1e9;  // holds everything
  const auto plan = pipeline::plan_reads(in);
  EXPECT_EQ(plan.steps_per_epoch, 10);
  double disk1 = 0, page2 = 0, disk2 = 0;
  for (long s = 0; s < 10; ++s)
    for (int n = 0; n < 2; ++n) {
      for (double b : plan.at(0, s, n).server_disk) disk1 += b;
      for (double b : plan.at(1, s, n).server_disk) disk2 += b;
      page2 += plan.at(1, s, n).page_cache;
    }
  EXPECT_DOUBLE_EQ(disk1, 1000);  // every file read once from disk
  // Epoch 2 deals the files again at random: each node holds the half it read, so about half
  // of its new files are in its page cache; together they account for every byte.
  EXPECT_DOUBLE_EQ(page2 + disk2, 1000);
  EXPECT_GT(page2, 200);
  EXPECT_LT(page2, 800);
}

TEST(Diagnosis, RulesFireOnTheirEvidence) {
  pipeline::EpochResult e;
  e.wait_fraction = 0.5;
  e.io_wait_fraction = 0.45;
  e.cpu_wait_fraction = 0.05;
  e.accelerator_utilisation = 0.5;
  e.max_node_wait_fraction = 0.5;
  e.min_node_wait_fraction = 0.5;
  const auto d = pipeline::diagnose({e});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].rule, "IOBottleneck");
  EXPECT_EQ(d[1].rule, "LowGPUUtilization");
  EXPECT_NE(d[0].evidence.find("45.0%"), std::string::npos) << d[0].evidence;
}

TEST(Diagnosis, PreProcessingWaitBehindSlowReadsIsNotACpuBottleneck) {
  // 60% of the epoch on reads, 15% on pre-processing the batches that arrived late, vCPUs idle:
  // only the reads are the bottleneck. The same 15% with fast reads (5%) is the CPU's.
  pipeline::EpochResult e;
  e.wait_fraction = 0.75;
  e.io_wait_fraction = 0.60;
  e.cpu_wait_fraction = 0.15;
  e.accelerator_utilisation = 0.9;
  e.cpu_utilisation = 0.05;
  auto rules = [](const std::vector<pipeline::Diagnosis>& d) {
    std::string out;
    for (const auto& x : d) out += x.rule + " ";
    return out;
  };
  EXPECT_EQ(rules(pipeline::diagnose({e})), "IOBottleneck ");
  e.io_wait_fraction = 0.05;
  EXPECT_EQ(rules(pipeline::diagnose({e})), "CPUBottleneck ");
}

TEST(Diagnosis, ThresholdsComeFromTheScenario) {
  // Accelerators busy 75%: fine by the default 70%, LowGPUUtilization at a stricter 80%; a 12%
  // read stall is an IOBottleneck at the default 10%, not at 15%.
  pipeline::EpochResult e;
  e.wait_fraction = e.io_wait_fraction = 0.12;
  e.accelerator_utilisation = 0.75;
  pipeline::DiagnosisThresholds strict;
  strict.accelerator_utilisation = 0.80;
  strict.wait = 0.15;
  const auto d_default = pipeline::diagnose({e});
  ASSERT_EQ(d_default.size(), 1u);
  EXPECT_EQ(d_default[0].rule, "IOBottleneck");
  const auto d_strict = pipeline::diagnose({e}, strict);
  ASSERT_EQ(d_strict.size(), 1u);
  EXPECT_EQ(d_strict[0].rule, "LowGPUUtilization");
}

}  // namespace
}  // namespace trainsim
