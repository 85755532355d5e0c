#pragma once
// Which ranks read the training data from storage ("data.readers"), as each framework's code
// decides it, and what that means per node: how many DataLoaders run there and which data-parallel
// replicas' samples it reads. Ranks that do not read get their batch from a rank that does (over
// the TP group; the pipeline's middle stages need none). Plain data, no SimGrid.
//
// Sources (read in each framework's code):
// - every_rank: PyTorch FSDP / FSDP + TP scripts build a DataLoader on every rank with a sampler
//   over the data-parallel rank, so a TP group's ranks read the same samples (torchtitan
//   torchtitan/train.py at 000204a4 builds it with dp_rank / dp_world_size and calls next() on
//   every rank, PP included; AWS Neuron's TP developer guide: DistributedSampler over
//   get_data_parallel_rank(), "each of these should get the same data").
// - tp_rank0: Megatron-LM 2021 (6985e58): "Data loader only on rank 0 of each model parallel
//   group" (megatron/training.py:806, build_train_valid_test_data_iterators); every stage's
//   forward_step calls get_batch, which reads on that rank and broadcast_data()s over TP
//   (pretrain_gpt.py:44-60).
// - tp_rank0_first_last_stage: Megatron-core (Megatron-LM core_r0.10.0, 7ee599a2):
//   pretrain_gpt.py is_dataset_built_on_rank() is (first or last stage) and TP rank 0, and
//   get_batch returns nothing on middle stages; DeepSpeed's PipelineEngine (v0.6.2 and
//   v0.16.4+6, 38327e07f, deepspeed/runtime/pipe/schedule.py TrainSchedule: "First/last stage
//   loads", the only LoadMicroBatch) under Megatron-DeepSpeed (bigscience 8387ae17,
//   megatron/training.py:1163, data loaders on TP rank 0 only; get_batch_pipe broadcasts over TP).
// Both end stages read whole samples (the labels are the tokens shifted by one), so a replica
// spread over two nodes reads its samples on each of them.
#include <optional>
#include <string>
#include <vector>

#include "plan/training_plan.hpp"

namespace trainsim::pipeline {

enum class DataReaders {
  every_rank,                 ///< each rank runs a DataLoader over its data-parallel rank's samples
  tp_rank0,                   ///< TP rank 0 of every pipeline stage (and context-parallel rank)
  tp_rank0_first_last_stage,  ///< TP rank 0 of the first and last stages only
};

[[nodiscard]] std::optional<DataReaders> data_readers_named(const std::string& name);
[[nodiscard]] const char* data_readers_name(DataReaders r);

/// The framework's own rule for `plan`, by the code that runs it: sharded schedules (FSDP,
/// ZeRO-3) and jobs without model parallelism every_rank; DeepSpeed's pipeline engine
/// tp_rank0_first_last_stage; Megatron's PTD-P schedule tp_rank0 under Megatron-LM 2021's
/// training loop (megatron_step_syncs), tp_rank0_first_last_stage (Megatron-core) otherwise.
[[nodiscard]] DataReaders default_data_readers(const plan::TrainingPlan& plan);

/// A rank's place in the job, in Megatron's order (tensor fastest, then context, data, pipeline).
struct RankPosition {
  long tp = 0, cp = 0, dp = 0, stage = 0;
};

/// Degrees of the job: world = tp x cp x dp x pp.
struct ParallelDegrees {
  long tp = 1, cp = 1, dp = 1, pp = 1;
  [[nodiscard]] long world() const { return tp * cp * dp * pp; }
};

[[nodiscard]] RankPosition rank_position(long rank, const ParallelDegrees& d);
[[nodiscard]] bool reads_data(DataReaders r, const RankPosition& p, const ParallelDegrees& d);

/// One node's readers.
struct NodeReaders {
  int loaders = 0;             ///< ranks on the node that run a DataLoader
  std::vector<long> replicas;  ///< distinct data-parallel indices they read, ascending
};

/// Per node (ranks_per_node consecutive ranks each), who reads.
[[nodiscard]] std::vector<NodeReaders> node_readers(DataReaders r, const ParallelDegrees& d, long ranks_per_node);

/// The read plan's view (pipeline::ReadPlanInput::node_sequence): nodes that read the same
/// replicas share a sequence of files, numbered in node order; -1 where a node reads nothing.
struct ReadSequences {
  std::vector<int> node_sequence;
  long replicas_per_sequence = 0;  ///< data-parallel replicas whose samples a sequence holds
};

/// Throws std::invalid_argument where two nodes read replica sets that overlap without being
/// equal or that differ in size: the read plan deals every sequence an equal share of files.
[[nodiscard]] ReadSequences read_sequences(const std::vector<NodeReaders>& nodes);

}  // namespace trainsim::pipeline
