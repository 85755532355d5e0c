#pragma once
// A scenario's input pipeline (the optional "data" section): the data set, the DataLoader on
// each node, where the data comes from (FSx for Lustre or local NVMe), how many epochs to
// simulate and when the diagnoses fire. Plain data; scenario/ reads it, engine/ runs it.
#include <cstdint>
#include <optional>
#include <string>

#include "core/units.hpp"
#include "pipeline/data_readers.hpp"
#include "pipeline/diagnosis.hpp"
#include "storage/fsx_spec.hpp"

namespace trainsim::pipeline {

struct DataSet {
  Bytes size = 0;
  Bytes bytes_per_sample = 0;
  Bytes file_size = 0;  ///< one sample per file when equal to bytes_per_sample
  [[nodiscard]] long samples() const { return static_cast<long>(size / bytes_per_sample); }
};

struct LoaderConfig {
  int workers_per_rank = 1;           ///< DataLoader num_workers (processes on the host's vCPUs)
  Seconds preprocess_per_sample = 0;  ///< one vCPU's time to decode/augment one sample
  int prefetch_factor = 2;            ///< batches each worker keeps ready (PyTorch default 2)
  double page_cache_fraction = 0.5;   ///< share of the host's RAM the page cache may hold
  double collective_cpu_cores = 0;    ///< vCPUs the collective library keeps busy while it runs
};

enum class SourceKind { fsx, local_nvme };

struct PipelineConfig {
  DataSet data;
  LoaderConfig loader;
  /// "data.readers": which ranks read from storage; empty: the framework's own rule for each
  /// point's plan (default_data_readers).
  std::optional<DataReaders> readers;
  SourceKind source = SourceKind::fsx;
  storage::FsxSpec fsx_spec;
  storage::FsxDeployment fsx_deployment;
  Bytes fsx_capacity = 0;  ///< default; a point may override it
  int epochs = 2;
  std::uint64_t shuffle_seed = 0;
  DiagnosisThresholds diagnosis;  ///< "data.diagnosis"; defaults are assumptions
};

}  // namespace trainsim::pipeline
