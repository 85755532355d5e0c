#pragma once
// Collectives as transfers: an algorithm turns one collective call into phases of point-to-point
// flows (plain data, no SimGrid). The engine runs each phase's flows concurrently on the platform,
// so contention with other traffic is SimGrid's, and adds the phase's per-step latency
// analytically. One flow per rank per phase carries all the bytes that rank sends to that peer
// over the phase's steps (the form measured in SIMGRID-NOTES.md to match per-step rings).
#include <string>
#include <vector>

#include "collective/collective_calibration.hpp"
#include "core/units.hpp"

namespace trainsim::collective {

enum class Op { all_reduce, reduce_scatter, all_gather };
[[nodiscard]] const char* op_name(Op op);

struct Flow {
  int src;      ///< global rank
  int dst;      ///< global rank
  Bytes bytes;  ///< bytes on the wire, protocol efficiency included
};

struct Phase {
  std::string name;  ///< e.g. "intra reduce_scatter (direct)"
  std::vector<Flow> flows;
  int steps = 0;                ///< sequential algorithm steps (each pays the step latency)
  Seconds step_latency = 0;     ///< software + protocol latency per step, from calibration
  bool inter_node = false;      ///< flows cross the fabric
};

struct CollectivePlan {
  std::vector<Phase> phases;  ///< run one after another
};

/// Where each global rank lives.
struct RankLayout {
  int ranks_per_node = 1;
  [[nodiscard]] int node_of(int rank) const { return rank / ranks_per_node; }
  [[nodiscard]] int local_of(int rank) const { return rank % ranks_per_node; }
};

/// Plans `op` over `group` (global ranks, in ring order). `size` is nccl-tests' S: the per-rank
/// buffer for all_reduce, the whole gathered/scattered array for all_gather/reduce_scatter.
/// Groups inside one node use the intra-node algorithm; groups with one rank per node use the
/// inter-node algorithm; mixed groups use the hierarchical composition (intra-node
/// reduce-scatter, inter-node collective on each rank's shard, intra-node all-gather) that HCCL
/// and NCCL use across nodes. Mixed groups need the same number of ranks on every node.
[[nodiscard]] CollectivePlan plan_collective(Op op, Bytes size, const std::vector<int>& group,
                                             const RankLayout& layout,
                                             const CollectiveCalibration& cal);

/// Single-level algorithms (exposed for tests).
[[nodiscard]] Phase ring_phase(Op op, Bytes size, const std::vector<int>& members,
                               const LevelCalibration& cal);
[[nodiscard]] Phase direct_phase(Op op, Bytes size, const std::vector<int>& members,
                                 const LevelCalibration& cal);

}  // namespace trainsim::collective
