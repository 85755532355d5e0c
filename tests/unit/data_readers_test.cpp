// Which ranks read the training data under TP / CP / PP, per framework, and what the read plan
// makes of it (pipeline/data_readers.hpp), without SimGrid.
#include <gtest/gtest.h>

#include <stdexcept>

#include "pipeline/data_readers.hpp"
#include "pipeline/read_plan.hpp"

namespace trainsim {
namespace {

using pipeline::DataReaders;
using pipeline::ParallelDegrees;

TEST(DataReaders, RanksAreOrderedTensorContextDataPipelineAsMegatron) {
  const ParallelDegrees d{4, 1, 2, 2};  // TP 4 x DP 2 x PP 2 = 16 ranks
  // rank = ((stage x DP + dp) x CP + cp) x TP + tp: 5 = (0 x 2 + 1) x 4 + 1; 12 = (1 x 2 + 1) x 4 + 0.
  const auto a = pipeline::rank_position(5, d);
  EXPECT_EQ(a.tp, 1);
  EXPECT_EQ(a.dp, 1);
  EXPECT_EQ(a.stage, 0);
  const auto b = pipeline::rank_position(12, d);
  EXPECT_EQ(b.tp, 0);
  EXPECT_EQ(b.dp, 1);
  EXPECT_EQ(b.stage, 1);
  // The CP index sits between TP and DP.
  const ParallelDegrees c{2, 2, 2, 1};
  const auto r = pipeline::rank_position(6, c);  // 6 = (dp 1 x CP 2 + cp 1) x TP 2 + tp 0
  EXPECT_EQ(r.tp, 0);
  EXPECT_EQ(r.cp, 1);
  EXPECT_EQ(r.dp, 1);
}

TEST(DataReaders, Tp4Pp2OnTwoNodesReadsTwoReplicasPerNodeWhateverTheRule) {
  // Stage 0 (ranks 0-7) on node 0, stage 1 (8-15) on node 1; each node holds DP ranks 0 and 1.
  const ParallelDegrees d{4, 1, 2, 2};
  const auto core = pipeline::node_readers(DataReaders::tp_rank0_first_last_stage, d, 8);
  ASSERT_EQ(core.size(), 2u);
  for (const auto& n : core) {
    EXPECT_EQ(n.loaders, 2);  // TP rank 0 of DP 0 and of DP 1
    EXPECT_EQ(n.replicas, (std::vector<long>{0, 1}));
  }
  // Every rank a DataLoader: 4x the pre-processing, the same samples (TP ranks share a replica).
  const auto every = pipeline::node_readers(DataReaders::every_rank, d, 8);
  EXPECT_EQ(every[0].loaders, 8);
  EXPECT_EQ(every[0].replicas, (std::vector<long>{0, 1}));
  // Both nodes read the same replicas: one read sequence of 2 replicas, so a step reads
  // 2 replicas' samples on each node where data parallelism alone (16 replicas, 8 per node) reads 8:
  // 1/TP of the bytes.
  const auto seq = pipeline::read_sequences(core);
  EXPECT_EQ(seq.node_sequence, (std::vector<int>{0, 0}));
  EXPECT_EQ(seq.replicas_per_sequence, 2);
  const auto dp_only = pipeline::read_sequences(pipeline::node_readers(DataReaders::every_rank, {1, 1, 16, 1}, 8));
  EXPECT_EQ(dp_only.node_sequence, (std::vector<int>{0, 1}));
  EXPECT_EQ(dp_only.replicas_per_sequence, 8);
}

TEST(DataReaders, MiddleStagesReadUnderMegatron2021OnlyNotUnderMegatronCore) {
  const ParallelDegrees d{8, 1, 2, 4};  // TP 8 x DP 2 x PP 4 = 64 ranks, 8 nodes; stage s on nodes 2s, 2s+1
  const auto core = pipeline::node_readers(DataReaders::tp_rank0_first_last_stage, d, 8);
  const auto legacy = pipeline::node_readers(DataReaders::tp_rank0, d, 8);
  ASSERT_EQ(core.size(), 8u);
  int core_loaders = 0, legacy_loaders = 0;
  for (std::size_t n = 0; n < 8; ++n) {
    const bool end_stage = n < 2 || n >= 6;
    EXPECT_EQ(core[n].loaders, end_stage ? 1 : 0) << "node " << n;
    EXPECT_EQ(legacy[n].loaders, 1) << "node " << n;
    core_loaders += core[n].loaders;
    legacy_loaders += legacy[n].loaders;
  }
  EXPECT_EQ(core_loaders, 2 * 2);    // 2 end stages x 2 replicas
  EXPECT_EQ(legacy_loaders, 4 * 2);  // 4 stages x 2 replicas
  const auto seq = pipeline::read_sequences(core);
  EXPECT_EQ(seq.node_sequence, (std::vector<int>{0, 1, -1, -1, -1, -1, 0, 1}));
  EXPECT_EQ(seq.replicas_per_sequence, 1);
}

TEST(DataReaders, ContextParallelRanksOfAReplicaReadItsSamplesEach) {
  // Megatron-core: every CP rank's TP rank 0 reads the whole sequence, then keeps its chunks.
  const ParallelDegrees d{2, 2, 2, 1};  // 8 ranks, one node
  const auto n = pipeline::node_readers(DataReaders::tp_rank0_first_last_stage, d, 8);
  EXPECT_EQ(n[0].loaders, 4);  // 2 CP x 2 DP
  EXPECT_EQ(n[0].replicas, (std::vector<long>{0, 1}));
}

TEST(DataReaders, ReplicaSetsThatOverlapOrDifferInSizeAreRefused) {
  std::vector<pipeline::NodeReaders> overlap(2);
  overlap[0].replicas = {0, 1};
  overlap[1].replicas = {1, 2};
  EXPECT_THROW((void)pipeline::read_sequences(overlap), std::invalid_argument);
  std::vector<pipeline::NodeReaders> unequal(2);
  unequal[0].replicas = {0, 1};
  unequal[1].replicas = {2};
  EXPECT_THROW((void)pipeline::read_sequences(unequal), std::invalid_argument);
}

TEST(DataReaders, FrameworkDefaults) {
  plan::TrainingPlan t;
  EXPECT_EQ(pipeline::default_data_readers(t), DataReaders::every_rank);  // DDP, no model parallelism
  t.tp = 4;
  t.pp = 2;
  EXPECT_EQ(pipeline::default_data_readers(t), DataReaders::tp_rank0_first_last_stage);  // Megatron-core
  t.megatron_step_syncs = true;
  EXPECT_EQ(pipeline::default_data_readers(t), DataReaders::tp_rank0);  // Megatron-LM 2021
  t.megatron_step_syncs = false;
  t.pipeline_engine = plan::PipelineEngine::deepspeed;
  EXPECT_EQ(pipeline::default_data_readers(t), DataReaders::tp_rank0_first_last_stage);
  plan::TrainingPlan fsdp;
  fsdp.sharding = plan::Sharding::fsdp;
  fsdp.tp = 2;  // SMP v2 / torchtitan: every rank's DataLoader over its DP rank
  EXPECT_EQ(pipeline::default_data_readers(fsdp), DataReaders::every_rank);
}

TEST(DataReaders, NamesRoundTripAndUnknownNamesAreNone) {
  for (auto r : {DataReaders::every_rank, DataReaders::tp_rank0, DataReaders::tp_rank0_first_last_stage})
    EXPECT_EQ(pipeline::data_readers_named(pipeline::data_readers_name(r)), r);
  EXPECT_FALSE(pipeline::data_readers_named("tp_rank_0").has_value());
}

TEST(ReadPlan, NodesSharingASequenceReadTheSameFilesTheSecondFromTheServerCache) {
  pipeline::ReadPlanInput in;
  in.data = {1000.0, 1.0, 10.0};  // 1000 B, 1 B per sample, 100 files of 10 B
  in.nodes = 3;
  in.node_sequence = {0, -1, 0};  // a pipeline's first and last stages; a middle stage reads nothing
  in.samples_per_node_step = 50;  // 1000 samples / (1 sequence x 50) = 20 steps
  in.epochs = 1;
  in.servers = 1;
  in.server_cache = 1e9;
  in.page_cache_per_node = 1e9;
  const auto plan = pipeline::plan_reads(in);
  EXPECT_EQ(plan.steps_per_epoch, 20);
  double disk = 0, cache = 0, middle = 0;
  for (long s = 0; s < 20; ++s) {
    disk += plan.at(0, s, 0).server_disk[0];
    cache += plan.at(0, s, 2).server_cache[0];
    EXPECT_DOUBLE_EQ(plan.at(0, s, 2).server_disk[0], 0) << "node 2 reads node 0's files after it";
    middle += plan.at(0, s, 1).server_disk[0] + plan.at(0, s, 1).server_cache[0] + plan.at(0, s, 1).page_cache;
  }
  EXPECT_DOUBLE_EQ(disk, 1000);   // the data set once from disk
  EXPECT_DOUBLE_EQ(cache, 1000);  // and once more over the network from the servers' memory
  EXPECT_DOUBLE_EQ(middle, 0);
}

}  // namespace
}  // namespace trainsim
