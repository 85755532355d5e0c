#pragma once
// A region-based tuner plugin, as aws-ofi-nccl ships one for p5/p5e (src/tuner/
// nccl_ofi_regions.cpp): for a collective, polygons in the plane (message bytes, ranks in the
// communicator) each name the algorithm and protocol NCCL must use there. The first region that
// holds the point (its edges included) wins; a region whose algorithm or protocol NCCL cannot
// run is skipped; where none holds it, or for a communicator of too few nodes, NCCL's own tuner
// decides (here: nccl_tuner.hpp's smallest predicted time). Measured curves show the choice even
// where it is not the fastest (the p5 4/8-node all_reduce plateau on ring LL128 up to 1-2 GiB).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collective/collective_calibration.hpp"
#include "core/units.hpp"

namespace trainsim::collective {

enum class Op;

struct TunerPoint {
  double bytes = 0;  ///< nccl-tests' S of the call, in bytes (x)
  double ranks = 0;  ///< ranks in the communicator (y)
};

struct TunerRegion {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  std::vector<TunerPoint> vertices;  ///< a closed polygon, in order (>= 2 vertices)
};

struct TunerRegions {
  std::string name;
  std::string file;
  int ranks_per_node = 0;  ///< the regions hold only for communicators with this many per node
  int min_nodes = 1;       ///< and at least this many nodes (the plugin leaves <= 2 to NCCL)
  std::map<std::string, std::vector<TunerRegion>> by_op;  ///< op_name -> regions, in order
};

/// True when `p` is inside the polygon or on one of its edges (ray casting, even-odd rule).
[[nodiscard]] bool region_holds(const TunerRegion& r, TunerPoint p);

/// The plugin's choice for a call, or nullopt when NCCL's own tuner decides. `usable` says
/// whether NCCL can run an algorithm/protocol pair here (unusable regions are skipped).
[[nodiscard]] std::optional<std::pair<Algorithm, Protocol>> region_choice(
    const TunerRegions& t, Op op, Bytes size, int nodes, int ranks,
    const std::function<bool(Algorithm, Protocol)>& usable);

/// Loads a tuner-regions file (kind "nccl_tuner_regions"); ConfigError on bad input.
[[nodiscard]] TunerRegions load_tuner_regions(const std::string& path);

}  // namespace trainsim::collective
