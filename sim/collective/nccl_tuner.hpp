#pragma once
// NCCL's tuner, as a model. Who chooses the algorithm and protocol of a call, first that applies:
// a tuner plugin's region (tuner_regions.hpp); across nodes, NCCL's own estimate where the
// platform gives its inputs (nccl_cost_model.hpp), as NCCL itself chooses; else, for each
// algorithm that can run the call and each protocol, the time predicted below, smallest kept.
// The chosen schedule becomes the timed Phase the engine runs, with the time predicted below
// (what an uncontended simulation gives).
//
//   bandwidth time = the most loaded port's bytes / its bandwidth, where a flow's bytes are its
//                    payload / (fabric efficiency of the algorithm x protocol bandwidth fraction)
//                    and ports are each accelerator's link into the node fabric (both directions)
//                    and each node's uplink (both directions)
//   latency        = protocol base latency + intra steps x (step latency + hop latency)
//                    + inter steps x (step latency + hop latency) [+ NVLS call latency]
//                    [+ peer rounds x outermost level's step latency + one hop: alltoall]
//   pipeline fill  = min(unit, chunk) / unit / units per lane x (sum over the `depth` hops of
//                    the stage time of the hop's level - the slowest stage's time): the first
//                    chunk crosses each hop (NVLink or network) at that level's rate before the
//                    pipeline streams at the slowest one
#include <vector>

#include "collective/collective_plan.hpp"
#include "collective/nccl_algorithms.hpp"

namespace trainsim::collective {

struct Prediction {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  Seconds bandwidth_time = 0;
  Seconds latency = 0;  ///< base, steps and NVLS latency
  Seconds fill = 0;     ///< pipeline fill
  [[nodiscard]] Seconds total() const { return bandwidth_time + latency + fill; }
};

/// Algorithms able to run `op` on a group of this shape with these fabrics, in tie-break order.
[[nodiscard]] std::vector<Algorithm> candidate_algorithms(Op op, const GroupShape& g,
                                                          const CollectiveCalibration& cal);

/// Protocols usable with an algorithm (NVLS: Simple only) on every fabric level it crosses.
[[nodiscard]] std::vector<Protocol> candidate_protocols(Algorithm a, const GroupShape& g,
                                                        const CollectiveCalibration& cal);

/// Uncontended time of a schedule with a protocol (see the formulas above).
[[nodiscard]] Prediction predict(const Schedule& s, Protocol p, const GroupShape& g,
                                 const RankLayout& layout, const CollectiveCalibration& cal,
                                 const FabricRates& rates);

/// The payload schedule of an algorithm for a call.
/// `ring_entry_nic`: as ring_schedule's `entry_nic` (the platform's NcclCostModel).
[[nodiscard]] Schedule schedule_for(Algorithm a, Op op, Bytes size, const GroupShape& g,
                                    const RankLayout& layout = {},
                                    const std::vector<int>& ring_entry_nic = {});

/// Tuner + timed phase for a schema-2 calibration (what plan_collective calls).
[[nodiscard]] CollectivePlan plan_nccl(Op op, Bytes size, const std::vector<int>& group,
                                       const RankLayout& layout, const CollectiveCalibration& cal,
                                       const FabricRates& rates, const TunerOverride& force);

}  // namespace trainsim::collective
