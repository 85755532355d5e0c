#pragma once
// The host side of an instance that the input pipeline uses: vCPUs for DataLoader workers and
// the collective library, RAM for the page cache, local NVMe as an alternative data source.
// Optional in a topology file (`"host": {...}`); read by read_host_resources.
#include <string>

#include "core/json_reader.hpp"
#include "core/units.hpp"

namespace trainsim::topology {

struct HostResources {
  int vcpus = 0;
  Bytes memory = 0;                    ///< RAM
  Bytes local_nvme_capacity = 0;       ///< 0: no local NVMe
  BytesPerSecond local_nvme_read = 0;  ///< aggregate sequential read of all devices
  std::string source;
};

[[nodiscard]] HostResources read_host_resources(JsonObject o);

}  // namespace trainsim::topology
