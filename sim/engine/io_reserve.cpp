#include "engine/io_reserve.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Mutex.hpp>

#include "core/error.hpp"

namespace trainsim::engine {

namespace sg4 = simgrid::s4u;

void IoReserve::start(sg4::Host* host, std::size_t count) {
  sg4::Actor::create("io_reserve", host, [this, count] {
    // Before any simcall (daemonize is one): Io::init is none, so the reserve is full before
    // the actors created after this one first run.
    ios_.reserve(count);
    for (std::size_t i = 0; i < count; ++i) ios_.push_back(sg4::Io::init());
    sg4::Actor::self()->daemonize();
    // Taken from the back: the first read gets the last Io made (the order is immaterial).
    // The actor must outlive the reads (on exit SimGrid cancels its listed activities), so it
    // waits on a condition nobody signals until the simulation kills its daemons (no RAII
    // lock: its unlock would be a simcall while the actor is being killed).
    const auto mutex = sg4::Mutex::create();
    const auto never = sg4::ConditionVariable::create();
    mutex->lock();
    while (true) never->wait(mutex);
  });
}

sg4::IoPtr IoReserve::read_async(const sg4::Disk* disk, sg_size_t bytes) {
  TRAINSIM_CHECK(!ios_.empty(), "the I/O reserve ran out of Ios (counted too few reads)");
  sg4::IoPtr io = std::move(ios_.back());
  ios_.pop_back();
  // Disk::read_async in 3.32: Io::init()->set_disk->set_size->set_op_type(READ), vetoable_start.
  io->set_disk(disk)->set_size(bytes)->set_op_type(sg4::Io::OpType::READ)->vetoable_start();
  return io;
}

}  // namespace trainsim::engine
