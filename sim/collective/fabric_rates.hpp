#pragma once
// The few platform numbers the NCCL tuner needs to predict a collective's time without running
// it: per-direction bandwidths and one-way latencies of the paths collectives use. Filled from
// the topology by the engine (engine/fabric_rates.hpp); plain data here so that plans and the
// tuner stay testable without SimGrid.
#include "core/units.hpp"

namespace trainsim::collective {

struct FabricRates {
  BytesPerSecond intra_link = 0;   ///< accelerator <-> node fabric, per direction (its narrowest link)
  Seconds intra_hop = 0;           ///< one-way route latency between two accelerators of a node
  BytesPerSecond node_uplink = 0;  ///< node <-> inter-node fabric, per direction
  Seconds inter_hop = 0;           ///< one-way route latency between accelerators of two nodes
};

}  // namespace trainsim::collective
