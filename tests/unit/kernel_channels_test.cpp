// Where a collective's channel count (thread blocks, each holding an SM) comes from
// (collective/kernel_channels.hpp): the topology's collective calibration, by call kind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "collective/collective_calibration.hpp"
#include "collective/collective_plan.hpp"
#include "collective/kernel_channels.hpp"
#include "core/error.hpp"
#include "support/rank_groups.hpp"

namespace trainsim::collective {
namespace {

using testing_support::ranks;

const RankLayout kEight{8};

TEST(KernelChannels, DgxA100FromItsCalibrationFile) {
  const auto cal = load_collective_calibration("topologies/calibration/dgx-a100-nccl.json");
  EXPECT_EQ(cal.channels.one_node, 24);
  EXPECT_EQ(cal.channels.multi_node, 16);
  EXPECT_EQ(cal.channels.net_peer, 2);
  // Inside a node, whatever the group's size: each accelerator reaches the NVSwitch alike.
  EXPECT_EQ(kernel_channels(Op::all_gather, ranks(0, 8), kEight, cal), 24);
  EXPECT_EQ(kernel_channels(Op::all_reduce, ranks(4, 2), kEight, cal), 24);
  // Across whole nodes, and across nodes with one accelerator each (one NIC, doubled).
  EXPECT_EQ(kernel_channels(Op::reduce_scatter, ranks(0, 32), kEight, cal), 16);
  EXPECT_EQ(kernel_channels(Op::all_reduce, ranks(3, 4, 8), kEight, cal), 2);
  EXPECT_EQ(kernel_channels(Op::all_reduce, {0, 1, 2, 3, 8, 9, 10, 11}, kEight, cal), 8);
  // Point to point: NCCL_NCHANNELS_PER_NET_PEER across nodes, nothing sourced inside one.
  EXPECT_EQ(kernel_channels(Op::send_recv, {0, 8}, kEight, cal), 2);
  EXPECT_EQ(kernel_channels(Op::send_recv, {0, 1}, kEight, cal), 0);
  EXPECT_EQ(kernel_channels(Op::alltoall, ranks(0, 16), kEight, cal), 0);
  EXPECT_EQ(kernel_channels(Op::all_reduce, {5}, kEight, cal), 0);
}

TEST(KernelChannels, P4dHasHalfTheNetworkChannelsOfEightNics) {
  const auto cal = load_collective_calibration("topologies/calibration/p4d-nccl.json");
  EXPECT_EQ(kernel_channels(Op::all_reduce, ranks(0, 8), kEight, cal), 24);
  EXPECT_EQ(kernel_channels(Op::all_reduce, ranks(0, 16), kEight, cal), 8);
  EXPECT_EQ(kernel_channels(Op::all_reduce, {0, 1, 8, 9}, kEight, cal), 2);
}

TEST(KernelChannels, Dl1TakesNoSms) {
  // HCCL on Gaudi (schema 1): its collectives are not CUDA kernels.
  const auto cal = load_collective_calibration("topologies/calibration/dl1-hccl.json");
  EXPECT_EQ(kernel_channels(Op::all_reduce, ranks(0, 8), kEight, cal), 0);
  EXPECT_EQ(kernel_channels(Op::all_reduce, ranks(0, 16), kEight, cal), 0);
}

TEST(KernelChannels, H100NodesByNcclVersion) {
  // NCCL 2.2x (DGX H100, p5): 24 rings inside a node (6 of 60 GB/s over 18 NVLinks, duplicated,
  // doubled), 16 across whole nodes (one ring per 400 Gb/s NIC, doubled); a part-node group gets
  // 4 per GPU of its fullest node, more per GPU than a whole node; NVLS kernels take 16.
  for (const std::string f : {"topologies/calibration/dgx-h100-nccl.json",
                              "topologies/calibration/p5-nccl.json"}) {
    const auto cal = load_collective_calibration(f);
    EXPECT_EQ(kernel_channels(Op::all_gather, ranks(0, 8), kEight, cal), 24) << f;
    EXPECT_EQ(kernel_channels(Op::reduce_scatter, ranks(0, 32), kEight, cal), 16) << f;
    EXPECT_EQ(kernel_channels(Op::reduce_scatter, ranks(2, 4, 8), kEight, cal), 4) << f;
    EXPECT_EQ(kernel_channels(Op::all_gather, {0, 1, 8, 9}, kEight, cal), 8) << f;
    EXPECT_EQ(kernel_channels(Op::all_gather, {0, 1, 2, 3, 4, 8, 9, 10, 11, 12}, kEight, cal), 20) << f;
    EXPECT_EQ(kernel_channels(Op::all_reduce, ranks(0, 8), kEight, cal, Algorithm::nvls), 16) << f;
    EXPECT_EQ(kernel_channels(Op::all_reduce, ranks(0, 16), kEight, cal, Algorithm::nvls_tree), 16) << f;
    EXPECT_EQ(kernel_channels(Op::send_recv, {0, 8}, kEight, cal), 2) << f;
  }
  // NCCL 2.18.1 (llm-foundry's PyTorch 2.1): sm90 copies multi-node rings once more up to 32.
  const auto mosaic = load_collective_calibration("topologies/calibration/mosaicml-h100-nccl.json");
  EXPECT_EQ(kernel_channels(Op::all_gather, ranks(0, 8), kEight, mosaic), 24);
  EXPECT_EQ(kernel_channels(Op::all_gather, ranks(0, 64), kEight, mosaic), 32);
  EXPECT_EQ(kernel_channels(Op::all_gather, {0, 1, 8, 9}, kEight, mosaic), 8);
  // With 200 Gb/s NICs the rings are too slow for either copy: 16, and 2 per GPU of a part node.
  const auto slow = load_collective_calibration("topologies/calibration/mosaicml-h100-1600g-nccl.json");
  EXPECT_EQ(kernel_channels(Op::all_gather, ranks(0, 64), kEight, slow), 16);
  EXPECT_EQ(kernel_channels(Op::all_gather, {0, 1, 8, 9}, kEight, slow), 4);
}

TEST(KernelChannels, AnNvlsPlanTakesTheNvlsChannels) {
  const auto cal = load_collective_calibration("topologies/calibration/dgx-h100-nccl.json");
  FabricRates rates;
  rates.intra_link = 450e9;
  rates.node_uplink = 400e9;
  const auto nvls = plan_collective(Op::all_reduce, 1e9, ranks(0, 8), kEight, cal, rates);
  ASSERT_EQ(nvls.algorithm, "nvls");
  EXPECT_EQ(nvls.channels, 16);
  const auto ring = plan_collective(Op::all_gather, 1e9, ranks(0, 8), kEight, cal, rates);
  ASSERT_EQ(ring.algorithm, "ring");
  EXPECT_EQ(ring.channels, 24);
}

TEST(KernelChannels, ThePlanCarriesItsChannels) {
  const auto cal = load_collective_calibration("topologies/calibration/mosaicml-a100-roce-nccl.json");
  FabricRates rates;
  rates.intra_link = 240e9;
  rates.node_uplink = 200e9;
  const auto plan = plan_collective(Op::all_gather, 256e6, ranks(0, 16), kEight, cal, rates);
  EXPECT_EQ(plan.channels, 16);
}

TEST(KernelChannels, BadCountIsAConfigError) {
  // The fabric files are named by absolute path, so the file can live in the test's temp dir.
  const std::string cal = std::filesystem::absolute("topologies/calibration").string() + "/";
  const std::string path = testing::TempDir() + "/bad-channels.json";
  {
    std::ofstream f(path);
    f << R"({"schema_version": 2, "library": "x", "protocols": ")" << cal << R"(nccl-protocols.json",
            "intra_node": ")" << cal << R"(nccl-nvswitch-a100.json", "inter_node": ")" << cal
      << R"(nccl-ib-hdr.json", "channels": {"one_node": 2.5, "source": "s"}})";
  }
  try {
    (void)load_collective_calibration(path);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/channels/one_node"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainsim::collective
