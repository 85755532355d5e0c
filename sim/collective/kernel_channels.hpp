#pragma once
// How many streaming multiprocessors a collective call holds while it runs. NCCL launches one
// kernel per call whose grid is one thread block per channel it uses (enqueue.cc: the grid is the
// number of channels in the plan's channel mask), and each block stays resident on its SM until
// the call ends, so a kernel running beside it (a GEMM of the overlapped compute) gets the rest.
// Large calls use every channel of the communicator; NCCL trims channels only for calls below
// about nChannels x 512 threads x 64 B (tuning thresholds), which last microseconds.
#include <vector>

#include "collective/collective_calibration.hpp"
#include "collective/collective_plan.hpp"

namespace trainsim::collective {

/// Channels (thread blocks) of the call's kernel, from the calibration's "channels"; 0 where the
/// calibration gives none for this kind of call (schema 1, alltoall, send/recv inside a node):
/// such calls take no SMs from compute.
///
/// - all_reduce, reduce_scatter, all_gather, broadcast inside one node: `one_node`;
/// - the same across nodes: `multi_node` when every accelerator of each node is in the group,
///   else `multi_node_per_accelerator` x the accelerators of the fullest node where given (H100:
///   NCCL duplicates a part-node's few channels more than a whole node's), else multi_node scaled
///   by the group's share of a node (NCCL's search gives one channel per NIC the group's
///   accelerators reach, then doubles them: connect.cc), at least 2;
/// - an NVLS or NVLS-tree all_reduce (`algorithm`): `nvls` (NCCL sizes its grid by
///   nvlsChannels, not by the rings), 0 where not given;
/// - send_recv between two nodes, and a ring_exchange (the same transfers, one per member) across
///   nodes: `net_peer` (NCCL_NCHANNELS_PER_NET_PEER).
[[nodiscard]] int kernel_channels(Op op, const std::vector<int>& group, const RankLayout& layout,
                                  const CollectiveCalibration& cal,
                                  Algorithm algorithm = Algorithm::ring);

}  // namespace trainsim::collective
