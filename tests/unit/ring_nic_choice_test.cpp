// Which NIC a ring channel crosses nodes through (NcclCostModel::partial_node_ring_nic), no
// SimGrid: on a DGX A100 under NCCL 2.8.3 a data-parallel group holding part of each node puts
// its channels on the first HCA of each entry GPU's PCIe switch (hca0, 2, 4, 6 = mlx5_0/2/6/8),
// as validate/nccl_ring_search/ finds; whole-node groups and platforms without the rule keep
// every rank's own route (-1).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <vector>

#include "collective/collective_calibration.hpp"
#include "collective/collective_plan.hpp"
#include "collective/nccl_cost_model.hpp"
#include "core/error.hpp"

namespace trainsim::collective {
namespace {

const RankLayout kEight{8};

/// The local accelerators `locals` on each of `nodes` nodes of 8, node by node.
std::vector<int> group(const std::vector<int>& locals, int nodes) {
  std::vector<int> g;
  for (int n = 0; n < nodes; ++n)
    for (int l : locals) g.push_back(8 * n + l);
  return g;
}

/// The NICs the plan's inter-node flows name (each flow leaves and enters through one NIC).
std::set<int> nics_of(const CollectivePlan& plan) {
  std::set<int> nics;
  for (const auto& ph : plan.phases)
    for (const auto& f : ph.flows) {
      if (f.src / 8 == f.dst / 8) {
        EXPECT_EQ(f.src_nic, -1);
        continue;
      }
      EXPECT_EQ(f.src_nic, f.dst_nic) << f.src << "->" << f.dst;
      nics.insert(f.src_nic);
    }
  return nics;
}

class RingNicChoice : public testing::Test {
protected:
  CollectivePlan ring(const std::vector<int>& g) {
    // 1 GiB: a data-parallel gradient all-reduce's size; forced to the ring NCCL 2.8.3's
    // estimate picks there (Figure 13's section), so the test does not rest on the tuner.
    return plan_collective(Op::all_reduce, 1 << 30, g, kEight, cal_, FabricRates{},
                           TunerOverride{Algorithm::ring, Protocol::simple});
  }
  CollectiveCalibration cal_ = load_collective_calibration("topologies/calibration/dgx-a100-nccl.json");
};

TEST_F(RingNicChoice, Tp2GroupsBothUseTheFourEvenHcas) {
  // {0,2,4,6}: channel c enters at GPU 2c, on switch c, whose first HCA is hca 2c. {1,3,5,7}:
  // GPU 2c+1 is on the same switch, so the same HCA: the two groups share four HCAs.
  EXPECT_EQ(nics_of(ring(group({0, 2, 4, 6}, 4))), (std::set<int>{0, 2, 4, 6}));
  EXPECT_EQ(nics_of(ring(group({1, 3, 5, 7}, 4))), (std::set<int>{0, 2, 4, 6}));
}

TEST_F(RingNicChoice, Tp4GroupsUseTwoHcasEach) {
  EXPECT_EQ(nics_of(ring(group({0, 4}, 8))), (std::set<int>{0, 4}));
  EXPECT_EQ(nics_of(ring(group({1, 5}, 8))), (std::set<int>{0, 4}));
  EXPECT_EQ(nics_of(ring(group({2, 6}, 8))), (std::set<int>{2, 6}));
  EXPECT_EQ(nics_of(ring(group({3, 7}, 8))), (std::set<int>{2, 6}));
}

TEST_F(RingNicChoice, OneGpuPerNodeUsesTheFirstHcaOfItsSwitch) {
  for (int l = 0; l < 8; ++l) EXPECT_EQ(nics_of(ring(group({l}, 8))), (std::set<int>{l / 2 * 2})) << l;
}

TEST_F(RingNicChoice, WholeNodeGroupsKeepEveryGpusOwnHca) {
  EXPECT_EQ(nics_of(ring(group({0, 1, 2, 3, 4, 5, 6, 7}, 2))), (std::set<int>{-1}));
}

TEST_F(RingNicChoice, TheTreeKeepsEveryGpusOwnHca) {
  // Only the ring graph's NIC choice was searched (the rule's source says so).
  const auto p = plan_collective(Op::all_reduce, 1 << 30, group({0, 2, 4, 6}, 4), kEight, cal_,
                                 FabricRates{}, TunerOverride{Algorithm::tree, Protocol::simple});
  ASSERT_EQ(p.algorithm, "tree");
  EXPECT_EQ(nics_of(p), (std::set<int>{-1}));
}

TEST_F(RingNicChoice, TheRuleBelongsToNccl283sCostModelAndJeanZaysLogsOnly) {
  // The platforms without a searched or logged NIC choice (p4d, NeMo's DGX H100, the RoCE
  // clusters) keep today's routes: their calibrations name no NICs. Jean Zay's comes from its
  // NCCL 2.10.3 logs (jean-zay-nccl.json): GPUs 0-3 on hfi0, 4-7 on hfi3.
  EXPECT_EQ(ring_nics(cal_), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(ring_nics(load_collective_calibration("topologies/calibration/jean-zay-nccl.json")),
            (std::vector<int>{0, 3}));
  for (const char* f : {"topologies/calibration/p4d-nccl.json", "topologies/calibration/dgx-h100-nccl.json",
                        "topologies/calibration/mosaicml-a100-roce-nccl.json"}) {
    EXPECT_TRUE(ring_nics(load_collective_calibration(f)).empty()) << f;
  }
}

/// A 2.8.3 cost-model file with `arch` and `nics` as nic_of_entry_accelerator; its path.
std::string cost_model_file(const std::string& name, const std::string& arch, const std::string& nics) {
  const std::string file = testing::TempDir() + name;
  std::ofstream(file) << R"({"schema_version": 1, "kind": "nccl_cost_model", "nccl_version": "2.8.3",
    "source": "test", "arch": ")" << arch << R"(", "cpu_vendor": "amd",
    "net_latency": {"value": "0us", "source": "test"},
    "partial_node_ring_nics": {"nic_of_entry_accelerator": )" << nics << R"(, "source": "test"},
    "graphs": {"ring": {"channels": 8, "bw_intra_gbps": 24, "bw_inter_gbps": 24, "source": "test"}}})";
  return file;
}

/// The ConfigError's message loading `file` throws (fails the test if none).
std::string load_error(const std::string& file) {
  try {
    (void)load_nccl_cost_model(file);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError loading " << file;
  return "";
}

TEST(RingNicChoiceFile, ANegativeNicIsAConfigErrorNamingThePath) {
  const std::string file = cost_model_file("nccl-cost-bad-nic.json", "ampere", "[0, -1]");
  const std::string what = load_error(file);
  EXPECT_NE(what.find("nic_of_entry_accelerator"), std::string::npos) << what;
  EXPECT_NE(what.find(file), std::string::npos) << what;
}

TEST(RingNicChoiceFile, ANicPastSixtyThreeIsAConfigError) {
  EXPECT_NO_THROW((void)load_nccl_cost_model(cost_model_file("nccl-cost-nic-63.json", "ampere", "[0, 63]")));
  const std::string what = load_error(cost_model_file("nccl-cost-nic-64.json", "ampere", "[0, 64]"));
  EXPECT_NE(what.find("[0, 63]"), std::string::npos) << what;
}

TEST(RingNicChoiceFile, Nccl283WithAHopperArchIsAConfigError) {
  // 2.8.3's tuning.cc tables stop at Ampere: a Hopper file naming that release is a mistake.
  const std::string what = load_error(cost_model_file("nccl-cost-hopper-2.8.json", "hopper", "[0]"));
  EXPECT_NE(what.find("/arch"), std::string::npos) << what;
  EXPECT_NE(what.find("volta and ampere"), std::string::npos) << what;
}

}  // namespace
}  // namespace trainsim::collective
