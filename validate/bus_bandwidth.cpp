#include "bus_bandwidth.hpp"

#include <stdexcept>

namespace trainsim::validate {

const char* collective_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return "all_reduce";
    case CollectiveOp::all_gather:
      return "all_gather";
    case CollectiveOp::reduce_scatter:
      return "reduce_scatter";
    case CollectiveOp::alltoall:
      return "alltoall";
  }
  return "?";
}

std::optional<CollectiveOp> parse_collective(const std::string& name) {
  for (auto op : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
                  CollectiveOp::alltoall})
    if (name == collective_name(op)) return op;
  return std::nullopt;
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  if (ranks < 1) throw std::invalid_argument("bus_bandwidth_factor: ranks must be >= 1");
  const double n = ranks;
  if (op == CollectiveOp::all_reduce) return 2.0 * (n - 1) / n;
  return (n - 1) / n;
}

BytesPerSecond algorithm_bandwidth(Bytes size, Seconds time) {
  if (time <= 0) throw std::invalid_argument("algorithm_bandwidth: time must be positive");
  return size / time;
}

CollectiveCounts collective_counts(CollectiveOp op, std::size_t size_bytes, int ranks,
                                   std::size_t element_bytes) {
  if (ranks < 1 || element_bytes == 0)
    throw std::invalid_argument("collective_counts: ranks and element size must be positive");
  const std::size_t n = static_cast<std::size_t>(ranks);
  const std::size_t elements = size_bytes / element_bytes;
  CollectiveCounts c;
  switch (op) {
    case CollectiveOp::all_reduce:
      c.send_elements = c.recv_elements = c.call_count = elements;
      break;
    case CollectiveOp::all_gather:  // each rank sends one block, receives n
      c.call_count = c.send_elements = elements / n;
      c.recv_elements = c.send_elements * n;
      break;
    case CollectiveOp::reduce_scatter:  // each rank sends n blocks, receives one
      c.call_count = c.recv_elements = elements / n;
      c.send_elements = c.recv_elements * n;
      break;
    case CollectiveOp::alltoall:  // n blocks out, n blocks in; count is per peer
      c.call_count = elements / n;
      c.send_elements = c.recv_elements = c.call_count * n;
      break;
  }
  return c;
}

std::size_t collective_size_bytes(CollectiveOp op, const CollectiveCounts& c,
                                  std::size_t element_bytes) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return c.send_elements * element_bytes;
    case CollectiveOp::all_gather:
      return c.recv_elements * element_bytes;
    case CollectiveOp::reduce_scatter:
      return c.send_elements * element_bytes;
    case CollectiveOp::alltoall:
      return c.send_elements * element_bytes;
  }
  return 0;
}

}  // namespace trainsim::validate
