#pragma once
// Disk reads whose SimGrid Io objects are created by a daemon actor of their own.
//
// Why: in SimGrid 3.32 an Io is registered in the list of pending activities of the actor that
// creates it (IoImpl::IoImpl) and never taken out (IoImpl::post/finish do not, unlike Exec and
// Comm; upstream fixed it in 10600793fb, "Enabling detach() for I/O", v3.36). Each Exec that
// actor later ends, and each Comm it waits for, removes itself from that std::list by a full
// scan, so an actor that reads R times and then runs E Execs pays R x E: at micro-batch 4 an
// epoch's DataLoader workers spent 72% of the simulation there. Ios created here land in the
// reserve's own actor, which runs nothing else; the reading actor still sets each one up and
// starts it, the same kernel calls in the same order as Disk::read_async.
#include <cstddef>
#include <vector>

#include <simgrid/s4u/Disk.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Io.hpp>

namespace trainsim::engine {

class IoReserve {
public:
  /// Creates the daemon actor on `host`, which makes `count` Ios as soon as it runs, before
  /// its first simcall, and then blocks: create it before the actors that read (SimGrid runs
  /// actors in creation order), so it fills the reserve before they first run.
  void start(simgrid::s4u::Host* host, std::size_t count);

  /// What `disk->read_async(bytes)` does, with one of the reserve's Ios (it must have one left).
  [[nodiscard]] simgrid::s4u::IoPtr read_async(const simgrid::s4u::Disk* disk, sg_size_t bytes);

private:
  std::vector<simgrid::s4u::IoPtr> ios_;
};

}  // namespace trainsim::engine
