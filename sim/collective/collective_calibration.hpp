#pragma once
// How a collective library behaves on one fabric level: which algorithm it uses, its latency per
// algorithm step and the fraction of link bandwidth its protocol achieves. Loaded from the
// topology's collective calibration file (topologies/calibration/*.json), each number sourced.
#include <string>
#include <vector>

#include "core/units.hpp"

namespace trainsim::collective {

enum class Algorithm { ring, direct };
[[nodiscard]] const char* algorithm_name(Algorithm a);

struct LevelCalibration {
  Algorithm algorithm = Algorithm::ring;
  Seconds step_latency = 0;          ///< per algorithm step
  double bandwidth_efficiency = 1;   ///< achieved / link bandwidth, in (0, 1]
};

struct CollectiveCalibration {
  std::string library;  ///< e.g. "HCCL (SynapseAI 1.5)"
  std::string file;
  LevelCalibration intra_node;
  LevelCalibration inter_node;
  std::vector<std::string> fitted;       ///< JSON paths of fitted values, with the rows, as text
  std::vector<std::string> fitted_rows;  ///< every "scenario#label" row used to fit a value
};

/// Loads a calibration file; ConfigError on bad input.
[[nodiscard]] CollectiveCalibration load_collective_calibration(const std::string& path);

}  // namespace trainsim::collective
