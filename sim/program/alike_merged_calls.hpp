#pragma once
// Merged calls that make the same calls. A 1,024-GPU per-step TP-overlap step has 133k merged
// calls (rank_folding.hpp) of 32 calls each but a few dozen distinct ones: every layer's ring
// step over a stage's 32 TP groups is the same op, size and groups as the next layer's. The
// engine plans each distinct one once and lets the others share its flows. Plain data.
#include <vector>

#include "program/program.hpp"
#include "program/rank_folding.hpp"

namespace trainsim::program {

/// For each merged call of `f` (RankFolding::calls), the first earlier merged call with the same
/// calls: the same op and size, and call by call (ascending) the same group and repeat; -1 where
/// there is none, or where its own calls differ in op or size. Two passes over the calls in
/// order (a hash per merged call, then a check of each call against the earlier one's), since a
/// merged call's calls lie a replica's worth of calls apart: reading them merged call by merged
/// call misses the cache at nearly every one.
[[nodiscard]] std::vector<int> alike_merged_calls(const Program& p, const RankFolding& f);

}  // namespace trainsim::program
