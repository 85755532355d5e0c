#pragma once
// Starting SimGrid activities with all their settings in one simcall.
//
// Why: in SimGrid 3.32 every s4u setter (Exec::set_flops_amount, set_bound, set_priority,
// set_host, Comm::set_source, ...) and every start is its own simcall, a round trip through
// maestro. A compute task's `this_actor::execute` is five of them before its wait, an SM hold
// six, a flow four. Run from maestro, the same setters take SimGrid's fast path
// (kernel::actor::simcall_answered runs the code directly there), so wrapping the whole setup in
// one simcall_answered makes the same kernel calls in the same order on the same activity, at
// one round trip.
#include <cstdint>
#include <functional>
#include <vector>

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>

namespace trainsim::engine {

/// What `this_actor::execute(flops)` starts, but on `host`: an Exec of `flops` (flop) at
/// priority 1, started. Wait on it to run it.
[[nodiscard]] simgrid::s4u::ExecPtr start_exec(simgrid::s4u::Host* host, double flops);

/// An Exec of `flops` (flop) on `host`, bounded to `bound` (flop/s) and weighted `priority`
/// in max-min sharing, started.
[[nodiscard]] simgrid::s4u::ExecPtr start_bounded_exec(simgrid::s4u::Host* host, double flops, double bound,
                                                       double priority);

/// In one simcall: cancels `exec` (when not null), then sets it to a new Exec on `host` bounded
/// to `bound()` (flop/s, evaluated in the simcall), of `bound() * lifetime` flop and weighted
/// `priority`, or to null when `bound()` is 0. The handle and the bound change atomically: an
/// actor that updates shared state and then calls this may yield to others before maestro runs
/// it, so the bound must be read when the swap happens, not before. Returns the cancelled Exec:
/// keep it until the simulated time has moved on, since maestro reads it when it handles the
/// step's ended actions (dropped at once, it is freed before and SimGrid 3.32 crashes there).
[[nodiscard]] simgrid::s4u::ExecPtr replace_bounded_exec(simgrid::s4u::ExecPtr& exec, simgrid::s4u::Host* host,
                                                         const std::function<double()>& bound, double lifetime,
                                                         double priority);

/// A host-to-host transfer (Comm::sendto_async's arguments).
struct HostTransfer {
  simgrid::s4u::Host* src = nullptr;
  simgrid::s4u::Host* dst = nullptr;
  std::uint64_t bytes = 0;
};

/// Comm::sendto_async of each transfer, in order, all in one simcall.
[[nodiscard]] std::vector<simgrid::s4u::CommPtr> start_transfers(const std::vector<HostTransfer>& transfers);

}  // namespace trainsim::engine
