#pragma once
// "How many nodes?": one layout search per node count at the same global batch, and what the
// fastest layout at each buys: speed-up and efficiency against the smallest count searched, and
// accelerator-hours per million samples (what a price per accelerator-hour turns into cost).
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "search/layout_search.hpp"

namespace trainsim::search {

/// One node count's search, its fastest layout and its own layout's trial (null when absent).
struct ScalingRow {
  SearchResult search;
  const Trial* best = nullptr;
  const Trial* original = nullptr;
  double speedup = 0;     ///< best's samples/s over the first row with a best
  double efficiency = 0;  ///< speedup / (accelerators over that row's)
  double accelerator_hours_per_million_samples = 0;
};

/// Rows point into their own searches' trials: movable, not copyable.
struct NodeScaling {
  NodeScaling() = default;
  NodeScaling(const NodeScaling&) = delete;
  NodeScaling& operator=(const NodeScaling&) = delete;
  NodeScaling(NodeScaling&&) = default;
  NodeScaling& operator=(NodeScaling&&) = default;
  std::vector<ScalingRow> rows;  ///< ascending node counts
  /// The answers: the fewest nodes with a layout that fits and simulates, the node count with
  /// the fewest accelerator-hours per million samples (the first of equals), and the fastest;
  /// -1 where no count has a layout.
  int fewest_nodes = -1, cheapest_nodes = -1, fastest_nodes = -1;
};

/// Searches `options` at each of `node_counts` (sorted, duplicates dropped); a count whose every
/// layout is set aside (the global batch does not divide) is a row without a best.
[[nodiscard]] NodeScaling run_node_scaling(const std::string& scenario_file, SearchOptions options,
                                           std::vector<int> node_counts, std::ostream& progress);

/// Fills best, original, speed-up, efficiency and accelerator-hours from the searches (plain data).
void summarise(NodeScaling& scaling);

/// A row per node count with its fastest layout and the point's own layout's throughput.
void write_scaling_table(std::ostream& os, const NodeScaling& s);
void write_scaling_json(std::ostream& os, const NodeScaling& s);
/// Every layout of every search, after the node count and accelerators.
void write_scaling_csv(std::ostream& os, const NodeScaling& s);

}  // namespace trainsim::search
