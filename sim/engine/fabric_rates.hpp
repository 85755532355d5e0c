#pragma once
// The topology's numbers the collective tuner needs (collective/fabric_rates.hpp), read from the
// same routes build_platform uses, so the tuner's prediction and the simulation agree when
// nothing else is on the network.
#include "collective/fabric_rates.hpp"
#include "topology/topology.hpp"

namespace trainsim::engine {

[[nodiscard]] collective::FabricRates fabric_rates(const topology::Topology& topo);

}  // namespace trainsim::engine
