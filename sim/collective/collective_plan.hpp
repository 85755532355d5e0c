#pragma once
// Collectives as transfers: an algorithm turns one collective call into phases of point-to-point
// flows (plain data, no SimGrid). The engine runs each phase's flows concurrently on the platform,
// so contention with other traffic is SimGrid's, and adds the phase's latency analytically. One
// flow per (sender, receiver) per phase carries all the bytes that rank sends to that peer over
// the phase's steps (the form measured in SIMGRID-NOTES.md to match per-step rings).
#include <optional>
#include <string>
#include <vector>

#include "collective/collective_calibration.hpp"
#include "collective/fabric_rates.hpp"
#include "core/units.hpp"

namespace trainsim::collective {

/// ring_exchange: one step of a ring of point-to-point transfers, every member sending S to the
/// next member of the group and receiving S from the previous one at once (Transformer Engine's
/// userbuffers ring, tp_comm_overlap); one call for what would be n send_recv calls, so that
/// every member makes the same call at the same place of its program.
enum class Op { all_reduce, reduce_scatter, all_gather, broadcast, alltoall, send_recv, ring_exchange };
[[nodiscard]] const char* op_name(Op op);
/// Parses an op name as op_name writes it; nullopt when unknown.
[[nodiscard]] std::optional<Op> parse_op(const std::string& name);

struct Flow {
  int src;      ///< global rank
  int dst;      ///< global rank
  Bytes bytes;  ///< bytes on the wire, protocol and efficiency included
  /// Across nodes: the NIC (index among the node's NIC vertices) the flow leaves its node
  /// through and the one it enters the other node through; -1 = the rank's own route.
  int src_nic = -1;
  int dst_nic = -1;
  /// Most bytes on the wire per second this flow may move whatever the links offer; 0 = none.
  /// Set where the fabric caps each NCCL channel (FabricLevel::channel_rate_limit), scaled by
  /// the channels the flow carries; the engine holds its phase to at least bytes / rate_limit.
  BytesPerSecond rate_limit = 0;
};

struct Phase {
  std::string name;  ///< e.g. "intra reduce_scatter (direct)"
  std::vector<Flow> flows;
  int steps = 0;                ///< sequential algorithm steps (each pays step + route latency)
  Seconds step_latency = 0;     ///< software + protocol latency per step, from calibration
  Seconds fixed_latency = 0;    ///< latency computed by the planner (NCCL: base, steps, pipeline fill)
  bool inter_node = false;      ///< flows cross the fabric
};

struct CollectivePlan {
  std::vector<Phase> phases;  ///< run one after another
  std::string algorithm;      ///< e.g. "tree", "ring", "hierarchical(direct+ring)"
  std::string protocol;       ///< "LL", "LL128", "Simple", or "" (schema-1 calibrations)
  Seconds predicted = 0;      ///< the tuner's uncontended estimate (schema 2), else 0
  /// Thread blocks of the call's kernel, each holding an SM while it runs; 0 = none modelled
  /// (collective/kernel_channels.hpp).
  int channels = 0;
};

/// Where each global rank lives.
struct RankLayout {
  int ranks_per_node = 1;
  [[nodiscard]] int node_of(int rank) const { return rank / ranks_per_node; }
  [[nodiscard]] int local_of(int rank) const { return rank % ranks_per_node; }
};

/// Forces the tuner's choice, like NCCL_ALGO / NCCL_PROTO. An algorithm that cannot run the call
/// (tree inside one node, NVLS across nodes or without NVLink SHARP) is ignored for that call,
/// as NCCL falls back.
struct TunerOverride {
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
};

/// Plans `op` over `group` (global ranks, in ring order). `size` is nccl-tests' S: the per-rank
/// buffer for all_reduce and broadcast, the whole gathered/scattered array for all_gather,
/// reduce_scatter and alltoall, the message for send_recv (group = {sender, receiver}) and the
/// message each member sends for ring_exchange.
/// Schema-2 calibrations go through the NCCL tuner (nccl_tuner.hpp); schema-1 calibrations use
/// their fixed per-level algorithm composed hierarchically (all_reduce, reduce_scatter and
/// all_gather only). Multi-node groups need the same number of ranks on every node.
[[nodiscard]] CollectivePlan plan_collective(Op op, Bytes size, const std::vector<int>& group,
                                             const RankLayout& layout,
                                             const CollectiveCalibration& cal,
                                             const FabricRates& rates,
                                             const TunerOverride& force = {});

/// `plan` run `times` times back to back as one call: every flow's bytes and every phase's
/// latency (fixed and per step) multiplied, the algorithm and its flows those of one call. Exact
/// for the uncontended time of the repeated calls (flows run at their share of the links, whose
/// SimGrid latency is zero, and the latency is analytical); under contention the flows of the
/// repeats share the links for their summed bytes instead of call by call.
[[nodiscard]] CollectivePlan repeated(CollectivePlan plan, int times);

/// Single-level schema-1 algorithms (exposed for tests).
[[nodiscard]] Phase ring_phase(Op op, Bytes size, const std::vector<int>& members,
                               const LevelCalibration& cal);
[[nodiscard]] Phase direct_phase(Op op, Bytes size, const std::vector<int>& members,
                                 const LevelCalibration& cal);

}  // namespace trainsim::collective
