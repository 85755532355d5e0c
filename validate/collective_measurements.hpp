#pragma once
// The file `trainsim-validate nccl` writes and `trainsim collective --compare FILE` reads:
//   { "schema": "trainsim.collective_measurements/1",
//     "provenance": {"method": "measured", "source": "trainsim-validate nccl", "date":
//     "YYYY-MM-DD",
//                    "gpu": "...", "driver": "...", "cuda": "...", "nccl": "..."},
//     "topology": "optional topology file stem",
//     "rows": [ {"op": "all_reduce", "nodes": 1, "ranks": 8, "size_bytes": 1048576,
//                "time_us": 123.4, "algbw_gbps": 8.5, "busbw_gbps": 15.9} ] }
// Bandwidths in GB/s = 10^9 bytes/s (nccl-tests' unit); the metrics are defined in
// bus_bandwidth.hpp.
#include <iosfwd>
#include <string>
#include <vector>

#include "bus_bandwidth.hpp"
#include "core/units.hpp"

namespace trainsim::validate {

struct CollectiveProvenance {
  std::string method = "measured";
  std::string source = "trainsim-validate nccl";
  std::string date;  ///< YYYY-MM-DD
  std::string gpu, driver, cuda, nccl;
};

struct CollectiveRow {
  CollectiveOp op = CollectiveOp::all_reduce;
  int nodes = 1;
  int ranks = 1;
  std::size_t size_bytes = 0;  ///< nccl-tests' S (bus_bandwidth.hpp)
  Seconds time = 0;            ///< one call, averaged over the timed iterations
};

struct CollectiveMeasurements {
  CollectiveProvenance provenance;
  std::string topology;  ///< topology file stem; empty = not written
  std::vector<CollectiveRow> rows;
};

/// Writes the file above; algbw and busbw are computed from each row's size, time and ranks.
void write_collective_measurements(std::ostream& out, const CollectiveMeasurements& m);

}  // namespace trainsim::validate
