#pragma once
// Reads a scenario's optional "data" section (the input pipeline) into pipeline::PipelineConfig.
#include "core/json_reader.hpp"
#include "pipeline/pipeline_config.hpp"
#include "plan/training_plan.hpp"
#include "topology/topology.hpp"

namespace trainsim::scenario {

/// `file` is the scenario file (storage spec paths are relative to it). ConfigError on bad input,
/// including a topology without the "host" section the pipeline needs.
[[nodiscard]] pipeline::PipelineConfig read_pipeline(JsonObject o, const std::string& file,
                                                     const topology::Topology& topo);

/// Checks an FSx capacity against the deployment's allowed sizes; ConfigError naming `key`.
void check_fsx_capacity(const pipeline::PipelineConfig& c, Bytes capacity, const JsonObject& o,
                        const std::string& key);

/// Checks that the topology has local NVMe and the data set fits on it; ConfigError naming `key`.
void check_local_nvme(const pipeline::PipelineConfig& c, const topology::Topology& topo,
                      const JsonObject& o, const std::string& key);

/// Who reads the data at one point: the scenario's "data.readers", else the framework's rule for
/// the point's plan, and what it means per node.
struct PointReaders {
  pipeline::DataReaders rule = pipeline::DataReaders::every_rank;
  bool from_framework = true;  ///< the rule is the framework's default, not "data.readers"
  std::vector<pipeline::NodeReaders> nodes;
  pipeline::ReadSequences sequences;
};

/// Throws std::invalid_argument where the read plan cannot deal the readers equal shares
/// (pipeline::read_sequences); the scenario reader turns it into a ConfigError on the point.
[[nodiscard]] PointReaders point_readers(const pipeline::PipelineConfig& c, const plan::TrainingPlan& t,
                                         const plan::Layout& layout);

}  // namespace trainsim::scenario
