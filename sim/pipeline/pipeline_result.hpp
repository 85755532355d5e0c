#pragma once
// What an input-pipeline simulation measured, per epoch, and the diagnoses drawn from it
// (pipeline/diagnosis.hpp).
#include <string>
#include <vector>

#include "core/units.hpp"

namespace trainsim::pipeline {

struct EpochResult {
  Seconds time = 0;
  double samples_per_s = 0;
  /// Of the epoch, the job stalled waiting for batches: per step, the wait of the node that
  /// waited longest (the step's all-reduce holds the others), summed over the epoch's steps.
  double wait_fraction = 0;
  double io_wait_fraction = 0;  ///< the part of wait_fraction spent on reads
  double cpu_wait_fraction = 0; ///< the part spent on pre-processing (and CPU contention)
  double max_node_wait_fraction = 0;  ///< of the epoch, the longest any one node waited in all
  double min_node_wait_fraction = 0;
  int slowest_node = 0;
  double accelerator_utilisation = 0;  ///< accelerator busy time / epoch time
  double cpu_utilisation = 0;          ///< (pre-processing + collective) core-seconds / (vCPUs x time)
  Bytes bytes_page_cache = 0, bytes_server_cache = 0, bytes_disk = 0;  ///< all nodes
};

/// A SageMaker-Debugger-style finding with its evidence.
struct Diagnosis {
  std::string rule;      ///< IOBottleneck, CPUBottleneck, LowGPUUtilization, LoadBalancing
  int epoch = 0;         ///< 1-based
  std::string evidence;
};

struct PipelineResult {
  std::string source;                    ///< e.g. "FSx SCRATCH_2/200 1.2 TiB (1 server)"
  std::string readers;                   ///< which ranks read the data (pipeline/data_readers.hpp)
  double compute_bound_samples_per_s = 0;  ///< the step simulated without the pipeline
  long steps_per_epoch = 0;
  std::vector<EpochResult> epochs;
  std::vector<Diagnosis> diagnoses;
};

}  // namespace trainsim::pipeline
