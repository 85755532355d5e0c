#pragma once
// Simulates epochs of training with the input pipeline on its own SimGrid platform: per node a
// host with the instance's vCPUs (DataLoader workers and the collective library's CPU work
// share its cores) behind the node's fabric uplink; FSx file servers in their own zone, each
// with its disks and network link sized from capacity, reached over the same uplinks the
// gradients use (or each node's local NVMe). A node's trainer waits for its batches, meets the
// other nodes (the step's all-reduce synchronises them), then runs the step as simulated in
// detail beforehand: the accelerators' time, its inter-node bytes over the uplink and its CPU
// work on the host. FSx network burst follows a credit bucket sampled every second.
#include <vector>

#include "pipeline/pipeline_result.hpp"
#include "pipeline/read_plan.hpp"
#include "storage/fsx_spec.hpp"
#include "topology/topology.hpp"

namespace trainsim::engine {

struct PipelineStepProfile {
  Seconds step_time = 0;          ///< the step without the pipeline (detailed simulation)
  Seconds accelerator_busy = 0;   ///< compute time per step of one accelerator
  Seconds communication_time = 0; ///< time the communication stream is busy per step
  Bytes inter_node_bytes = 0;     ///< per node per step, sent over its uplink
  /// Per node, the ranks that run a DataLoader (pipeline/data_readers.hpp); each loads one
  /// batch per micro-batch and pre-processes it itself, while the node's bytes for the step (the
  /// read plan's, once per node: the page cache serves repeats) are shared among those batches.
  std::vector<int> node_loaders;
  long micro_batches = 1;         ///< loader batches per DataLoader per step (accumulation)
  long samples_per_loader_batch = 1;
  long samples_per_step = 1;      ///< whole job
};

struct PipelineSetup {
  const pipeline::ReadPlan* plan = nullptr;
  const topology::Topology* topology = nullptr;
  pipeline::LoaderConfig loader;
  bool local_nvme = false;
  storage::FsxFileSystem fsx;
  PipelineStepProfile step;
};

/// The epochs (no diagnoses: the caller applies its thresholds). Must run in a process without
/// another Engine (creates one).
[[nodiscard]] pipeline::PipelineResult simulate_input_pipeline(const PipelineSetup& setup);

}  // namespace trainsim::engine
