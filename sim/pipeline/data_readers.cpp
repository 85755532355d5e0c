#include "pipeline/data_readers.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"

namespace trainsim::pipeline {

namespace {

struct Named {
  DataReaders value;
  const char* name;
};
constexpr Named kNames[] = {
    {DataReaders::every_rank, "every_rank"},
    {DataReaders::tp_rank0, "tp_rank0"},
    {DataReaders::tp_rank0_first_last_stage, "tp_rank0_first_last_stage"},
};

}  // namespace

std::optional<DataReaders> data_readers_named(const std::string& name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.value;
  return std::nullopt;
}

const char* data_readers_name(DataReaders r) {
  for (const auto& n : kNames)
    if (n.value == r) return n.name;
  return "?";
}

DataReaders default_data_readers(const plan::TrainingPlan& plan) {
  const bool sharded = plan.sharding == plan::Sharding::fsdp || plan.sharding == plan::Sharding::zero3;
  const bool model_parallel = plan.tp > 1 || plan.pp > 1 || plan.cp > 1;
  // The PTD-P schedule (program/build_program.cpp) is Megatron's or DeepSpeed's pipeline code;
  // the sharded and data-parallel ones are a plain torch script's DataLoader on every rank.
  if (sharded || !model_parallel) return DataReaders::every_rank;
  if (plan.pipeline_engine == plan::PipelineEngine::deepspeed) return DataReaders::tp_rank0_first_last_stage;
  return plan.megatron_step_syncs ? DataReaders::tp_rank0 : DataReaders::tp_rank0_first_last_stage;
}

RankPosition rank_position(long rank, const ParallelDegrees& d) {
  TRAINSIM_CHECK(rank >= 0 && rank < d.world(), "rank outside the job");
  RankPosition p;
  p.tp = rank % d.tp;
  p.cp = rank / d.tp % d.cp;
  p.dp = rank / (d.tp * d.cp) % d.dp;
  p.stage = rank / (d.tp * d.cp * d.dp);
  return p;
}

bool reads_data(DataReaders r, const RankPosition& p, const ParallelDegrees& d) {
  switch (r) {
    case DataReaders::every_rank: return true;
    case DataReaders::tp_rank0: return p.tp == 0;
    case DataReaders::tp_rank0_first_last_stage: return p.tp == 0 && (p.stage == 0 || p.stage == d.pp - 1);
  }
  return true;
}

std::vector<NodeReaders> node_readers(DataReaders r, const ParallelDegrees& d, long ranks_per_node) {
  TRAINSIM_CHECK(ranks_per_node >= 1 && d.world() % ranks_per_node == 0, "ranks do not fill whole nodes");
  std::vector<NodeReaders> nodes(static_cast<std::size_t>(d.world() / ranks_per_node));
  for (long rank = 0; rank < d.world(); ++rank) {
    const auto p = rank_position(rank, d);
    if (!reads_data(r, p, d)) continue;
    auto& n = nodes[static_cast<std::size_t>(rank / ranks_per_node)];
    ++n.loaders;
    if (std::find(n.replicas.begin(), n.replicas.end(), p.dp) == n.replicas.end()) n.replicas.push_back(p.dp);
  }
  for (auto& n : nodes) std::sort(n.replicas.begin(), n.replicas.end());
  return nodes;
}

ReadSequences read_sequences(const std::vector<NodeReaders>& nodes) {
  ReadSequences out;
  std::vector<std::vector<long>> seen;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const auto& replicas = nodes[n].replicas;
    if (replicas.empty()) {
      out.node_sequence.push_back(-1);
      continue;
    }
    const auto same = std::find(seen.begin(), seen.end(), replicas);
    if (same != seen.end()) {
      out.node_sequence.push_back(static_cast<int>(same - seen.begin()));
      continue;
    }
    for (const auto& other : seen)
      for (long r : replicas)
        if (std::find(other.begin(), other.end(), r) != other.end())
          throw std::invalid_argument("node " + std::to_string(n) + " reads part of another node's data-parallel replicas (replica " +
                                      std::to_string(r) + "); the read plan needs each node to read all of a set or none of it");
    if (out.replicas_per_sequence != 0 && static_cast<long>(replicas.size()) != out.replicas_per_sequence)
      throw std::invalid_argument("node " + std::to_string(n) + " reads " + std::to_string(replicas.size()) +
                                  " data-parallel replicas where an earlier node's read " +
                                  std::to_string(out.replicas_per_sequence) + "; the read plan needs equal shares");
    out.replicas_per_sequence = static_cast<long>(replicas.size());
    out.node_sequence.push_back(static_cast<int>(seen.size()));
    seen.push_back(replicas);
  }
  return out;
}

}  // namespace trainsim::pipeline
