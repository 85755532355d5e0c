#include "program/allocation_sequence.hpp"

#include <algorithm>

namespace trainsim::program {

SequenceTotals totals_of(const AllocationSequence& seq) {
  SequenceTotals t;
  std::vector<int> state;  // per slot: 0 unused, 1 live, 2 freed
  Bytes live = 0;
  auto slot_state = [&](int slot) -> int& {
    if (slot >= static_cast<int>(state.size())) state.resize(static_cast<std::size_t>(slot) + 1, 0);
    return state[static_cast<std::size_t>(slot)];
  };
  std::vector<Bytes> size;
  for (const auto& s : seq.steps) {
    switch (s.kind) {
      case AllocationStep::transient: {
        if (s.slot < 0 || slot_state(s.slot) != 0) {
          t.balanced = false;
          break;
        }
        slot_state(s.slot) = 1;
        if (size.size() <= static_cast<std::size_t>(s.slot))
          size.resize(static_cast<std::size_t>(s.slot) + 1, 0);
        size[static_cast<std::size_t>(s.slot)] = s.bytes;
        live += s.bytes;
        t.transient_peak = std::max(t.transient_peak, live);
        break;
      }
      case AllocationStep::free_transient:
        if (s.slot < 0 || slot_state(s.slot) != 1) {
          t.balanced = false;
          break;
        }
        slot_state(s.slot) = 2;
        live -= size[static_cast<std::size_t>(s.slot)];
        break;
      case AllocationStep::keep:
        t.kept += s.bytes;
        break;
      case AllocationStep::free_kept:
        t.freed_kept += s.bytes;
        break;
      case AllocationStep::task_alloc:
        t.task_alloc = true;
        break;
    }
  }
  for (int st : state)
    if (st == 1) t.balanced = false;
  return t;
}

int last_request(const AllocationSequence& seq) {
  for (int i = static_cast<int>(seq.steps.size()) - 1; i >= 0; --i) {
    const auto k = seq.steps[static_cast<std::size_t>(i)].kind;
    if (k == AllocationStep::transient || k == AllocationStep::keep ||
        k == AllocationStep::task_alloc)
      return i;
  }
  return -1;
}

}  // namespace trainsim::program
