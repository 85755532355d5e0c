#pragma once
// The verdict users want before renting a cluster: does it fit, and if not, what to change
// first. Source 000 (SMP v2 best practices): choose the smallest sharding degree that fits;
// when nothing fits, lower the batch first, then raise the tensor-parallel degree.
#include <optional>
#include <string>
#include <vector>

#include "memory/rank_memory.hpp"

namespace trainsim::memory {

struct MemoryVerdict {
  std::vector<RankMemory> ranks;
  bool fits = true;
  Bytes worst_peak = 0;        ///< the largest peak over rank kinds
  std::string worst_rank;      ///< its kind
  /// Sharded plans: the smallest shard group (a divisor of the DP degree) at which every rank
  /// fits, with everything else unchanged; nullopt when none does or the plan is not sharded.
  std::optional<long> smallest_fitting_shard;
  /// When it does not fit: the first change that makes it fit, in source 000's order (shard
  /// more, lower the micro-batch, raise TP), or a statement that none of those does.
  std::string advice;
};

/// Evaluates `in` and searches the changes above. Pure arithmetic; fast enough for sweeps.
[[nodiscard]] MemoryVerdict judge_memory(const MemoryInputs& in);

}  // namespace trainsim::memory
