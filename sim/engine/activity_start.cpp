#include "engine/activity_start.hpp"

#include <utility>

#include <simgrid/simix.hpp>

namespace trainsim::engine {

namespace sg4 = simgrid::s4u;

sg4::ExecPtr start_exec(sg4::Host* host, double flops) {
  return simgrid::kernel::actor::simcall_answered([host, flops] {
    // this_actor::execute(flops) in 3.32: exec_init (flops, then the caller's host), priority 1,
    // start.
    sg4::ExecPtr e = sg4::Exec::init();
    e->set_flops_amount(flops)->set_host(host)->set_priority(1.0)->start();
    return e;
  });
}

sg4::ExecPtr start_bounded_exec(sg4::Host* host, double flops, double bound, double priority) {
  return simgrid::kernel::actor::simcall_answered([=] {
    sg4::ExecPtr e = sg4::Exec::init();
    e->set_flops_amount(flops)->set_bound(bound)->set_priority(priority)->set_host(host)->start();
    return e;
  });
}

sg4::ExecPtr replace_bounded_exec(sg4::ExecPtr& exec, sg4::Host* host, const std::function<double()>& bound,
                                  double lifetime, double priority) {
  return simgrid::kernel::actor::simcall_answered([&] {
    sg4::ExecPtr old = std::exchange(exec, nullptr);
    if (old) old->cancel();
    const double b = bound();
    if (b > 0) {
      exec = sg4::Exec::init();
      exec->set_flops_amount(b * lifetime)->set_bound(b)->set_priority(priority)->set_host(host)->start();
    }
    return old;
  });
}

std::vector<sg4::CommPtr> start_transfers(const std::vector<HostTransfer>& transfers) {
  if (transfers.empty()) return {};
  return simgrid::kernel::actor::simcall_answered([&transfers] {
    std::vector<sg4::CommPtr> comms;
    comms.reserve(transfers.size());
    for (const auto& t : transfers) comms.push_back(sg4::Comm::sendto_async(t.src, t.dst, t.bytes));
    return comms;
  });
}

}  // namespace trainsim::engine
