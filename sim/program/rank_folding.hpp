#pragma once
// Symmetry folding. In a data/tensor/pipeline-parallel job most ranks run the same program up to
// which peers they talk to: every rank of a tensor-parallel group, every data-parallel replica of
// a pipeline stage. Ranks whose programs are identical form a class; one representative per
// class is simulated, and each collective call of the representative stands for the calls its
// class members make at the same place in their programs (the "merged" call). The engine then
// runs one set of actors per class instead of per rank, while still sending every member's flows
// on the platform, so contention stays SimGrid's. The assumption is that members of a class
// advance in lockstep, which holds when the job is symmetric (what every schedule here emits).
// Plain data: no SimGrid.
#include <vector>

#include "program/program.hpp"

namespace trainsim::program {

struct RankFolding {
  std::vector<int> class_of_rank;             ///< rank -> class
  std::vector<int> representative;            ///< class -> the lowest rank of the class
  std::vector<std::vector<int>> members;      ///< class -> its ranks, ascending
  std::vector<int> merged_of_call;            ///< Program::collectives index -> merged call
  std::vector<std::vector<int>> calls;        ///< merged call -> the collective calls it stands for
  std::vector<std::vector<int>> classes_of;   ///< merged call -> the classes taking part, ascending

  [[nodiscard]] int classes() const { return static_cast<int>(representative.size()); }
  [[nodiscard]] bool folded() const { return classes() < static_cast<int>(class_of_rank.size()); }
};

/// One class per rank, each call its own merged call: the unfolded program.
[[nodiscard]] RankFolding identity_folding(const Program& p);

/// Groups ranks with identical programs (same streams, tasks, durations, memory, dependencies,
/// host copies of the same bytes and direction, and collective calls of the same op, size and
/// group size) and merges the calls they make at
/// the same places. A rank sharing a lower rank's body (RankProgram::body) joins that rank's
/// class without comparing tasks (they are that rank's), once its calls' shapes match. Falls back to
/// identity_folding when the merge is not consistent (a merged call met twice by one class) or a
/// shared body's calls do not match, so the result is always safe to execute on the program with
/// its bodies materialised; every representative it picks otherwise has tasks of its own.
[[nodiscard]] RankFolding fold_ranks(const Program& p);

/// Whether every collective group of `p` holds the same number of its ranks on each node it
/// spans (nodes of `ranks_per_node` consecutive ranks). Where one does not (a pipeline stage or
/// shard group that splits a node), ranks with identical programs still meet the network
/// differently (a one-rank node's GPU carries all of its group's ring lanes across), so they do
/// not advance in lockstep and the program is not folded (session 24: 0.01% apart on 3 nodes).
[[nodiscard]] bool groups_fill_nodes_alike(const Program& p, int ranks_per_node);

}  // namespace trainsim::program
