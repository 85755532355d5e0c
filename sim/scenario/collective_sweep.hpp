#pragma once
// An nccl-tests-style sweep: one collective over all ranks of `nodes` nodes, at each size in
// turn, simulated on the SimGrid platform with exactly the plans training schedules use. Each
// (op, nodes) sweep runs in a forked child (one Engine per process); the sizes run one after
// another in that simulation, so each size's time is its own (nothing else is on the network).
#include <string>
#include <vector>

#include "collective/collective_calibration.hpp"
#include "collective/collective_plan.hpp"
#include "topology/topology.hpp"

namespace trainsim::scenario {

struct SweepRequest {
  collective::Op op = collective::Op::all_reduce;
  int nodes = 1;
  std::vector<Bytes> sizes;
  collective::TunerOverride force;
};

struct SweepPoint {
  Bytes size = 0;
  int ranks = 0;
  Seconds time = 0;       ///< simulated
  Seconds predicted = 0;  ///< the tuner's estimate (schema-2 calibrations)
  std::string algorithm;
  std::string protocol;
};

/// Simulates every size of `req`. send_recv runs between rank 0 and the first rank of the next
/// node (or rank 1 on one node); every other op runs over all ranks.
[[nodiscard]] std::vector<SweepPoint> run_sweep(const topology::Topology& topo,
                                                const collective::CollectiveCalibration& cal,
                                                const SweepRequest& req);

}  // namespace trainsim::scenario
