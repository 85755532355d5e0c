#pragma once
// Which bytes each node reads for each step, and from where, decided before simulating (plain
// data, deterministic): every epoch the files are shuffled (fixed seed) and dealt round-robin to
// the nodes' read sequences, as a distributed sampler deals samples to data-parallel ranks; a
// node reads a whole file when its step first needs it. Nodes that read the same replicas'
// samples (a pipeline's first and last stages) follow the same sequence, each through its own
// page cache; a node whose ranks read nothing (middle stages) has none. The node's page cache and each file server's in-memory cache are LRU caches of
// files (a striped file's part on each server); what neither cache holds comes from disk.
#include <vector>

#include "core/units.hpp"
#include "pipeline/pipeline_config.hpp"

namespace trainsim::pipeline {

/// One node's reads for one step.
struct StepRead {
  Bytes page_cache = 0;              ///< served from the node's RAM: no I/O
  std::vector<Bytes> server_cache;   ///< per file server: from its memory over the network
  std::vector<Bytes> server_disk;    ///< per file server: from its disks, then the network
  Bytes local_disk = 0;              ///< from local NVMe (local_nvme source)
};

struct ReadPlanInput {
  DataSet data;
  int nodes = 1;
  long samples_per_node_step = 1;  ///< per read sequence
  /// Each node's read sequence (pipeline::read_sequences), -1 for none; empty: node n reads
  /// sequence n.
  std::vector<int> node_sequence;
  int epochs = 1;
  bool local_nvme = false;
  int servers = 1;            ///< FSx only
  Bytes server_cache = 0;     ///< whole file system
  Bytes large_file_threshold = 0;
  int large_file_stripes = 1;
  Bytes page_cache_per_node = 0;
  std::uint64_t seed = 0;
};

struct ReadPlan {
  int nodes = 1, servers = 1, epochs = 1;
  long steps_per_epoch = 0;
  std::vector<StepRead> reads;  ///< [(epoch * steps_per_epoch + step) * nodes + node]

  [[nodiscard]] const StepRead& at(int epoch, long step, int node) const {
    return reads[static_cast<std::size_t>((epoch * steps_per_epoch + step) * nodes + node)];
  }
};

[[nodiscard]] ReadPlan plan_reads(const ReadPlanInput& in);

}  // namespace trainsim::pipeline
