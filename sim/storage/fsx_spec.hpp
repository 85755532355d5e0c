#pragma once
// Amazon FSx for Lustre as plain data: the performance table per deployment type and throughput
// tier (topologies/storage/fsx-lustre.json, from VALIDATION.md 7) and a file system of a given
// capacity sized from it. Throughput scales with capacity (MB/s per TiB); the file system is a
// set of object storage servers (one per `capacity_per_server`), each with its share of the
// disk throughput, network throughput and in-memory cache.
#include <optional>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace trainsim::storage {

/// One row of the FSx table; per-TiB rates are per TiB of provisioned capacity.
struct FsxDeployment {
  std::string type;  ///< SCRATCH_2, PERSISTENT_1, PERSISTENT_2
  int tier = 0;      ///< MB/s per TiB, the name AWS gives the throughput tier
  BytesPerSecond network_baseline_per_tib = 0;
  BytesPerSecond network_burst_per_tib = 0;  ///< = baseline where the table gives no burst
  Bytes cache_per_tib = 0;                   ///< servers' in-memory cache
  BytesPerSecond disk_read_per_tib = 0;
  BytesPerSecond disk_burst_per_tib = 0;     ///< = disk_read_per_tib where no burst is given
  std::vector<Bytes> capacities;             ///< the first allowed capacities (1.2, 2.4 TiB)
  Bytes increment = 0;                       ///< then multiples of this
  std::string source;
};

struct FsxSpec {
  std::string file;
  Bytes large_file_threshold = 0;  ///< files at least this large are striped
  int large_file_stripes = 1;
  Bytes capacity_per_server = 0;
  Seconds burst_bucket_duration = 0;  ///< how long a full bucket sustains burst over baseline
  std::vector<FsxDeployment> deployments;
};

/// A sized file system: what the platform builder creates.
struct FsxFileSystem {
  std::string deployment;  ///< e.g. "SCRATCH_2/200"
  Bytes capacity = 0;
  int servers = 1;
  BytesPerSecond network_baseline = 0;  ///< whole file system
  BytesPerSecond network_burst = 0;
  BytesPerSecond disk_baseline = 0;
  BytesPerSecond disk_burst = 0;
  Bytes cache = 0;            ///< whole file system
  Bytes burst_bucket = 0;     ///< network burst credits, bytes above the baseline
  Bytes large_file_threshold = 0;
  int large_file_stripes = 1;
};

/// Loads the table; ConfigError on bad input.
[[nodiscard]] FsxSpec load_fsx_spec(const std::string& path);

/// The deployment row, or nullptr.
[[nodiscard]] const FsxDeployment* find_deployment(const FsxSpec& spec, const std::string& type,
                                                   int tier);

/// Whether `capacity` is an allowed size of `d` (1.2 TiB, 2.4 TiB, then increments), to 0.1%.
[[nodiscard]] bool allowed_capacity(const FsxDeployment& d, Bytes capacity);

/// Sizes a file system: throughputs and cache are per-TiB rates times the capacity.
[[nodiscard]] FsxFileSystem size_file_system(const FsxSpec& spec, const FsxDeployment& d,
                                             Bytes capacity);

}  // namespace trainsim::storage
