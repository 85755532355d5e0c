#pragma once
// A set of ranks written as comma-separated ranks and inclusive ranges ("0,8-15"): which ranks a
// trace keeps (`trainsim run --trace-ranks`).
#include <string>
#include <utility>
#include <vector>

namespace trainsim {

struct RankList {
  /// Inclusive [first, last] ranges as written; empty means every rank.
  std::vector<std::pair<int, int>> ranges;

  [[nodiscard]] bool all() const { return ranges.empty(); }
  [[nodiscard]] bool contains(int rank) const;
  /// Per rank of a world of `world` ranks: whether the list holds it (every rank when all()).
  [[nodiscard]] std::vector<bool> mask(int world) const;
  /// The smallest rank the list holds (0 when all()).
  [[nodiscard]] int first() const;
};

/// Parses "0,8-15". Throws std::invalid_argument naming the bad item and what is accepted: each
/// item a rank (a non-negative integer) or a range A-B with A <= B; no empty items.
[[nodiscard]] RankList parse_rank_list(const std::string& text);

}  // namespace trainsim
