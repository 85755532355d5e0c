#pragma once
// A task's device-memory requests one tensor at a time, as plain data: what PyTorch's caching
// allocator (memory/caching_allocator.hpp) is asked for while a layer's ops run, where a lumped
// task asks for one block. Fragmentation among a layer's tensors needs their real sizes and order.
#include <cstdint>
#include <vector>

#include "core/units.hpp"

namespace trainsim::program {

/// One request of a task's allocation sequence, in the order the task's ops make them.
struct AllocationStep {
  enum Kind : std::uint8_t {
    transient,       ///< a tensor the task itself frees (`slot` names it within the sequence)
    free_transient,  ///< the task's transient `slot` is dead
    keep,            ///< a tensor a later task frees (a saved activation)
    free_kept,       ///< the newest kept tensor of `bytes` in the task's pool is dead (saved
                     ///< tensors die in the reverse order of their forwards)
    task_alloc,      ///< the task's own `alloc` (a gradient) is requested here
  };
  Kind kind = transient;
  Bytes bytes = 0;  ///< transient, keep, free_kept
  int slot = -1;    ///< transient, free_transient
};

/// The requests a task makes in place of its lumped `alloc`, `workspace` and `release`
/// (Task::allocations).
struct AllocationSequence {
  std::vector<AllocationStep> steps;
};

/// What a sequence adds up to, for checking it against its task's totals.
struct SequenceTotals {
  Bytes kept = 0;            ///< sum of its keeps
  Bytes freed_kept = 0;      ///< sum of its free_kepts
  Bytes transient_peak = 0;  ///< most transient bytes live at once
  bool task_alloc = false;   ///< whether it places the task's own `alloc`
  bool balanced = true;      ///< every transient slot allocated once, then freed once
};
[[nodiscard]] SequenceTotals totals_of(const AllocationSequence& seq);

/// Index of the sequence's last request (transient, keep or task_alloc): the steps after it only
/// free, and an engine that allocates when a task starts frees those when it ends. -1: none.
[[nodiscard]] int last_request(const AllocationSequence& seq);

}  // namespace trainsim::program
