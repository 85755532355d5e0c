#pragma once
// nccl-tests' bandwidth metrics (NVIDIA/nccl-tests doc/PERFORMANCE.md), defined here once and
// restated in validate/README.md. With S the "size" of a test, t its time and n the ranks:
//   algbw = S / t
//   busbw = algbw * factor, where factor is what a rank's links must carry relative to S for an
//           optimal algorithm, so busbw compares with the hardware's peak link bandwidth whatever
//           n:
//     all_reduce      2(n-1)/n   S = the buffer of each rank (count * sizeof)
//     all_gather       (n-1)/n   S = the gathered buffer (recvcount * sizeof = n * sendcount *
//     sizeof) reduce_scatter   (n-1)/n   S = the buffer before scattering (sendcount * sizeof = n *
//     recvcount * sizeof) alltoall         (n-1)/n   S = each rank's whole send buffer (n blocks of
//     count elements)
#include <cstddef>
#include <optional>
#include <string>

#include "core/units.hpp"

namespace trainsim::validate {

enum class CollectiveOp { all_reduce, all_gather, reduce_scatter, alltoall };

/// "all_reduce", "all_gather", "reduce_scatter", "alltoall" (the measurement file's "op").
[[nodiscard]] const char* collective_name(CollectiveOp op);
[[nodiscard]] std::optional<CollectiveOp> parse_collective(const std::string& name);

/// busbw / algbw for `op` over `ranks` ranks (table above); 0 ranks is an error.
[[nodiscard]] double bus_bandwidth_factor(CollectiveOp op, int ranks);

/// algbw in bytes/s: `size` bytes (the test's S) in `time` seconds.
[[nodiscard]] BytesPerSecond algorithm_bandwidth(Bytes size, Seconds time);

/// Element counts of one rank's send and receive buffers for a test of `size_bytes` (S) with
/// `element_bytes` per element: what ncclAllReduce & co. are called with.
struct CollectiveCounts {
  std::size_t send_elements = 0;  ///< elements in each rank's send buffer
  std::size_t recv_elements = 0;  ///< elements in each rank's receive buffer
  std::size_t call_count = 0;     ///< the `count` argument of the NCCL call (per peer for alltoall)
};
/// S is rounded down to a whole number of elements per rank and block (nccl-tests does the same),
/// so the bytes a row reports are `collective_size_bytes` of the counts, not the size asked for.
[[nodiscard]] CollectiveCounts collective_counts(CollectiveOp op, std::size_t size_bytes, int ranks,
                                                 std::size_t element_bytes);
/// S of a test with these counts (inverse of collective_counts on whole sizes).
[[nodiscard]] std::size_t collective_size_bytes(CollectiveOp op, const CollectiveCounts& c,
                                                std::size_t element_bytes);

}  // namespace trainsim::validate
